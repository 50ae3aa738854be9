//! A cluster's members over the step's seconds: each node's rate and when one was lost.

use super::timeline::{Timeline, timeline};
use super::{Figure, PanelView};
use crate::report::format;
use crate::report::series::{ClusterPoint, Combine, StepSeries};
use crate::results::Unit;

/// A cluster's own seconds, from its nodes' wsrep counters: write sets replicated,
/// conflicts, and the share of time flow control paused replication.
pub(super) fn cluster_timelines(v: &PanelView<'_>) -> Vec<Figure> {
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
