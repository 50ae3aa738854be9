//! `dbduel run --check`: the plan of a loaded study, printed without running anything — its
//! dataset, contenders with their options, the rounds' order and the steps as the study gives
//! them.

use super::output::outln;
use crate::study::Study;

/// Print what a run of `s` would do.
pub(super) fn print_plan(s: &Study) {
    let f = &s.file;
    outln!(
        "study {} ({}) from {}",
        f.study.name,
        s.scale.as_deref().unwrap_or("no scale"),
        s.source
    );
    print_dataset(s);
    // Options and parameters as the study gives them, in its own TOML; what it leaves out
    // takes the defaults the README lists.
    for c in &s.contenders {
        outln!(
            "contender {}: engine {}, options {}",
            c.name,
            c.engine.kind(),
            toml::Value::Table(c.options.clone())
        );
    }
    print_rounds(s);
    print_steps(s);
    outln!("(anything not given takes its default)");
}

/// The dataset line: TPC-C's warehouses, or rows of a generator in one or more tables.
fn print_dataset(s: &Study) {
    let d = &s.file.dataset;
    if !d.generates() {
        outln!("dataset: none generated (the study's steps load its own files)");
        return;
    }
    if let Some(w) = d.warehouses {
        outln!(
            "dataset: TPC-C's nine tables for {w} warehouse(s) (seed {})",
            d.seed
        );
        return;
    }
    if let Some(sf) = d.sf {
        outln!(
            "dataset: TPC-H's eight tables at scale factor {sf} (seed {})",
            d.seed
        );
        return;
    }
    match d.tables {
        1 => outln!(
            "dataset: {} rows of {} (seed {}) into table {}",
            d.rows,
            d.generator,
            d.seed,
            d.table
        ),
        n => outln!(
            "dataset: {n} tables × {} rows of {} (seed {})",
            d.rows,
            d.generator,
            d.seed
        ),
    }
}

/// The contenders' order in each round, when there is more than one: the run's own plan.
fn print_rounds(s: &Study) {
    let orders = crate::run::Plan::new(s, None).orders();
    if !orders.is_empty() {
        let orders: Vec<String> = orders.iter().map(|o| o.join(" ")).collect();
        outln!(
            "rounds: {}, contenders interleaved: {}",
            orders.len(),
            orders.join(" | ")
        );
    }
}

/// Each step with its kind and the parameters the study gives it.
fn print_steps(s: &Study) {
    for st in &s.steps {
        let spec = s.file.steps.iter().find(|x| x.name == st.name);
        let mut given = spec.map(|x| x.params.clone()).unwrap_or_default();
        if let Some(r) = spec.and_then(|x| x.report_interval_s) {
            given.insert("report_interval_s".into(), toml::Value::Integer(r as i64));
        }
        if given.is_empty() {
            outln!("step {}: {}", st.name, st.kind);
        } else {
            outln!(
                "step {}: {} {}",
                st.name,
                st.kind,
                toml::Value::Table(given)
            );
        }
    }
}
