//! The clients' side: one thread per client, held at a gate until released to connect and
//! again until the clock starts, then the closed or open loop, paced by its schedule, with
//! latency recorded into the thread's own recorders and flushed once per tick.

use super::msg::{Flushed, Local, Msg};
use super::spec::{Bound, DROP_AFTER, LATE_AFTER, Pacing, RunSpec, Worker};
use crate::dataset::rng::SplitMix64;
use crate::engine;
use crate::metrics::{self, Recorder};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// What every client thread of a run shares.
pub(super) struct Clients<'a, F> {
    pub spec: &'a RunSpec,
    pub n_ops: usize,
    /// Connects client `i` and makes its worker, on the client's own thread.
    pub make_worker: &'a F,
    /// Holds the threads until all exist, then releases them to connect.
    pub release: &'a Gate,
    /// Holds the connected clients until the clock starts.
    pub gate: &'a Gate,
    pub stop: &'a AtomicBool,
}

/// Start one thread per client of `ids` (by its id in the whole run; a thread's slot is its
/// place among them), each reporting on `tx` — or, with fewer `threads` in the spec than
/// clients, that many threads serving the clients between them (`group.rs`). The number of
/// threads started.
pub(super) fn spawn<'scope, 'w, F>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    ids: &[usize],
    clients: &'scope Clients<'scope, F>,
    tx: mpsc::Sender<Msg>,
) -> std::io::Result<usize>
where
    F: Fn(usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    if let Some(threads) = clients.spec.threads.filter(|&t| t > 0 && t < ids.len()) {
        for slot in 0..threads {
            // client k of the run to thread k mod threads
            let mine: Vec<usize> = ids.iter().copied().skip(slot).step_by(threads).collect();
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("clients-{slot}"))
                .stack_size(1 << 20)
                .spawn_scoped(scope, move || {
                    super::group::run_group(clients, slot, &mine, tx)
                })?;
        }
        return Ok(threads);
    }
    for (slot, &client) in ids.iter().enumerate() {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("client-{client}"))
            .stack_size(1 << 20)
            .spawn_scoped(scope, move || run_client(clients, slot, client, tx))?;
    }
    Ok(ids.len())
}

/// One client's thread: wait to be released, connect (timed here), wait for the clock, run.
/// A client that cannot connect says so and that it is done.
fn run_client<'w, F>(c: &Clients<'_, F>, slot: usize, client: usize, tx: mpsc::Sender<Msg>)
where
    F: Fn(usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    if c.release.wait().is_none() {
        return;
    }
    let Some(mut worker) = connect(c, client, &tx, |_| Ok(())) else {
        flush_nothing(slot, c.n_ops, &tx);
        return;
    };
    if let Some(start) = c.gate.wait() {
        let spec = c.spec;
        let schedule = Schedule::new(&spec.pacing, spec.clients.max(1), client, spec.seed);
        drive(
            slot,
            worker.as_mut(),
            spec.bound,
            start,
            schedule,
            c.n_ops,
            c.stop,
            &tx,
        );
    }
}

/// Connect client `client` (`make_worker`, timed), have `check` look at the worker, and
/// tell the collector how it went.
pub(super) fn connect<'w, F>(
    c: &Clients<'_, F>,
    client: usize,
    tx: &mpsc::Sender<Msg>,
    check: impl FnOnce(&mut dyn Worker) -> engine::Result<()>,
) -> Option<Box<dyn Worker + 'w>>
where
    F: Fn(usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    let began = Instant::now();
    let made = (c.make_worker)(client).and_then(|mut w| check(w.as_mut()).map(|()| w));
    let took = began.elapsed();
    match made {
        Ok(w) => {
            let _ = tx.send(Msg::Ready { took });
            Some(w)
        }
        Err(error) => {
            let _ = tx.send(Msg::ConnectFailed { client, error });
            None
        }
    }
}

/// A thread that will run nothing (its clients could not connect) is done.
pub(super) fn flush_nothing(slot: usize, n_ops: usize, tx: &mpsc::Sender<Msg>) {
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
}

/// Sleep until `until` (or the deadline, or a stop), waking every 50 ms to look at the stop
/// flag and to hand the collector a second that ended meanwhile: a client that waits (think
/// time, an open loop's schedule) reports its seconds on time, so none waits for it.
fn pause(until: Instant, deadline: Option<Instant>, stop: &AtomicBool, ticker: &mut Ticker) {
    let until = deadline.map_or(until, |d| until.min(d));
    loop {
        let now = Instant::now();
        ticker.roll(now);
        if now >= until || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// A client's current second: its counters and recorders, handed to the collector when the
/// second changes.
pub(super) struct Ticker<'a> {
    slot: usize,
    start: Instant,
    tick: u64,
    local: Local,
    recorders: Vec<Recorder>,
    tx: &'a mpsc::Sender<Msg>,
}

impl<'a> Ticker<'a> {
    /// Thread `slot`'s seconds from `start`, for `n_ops` op kinds.
    pub fn new(slot: usize, start: Instant, n_ops: usize, tx: &'a mpsc::Sender<Msg>) -> Self {
        Ticker {
            slot,
            start,
            tick: 0,
            local: Local::new(n_ops),
            recorders: (0..n_ops).map(|_| Recorder::new()).collect(),
            tx,
        }
    }

    /// At `now`: when a new second has begun, send the last one's stats.
    pub fn roll(&mut self, now: Instant) {
        let cur = now.saturating_duration_since(self.start).as_secs();
        if cur != self.tick {
            let stats = self.take();
            let _ = self.tx.send(Msg::Flush {
                worker: self.slot,
                tick: self.tick,
                next_tick: cur,
                stats,
                done: false,
            });
            self.tick = cur;
        }
    }

    /// The second's stats; the counters start again empty.
    fn take(&mut self) -> Flushed {
        let n_ops = self.recorders.len();
        Flushed {
            local: std::mem::replace(&mut self.local, Local::new(n_ops)),
            latencies: self.recorders.iter_mut().map(Recorder::take).collect(),
        }
    }

    /// An operation of kind `op` that ended: its latency `took` µs and rows, or its error.
    pub fn count(&mut self, op: usize, res: engine::Result<u64>, took_us: u64) {
        let op = op.min(self.recorders.len().saturating_sub(1));
        match res {
            Ok(rows) => {
                self.recorders[op].record(took_us);
                self.local.ops[op] += 1;
                self.local.rows += rows;
            }
            Err(e) => {
                let entry = self
                    .local
                    .errors
                    .entry((op, e.kind))
                    .or_insert_with(|| (0, e.message.clone()));
                entry.0 += 1;
            }
        }
    }

    /// The client is done: its last second's stats.
    pub fn finish(mut self) {
        let stats = self.take();
        let _ = self.tx.send(Msg::Flush {
            worker: self.slot,
            tick: self.tick,
            next_tick: self.tick,
            stats,
            done: true,
        });
    }
}

/// Holds clients until the start time is set (or the run is called off with `None`).
#[derive(Default)]
pub(super) struct Gate {
    state: Mutex<Option<Option<Instant>>>,
    cv: Condvar,
}

impl Gate {
    pub fn open(&self, start: Option<Instant>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *s = Some(start);
        self.cv.notify_all();
    }

    pub fn wait(&self) -> Option<Instant> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(start) = *s {
                return start;
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// When a client's next operation is due (open loop): operation n of the step is due when
/// the rate profile's count reaches n; this client takes every `clients`-th of them
/// (evenly spaced), or its own Poisson stream of `1/clients` of the rate.
struct Schedule {
    rate: super::rate::RateProfile,
    /// The next operation's place in the step's count.
    next_n: f64,
    /// Mean gap between this client's operations, in the step's count.
    gap_n: f64,
    /// The profile's stage the schedule is in.
    cursor: usize,
    poisson: Option<SplitMix64>,
}

impl Schedule {
    /// `None` for a closed loop.
    fn new(pacing: &Pacing, clients: usize, client: usize, seed: u64) -> Option<Schedule> {
        let Pacing::Open { rate, poisson } = pacing else {
            return None;
        };
        Some(Schedule {
            rate: rate.clone(),
            // Spread the clients over one gap.
            next_n: client as f64,
            gap_n: clients as f64,
            cursor: 0,
            poisson: poisson.then(|| SplitMix64::stream(seed, client as u64)),
        })
    }

    /// Seconds after the start the next operation is due (None: no more are), and the one
    /// after it drawn.
    fn next_due(&mut self) -> Option<f64> {
        let due = self.rate.time_of(self.next_n, &mut self.cursor);
        self.next_n += match &mut self.poisson {
            // exponential gaps: -ln(1-u) * mean
            Some(rng) => -(1.0 - rng.unit()).ln() * self.gap_n,
            None => self.gap_n,
        };
        due
    }

    /// How many more operations fall due before `end` after the start (drawing them).
    fn due_before(&mut self, end: Duration) -> u64 {
        let end_s = end.as_secs_f64();
        let mut n = 0;
        while self.next_due().is_some_and(|due| due < end_s) {
            n += 1;
        }
        n
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
    let mut t = Ticker::new(slot, start, n_ops, tx);
    let (deadline, limit) = (bound.deadline(start), bound.limit());
    let mut seq = 0u64;
    let mut now = Instant::now();
    while seq < limit && !stop.load(Ordering::Relaxed) {
        let t0 = match schedule.as_mut() {
            None => match worker.pause() {
                None => now,
                Some(d) => {
                    pause(now + d, deadline, stop, &mut t);
                    now = Instant::now();
                    now
                }
            },
            Some(s) => {
                let Some(due_s) = s.next_due() else { break };
                let due = start + Duration::from_secs_f64(due_s);
                if deadline.is_some_and(|d| due >= d) {
                    break;
                }
                now = Instant::now();
                if due > now {
                    pause(due, None, stop, &mut t);
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    now = Instant::now();
                } else if now - due > DROP_AFTER {
                    t.local.dropped += 1;
                    seq += 1;
                    continue;
                }
                if now.saturating_duration_since(due) > LATE_AFTER {
                    t.local.late += 1;
                }
                due
            }
        };
        if let Some(d) = deadline.filter(|&d| now >= d) {
            // An open loop's operations that fell due before the end but had not started by
            // it (this one and the queue behind it, each under DROP_AFTER late) are counted,
            // so that scheduled = run + dropped + unstarted.
            if let Some(s) = schedule.as_mut() {
                t.local.unstarted += 1 + s.due_before(d - start);
            }
            break;
        }
        let (op, res) = worker.op(seq);
        now = Instant::now();
        t.roll(now);
        t.count(op, res, metrics::micros(now.saturating_duration_since(t0)));
        seq += 1;
    }
    t.finish();
}
