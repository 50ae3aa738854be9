//! The self-contained HTML report (`RUN_DIR/report.html`): each step's verdict in words, bar
//! charts of its figures, latency percentiles, per-second timelines of client and system
//! series with contenders overlaid, sweep curves, and the run's full context. One file: the
//! styles are inline, the charts are inline SVG, there is no script, and a Content Security
//! Policy forbids loading anything, so it opens offline, prints, and can be mailed.
//!
//! The page is built by *panels*: functions from a step's data (its `Metric`s and its
//! generic series files) to figures. A new step kind gets charts by producing metrics and
//! series; a new kind of chart is one more function in [`PANELS`]. Nothing here names a step
//! kind; two panels still know a figure's or an op's name a kind gives it — numbered queries'
//! `qNN_hot_s`/`qNN_cold_s` (`query_figure`) and TPC-C's `new_order` op (`new_orders`) —
//! until figures carry what their chart needs.

use super::format;
use super::page::page;
use super::series::{
    ClusterPoint, Combine, Interval, MAX_POINTS, ReplicaPoint, RunData, Second, StepSeries,
    SystemPoint, downsample, windows,
};
use super::svg::{self, Bar, Line, LineChart, esc};
use super::view::{self, FigureRow, ReportView};
use crate::results::{Better, Metric, Status, StepSummary, Unit};
use crate::sandbox::device_profile::DeviceProfile;
use std::collections::BTreeSet;
use std::fmt::Write;

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
            esc(&super::reference::describe(r)),
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

fn better_words(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
        Better::None => "",
    }
}

/// One bar chart per figure that has a better direction. Latency figures go to the
/// percentile chart instead when the step has one.
fn bars(v: &PanelView<'_>) -> Vec<Figure> {
    let latency_chart = v.has_latency();
    v.rows
        .iter()
        .filter(|r| {
            let k = r.metric;
            k.better != Better::None
                && !(latency_chart && k.unit == Unit::Micros)
                && query_figure(&k.key).is_none()
        })
        .map(|r| {
            let k = r.metric;
            let best = r.best.clear;
            let bars: Vec<Bar> = r
                .figs
                .iter()
                .enumerate()
                .filter(|(i, _)| v.per.get(*i).is_some_and(Option::is_some))
                .map(|(i, f)| {
                    let status = v.per[i].map(|p| p.status).unwrap_or(Status::Skipped);
                    let text = match f {
                        Some(f) => format::figure(f),
                        None if status != Status::Ok => status.as_str().to_string(),
                        None => "no figure".to_string(),
                    };
                    Bar {
                        label: v.name(i).to_string(),
                        color: svg::color(i),
                        value: f.map(|f| f.value),
                        samples: f.map(|f| f.samples.clone()).unwrap_or_default(),
                        interval: f.and_then(|f| f.repeated()).map(|s| (s.lo, s.hi)),
                        tip: format!("{}: {} {text}", v.name(i), k.label),
                        text,
                        best: best == Some(i),
                    }
                })
                .collect();
            let mut detail = better_words(k.better).to_string();
            if bars.iter().any(|b| !b.samples.is_empty()) {
                detail.push_str("; dots: each round, line: the interval for the median");
            }
            Figure {
                caption: k.label.clone(),
                detail,
                svg: svg::bar_chart(&format!("{}: {}", v.step, k.label), &bars),
                key: Vec::new(),
            }
        })
        .collect()
}

/// A numbered query's figure (`q07_hot_s`, `q07_cold_s`): (7, `hot` or `cold`). Such figures
/// are drawn together by [`query_times`], not one bar chart each.
fn query_figure(key: &str) -> Option<(u32, &str)> {
    let rest = key.strip_prefix('q')?;
    let (n, which) = rest.split_once('_')?;
    let which = which.strip_suffix("_s")?;
    (n.len() == 2 && matches!(which, "hot" | "cold")).then_some((n.parse().ok()?, which))
}

/// One contender's line of `which` (`hot` or `cold`) query times: (the query's place among
/// `queries`, seconds) with a tip each, in the axis's order. The step records its queries in
/// the order they ran (stream 0's: Q14, Q2, Q9, …), not 1 to 22.
fn query_points(
    name: &str,
    metrics: &[crate::results::Metric],
    queries: &[u32],
    which: &str,
) -> (Vec<(f64, f64)>, Vec<String>) {
    let mut out: Vec<((f64, f64), String)> = metrics
        .iter()
        .filter_map(|m| {
            let (q, w) = query_figure(&m.key)?;
            let j = queries.iter().position(|x| *x == q)?;
            (w == which && m.value > 0.0).then(|| {
                let tip = format!("{name}: Q{q} {which} {}", format::seconds(m.value));
                ((j as f64, m.value), tip)
            })
        })
        .collect();
    out.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
    out.into_iter().unzip()
}

/// Steps that time numbered queries (`tpch-power`): per query, each contender's best hot
/// seconds and its cold seconds, one line per contender over the queries, log scale.
fn query_times(v: &PanelView<'_>) -> Vec<Figure> {
    let mut queries: Vec<u32> = v
        .keys
        .iter()
        .filter_map(|m| query_figure(&m.key))
        .map(|(q, _)| q)
        .collect();
    queries.sort_unstable();
    queries.dedup();
    if queries.is_empty() {
        return Vec::new();
    }
    let cats: Vec<String> = queries.iter().map(|q| format!("Q{q}")).collect();
    let chart = |which: &str, caption: &str| {
        let lines: Vec<Line> = v
            .per
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let metrics = &p.as_ref()?.metrics;
                let (points, tips) = query_points(v.name(i), metrics, &queries, which);
                (!points.is_empty()).then(|| Line {
                    name: v.name(i).to_string(),
                    color: svg::color(i),
                    points,
                    tips,
                })
            })
            .collect();
        let fmt = |x: f64| format::seconds(x);
        let none = |_: f64| String::new();
        Figure {
            caption: caption.to_string(),
            detail: "per query, log scale; lower is better; TPC-H-like, not audited".into(),
            svg: svg::line_chart(&LineChart {
                title: format!("{}: {caption}", v.step),
                x_label: "query".into(),
                lines,
                y_fmt: &fmt,
                x_fmt: &none,
                log_y: true,
                categories: Some(cats.clone()),
                shade: Vec::new(),
                refs: Vec::new(),
                marks: Vec::new(),
            }),
            key: Vec::new(),
        }
    };
    vec![
        chart("hot", "best hot seconds per query"),
        chart("cold", "cold seconds per query"),
    ]
}

/// The latency distribution over the whole step: p50 … max, one line per contender.
fn percentiles(v: &PanelView<'_>) -> Vec<Figure> {
    if !v.has_latency() {
        return Vec::new();
    }
    let cats = ["p50", "p95", "p99", "p99.9", "max"];
    let lines: Vec<Line> = v
        .per
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let l = p.filter(|x| x.status == Status::Ok)?.latency_us?;
            let ys = [l.p50, l.p95, l.p99, l.p999, l.max].map(|x| x as f64);
            Some(Line {
                name: v.name(i).to_string(),
                color: svg::color(i),
                points: ys.iter().enumerate().map(|(j, y)| (j as f64, *y)).collect(),
                tips: ys
                    .iter()
                    .zip(cats)
                    .map(|(y, c)| format!("{c} {}", format::micros(*y)))
                    .collect(),
            })
        })
        .collect();
    let fmt = |x: f64| format::micros(x);
    let none = |_: f64| String::new();
    vec![Figure {
        caption: "latency percentiles".into(),
        detail: "whole step, log scale; lower is better".into(),
        svg: svg::line_chart(&LineChart {
            title: format!("{}: latency percentiles", v.step),
            x_label: "percentile".into(),
            lines,
            y_fmt: &fmt,
            x_fmt: &none,
            log_y: true,
            categories: Some(cats.iter().map(|c| c.to_string()).collect()),
            shade: Vec::new(),
            refs: Vec::new(),
            marks: Vec::new(),
        }),
        key: Vec::new(),
    }]
}

/// `12 s`, `0.5 s`.
fn secs_label(t: f64) -> String {
    if t == t.trunc() {
        format!("{t:.0} s")
    } else {
        format!("{t:.1} s")
    }
}

/// One timeline: a value per point of each contender's series, downsampled.
struct Timeline<'a> {
    caption: String,
    detail: String,
    unit_fmt: &'a dyn Fn(f64) -> String,
    combine: Combine,
    /// Log scale when the values span more than this ratio (`None`: linear).
    log_over: Option<f64>,
    shade: Vec<(f64, f64, String)>,
    /// Reference lines (a device profile's limits).
    refs: Vec<svg::RefLine>,
}

/// A series' points as (x, y, what the hover text adds).
type PointsOf<'a> = &'a dyn Fn(&StepSeries) -> Vec<(f64, f64, String)>;

/// One line of a timeline: its name, its colour's number and its points.
type NamedPoints = (String, usize, Vec<(f64, f64, String)>);

fn timeline(v: &PanelView<'_>, t: Timeline<'_>, points_of: PointsOf<'_>) -> Option<Figure> {
    let named = v
        .series
        .iter()
        .enumerate()
        .filter_map(|(i, sr)| Some((v.name(i).to_string(), i, points_of(sr.as_ref()?))))
        .collect();
    timeline_of(v, t, named, false)
}

/// A timeline of named lines (a contender's, or a contender's replica's), each with its
/// colour's number and its points.
/// `own_key`: the figure carries a colour key of its lines.
fn timeline_of(
    v: &PanelView<'_>,
    t: Timeline<'_>,
    named: Vec<NamedPoints>,
    own_key: bool,
) -> Option<Figure> {
    let mut lines = Vec::new();
    for (name, i, pts) in named {
        if pts.is_empty() {
            continue;
        }
        let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
        let (down, per) = downsample(&xy, MAX_POINTS, t.combine);
        let tips: Vec<String> = if per == 1 {
            pts.iter()
                .map(|p| {
                    let mut s = format!("{}: {}", secs_label(round1(p.0)), (t.unit_fmt)(p.1));
                    if !p.2.is_empty() {
                        s.push_str(&format!(" ({})", p.2));
                    }
                    s
                })
                .collect()
        } else {
            let how = match t.combine {
                Combine::Mean => "mean",
                Combine::Max => "worst",
            };
            down.iter()
                .map(|p| {
                    format!(
                        "{}: {} ({how} of {per} s)",
                        secs_label(round1(p.0)),
                        (t.unit_fmt)(p.1)
                    )
                })
                .collect()
        };
        lines.push(Line {
            name,
            color: svg::color(i),
            points: down,
            tips,
        });
    }
    if lines.iter().all(|l| l.points.len() < 2) {
        return None;
    }
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| *y > 0.0)
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    let log_y = t.log_over.is_some_and(|r| lo > 0.0 && hi / lo > r);
    let detail = if log_y {
        format!("{}; log scale", t.detail)
    } else {
        t.detail
    };
    let key = if own_key {
        lines.iter().map(|l| (l.name.clone(), l.color)).collect()
    } else {
        Vec::new()
    };
    Some(Figure {
        svg: svg::line_chart(&LineChart {
            title: format!("{}: {}", v.step, t.caption),
            x_label: "seconds into the step".into(),
            lines,
            y_fmt: t.unit_fmt,
            x_fmt: &|x| format!("{x}"),
            log_y,
            categories: None,
            shade: t.shade,
            refs: t.refs,
            marks: marks_of(v),
        }),
        caption: t.caption,
        detail,
        key,
    })
}

/// Each contender's schema changes during the step, numbered in their order.
fn marks_of(v: &PanelView<'_>) -> Vec<svg::Mark> {
    v.series
        .iter()
        .enumerate()
        .filter_map(|(i, sr)| Some((i, sr.as_ref()?)))
        .flat_map(|(i, sr)| {
            sr.marks
                .iter()
                .enumerate()
                .map(move |(k, (a, b, what))| svg::Mark {
                    from: *a,
                    to: *b,
                    number: k + 1,
                    label: format!("{}: {}. {what}", v.name(i), k + 1),
                })
        })
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Intervals long enough to stand for a rate (the last one of a run may be a sliver).
fn usable(iv: &Interval) -> bool {
    iv.duration_s() >= 0.25
}

fn partial(iv: &Interval) -> String {
    if iv.duration_s() < 0.999 {
        format!("last {:.2} s", iv.duration_s())
    } else if iv.warmup {
        "warm-up".into()
    } else {
        String::new()
    }
}

/// The seconds flagged as warm-up in any contender's intervals, merged into ranges (a sweep
/// warms up at the start of each level).
fn warmup_ranges(series: &[Option<&StepSeries>]) -> Vec<(f64, f64)> {
    let mut spans: Vec<(f64, f64)> = series
        .iter()
        .flatten()
        .flat_map(|sr| sr.intervals.iter().filter(|i| i.warmup))
        .map(|i| (i.t_s - i.duration_s(), i.t_s))
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1e-6 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A TPC-C step's New-Order transactions in each 10 s of the step (ticks 0–9, 10–19, …): the
/// 2012 original's axis. None for steps without New-Orders.
fn new_orders_per_10s(v: &PanelView<'_>, shade: &[(f64, f64, String)]) -> Option<Figure> {
    let count_fmt = |x: f64| format::count(x);
    let has = |sr: &StepSeries| sr.intervals.iter().any(|i| new_orders(i) > 0.0);
    if !v.series.iter().flatten().any(|sr| has(sr)) {
        return None;
    }
    timeline(
        v,
        Timeline {
            caption: "New-Order transactions per 10 s".into(),
            detail: "New-Order transactions completed in each 10 s, the original's axis".into(),
            unit_fmt: &count_fmt,
            combine: Combine::Mean,
            log_over: None,
            shade: shade.to_vec(),
            refs: Vec::new(),
        },
        &|sr| {
            // (end, New-Orders, seconds covered) of each window of ten ticks
            let mut w: Vec<(u64, f64, f64, f64)> = Vec::new();
            for i in sr.intervals.iter().filter(|i| usable(i)) {
                let k = i.tick / 10;
                if w.last().is_none_or(|l| l.0 != k) {
                    w.push((k, i.t_s, 0.0, 0.0));
                }
                let Some(l) = w.last_mut() else { continue };
                l.1 = l.1.max(i.t_s);
                l.2 += new_orders(i);
                l.3 += i.duration_s();
            }
            w.into_iter()
                .map(|(_, end, n, secs)| {
                    let note = if secs < 9.99 {
                        format!("{secs:.1} s only")
                    } else {
                        String::new()
                    };
                    (end, n, note)
                })
                .collect()
        },
    )
}

/// Throughput, tail latency and errors per second of a client step.
fn client_timelines(v: &PanelView<'_>) -> Vec<Figure> {
    let shade: Vec<(f64, f64, String)> = warmup_ranges(v.series)
        .into_iter()
        .map(|(a, b)| (a, b, "warm-up: left out of the step's figures".to_string()))
        .collect();
    // The step's own name for its rate when it has one (`queries/s`); a step with several
    // rates (one per sweep level) gets the generic name.
    let rates: Vec<&&Metric> = v
        .keys
        .iter()
        .filter(|k| k.unit == Unit::PerSecond)
        .collect();
    let rate_label = match rates.as_slice() {
        [one] => one.label.clone(),
        _ => "operations/s".into(),
    };
    let rate_fmt = |x: f64| format::value(x, Unit::PerSecond);
    let lat_fmt = |x: f64| format::micros(x);
    // The study may ask for coarser points (sysbench's --report-interval); the per-second
    // series stays in the run directory.
    let every = v.run.report_interval_s(v.step);
    let (rate_detail, p99_detail) = if every > 1 {
        (
            format!("{rate_label}, the mean of each {every} s"),
            format!("p99 of the worst second in each {every} s"),
        )
    } else {
        (
            format!("{rate_label} each second"),
            "each second".to_string(),
        )
    };
    let mut out = Vec::new();
    out.extend(timeline(
        v,
        Timeline {
            caption: "throughput".into(),
            detail: rate_detail,
            unit_fmt: &rate_fmt,
            combine: Combine::Mean,
            log_over: None,
            shade: shade.clone(),
            refs: Vec::new(),
        },
        &|sr| rate_points(sr, every),
    ));
    out.extend(timeline(
        v,
        Timeline {
            caption: "p99 latency".into(),
            detail: p99_detail,
            unit_fmt: &lat_fmt,
            combine: Combine::Max,
            log_over: Some(30.0),
            shade: shade.clone(),
            refs: Vec::new(),
        },
        &|sr| p99_points(sr, every),
    ));
    out.extend(new_orders_per_10s(v, &shade));
    out.extend(errors_timeline(v, shade));
    out
}

/// Seconds gathered into windows of `every` seconds, each point saying `what` it is.
fn windowed(secs: Vec<Second>, every: u64, how: Combine, what: &str) -> Vec<(f64, f64, String)> {
    windows(&secs, every, how)
        .into_iter()
        .map(|(x, y, k)| (x, y, format!("{what} of {k} s")))
        .collect()
}

/// A series' throughput points: each second's, or the mean of each `every` seconds.
fn rate_points(sr: &StepSeries, every: u64) -> Vec<(f64, f64, String)> {
    let usable = sr.intervals.iter().filter(|i| usable(i));
    if every == 1 {
        return usable.map(|i| (i.t_s, i.ops_per_s, partial(i))).collect();
    }
    let secs = usable
        .map(|i| Second {
            tick: i.tick,
            t_s: i.t_s,
            duration_s: i.duration_s(),
            y: i.ops_per_s,
        })
        .collect();
    windowed(secs, every, Combine::Mean, "mean")
}

/// A series' p99 points: each second's, or the worst second's of each `every` seconds.
fn p99_points(sr: &StepSeries, every: u64) -> Vec<(f64, f64, String)> {
    let with_latency = sr
        .intervals
        .iter()
        .filter_map(|i| i.latency_us.map(|l| (i, l.p99)));
    if every == 1 {
        return with_latency
            .map(|(i, p99)| (i.t_s, p99, partial(i)))
            .collect();
    }
    let secs = with_latency
        .map(|(i, p99)| Second {
            tick: i.tick,
            t_s: i.t_s,
            duration_s: i.duration_s(),
            y: p99,
        })
        .collect();
    windowed(secs, every, Combine::Max, "worst second")
}

/// Errors each second, when any contender had some.
fn errors_timeline(v: &PanelView<'_>, shade: Vec<(f64, f64, String)>) -> Option<Figure> {
    let any_errors = v
        .series
        .iter()
        .flatten()
        .any(|sr| sr.intervals.iter().any(|i| i.errors > 0));
    if !any_errors {
        return None;
    }
    let count_fmt = |x: f64| format::count(x);
    timeline(
        v,
        Timeline {
            caption: "errors".into(),
            detail: "each second".into(),
            unit_fmt: &count_fmt,
            combine: Combine::Mean,
            log_over: None,
            shade,
            refs: Vec::new(),
        },
        &|sr| {
            sr.intervals
                .iter()
                .map(|i| (i.t_s, i.errors as f64, partial(i)))
                .collect()
        },
    )
}

/// Throughput and p99 against the sweep level (client count), for steps whose intervals
/// carry one: throughput is the mean over each level's measured (non-warm-up) seconds; p99 is
/// the level's own, from its merged histogram, where the step recorded it (a mean of
/// per-second p99s would understate the tail), else the mean of its seconds' p99. A TPC-C
/// sweep also gets the 2012 original's own chart: New-Order transactions per 10 s against the
/// client count.
fn sweep_curves(v: &PanelView<'_>) -> Vec<Figure> {
    let levels: BTreeSet<u64> = v
        .series
        .iter()
        .flatten()
        .flat_map(|sr| sr.intervals.iter().filter_map(|i| i.level))
        .collect();
    if levels.len() < 2 {
        return Vec::new();
    }
    let cats: Vec<u64> = levels.into_iter().collect();
    let rate_fmt = |x: f64| format::value(x, Unit::PerSecond);
    let lat_fmt = |x: f64| format::micros(x);
    let count_fmt = |x: f64| format::count(x);
    let whole_p99 = v.series.iter().flatten().any(|sr| !sr.level_p99.is_empty());
    let mut out = vec![
        level_curve(
            v,
            &cats,
            LevelCurve {
                caption: "throughput by clients",
                detail: "mean of each level's measured seconds",
                fmt: &rate_fmt,
                log_y: false,
                y: &|i| Some(i.ops_per_s),
                whole_p99: false,
            },
        ),
        level_curve(
            v,
            &cats,
            LevelCurve {
                caption: "p99 latency by clients",
                detail: if whole_p99 {
                    "each level's p99 over its measured window (its merged histogram); log scale"
                } else {
                    "mean of each level's per-second p99; log scale"
                },
                fmt: &lat_fmt,
                log_y: true,
                y: &|i| i.latency_us.map(|l| l.p99),
                whole_p99: true,
            },
        ),
    ];
    let has_new_orders = v
        .series
        .iter()
        .flatten()
        .any(|sr| sr.intervals.iter().any(|i| new_orders(i) > 0.0));
    if has_new_orders {
        out.push(level_curve(
            v,
            &cats,
            LevelCurve {
                caption: "New-Order transactions per 10 s by clients",
                detail: "New-Orders completed in 10 s at each client count (the mean of its measured seconds, times 10), as the original's chart drew them",
                fmt: &count_fmt,
                log_y: false,
                y: &|i| Some(new_orders(i) * 10.0 / i.duration_s()),
                whole_p99: false,
            },
        ));
    }
    out
}

/// New-Order transactions completed in an interval (TPC-C's; 0 for any other step).
fn new_orders(i: &Interval) -> f64 {
    i.per_op
        .iter()
        .filter(|o| o.op == "new_order")
        .map(|o| o.ops as f64)
        .sum()
}

/// One curve of a sweep: what it draws of each level.
struct LevelCurve<'a> {
    caption: &'a str,
    detail: &'a str,
    fmt: &'a dyn Fn(f64) -> String,
    log_y: bool,
    /// An interval's value; a level's point is the mean over its measured seconds.
    y: &'a dyn Fn(&Interval) -> Option<f64>,
    /// Take the level's own p99 (its merged histogram) where the step recorded it.
    whole_p99: bool,
}

/// A line per contender through its value at each level of `cats`.
fn level_curve(v: &PanelView<'_>, cats: &[u64], c: LevelCurve<'_>) -> Figure {
    let per_level = |sr: &StepSeries| {
        cats.iter()
            .enumerate()
            .filter_map(|(x, lv)| {
                if c.whole_p99
                    && let Some(p99) = sr.level_p99.get(lv)
                {
                    return Some((x as f64, *p99));
                }
                let ys: Vec<f64> = sr
                    .intervals
                    .iter()
                    .filter(|i| i.level == Some(*lv) && !i.warmup && usable(i))
                    .filter_map(c.y)
                    .collect();
                (!ys.is_empty()).then(|| (x as f64, ys.iter().sum::<f64>() / ys.len() as f64))
            })
            .collect::<Vec<(f64, f64)>>()
    };
    let lines: Vec<Line> = v
        .series
        .iter()
        .enumerate()
        .filter_map(|(i, sr)| {
            let pts = per_level((*sr)?);
            (!pts.is_empty()).then(|| Line {
                name: v.name(i).to_string(),
                color: svg::color(i),
                tips: pts
                    .iter()
                    .map(|p| {
                        format!(
                            "{} clients: {}",
                            cats.get(p.0 as usize).copied().unwrap_or(0),
                            (c.fmt)(p.1)
                        )
                    })
                    .collect(),
                points: pts,
            })
        })
        .collect();
    Figure {
        caption: c.caption.into(),
        detail: c.detail.into(),
        svg: svg::line_chart(&LineChart {
            title: format!("{}: {}", v.step, c.caption),
            x_label: "clients".into(),
            lines,
            y_fmt: c.fmt,
            x_fmt: &|x| format!("{x}"),
            log_y: c.log_y,
            categories: Some(cats.iter().map(|c| c.to_string()).collect()),
            shade: Vec::new(),
            refs: Vec::new(),
            marks: Vec::new(),
        }),
        key: Vec::new(),
    }
}

/// Each replica's apply rate, lag and CPU each second, in a replication step: a line per
/// replica (named with its contender when several contenders have replicas).
fn replica_timelines(v: &PanelView<'_>) -> Vec<Figure> {
    let with: Vec<(usize, &StepSeries)> = v
        .series
        .iter()
        .enumerate()
        .filter_map(|(i, sr)| sr.filter(|s| !s.replicas.is_empty()).map(|s| (i, s)))
        .collect();
    if with.is_empty() {
        return Vec::new();
    }
    let tx = |x: f64| format::value(x, Unit::PerSecond);
    let secs = |x: f64| format::value(x, Unit::Seconds);
    let pct = |x: f64| format!("{x:.0}%");
    let lines = |y: &dyn Fn(&ReplicaPoint) -> Option<f64>| -> Vec<NamedPoints> {
        let mut out: Vec<NamedPoints> = Vec::new();
        for (i, sr) in &with {
            let mut names: Vec<&str> = Vec::new();
            for p in &sr.replicas {
                if !names.contains(&p.replica.as_str()) {
                    names.push(&p.replica);
                }
            }
            for name in names {
                let label = if with.len() == 1 {
                    name.to_string()
                } else {
                    format!("{} · {name}", v.name(*i))
                };
                let pts = sr
                    .replicas
                    .iter()
                    .filter(|p| p.replica == name)
                    .filter_map(|p| {
                        let behind = format!("{} tx behind", format::count(p.behind_tx as f64));
                        Some((p.t_s, y(p)?, behind))
                    })
                    .collect();
                let colour = out.len();
                out.push((label, colour, pts));
            }
        }
        out
    };
    fn chart<'a>(
        caption: &str,
        detail: &str,
        fmt: &'a dyn Fn(f64) -> String,
        how: Combine,
    ) -> Timeline<'a> {
        Timeline {
            caption: caption.into(),
            detail: detail.into(),
            unit_fmt: fmt,
            combine: how,
            log_over: None,
            shade: Vec::new(),
            refs: Vec::new(),
        }
    }
    let mut out = Vec::new();
    out.extend(timeline_of(
        v,
        chart(
            "replica apply rate",
            "transactions each replica applied each second",
            &tx,
            Combine::Mean,
        ),
        lines(&|p| Some(p.applied_per_s)),
        true,
    ));
    out.extend(timeline_of(
        v,
        chart(
            "replica lag",
            "how long ago the primary committed the oldest transaction each replica had not applied",
            &secs,
            Combine::Max,
        ),
        lines(&|p| p.lag_s),
        true,
    ));
    out.extend(timeline_of(
        v,
        chart(
            "replica CPU",
            "each replica's server, % of one core",
            &pct,
            Combine::Mean,
        ),
        lines(&|p| p.cpu_pct),
        true,
    ));
    out
}

/// A cluster's own seconds, from its nodes' wsrep counters: write sets replicated,
/// conflicts, and the share of time flow control paused replication.
fn cluster_timelines(v: &PanelView<'_>) -> Vec<Figure> {
    if !v.series.iter().flatten().any(|s| !s.cluster.is_empty()) {
        return Vec::new();
    }
    let rate = |x: f64| format::value(x, Unit::PerSecond);
    let pct = |x: f64| format!("{x:.0}%");
    fn chart<'a>(caption: &str, detail: &str, fmt: &'a dyn Fn(f64) -> String) -> Timeline<'a> {
        Timeline {
            caption: caption.into(),
            detail: detail.into(),
            unit_fmt: fmt,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs: Vec::new(),
        }
    }
    /// Each second's value, with how many nodes were live in the hover text.
    fn points(s: &StepSeries, y: fn(&ClusterPoint) -> f64) -> Vec<(f64, f64, String)> {
        s.cluster
            .iter()
            .map(|p| (p.t_s, y(p), format!("{} nodes live", p.live)))
            .collect()
    }
    let writesets = |s: &StepSeries| points(s, |p| p.writesets as f64 / p.dt_s.max(1e-3));
    let conflicts = |s: &StepSeries| {
        points(s, |p| {
            (p.cert_failures + p.bf_aborts) as f64 / p.dt_s.max(1e-3)
        })
    };
    let paused = |s: &StepSeries| points(s, |p| p.flow_control_paused * 100.0);
    [
        timeline(
            v,
            chart(
                "cluster write sets",
                "write sets the nodes replicated to each other each second",
                &rate,
            ),
            &writesets,
        ),
        timeline(
            v,
            chart(
                "cluster conflicts",
                "certification failures and brute-force aborts each second, all nodes",
                &rate,
            ),
            &conflicts,
        ),
        timeline(
            v,
            chart(
                "flow control",
                "share of each second the most paused node had replication paused",
                &pct,
            ),
            &paused,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Host CPU, disk throughput and IOPS each second, sampled beside every step.
fn system_timelines(v: &PanelView<'_>) -> Vec<Figure> {
    let disk = v
        .series
        .iter()
        .flatten()
        .find(|s| !s.system.is_empty())
        .map(|s| s.disk.clone())
        .unwrap_or_default();
    let pct = |x: f64| format!("{x:.0}%");
    let busy = |x: f64| format!("{}%", svg::trim_zeros(&format!("{x:.1}")));
    // Disk rates in decimal MB/s, as iostat and vendors' data sheets give them.
    let mbps = |x: f64| format!("{} MB/s", svg::trim_zeros(&format!("{:.2}", x / 1e6)));
    let iops = |x: f64| format::count(x);
    let mut out = Vec::new();
    out.extend(timeline(
        v,
        Timeline {
            caption: "host CPU".into(),
            detail: "busy % of all cores, each second".into(),
            unit_fmt: &pct,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs: Vec::new(),
        },
        &|sr| {
            sr.system
                .iter()
                .map(|p| {
                    let eng = p
                        .engine_cpu_pct
                        .map(|e| format!("engine {e:.0}% of a core"))
                        .unwrap_or_default();
                    (p.t_s, p.cpu_busy_pct, eng)
                })
                .collect()
        },
    ));
    // Disk figures each way, as nmon showed them, with each contender's device profile
    // limit as a dashed line in its colour.
    let profiles = device_profiles(v.run);
    let disk_timeline = |caption: &str,
                         fmt: &dyn Fn(f64) -> String,
                         y: fn(&SystemPoint) -> f64,
                         limit: fn(&DeviceProfile) -> f64| {
        let axis = DiskAxis { fmt, y, limit };
        disk_timeline(v, &profiles, &disk, caption, axis)
    };
    out.extend(disk_timeline(
        "disk reads",
        &mbps,
        |p| p.read_bytes_per_s,
        |d| d.read_bps() as f64,
    ));
    out.extend(disk_timeline(
        "disk writes",
        &mbps,
        |p| p.write_bytes_per_s,
        |d| d.write_bps() as f64,
    ));
    out.extend(disk_timeline(
        "read IOPS",
        &iops,
        |p| p.read_iops,
        |d| d.read_iops as f64,
    ));
    out.extend(disk_timeline(
        "write IOPS",
        &iops,
        |p| p.write_iops,
        |d| d.write_iops as f64,
    ));
    out.extend(timeline(
        v,
        Timeline {
            caption: "disk busy".into(),
            detail: format!("{disk}, % of each second with a request in flight (nmon's Busy)"),
            unit_fmt: &busy,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs: Vec::new(),
        },
        &|sr| {
            sr.system
                .iter()
                .map(|p| (p.t_s, p.busy_pct, String::new()))
                .collect()
        },
    ));
    out
}

/// One disk figure of the system series: how to show it, read it from a point, and read the
/// matching limit from a device profile.
struct DiskAxis<'a> {
    fmt: &'a dyn Fn(f64) -> String,
    y: fn(&SystemPoint) -> f64,
    limit: fn(&DeviceProfile) -> f64,
}

/// A disk figure's timeline, with each contender's device profile limit as a dashed line in
/// its colour.
fn disk_timeline(
    v: &PanelView<'_>,
    profiles: &[Option<DeviceProfile>],
    disk: &str,
    caption: &str,
    axis: DiskAxis<'_>,
) -> Option<Figure> {
    let DiskAxis { fmt, y, limit } = axis;
    let peak = v
        .series
        .iter()
        .flatten()
        .flat_map(|sr| sr.system.iter().map(y))
        .fold(0.0, f64::max);
    let (refs, above) = limit_lines(v, profiles, fmt, limit, peak);
    let mut detail = format!("{disk}, each second");
    if !above.is_empty() {
        detail.push_str(&format!("; above the chart: {}", above.join(", ")));
    }
    timeline(
        v,
        Timeline {
            caption: caption.into(),
            detail,
            unit_fmt: fmt,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs,
        },
        &|sr| {
            sr.system
                .iter()
                .map(|p| (p.t_s, y(p), String::new()))
                .collect()
        },
    )
}

/// One line per profile limit, with the contenders it holds; in a contender's colour when it
/// holds one. A limit far above what was measured would flatten the lines: it is named
/// instead (the second list).
fn limit_lines(
    v: &PanelView<'_>,
    profiles: &[Option<DeviceProfile>],
    fmt: &dyn Fn(f64) -> String,
    limit: fn(&DeviceProfile) -> f64,
    peak: f64,
) -> (Vec<svg::RefLine>, Vec<String>) {
    let mut limits: Vec<(String, f64, Vec<usize>)> = Vec::new();
    for (i, p) in profiles.iter().enumerate() {
        let Some(p) = p else { continue };
        if v.series.get(i).is_none_or(|s| s.is_none()) {
            continue;
        }
        let label = format!("{} limit {}", p.name, fmt(limit(p)));
        match limits.iter_mut().find(|l| l.0 == label) {
            Some(l) => l.2.push(i),
            None => limits.push((label, limit(p), vec![i])),
        }
    }
    let mut above = Vec::new();
    let mut refs = Vec::new();
    for (label, at, who) in limits {
        let names: Vec<&str> = who.iter().map(|&i| v.name(i)).collect();
        let hover = format!("{label}: {}", names.join(", "));
        if at <= peak * 2.0 {
            refs.push(svg::RefLine {
                y: at,
                label,
                hover,
                color: match who.as_slice() {
                    [one] => svg::color(*one),
                    _ => "#4a5160",
                },
            });
        } else {
            above.push(hover);
        }
    }
    (refs, above)
}

/// Each contender's device profile (in the run's order), from the study as run.
fn device_profiles(run: &RunData) -> Vec<Option<DeviceProfile>> {
    let all = super::study::device_profiles(&run.manifest.study);
    run.summary
        .contenders
        .iter()
        .map(|c| all.iter().find(|p| p.0 == c.name).map(|p| p.1.clone()))
        .collect()
}

/// Versions, effective settings, dataset, host, and the study as run.
fn context(run: &RunData, view: &ReportView<'_>) -> String {
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
            super::reference::column(r),
            format!(
                "not measured here — {} on {}; {}",
                r.engine, r.hardware, r.source
            ),
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

#[cfg(test)]
mod tests {
    #[test]
    fn numbered_query_figures_are_told_from_others() {
        use super::query_figure;
        assert_eq!(query_figure("q07_hot_s"), Some((7, "hot")));
        assert_eq!(query_figure("q22_cold_s"), Some((22, "cold")));
        assert_eq!(query_figure("geomean_hot_s"), None);
        assert_eq!(query_figure("qps"), None);
        assert_eq!(query_figure("q7_hot_s"), None);
    }

    #[test]
    fn a_contenders_query_line_runs_in_the_axis_order_not_the_run_order() {
        use crate::results::{Better, Metric, Unit};
        let m = |key: &str, value: f64| Metric {
            key: key.into(),
            label: key.into(),
            value,
            unit: Unit::Seconds,
            better: Better::Lower,
            samples: Vec::new(),
            spread: None,
            from: None,
        };
        // as stream 0 ran them: Q14, Q2, Q9; a cold figure and a zero left out
        let metrics = [
            m("q14_hot_s", 0.5),
            m("q14_cold_s", 9.0),
            m("q02_hot_s", 0.2),
            m("q09_hot_s", 0.0),
            m("q09_hot_s", 0.9),
        ];
        let (points, tips) = super::query_points("pg", &metrics, &[2, 9, 14], "hot");
        assert_eq!(points, vec![(0.0, 0.2), (1.0, 0.9), (2.0, 0.5)]);
        assert_eq!(tips[0], "pg: Q2 hot 200 ms");
        assert_eq!(tips.len(), 3);
    }
}
