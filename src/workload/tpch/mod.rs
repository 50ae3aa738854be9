//! `tpch-power`: the 22 TPC-H queries one after another, as the specification's power test
//! runs them, each first cold (the engine restarted and its files dropped from the page
//! cache, as `count` does) and then `hot_runs` times hot; per query the cold seconds and the
//! best hot seconds, the geometric mean, and a Power@Size over the queries. Each query runs
//! under a timeout the server enforces ([`crate::engine::Session::statement_timeout`]): a
//! query past it is cancelled on the server and recorded `timed out`. Each answer is kept in
//! canonical form ([`answer`]) so contenders' answers can be compared, and the slowest
//! query's `EXPLAIN` is kept.
//!
//! Figures are TPC-H-like, not audited: the refresh functions RF1/RF2 are not run yet, so
//! Power@Size here is over the 22 queries alone; and queries whose ORDER BY leaves ties
//! (Q3, Q10, Q11, Q18) order them by their key as well, so answers compare row by row.

pub mod answer;
pub mod queries;

use super::{ColdRestart, StepCtx, StepError, StepOutput, cold_restart, restart_note, summary};
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{EngineError, RestartOutcome, Session, TIMEOUT, Value};
use crate::results::{Better, Metric, Unit};
use answer::Answer;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What TPC-H figures are, wherever they are shown.
pub const LABEL: &str = "TPC-H-like, not audited";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerParams {
    /// Hot runs after each query's cold one (ClickBench: 1 cold + 2 hot).
    #[serde(default = "default_hot_runs")]
    pub hot_runs: u32,
    /// Seconds a query may run before the server cancels it.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// Restart the engine cold before each query's first run.
    #[serde(default = "yes")]
    pub cold: bool,
    /// The queries to run (1 to 22), in this order; all 22 by default.
    #[serde(default)]
    pub queries: Option<Vec<u8>>,
    /// The seed of the substitution parameters; the dataset's by default.
    #[serde(default)]
    pub seed: Option<u64>,
}

fn default_hot_runs() -> u32 {
    2
}
fn default_timeout_s() -> f64 {
    600.0
}
fn yes() -> bool {
    true
}

impl super::StepKind for PowerParams {
    fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if self.hot_runs > 100 {
            return at(
                "hot_runs",
                format!("hot_runs = {} is out of range; use 0 to 100", self.hot_runs),
            );
        }
        if !(self.timeout_s > 0.0 && self.timeout_s <= 86_400.0) {
            return at(
                "timeout_s",
                format!(
                    "timeout_s = {} is out of range; use more than 0 and at most 86400 (a day)",
                    self.timeout_s
                ),
            );
        }
        if let Some(qs) = &self.queries {
            if qs.is_empty() {
                return at(
                    "queries",
                    "queries must name at least one query (1 to 22)".into(),
                );
            }
            for (i, q) in qs.iter().enumerate() {
                if !queries::QUERIES.contains(q) {
                    return Err(DecodeError::at(
                        KeyPath::root().key("queries").index(i),
                        format!("there is no query {q}; TPC-H's queries are 1 to 22"),
                    ));
                }
            }
        }
        Ok(())
    }
    fn restarts(&self) -> Option<&'static str> {
        self.cold.then_some("cold")
    }
    fn generator(&self) -> Option<super::kind::GeneratorNeed> {
        Some(super::kind::GeneratorNeed {
            generator: crate::dataset::Generator::Tpch,
            why: "runs TPC-H's queries, which need TPC-H's eight tables",
            fix: "generator = \"tpch\" with `sf = N`",
        })
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all(
            "runs TPC-H's queries on",
            tables,
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// One query's figures.
#[derive(Debug, Clone, Serialize)]
pub struct QueryRun {
    pub query: u8,
    pub params: queries::Params,
    pub sql: String,
    /// Seconds of the cold run (or the first, when not cold); `None` when it timed out or
    /// failed.
    pub cold_s: Option<f64>,
    /// How the engine was restarted before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartOutcome>,
    /// Seconds of each hot run.
    pub hot_s: Vec<Option<f64>>,
    /// The best hot run (the cold one when there are none).
    pub best_s: Option<f64>,
    /// `ok`, `timed out`, or `failed: <engine's words>`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    /// The contender whose answer this one was compared with (see [`compare_with_earlier`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// Scale factor of the loaded data: suppliers / 10,000, as the specification sizes them.
fn scale_factor(session: &mut dyn Session) -> Result<f64, EngineError> {
    let n = session.query_i64("SELECT COUNT(*) FROM supplier")?;
    Ok((n as f64 / 10_000.0).max(1e-4))
}

/// One timed run of `sql`: its seconds and answer, or `Err(status)`.
fn timed(
    session: &mut dyn Session,
    sql: &str,
    out: &mut Vec<Value>,
) -> Result<(f64, Answer), String> {
    let t = Instant::now();
    let r = session
        .prepare(sql)
        .and_then(|st| session.run_rows(st, &[], out));
    let secs = t.elapsed().as_secs_f64();
    match r {
        Ok(rows) => Ok((secs, Answer::of(out, rows))),
        Err(e) if e.kind == TIMEOUT => Err("timed out".to_string()),
        Err(e) => Err(format!("failed: {e}")),
    }
}

/// A session with the step's timeout set, and whether the engine enforces it.
fn open(ctx: &StepCtx<'_>, limit: Duration) -> Result<(Box<dyn Session>, bool), StepError> {
    let mut s = ctx.engine.connect()?;
    let bounded = s.statement_timeout(Some(limit))?;
    Ok((s, bounded))
}

/// Run query `q` cold, then hot.
fn run_query(
    p: &PowerParams,
    ctx: &StepCtx<'_>,
    q: u8,
    seed: u64,
    sf: f64,
) -> Result<QueryRun, StepError> {
    let params = queries::params(q, seed, sf);
    let sql = queries::render(q, &params, ctx.engine.dialect())
        .map_err(|e| StepError::Check(e.to_string()))?;
    let limit = Duration::from_secs_f64(p.timeout_s);
    let restart = match p.cold {
        false => None,
        true => match cold_restart(ctx) {
            Ok(r) => Some(r),
            Err(ColdRestart::Unsupported(why)) => {
                return Err(StepError::Skipped(format!(
                    "cold query runs need a restart: {why} (set cold = false to run them warm)"
                )));
            }
            Err(ColdRestart::Failed(e)) => return Err(e.into()),
        },
    };
    let (mut session, _) = open(ctx, limit)?;
    let mut out = Vec::new();
    let mut run = QueryRun {
        query: q,
        params,
        sql: sql.clone(),
        cold_s: None,
        restart,
        hot_s: Vec::new(),
        best_s: None,
        status: "ok".to_string(),
        answer: None,
        reference: None,
    };
    match timed(session.as_mut(), &sql, &mut out) {
        Ok((s, a)) => {
            run.cold_s = Some(s);
            run.answer = Some(a);
        }
        Err(status) => {
            run.status = status;
            return Ok(run);
        }
    }
    for _ in 0..p.hot_runs {
        match timed(session.as_mut(), &sql, &mut out) {
            Ok((s, a)) => {
                run.hot_s.push(Some(s));
                if run
                    .answer
                    .as_ref()
                    .is_some_and(|first| first.digest != a.digest)
                {
                    run.status = "failed: a hot run's answer differs from the cold run's".into();
                }
            }
            Err(status) => {
                run.hot_s.push(None);
                run.status = status;
            }
        }
    }
    run.best_s = run
        .hot_s
        .iter()
        .flatten()
        .copied()
        .reduce(f64::min)
        .or(run.cold_s.filter(|_| p.hot_runs == 0));
    Ok(run)
}

/// Each query's answer against the reference's: the first contender, in the study's order,
/// that ran this step earlier in the run and answered the query. The first contender to run
/// is the reference rather than a majority because contenders run one after another and each
/// step's result is final when it ends; a report then shows every contender's verdict
/// against the same answer. An answer that differs fails the query (and so the step, its
/// figures kept), naming the first differing row. `earlier`: (contender, `<step>.json`).
pub fn compare_with_earlier(earlier: &[(String, std::path::PathBuf)], runs: &mut [QueryRun]) {
    let files: Vec<(&str, serde_json::Value)> = earlier
        .iter()
        .filter_map(|(name, path)| {
            let text = std::fs::read_to_string(path).ok()?;
            Some((name.as_str(), serde_json::from_str(&text).ok()?))
        })
        .collect();
    for run in runs.iter_mut() {
        let Some(mine) = &run.answer else { continue };
        let theirs = files.iter().find_map(|(name, v)| {
            let q = v["details"]["queries"]
                .as_array()?
                .iter()
                .find(|q| q["query"].as_u64() == Some(u64::from(run.query)))?;
            let a: Answer = serde_json::from_value(q["answer"].clone()).ok()?;
            Some((*name, a))
        });
        let Some((name, reference)) = theirs else {
            continue;
        };
        run.reference = Some(name.to_string());
        if let Some(why) = mine.differs_from(&reference) {
            run.status = format!("failed: the answer differs from {name}'s: {why}");
        }
    }
}

/// Geometric mean of `xs` (each floored at 1 ms, so an instant query does not sink it).
pub fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let logs: f64 = xs.iter().map(|x| x.max(0.001).ln()).sum();
    Some((logs / xs.len() as f64).exp())
}

pub fn run(p: &PowerParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let list: Vec<u8> = p
        .queries
        .clone()
        .unwrap_or_else(|| queries::QUERIES.collect());
    let seed = p.seed.unwrap_or(ctx.dataset_seed);
    let sf = scale_factor(ctx.engine.connect()?.as_mut())?;
    let bounded = open(ctx, Duration::from_secs_f64(p.timeout_s))?.1;
    let mut runs = Vec::with_capacity(list.len());
    for q in &list {
        if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        ctx.progress.status(&format!("TPC-H Q{q}"));
        runs.push(run_query(p, ctx, *q, seed, sf)?);
    }
    let interrupted = runs.len() < list.len();
    compare_with_earlier(ctx.earlier, &mut runs);
    let explain = explain_worst(ctx, &runs, p.timeout_s);
    output(p, ctx, runs, sf, seed, bounded, explain, interrupted)
}

/// `EXPLAIN` of the query with the most seconds (best hot, else cold), as the engine gives
/// it: the query and its plan's rows, one line each.
fn explain_worst(ctx: &StepCtx<'_>, runs: &[QueryRun], timeout_s: f64) -> serde_json::Value {
    let worst = runs.iter().max_by(|a, b| {
        let key = |r: &QueryRun| r.best_s.or(r.cold_s).unwrap_or(timeout_s);
        key(a).total_cmp(&key(b))
    });
    let Some(w) = worst else {
        return serde_json::Value::Null;
    };
    let sql = queries::explain(ctx.engine.dialect(), &w.sql);
    let plan = ctx.engine.connect().and_then(|mut s| {
        let mut out = Vec::new();
        let st = s.prepare(&sql)?;
        let rows = s.run_rows(st, &[], &mut out)?;
        let cols = if rows == 0 {
            1
        } else {
            (out.len() / rows as usize).max(1)
        };
        Ok(out
            .chunks(cols)
            .map(|r| r.iter().map(plan_cell).collect::<Vec<_>>().join(" | "))
            .collect::<Vec<_>>())
    });
    match plan {
        Ok(lines) => serde_json::json!({ "query": w.query, "plan": lines }),
        Err(e) => serde_json::json!({ "query": w.query, "error": e.message }),
    }
}

/// The queries that failed (not those that timed out), in words: `Q2: failed: ...`.
fn failures(runs: &[QueryRun]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.status.starts_with("failed"))
        .map(|r| format!("Q{}: {}", r.query, r.status))
        .collect()
}

/// How the first runs began, in the note's words: every restart verified cold, or how many
/// were not (then the first of those says why), or no restart.
fn cold_note(runs: &[QueryRun]) -> String {
    let restarts: Vec<&RestartOutcome> = runs.iter().filter_map(|r| r.restart.as_ref()).collect();
    let Some(first) = restarts.first() else {
        return "warm: no restart".to_string();
    };
    match restarts.iter().find(|r| !r.cold) {
        None => format!(
            "cold: restarted before each query, each verified cold ({})",
            first.cache
        ),
        Some(warm) => format!(
            "warm-restart: {} of {} restarts left the page cache warm; {}",
            restarts.iter().filter(|r| !r.cold).count(),
            restarts.len(),
            restart_note(warm)
        ),
    }
}

/// A cell of a plan as the engine wrote it.
fn plan_cell(v: &Value) -> String {
    match v {
        Value::Int(n) => n.to_string(),
        Value::Text(t) => t.clone(),
        Value::Null => "NULL".to_string(),
    }
}

/// The step's figures: each query's, the geometric means, Power@Size.
struct Figures {
    metrics: Vec<Metric>,
    geo_hot: Option<f64>,
    geo_cold: Option<f64>,
    power: Option<f64>,
}

fn seconds(key: String, label: String, v: f64) -> Metric {
    Metric::new(&key, &label, v, Unit::Seconds, Better::Lower)
}

/// Figures of `runs` at scale factor `sf`. A geometric mean needs every query's seconds (a
/// query timed out leaves none); Power@Size needs all 22.
fn figures(runs: &[QueryRun], sf: f64) -> Figures {
    let mut metrics = Vec::new();
    for r in runs {
        let (q, tag) = (r.query, format!("q{:02}", r.query));
        if let Some(c) = r.cold_s {
            metrics.push(seconds(format!("{tag}_cold_s"), format!("Q{q} cold"), c));
        }
        if let Some(b) = r.best_s {
            metrics.push(seconds(format!("{tag}_hot_s"), format!("Q{q} hot"), b));
        }
    }
    let hot: Vec<f64> = runs.iter().filter_map(|r| r.best_s).collect();
    let cold: Vec<f64> = runs.iter().filter_map(|r| r.cold_s).collect();
    let geo_hot = geomean(&hot).filter(|_| hot.len() == runs.len());
    let geo_cold = geomean(&cold).filter(|_| cold.len() == runs.len());
    if let Some(g) = geo_cold {
        metrics.push(seconds("geomean_cold_s".into(), "geomean cold".into(), g));
    }
    if let Some(g) = geo_hot {
        metrics.push(seconds("geomean_hot_s".into(), "geomean hot".into(), g));
    }
    let power = geo_hot
        .filter(|_| runs.len() == 22)
        .map(|g| 3600.0 * sf / g);
    if let Some(pw) = power {
        metrics.push(Metric::new(
            "power_at_size",
            "Power@Size (queries only)",
            pw,
            Unit::Count,
            Better::Higher,
        ));
    }
    Figures {
        metrics,
        geo_hot,
        geo_cold,
        power,
    }
}

/// The step's output from the queries' runs: a query that failed (not one that timed out)
/// fails the step, its figures kept.
#[allow(clippy::too_many_arguments)]
fn output(
    p: &PowerParams,
    ctx: &StepCtx<'_>,
    runs: Vec<QueryRun>,
    sf: f64,
    seed: u64,
    bounded: bool,
    explain: serde_json::Value,
    interrupted: bool,
) -> Result<StepOutput, StepError> {
    let f = figures(&runs, sf);
    let timed_out: Vec<String> = runs
        .iter()
        .filter(|r| r.status == "timed out")
        .map(|r| format!("Q{}", r.query))
        .collect();
    let failed = failures(&runs);
    let cold_note = cold_note(&runs);
    let mut note = format!(
        "{LABEL}; SF {sf}; {} queries, first run then {} hot; {cold_note}",
        runs.len(),
        p.hot_runs
    );
    if !timed_out.is_empty() {
        note.push_str(&format!(
            "; timed out after {} s: {}",
            p.timeout_s,
            timed_out.join(", ")
        ));
    }
    if !bounded {
        note.push_str("; this engine cannot bound a statement's time, so queries ran unbounded");
    }
    note.push_str("; RF1/RF2 not run yet (Power@Size over the queries only)");
    let mut s = summary(ctx.title("TPC-H power (TPC-H-like, not audited)"));
    s.elapsed_s = Some(
        runs.iter()
            .map(|r| r.cold_s.unwrap_or(0.0) + r.hot_s.iter().flatten().sum::<f64>())
            .sum(),
    );
    s.metrics = f.metrics;
    s.note = Some(note);
    let details = serde_json::json!({
        "label": LABEL, "scale_factor": sf, "seed": seed, "timeout_s": p.timeout_s,
        "hot_runs": p.hot_runs, "geomean_hot_s": f.geo_hot, "geomean_cold_s": f.geo_cold,
        "power_at_size": f.power, "queries": runs, "explain_worst": explain,
        "answer_tolerance": { "absolute": answer::ABS_TOLERANCE, "relative": answer::REL_TOLERANCE },
    });
    let out = StepOutput {
        summary: s,
        details,
        intervals: Vec::new(),
        interrupted,
    };
    if failed.is_empty() {
        Ok(out)
    } else {
        Err(StepError::Failed(
            failed.join("; "),
            super::Kept(Box::new(out)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(q: u8, cells: &[&str]) -> QueryRun {
        let values: Vec<Value> = cells.iter().map(|c| Value::Text(c.to_string())).collect();
        QueryRun {
            query: q,
            params: queries::Params::new(),
            sql: String::new(),
            cold_s: Some(1.0),
            restart: None,
            hot_s: vec![Some(0.5)],
            best_s: Some(0.5),
            status: "ok".into(),
            answer: Some(Answer::of(&values, cells.len() as u64)),
            reference: None,
        }
    }

    /// The first earlier contender's answer is the reference; a differing answer fails the
    /// query with the first differing row, an agreeing one names its reference.
    #[test]
    fn answers_are_checked_against_the_first_earlier_contenders() {
        let dir = tempfile::tempdir().expect("tmp");
        let write = |name: &str, runs: &[QueryRun]| {
            let path = dir.path().join(format!("{name}.json"));
            let v = serde_json::json!({ "details": { "queries": runs } });
            std::fs::write(&path, v.to_string()).expect("write");
            (name.to_string(), path)
        };
        let earlier = vec![
            write("first", &[run_with(1, &["10.00"]), run_with(2, &["7"])]),
            write("second", &[run_with(1, &["99"]), run_with(3, &["x"])]),
        ];
        let mut mine = vec![
            run_with(1, &["10.001"]),
            run_with(2, &["8"]),
            run_with(3, &["x"]),
            run_with(4, &["y"]),
        ];
        compare_with_earlier(&earlier, &mut mine);
        assert_eq!(mine[0].status, "ok");
        assert_eq!(mine[0].reference.as_deref(), Some("first"));
        assert!(
            mine[1]
                .status
                .starts_with("failed: the answer differs from first's: row 1: [8.0000]"),
            "{}",
            mine[1].status
        );
        assert_eq!(mine[2].reference.as_deref(), Some("second"));
        assert_eq!(mine[3].reference, None);
        let f = figures(&mine, 0.01);
        assert!(
            f.geo_hot.is_some() && f.power.is_none(),
            "4 queries: no Power@Size"
        );
        assert_eq!(failures(&mine).len(), 1);
        assert!(failures(&mine)[0].starts_with("Q2: failed"));
    }

    #[test]
    fn the_geometric_mean_is_of_the_seconds() {
        let g = geomean(&[1.0, 4.0]).expect("two");
        assert!((g - 2.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
    }
}
