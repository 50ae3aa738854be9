//! The side-by-side table: one row per step figure, one column per contender, and which
//! contender did best by how much; with the run's context above and the steps' notes below.

use super::format;
use crate::results::{Better, Manifest, Metric, Status, StepSummary, Summary};
use comfy_table::{CellAlignment, Table, presets};

/// Render the run as text (`markdown = false`) or Markdown.
pub fn render(summary: &Summary, manifest: &Manifest, markdown: bool) -> String {
    let mut out = String::new();
    context(&mut out, summary, manifest, markdown);
    out.push('\n');
    out.push_str(&comparison(summary, markdown));
    out.push('\n');
    let notes = notes(summary);
    if !notes.is_empty() {
        out.push('\n');
        if markdown {
            out.push_str("### Notes\n\n");
        } else {
            out.push_str("Notes:\n");
        }
        for n in notes {
            out.push_str(if markdown { "- " } else { "  " });
            out.push_str(&n);
            out.push('\n');
        }
    }
    out
}

fn context(out: &mut String, s: &Summary, m: &Manifest, md: bool) {
    let scale = s.scale.as_deref().unwrap_or("as written");
    let h = &m.host;
    let mut lines = vec![
        format!(
            "host: {} · {} cores · {} RAM · Linux {}{}",
            h.cpu_model,
            h.cores,
            format::bytes(h.mem_total_bytes),
            h.kernel,
            h.data_fs
                .as_ref()
                .map(|f| format!(" · data on {f}"))
                .unwrap_or_default()
        ),
        format!(
            "dbduel {} ({}) · started {}",
            m.dbduel.version, m.dbduel.commit, s.started_at
        ),
    ];
    if let Some(d) = &m.dataset {
        lines.push(format!(
            "dataset: {} · {} rows · seed {} · table {} · file {}",
            d.generator,
            format::count(d.rows as f64),
            d.seed,
            d.table,
            format::bytes(d.file_bytes)
        ));
    }
    if !m.overrides.is_empty() {
        lines.push(format!("overrides: {}", m.overrides.join(" ")));
    }
    for c in &m.contenders {
        let settings: Vec<String> = c
            .effective
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        lines.push(format!(
            "{}: {} {} · {}",
            c.name,
            c.engine,
            c.version,
            settings.join(" ")
        ));
    }
    if md {
        out.push_str(&format!(
            "## dbduel · {} ({scale}) · {}\n\n",
            s.study,
            s.status.as_str()
        ));
        for l in lines {
            out.push_str(&format!("- {l}\n"));
        }
    } else {
        out.push_str(&format!(
            "dbduel · study {} · scale {scale} · {}\n",
            s.study,
            s.status.as_str()
        ));
        for l in lines {
            out.push_str(&format!("  {l}\n"));
        }
    }
}

/// Step names in run order across all contenders.
fn step_names(s: &Summary) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in &s.contenders {
        for st in &c.steps {
            if !names.contains(&st.name) {
                names.push(st.name.clone());
            }
        }
    }
    names
}

fn find<'a>(s: &'a Summary, contender: usize, step: &str) -> Option<&'a StepSummary> {
    s.contenders
        .get(contender)?
        .steps
        .iter()
        .find(|x| x.name == step)
}

/// The table of figures.
pub fn comparison(s: &Summary, md: bool) -> String {
    let mut t = Table::new();
    t.load_style(if md {
        presets::ASCII_MARKDOWN
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    t.force_no_tty();
    let n = s.contenders.len();
    let mut header = vec!["step".to_string(), "figure".to_string()];
    header.extend(s.contenders.iter().map(|c| c.name.clone()));
    if n >= 2 {
        header.push("best".into());
    }
    t.set_header(header);
    for step in step_names(s) {
        let per: Vec<Option<&StepSummary>> = (0..n).map(|i| find(s, i, &step)).collect();
        let title = per
            .iter()
            .flatten()
            .find(|x| x.status == Status::Ok)
            .or(per.iter().flatten().next())
            .map(|x| {
                if x.title.is_empty() {
                    x.name.clone()
                } else {
                    x.title.clone()
                }
            })
            .unwrap_or_else(|| step.clone());
        let mut keys: Vec<&Metric> = Vec::new();
        for st in per.iter().flatten() {
            for m in &st.metrics {
                if !keys.iter().any(|k| k.key == m.key) {
                    keys.push(m);
                }
            }
        }
        if keys.is_empty() {
            let mut row = vec![title.clone(), "status".to_string()];
            row.extend(
                per.iter()
                    .map(|p| p.map(|x| x.status.as_str().to_string()).unwrap_or_default()),
            );
            if n >= 2 {
                row.push(String::new());
            }
            t.add_row(row);
            continue;
        }
        for (i, k) in keys.iter().enumerate() {
            let mut row = vec![
                if i == 0 { title.clone() } else { String::new() },
                k.label.clone(),
            ];
            let values: Vec<Option<f64>> = per
                .iter()
                .map(|p| {
                    p.filter(|x| x.status == Status::Ok)
                        .and_then(|x| x.metrics.iter().find(|m| m.key == k.key))
                        .map(|m| m.value)
                })
                .collect();
            for (p, v) in per.iter().zip(&values) {
                row.push(match (p, v) {
                    (_, Some(v)) => format::value(*v, k.unit),
                    (Some(x), None) if x.status != Status::Ok && i == 0 => {
                        x.status.as_str().to_string()
                    }
                    _ => String::new(),
                });
            }
            if n >= 2 {
                row.push(best(s, &values, k.better));
            }
            t.add_row(row);
        }
    }
    for i in 2..2 + n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}

/// `name ×ratio` of the best value against the next best, or empty when there is no winner.
fn best(s: &Summary, values: &[Option<f64>], better: Better) -> String {
    let mut ranked: Vec<(usize, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.filter(|v| v.is_finite()).map(|v| (i, v)))
        .collect();
    if ranked.len() < 2 || better == Better::None {
        return String::new();
    }
    match better {
        Better::Lower => ranked.sort_by(|a, b| a.1.total_cmp(&b.1)),
        _ => ranked.sort_by(|a, b| b.1.total_cmp(&a.1)),
    }
    let (bi, bv) = ranked[0];
    let (_, nv) = ranked[1];
    let name = &s.contenders[bi].name;
    let ratio = match better {
        Better::Lower if bv > 0.0 => nv / bv,
        Better::Higher if nv > 0.0 => bv / nv,
        _ => f64::NAN,
    };
    if !ratio.is_finite() {
        if bv == nv { "tie".into() } else { name.clone() }
    } else if ratio < 1.005 {
        "tie".into()
    } else {
        format!("{name} {ratio:.2}×")
    }
}

/// Each step's notes, per contender, once.
fn notes(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    for step in step_names(s) {
        let mut parts: Vec<(String, String)> = Vec::new();
        for c in &s.contenders {
            if let Some(st) = c.steps.iter().find(|x| x.name == step)
                && let Some(n) = &st.note
            {
                parts.push((c.name.clone(), n.clone()));
            }
        }
        if parts.is_empty() {
            continue;
        }
        if parts.len() == s.contenders.len() && parts.iter().all(|p| p.1 == parts[0].1) {
            out.push(format!("{step}: {}", parts[0].1));
        } else {
            for (c, n) in parts {
                out.push(format!("{step} [{c}]: {n}"));
            }
        }
    }
    out
}
