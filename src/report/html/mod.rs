//! The self-contained HTML report (`RUN_DIR/report.html`): each step's verdict in words, bar
//! charts of its figures, latency percentiles, per-second timelines of client and system
//! series with contenders overlaid, sweep curves, and the run's full context. One file: the
//! styles are inline, the charts are inline SVG, there is no script, and a Content Security
//! Policy forbids loading anything, so it opens offline, prints, and can be mailed.
//!
//! The page is built by *panels*: functions from a step's data (its `Metric`s and its
//! generic series files) to figures, a file each beside this one. A new step kind gets charts
//! by producing metrics (with a `Role` where a chart needs more than a unit: a numbered query,
//! the completions counted per 10 s) and series; a new kind of chart is one more file and a
//! line in [`PANELS`]. Nothing here names a step kind, a figure or an op.

mod bars;
mod clients;
mod cluster;
mod context;
mod percentiles;
mod queries;
mod replicas;
mod sweep;
mod system;
mod timeline;

use super::format;
use super::page::page;
use super::series::{RunData, StepSeries};
use super::svg::{self, esc};
use super::view::{self, FigureRow, ReportView};
use crate::results::{Metric, Status, StepSummary};
use bars::bars;
use clients::client_timelines;
use cluster::cluster_timelines;
use context::context;
use percentiles::percentiles;
use queries::query_times;
use replicas::replica_timelines;
use std::fmt::Write;
use sweep::sweep_curves;
use system::system_timelines;

/// A chart with its caption.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Bold part of the caption.
    pub caption: String,
    /// Plain part after it (what is better, what was sampled).
    pub detail: String,
    pub svg: String,
    /// The chart's own colour key, when its lines are not the contenders (a line per
    /// replica): each line's name and colour.
    pub key: Vec<(String, &'static str)>,
}

/// What a panel sees of one step: every contender's summary and series of it, and its
/// rows of figures from the report's view.
pub struct PanelView<'a> {
    pub run: &'a RunData,
    pub step: &'a str,
    /// Per contender (in the run's order): its summary of the step, if it has one.
    pub per: &'a [Option<&'a StepSummary>],
    /// Per contender: the step's series (empty when it has none).
    pub series: &'a [Option<&'a StepSeries>],
    /// Every metric of the step, first-seen order.
    pub keys: &'a [&'a Metric],
    /// The step's figures across contenders, with the best of each.
    pub rows: &'a [FigureRow<'a>],
}

impl PanelView<'_> {
    fn name(&self, i: usize) -> &str {
        self.run
            .summary
            .contenders
            .get(i)
            .map(|c| c.name.as_str())
            .unwrap_or("?")
    }

    fn has_latency(&self) -> bool {
        self.per
            .iter()
            .flatten()
            .any(|p| p.status == Status::Ok && p.latency_us.is_some())
    }
}

/// A panel: a step's data to figures (none when it has nothing to draw).
pub type Panel = fn(&PanelView<'_>) -> Vec<Figure>;

/// The panels of every step, in page order. To add a chart, add a function.
pub const PANELS: &[Panel] = &[
    bars,
    query_times,
    percentiles,
    client_timelines,
    sweep_curves,
    replica_timelines,
    cluster_timelines,
    system_timelines,
];

/// The report of one run.
pub fn render(run: &RunData) -> String {
    let view = ReportView::build(&run.summary, &run.manifest, Some(run));
    let s = &run.summary;
    let m = &run.manifest;
    let mut b = String::new();
    let scale = s.scale.as_deref().unwrap_or("as written");
    let _ = write!(
        b,
        "<header>\n<h1>{} <span class=\"muted\">· {} scale</span></h1>\n<p class=\"meta\"><span class=\"badge{}\">{}</span> · {} · started {}{} · dbduel {}</p>\n{}</header>\n",
        esc(&s.study),
        esc(scale),
        if s.status == Status::Ok { "" } else { " bad" },
        s.status.as_str(),
        esc(&host_line(run)),
        esc(&s.started_at),
        s.finished_at
            .as_deref()
            .map(|f| format!(", finished {}", esc(f)))
            .unwrap_or_default(),
        esc(&m.dbduel.to_string()),
        legend(run, None)
    );
    b.push_str("<section id=\"glance\">\n<h2>At a glance</h2>\n<ol class=\"glance\">\n");
    for st in &view.steps {
        let v = &st.verdict;
        let _ = writeln!(
            b,
            "<li><a href=\"#step-{}\">{}</a>: {}</li>",
            esc(&slug(&st.name)),
            esc(&v.title),
            esc(&v.sentence)
        );
    }
    b.push_str("</ol>\n");
    if !view.findings.is_empty() {
        b.push_str("<h3>Findings</h3>\n<ul class=\"glance\">\n");
        for f in &view.findings {
            let _ = writeln!(b, "<li>{}</li>", esc(f));
        }
        b.push_str("</ul>\n");
    }
    if !view.checks.is_empty() {
        b.push_str("<h3>What the original found</h3>\n<ul class=\"glance\">\n");
        for l in super::finding_checks::lines(&view.checks) {
            let _ = writeln!(b, "<li>{}</li>", esc(&l));
        }
        b.push_str("</ul>\n");
    }
    b.push_str("</section>\n");
    for st in &view.steps {
        b.push_str(&step_section(run, &view, st));
    }
    b.push_str(&context(run, &view));
    let _ = writeln!(
        b,
        "<footer>Made by dbduel from the run directory <code>{}</code>; every figure here is in its <code>summary.json</code> and per-step files.</footer>",
        esc(&run.name)
    );
    page(&format!("dbduel · {} · {}", s.study, s.started_at), &b)
}

/// `load`, `range-queries` → safe for an id.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn host_line(run: &RunData) -> String {
    let h = &run.manifest.host;
    format!(
        "{} · {} cores · {} RAM",
        h.cpu_model,
        h.cores,
        format::bytes(h.mem_total_bytes)
    )
}

/// Colour keys of the contenders (`only`: those with a summary of one step).
fn legend(run: &RunData, only: Option<&[Option<&StepSummary>]>) -> String {
    let shown = run
        .summary
        .contenders
        .iter()
        .enumerate()
        .filter(|(i, _)| !only.is_some_and(|p| p.get(*i).is_none_or(|x| x.is_none())))
        .map(|(i, c)| (c.name.as_str(), svg::color(i)));
    colour_key(shown) + "\n"
}

/// A list of names, each beside its colour's swatch.
fn colour_key<'a>(items: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut o = String::from("<ul class=\"legend\">");
    for (name, colour) in items {
        let _ = write!(
            o,
            "<li><span class=\"sw\" style=\"background:{colour}\"></span>{}</li>",
            esc(name)
        );
    }
    o.push_str("</ul>");
    o
}

fn step_section(run: &RunData, report: &ReportView<'_>, st: &view::StepView<'_>) -> String {
    let step = st.name.as_str();
    let view = PanelView {
        run,
        step,
        per: &st.per,
        series: &st.series,
        keys: &st.keys,
        rows: &st.rows,
    };
    let v = &st.verdict;
    let kind = &st.kind;
    let mut o = String::new();
    let figures: Vec<Figure> = PANELS.iter().flat_map(|p| p(&view)).collect();
    // Bars name their contenders; lines need the colour key.
    let needs_legend = figures.iter().any(|f| f.svg.contains("<polyline"));
    let _ = write!(
        o,
        "<section class=\"step\" id=\"step-{}\">\n<h2>{}<span class=\"kind\">{} · {}</span></h2>\n<p class=\"verdict\">{}</p>\n{}<div class=\"grid\">\n",
        esc(&slug(step)),
        esc(&v.title),
        esc(step),
        esc(kind),
        esc(&v.sentence),
        if needs_legend {
            legend(run, Some(view.per))
        } else {
            String::new()
        }
    );
    for f in figures {
        let key = if f.key.is_empty() {
            String::new()
        } else {
            colour_key(f.key.iter().map(|(n, c)| (n.as_str(), *c)))
        };
        let _ = writeln!(
            o,
            "<figure><figcaption>{} <span>{}</span></figcaption>{key}{}</figure>",
            esc(&f.caption),
            esc(&f.detail),
            f.svg
        );
    }
    o.push_str(&figures_table(report, &view));
    o.push_str("</div>\n");
    // A note every contender shares is said once, without names.
    let ran: Vec<(usize, &StepSummary)> = view
        .per
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|x| (i, x)))
        .collect();
    let shared = ran.first().and_then(|(_, x)| x.note.clone()).filter(|n| {
        ran.len() > 1
            && ran
                .iter()
                .all(|(_, x)| x.note.as_deref() == Some(n.as_str()))
    });
    let mut notes: Vec<String> = match shared {
        Some(n) => vec![n],
        None => ran
            .iter()
            .filter_map(|(i, x)| x.note.as_ref().map(|n| format!("{}: {n}", view.name(*i))))
            .collect(),
    };
    for (i, sr) in view.series.iter().enumerate() {
        for (file, bad) in sr.map(|x| x.unreadable.as_slice()).unwrap_or_default() {
            notes.push(format!(
                "{}: {bad} unreadable line(s) in {file} were left out",
                view.name(i)
            ));
        }
    }
    if !notes.is_empty() {
        o.push_str("<ul class=\"notes\">");
        for n in notes {
            let _ = write!(o, "<li>{}</li>", esc(&n));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
    o
}

/// The step's figures as a table, the best of each marked.
fn figures_table(report: &ReportView<'_>, v: &PanelView<'_>) -> String {
    if v.rows.is_empty() {
        return String::new();
    }
    let mut o = String::from("<div class=\"tablewrap\"><table><thead><tr><th>figure</th>");
    for c in &report.columns {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    for r in &report.refs {
        let _ = write!(
            o,
            "<th class=\"published\" title=\"{}\">{}</th>",
            esc(&super::reference::describe(
                r,
                report.manifest.scale.as_deref()
            )),
            esc(&super::reference::column(r))
        );
    }
    let n = v.per.len();
    if n >= 2 {
        o.push_str("<th class=\"left\">best</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for r in v.rows {
        let _ = write!(o, "<tr><td>{}</td>", esc(&r.metric.label));
        for (i, c) in r.cells.iter().enumerate() {
            let text = match (&c.figure, c.status) {
                (Some(f), _) => f.clone(),
                (None, Some(status)) => status.as_str().to_string(),
                _ => String::new(),
            };
            let _ = write!(
                o,
                "<td{}>{}</td>",
                if r.best.clear == Some(i) {
                    " class=\"best\""
                } else {
                    ""
                },
                esc(&text)
            );
        }
        for x in &r.refs {
            let _ = write!(o, "<td class=\"published\">{}</td>", esc(x));
        }
        if n >= 2 {
            let _ = write!(o, "<td class=\"left\">{}</td>", esc(&r.best.text));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>\n");
    o
}
