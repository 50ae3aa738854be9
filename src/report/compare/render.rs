//! Laying out a comparison's view: a table for a terminal, Markdown, JSON, or an HTML page
//! with a change chart per contender.

use super::super::format::md_cell;
use super::super::page::page;
use super::super::svg::{self, Change, esc};
use super::judge::{Comparison, Kind};
use super::view::{CompareView, RowView};
use crate::results::Better;
use comfy_table::{CellAlignment, Table, presets};
use std::fmt::Write;

/// A comparison as a table for a terminal, or in Markdown.
pub fn text(c: &Comparison, md: bool) -> String {
    text_of(&CompareView::build(c), md)
}

/// A comparison as one HTML page with a change chart per contender.
pub fn html(c: &Comparison) -> String {
    html_of(&CompareView::build(c))
}

fn text_of(v: &CompareView<'_>, md: bool) -> String {
    let c = v.c;
    let mut o = String::new();
    if md {
        let _ = writeln!(o, "## dbduel compare · {}\n", c.study);
        for l in &v.header {
            let _ = writeln!(o, "- {l}");
        }
    } else {
        let _ = writeln!(o, "dbduel compare · study {}", c.study);
        for l in &v.header {
            let _ = writeln!(o, "  {l}");
        }
    }
    if !c.differences.is_empty() {
        if md {
            o.push_str("\n### What differs\n\n");
            for d in &c.differences {
                let _ = writeln!(o, "- {}", md_cell(d));
            }
        } else {
            o.push_str("  what differs:\n");
            for d in &c.differences {
                let _ = writeln!(o, "    {d}");
            }
        }
    }
    o.push('\n');
    let header = [
        "contender",
        "step",
        "figure",
        "A",
        "B",
        "change",
        "noise",
        "verdict",
    ];
    let cells: Vec<[String; 8]> = v.rows.iter().map(cells).collect();
    if md {
        let _ = writeln!(o, "| {} |", header.join(" | "));
        o.push_str("|:--|:--|:--|--:|--:|--:|--:|:--|\n");
        for (r, row) in c.rows.iter().zip(&cells) {
            let mut row = row.clone();
            if matches!(r.verdict, Kind::Regressed | Kind::Improved) {
                row[7] = format!("**{}**", row[7]);
            }
            let cols: Vec<String> = row.iter().map(|x| md_cell(x)).collect();
            let _ = writeln!(o, "| {} |", cols.join(" | "));
        }
    } else {
        let mut t = Table::new();
        t.load_style(presets::UTF8_FULL_CONDENSED);
        t.force_no_tty();
        t.set_header(header.to_vec());
        for row in cells {
            t.add_row(row.to_vec());
        }
        for i in 3..7 {
            if let Some(col) = t.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        o.push_str(&t.to_string());
        o.push('\n');
    }
    o.push('\n');
    let _ = writeln!(
        o,
        "{}{}",
        if md { "**Verdict:** " } else { "verdict: " },
        v.tally
    );
    for rv in v.rows.iter().filter(|r| r.row.verdict == Kind::Regressed) {
        let r = rv.row;
        let _ = writeln!(
            o,
            "{}regressed: {} · {} · {}{}",
            if md { "- " } else { "  " },
            r.contender,
            r.title,
            r.figure,
            rv.regression
        );
    }
    o
}

/// A row's cells in the table's columns.
fn cells(v: &RowView<'_>) -> [String; 8] {
    let r = v.row;
    [
        r.contender.clone(),
        r.title.clone(),
        r.figure.clone(),
        v.a.clone(),
        v.b.clone(),
        v.change.clone(),
        v.noise.clone(),
        v.verdict.clone(),
    ]
}

fn verdict_color(k: Kind) -> &'static str {
    match k {
        Kind::Regressed => "#b42318",
        Kind::Improved => "#1a7f37",
        _ => "#6b7280",
    }
}

fn html_of(v: &CompareView<'_>) -> String {
    let c = v.c;
    let mut b = String::new();
    let regress = c.regressions().count();
    let _ = write!(
        b,
        "<header>\n<h1>{} <span class=\"muted\">· compare</span></h1>\n<p class=\"meta\"><span class=\"badge{}\">{}</span></p>\n</header>\n<section>\n<ul class=\"glance\">",
        esc(&c.study),
        if regress > 0 { " bad" } else { "" },
        esc(&v.tally)
    );
    for l in &v.header {
        let _ = write!(b, "<li>{}</li>", esc(l));
    }
    b.push_str("</ul>\n");
    if !c.differences.is_empty() {
        b.push_str("<h3>What differs</h3>\n<ul class=\"notes\">");
        for d in &c.differences {
            let _ = write!(b, "<li>{}</li>", esc(d));
        }
        b.push_str("</ul>\n");
    }
    b.push_str("</section>\n");
    for name in &v.contenders {
        let rows: Vec<&RowView<'_>> = v.rows.iter().filter(|r| r.row.contender == *name).collect();
        let _ = write!(b, "<section>\n<h2>{}</h2>\n", esc(name));
        let changes: Vec<Change> = rows
            .iter()
            .filter(|v| v.row.change.is_some() && v.row.better != Some(Better::None))
            .map(|v| (v.row, v))
            .map(|(r, v)| Change {
                label: format!("{} · {}", r.title, r.figure),
                change: r.change.unwrap_or(f64::NAN),
                noise: r.noise,
                color: verdict_color(r.verdict),
                text: v.change.clone(),
                tip: format!(
                    "{} · {}: {} → {} ({}), {}",
                    r.title, r.figure, v.a, v.b, v.change, v.verdict
                ),
            })
            .collect();
        if !changes.is_empty() {
            let _ = writeln!(
                b,
                "<figure><figcaption>change from A to B <span>dots: the change; bars: the noise band; shaded: the threshold; hollow: not judged</span></figcaption>{}</figure>",
                svg::change_chart(
                    &format!("{name}: change from A to B"),
                    &changes,
                    c.threshold
                )
            );
        }
        b.push_str("<div class=\"tablewrap\"><table><thead><tr><th>step</th><th class=\"left\">figure</th><th>A</th><th>B</th><th>change</th><th>noise</th><th class=\"left\">verdict</th></tr></thead><tbody>");
        for v in rows {
            let r = v.row;
            let class = match r.verdict {
                Kind::Regressed => "v-worse",
                Kind::Improved => "v-better",
                _ => "v-same",
            };
            let _ = write!(
                b,
                "<tr><td>{}</td><td class=\"left\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"left wrap {class}\">{}</td></tr>",
                esc(&r.title),
                esc(&r.figure),
                esc(&v.a),
                esc(&v.b),
                esc(&v.change),
                esc(&v.noise),
                esc(&v.verdict)
            );
        }
        b.push_str("</tbody></table></div>\n</section>\n");
    }
    page(
        &format!("dbduel compare · {} · {} → {}", c.study, c.a, c.b),
        &b,
    )
}
