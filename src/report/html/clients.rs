//! The clients' per-second charts: operations a second, p99, errors, and the completions a
//! step counts per 10 s (TPC-C's New-Orders), with warm-up shaded.

use super::timeline::{Timeline, timeline, usable};
use super::{Figure, PanelView};
use crate::report::format;
use crate::report::series::{Combine, Interval, Second, StepSeries, windows};
use crate::results::{Metric, Role, Unit};

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

/// The completions a step's figures say are counted per 10 s (TPC-C's New-Order transactions
/// in each 10 s of the step, ticks 0–9, 10–19, …: the original's axis). None for steps
/// without such a figure, or with no such completions.
fn per_10s_timeline(v: &PanelView<'_>, shade: &[(f64, f64, String)]) -> Option<Figure> {
    let count_fmt = |x: f64| format::count(x);
    let p = per_10s(v)?;
    let has = |sr: &StepSeries| sr.intervals.iter().any(|i| p.of(i) > 0.0);
    if !v.series.iter().flatten().any(|sr| has(sr)) {
        return None;
    }
    timeline(
        v,
        Timeline {
            caption: format!("{} per 10 s", p.name),
            detail: format!("{} completed in each 10 s, the original's axis", p.name),
            unit_fmt: &count_fmt,
            combine: Combine::Mean,
            log_over: None,
            shade: shade.to_vec(),
            refs: Vec::new(),
        },
        &|sr| {
            // (end, completions, seconds covered) of each window of ten ticks
            let mut w: Vec<(u64, f64, f64, f64)> = Vec::new();
            for i in sr.intervals.iter().filter(|i| usable(i)) {
                let k = i.tick / 10;
                if w.last().is_none_or(|l| l.0 != k) {
                    w.push((k, i.t_s, 0.0, 0.0));
                }
                let Some(l) = w.last_mut() else { continue };
                l.1 = l.1.max(i.t_s);
                l.2 += p.of(i);
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
pub(super) fn client_timelines(v: &PanelView<'_>) -> Vec<Figure> {
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
    out.extend(per_10s_timeline(v, &shade));
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

/// Completions of one op kind that a step's figures say are counted per 10 s
/// ([`Role::Per10s`]), with their names.
pub(super) struct Per10s<'a> {
    op: &'a str,
    /// As a chart calls them (`New-Order transactions`).
    pub(super) name: &'a str,
    /// For short (`New-Orders`).
    pub(super) short: &'a str,
}

impl Per10s<'_> {
    /// The completions in an interval.
    pub(super) fn of(&self, i: &Interval) -> f64 {
        i.per_op
            .iter()
            .filter(|o| o.op == self.op)
            .map(|o| o.ops as f64)
            .sum()
    }
}

/// What the first of a step's figures with a [`Role::Per10s`] counts.
pub(super) fn per_10s<'a>(v: &PanelView<'a>) -> Option<Per10s<'a>> {
    v.keys.iter().find_map(|m| match &m.role {
        Some(Role::Per10s { op, name, short }) => Some(Per10s { op, name, short }),
        _ => None,
    })
}
