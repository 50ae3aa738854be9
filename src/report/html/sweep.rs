//! A sweep's curves: each figure over the levels (threads, rates) per contender.

use super::clients::per_10s;
use super::timeline::usable;
use super::{Figure, PanelView};
use crate::report::format;
use crate::report::series::{Interval, StepSeries};
use crate::report::svg::{self, Line, LineChart};
use crate::results::Unit;
use std::collections::BTreeSet;

/// Throughput and p99 against the sweep level (client count), for steps whose intervals
/// carry one: throughput is the mean over each level's measured (non-warm-up) seconds; p99 is
/// the level's own, from its merged histogram, where the step recorded it (a mean of
/// per-second p99s would understate the tail), else the mean of its seconds' p99. A sweep
/// whose figures count completions per 10 s (TPC-C's) also gets the original's own
/// chart: New-Order transactions per 10 s against the client count.
pub(super) fn sweep_curves(v: &PanelView<'_>) -> Vec<Figure> {
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
    if let Some(p) = per_10s(v)
        && v.series
            .iter()
            .flatten()
            .any(|sr| sr.intervals.iter().any(|i| p.of(i) > 0.0))
    {
        let caption = format!("{} per 10 s by clients", p.name);
        let detail = format!(
            "{} completed in 10 s at each client count (the mean of its measured seconds, times 10), as the original's chart drew them",
            p.short
        );
        out.push(level_curve(
            v,
            &cats,
            LevelCurve {
                caption: &caption,
                detail: &detail,
                fmt: &count_fmt,
                log_y: false,
                y: &|i| Some(p.of(i) * 10.0 / i.duration_s()),
                whole_p99: false,
            },
        ));
    }
    out
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
