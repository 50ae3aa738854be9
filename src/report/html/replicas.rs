//! Replicas' lag and apply rate over the step's seconds, a line per replica.

use super::timeline::{NamedPoints, Timeline, timeline_of};
use super::{Figure, PanelView};
use crate::report::format;
use crate::report::series::{Combine, ReplicaPoint, StepSeries};
use crate::results::Unit;

/// Each replica's apply rate, lag and CPU each second, in a replication step: a line per
/// replica (named with its contender when several contenders have replicas).
pub(super) fn replica_timelines(v: &PanelView<'_>) -> Vec<Figure> {
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
