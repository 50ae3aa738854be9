//! The side-by-side table: one row per step figure, one column per contender, and which
//! contender did best by how much; with the run's context above, the steps' notes below and,
//! last, the original's findings as checked. Markdown adds each step's verdict in words and
//! marks the best value, ready to paste into a post or a review comment. Lays out the run's
//! [`ReportView`].

use super::finding_checks;
use super::format::{self, md_cell};
use super::reference;
use super::verdict::step_names;
use super::view::{FigureRow, ReportView, StepView};
use crate::results::{Manifest, Summary};
use comfy_table::{CellAlignment, Table, presets};

/// Render the run as text (`markdown = false`) or Markdown.
pub fn render(summary: &Summary, manifest: &Manifest, markdown: bool) -> String {
    let v = ReportView::build(summary, manifest, None);
    if markdown {
        return render_markdown(&v);
    }
    let mut out = String::new();
    context(&mut out, &v, false);
    out.push('\n');
    out.push_str(&comparison(&v));
    out.push('\n');
    if !v.findings.is_empty() {
        out.push_str("\nFindings:\n");
        for f in &v.findings {
            out.push_str("  ");
            out.push_str(f);
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
    if !v.checks.is_empty() {
        out.push_str("\nWhat the original found, checked against this run:\n");
        for l in finding_checks::lines(&v.checks) {
            out.push_str("  ");
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Markdown: title, verdicts, the table with the best value of each figure in bold, the
/// context, the notes.
fn render_markdown(v: &ReportView<'_>) -> String {
    let mut out = String::new();
    context(&mut out, v, true);
    out.push_str("\n### Verdict\n\n");
    for st in &v.steps {
        out.push_str(&format!(
            "- **{}**: {}\n",
            md_cell(&st.verdict.title),
            md_cell(&st.verdict.sentence)
        ));
    }
    if !v.findings.is_empty() {
        out.push_str("\n### Findings\n\n");
        for f in &v.findings {
            out.push_str(&format!("- {}\n", md_cell(f)));
        }
    }
    out.push_str("\n### Figures\n\n");
    out.push_str(&markdown_table(v));
    let notes = notes(v.summary);
    if !notes.is_empty() {
        out.push_str("\n### Notes\n\n");
        for n in notes {
            out.push_str(&format!("- {}\n", md_cell(&n)));
        }
    }
    if !v.checks.is_empty() {
        out.push_str("\n### What the original found\n\n");
        let ran: Vec<_> = v.checks.iter().filter(|c| c.absent.is_empty()).collect();
        if !ran.is_empty() {
            out.push_str("| finding | original | here | verdict | why |\n|---|---|---|---|---|\n");
        }
        for c in &ran {
            let here = c
                .here
                .map_or("—".to_string(), |r| format!("×{}", format::ratio(r)));
            let why = match &c.differs {
                Some(d) => format!("{}; differs: {d}", c.why),
                None => c.why.clone(),
            };
            out.push_str(&format!(
                "| {} ({}) | {} | {here} | {} | {} |\n",
                md_cell(&c.says),
                md_cell(&c.source),
                c.original.text(),
                c.verdict.words(),
                md_cell(&why)
            ));
        }
        if let Some(line) = finding_checks::absent_line(&v.checks, !ran.is_empty()) {
            let gap = if ran.is_empty() { "" } else { "\n" };
            out.push_str(&format!("{gap}{}\n", md_cell(&line)));
        }
    }
    out
}

/// The header row: step, figure, each contender, each reference, and `best` when there
/// are two contenders or more.
fn header(v: &ReportView<'_>) -> Vec<String> {
    let mut header = vec!["step".to_string(), "figure".to_string()];
    header.extend(v.columns.iter().cloned());
    header.extend(v.refs.iter().map(reference::column));
    if v.columns.len() >= 2 {
        header.push("best".into());
    }
    header
}

/// The row of a step without figures: each contender's status.
fn status_row(v: &ReportView<'_>, st: &StepView<'_>, title: String) -> Vec<String> {
    let mut row = vec![title, "status".to_string()];
    row.extend(
        st.per
            .iter()
            .map(|p| p.map(|x| x.status.as_str().to_string()).unwrap_or_default()),
    );
    row.extend(v.refs.iter().map(|_| String::new()));
    if v.columns.len() >= 2 {
        row.push(String::new());
    }
    row
}

/// The cells of one figure row after its title: label, contenders (the winner's wrapped in
/// `mark` when given), references, best. A status shows on a step's first row only.
fn figure_row(
    v: &ReportView<'_>,
    r: &FigureRow<'_>,
    first: bool,
    title: String,
    mark: Option<fn(&str) -> String>,
    label: String,
) -> Vec<String> {
    let mut row = vec![if first { title } else { String::new() }, label];
    for (j, c) in r.cells.iter().enumerate() {
        row.push(match (&c.figure, c.status) {
            (Some(f), _) => match mark {
                Some(mark) if r.best.winner == Some(j) => mark(f),
                _ => f.clone(),
            },
            (None, Some(status)) if first => status.as_str().to_string(),
            _ => String::new(),
        });
    }
    row.extend(r.refs.iter().cloned());
    if v.columns.len() >= 2 {
        row.push(match mark {
            Some(_) => md_cell(&r.best.text),
            None => r.best.text.clone(),
        });
    }
    row
}

/// The figures as a Markdown table: numbers right-aligned, the best of each figure in bold.
fn markdown_table(v: &ReportView<'_>) -> String {
    let n = v.columns.len();
    let header: Vec<String> = header(v).iter().map(|h| md_cell(h)).collect();
    let mut align = vec![":--", ":--"];
    align.extend(std::iter::repeat_n("--:", n + v.refs.len()));
    if n >= 2 {
        align.push(":--");
    }
    let mut out = format!("| {} |\n|{}|\n", header.join(" | "), align.join("|"));
    for st in &v.steps {
        let title = md_cell(&st.verdict.title);
        if st.rows.is_empty() {
            out.push_str(&format!("| {} |\n", status_row(v, st, title).join(" | ")));
            continue;
        }
        for (i, r) in st.rows.iter().enumerate() {
            let label = md_cell(&r.metric.label);
            let bold: fn(&str) -> String = |f| format!("**{f}**");
            let row = figure_row(v, r, i == 0, title.clone(), Some(bold), label);
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
    }
    out
}

fn context(out: &mut String, v: &ReportView<'_>, md: bool) {
    let (s, m) = (v.summary, v.manifest);
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
            (None, n) if d.sf.is_some() => format!(
                "scale factor {}: {} rows in {n} tables",
                d.sf.unwrap_or_default(),
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
    lines.extend(v.rounds.clone());
    lines.extend(v.ratios.clone());
    lines.extend(
        v.refs
            .iter()
            .map(|r| reference::describe(r, m.scale.as_deref())),
    );
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

/// The table of figures, for a terminal.
fn comparison(v: &ReportView<'_>) -> String {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.force_no_tty();
    t.set_header(header(v));
    for st in &v.steps {
        let title = st.verdict.title.clone();
        if st.rows.is_empty() {
            t.add_row(status_row(v, st, title));
            continue;
        }
        for (i, r) in st.rows.iter().enumerate() {
            let label = r.metric.label.clone();
            t.add_row(figure_row(v, r, i == 0, title.clone(), None, label));
        }
    }
    for i in 2..2 + v.columns.len() + v.refs.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
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
