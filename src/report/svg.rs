//! Charts as SVG text: horizontal bars, lines over time or over a category axis, and
//! change-with-noise rows for comparisons. Written by hand rather than with plotters: the
//! charts are few and simple, hand-written SVG inherits the page's fonts and styles (plotters
//! would embed font metrics or pull system font libraries), stays a few kilobytes, and is
//! stable text that golden files can pin down.
//!
//! Every chart is one `<svg class="chart">` whose `data-points` attribute says how many data
//! points it draws; each point is an element of class `pt` with a `<title>` (the hover text).
//! Tests count them in a real browser.

use std::fmt::Write;

/// Colour of the n-th contender: Okabe and Ito's palette, readable by colour-blind readers,
/// with its pale yellow darkened for white paper.
pub const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#8c7e00",
];

/// The colour of contender number `i` (cycling).
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Text safe inside HTML and SVG elements and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// A coordinate with at most one decimal, no trailing `.0`.
fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// `1.00 ms` → `1 ms`, `2.50 µs` → `2.5 µs`, `10.0 µs` → `10 µs`: axis ticks are round
/// numbers and read better without the padding that table figures keep.
pub fn trim_zeros(label: &str) -> String {
    let end = label
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == '-'))
        .unwrap_or(label.len());
    let (num, rest) = label.split_at(end);
    if !num.contains('.') {
        return label.to_string();
    }
    let num = num.trim_end_matches('0').trim_end_matches('.');
    format!("{num}{rest}")
}

/// How values on an axis are written.
pub type Fmt<'a> = &'a dyn Fn(f64) -> String;

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub color: &'static str,
    /// (x, y), x ascending.
    pub points: Vec<(f64, f64)>,
    /// Hover text per point (same length as `points`).
    pub tips: Vec<String>,
}

/// A chart of lines against a numeric x axis (seconds, threads) or a category axis.
pub struct LineChart<'a> {
    /// Accessible name and hover text of the whole chart.
    pub title: String,
    pub x_label: String,
    pub lines: Vec<Line>,
    pub y_fmt: Fmt<'a>,
    pub x_fmt: Fmt<'a>,
    /// Logarithmic y axis (latency spanning decades).
    pub log_y: bool,
    /// Category names: point x values are indices into this list.
    pub categories: Option<Vec<String>>,
    /// Shaded x ranges with a label each (warm-up).
    pub shade: Vec<(f64, f64, String)>,
    /// Horizontal reference lines (a device profile's limit), dashed in a line's colour.
    pub refs: Vec<RefLine>,
    /// Events over a span of x (a schema change under load): a narrow band, numbered at
    /// the top, named on hover.
    pub marks: Vec<Mark>,
}

/// An event on a timeline: from, to (x), its number and what it was.
pub struct Mark {
    pub from: f64,
    pub to: f64,
    pub number: usize,
    pub label: String,
}

/// A dashed horizontal line at `y`, named by `label` (drawn at one end; `hover` on hover).
/// Labels alternate between the right and the left end, so near lines stay readable.
pub struct RefLine {
    pub y: f64,
    pub label: String,
    pub hover: String,
    pub color: &'static str,
}

const W: f64 = 440.0;
const LINE_H: f64 = 230.0;
const ML: f64 = 72.0;
const MR: f64 = 16.0;
const MT: f64 = 12.0;
const MB: f64 = 40.0;

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let f = raw / p;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * p
}

/// A value axis: maps values into pixel positions over `[lo_px, hi_px]` and lists its ticks.
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
}

impl Scale {
    fn linear(min: f64, max: f64, from_zero: bool, count: usize) -> Scale {
        let mut lo = if from_zero { min.min(0.0) } else { min };
        let mut hi = max;
        if !(lo.is_finite() && hi.is_finite()) {
            lo = 0.0;
            hi = 1.0;
        }
        if hi <= lo {
            hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        }
        let step = nice_step((hi - lo) / count.max(1) as f64);
        let lo = (lo / step).floor() * step;
        let hi = (hi / step).ceil() * step;
        let mut ticks = Vec::new();
        let mut t = lo;
        while t <= hi + step * 1e-9 && ticks.len() < 20 {
            ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
            t += step;
        }
        Scale {
            lo,
            hi,
            log: false,
            ticks,
        }
    }

    fn log(min: f64, max: f64) -> Scale {
        let min = if min.is_finite() && min > 0.0 {
            min
        } else {
            1.0
        };
        let max = if max.is_finite() && max > min {
            max
        } else {
            min * 10.0
        };
        let lo = 10f64.powf(min.log10().floor());
        let mut hi = 10f64.powf(max.log10().ceil());
        if hi <= lo {
            hi = lo * 10.0;
        }
        let mut ticks = Vec::new();
        let decades = (hi / lo).log10().round() as i32;
        let mut d = lo;
        for _ in 0..=decades.min(12) {
            ticks.push(d);
            if decades <= 2 && d < hi {
                ticks.push(d * 2.0);
                ticks.push(d * 5.0);
            }
            d *= 10.0;
        }
        ticks.retain(|t| *t <= hi * (1.0 + 1e-9));
        Scale {
            lo,
            hi,
            log: true,
            ticks,
        }
    }

    /// Position of `v` between 0 (lo) and 1 (hi).
    fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = v.max(self.lo);
            (v / self.lo).log10() / (self.hi / self.lo).log10()
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

fn open_svg(out: &mut String, kind: &str, w: f64, h: f64, points: usize, title: &str) {
    let _ = write!(
        out,
        "<svg class=\"chart {kind}\" viewBox=\"0 0 {} {}\" data-points=\"{points}\" role=\"img\"><title>{}</title>",
        n(w),
        n(h),
        esc(title)
    );
}

/// Width of a bar chart's view box: narrower than line charts, so its few words stay
/// legible when a phone shrinks it.
const BW: f64 = 360.0;

/// Pixels per character of chart text, generous enough for the larger text phones get.
const CHAR_W: f64 = 7.6;

/// The plotting area of a line chart: its scales and size.
struct Plot {
    xs: Scale,
    ys: Scale,
    pw: f64,
    ph: f64,
}

impl Plot {
    fn px(&self, x: f64) -> f64 {
        ML + self.xs.frac(x) * self.pw
    }

    fn py(&self, y: f64) -> f64 {
        MT + (1.0 - self.ys.frac(y)) * self.ph
    }
}

/// A line chart; every point is a circle with its hover text.
pub fn line_chart(c: &LineChart<'_>) -> String {
    let (plot, points) = plot_of(c);
    let mut o = String::new();
    open_svg(&mut o, "lines", W, LINE_H, points, &c.title);
    backdrop(&mut o, c, &plot);
    axes(&mut o, c, &plot);
    ref_lines(&mut o, c, &plot);
    for l in &c.lines {
        draw_line(&mut o, l, &plot);
    }
    o.push_str("</svg>");
    o
}

/// The chart's scales from its points (and reference lines), and how many points it has.
fn plot_of(c: &LineChart<'_>) -> (Plot, usize) {
    let all: Vec<(f64, f64)> = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().copied())
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    let points = all.len();
    let (x_min, x_max) = match &c.categories {
        Some(cats) => (0.0, cats.len().saturating_sub(1).max(1) as f64),
        None => (
            all.iter()
                .map(|p| p.0)
                .fold(f64::INFINITY, f64::min)
                .min(0.0),
            all.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
        ),
    };
    let y_min = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y_max = all
        .iter()
        .map(|p| p.1)
        .chain(c.refs.iter().map(|r| r.y))
        .fold(f64::NEG_INFINITY, f64::max);
    let ys = if c.log_y {
        Scale::log(
            all.iter()
                .map(|p| p.1)
                .filter(|v| *v > 0.0)
                .fold(f64::INFINITY, f64::min),
            y_max,
        )
    } else {
        Scale::linear(y_min, y_max, true, 4)
    };
    let xs = match &c.categories {
        Some(_) => Scale {
            lo: x_min,
            hi: x_max,
            log: false,
            ticks: Vec::new(),
        },
        None => Scale::linear(x_min, x_max, true, 5),
    };
    let (pw, ph) = (W - ML - MR, LINE_H - MT - MB);
    (Plot { xs, ys, pw, ph }, points)
}

/// Shaded ranges (warm-up) and numbered marks (schema changes) behind the lines.
fn backdrop(o: &mut String, c: &LineChart<'_>, p: &Plot) {
    let (px, ph) = (|x: f64| p.px(x), p.ph);
    for (a, b, label) in &c.shade {
        let (x0, x1) = (px(*a), px(*b));
        let _ = write!(
            o,
            "<rect class=\"shade\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
            n(x0),
            n(MT),
            n((x1 - x0).max(0.0)),
            n(ph),
            esc(label)
        );
    }
    for m in &c.marks {
        // at least two pixels wide: a change of milliseconds is still seen
        let (x0, x1) = (px(m.from), px(m.to));
        let _ = write!(
            o,
            "<g class=\"mark\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text><title>{}</title></g>",
            n(x0),
            n(MT),
            n((x1 - x0).max(2.0)),
            n(ph),
            n(x0 + 2.0),
            n(MT + 10.0),
            m.number,
            esc(&m.label)
        );
    }
}

/// The grid, both axes' ticks and the x axis's label.
fn axes(o: &mut String, c: &LineChart<'_>, p: &Plot) {
    let (px, py, pw, ph, xs, ys) = (|x: f64| p.px(x), |y: f64| p.py(y), p.pw, p.ph, &p.xs, &p.ys);
    // Grid and y ticks.
    for t in &ys.ticks {
        let y = py(*t);
        let _ = write!(
            o,
            "<line class=\"gl\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            n(ML),
            n(y),
            n(W - MR),
            n(y),
            n(ML - 5.0),
            n(y + 4.0),
            esc(&trim_zeros(&(c.y_fmt)(*t)))
        );
    }
    // X ticks.
    let x_ticks: Vec<(f64, String)> = match &c.categories {
        Some(cats) => cats
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.clone()))
            .collect(),
        None => xs
            .ticks
            .iter()
            .map(|t| (*t, trim_zeros(&(c.x_fmt)(*t))))
            .collect(),
    };
    for (t, label) in &x_ticks {
        let x = px(*t);
        let _ = write!(
            o,
            "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            n(x),
            n(MT + ph),
            n(x),
            n(MT + ph + 4.0),
            n(x),
            n(MT + ph + 16.0),
            esc(label)
        );
    }
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        n(ML),
        n(MT + ph),
        n(W - MR),
        n(MT + ph),
        n(ML + pw / 2.0),
        n(LINE_H - 6.0),
        esc(&c.x_label)
    );
}

/// Dashed horizontal reference lines (a device's limits), labelled alternately right and
/// left.
fn ref_lines(o: &mut String, c: &LineChart<'_>, p: &Plot) {
    for (i, r) in c.refs.iter().enumerate() {
        let y = p.py(r.y);
        let (x, anchor) = if i % 2 == 0 {
            (W - MR - 2.0, "end")
        } else {
            (ML + 2.0, "start")
        };
        let _ = write!(
            o,
            "<g class=\"ref\"><title>{}</title><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-dasharray=\"5 4\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" fill=\"{}\">{}</text></g>",
            esc(&r.hover),
            n(ML),
            n(y),
            n(W - MR),
            n(y),
            r.color,
            n(x),
            n(y - 3.0),
            r.color,
            esc(&r.label)
        );
    }
}

/// One line: its polyline and a circle with hover text per point.
fn draw_line(o: &mut String, l: &Line, p: &Plot) {
    let (px, py) = (|x: f64| p.px(x), |y: f64| p.py(y));
    let pts: Vec<(f64, f64, &str)> = l
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.0.is_finite() && p.1.is_finite())
        .map(|(i, p)| (p.0, p.1, l.tips.get(i).map(String::as_str).unwrap_or("")))
        .collect();
    if pts.len() > 1 {
        let path: Vec<String> = pts
            .iter()
            .map(|p| format!("{},{}", n(px(p.0)), n(py(p.1))))
            .collect();
        let _ = write!(
            o,
            "<polyline class=\"line\" stroke=\"{}\" points=\"{}\"/>",
            l.color,
            path.join(" ")
        );
    }
    let r = if pts.len() > 40 { 1.8 } else { 3.0 };
    let _ = write!(o, "<g fill=\"{}\">", l.color);
    for (x, y, tip) in pts {
        let _ = write!(
            o,
            "<circle class=\"pt\" cx=\"{}\" cy=\"{}\" r=\"{}\"><title>{}</title></circle>",
            n(px(x)),
            n(py(y)),
            n(r),
            esc(&format!("{}: {tip}", l.name))
        );
    }
    o.push_str("</g>");
}

/// One bar of a bar chart.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub color: &'static str,
    /// `None`: no value (failed, skipped); `text` says why.
    pub value: Option<f64>,
    /// Printed beside the bar.
    pub text: String,
    pub tip: String,
    /// Marked as the best of the chart.
    pub best: bool,
    /// Each round's value, drawn as a dot on the bar (empty when measured once).
    pub samples: Vec<f64>,
    /// The interval for the median, drawn as a line through the dots.
    pub interval: Option<(f64, f64)>,
}

const BAR_ROW: f64 = 24.0;

/// Horizontal bars from zero, one row per contender, the value written at each bar's end.
pub fn bar_chart(title: &str, bars: &[Bar]) -> String {
    let label_w = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(4) as f64
        * CHAR_W
        + 12.0;
    let label_w = label_w.clamp(60.0, 150.0);
    let text_w = bars
        .iter()
        .map(|b| b.text.chars().count() + usize::from(b.best) * 2)
        .max()
        .unwrap_or(4) as f64
        * CHAR_W
        + 10.0;
    let bar_w = (BW - label_w - text_w - 8.0).max(60.0);
    let max = bars
        .iter()
        .flat_map(|b| b.value.iter().chain(&b.samples))
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let h = 6.0 + bars.len() as f64 * BAR_ROW + 4.0;
    let points = bars
        .iter()
        .filter(|b| b.value.is_some_and(f64::is_finite))
        .count();
    let mut o = String::new();
    open_svg(&mut o, "bars", BW, h, points, title);
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"4\" x2=\"{}\" y2=\"{}\"/>",
        n(label_w),
        n(label_w),
        n(h - 4.0)
    );
    let geo = BarGeometry {
        label_w,
        bar_w,
        max,
    };
    for (i, b) in bars.iter().enumerate() {
        bar_row(&mut o, b, 6.0 + i as f64 * BAR_ROW, &geo);
    }
    o.push_str("</svg>");
    o
}

/// Where a bar chart's bars go: the width of the names, of the bars, and the value at full
/// width.
struct BarGeometry {
    label_w: f64,
    bar_w: f64,
    max: f64,
}

/// One contender's row of a bar chart at height `y`: its name, bar, interval, rounds and
/// value.
fn bar_row(o: &mut String, b: &Bar, y: f64, g: &BarGeometry) {
    let (label_w, bar_w, max) = (g.label_w, g.bar_w, g.max);
    let x_of = |v: f64| {
        if max > 0.0 {
            label_w + (v.max(0.0) / max * bar_w)
        } else {
            label_w
        }
    };
    let _ = write!(
        o,
        "<text class=\"name\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        n(label_w - 6.0),
        n(y + 15.0),
        esc(&b.label)
    );
    let mut end = label_w;
    if let Some(v) = b.value.filter(|v| v.is_finite()) {
        let w = if max > 0.0 {
            (v.max(0.0) / max * bar_w).max(1.5)
        } else {
            1.5
        };
        let _ = write!(
            o,
            "<rect class=\"pt\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"16\" fill=\"{}\"><title>{}</title></rect>",
            n(label_w),
            n(y + 3.0),
            n(w),
            b.color,
            esc(&b.tip)
        );
        end += w;
    }
    // Repeated rounds: the interval as a dark line, each round as a dot.
    if let Some((lo, hi)) = b.interval.filter(|(l, h)| l.is_finite() && h.is_finite()) {
        let _ = write!(
            o,
            "<line class=\"ci\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            n(x_of(lo)),
            n(y + 11.0),
            n(x_of(hi)),
            n(y + 11.0)
        );
    }
    for v in b.samples.iter().filter(|v| v.is_finite()) {
        let _ = write!(
            o,
            "<circle class=\"sample\" cx=\"{}\" cy=\"{}\" r=\"2.4\"/>",
            n(x_of(*v)),
            n(y + 11.0)
        );
        end = end.max(x_of(*v) + 2.4);
    }
    let _ = write!(
        o,
        "<text class=\"{}\" x=\"{}\" y=\"{}\">{}{}</text>",
        if b.value.is_some() { "val" } else { "val none" },
        n(end + 5.0),
        n(y + 15.0),
        esc(&b.text),
        if b.best { " ★" } else { "" }
    );
}

/// One row of a change chart: a relative change with its noise band.
#[derive(Debug, Clone)]
pub struct Change {
    pub label: String,
    /// (B − A) / A.
    pub change: f64,
    /// Half-width of the noise band, relative; `None` when unknown.
    pub noise: Option<f64>,
    pub color: &'static str,
    pub tip: String,
    /// The change as written (`-61%`, `×6.50`), shown beside a dot pinned to the axis's end.
    pub text: String,
}

/// Width of a change chart's view box: its labels are long (`step · figure`).
const CW: f64 = 640.0;

/// Changes as dots with noise whiskers around zero, the threshold shaded.
pub fn change_chart(title: &str, rows: &[Change], threshold: f64) -> String {
    let label_w = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4) as f64
        * 6.4
        + 12.0;
    let label_w = label_w.clamp(80.0, 280.0);
    let reach = rows
        .iter()
        .filter(|r| r.change.is_finite())
        .map(|r| r.change.abs() + r.noise.unwrap_or(0.0))
        .fold(threshold * 2.0, f64::max)
        .min(1.0);
    let reach = nice_step(reach * 100.0 / 2.0) * 2.0 / 100.0;
    let h = 8.0 + rows.len() as f64 * 20.0 + 26.0;
    let (x0, x1) = (label_w, CW - MR);
    let px = |v: f64| x0 + ((v.clamp(-reach, reach) + reach) / (2.0 * reach)) * (x1 - x0);
    let points = rows.iter().filter(|r| r.change.is_finite()).count();
    let mut o = String::new();
    open_svg(&mut o, "changes", CW, h, points, title);
    let bottom = h - 26.0;
    let _ = write!(
        o,
        "<rect class=\"shade\" x=\"{}\" y=\"4\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
        n(px(-threshold)),
        n(px(threshold) - px(-threshold)),
        n(bottom - 4.0),
        esc(&format!(
            "within the threshold (±{:.0}%)",
            threshold * 100.0
        ))
    );
    for t in [-reach, -reach / 2.0, 0.0, reach / 2.0, reach] {
        let x = px(t);
        let _ = write!(
            o,
            "<line class=\"{}\" x1=\"{}\" y1=\"4\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            if t == 0.0 { "axis" } else { "gl" },
            n(x),
            n(x),
            n(bottom),
            n(x),
            n(bottom + 14.0),
            if t == 0.0 {
                "0%".to_string()
            } else {
                format!("{:+.0}%", t * 100.0)
            }
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = 8.0 + i as f64 * 20.0 + 10.0;
        let _ = write!(
            o,
            "<text class=\"name\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            n(label_w - 6.0),
            n(y + 4.0),
            esc(&r.label)
        );
        if r.change.is_finite() {
            change_dot(&mut o, r, y, &px, reach);
        }
    }
    o.push_str("</svg>");
    o
}

/// One change at height `y`: its noise whisker, its dot (hollow when not judged), and, when
/// beyond the axis, its value beside the dot pinned to the axis's end.
fn change_dot(o: &mut String, r: &Change, y: f64, px: &dyn Fn(f64) -> f64, reach: f64) {
    if let Some(nz) = r.noise {
        let _ = write!(
            o,
            "<line class=\"whisker\" stroke=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            r.color,
            n(px(r.change - nz)),
            n(y),
            n(px(r.change + nz)),
            n(y)
        );
    }
    let off = r.change.abs() > reach;
    let _ = write!(
        o,
        "<circle class=\"pt{}\" cx=\"{}\" cy=\"{}\" r=\"4.5\" {}=\"{}\"><title>{}</title></circle>",
        if r.noise.is_none() { " hollow" } else { "" },
        n(px(r.change)),
        n(y),
        if r.noise.is_none() { "stroke" } else { "fill" },
        r.color,
        esc(&if off {
            format!("{} (beyond the axis)", r.tip)
        } else {
            r.tip.clone()
        })
    );
    if off {
        // Pinned to the axis's end: say how far it really went.
        let right = r.change > 0.0;
        let _ = write!(
            o,
            "<text class=\"val\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>",
            n(px(r.change) + if right { -9.0 } else { 9.0 }),
            n(y + 4.0),
            if right { "end" } else { "start" },
            esc(&r.text)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(svg: &str, needle: &str) -> usize {
        svg.matches(needle).count()
    }

    #[test]
    fn tick_labels_lose_padding() {
        assert_eq!(trim_zeros("1.00 ms"), "1 ms");
        assert_eq!(trim_zeros("2.50 µs"), "2.5 µs");
        assert_eq!(trim_zeros("100,000/s"), "100,000/s");
        assert_eq!(trim_zeros("0.5"), "0.5");
        assert_eq!(trim_zeros("100%"), "100%");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
    }

    #[test]
    fn nice_ticks() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1.7), 2.0);
        assert_eq!(nice_step(70.0), 100.0);
        let s = Scale::linear(0.0, 209_089.0, true, 4);
        assert_eq!(s.ticks, vec![0.0, 100_000.0, 200_000.0, 300_000.0]);
        let l = Scale::log(4.0, 329_000.0);
        assert_eq!(l.ticks.first(), Some(&1.0));
        assert_eq!(l.ticks.last(), Some(&1_000_000.0));
        assert!((l.frac(1000.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn every_point_is_marked_and_counted() {
        let fmt = |v: f64| format!("{v}");
        let c = LineChart {
            title: "t <1>".into(),
            x_label: "seconds".into(),
            lines: vec![
                Line {
                    name: "a".into(),
                    color: color(0),
                    points: vec![(1.0, 2.0), (2.0, 3.0), (3.0, f64::NAN)],
                    tips: vec!["x".into(), "y".into(), "z".into()],
                },
                Line {
                    name: "b".into(),
                    color: color(1),
                    points: vec![(1.0, 1.0)],
                    tips: vec![],
                },
            ],
            y_fmt: &fmt,
            x_fmt: &fmt,
            log_y: false,
            categories: None,
            shade: vec![(0.0, 1.0, "warm-up".into())],
            refs: vec![RefLine {
                y: 40.0,
                label: "hdd: 40".into(),
                hover: "hdd: 40 (a, b)".into(),
                color: "#123456",
            }],
            marks: vec![Mark {
                from: 2.0,
                to: 2.001,
                number: 1,
                label: "rename column on t <x>".into(),
            }],
        };
        let svg = line_chart(&c);
        // a change of a millisecond is still two pixels wide, numbered, named on hover
        assert!(
            svg.contains("<text x=") && svg.contains("rename column on t &lt;x&gt;"),
            "{svg}"
        );
        assert!(svg.contains("width=\"2\""), "{svg}");
        assert!(svg.contains("data-points=\"3\""), "{svg}");
        assert_eq!(count(&svg, "class=\"pt\""), 3);
        assert_eq!(count(&svg, "<polyline"), 1);
        assert!(svg.contains("<title>t &lt;1&gt;</title>"));
        assert!(!svg.contains("NaN"));
        assert!(svg.contains("stroke=\"#123456\" stroke-dasharray"), "{svg}");
        assert!(
            svg.contains(">hdd: 40</text>"),
            "the reference line is named"
        );
        let bars = bar_chart(
            "b",
            &[
                Bar {
                    label: "a".into(),
                    color: color(0),
                    value: Some(2.0),
                    text: "2".into(),
                    tip: "a: 2".into(),
                    best: true,
                    samples: vec![1.5, 2.0, 2.5],
                    interval: Some((1.5, 2.5)),
                },
                Bar {
                    label: "b".into(),
                    color: color(1),
                    value: None,
                    text: "failed".into(),
                    tip: String::new(),
                    best: false,
                    samples: Vec::new(),
                    interval: None,
                },
            ],
        );
        assert!(bars.contains("data-points=\"1\""), "{bars}");
        assert_eq!(count(&bars, "class=\"pt\""), 1);
        // Repeated rounds: a dot per sample and the interval's line.
        assert_eq!(count(&bars, "class=\"sample\""), 3);
        assert_eq!(count(&bars, "class=\"ci\""), 1);
        let ch = change_chart(
            "c",
            &[Change {
                label: "x".into(),
                change: 3.0,
                noise: None,
                color: color(2),
                tip: "x".into(),
                text: "×4.00".into(),
            }],
            0.05,
        );
        assert!(ch.contains("beyond the axis"), "{ch}");
        assert!(ch.contains("data-points=\"1\""));
    }
}
