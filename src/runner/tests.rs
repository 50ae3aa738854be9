//! The runner's tests: whole runs of pretend workers through `run_closed` and `run_clocked`,
//! checking the per-second records and totals (collect), the connects (connect), the clocks,
//! the open loop's pacing and the stop flag (drive), and a shard's share of the clients.

use super::*;
use crate::engine::EngineError;
use crate::metrics::{self, Latency};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

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
    let (mut seen, mut interval_ops) = (0, 0);
    let out = run_closed(
        &spec,
        &names(),
        |_| Ok(Box::new(Sleepy { us: 50 }) as Box<dyn Worker>),
        &stop,
        |iv| {
            seen += 1;
            interval_ops += iv.ops;
        },
    )
    .expect("run");
    // 10% of ops fail by construction
    assert_eq!(out.ops, 360);
    assert_eq!(out.rows, 360);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].count, 40);
    assert_eq!(out.errors[0].kind, "busy");
    assert_eq!(out.per_op[0].len() + out.per_op[1].len(), 360);
    assert_eq!(interval_ops, 360);
    assert_eq!(seen, out.seconds.count);
    assert!(out.all.min() >= 50);
}

#[test]
fn timed_run_ticks_every_second_and_excludes_warmup() {
    let spec = RunSpec {
        warmup_s: 1,
        ..timed(2, Duration::from_millis(2500))
    };
    let stop = AtomicBool::new(false);
    let mut seen: Vec<crate::results::IntervalRecord> = Vec::new();
    let out = run_closed(
        &spec,
        &names(),
        |_| Ok(Box::new(Sleepy { us: 1000 }) as Box<dyn Worker>),
        &stop,
        |iv| seen.push(iv.clone()),
    )
    .expect("run");
    let ticks: Vec<u64> = seen.iter().map(|i| i.tick).collect();
    assert_eq!(ticks, vec![0, 1, 2]);
    let kept = crate::runner::Seconds {
        count: 3,
        first: Some(0),
        last: Some(2),
    };
    assert_eq!(
        out.seconds, kept,
        "the run counts its seconds, keeping none"
    );
    assert!(seen[0].warmup && !seen[1].warmup);
    let counted: u64 = seen.iter().filter(|i| !i.warmup).map(|i| i.ops).sum();
    assert_eq!(out.ops, counted);
    assert!((1.3..2.0).contains(&out.measured_s), "{}", out.measured_s);
    // The CPU is read over the whole run, so its denominator counts warm-up too.
    let all: u64 = seen.iter().map(|i| i.ops).sum();
    assert_eq!(out.ops_all, all);
    assert!(out.ops_all > out.ops);
    // Each second's histogram is handed on whole (for the per-second file): the measured
    // seconds' decoded histograms add up to the run's, every count in place (what a merge
    // of shards adds).
    let mut kind0 = metrics::new_hist();
    let mut every = metrics::new_hist();
    for i in seen.iter().filter(|i| !i.warmup) {
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
        threads: None,
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
            rate: crate::runner::RateProfile::constant(rate_per_s),
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
    let rate = (out.ops + out.errors.iter().map(|e| e.count).sum::<u64>()) as f64 / out.measured_s;
    assert!(rate < 600.0, "a 2 ms engine cannot do {rate}/s");
    let l = Latency::of(&out.all).expect("latency");
    assert!(l.p99 > 500_000, "queueing must show in latency: {l:?}");
    assert!(
        out.late > 0 && out.dropped > 0,
        "late {} dropped {}",
        out.late,
        out.dropped
    );
    // Every scheduled operation is run, dropped, or still waiting at the end (the queue,
    // under a second's worth).
    let run = out.ops + out.errors.iter().map(|e| e.count).sum::<u64>();
    assert_eq!(
        run + out.dropped + out.unstarted,
        2500,
        "run {run} dropped {} unstarted {}",
        out.dropped,
        out.unstarted
    );
    assert!(
        (1..=1000).contains(&out.unstarted),
        "the queue at the end: {}",
        out.unstarted
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
    // No queue: at most each client's last operation, if it woke after the end.
    assert!(out.unstarted <= 2, "unstarted {}", out.unstarted);
    let l = Latency::of(&out.all).expect("latency");
    assert!(l.p50 < 5_000, "no queue at a sustainable rate: {l:?}");
}

#[test]
fn a_ramp_schedules_its_count_and_each_second_says_its_target() {
    // 0 -> 200/s over 1 s (100 operations), then 200/s flat for 1 s (200): 300 in all.
    let spec = RunSpec {
        pacing: Pacing::Open {
            rate: crate::runner::RateProfile::ramp(0.0, &[(200.0, 1.0), (200.0, 1.0)]),
            poisson: false,
        },
        ..timed(2, Duration::from_secs(2))
    };
    let stop = AtomicBool::new(false);
    let mut targets = Vec::new();
    let out = run_closed(
        &spec,
        &names(),
        |_| Ok(Box::new(Sleepy { us: 100 }) as Box<dyn Worker>),
        &stop,
        |iv| targets.push(iv.target_rate),
    )
    .expect("run");
    let done = out.ops + out.errors.iter().map(|e| e.count).sum::<u64>();
    assert!((295..=300).contains(&done), "300 scheduled, {done} done");
    assert_eq!(out.dropped, 0);
    // one woken after the end is not run but counted
    assert_eq!(
        done + out.unstarted,
        300,
        "{done} done, {} unstarted",
        out.unstarted
    );
    assert_eq!(
        targets.first().copied().flatten(),
        Some(100.0),
        "{targets:?}"
    );
    assert_eq!(
        targets.get(1).copied().flatten(),
        Some(200.0),
        "{targets:?}"
    );
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
        threads: None,
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

/// Client 0 is stuck in its sixth operation for `stuck`; the others run 1 ms operations.
/// When it comes back it notes how many seconds had been emitted meanwhile.
struct StuckOnce<'a> {
    client: usize,
    stuck: Duration,
    emitted: &'a std::sync::atomic::AtomicU64,
    seen_on_return: &'a Mutex<Option<u64>>,
}

impl Worker for StuckOnce<'_> {
    fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>) {
        if self.client == 0 && seq == 5 {
            std::thread::sleep(self.stuck);
            let n = self.emitted.load(Ordering::SeqCst);
            *self.seen_on_return.lock().unwrap() = Some(n);
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        (0, Ok(1))
    }
}

#[test]
fn a_client_stuck_in_an_operation_does_not_hold_the_others_seconds() {
    let emitted = std::sync::atomic::AtomicU64::new(0);
    let seen_on_return = Mutex::new(None);
    let stuck = Duration::from_secs(6);
    let stop = AtomicBool::new(false);
    let (mut ticks, mut in_seconds) = (Vec::new(), 0);
    let out = run_closed(
        &timed(3, Duration::from_secs(7)),
        &names(),
        |client| {
            Ok(Box::new(StuckOnce {
                client,
                stuck,
                emitted: &emitted,
                seen_on_return: &seen_on_return,
            }) as Box<dyn Worker>)
        },
        &stop,
        |iv| {
            ticks.push(iv.tick);
            in_seconds += iv.ops;
            emitted.fetch_add(1, Ordering::SeqCst);
        },
    )
    .expect("run");
    // While it was stuck the others' seconds were closed at most CLOSE_AFTER_S seconds
    // after they ended, not held for it: the seconds open at once do not grow with how long
    // a client is stuck.
    let seen = seen_on_return
        .lock()
        .unwrap()
        .expect("the stuck client came back");
    let open = stuck.as_secs() - seen;
    assert!(
        open <= collect::CLOSE_AFTER_S + 1,
        "{open} seconds were held open for the stuck client ({seen} emitted after {stuck:?})"
    );
    // Nothing lost or counted twice: every second once, in order, and every operation in
    // one of them; the stuck operation's latency counted.
    assert_eq!(ticks, (0..ticks.len() as u64).collect::<Vec<_>>());
    assert_eq!(in_seconds, out.ops_all);
    assert!(out.all.max() >= 6_000_000, "{}", out.all.max());
}

/// A client whose operation is one byte sent to a peer thread that echoes it back after
/// `echo_us`: overlapped, so several can share a thread. Records the threads it ran on.
struct Echo {
    sock: std::os::unix::net::UnixStream,
    threads: std::sync::Arc<Mutex<std::collections::HashSet<std::thread::ThreadId>>>,
    flight: std::sync::Arc<InFlight>,
}

/// How many echoes the clients of one run had outstanding at once, and the most ever: the
/// proof of overlap that does not depend on how fast the host is.
#[derive(Default)]
struct InFlight {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl Echo {
    fn new(
        echo_us: u64,
        threads: &std::sync::Arc<Mutex<std::collections::HashSet<std::thread::ThreadId>>>,
        flight: &std::sync::Arc<InFlight>,
    ) -> Echo {
        use std::io::{Read, Write};
        let (mine, mut peer) = std::os::unix::net::UnixStream::pair().expect("pair");
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            while peer.read_exact(&mut b).is_ok() {
                std::thread::sleep(Duration::from_micros(echo_us));
                if peer.write_all(&b).is_err() {
                    break;
                }
            }
        });
        mine.set_nonblocking(true).expect("nonblocking");
        Echo {
            sock: mine,
            threads: threads.clone(),
            flight: flight.clone(),
        }
    }
}

impl Worker for Echo {
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        (0, Err(EngineError::new("usage", "only overlapped")))
    }

    fn overlapped(&mut self) -> Option<&mut dyn Overlapped> {
        Some(self)
    }
}

impl Overlapped for Echo {
    fn fd(&mut self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.sock)
    }

    fn start(&mut self, seq: u64) -> (usize, engine::Result<()>) {
        use std::io::Write;
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        let r = (&self.sock)
            .write_all(&[seq as u8])
            .map_err(|e| EngineError::new("connection", e.to_string()));
        let now = self.flight.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.flight.most.fetch_max(now, Ordering::SeqCst);
        ((seq % 2) as usize, r)
    }

    fn finish(&mut self) -> Option<engine::Result<u64>> {
        use std::io::Read;
        let mut b = [0u8; 1];
        let r = match (&self.sock).read(&mut b) {
            Ok(1) => Some(Ok(1)),
            Ok(_) => Some(Err(EngineError::new("connection", "closed"))),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
            Err(e) => Some(Err(EngineError::new("connection", e.to_string()))),
        };
        if r.is_some() {
            self.flight.now.fetch_sub(1, Ordering::SeqCst);
        }
        r
    }
}

#[test]
fn clients_served_from_fewer_threads_each_run_their_own_count() {
    let threads = std::sync::Arc::new(Mutex::new(std::collections::HashSet::new()));
    let flight = std::sync::Arc::new(InFlight::default());
    let spec = RunSpec {
        threads: Some(2),
        ..counted(6, 50)
    };
    let stop = AtomicBool::new(false);
    let mut in_seconds = 0;
    let out = run_closed(
        &spec,
        &names(),
        |_| Ok(Box::new(Echo::new(200, &threads, &flight)) as Box<dyn Worker>),
        &stop,
        |iv| in_seconds += iv.ops,
    )
    .expect("run");
    assert_eq!(out.ops, 300, "{:?}", out.errors);
    assert_eq!(out.per_op[0].len() + out.per_op[1].len(), 300);
    assert_eq!(out.connect.clients, 6);
    // every operation waited for its echo
    assert!(out.all.min() >= 200, "{}", out.all.min());
    let used = threads.lock().unwrap().len();
    assert_eq!(used, 2, "six clients on two threads");
    assert_eq!(in_seconds, 300);
}

#[test]
fn clients_served_from_fewer_threads_stop_at_the_deadline() {
    let threads = std::sync::Arc::new(Mutex::new(std::collections::HashSet::new()));
    let flight = std::sync::Arc::new(InFlight::default());
    let spec = RunSpec {
        threads: Some(1),
        ..timed(3, Duration::from_millis(1500))
    };
    let stop = AtomicBool::new(false);
    let began = std::time::Instant::now();
    let out = run_closed(
        &spec,
        &names(),
        |_| Ok(Box::new(Echo::new(1000, &threads, &flight)) as Box<dyn Worker>),
        &stop,
        |_| {},
    )
    .expect("run");
    let took = began.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(out.ops > 0, "{:?}", out.errors);
    // One thread had all three clients' echoes outstanding at once: counted, not timed, so a
    // busy host cannot fail it (a throughput bound did, at 1,543 of 1,600).
    assert_eq!(flight.most.load(Ordering::SeqCst), 3);
    assert_eq!(
        flight.now.load(Ordering::SeqCst),
        0,
        "every echo was answered"
    );
    assert_eq!(threads.lock().unwrap().len(), 1);
}

#[test]
fn a_worker_that_cannot_share_a_thread_fails_its_connect_with_the_fix() {
    let spec = RunSpec {
        threads: Some(2),
        ..counted(4, 10)
    };
    let stop = AtomicBool::new(false);
    let r = run_closed(
        &spec,
        &names(),
        |_| Ok(Box::new(Sleepy { us: 10 }) as Box<dyn Worker>),
        &stop,
        |_| {},
    );
    let Err(RunError::Connect(c)) = r else {
        panic!("expected a connect failure");
    };
    assert_eq!(c.connected, 0, "{c:?}");
    assert_eq!(c.failures[0].count, 4, "{c:?}");
    assert!(
        c.failures[0].first_message.contains("remove `threads`"),
        "{c:?}"
    );
}
