//! The collector: merges the clients' per-tick flushes into one record per second, emitted
//! once no running client can add to it — or, when a client is stuck inside an operation,
//! [`CLOSE_AFTER_S`] seconds after the second ended — and sums the seconds after warm-up into
//! the run's totals.
//!
//! Memory does not grow with the length of a run: at most a few seconds are open at once
//! (a stuck client's later report of a closed second goes into the oldest open one), an
//! open second holds its counts sparsely (the blocks of buckets its latencies fall in, a few
//! KiB, not a 184 KiB histogram per op kind), the full histograms a closed second is
//! summarized in are a few reset and reused from second to second (as CockroachDB's
//! workload histograms go back to a pool), and a closed second's record is handed to
//! `on_interval` once (for the per-second file, written as it comes) and not kept: the run
//! counts its seconds, nothing more.

use super::connect::ConnectTally;
use super::msg::{Flushed, Msg};
use super::outcome::{ErrorCount, RunOutcome, Seconds};
use super::rate::RateProfile;
use super::spec::{Pacing, RunSpec};
use crate::metrics::{self, Hist, Latency, Recorder};
use crate::results::{ErrorTick, IntervalRecord, OpInterval};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Seconds after a second's end that it waits for a client that has not reported it (one
/// inside a long operation); then it is closed without it, and what that client later
/// reports of it is counted in the oldest second still open.
pub const CLOSE_AFTER_S: u64 = 3;

/// Emptied seconds kept for reuse: more than can be open at once in a steady run.
const POOL: usize = CLOSE_AFTER_S as usize + 3;

/// Merged stats of one tick.
struct TickAgg {
    /// Per op kind, the clients' counts of the second, sparse.
    counts: Vec<Recorder>,
    ops: Vec<u64>,
    rows: u64,
    errors: u64,
    /// `errors` by op kind and error kind.
    error_kinds: BTreeMap<(usize, &'static str), u64>,
    late: u64,
    dropped: u64,
    unstarted: u64,
}

/// Merge flushed worker stats into ticks and emit each tick once no running client can add to it.
/// Connects reported while running (`Clock::FirstConnect`) go into `tally`. `clients` run
/// here, from `units` threads that each flush their seconds.
#[allow(clippy::too_many_arguments)]
pub(super) fn collect(
    spec: &RunSpec,
    op_names: &[String],
    (clients, units): (usize, usize),
    start: Instant,
    rx: &mpsc::Receiver<Msg>,
    stop: &AtomicBool,
    on_interval: &mut impl FnMut(&IntervalRecord),
    tally: &mut ConnectTally,
) -> RunOutcome {
    let mut c = Collector::new(spec.warmup_s, op_names, units, start);
    // The clients here run their share of the step's rate.
    c.target_rate = match &spec.pacing {
        Pacing::Open { rate, .. } => Some(rate.scaled(clients as f64 / spec.clients.max(1) as f64)),
        Pacing::Closed => None,
    };
    while c.done.iter().any(|d| !d) {
        match rx.recv_timeout(c.until_overdue()) {
            Ok(Msg::Flush {
                worker,
                tick,
                next_tick,
                stats,
                done,
            }) => {
                c.add(tick, stats);
                c.seal(worker, next_tick, done);
                c.emit_sealed(on_interval);
            }
            Ok(Msg::Ready { took }) => tally.ready(took),
            Ok(Msg::ConnectFailed { client, error }) => tally.failed(client, error),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break, // every client thread is gone
        }
        c.emit_overdue(on_interval);
    }
    c.emit_rest(on_interval);
    c.outcome(stop, tally)
}

/// The collector's state while the clients run.
struct Collector<'a> {
    warmup_s: u64,
    op_names: &'a [String],
    start: Instant,
    t: Totals,
    /// The open seconds (at most a few: see [`CLOSE_AFTER_S`]).
    pending: BTreeMap<u64, TickAgg>,
    /// Emitted seconds, reset, for the next ones.
    pool: Vec<TickAgg>,
    /// The second being emitted: per op kind, and all op kinds together (reset each second).
    tick_ops: Vec<Hist>,
    tick_all: Hist,
    /// Per client: the highest tick it will never add to again (None: none sealed yet).
    sealed: Vec<Option<u64>>,
    done: Vec<bool>,
    next_emit: u64,
    errors: BTreeMap<(usize, &'static str), (u64, String)>,
    last_end: Instant,
    ops_all: u64,
    /// Open loop: the rate the clients here are scheduled at, over time.
    target_rate: Option<RateProfile>,
}

impl<'a> Collector<'a> {
    fn new(warmup_s: u64, op_names: &'a [String], clients: usize, start: Instant) -> Self {
        let n_ops = op_names.len();
        Collector {
            warmup_s,
            op_names,
            start,
            t: Totals {
                per_op: (0..n_ops).map(|_| metrics::new_hist()).collect(),
                all: metrics::new_hist(),
                ops: 0,
                rows: 0,
                late: 0,
                dropped: 0,
                unstarted: 0,
                seconds: Seconds::default(),
            },
            pending: BTreeMap::new(),
            pool: Vec::new(),
            tick_ops: (0..n_ops).map(|_| metrics::new_hist()).collect(),
            tick_all: metrics::new_hist(),
            sealed: vec![None; clients],
            done: vec![false; clients],
            next_emit: 0,
            errors: BTreeMap::new(),
            last_end: start,
            ops_all: 0,
            target_rate: None,
        }
    }

    /// Add a client's flush of `tick` to that tick (to the oldest open one when `tick` was
    /// closed without it); its errors after warm-up to the run's.
    fn add(&mut self, tick: u64, stats: Flushed) {
        let n_ops = self.op_names.len();
        let pool = &mut self.pool;
        let agg = self
            .pending
            .entry(tick.max(self.next_emit))
            .or_insert_with(|| pool.pop().unwrap_or_else(|| TickAgg::new(n_ops)));
        let Flushed {
            local: stats,
            latencies,
        } = stats;
        for (i, lat) in latencies.iter().enumerate().take(n_ops) {
            agg.counts[i].add(lat);
            agg.ops[i] += stats.ops[i];
            self.ops_all += stats.ops[i];
        }
        agg.rows += stats.rows;
        agg.late += stats.late;
        agg.dropped += stats.dropped;
        agg.unstarted += stats.unstarted;
        for ((op, kind), (count, msg)) in stats.errors {
            agg.errors += count;
            *agg.error_kinds.entry((op, kind)).or_default() += count;
            if tick >= self.warmup_s {
                self.errors.entry((op, kind)).or_insert((0, msg)).0 += count;
            }
        }
    }

    /// Note that `worker` has moved on to `next_tick`, or has finished when `done`.
    fn seal(&mut self, worker: usize, next_tick: u64, done: bool) {
        if done {
            self.done[worker] = true;
            self.last_end = Instant::now();
        } else {
            self.sealed[worker] = Some(next_tick.saturating_sub(1));
        }
    }

    /// Emit every tick that no running client can add to any more.
    fn emit_sealed(&mut self, on_interval: &mut impl FnMut(&IntervalRecord)) {
        let horizon: Option<u64> = (0..self.done.len())
            .filter(|w| !self.done[*w])
            .map(|w| self.sealed[w])
            .collect::<Option<Vec<u64>>>()
            .and_then(|v| v.into_iter().min());
        if let Some(h) = horizon {
            while self.next_emit <= h {
                self.emit(f64::INFINITY, on_interval);
            }
        }
    }

    /// How long until the oldest open second is overdue.
    fn until_overdue(&self) -> Duration {
        let due = self.start + Duration::from_secs(self.next_emit + 1 + CLOSE_AFTER_S);
        due.saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    }

    /// Emit every second that ended more than [`CLOSE_AFTER_S`] seconds ago, whether or not
    /// every client has reported it: a client inside a long operation does not hold the
    /// others' seconds.
    fn emit_overdue(&mut self, on_interval: &mut impl FnMut(&IntervalRecord)) {
        let now = self.start.elapsed().as_secs();
        while self.next_emit + 1 + CLOSE_AFTER_S <= now {
            self.emit(f64::INFINITY, on_interval);
        }
    }

    /// Every client has finished: emit the ticks left, the last one shortened to the end.
    fn emit_rest(&mut self, on_interval: &mut impl FnMut(&IntervalRecord)) {
        let last = self.pending.keys().next_back().copied();
        let end_s = self
            .last_end
            .saturating_duration_since(self.start)
            .as_secs_f64();
        if let Some(last) = last {
            while self.next_emit <= last {
                self.emit(end_s, on_interval);
            }
        }
    }

    /// Finish the oldest open second: summarize it, add it to the totals unless it is
    /// warm-up, report it, keep it without its histograms, and put its aggregate back in the
    /// pool. `end_s` is when the run ended (seconds after start), which shortens the last
    /// tick.
    fn emit(&mut self, end_s: f64, on_interval: &mut impl FnMut(&IntervalRecord)) {
        let tick = self.next_emit;
        self.next_emit += 1;
        let n_ops = self.op_names.len();
        let mut agg = match self.pending.remove(&tick) {
            Some(agg) => agg,
            None => self.pool.pop().unwrap_or_else(|| TickAgg::new(n_ops)),
        };
        for (h, counts) in self.tick_ops.iter_mut().zip(&mut agg.counts) {
            h.reset();
            counts.take().add_to(h);
        }
        let mut rec = record(
            tick,
            &agg,
            tick < self.warmup_s,
            self.op_names,
            &mut self.t,
            (&self.tick_ops, &mut self.tick_all),
            end_s,
        );
        // The second's mean target: a ramp's changes from second to second.
        rec.target_rate = self
            .target_rate
            .as_ref()
            .map(|r| r.mean(tick as f64, tick as f64 + 1.0));
        on_interval(&rec);
        self.t.seconds.saw(tick);
        if self.pool.len() < POOL {
            agg.reset();
            self.pool.push(agg);
        }
    }

    /// The run's figures (its CPU is the caller's to add).
    fn outcome(self, stop: &AtomicBool, tally: &ConnectTally) -> RunOutcome {
        let op_names = self.op_names;
        let measure_start = self.start + Duration::from_secs(self.warmup_s);
        let errors = self
            .errors
            .into_iter()
            .map(|((op, kind), (count, first_message))| ErrorCount {
                op: op_names.get(op).cloned().unwrap_or_default(),
                kind: kind.to_string(),
                count,
                first_message,
            })
            .collect();
        let t = self.t;
        RunOutcome {
            op_names: op_names.to_vec(),
            ops: t.ops,
            ops_all: self.ops_all,
            rows: t.rows,
            errors,
            per_op: t.per_op,
            all: t.all,
            measured_s: self
                .last_end
                .saturating_duration_since(measure_start)
                .as_secs_f64(),
            seconds: t.seconds,
            interrupted: stop.load(Ordering::Relaxed),
            process_cpu_s: 0.0,
            late: t.late,
            dropped: t.dropped,
            unstarted: t.unstarted,
            connect: tally.outcome(),
        }
    }
}

/// Running totals after warm-up.
struct Totals {
    per_op: Vec<Hist>,
    all: Hist,
    ops: u64,
    rows: u64,
    late: u64,
    dropped: u64,
    unstarted: u64,
    seconds: Seconds,
}

impl TickAgg {
    fn new(n_ops: usize) -> Self {
        TickAgg {
            counts: (0..n_ops).map(|_| Recorder::new()).collect(),
            ops: vec![0; n_ops],
            rows: 0,
            errors: 0,
            error_kinds: BTreeMap::new(),
            late: 0,
            dropped: 0,
            unstarted: 0,
        }
    }

    /// Empty again (its counts were taken as it was summarized).
    fn reset(&mut self) {
        self.ops.iter_mut().for_each(|o| *o = 0);
        self.rows = 0;
        self.errors = 0;
        self.error_kinds.clear();
        self.late = 0;
        self.dropped = 0;
        self.unstarted = 0;
    }
}

/// The record of second `tick` from its aggregate and its histograms (`hists`: per op
/// kind, and scratch for all of them together), added to the totals unless `warmup`.
/// `end_s` is when the run ended (seconds after start), which shortens the last tick.
fn record(
    tick: u64,
    agg: &TickAgg,
    warmup: bool,
    op_names: &[String],
    t: &mut Totals,
    hists: (&[Hist], &mut Hist),
    end_s: f64,
) -> IntervalRecord {
    let (per_op, tick_all) = hists;
    let n_ops = op_names.len();
    tick_all.reset();
    let mut per = Vec::with_capacity(n_ops);
    for (i, name) in op_names.iter().enumerate() {
        let h = &per_op[i];
        metrics::merge(tick_all, h);
        if !warmup {
            metrics::merge(&mut t.per_op[i], h);
        }
        per.push(OpInterval {
            op: name.clone(),
            ops: agg.ops[i],
            latency_us: Latency::of(h),
            hist: (!h.is_empty()).then(|| metrics::encode(h)),
        });
    }
    let tick_ops: u64 = agg.ops.iter().sum();
    if !warmup {
        metrics::merge(&mut t.all, tick_all);
        t.ops += tick_ops;
        t.rows += agg.rows;
        t.late += agg.late;
        t.dropped += agg.dropped;
        t.unstarted += agg.unstarted;
    }
    let t_s = ((tick + 1) as f64).min(end_s.max(tick as f64 + 0.001));
    IntervalRecord {
        tick,
        t_s,
        warmup,
        ops: tick_ops,
        ops_per_s: tick_ops as f64 / (t_s - tick as f64),
        rows: agg.rows,
        errors: agg.errors,
        late: agg.late,
        dropped: agg.dropped,
        latency_us: Latency::of(tick_all),
        per_op: per,
        level: None,
        error_kinds: agg
            .error_kinds
            .iter()
            .map(|(&(op, kind), &count)| ErrorTick {
                op: op_names.get(op).cloned().unwrap_or_default(),
                kind: kind.to_string(),
                count,
            })
            .collect(),
        target_rate: None,
    }
}
