//! The bar charts of a step's figures, one bar per contender, the better one told.

use super::queries::query_figure;
use super::{Figure, PanelView};
use crate::report::format;
use crate::report::svg::{self, Bar};
use crate::results::{Better, Status, Unit};

fn better_words(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
        Better::None => "",
    }
}

/// One bar chart per figure that has a better direction. Latency figures go to the
/// percentile chart instead when the step has one.
pub(super) fn bars(v: &PanelView<'_>) -> Vec<Figure> {
    let latency_chart = v.has_latency();
    v.rows
        .iter()
        .filter(|r| {
            let k = r.metric;
            k.better != Better::None
                && !(latency_chart && k.unit == Unit::Micros)
                && query_figure(k).is_none()
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
