//! What a long step keeps (resource assertions at a short scale: bytes held per second of a
//! run, never a time): what a run hands back does not grow with its length (its seconds go
//! to the file as they close, and none stays in memory), the runner's memory does not grow
//! while a client is stuck in an operation, `dbduel merge` holds no histogram per second, and
//! a run killed mid-step keeps on disk the per-second records of the seconds it had finished.
//!
//! Memory is counted by this binary's own allocator (bytes asked for and not yet given
//! back, so a histogram counts whole whether or not its pages were touched); its tests take
//! turns, since the count is the whole process's.

mod common;

use dbduel::engine;
use dbduel::metrics;
use dbduel::results::shard_merge::merge_intervals;
use dbduel::results::{IntervalRecord, OpInterval};
use dbduel::runner::{self, Bound, Pacing, RunSpec, Worker};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts the bytes held, and the most held since the last [`reset_peak`].
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(size: usize) {
    let now = HELD.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One memory test at a time.
static TURN: Mutex<()> = Mutex::new(());

/// The most bytes held while `f` ran, above what was held before it.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

const KIB: usize = 1024;

/// A closed-loop run of `clients` clients for `secs` seconds, and its two op kinds' names.
fn closed_run(clients: usize, secs: u64) -> (RunSpec, Vec<String>) {
    let spec = RunSpec {
        clients,
        bound: Bound::Duration(Duration::from_secs(secs)),
        warmup_s: 0,
        pacing: Pacing::Closed,
        seed: 1,
        team: None,
        threads: None,
    };
    (spec, vec!["a".to_string(), "b".to_string()])
}

/// Client 0 is stuck in its third operation for `stuck`; the others run 1 ms operations of
/// two kinds.
struct Stuck {
    client: usize,
    stuck: Duration,
}

impl Worker for Stuck {
    fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>) {
        if self.client == 0 && seq == 2 {
            std::thread::sleep(self.stuck);
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        ((seq % 2) as usize, Ok(1))
    }
}

/// The most bytes the runner held over a run in which one of three clients is stuck for
/// `stuck_s` seconds (the run lasts one second more).
fn runner_peak_with_a_stuck_client(stuck_s: u64) -> usize {
    let (spec, names) = closed_run(3, stuck_s + 1);
    let stop = AtomicBool::new(false);
    let stuck = Duration::from_secs(stuck_s);
    let (out, peak) = peak_during(|| {
        runner::run_closed(
            &spec,
            &names,
            |client| Ok(Box::new(Stuck { client, stuck }) as Box<dyn Worker>),
            &stop,
            |_| {},
        )
        .expect("run")
    });
    assert!(
        out.all.max() >= stuck_s * 1_000_000,
        "the stuck operation counted"
    );
    peak
}

#[test]
fn a_stuck_client_does_not_make_the_runner_hold_more_per_second() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let short = runner_peak_with_a_stuck_client(4);
    let long = runner_peak_with_a_stuck_client(12);
    // Eight more seconds stuck may cost a few records and, at most, the last of the few
    // seconds open at once — not a second's histograms for each second (two op kinds: 2 ×
    // 184 KiB a second before).
    let per_s = long.saturating_sub(short) / 8;
    eprintln!("runner, one client stuck: peak {short} B over 4 s, {long} B over 12 s");
    assert!(
        per_s < 128 * KIB,
        "{per_s} more bytes held per second stuck (peak {short} B stuck 4 s, {long} B stuck 12 s)"
    );
}

/// Two clients running 1 ms operations of two kinds for `secs` seconds: the bytes the run's
/// outcome holds once it is handed back, and the seconds it emitted.
fn held_after_a_run_of(secs: u64) -> (usize, u64) {
    let (spec, names) = closed_run(2, secs);
    let stop = AtomicBool::new(false);
    let mut emitted = 0;
    let out = runner::run_closed(
        &spec,
        &names,
        |client| {
            Ok(Box::new(Stuck {
                client: client + 1, // never stuck
                stuck: Duration::ZERO,
            }) as Box<dyn Worker>)
        },
        &stop,
        |_| emitted += 1,
    )
    .expect("run");
    assert_eq!(out.seconds.count, emitted);
    // What dropping the outcome frees is what it held: a lazily made global or a buffer the
    // test harness grew meanwhile is not counted (a clean-clone run once saw 512 B of such
    // noise between a 2 s and a 10 s run, read as 64 B a second).
    let with = HELD.load(Ordering::Relaxed);
    drop(out);
    (with.saturating_sub(HELD.load(Ordering::Relaxed)), emitted)
}

#[test]
fn what_a_run_hands_back_does_not_grow_with_its_length() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let (short, short_s) = held_after_a_run_of(2);
    let (long, long_s) = held_after_a_run_of(10);
    // Each second's record (a few hundred bytes with its op kinds, before) went to the
    // per-second file as it closed; the outcome keeps its totals: an hour holds what a
    // minute does.
    let per_s = long.saturating_sub(short) / (long_s - short_s).max(1) as usize;
    eprintln!("outcome: {short} B after {short_s} s, {long} B after {long_s} s");
    assert!(long_s >= short_s + 7, "{short_s} and {long_s} seconds");
    assert!(
        per_s < 32,
        "{per_s} more bytes held per second of run ({short} B after {short_s} s, {long} B after {long_s} s)"
    );
}

/// `n` seconds of one shard: two op kinds, each second's latencies spread so each
/// histogram is a real one.
fn shard_seconds(n: u64, shard: u64) -> Vec<IntervalRecord> {
    (0..n)
        .map(|tick| {
            let per_op: Vec<OpInterval> = ["new_order", "payment"]
                .iter()
                .enumerate()
                .map(|(k, op)| {
                    let mut h = metrics::new_hist();
                    for j in 0..50u64 {
                        h.saturating_record(
                            100 + (tick * 37 + j * 101 + shard * 7 + k as u64) % 90_000,
                        );
                    }
                    OpInterval {
                        op: op.to_string(),
                        ops: h.len(),
                        latency_us: metrics::Latency::of(&h),
                        hist: Some(metrics::encode(&h)),
                    }
                })
                .collect();
            IntervalRecord {
                tick,
                t_s: tick as f64 + 1.0,
                warmup: false,
                ops: 100,
                ops_per_s: 100.0,
                rows: 100,
                errors: 0,
                late: 0,
                dropped: 0,
                latency_us: None,
                per_op,
                level: None,
                ..Default::default()
            }
        })
        .collect()
}

/// The most bytes `merge_intervals` held beyond its input and its result, for two shards
/// of `n` seconds.
fn merge_working_set(n: u64) -> usize {
    let shards = vec![shard_seconds(n, 0), shard_seconds(n, 1)];
    let before = HELD.load(Ordering::Relaxed);
    let (merged, peak) = peak_during(|| merge_intervals(&shards));
    let kept = HELD.load(Ordering::Relaxed).saturating_sub(before);
    assert_eq!(merged.len() as u64, n);
    assert_eq!(merged[0].ops, 200);
    peak.saturating_sub(kept)
}

#[test]
fn merging_shards_holds_no_histogram_per_second() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let short = merge_working_set(50);
    let long = merge_working_set(200);
    // 150 more seconds: the same few histograms at work, not 2 more per second (184 KiB
    // each) kept to the end.
    let per_s = long.saturating_sub(short) / 150;
    eprintln!("merge: {short} B at work for 50 s, {long} B for 200 s");
    assert!(
        per_s < 4 * KIB,
        "{per_s} more bytes held per merged second ({short} B for 50 s, {long} B for 200 s)"
    );
}

/// The run directory under `out` (the one directory there).
fn only_run_dir(out: &std::path::Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(out)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
}

#[test]
fn a_run_killed_mid_step_keeps_the_seconds_it_finished() {
    // Its polling allocates: the memory tests' counts are taken without it.
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let out = tempfile::tempdir().expect("tmp");
    let study = out.path().join("long.toml");
    std::fs::write(
        &study,
        "[study]\nname = \"long-step\"\ndescription = \"one long step on the dry engine\"\n\
         [dataset]\ngenerator = \"sbtest\"\nrows = 1000\n\
         [[contender]]\nname = \"dry\"\nengine = \"dry\"\noptions = { delay_us = 200 }\n\
         [[step]]\nname = \"long\"\nkind = \"oltp\"\nworkload = \"point_select\"\n\
         threads = 2\nduration_s = 60\n",
    )
    .expect("study");
    let runs = out.path().join("runs");
    let mut child = common::bin()
        .args([
            "run",
            study.to_str().unwrap(),
            "--out",
            runs.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn dbduel");
    // Wait for three finished seconds on disk (the step runs for a minute).
    let begun = Instant::now();
    let file = loop {
        let f = only_run_dir(&runs).map(|d| d.join("dry/long.intervals.ndjson"));
        let lines = f
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .map_or(0, |t| t.lines().count());
        if lines >= 3 {
            break f.expect("the file");
        }
        if begun.elapsed() > Duration::from_secs(45) || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no per-second records on disk after {:?} of a 60 s step",
                begun.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    // Every second finished before the kill is there, whole, in order, with its histograms.
    let text = std::fs::read_to_string(&file).expect("read");
    let seconds: Vec<IntervalRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(seconds.len() >= 3, "{} seconds", seconds.len());
    for (i, s) in seconds.iter().enumerate() {
        assert_eq!(s.tick, i as u64, "{text}");
        assert_eq!(
            s.level,
            Some(2),
            "a sweep's level is tagged as it was at the end"
        );
        assert!(
            s.ops > 0 && s.per_op.iter().any(|o| o.hist.is_some()),
            "{text}"
        );
    }
}
