//! Latency percentiles per contender, p50 to the maximum.

use super::{Figure, PanelView};
use crate::report::format;
use crate::report::svg::{self, Line, LineChart};
use crate::results::Status;

/// The latency distribution over the whole step: p50 … max, one line per contender.
pub(super) fn percentiles(v: &PanelView<'_>) -> Vec<Figure> {
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
