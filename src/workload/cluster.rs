//! What a cluster's nodes did while a step ran on it: each node's wsrep counters read at the
//! start, every second and at the end, turned into the figures no client can see —
//! certification failures, brute-force aborts, the share of time flow control paused
//! replication, bytes replicated per write set, group communication's latency — a per-second
//! series, and the nodes lost on the way.

use crate::engine::cluster::{Clustered, NodeStatus};
use crate::results::{Better, Metric, Unit};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a lost node ended while its server is not yet seen dead.
const NOT_ANSWERING: &str = "stopped answering";

/// The cluster over one second (about) of a step.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterSecond {
    /// End of the second, seconds after the watch began.
    pub t_s: f64,
    /// How many of the step's own seconds had been recorded when this reading began: the
    /// step's second it falls in.
    pub tick: u64,
    /// Nodes answering, and the cluster's size as the first of them sees it.
    pub live: usize,
    pub size: u64,
    /// Seconds since the previous reading (about 1).
    pub dt_s: f64,
    /// Write sets the nodes sent to each other during the second, and their bytes.
    pub writesets: u64,
    pub replicated_bytes: u64,
    /// Certification failures and brute-force aborts during the second, all nodes.
    pub cert_failures: u64,
    pub bf_aborts: u64,
    /// The largest share of the second any node spent paused by flow control (0–1).
    pub flow_control_paused: f64,
    /// The longest receive queue of any node at the second's end, write sets.
    pub recv_queue: u64,
    /// Group communication's replication latency, mean over the nodes reporting it, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repl_latency_us: Option<f64>,
}

/// A node that stopped answering during the step.
#[derive(Debug, Clone, Serialize)]
pub struct NodeLoss {
    pub node: String,
    /// How its server ended, when dbduel ran it.
    pub how: String,
    /// When the watch noticed, seconds after it began.
    pub t_s: f64,
}

/// One node's counters over the whole step.
#[derive(Debug, Clone, Serialize)]
pub struct NodeDelta {
    pub node: String,
    pub cert_failures: u64,
    pub bf_aborts: u64,
    pub writesets: u64,
    pub replicated_bytes: u64,
    pub received: u64,
    pub flow_control_paused_s: f64,
    pub flow_control_sent: u64,
}

/// What a step says of its cluster.
pub struct Told {
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
    /// A node lost that the step did not kill on purpose, in words.
    pub unplanned: Option<String>,
}

/// How a cluster went on after losing a node.
#[derive(Debug, Clone, Copy)]
pub struct AfterLoss {
    /// Operations a second before the loss, and after it.
    pub before: f64,
    pub after: f64,
    /// Seconds from the first reading that missed the node to the first whose cluster size
    /// counts only the live nodes (the view change); at most a second late.
    pub resized_s: Option<f64>,
}

/// The cluster over the whole step.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterFigures {
    pub nodes: usize,
    /// Nodes running when the step began (fewer than `nodes` after an earlier loss).
    pub live_at_start: usize,
    pub size_before: u64,
    pub size_after: u64,
    pub cert_failures: u64,
    pub bf_aborts: u64,
    pub writesets: u64,
    pub replicated_bytes: u64,
    /// Mean write set size, bytes.
    pub bytes_per_writeset: Option<f64>,
    /// The largest share of the step any node spent paused by flow control (0–1).
    pub flow_control_paused: f64,
    /// Mean of the per-second replication latencies, µs.
    pub repl_latency_us: Option<f64>,
    pub lost: Vec<NodeLoss>,
    pub per_node: Vec<NodeDelta>,
    pub seconds: Vec<ClusterSecond>,
}

/// Run `f` while a thread of its own reads every node of `cluster` each second (a node's
/// answer can stall for seconds while the cluster changes its view; the step's clients and
/// clock must not wait for it). `f` adds each second it records to the counter it is given,
/// so that every reading knows the step's second it fell in. Without a cluster, `f` alone.
pub fn watched<R>(
    cluster: Option<&dyn Clustered>,
    f: impl FnOnce(&AtomicU64) -> R,
) -> (R, Option<ClusterFigures>) {
    let ticks = AtomicU64::new(0);
    let Some(cluster) = cluster else {
        return (f(&ticks), None);
    };
    /// Raises `done` however `f` ends, a panic included, so the reader never waits forever.
    struct Done<'d>(&'d AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let done = AtomicBool::new(false);
    // Read before the clients start: the step's counters count from here.
    let mut watch = ClusterWatch::begin(cluster);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut next = Instant::now() + Duration::from_secs(1);
            while !done.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    watch.tick(ticks.load(Ordering::Relaxed));
                    // After a stalled reading, the next is a second on, not a burst of
                    // catch-up readings.
                    while next <= Instant::now() {
                        next += Duration::from_secs(1);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            watch.finish(ticks.load(Ordering::Relaxed))
        });
        let out = {
            let _done = Done(&done);
            f(&ticks)
        };
        (out, reader.join().ok())
    })
}

/// Watches a cluster through one step.
pub struct ClusterWatch<'a> {
    cluster: &'a dyn Clustered,
    start: Instant,
    first: Vec<Option<NodeStatus>>,
    last: Vec<Option<NodeStatus>>,
    last_t: f64,
    seconds: Vec<ClusterSecond>,
    lost: Vec<NodeLoss>,
    /// Nodes already gone when the watch began (an earlier step lost them): not watched.
    gone_before: Vec<usize>,
    /// Readings in a row each node did not answer.
    misses: Vec<u32>,
}

/// Readings in a row a node that is still running may miss before it counts as lost (one
/// can fail on a connection the server closed while idle; dbduel then opens another).
const MISSES_TO_LOSE: u32 = 3;

impl<'a> ClusterWatch<'a> {
    /// Read every node now: the step's counters count from here.
    pub fn begin(cluster: &'a dyn Clustered) -> Self {
        let n = cluster.node_count();
        let mut w = ClusterWatch {
            cluster,
            start: Instant::now(),
            first: Vec::new(),
            last: Vec::new(),
            last_t: 0.0,
            seconds: Vec::new(),
            lost: Vec::new(),
            gone_before: (0..n).filter(|&i| cluster.node_gone(i).is_some()).collect(),
            misses: vec![0; n],
        };
        w.first = w.read_all();
        w.last = w.first.clone();
        w
    }

    /// Nodes running when the watch began.
    fn watched_nodes(&self) -> usize {
        self.cluster.node_count() - self.gone_before.len()
    }

    /// Each node's status, `None` for a node that is gone or does not answer. A node is lost
    /// when its server is seen dead, or after `MISSES_TO_LOSE` readings in a row without an
    /// answer; the loss is recorded once, with how its server ended.
    fn read_all(&mut self) -> Vec<Option<NodeStatus>> {
        let t_s = self.start.elapsed().as_secs_f64();
        (0..self.cluster.node_count())
            .map(|i| {
                if self.gone_before.contains(&i) {
                    return None;
                }
                let name = self.cluster.node_name(i);
                let gone = self.cluster.node_gone(i);
                let known_lost = match self.lost.iter_mut().find(|l| l.node == name) {
                    Some(l) => {
                        // A node that stopped answering may be seen dead a moment later:
                        // say how it ended once that is known.
                        if let Some(how) = &gone
                            && l.how == NOT_ANSWERING
                        {
                            l.how = how.clone();
                        }
                        true
                    }
                    None => false,
                };
                let status = match &gone {
                    Some(_) => None,
                    None if known_lost => None,
                    None => self.cluster.node_status(i).ok(),
                };
                self.misses[i] = if status.is_some() {
                    0
                } else {
                    self.misses[i] + 1
                };
                let lost_now = gone.is_some() || self.misses[i] >= MISSES_TO_LOSE;
                if status.is_none() && !known_lost && lost_now {
                    self.lost.push(NodeLoss {
                        node: name,
                        how: gone.unwrap_or_else(|| NOT_ANSWERING.into()),
                        t_s,
                    });
                }
                status
            })
            .collect()
    }

    /// Read every node and record the second since the last reading; `tick` is the step's
    /// second count when the reading began.
    pub fn tick(&mut self, tick: u64) {
        let now = self.read_all();
        let t_s = self.start.elapsed().as_secs_f64();
        let dt = (t_s - self.last_t).max(1e-3);
        let pairs: Vec<(&NodeStatus, &NodeStatus)> = self
            .last
            .iter()
            .zip(&now)
            .filter_map(|(a, b)| Some((a.as_ref()?, b.as_ref()?)))
            .collect();
        let sum = |f: fn(&NodeStatus) -> u64| -> u64 {
            pairs.iter().map(|(a, b)| f(b).saturating_sub(f(a))).sum()
        };
        let latencies: Vec<f64> = now
            .iter()
            .flatten()
            .filter_map(|s| s.repl_latency_s)
            .collect();
        self.seconds.push(ClusterSecond {
            t_s,
            tick,
            live: now.iter().flatten().count(),
            size: now.iter().flatten().next().map_or(0, |s| s.cluster_size),
            dt_s: dt,
            writesets: sum(|s| s.replicated),
            replicated_bytes: sum(|s| s.replicated_bytes),
            cert_failures: sum(|s| s.cert_failures),
            bf_aborts: sum(|s| s.bf_aborts),
            flow_control_paused: pairs
                .iter()
                .map(|(a, b)| {
                    b.flow_control_paused_ns
                        .saturating_sub(a.flow_control_paused_ns) as f64
                        / 1e9
                        / dt
                })
                .fold(0.0, f64::max)
                .min(1.0),
            recv_queue: now
                .iter()
                .flatten()
                .map(|s| s.recv_queue)
                .max()
                .unwrap_or(0),
            repl_latency_us: (!latencies.is_empty())
                .then(|| latencies.iter().sum::<f64>() / latencies.len() as f64 * 1e6),
        });
        self.last = now;
        self.last_t = t_s;
    }

    /// Read every node a last time and sum up the step.
    pub fn finish(mut self, tick: u64) -> ClusterFigures {
        self.tick(tick);
        let elapsed = self.last_t.max(1e-3);
        let per_node: Vec<NodeDelta> = self
            .first
            .iter()
            .zip(&self.last)
            .enumerate()
            .filter_map(|(i, (a, b))| {
                let (a, b) = (a.as_ref()?, b.as_ref()?);
                Some(NodeDelta {
                    node: self.cluster.node_name(i),
                    cert_failures: b.cert_failures.saturating_sub(a.cert_failures),
                    bf_aborts: b.bf_aborts.saturating_sub(a.bf_aborts),
                    writesets: b.replicated.saturating_sub(a.replicated),
                    replicated_bytes: b.replicated_bytes.saturating_sub(a.replicated_bytes),
                    received: b.received.saturating_sub(a.received),
                    flow_control_paused_s: b
                        .flow_control_paused_ns
                        .saturating_sub(a.flow_control_paused_ns)
                        as f64
                        / 1e9,
                    flow_control_sent: b.flow_control_sent.saturating_sub(a.flow_control_sent),
                })
            })
            .collect();
        // Totals from the seconds, so that a node lost on the way counts up to its last
        // reading.
        let from_seconds = |f: fn(&ClusterSecond) -> u64| self.seconds.iter().map(f).sum::<u64>();
        let writesets = from_seconds(|s| s.writesets);
        let replicated_bytes = from_seconds(|s| s.replicated_bytes);
        let latencies: Vec<f64> = self
            .seconds
            .iter()
            .filter_map(|s| s.repl_latency_us)
            .collect();
        ClusterFigures {
            nodes: self.cluster.node_count(),
            live_at_start: self.watched_nodes(),
            size_before: self
                .first
                .iter()
                .flatten()
                .next()
                .map_or(0, |s| s.cluster_size),
            size_after: self
                .last
                .iter()
                .flatten()
                .next()
                .map_or(0, |s| s.cluster_size),
            cert_failures: from_seconds(|s| s.cert_failures),
            bf_aborts: from_seconds(|s| s.bf_aborts),
            writesets,
            replicated_bytes,
            bytes_per_writeset: (writesets > 0).then(|| replicated_bytes as f64 / writesets as f64),
            flow_control_paused: per_node
                .iter()
                .map(|n| n.flow_control_paused_s / elapsed)
                .fold(0.0, f64::max)
                .min(1.0),
            repl_latency_us: (!latencies.is_empty())
                .then(|| latencies.iter().sum::<f64>() / latencies.len() as f64),
            lost: self.lost,
            per_node,
            seconds: self.seconds,
        }
    }
}

impl ClusterFigures {
    /// Nodes answering at the step's last reading.
    fn live_at_end(&self) -> usize {
        self.seconds.last().map_or(self.live_at_start, |s| s.live)
    }

    /// How the cluster went on after its first node was lost, from the step's per-second
    /// rates (`rates`, operations a second by the step's tick) and the watch's: the first reading that
    /// missed a node began during the step's second number `tick`. Mean throughput before
    /// (the first second, clients connecting, left out) and after (the second of the loss
    /// left out, the stall while the others agree the node is gone counted), and how long
    /// until the cluster's size said so. `None` without a loss, or a second on either side.
    pub fn after_loss(&self, rates: &[f64]) -> Option<AfterLoss> {
        let lost = self
            .seconds
            .iter()
            .position(|s| s.live < self.live_at_start)?;
        let k = self.seconds[lost].tick as usize;
        let mean = |r: &[f64]| (!r.is_empty()).then(|| r.iter().sum::<f64>() / r.len() as f64);
        let resized_s = self.seconds[lost..]
            .iter()
            .find(|s| s.size == s.live as u64)
            .map(|s| s.t_s - self.seconds[lost].t_s);
        Some(AfterLoss {
            before: mean(rates.get(1..k)?)?,
            after: mean(rates.get(k + 1..)?)?,
            resized_s,
        })
    }

    /// The step's figures from the cluster's own counters.
    fn metrics(&self) -> Vec<Metric> {
        let mut m = vec![
            Metric::new(
                "cert_failures",
                "certification failures",
                self.cert_failures as f64,
                Unit::Count,
                Better::Lower,
            ),
            Metric::new(
                "bf_aborts",
                "brute-force aborts",
                self.bf_aborts as f64,
                Unit::Count,
                Better::Lower,
            ),
            Metric::new(
                "flow_control_paused_pct",
                "flow control paused",
                self.flow_control_paused * 100.0,
                Unit::Percent,
                Better::Lower,
            ),
        ];
        if let Some(b) = self.bytes_per_writeset {
            m.push(Metric::new(
                "bytes_per_writeset",
                "bytes/write set",
                b,
                Unit::Bytes,
                Better::None,
            ));
        }
        if let Some(l) = self.repl_latency_us {
            m.push(Metric::new(
                "repl_latency_us",
                "replication latency",
                l,
                Unit::Micros,
                Better::Lower,
            ));
        }
        m
    }

    /// Everything a step on a cluster reports of it: the figures, the notes, the throughput
    /// around a lost node, and — when a node was lost that the step did not kill on purpose
    /// (`planned`: the node it killed, numbered from 0, and when) — what went wrong.
    /// `autocommit`: the step's statements ran outside transactions.
    pub fn report(
        &self,
        rates: &[f64],
        planned: Option<(usize, Option<f64>)>,
        autocommit: bool,
    ) -> Told {
        let mut metrics = self.metrics();
        let mut notes = self.notes();
        if let Some(a) = self.after_loss(rates) {
            metrics.push(Metric::new(
                "tps_before_loss",
                "TPS before node loss",
                a.before,
                Unit::PerSecond,
                Better::Higher,
            ));
            metrics.push(Metric::new(
                "tps_after_loss",
                "TPS after node loss",
                a.after,
                Unit::PerSecond,
                Better::Higher,
            ));
            if let Some(r) = a.resized_s {
                metrics.push(Metric::new(
                    "resized_s",
                    "cluster resized in",
                    r,
                    Unit::Seconds,
                    Better::Lower,
                ));
            }
            notes.push(format!(
                "{:.0} TPS before the node was lost, {:.0} after on {} node(s) (the seconds until the others agreed it was gone{} counted)",
                a.before,
                a.after,
                self.live_at_end(),
                a.resized_s.map_or(String::new(), |r| format!(", {r:.1} s,"))
            ));
        }
        let planned_name = planned.map(|(n, _)| format!("node-{}", n + 1));
        if let (Some(name), Some((_, Some(t)))) = (&planned_name, planned) {
            notes.push(format!(
                "{name} killed (SIGKILL) on purpose {t:.1} s into the step"
            ));
        }
        if autocommit {
            notes.push("statements ran in autocommit, which a node retries itself after a certification failure (wsrep_retry_autocommit): clients see fewer failures than the nodes count".into());
        }
        let unplanned = self
            .lost
            .iter()
            .find(|l| Some(&l.node) != planned_name.as_ref())
            .map(|l| {
                format!(
                    "{} was lost {:.1} s into the step ({})",
                    l.node, l.t_s, l.how
                )
            });
        Told {
            metrics,
            notes,
            unplanned,
        }
    }

    /// What a reader should know: where the figures come from, and any node lost.
    fn notes(&self) -> Vec<String> {
        let running = if self.live_at_start < self.nodes {
            format!("{} of {} nodes running", self.live_at_start, self.nodes)
        } else {
            format!("{} nodes", self.nodes)
        };
        let mut notes = vec![format!(
            "{running}; their figures from each node's wsrep counters over the whole step (brute-force aborts reach the client as deadlocks; replication latency is group communication's)"
        )];
        for l in &self.lost {
            notes.push(format!(
                "{} was lost {:.1} s into the step ({}); the cluster went on with {} node(s)",
                l.node,
                l.t_s,
                l.how,
                self.live_at_end()
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(tick: u64, t_s: f64, live: usize, size: u64) -> ClusterSecond {
        ClusterSecond {
            t_s,
            tick,
            live,
            size,
            dt_s: 1.0,
            writesets: 0,
            replicated_bytes: 0,
            cert_failures: 0,
            bf_aborts: 0,
            flow_control_paused: 0.0,
            recv_queue: 0,
            repl_latency_us: None,
        }
    }

    fn figures(seconds: Vec<ClusterSecond>, lost: &[&str]) -> ClusterFigures {
        ClusterFigures {
            nodes: 3,
            live_at_start: 3,
            size_before: 3,
            size_after: 2,
            cert_failures: 0,
            bf_aborts: 0,
            writesets: 0,
            replicated_bytes: 0,
            bytes_per_writeset: None,
            flow_control_paused: 0.0,
            repl_latency_us: None,
            lost: lost
                .iter()
                .map(|n| NodeLoss {
                    node: n.to_string(),
                    how: "killed".into(),
                    t_s: 3.5,
                })
                .collect(),
            per_node: Vec::new(),
            seconds,
        }
    }

    #[test]
    fn throughput_around_a_loss_skips_the_ramp_and_the_second_of_the_loss() {
        // Seconds 0..=2 with three nodes, the loss read during step second 3, the view
        // changed two readings later.
        let c = figures(
            vec![
                second(1, 1.0, 3, 3),
                second(2, 2.0, 3, 3),
                second(3, 3.0, 2, 3),
                second(3, 4.0, 2, 3),
                second(5, 5.0, 2, 2),
            ],
            &["node-3"],
        );
        let iv = [50.0, 100.0, 120.0, 7.0, 0.0, 80.0, 90.0];
        let a = c.after_loss(&iv).expect("a loss");
        assert_eq!(a.before, 110.0, "seconds 1 and 2");
        assert_eq!(
            a.after,
            (0.0 + 80.0 + 90.0) / 3.0,
            "from second 4, the stall counted"
        );
        assert_eq!(a.resized_s, Some(2.0));
        // Killed on purpose: reported, not a failure; lost otherwise: a failure.
        let planned = c.report(&iv, Some((2, Some(3.0))), false);
        assert!(planned.unplanned.is_none());
        assert!(
            planned
                .notes
                .iter()
                .any(|n| n.contains("node-3 killed (SIGKILL) on purpose"))
        );
        assert!(planned.metrics.iter().any(|m| m.key == "resized_s"));
        let unplanned = c.report(&iv, None, false);
        assert!(
            unplanned
                .unplanned
                .is_some_and(|u| u.starts_with("node-3 was lost 3.5 s into the step"))
        );
        // No loss, no figures about one.
        let calm = figures(vec![second(1, 1.0, 3, 3), second(2, 2.0, 3, 3)], &[]);
        assert!(calm.after_loss(&iv).is_none());
        assert!(calm.report(&iv, None, true).unplanned.is_none());
    }
}
