//! Worker threads driving sessions in a closed or an open loop: one OS thread per client, one
//! connection each, latency recorded into thread-local histograms and handed to the collector
//! once per one-second tick (never one message per operation), errors counted by kind.
//!
//! Closed loop: each client starts its next operation when the previous one ends, so latency
//! is measured from the actual start of each operation (this is what mysqlslap and sysbench
//! do; it hides queueing delay, which the report says). Open loop (`RunSpec`'s rate,
//! `rate.rs`): each operation is due at its scheduled time, whatever the previous ones took,
//! and its latency runs from that time, so queueing is measured; operations started late and
//! those dropped at the end are counted.
//!
//! Connecting is timed too: every client thread is created first, then all are released at
//! once to connect (as mysqlslap releases its threads), and each connect is timed on its own
//! thread. A client that cannot connect does not stop the others: every client reports, and
//! then the run fails with the failures counted by kind.
//!
//! With `RunSpec::threads` below the client count, each thread serves several clients
//! instead (`group.rs`): one operation in flight on each of its connections, answers awaited
//! on all of them at once, as pgbench's `-j` threads do.
//!
//! This file starts the clock and hands back the outcome; `spec.rs` says what a load is,
//! `drive.rs` runs the clients' threads and loops, `msg.rs` is what they send the collector,
//! `collect.rs` merges their ticks into the per-second records (`results::IntervalRecord`),
//! `connect.rs` tallies the connects, and `outcome.rs` holds what a run hands back.

mod collect;
mod connect;
mod drive;
mod group;
mod msg;
mod outcome;
mod rate;
mod spec;
#[cfg(test)]
mod tests;

pub use outcome::{ConnectFailure, ConnectOutcome, ErrorCount, RunError, RunOutcome, Seconds};
pub use rate::RateProfile;
pub use spec::{
    Bound, CONNECT_TIMEOUT, Clock, DROP_AFTER, LATE_AFTER, Overlapped, Pacing, RunSpec, Worker,
};

use crate::engine;
use crate::results::IntervalRecord;
use crate::sysmon::own::process_cpu_s;
use collect::collect;
use connect::{ConnectTally, await_connects};
use drive::{Clients, Gate};
use msg::Msg;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Instant;

/// Run `make_worker(client_index)` on `spec.clients` threads in a closed loop, the clock
/// starting once every client is connected ([`Clock::AllConnected`]).
///
/// `on_interval` is called on the calling thread for each finished one-second interval, in
/// order. `stop` ends the run early (the outcome is then `interrupted`).
pub fn run_closed<'w, F>(
    spec: &RunSpec,
    op_names: &[String],
    make_worker: F,
    stop: &AtomicBool,
    on_interval: impl FnMut(&IntervalRecord),
) -> Result<RunOutcome, RunError>
where
    F: Fn(usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    run_clocked(
        spec,
        Clock::AllConnected,
        op_names,
        make_worker,
        stop,
        on_interval,
    )
}

/// [`run_closed`] with the clock starting where `clock` says. Every client thread is
/// created first, then all are released together to connect (`make_worker`), each timing
/// its own connect. A client that fails to connect does not stop the others; once every
/// client has connected or failed, the run fails with the failures counted by kind.
pub fn run_clocked<'w, F>(
    spec: &RunSpec,
    clock: Clock,
    op_names: &[String],
    make_worker: F,
    stop: &AtomicBool,
    mut on_interval: impl FnMut(&IntervalRecord),
) -> Result<RunOutcome, RunError>
where
    F: Fn(usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    // The clients that run here, by their id in the whole run.
    let ids: Vec<usize> = (0..spec.clients.max(1))
        .filter(|&c| spec.team.as_ref().is_none_or(|t| t.shard.owns(c)))
        .collect();
    // Holds the threads until all exist, then releases them to connect; then holds them
    // again until the clock starts (at once, for `FirstConnect`).
    let release = Gate::default();
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel::<Msg>();
    let clients = Clients {
        spec,
        n_ops: op_names.len(),
        make_worker: &make_worker,
        release: &release,
        gate: &gate,
        stop,
    };
    std::thread::scope(|scope| -> Result<RunOutcome, RunError> {
        // A panic on this side must not leave the clients waiting at a gate or running on.
        let _unstick = Unstick {
            gates: [&release, &gate],
            stop,
        };
        let units = match drive::spawn(scope, &ids, &clients, tx) {
            Ok(n) => n,
            Err(e) => {
                release.open(None);
                gate.open(None);
                return Err(RunError::Spawn(e));
            }
        };
        let run = Clocked {
            spec,
            op_names,
            here: ids.len(),
            units,
            release: &release,
            gate: &gate,
            rx: &rx,
            stop,
        };
        match clock {
            Clock::AllConnected => run.all_connected(&mut on_interval),
            Clock::FirstConnect => run.first_connect(&mut on_interval),
        }
    })
}

/// Dropped in a panic, lets every client thread end: the gates opened with no start (the
/// clients leave) and the stop raised (clients at work stop at their next operation).
struct Unstick<'a> {
    gates: [&'a Gate; 2],
    stop: &'a AtomicBool,
}

impl Drop for Unstick<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for g in self.gates {
                g.open(None);
            }
        }
    }
}

/// A run whose client threads exist, waiting at the gates: starts the clock and measures.
struct Clocked<'a> {
    spec: &'a RunSpec,
    op_names: &'a [String],
    /// Clients running here.
    here: usize,
    /// Threads serving them, each reporting its seconds as one.
    units: usize,
    release: &'a Gate,
    gate: &'a Gate,
    rx: &'a mpsc::Receiver<Msg>,
    stop: &'a AtomicBool,
}

impl Clocked<'_> {
    /// [`Clock::AllConnected`]: connecting is timed apart; the clock starts with every client
    /// ready.
    fn all_connected(
        &self,
        on_interval: &mut dyn FnMut(&IntervalRecord),
    ) -> Result<RunOutcome, RunError> {
        let released = Instant::now();
        self.release.open(Some(released));
        let mut tally = ConnectTally::new(self.here, released);
        if let Err(e) = await_connects(self.rx, &mut tally, self.stop) {
            self.gate.open(None);
            return Err(e);
        }
        if tally.failed > 0 {
            self.gate.open(None);
            return Err(RunError::Connect(tally.outcome()));
        }
        let start = match self.meet() {
            Ok(t) => t,
            Err(e) => {
                self.gate.open(None);
                return Err(e);
            }
        };
        Ok(self.measure(start, &mut tally, on_interval, &|| {}))
    }

    /// [`Clock::FirstConnect`]: the clock starts as the clients are released: connecting
    /// counts, and each client starts its operations once connected, not waiting for the
    /// others.
    fn first_connect(
        &self,
        on_interval: &mut dyn FnMut(&IntervalRecord),
    ) -> Result<RunOutcome, RunError> {
        let start = match self.meet() {
            Ok(t) => t,
            Err(e) => {
                self.release.open(None);
                self.gate.open(None);
                return Err(e);
            }
        };
        let mut tally = ConnectTally::new(self.here, start);
        // Released once the gate is open, so no client waits at it.
        let outcome = self.measure(start, &mut tally, on_interval, &|| {
            self.release.open(Some(start))
        });
        if tally.failed > 0 {
            return Err(RunError::Connect(tally.outcome()));
        }
        Ok(outcome)
    }

    /// With shards, every shard's clients start at the instant they agree on.
    fn meet(&self) -> Result<Instant, RunError> {
        match &self.spec.team {
            Some(t) => Ok(t.meet(self.stop)?),
            None => Ok(Instant::now()),
        }
    }

    /// Open the gate at `start` (then do `after_gate`) and measure the clients until they
    /// end, with dbduel's CPU from that moment.
    fn measure(
        &self,
        start: Instant,
        tally: &mut ConnectTally,
        mut on: &mut dyn FnMut(&IntervalRecord),
        after_gate: &dyn Fn(),
    ) -> RunOutcome {
        let cpu_before = process_cpu_s();
        self.gate.open(Some(start));
        after_gate();
        let mut outcome = collect(
            self.spec,
            self.op_names,
            (self.here, self.units),
            start,
            self.rx,
            self.stop,
            &mut on,
            tally,
        );
        outcome.process_cpu_s = process_cpu_s() - cpu_before;
        outcome
    }
}

/// A panicked thread's message, from its payload (`no message` when the payload is not
/// text): what a step that joins a helper thread reports when the thread panicked.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}
