//! Worker threads driving sessions in a closed loop: one OS thread per client, one connection
//! each, latency recorded into thread-local histograms and handed to the collector once per
//! one-second tick (never one message per operation), errors counted by kind.
//!
//! Closed loop: each client starts its next operation when the previous one ends, so latency
//! is measured from the actual start of each operation (this is what mysqlslap and sysbench
//! do; it hides queueing delay, which the report says).
//!
//! Connecting is timed too: every client thread is created first, then all are released at
//! once to connect (as mysqlslap releases its threads), and each connect is timed on its own
//! thread. A client that cannot connect does not stop the others: every client reports, and
//! then the run fails with the failures counted by kind.

use crate::dataset::rng::SplitMix64;
use crate::engine::{self, EngineError};
use crate::metrics::{self, Hist, Latency, Recorder, TickCounts};
use crate::sysmon::own::process_cpu_s;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long all clients together may take to connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the step's clock starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// Every client connects first; the clock starts when the last one is ready and all
    /// start together. Connecting is timed apart (`RunOutcome::connect`).
    #[default]
    AllConnected,
    /// The clock starts when the clients are released to connect, and each client starts
    /// its operations as soon as it is connected: what `mysqlslap` times ("seconds to run
    /// all queries" includes opening every connection). Warm-up does not apply, and the
    /// connects are bounded by the engine's own connect timeouts rather than
    /// `CONNECT_TIMEOUT`.
    FirstConnect,
}

/// How the clients' connects went.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectOutcome {
    pub clients: usize,
    pub connected: usize,
    /// From the release of the clients to the last one connected, seconds (0 when none
    /// connected).
    pub all_s: f64,
    /// Clients connected per second over `all_s`.
    pub per_s: f64,
    /// Each client's connect, µs: its connection opened and authenticated and its
    /// statements prepared, timed on its own thread.
    pub latency_us: Option<Latency>,
    /// Clients that could not connect, by kind of failure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ConnectFailure>,
}

/// Clients that failed to connect with one kind of error.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectFailure {
    pub kind: String,
    pub count: u64,
    /// The first client to report this failure, and its message.
    pub first_client: usize,
    pub first_message: String,
}

impl ConnectOutcome {
    /// Clients that could not connect.
    pub fn failed(&self) -> u64 {
        self.failures.iter().map(|f| f.count).sum()
    }
}

/// `12 of 30 clients could not connect: too_many_connections 12 (first: client 18, …); 18
/// connected in 0.21 s`.
fn connect_failure_message(c: &ConnectOutcome) -> String {
    let kinds: Vec<String> = c
        .failures
        .iter()
        .map(|f| {
            format!(
                "{} {} (first: client {}, {})",
                f.kind, f.count, f.first_client, f.first_message
            )
        })
        .collect();
    format!(
        "{} of {} clients could not connect: {}; {} connected in {:.3} s",
        c.failed(),
        c.clients,
        kinds.join("; "),
        c.connected,
        c.all_s
    )
}

/// When each client stops.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// Each client runs this many operations (warm-up included).
    PerClient(u64),
    /// Every client runs until this long after the start (warm-up included).
    Duration(Duration),
}

/// When operations start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Each client starts its next operation when the previous one ends; latency is
    /// measured from the actual start.
    Closed,
    /// Operations are scheduled at `rate_per_s` in all (spread over the clients), evenly
    /// spaced or with exponential gaps (`poisson`); latency is measured from the scheduled
    /// start, so queueing behind a slow engine counts (no coordinated omission). An
    /// operation more than `DROP_AFTER` behind its schedule is dropped and counted.
    Open { rate_per_s: f64, poisson: bool },
}

/// How far behind schedule an open-loop operation may fall before it is dropped.
pub const DROP_AFTER: Duration = Duration::from_secs(1);

/// An open-loop operation that starts later than this after its schedule counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// How to drive the clients.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub clients: usize,
    pub bound: Bound,
    /// Whole seconds at the start whose operations are not counted in the totals.
    pub warmup_s: u64,
    pub pacing: Pacing,
    /// Seed of the open loop's Poisson gaps.
    pub seed: u64,
    /// A sharded run: only this shard's clients run here (each with its id in the whole
    /// run, `clients` still counting them all), starting when every shard is ready.
    pub team: Option<crate::shard::Team>,
}

/// One client's operations. Created inside its own thread, so it owns its session there.
pub trait Worker {
    /// Run operation number `seq` of this client; returns the op kind's index and the rows
    /// it returned or changed.
    fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>);

    /// Closed loop: how long to wait before the next operation, outside its latency (a
    /// user's keying and think time). None: go on at once.
    fn pause(&mut self) -> Option<Duration> {
        None
    }
}

/// Sleep until `until` (or the deadline, or a stop), waking every 50 ms to look at the stop
/// flag.
fn pause(until: Instant, deadline: Option<Instant>, stop: &AtomicBool) {
    let until = deadline.map_or(until, |d| until.min(d));
    loop {
        let now = Instant::now();
        if now >= until || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// Errors of one kind on one op kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorCount {
    pub op: String,
    pub kind: String,
    pub count: u64,
    pub first_message: String,
}

/// Latency and counts of one op kind within one tick.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpInterval {
    pub op: String,
    pub ops: u64,
    pub latency_us: Option<Latency>,
    /// The second's latency histogram of this kind, as [`metrics::encode`] writes it, so that
    /// seconds (and shards' seconds) add up to exact percentiles; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
}

/// One second of a step: operations that completed in `[t_s - 1, t_s)` after the start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalRecord {
    pub tick: u64,
    /// End of the interval, seconds after the start.
    pub t_s: f64,
    pub warmup: bool,
    pub ops: u64,
    pub ops_per_s: f64,
    pub rows: u64,
    pub errors: u64,
    /// Open loop: operations that started more than 1 ms after their schedule.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late: u64,
    /// Open loop: operations dropped for being more than 1 s behind their schedule.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
    pub latency_us: Option<Latency>,
    pub per_op: Vec<OpInterval>,
    /// Client count of the level this interval belongs to, in a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u64>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Everything a closed-loop run measured.
pub struct RunOutcome {
    pub op_names: Vec<String>,
    /// Operations that succeeded after warm-up.
    pub ops: u64,
    /// Operations that succeeded, warm-up included: the denominator of `process_cpu_s`.
    pub ops_all: u64,
    pub rows: u64,
    pub errors: Vec<ErrorCount>,
    /// Per op kind, after warm-up.
    pub per_op: Vec<Hist>,
    /// All op kinds together, after warm-up.
    pub all: Hist,
    /// Seconds from the end of warm-up to the last client's end.
    pub measured_s: f64,
    pub intervals: Vec<IntervalRecord>,
    /// Stopped early by the stop flag.
    pub interrupted: bool,
    /// CPU seconds dbduel's process used from the clock's start to the run's end, warm-up
    /// included, connecting excluded (user + system).
    pub process_cpu_s: f64,
    /// Open loop, after warm-up: operations started late, and dropped.
    pub late: u64,
    pub dropped: u64,
    /// How the clients connected.
    pub connect: ConnectOutcome,
}

impl RunOutcome {
    /// Failed operations of every kind.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().map(|e| e.count).sum()
    }

    /// dbduel's CPU per operation, µs (every operation, warm-up included, as the CPU is).
    pub fn cpu_us_per_op(&self) -> f64 {
        if self.ops_all > 0 {
            self.process_cpu_s * 1e6 / self.ops_all as f64
        } else {
            0.0
        }
    }

    /// This run's seconds as one level of a sweep that began `tick_base` seconds earlier:
    /// ticks and times shifted, each second tagged with the level's client count.
    pub fn level_intervals(
        &mut self,
        tick_base: u64,
        level: u64,
    ) -> impl Iterator<Item = IntervalRecord> + use<> {
        std::mem::take(&mut self.intervals)
            .into_iter()
            .map(move |mut iv| {
                iv.tick += tick_base;
                iv.t_s += tick_base as f64;
                iv.level = Some(level);
                iv
            })
    }

    /// When every operation failed: the count and the first failure's message, for a step to
    /// fail with (a run with any success is reported, its errors counted, instead).
    pub fn all_failed(&self) -> Option<(u64, String)> {
        let n = self.error_count();
        (self.ops == 0 && n > 0).then(|| {
            let first = self.errors.first().map(|e| e.first_message.clone());
            (n, first.unwrap_or_default())
        })
    }
}

/// A run that could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Some clients could not connect (every client was waited for).
    #[error("{}", connect_failure_message(.0))]
    Connect(ConnectOutcome),
    #[error("could not start client thread: {0}")]
    Spawn(std::io::Error),
    #[error(
        "only {ready} of {clients} clients connected within {timeout_s} s ({failed} failed to); the server stopped accepting connections"
    )]
    ConnectTimeout {
        ready: usize,
        failed: usize,
        clients: usize,
        timeout_s: u64,
    },
    #[error("interrupted while clients were connecting")]
    Interrupted,
    #[error("{0}")]
    Shards(#[from] crate::shard::BarrierError),
}

/// Per-worker counters for the current tick. Latencies go into the worker's recorders, which
/// it keeps for the whole run; at each tick it sends their sparse counts with these.
struct Local {
    ops: Vec<u64>,
    rows: u64,
    late: u64,
    dropped: u64,
    errors: BTreeMap<(usize, &'static str), (u64, String)>,
}

impl Local {
    fn new(n: usize) -> Self {
        Local {
            ops: vec![0; n],
            rows: 0,
            late: 0,
            dropped: 0,
            errors: BTreeMap::new(),
        }
    }
}

/// What a worker hands the collector for one tick: its counters and, per op kind, the
/// latencies it recorded (a few hundred bytes, not a histogram).
struct Flushed {
    local: Local,
    latencies: Vec<TickCounts>,
}

enum Msg {
    /// Stats of `tick`; the worker has moved on to `next_tick` (or finished when `done`).
    Flush {
        worker: usize,
        tick: u64,
        next_tick: u64,
        stats: Flushed,
        done: bool,
    },
    /// A client connected; its connect took `took`.
    Ready {
        took: Duration,
    },
    ConnectFailed {
        client: usize,
        error: EngineError,
    },
}

/// The clients' connects as they report, and the figures made of them.
struct ConnectTally {
    clients: usize,
    released: Instant,
    last_ready: Option<Instant>,
    ready: usize,
    hist: Hist,
    /// By kind: (count, first client, its message).
    failures: BTreeMap<&'static str, (u64, usize, String)>,
    failed: usize,
}

impl ConnectTally {
    fn new(clients: usize, released: Instant) -> Self {
        ConnectTally {
            clients,
            released,
            last_ready: None,
            ready: 0,
            hist: metrics::new_hist(),
            failures: BTreeMap::new(),
            failed: 0,
        }
    }

    fn ready(&mut self, took: Duration) {
        self.ready += 1;
        self.last_ready = Some(Instant::now());
        self.hist.saturating_record(metrics::micros(took));
    }

    fn failed(&mut self, client: usize, error: EngineError) {
        self.failed += 1;
        let e = self
            .failures
            .entry(error.kind)
            .or_insert((0, client, error.message));
        e.0 += 1;
    }

    fn reported(&self) -> usize {
        self.ready + self.failed
    }

    fn outcome(&self) -> ConnectOutcome {
        let all_s = self
            .last_ready
            .map(|t| t.saturating_duration_since(self.released).as_secs_f64())
            .unwrap_or(0.0);
        ConnectOutcome {
            clients: self.clients,
            connected: self.ready,
            all_s,
            per_s: if all_s > 0.0 {
                self.ready as f64 / all_s
            } else {
                0.0
            },
            latency_us: Latency::of(&self.hist),
            failures: self
                .failures
                .iter()
                .map(|(kind, (count, client, msg))| ConnectFailure {
                    kind: kind.to_string(),
                    count: *count,
                    first_client: *client,
                    first_message: msg.clone(),
                })
                .collect(),
        }
    }
}

/// Merged stats of one tick.
struct TickAgg {
    hists: Vec<Hist>,
    ops: Vec<u64>,
    rows: u64,
    errors: u64,
    late: u64,
    dropped: u64,
}

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
    let n_ops = op_names.len();
    let clients = spec.clients.max(1);
    // The clients that run here, by their id in the whole run; a thread's slot is its place
    // among them.
    let ids: Vec<usize> = (0..clients)
        .filter(|&c| spec.team.as_ref().is_none_or(|t| t.shard.owns(c)))
        .collect();
    let here = ids.len();
    // With shards, every shard's clients start at the instant they agree on.
    let meet = |stop: &AtomicBool| -> Result<Instant, RunError> {
        match &spec.team {
            Some(t) => Ok(t.meet(stop)?),
            None => Ok(Instant::now()),
        }
    };
    // Holds the threads until all exist, then releases them to connect; then holds them
    // again until the clock starts (at once, for `FirstConnect`).
    let release = Gate::default();
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel::<Msg>();

    std::thread::scope(|scope| -> Result<RunOutcome, RunError> {
        for (slot, &client) in ids.iter().enumerate() {
            let tx = tx.clone();
            let (release, gate, make_worker) = (&release, &gate, &make_worker);
            let bound = spec.bound;
            let res = std::thread::Builder::new()
                .name(format!("client-{client}"))
                .stack_size(1 << 20)
                .spawn_scoped(scope, move || {
                    if release.wait().is_none() {
                        return;
                    }
                    let began = Instant::now();
                    let made = make_worker(client);
                    let took = began.elapsed();
                    let mut worker = match made {
                        Ok(w) => {
                            let _ = tx.send(Msg::Ready { took });
                            w
                        }
                        Err(error) => {
                            let _ = tx.send(Msg::ConnectFailed { client, error });
                            let _ = tx.send(Msg::Flush {
                                worker: slot,
                                tick: 0,
                                next_tick: 0,
                                stats: Flushed {
                                    local: Local::new(n_ops),
                                    latencies: Vec::new(),
                                },
                                done: true,
                            });
                            return;
                        }
                    };
                    if let Some(start) = gate.wait() {
                        let schedule = Schedule::new(spec.pacing, clients, client, spec.seed);
                        drive(
                            slot,
                            worker.as_mut(),
                            bound,
                            start,
                            schedule,
                            n_ops,
                            stop,
                            &tx,
                        );
                    }
                });
            if let Err(e) = res {
                release.open(None);
                gate.open(None);
                return Err(RunError::Spawn(e));
            }
        }
        drop(tx);
        // Open the gate at `start` (then do `after_gate`) and measure the clients until they
        // end, with dbduel's CPU from that moment.
        let measure = |start: Instant,
                       tally: &mut ConnectTally,
                       mut on: &mut dyn FnMut(&IntervalRecord),
                       after_gate: &dyn Fn()| {
            let cpu_before = process_cpu_s();
            gate.open(Some(start));
            after_gate();
            let mut outcome = collect(spec, op_names, here, start, &rx, stop, &mut on, tally);
            outcome.process_cpu_s = process_cpu_s() - cpu_before;
            outcome
        };
        let outcome = match clock {
            Clock::AllConnected => {
                let released = Instant::now();
                release.open(Some(released));
                let mut tally = ConnectTally::new(here, released);
                if let Err(e) = await_connects(&rx, &mut tally, stop) {
                    gate.open(None);
                    return Err(e);
                }
                if tally.failed > 0 {
                    gate.open(None);
                    return Err(RunError::Connect(tally.outcome()));
                }
                // Connecting is timed apart; the clock starts with every client ready.
                let start = match meet(stop) {
                    Ok(t) => t,
                    Err(e) => {
                        gate.open(None);
                        return Err(e);
                    }
                };
                measure(start, &mut tally, &mut on_interval, &|| {})
            }
            Clock::FirstConnect => {
                // The clock starts as the clients are released: connecting counts, and each
                // client starts its operations once connected, not waiting for the others.
                let start = match meet(stop) {
                    Ok(t) => t,
                    Err(e) => {
                        release.open(None);
                        gate.open(None);
                        return Err(e);
                    }
                };
                let mut tally = ConnectTally::new(here, start);
                // Released once the gate is open, so no client waits at it.
                let outcome = measure(start, &mut tally, &mut on_interval, &|| {
                    release.open(Some(start))
                });
                if tally.failed > 0 {
                    return Err(RunError::Connect(tally.outcome()));
                }
                outcome
            }
        };
        Ok(outcome)
    })
}

/// Wait until every client has connected or failed to (all are waited for, so failures can
/// be counted by kind), within `CONNECT_TIMEOUT`.
fn await_connects(
    rx: &mpsc::Receiver<Msg>,
    tally: &mut ConnectTally,
    stop: &AtomicBool,
) -> Result<(), RunError> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    while tally.reported() < tally.clients {
        if stop.load(Ordering::Relaxed) {
            return Err(RunError::Interrupted);
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Ready { took }) => tally.ready(took),
            Ok(Msg::ConnectFailed { client, error }) => tally.failed(client, error),
            // A failed client says it is done; nothing else runs before the clock starts.
            Ok(Msg::Flush { .. }) => {}
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(RunError::ConnectTimeout {
                    ready: tally.ready,
                    failed: tally.failed,
                    clients: tally.clients,
                    timeout_s: CONNECT_TIMEOUT.as_secs(),
                });
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(RunError::Spawn(std::io::Error::other(
                    "a client thread ended before it was ready",
                )));
            }
        }
    }
    Ok(())
}

/// Holds clients until the start time is set (or the run is called off with `None`).
#[derive(Default)]
struct Gate {
    state: Mutex<Option<Option<Instant>>>,
    cv: Condvar,
}

impl Gate {
    fn open(&self, start: Option<Instant>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *s = Some(start);
        self.cv.notify_all();
    }

    fn wait(&self) -> Option<Instant> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(start) = *s {
                return start;
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// When a client's next operation is due (open loop).
struct Schedule {
    /// Mean gap between this client's operations.
    gap_s: f64,
    /// Offset of this client's first operation, spreading clients over one gap.
    offset_s: f64,
    poisson: Option<SplitMix64>,
}

impl Schedule {
    /// `None` for a closed loop.
    fn new(pacing: Pacing, clients: usize, client: usize, seed: u64) -> Option<Schedule> {
        let Pacing::Open {
            rate_per_s,
            poisson,
        } = pacing
        else {
            return None;
        };
        let per_client = (rate_per_s / clients as f64).max(1e-9);
        let gap_s = 1.0 / per_client;
        Some(Schedule {
            gap_s,
            offset_s: gap_s * client as f64 / clients as f64,
            poisson: poisson.then(|| SplitMix64::stream(seed, client as u64)),
        })
    }

    /// The gap to the next operation, seconds.
    fn next_gap(&mut self) -> f64 {
        match &mut self.poisson {
            // exponential gaps: -ln(1-u) * mean
            Some(rng) => -(1.0 - rng.unit()).ln() * self.gap_s,
            None => self.gap_s,
        }
    }
}

/// The client loop. Two clock reads per operation; one relaxed atomic load for stopping.
/// Open loop: waits for each operation's scheduled time (absolute, so no drift), measures
/// latency from that time, and drops operations that fall more than `DROP_AFTER` behind.
#[allow(clippy::too_many_arguments)]
fn drive(
    slot: usize,
    worker: &mut dyn Worker,
    bound: Bound,
    start: Instant,
    mut schedule: Option<Schedule>,
    n_ops: usize,
    stop: &AtomicBool,
    tx: &mpsc::Sender<Msg>,
) {
    let mut local = Local::new(n_ops);
    let mut recorders: Vec<Recorder> = (0..n_ops).map(|_| Recorder::new()).collect();
    let take = |local: Local, recorders: &mut [Recorder]| Flushed {
        local,
        latencies: recorders.iter_mut().map(Recorder::take).collect(),
    };
    let mut tick = 0u64;
    let deadline = match bound {
        Bound::Duration(d) => Some(start + d),
        Bound::PerClient(_) => None,
    };
    let limit = match bound {
        Bound::PerClient(n) => n,
        Bound::Duration(_) => u64::MAX,
    };
    let mut due_s = schedule.as_ref().map(|s| s.offset_s).unwrap_or(0.0);
    let mut seq = 0u64;
    let mut now = Instant::now();
    while seq < limit && !stop.load(Ordering::Relaxed) {
        let t0 = match schedule.as_mut() {
            None => match worker.pause() {
                None => now,
                Some(d) => {
                    pause(now + d, deadline, stop);
                    now = Instant::now();
                    now
                }
            },
            Some(s) => {
                let due = start + Duration::from_secs_f64(due_s);
                due_s += s.next_gap();
                if deadline.is_some_and(|d| due >= d) {
                    break;
                }
                now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                    now = Instant::now();
                } else if now - due > DROP_AFTER {
                    local.dropped += 1;
                    seq += 1;
                    continue;
                }
                if now.saturating_duration_since(due) > LATE_AFTER {
                    local.late += 1;
                }
                due
            }
        };
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        let (op, res) = worker.op(seq);
        now = Instant::now();
        let cur = now.duration_since(start).as_secs();
        if cur != tick {
            let full = std::mem::replace(&mut local, Local::new(n_ops));
            let _ = tx.send(Msg::Flush {
                worker: slot,
                tick,
                next_tick: cur,
                stats: take(full, &mut recorders),
                done: false,
            });
            tick = cur;
        }
        let op = op.min(n_ops.saturating_sub(1));
        match res {
            Ok(rows) => {
                recorders[op].record(metrics::micros(now.saturating_duration_since(t0)));
                local.ops[op] += 1;
                local.rows += rows;
            }
            Err(e) => {
                let entry = local
                    .errors
                    .entry((op, e.kind))
                    .or_insert_with(|| (0, e.message.clone()));
                entry.0 += 1;
            }
        }
        seq += 1;
    }
    let _ = tx.send(Msg::Flush {
        worker: slot,
        tick,
        next_tick: tick,
        stats: take(local, &mut recorders),
        done: true,
    });
}

/// Merge flushed worker stats into ticks and emit each tick once no running client can add to it.
/// Connects reported while running (`Clock::FirstConnect`) go into `tally`.
#[allow(clippy::too_many_arguments)]
fn collect(
    spec: &RunSpec,
    op_names: &[String],
    clients: usize,
    start: Instant,
    rx: &mpsc::Receiver<Msg>,
    stop: &AtomicBool,
    on_interval: &mut impl FnMut(&IntervalRecord),
    tally: &mut ConnectTally,
) -> RunOutcome {
    let n_ops = op_names.len();
    let mut t = Totals {
        per_op: (0..n_ops).map(|_| metrics::new_hist()).collect(),
        all: metrics::new_hist(),
        ops: 0,
        rows: 0,
        late: 0,
        dropped: 0,
        intervals: Vec::new(),
    };
    let mut pending: BTreeMap<u64, TickAgg> = BTreeMap::new();
    // Per client: the highest tick it will never add to again (None: none sealed yet).
    let mut sealed: Vec<Option<u64>> = vec![None; clients];
    let mut done = vec![false; clients];
    let mut next_emit = 0u64;
    let mut errors: BTreeMap<(usize, &'static str), (u64, String)> = BTreeMap::new();
    let mut last_end = start;
    let mut ops_all = 0u64;

    while done.iter().any(|d| !d) {
        let (worker, tick, next_tick, stats, is_done) = match rx.recv() {
            Ok(Msg::Flush {
                worker,
                tick,
                next_tick,
                stats,
                done,
            }) => (worker, tick, next_tick, stats, done),
            Ok(Msg::Ready { took }) => {
                tally.ready(took);
                continue;
            }
            Ok(Msg::ConnectFailed { client, error }) => {
                tally.failed(client, error);
                continue;
            }
            Err(_) => break, // every client thread is gone
        };
        let agg = pending.entry(tick).or_insert_with(|| TickAgg::new(n_ops));
        let Flushed {
            local: stats,
            latencies,
        } = stats;
        for (i, lat) in latencies.iter().enumerate().take(n_ops) {
            lat.add_to(&mut agg.hists[i]);
            agg.ops[i] += stats.ops[i];
            ops_all += stats.ops[i];
        }
        agg.rows += stats.rows;
        agg.late += stats.late;
        agg.dropped += stats.dropped;
        for ((op, kind), (count, msg)) in stats.errors {
            agg.errors += count;
            if tick >= spec.warmup_s {
                errors.entry((op, kind)).or_insert((0, msg)).0 += count;
            }
        }
        if is_done {
            done[worker] = true;
            last_end = Instant::now();
        } else {
            sealed[worker] = Some(next_tick.saturating_sub(1));
        }
        let horizon: Option<u64> = (0..clients)
            .filter(|w| !done[*w])
            .map(|w| sealed[w])
            .collect::<Option<Vec<u64>>>()
            .and_then(|v| v.into_iter().min());
        if let Some(h) = horizon {
            while next_emit <= h {
                emit(
                    next_emit,
                    &mut pending,
                    spec.warmup_s,
                    op_names,
                    &mut t,
                    f64::INFINITY,
                    on_interval,
                );
                next_emit += 1;
            }
        }
    }
    let last = pending.keys().next_back().copied();
    let end_s = last_end.saturating_duration_since(start).as_secs_f64();
    if let Some(last) = last {
        while next_emit <= last {
            emit(
                next_emit,
                &mut pending,
                spec.warmup_s,
                op_names,
                &mut t,
                end_s,
                on_interval,
            );
            next_emit += 1;
        }
    }
    let measure_start = start + Duration::from_secs(spec.warmup_s);
    let errors = errors
        .into_iter()
        .map(|((op, kind), (count, first_message))| ErrorCount {
            op: op_names.get(op).cloned().unwrap_or_default(),
            kind: kind.to_string(),
            count,
            first_message,
        })
        .collect();
    RunOutcome {
        op_names: op_names.to_vec(),
        ops: t.ops,
        ops_all,
        rows: t.rows,
        errors,
        per_op: t.per_op,
        all: t.all,
        measured_s: last_end
            .saturating_duration_since(measure_start)
            .as_secs_f64(),
        intervals: t.intervals,
        interrupted: stop.load(Ordering::Relaxed),
        process_cpu_s: 0.0,
        late: t.late,
        dropped: t.dropped,
        connect: tally.outcome(),
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
    intervals: Vec<IntervalRecord>,
}

impl TickAgg {
    fn new(n_ops: usize) -> Self {
        TickAgg {
            hists: (0..n_ops).map(|_| metrics::new_hist()).collect(),
            ops: vec![0; n_ops],
            rows: 0,
            errors: 0,
            late: 0,
            dropped: 0,
        }
    }
}

/// Finish tick `tick`: summarize it, add it to the totals unless it is warm-up, report it.
/// `end_s` is when the run ended (seconds after start), which shortens the last tick.
fn emit(
    tick: u64,
    pending: &mut BTreeMap<u64, TickAgg>,
    warmup_s: u64,
    op_names: &[String],
    t: &mut Totals,
    end_s: f64,
    on_interval: &mut impl FnMut(&IntervalRecord),
) {
    let n_ops = op_names.len();
    let agg = pending.remove(&tick).unwrap_or_else(|| TickAgg::new(n_ops));
    let warmup = tick < warmup_s;
    let mut tick_all = metrics::new_hist();
    let mut per = Vec::with_capacity(n_ops);
    for (i, name) in op_names.iter().enumerate() {
        metrics::merge(&mut tick_all, &agg.hists[i]);
        if !warmup {
            metrics::merge(&mut t.per_op[i], &agg.hists[i]);
        }
        per.push(OpInterval {
            op: name.clone(),
            ops: agg.ops[i],
            latency_us: Latency::of(&agg.hists[i]),
            hist: (!agg.hists[i].is_empty()).then(|| metrics::encode(&agg.hists[i])),
        });
    }
    let tick_ops: u64 = agg.ops.iter().sum();
    if !warmup {
        metrics::merge(&mut t.all, &tick_all);
        t.ops += tick_ops;
        t.rows += agg.rows;
        t.late += agg.late;
        t.dropped += agg.dropped;
    }
    let t_s = ((tick + 1) as f64).min(end_s.max(tick as f64 + 0.001));
    let rec = IntervalRecord {
        tick,
        t_s,
        warmup,
        ops: tick_ops,
        ops_per_s: tick_ops as f64 / (t_s - tick as f64),
        rows: agg.rows,
        errors: agg.errors,
        late: agg.late,
        dropped: agg.dropped,
        latency_us: Latency::of(&tick_all),
        per_op: per,
        level: None,
    };
    on_interval(&rec);
    t.intervals.push(rec);
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sleepy {
        us: u64,
    }

    impl Worker for Sleepy {
        fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>) {
            std::thread::sleep(Duration::from_micros(self.us));
            if seq % 10 == 9 {
                (1, Err(EngineError::new("busy", "pretend busy")))
            } else {
                ((seq % 2) as usize, Ok(1))
            }
        }
    }

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn counted_run_totals_add_up() {
        let spec = counted(4, 100);
        let stop = AtomicBool::new(false);
        let mut seen = 0;
        let out = run_closed(
            &spec,
            &names(),
            |_| Ok(Box::new(Sleepy { us: 50 }) as Box<dyn Worker>),
            &stop,
            |_| seen += 1,
        )
        .expect("run");
        // 10% of ops fail by construction
        assert_eq!(out.ops, 360);
        assert_eq!(out.rows, 360);
        assert_eq!(out.errors.len(), 1);
        assert_eq!(out.errors[0].count, 40);
        assert_eq!(out.errors[0].kind, "busy");
        assert_eq!(out.per_op[0].len() + out.per_op[1].len(), 360);
        let interval_ops: u64 = out.intervals.iter().map(|i| i.ops).sum();
        assert_eq!(interval_ops, 360);
        assert_eq!(seen, out.intervals.len());
        assert!(out.all.min() >= 50);
    }

    #[test]
    fn timed_run_ticks_every_second_and_excludes_warmup() {
        let spec = RunSpec {
            warmup_s: 1,
            ..timed(2, Duration::from_millis(2500))
        };
        let stop = AtomicBool::new(false);
        let out = run_closed(
            &spec,
            &names(),
            |_| Ok(Box::new(Sleepy { us: 1000 }) as Box<dyn Worker>),
            &stop,
            |_| {},
        )
        .expect("run");
        let ticks: Vec<u64> = out.intervals.iter().map(|i| i.tick).collect();
        assert_eq!(ticks, vec![0, 1, 2]);
        assert!(out.intervals[0].warmup && !out.intervals[1].warmup);
        let counted: u64 = out
            .intervals
            .iter()
            .filter(|i| !i.warmup)
            .map(|i| i.ops)
            .sum();
        assert_eq!(out.ops, counted);
        assert!((1.3..2.0).contains(&out.measured_s), "{}", out.measured_s);
        // The CPU is read over the whole run, so its denominator counts warm-up too.
        let all: u64 = out.intervals.iter().map(|i| i.ops).sum();
        assert_eq!(out.ops_all, all);
        assert!(out.ops_all > out.ops);
        // Each second's histogram is written whole: the measured seconds' decoded
        // histograms add up to the run's, every count in place (what a merge of shards adds).
        let mut kind0 = metrics::new_hist();
        let mut every = metrics::new_hist();
        for i in out.intervals.iter().filter(|i| !i.warmup) {
            for (k, op) in i.per_op.iter().enumerate() {
                let text = op.hist.as_deref().expect("a histogram each second");
                let h = metrics::decode(text).expect("decodes");
                assert_eq!(h.len(), op.ops);
                if k == 0 {
                    metrics::merge(&mut kind0, &h);
                }
                metrics::merge(&mut every, &h);
            }
        }
        assert_eq!(kind0, out.per_op[0]);
        assert_eq!(every, out.all);
        assert_eq!(Latency::of(&every), Latency::of(&out.all));
    }

    /// A worker whose connect takes `connect_ms` and whose operations take 1 ms, recording
    /// when each operation ran.
    struct Timed<'a> {
        client: usize,
        log: &'a Mutex<Vec<(usize, Instant)>>,
    }

    impl Worker for Timed<'_> {
        fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
            self.log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((self.client, Instant::now()));
            std::thread::sleep(Duration::from_millis(1));
            (0, Ok(1))
        }
    }

    fn counted(clients: usize, per_client: u64) -> RunSpec {
        RunSpec {
            clients,
            bound: Bound::PerClient(per_client),
            warmup_s: 0,
            pacing: Pacing::Closed,
            seed: 1,
            team: None,
        }
    }

    /// Closed loop for `d`.
    fn timed(clients: usize, d: Duration) -> RunSpec {
        RunSpec {
            bound: Bound::Duration(d),
            ..counted(clients, 0)
        }
    }

    /// Open loop at `rate_per_s` in all for `d`.
    fn open_loop(clients: usize, d: Duration, rate_per_s: f64, poisson: bool) -> RunSpec {
        RunSpec {
            pacing: Pacing::Open {
                rate_per_s,
                poisson,
            },
            ..timed(clients, d)
        }
    }

    #[test]
    fn connect_failure_is_reported() {
        let stop = AtomicBool::new(false);
        let r = run_closed(
            &counted(3, 5),
            &names(),
            |i| {
                if i == 1 {
                    Err(EngineError::new("connect", "refused"))
                } else {
                    Ok(Box::new(Sleepy { us: 10 }) as Box<dyn Worker>)
                }
            },
            &stop,
            |_| {},
        );
        match r {
            Err(RunError::Connect(c)) => {
                assert_eq!((c.clients, c.connected, c.failed()), (3, 2, 1));
                assert_eq!(c.failures[0].first_client, 1);
                assert_eq!(c.failures[0].first_message, "refused");
            }
            _ => panic!("expected a connect error"),
        }
    }

    #[test]
    fn every_client_is_waited_for_and_failures_are_counted_by_kind() {
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        let r = run_closed(
            &counted(10, 1),
            &names(),
            |i| match i {
                2 | 5 | 7 => Err(EngineError::new("too_many_connections", "too many")),
                8 => Err(EngineError::new("connection", "reset")),
                9 => {
                    std::thread::sleep(Duration::from_millis(300));
                    Ok(Box::new(Sleepy { us: 10 }) as Box<dyn Worker>)
                }
                _ => Ok(Box::new(Sleepy { us: 10 }) as Box<dyn Worker>),
            },
            &stop,
            |_| {},
        );
        let Err(RunError::Connect(c)) = r else {
            panic!("expected a connect error")
        };
        // the slow client was waited for, not abandoned at the first failure
        assert!(t.elapsed() >= Duration::from_millis(300));
        assert_eq!((c.connected, c.failed()), (6, 4));
        let kinds: Vec<(&str, u64)> = c
            .failures
            .iter()
            .map(|f| (f.kind.as_str(), f.count))
            .collect();
        assert_eq!(kinds, vec![("connection", 1), ("too_many_connections", 3)]);
        assert!([2, 5, 7].contains(&c.failures[1].first_client));
        let msg = RunError::Connect(c).to_string();
        assert!(
            msg.starts_with("4 of 10 clients could not connect: connection 1 (first: client 8, reset); too_many_connections 3 (first: client "),
            "{msg}"
        );
        assert!(msg.contains("6 connected in 0."), "{msg}");
    }

    #[test]
    fn connects_are_timed_apart_from_the_operations() {
        let stop = AtomicBool::new(false);
        let out = run_closed(
            &counted(4, 3),
            &names(),
            |i| {
                std::thread::sleep(Duration::from_millis(50 + 50 * i as u64));
                Ok(Box::new(Sleepy { us: 10 }) as Box<dyn Worker>)
            },
            &stop,
            |_| {},
        )
        .expect("run");
        let c = &out.connect;
        assert_eq!((c.clients, c.connected, c.failed()), (4, 4, 0));
        let l = c.latency_us.expect("connect latency");
        assert!(
            (200_000..400_000).contains(&l.max) && l.p50 >= 50_000,
            "{l:?}"
        );
        assert!((0.2..0.5).contains(&c.all_s), "{}", c.all_s);
        assert!((c.per_s - 4.0 / c.all_s).abs() < 1e-9);
        // the clock started once all were connected: 3 short operations each
        assert!(out.measured_s < 0.15, "{}", out.measured_s);
        assert_eq!(out.ops, 12);
    }

    #[test]
    fn first_connect_clock_counts_connecting_and_does_not_wait_for_the_others() {
        let stop = AtomicBool::new(false);
        let log = Mutex::new(Vec::new());
        let ready = Mutex::new(vec![None; 2]);
        let out = run_clocked(
            &counted(2, 2),
            Clock::FirstConnect,
            &names(),
            |i| {
                if i == 1 {
                    std::thread::sleep(Duration::from_millis(300));
                }
                ready.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(Instant::now());
                Ok(Box::new(Timed {
                    client: i,
                    log: &log,
                }) as Box<dyn Worker>)
            },
            &stop,
            |_| {},
        )
        .expect("run");
        assert_eq!(out.ops, 4);
        assert!((0.3..0.6).contains(&out.measured_s), "{}", out.measured_s);
        assert!((0.3..0.6).contains(&out.connect.all_s));
        let slow_ready = ready.lock().unwrap()[1].expect("client 1 connected");
        let log = log.lock().unwrap();
        let first_of_0 = log.iter().find(|(c, _)| *c == 0).expect("client 0 ran").1;
        assert!(first_of_0 < slow_ready, "client 0 waited for client 1");
    }

    #[test]
    fn first_connect_clock_fails_with_the_failures_after_the_others_ran() {
        let stop = AtomicBool::new(false);
        let r = run_clocked(
            &counted(3, 2),
            Clock::FirstConnect,
            &names(),
            |i| {
                if i == 2 {
                    Err(EngineError::new("too_many_connections", "too many"))
                } else {
                    Ok(Box::new(Sleepy { us: 10 }) as Box<dyn Worker>)
                }
            },
            &stop,
            |_| {},
        );
        let Err(RunError::Connect(c)) = r else {
            panic!("expected a connect error")
        };
        assert_eq!((c.connected, c.failed()), (2, 1));
    }

    #[test]
    fn stop_flag_interrupts() {
        let spec = timed(2, Duration::from_secs(60));
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        let out = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::Relaxed);
            });
            run_closed(
                &spec,
                &names(),
                |_| Ok(Box::new(Sleepy { us: 100 }) as Box<dyn Worker>),
                &stop,
                |_| {},
            )
        })
        .expect("run");
        assert!(out.interrupted);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn open_loop_counts_queueing_behind_a_slow_engine() {
        // One client, 2 ms per operation, asked for 1000 a second: it can do about 500, so
        // operations queue, latency from the schedule grows, and the backlog gets dropped.
        let spec = open_loop(1, Duration::from_millis(2500), 1000.0, false);
        let stop = AtomicBool::new(false);
        let out = run_closed(
            &spec,
            &names(),
            |_| Ok(Box::new(Sleepy { us: 2000 }) as Box<dyn Worker>),
            &stop,
            |_| {},
        )
        .expect("run");
        let rate =
            (out.ops + out.errors.iter().map(|e| e.count).sum::<u64>()) as f64 / out.measured_s;
        assert!(rate < 600.0, "a 2 ms engine cannot do {rate}/s");
        let l = Latency::of(&out.all).expect("latency");
        assert!(l.p99 > 500_000, "queueing must show in latency: {l:?}");
        assert!(
            out.late > 0 && out.dropped > 0,
            "late {} dropped {}",
            out.late,
            out.dropped
        );
    }

    #[test]
    fn open_loop_holds_a_sustainable_rate() {
        let spec = RunSpec {
            seed: 3,
            ..open_loop(2, Duration::from_secs(2), 200.0, true)
        };
        let stop = AtomicBool::new(false);
        let out = run_closed(
            &spec,
            &names(),
            |_| Ok(Box::new(Sleepy { us: 500 }) as Box<dyn Worker>),
            &stop,
            |_| {},
        )
        .expect("run");
        let done = out.ops + out.errors.iter().map(|e| e.count).sum::<u64>();
        assert!(
            (330..=470).contains(&done),
            "about 400 operations in 2 s at 200/s, got {done}"
        );
        assert_eq!(out.dropped, 0);
        let l = Latency::of(&out.all).expect("latency");
        assert!(l.p50 < 5_000, "no queue at a sustainable rate: {l:?}");
    }

    /// Meets at once, counting its meetings.
    struct Alone(std::sync::atomic::AtomicU32);

    impl crate::shard::Meet for Alone {
        fn meet(
            &self,
            _point: &str,
            _stop: &AtomicBool,
        ) -> Result<Instant, crate::shard::BarrierError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(Instant::now() + Duration::from_millis(50))
        }
    }

    #[test]
    fn a_shard_runs_its_own_clients_by_their_ids_at_its_share_of_the_rate() {
        let meets = std::sync::Arc::new(Alone(Default::default()));
        let shard = crate::shard::Shard::new(1, 4).unwrap();
        let spec = RunSpec {
            team: Some(crate::shard::Team::new(shard, meets.clone(), "s".into())),
            ..open_loop(8, Duration::from_secs(2), 800.0, false)
        };
        let stop = AtomicBool::new(false);
        let made = Mutex::new(Vec::new());
        let out = run_closed(
            &spec,
            &names(),
            |i| {
                made.lock().unwrap().push(i);
                Ok(Box::new(Sleepy { us: 100 }) as Box<dyn Worker>)
            },
            &stop,
            |_| {},
        )
        .expect("run");
        let mut made = made.into_inner().unwrap();
        made.sort();
        assert_eq!(made, [1, 5], "clients 1 and 5 of 8, by their ids");
        assert_eq!(
            meets.0.load(Ordering::Relaxed),
            1,
            "one meeting before the clock"
        );
        // a quarter of 800/s for 2 s
        assert!((360..=440).contains(&out.ops), "{}", out.ops);
        assert_eq!(out.connect.clients, 2);
    }
}
