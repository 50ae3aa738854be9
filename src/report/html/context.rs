//! The run's context section: versions, settings, dataset, host, contenders and the study as run.

use crate::report::format;
use crate::report::series::RunData;
use crate::report::svg::{self, esc};
use crate::report::view::ReportView;
use std::fmt::Write;

/// Versions, effective settings, dataset, host, and the study as run.
pub(super) fn context(run: &RunData, view: &ReportView<'_>) -> String {
    let m = &run.manifest;
    let mut o = String::from("<section id=\"context\">\n<h2>Context</h2>\n");
    o.push_str("<div class=\"grid\">\n");
    o.push_str(&dl("Run", &run_facts(run, view)));
    o.push_str(&dl("Host", &host_facts(run)));
    if let Some(d) = &m.dataset {
        let mut facts = vec![("generator".into(), d.generator.clone())];
        facts.extend(d.warehouses.map(|w| ("warehouses".into(), w.to_string())));
        facts.extend(d.sf.map(|sf| ("scale factor".into(), sf.to_string())));
        facts.extend([
            ("rows".into(), format::count(d.rows as f64)),
            ("tables".into(), d.tables.to_string()),
            ("seed".into(), d.seed.to_string()),
            ("table".into(), d.table.clone()),
            ("file".into(), format::bytes(d.file_bytes)),
            ("generated in".into(), format::seconds(d.generate_s)),
        ]);
        o.push_str(&dl("Dataset", &facts));
    }
    o.push_str("</div>\n");
    contenders_table(&mut o, run);
    steps_table(&mut o, &m.study);
    let study = serde_json::to_string_pretty(&m.study).unwrap_or_default();
    let _ = write!(
        o,
        "<details><summary>The study exactly as run (after scale and overrides)</summary><pre>{}</pre></details>\n</section>\n",
        esc(&study)
    );
    o
}

/// The run's facts: study, scale, status, times, overrides, references, rounds, dbduel.
fn run_facts(run: &RunData, view: &ReportView<'_>) -> Vec<(String, String)> {
    let m = &run.manifest;
    let s = &run.summary;
    let mut run_items: Vec<(String, String)> = vec![
        ("study".into(), format!("{} (from {})", s.study, m.source)),
        (
            "scale".into(),
            s.scale.clone().unwrap_or_else(|| "as written".into()),
        ),
        ("status".into(), s.status.as_str().into()),
        ("started".into(), s.started_at.clone()),
    ];
    if let Some(f) = &s.finished_at {
        run_items.push(("finished".into(), f.clone()));
    }
    run_items.push((
        "overrides".into(),
        if m.overrides.is_empty() {
            "none".into()
        } else {
            m.overrides.join(" ")
        },
    ));
    for r in &view.refs {
        run_items.push((
            crate::report::reference::column(r),
            crate::report::reference::provenance(r, m.scale.as_deref()),
        ));
    }
    if let Some(r) = &view.rounds {
        run_items.push((
            "rounds".into(),
            r.trim_start_matches("rounds: ").to_string(),
        ));
    }
    if let Some(r) = &view.ratios {
        run_items.push((
            "ratios".into(),
            r.trim_start_matches("ratios: ").to_string(),
        ));
    }
    run_items.push(("dbduel".into(), m.dbduel.to_string()));
    run_items
}

/// The host's facts.
fn host_facts(run: &RunData) -> Vec<(String, String)> {
    let h = &run.manifest.host;
    let mut host = vec![
        ("host".into(), h.hostname.clone()),
        ("CPU".into(), format!("{} · {} cores", h.cpu_model, h.cores)),
        ("memory".into(), format::bytes(h.mem_total_bytes)),
        ("kernel".into(), format!("Linux {}", h.kernel)),
    ];
    if let Some(fs) = &h.data_fs {
        host.push(("data on".into(), fs.clone()));
    }
    if let Some(d) = &h.data_device {
        host.push(("device".into(), d.clone()));
    }
    host
}

/// The contenders as run: engine, options given, effective settings read back.
fn contenders_table(o: &mut String, run: &RunData) {
    let (m, s) = (&run.manifest, &run.summary);
    o.push_str("<h3>Contenders</h3>\n<div class=\"tablewrap\"><table><thead><tr><th>contender</th><th class=\"left\">engine</th><th class=\"left\">options given</th><th class=\"left\">effective settings, read back</th></tr></thead><tbody>");
    for (i, c) in m.contenders.iter().enumerate() {
        let idx = s
            .contenders
            .iter()
            .position(|x| x.name == c.name)
            .unwrap_or(i);
        let eff: Vec<String> = c
            .effective
            .iter()
            .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
            .collect();
        let _ = write!(
            o,
            "<tr><td><span class=\"sw\" style=\"background:{}\"></span> {}</td><td class=\"left\">{} {}</td><td class=\"left wrap\">{}</td><td class=\"left wrap\">{}</td></tr>",
            svg::color(idx),
            esc(&c.name),
            esc(&c.engine),
            esc(&c.version),
            esc(&flat_json(&c.options)),
            eff.join(" ")
        );
    }
    o.push_str("</tbody></table></div>\n");
}

/// The study's steps as run, with their parameters.
fn steps_table(o: &mut String, study: &serde_json::Value) {
    if let Some(steps) = study.get("step").and_then(|x| x.as_array()) {
        o.push_str("<h3>Steps as run</h3>\n<div class=\"tablewrap\"><table><thead><tr><th>step</th><th class=\"left\">kind</th><th class=\"left\">parameters</th></tr></thead><tbody>");
        for st in steps {
            let name = st.get("name").and_then(|x| x.as_str()).unwrap_or("");
            let kind = st.get("kind").and_then(|x| x.as_str()).unwrap_or("");
            let params: serde_json::Map<String, serde_json::Value> = st
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, v)| {
                            k.as_str() != "name" && k.as_str() != "kind" && !v.is_null()
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"left\">{}</td><td class=\"left wrap\">{}</td></tr>",
                esc(name),
                esc(kind),
                esc(&flat_json(&serde_json::Value::Object(params)))
            );
        }
        o.push_str("</tbody></table></div>\n");
    }
}

fn dl(title: &str, items: &[(String, String)]) -> String {
    let mut o = format!("<div><h3>{}</h3><dl>", esc(title));
    for (k, v) in items {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    o.push_str("</dl></div>\n");
    o
}

/// `a=1 b=wal c=[x, y]` from a JSON object; other values as JSON.
fn flat_json(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", flat_json(v)))
            .collect::<Vec<_>>()
            .join(" "),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => format!(
            "[{}]",
            a.iter().map(flat_json).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}
