//! The side-by-side table: one row per step figure, one column per contender, and which
//! contender did best by how much; with the run's context above and the steps' notes below.
//! Markdown adds each step's verdict in words and marks the best value, ready to paste into a
//! post or a review comment.

use super::format::{self, md_cell};
use super::reference;
use super::verdict::{self, metric_keys, per_contender, step_names, title_of};
use crate::results::{Better, Manifest, Metric, Status, StepSummary, Summary};
use crate::study::model::ReferenceSpec;
use comfy_table::{CellAlignment, Table, presets};

/// Render the run as text (`markdown = false`) or Markdown.
pub fn render(summary: &Summary, manifest: &Manifest, markdown: bool) -> String {
    if markdown {
        return render_markdown(summary, manifest);
    }
    let mut out = String::new();
    context(&mut out, summary, manifest, false);
    out.push('\n');
    out.push_str(&comparison(
        summary,
        baseline_of(summary, manifest),
        &super::reference::of(manifest),
    ));
    out.push('\n');
    let findings = super::findings::findings(summary, manifest);
    if !findings.is_empty() {
        out.push_str("\nFindings:\n");
        for f in findings {
            out.push_str("  ");
            out.push_str(&f);
            out.push('\n');
        }
    }
    let notes = notes(summary);
    if !notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in notes {
            out.push_str("  ");
            out.push_str(&n);
            out.push('\n');
        }
    }
    out
}

/// Markdown: title, verdicts, the table with the best value of each figure in bold, the
/// context, the notes.
fn render_markdown(s: &Summary, m: &Manifest) -> String {
    let mut out = String::new();
    context(&mut out, s, m, true);
    out.push_str("\n### Verdict\n\n");
    for v in verdict::verdicts(s) {
        out.push_str(&format!(
            "- **{}**: {}\n",
            md_cell(&v.title),
            md_cell(&v.sentence)
        ));
    }
    let findings = super::findings::findings(s, m);
    if !findings.is_empty() {
        out.push_str("\n### Findings\n\n");
        for f in findings {
            out.push_str(&format!("- {}\n", md_cell(&f)));
        }
    }
    out.push_str("\n### Figures\n\n");
    out.push_str(&markdown_table(
        s,
        baseline_of(s, m),
        &super::reference::of(m),
    ));
    let notes = notes(s);
    if !notes.is_empty() {
        out.push_str("\n### Notes\n\n");
        for n in notes {
            out.push_str(&format!("- {}\n", md_cell(&n)));
        }
    }
    out
}

/// The figures as a Markdown table: numbers right-aligned, the best of each figure in bold.
fn markdown_table(s: &Summary, base: Option<usize>, refs: &[ReferenceSpec]) -> String {
    let n = s.contenders.len();
    let mut header = vec!["step".to_string(), "figure".to_string()];
    header.extend(
        s.contenders
            .iter()
            .enumerate()
            .map(|(i, c)| md_cell(&column_name(&c.name, base == Some(i)))),
    );
    header.extend(refs.iter().map(|r| md_cell(&reference::column(r))));
    let mut align = vec![":--", ":--"];
    align.extend(std::iter::repeat_n("--:", n + refs.len()));
    if n >= 2 {
        header.push("best".into());
        align.push(":--");
    }
    let mut out = format!("| {} |\n|{}|\n", header.join(" | "), align.join("|"));
    for step in step_names(s) {
        let per = per_contender(s, &step);
        let title = md_cell(&title_of(&per, &step));
        let keys = metric_keys(&per);
        if keys.is_empty() {
            let mut row = vec![title, "status".to_string()];
            row.extend(
                per.iter()
                    .map(|p| p.map(|x| x.status.as_str().to_string()).unwrap_or_default()),
            );
            row.extend(refs.iter().map(|_| String::new()));
            if n >= 2 {
                row.push(String::new());
            }
            out.push_str(&format!("| {} |\n", row.join(" | ")));
            continue;
        }
        for (i, k) in keys.iter().enumerate() {
            let figs = verdict::metrics(&per, &k.key);
            let b = best(s, &figs, k.better);
            let winner = s
                .contenders
                .iter()
                .position(|c| !b.is_empty() && b.starts_with(&format!("{} ", c.name)));
            let mut row = vec![
                if i == 0 { title.clone() } else { String::new() },
                md_cell(&k.label),
            ];
            let base_fig = base.and_then(|i| figs[i]);
            for (j, (p, f)) in per.iter().zip(&figs).enumerate() {
                row.push(match (p, f) {
                    (_, Some(f)) if winner == Some(j) => format!("**{}**", cell(f, base_fig)),
                    (_, Some(f)) => cell(f, base_fig),
                    (Some(x), None) if x.status != Status::Ok && i == 0 => {
                        x.status.as_str().to_string()
                    }
                    _ => String::new(),
                });
            }
            for r in refs {
                row.push(
                    reference::value(r, &step, &k.key)
                        .map(|v| format::value(v, k.unit))
                        .unwrap_or_default(),
                );
            }
            if n >= 2 {
                row.push(md_cell(&b));
            }
            out.push_str(&format!("| {} |\n", row.join(" | ")));
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
        format!("dbduel {} · started {}", m.dbduel, s.started_at),
    ];
    if let Some(d) = &m.dataset {
        let rows = match (d.warehouses, d.tables) {
            (Some(w), n) => format!(
                "{w} warehouse(s): {} rows in {n} tables",
                format::count(d.rows as f64)
            ),
            (None, 1) => format!("{} rows", format::count(d.rows as f64)),
            (None, n) => format!("{n} tables × {} rows", format::count(d.rows as f64)),
        };
        lines.push(format!(
            "dataset: {} · {rows} · seed {} · table {} · file {}",
            d.generator,
            d.seed,
            d.table,
            format::bytes(d.file_bytes)
        ));
    }
    if !m.overrides.is_empty() {
        lines.push(format!("overrides: {}", m.overrides.join(" ")));
    }
    lines.extend(rounds_line(m));
    lines.extend(reference::of(m).iter().map(reference::describe));
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

/// The index of the run's baseline contender, when it has one that ran.
pub(crate) fn baseline_of(s: &Summary, m: &Manifest) -> Option<usize> {
    let b = m.baseline.as_ref()?;
    s.contenders.iter().position(|c| &c.name == b)
}

/// A contender's column heading: its name, marked when it is the baseline.
pub(crate) fn column_name(name: &str, baseline: bool) -> String {
    if baseline {
        format!("{name} (baseline)")
    } else {
        name.to_string()
    }
}

/// A figure's cell: its value (with its interval when repeated) and, beside a baseline's
/// figure, the ratio to it (`×0.52`: 0.52 times the baseline's). Figures without a better
/// direction (amounts of work, dbduel's own use) get no ratio.
pub(crate) fn cell(f: &Metric, base: Option<&Metric>) -> String {
    let v = format::figure(f);
    match base {
        Some(b)
            if !std::ptr::eq(f, b)
                && f.better != Better::None
                && b.value != 0.0
                && b.value.is_finite() =>
        {
            let r = f.value / b.value;
            let r = if r < 10.0 {
                format!("{r:.2}")
            } else if r < 100.0 {
                format!("{r:.1}")
            } else {
                format!("{r:.0}")
            };
            format!("{v} ×{r}")
        }
        _ => v,
    }
}

/// How a repeated run was made and how to read its figures; `None` for a single round.
pub(crate) fn rounds_line(m: &Manifest) -> Option<String> {
    let n = m.rounds.len();
    if n < 2 {
        return None;
    }
    let orders: Vec<String> = m.rounds.iter().map(|o| o.join(" ")).collect();
    let conf = crate::results::spread::confidence_for(n) * 100.0;
    Some(format!(
        "rounds: {n}, contenders interleaved ({}); each figure is the median of its rounds, [lo–hi] the interval holding the true median with {conf:.1}% confidence (order statistics, any distribution); \"tie\" where intervals overlap; timelines are round 1's",
        orders.join(" | ")
    ))
}

/// The table of figures, for a terminal.
pub fn comparison(s: &Summary, base: Option<usize>, refs: &[ReferenceSpec]) -> String {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.force_no_tty();
    let n = s.contenders.len();
    let mut header = vec!["step".to_string(), "figure".to_string()];
    header.extend(
        s.contenders
            .iter()
            .enumerate()
            .map(|(i, c)| column_name(&c.name, base == Some(i))),
    );
    header.extend(refs.iter().map(reference::column));
    if n >= 2 {
        header.push("best".into());
    }
    t.set_header(header);
    for step in step_names(s) {
        let per: Vec<Option<&StepSummary>> = per_contender(s, &step);
        let title = title_of(&per, &step);
        let keys = metric_keys(&per);
        if keys.is_empty() {
            let mut row = vec![title.clone(), "status".to_string()];
            row.extend(
                per.iter()
                    .map(|p| p.map(|x| x.status.as_str().to_string()).unwrap_or_default()),
            );
            row.extend(refs.iter().map(|_| String::new()));
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
            let figs = verdict::metrics(&per, &k.key);
            let b = base.and_then(|i| figs[i]);
            for (p, f) in per.iter().zip(&figs) {
                row.push(match (p, f) {
                    (_, Some(f)) => cell(f, b),
                    (Some(x), None) if x.status != Status::Ok && i == 0 => {
                        x.status.as_str().to_string()
                    }
                    _ => String::new(),
                });
            }
            for r in refs {
                row.push(
                    reference::value(r, &step, &k.key)
                        .map(|v| format::value(v, k.unit))
                        .unwrap_or_default(),
                );
            }
            if n >= 2 {
                row.push(best(s, &figs, k.better));
            }
            t.add_row(row);
        }
    }
    for i in 2..2 + n + refs.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}

/// `name ×ratio` of the best value against the next best, `tie` when they cannot be told
/// apart, or empty when there is nothing to rank. Figures measured over repeated rounds are a
/// tie when their intervals for the median overlap; figures measured once when within 0.5 %.
pub(crate) fn best(s: &Summary, figs: &[Option<&Metric>], better: Better) -> String {
    let mut ranked: Vec<(usize, f64)> = figs
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.map(|m| m.value).filter(|v| v.is_finite()).map(|v| (i, v)))
        .collect();
    if ranked.len() < 2 || better == Better::None {
        return String::new();
    }
    match better {
        Better::Lower => ranked.sort_by(|a, b| a.1.total_cmp(&b.1)),
        _ => ranked.sort_by(|a, b| b.1.total_cmp(&a.1)),
    }
    let (bi, bv) = ranked[0];
    let (ni, nv) = ranked[1];
    if verdict::tied_by_spread(figs[bi], figs[ni]) == Some(true) {
        return "tie".into();
    }
    let name = &s.contenders[bi].name;
    let ratio = match better {
        Better::Lower if bv > 0.0 => nv / bv,
        Better::Higher if nv > 0.0 => bv / nv,
        _ => f64::NAN,
    };
    if !ratio.is_finite() {
        if bv == nv { "tie".into() } else { name.clone() }
    } else if ratio < 1.005 && verdict::tied_by_spread(figs[bi], figs[ni]).is_none() {
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
