//! Watching replicas: each one's state second by second (transactions and rows applied,
//! transactions behind, lag, backlog, its server's CPU and the host's idle time), and waiting
//! until replicas have received or applied a position — failing with the replica's own error,
//! its server's death, or the position it reached when time runs out.

use crate::engine::replication::{Position, ReplicaState, Replicated};
use crate::sysmon::watch::CpuWatch;
use crate::workload::ctx::StepError;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a wait asks the replicas where they are: a catch-up time is known to this.
pub const POLL: Duration = Duration::from_millis(20);

/// One replica over one interval (about a second) of a step.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaSecond {
    /// End of the interval, seconds after the step's start.
    pub t_s: f64,
    pub replica: String,
    /// Transactions applied so far (its position).
    pub applied_tx: u64,
    /// Transactions applied per second over the interval.
    pub applied_per_s: f64,
    /// Transactions the primary had committed that the replica had not applied.
    pub behind_tx: u64,
    /// How long ago the primary committed the oldest transaction the replica has not
    /// applied, seconds (0 when caught up); from the primary's positions recorded during
    /// the step, so it is known to about a second.
    pub lag_s: Option<f64>,
    /// The server's own lag figure (MariaDB `Seconds_Behind_Master`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_lag_s: Option<f64>,
    /// Rows its storage engine changed per second, by its own counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backlog_bytes: Option<u64>,
    /// Its server's CPU, percent of one core.
    pub cpu_pct: Option<f64>,
    /// The host's idle CPU, percent of all cores (what the seed's charts showed).
    pub host_idle_pct: f64,
}

/// Where a replica was at its previous sample.
#[derive(Clone, Copy)]
struct Last {
    t_s: f64,
    applied: u64,
    rows: Option<u64>,
}

/// Watches a topology's replicas through one step.
pub struct Follower<'a> {
    pub repl: &'a dyn Replicated,
    start: Instant,
    names: Vec<String>,
    cpu: Vec<CpuWatch>,
    last: Vec<Option<Last>>,
    /// The primary's (seconds, transactions) as recorded during the step.
    history: Vec<(f64, u64)>,
    pub seconds: Vec<ReplicaSecond>,
}

/// What a wait is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The replica has fetched the position (whether or not applied).
    Received,
    /// The replica has applied the position.
    Applied,
}

impl<'a> Follower<'a> {
    pub fn new(repl: &'a dyn Replicated, start: Instant) -> Self {
        let n = repl.replica_count();
        let pids = |i: usize| repl.replica_pid(i).into_iter().collect::<Vec<_>>();
        Follower {
            repl,
            start,
            names: (0..n).map(|i| repl.replica_name(i)).collect(),
            cpu: (0..n).map(|i| CpuWatch::new(&pids(i))).collect(),
            last: vec![None; n],
            history: Vec::new(),
            seconds: Vec::new(),
        }
    }

    /// Seconds since the step's start.
    pub fn t(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    pub fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    pub fn all(&self) -> Vec<usize> {
        (0..self.names.len()).collect()
    }

    /// Record where the primary is now, and return it.
    pub fn note_primary(&mut self) -> Result<Position, StepError> {
        let pos = self.repl.primary_position()?;
        let t = self.t();
        self.history.push((t, pos.transactions));
        Ok(pos)
    }

    /// Read replica `i`'s state, failing if it stopped replicating or its server died.
    pub fn state(&self, i: usize) -> Result<ReplicaState, StepError> {
        if let Some(how) = self.repl.replica_gone(i) {
            return Err(StepError::Check(format!(
                "replica {}'s server died: {how}",
                self.names[i]
            )));
        }
        let s = self.repl.replica_state(i)?;
        if let Some(e) = &s.error {
            return Err(StepError::Check(format!(
                "replica {} stopped replicating at {}: {e}",
                self.names[i], s.applied.text
            )));
        }
        Ok(s)
    }

    /// Baseline replica `i` (its rates count from now).
    pub fn baseline(&mut self, i: usize) -> Result<ReplicaState, StepError> {
        let s = self.state(i)?;
        let pid: Vec<i32> = self.repl.replica_pid(i).into_iter().collect();
        self.cpu[i].read(&pid);
        self.last[i] = Some(Last {
            t_s: self.t(),
            applied: s.applied.transactions,
            rows: s.rows_changed,
        });
        Ok(s)
    }

    /// Record an interval for replica `i`, ending now, from its `state` just read.
    pub fn record(&mut self, i: usize, state: &ReplicaState) {
        let t = self.t();
        let pid: Vec<i32> = self.repl.replica_pid(i).into_iter().collect();
        let cpu = self.cpu[i].read(&pid);
        let applied = state.applied.transactions;
        let prev = self.last[i].unwrap_or(Last {
            t_s: t,
            applied,
            rows: state.rows_changed,
        });
        let dt = t - prev.t_s;
        let rate = |d: u64| if dt > 0.0 { d as f64 / dt } else { 0.0 };
        let primary = self.history.last().map_or(applied, |h| h.1);
        self.seconds.push(ReplicaSecond {
            t_s: t,
            replica: self.names[i].clone(),
            applied_tx: applied,
            applied_per_s: rate(applied.saturating_sub(prev.applied)),
            behind_tx: primary.saturating_sub(applied),
            lag_s: self.lag_s(applied, t),
            server_lag_s: state.server_lag_s,
            rows_per_s: match (state.rows_changed, prev.rows) {
                (Some(now), Some(before)) => Some(rate(now.saturating_sub(before))),
                _ => None,
            },
            backlog_bytes: state.backlog_bytes,
            cpu_pct: cpu
                .trees_cores
                .first()
                .copied()
                .flatten()
                .map(|c| c * 100.0),
            host_idle_pct: cpu.host.idle_pct + cpu.host.iowait_pct,
        });
        self.last[i] = Some(Last {
            t_s: t,
            applied,
            rows: state.rows_changed,
        });
    }

    /// How long before `now` the primary committed its transaction number `applied + 1`:
    /// the oldest one the replica has not applied. Interpolated between the recorded
    /// primary positions; 0 when the replica has applied all of them.
    fn lag_s(&self, applied: u64, now: f64) -> Option<f64> {
        let last = self.history.last()?;
        if applied >= last.1 {
            return Some(0.0);
        }
        let k = self.history.iter().position(|h| h.1 > applied)?;
        let (t1, n1) = self.history[k];
        let t = match k.checked_sub(1).map(|j| self.history[j]) {
            Some((t0, n0)) if n1 > n0 => {
                t0 + (t1 - t0) * ((applied + 1).saturating_sub(n0) as f64 / (n1 - n0) as f64)
            }
            _ => t1,
        };
        Some((now - t).max(0.0))
    }

    /// Wait until each of `replicas` has `until` reached `target`, recording an
    /// interval a second (and one as each arrives); returns the seconds each took from the
    /// call. Fails on a replica's error or death, or when `timeout` passes (saying where each
    /// replica got to); `None` when `stop` was raised.
    pub fn wait(
        &mut self,
        replicas: &[usize],
        target: &Position,
        until: Until,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<Option<Vec<f64>>, StepError> {
        let t0 = Instant::now();
        let mut done: Vec<Option<f64>> = vec![None; replicas.len()];
        let mut next_record = t0 + Duration::from_secs(1);
        loop {
            let record = Instant::now() >= next_record;
            if record {
                next_record += Duration::from_secs(1);
            }
            let mut states = Vec::with_capacity(replicas.len());
            for (k, &i) in replicas.iter().enumerate() {
                if done[k].is_some() {
                    continue;
                }
                let s = self.state(i)?;
                let pos = match until {
                    Until::Received => &s.received,
                    Until::Applied => &s.applied,
                };
                if pos.reached(target) {
                    done[k] = Some(t0.elapsed().as_secs_f64());
                    if until == Until::Applied {
                        self.record(i, &s);
                    }
                } else if until == Until::Applied && !s.applying {
                    return Err(StepError::Check(format!(
                        "replica {} is not applying (its SQL thread stopped without an error) at {}",
                        self.names[i], s.applied.text
                    )));
                } else if until == Until::Received && !s.receiving {
                    return Err(StepError::Check(format!(
                        "replica {} is not receiving from the primary (its IO thread stopped) at {}",
                        self.names[i], s.received.text
                    )));
                } else {
                    states.push((k, i, s));
                }
            }
            if done.iter().all(Option::is_some) {
                return Ok(Some(done.into_iter().flatten().collect()));
            }
            if record && until == Until::Applied {
                let _ = self.note_primary();
                for (_, i, s) in &states {
                    self.record(*i, s);
                }
            }
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if t0.elapsed() > timeout {
                let at: Vec<String> = states
                    .iter()
                    .map(|(_, i, s)| {
                        let pos = match until {
                            Until::Received => &s.received,
                            Until::Applied => &s.applied,
                        };
                        format!(
                            "{} at {} (the primary at {})",
                            self.names[*i], pos.text, target.text
                        )
                    })
                    .collect();
                let what = match until {
                    Until::Received => "received",
                    Until::Applied => "applied",
                };
                return Err(StepError::Check(format!(
                    "replicas had not {what} the primary's writes within {} s: {}",
                    timeout.as_secs(),
                    at.join("; ")
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Make every replica apply and wait until all have applied everything the primary has
    /// committed: where each step starts from, and where it leaves the topology.
    pub fn settle(&mut self, timeout: Duration, stop: &AtomicBool) -> Result<bool, StepError> {
        let all = self.all();
        for &i in &all {
            if self.state(i)?.applying {
                continue;
            }
            if !self.repl.controls_replication() {
                return Err(StepError::Check(format!(
                    "replica {} is not applying, and its replication is not dbduel's to start: start it, or set control_replication = true",
                    self.name(i)
                )));
            }
            self.repl.resume_apply(i)?;
        }
        let target = self.note_primary()?;
        Ok(self
            .wait(&all, &target, Until::Applied, timeout, stop)?
            .is_some())
    }
}
