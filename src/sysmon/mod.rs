//! System sampler: host CPU, memory and block-device I/O, plus the CPU, RSS
//! and storage I/O of the engine's process tree and of dbduel itself,
//! sampled once a second while a benchmark step runs.
//!
//! Samples are aligned to the ticks the benchmark runner uses: tick `k` is at
//! `start + k` seconds. The sampler thread sleeps until each absolute
//! deadline (so it never drifts), reads everything once, and turns the
//! difference from the previous reading into rates over the *measured*
//! interval. Tick 0 is a baseline reading and produces no sample.
//!
//! ```ignore
//! let start = std::time::Instant::now();
//! let me = std::process::id() as i32;
//! let sampler = Sampler::start(start, Targets { engine_pids: vec![me], self_pid: me });
//! // ... run the benchmark step ...
//! let samples = sampler.stop();
//! ```
//!
//! Sources: `/proc/stat`, `/proc/meminfo`, `/proc/diskstats` (whole devices
//! listed in `/sys/block`, without `loop*`, `ram*`, `zram*`), and one pass
//! over `/proc/*/stat` per tick for the process tree, plus `/proc/PID/io` for
//! the tree members. Reading errors never panic or stop sampling: a process
//! that vanished is left out, an unreadable value is `None`, and a tick whose
//! `/proc/stat` or `/proc/meminfo` cannot be read is skipped (the next sample
//! then spans the longer interval).
//!
//! Caveats worth knowing when reading the numbers:
//! * `rss_bytes` of a tree sums each member's RSS, so memory shared between
//!   members (PostgreSQL `shared_buffers`) counts once per process touching it.
//! * `cached_bytes` is `Cached` from `/proc/meminfo`, which includes shmem
//!   and tmpfs.
//! * Process I/O is `read_bytes` / `write_bytes` of `/proc/PID/io`: bytes the
//!   process caused to be fetched from / dirtied for storage, not syscall
//!   bytes. It is only readable for processes of the same user (or as root).

pub mod disk_meter;
mod facts;
mod host;
pub mod machine;
pub mod own;
mod procs;
mod sample;
#[cfg(test)]
mod tests;
pub mod watch;

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use facts::{FsInfo, HostFacts, clock_ticks_per_second, filesystem_of, host_facts, page_size};
pub use sample::{DeviceIo, HostCpu, HostMem, ProcUsage, SystemSample};

use host::{CpuSnap, DiskSnap};
use procs::{ProcTable, TreeDelta, TreeTracker};

/// Which processes to watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Targets {
    /// Root pids of the engine's process trees (e.g. the postmaster; every server of a
    /// topology or cluster), summed as one engine. For an embedded engine (SQLite) pass
    /// dbduel's own pid. Empty: no engine.
    pub engine_pids: Vec<i32>,
    /// dbduel's own pid (`std::process::id()`).
    pub self_pid: i32,
}

/// Stop flag shared with the sampler thread; the condvar wakes it early.
#[derive(Debug, Default)]
struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    /// New engine roots for the next tick (a restarted server's new processes).
    retarget: Mutex<Option<Vec<i32>>>,
}

impl Shared {
    fn take_retarget(&self) -> Option<Vec<i32>> {
        self.retarget
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn lock(&self) -> MutexGuard<'_, bool> {
        self.stop.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn request_stop(&self) {
        *self.lock() = true;
        self.wake.notify_all();
    }

    /// Sleeps until `deadline` (`None`: forever) or a stop request.
    /// Returns `true` if stopped.
    fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut stopped = self.lock();
        loop {
            if *stopped {
                return true;
            }
            match deadline {
                None => {
                    stopped = self.wake.wait(stopped).unwrap_or_else(|e| e.into_inner());
                }
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    stopped = self
                        .wake
                        .wait_timeout(stopped, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

/// Background sampler. Runs on its own thread and keeps its samples in its
/// own `Vec`, handed over by [`Sampler::stop`]. Dropping it without calling
/// `stop` stops the thread and discards the samples.
#[derive(Debug)]
pub struct Sampler {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<Vec<SystemSample>>>,
}

impl Sampler {
    /// Start sampling on a background thread; first sample at tick 1 (tick 0
    /// is the baseline reading, taken immediately). If `start` is already
    /// more than a second in the past, the first sample is at the next whole
    /// tick. A tick the thread wakes too late for (by a whole second or more)
    /// is skipped rather than sampled late under its number. If the thread
    /// cannot be spawned, `stop` returns no samples.
    pub fn start(start: Instant, targets: Targets) -> Sampler {
        Sampler::start_with(start, targets, |_| {})
    }

    /// [`Sampler::start`], handing each sample to `on_sample` (on the sampler's thread) as
    /// soon as it is taken: a step's samples written as they come, for live watchers.
    pub fn start_with(
        start: Instant,
        targets: Targets,
        on_sample: impl FnMut(&SystemSample) + Send + 'static,
    ) -> Sampler {
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("dbduel-sysmon".into())
            .spawn(move || run(start, targets, &thread_shared, on_sample))
            .ok();
        Sampler { shared, handle }
    }

    /// Watch these engine roots from the next tick on, in place of the ones given at the
    /// start: a server restarted during the step runs under new pids, whose work is still
    /// the engine's (not "other processes"), counted from their birth. A root given before
    /// keeps its tracking.
    pub fn retarget(&self, engine_pids: Vec<i32>) {
        *self
            .shared
            .retarget
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(engine_pids);
    }

    /// Stop (promptly: the thread is woken, not left to finish its sleep),
    /// join, and return all samples. Takes one final partial sample if the
    /// last reading was more than 0.2 s ago, with its `t_s` and rates over
    /// the real interval.
    pub fn stop(mut self) -> Vec<SystemSample> {
        self.shared.request_stop();
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.shared.request_stop();
            let _ = h.join();
        }
    }
}

/// Minimum age of the last reading for `stop` to take a partial sample.
const MIN_PARTIAL: Duration = Duration::from_millis(200);

/// The sampler thread's body.
fn run(
    start: Instant,
    targets: Targets,
    shared: &Shared,
    mut on_sample: impl FnMut(&SystemSample),
) -> Vec<SystemSample> {
    let mut col = Collector::new(targets);
    let mut samples = Vec::new();
    // Baseline (tick 0, or the current whole tick if `start` is old).
    let _ = col.sample(start, 0);
    let mut next_tick = start.elapsed().as_secs().saturating_add(1);
    loop {
        let deadline = start.checked_add(Duration::from_secs(next_tick));
        if shared.wait_until(deadline) {
            break;
        }
        // Normally equal to next_tick; larger if we woke a second or more
        // late (suspended, starved), in which case the missed ticks are gaps.
        let tick = start.elapsed().as_secs().max(next_tick);
        if let Some(pids) = shared.take_retarget() {
            col.retarget(pids);
        }
        if let Some(s) = col.sample(start, tick) {
            on_sample(&s);
            samples.push(s);
        }
        next_tick = tick.saturating_add(1);
    }
    let due = col
        .prev
        .as_ref()
        .is_none_or(|p| p.at.elapsed() > MIN_PARTIAL);
    if due && let Some(s) = col.sample(start, next_tick) {
        on_sample(&s);
        samples.push(s);
    }
    samples
}

/// One successful reading of all sources.
#[derive(Debug)]
struct Reading {
    at: Instant,
    /// When the process table was read (it can lag `at` on a loaded machine).
    procs_at: Instant,
    cpu: CpuSnap,
    disks: BTreeMap<String, DiskSnap>,
    table: ProcTable,
}

/// Reading state carried between ticks.
#[derive(Debug)]
struct Collector {
    targets: Targets,
    ticks_per_s: f64,
    page_bytes: u64,
    prev: Option<Reading>,
    /// One tracker per engine root.
    engine: Vec<TreeTracker>,
    me: TreeTracker,
}

impl Collector {
    fn new(targets: Targets) -> Collector {
        Collector {
            ticks_per_s: clock_ticks_per_second() as f64,
            page_bytes: page_size(),
            prev: None,
            engine: targets
                .engine_pids
                .iter()
                .map(|_| TreeTracker::default())
                .collect(),
            me: TreeTracker::default(),
            targets,
        }
    }

    /// Track `pids` as the engine's roots: a root tracked before keeps its tracker, a new
    /// one (a restarted server) is counted from its birth, all of which was in the step.
    fn retarget(&mut self, pids: Vec<i32>) {
        let mut old: Vec<(i32, TreeTracker)> = self
            .targets
            .engine_pids
            .drain(..)
            .zip(self.engine.drain(..))
            .collect();
        for &pid in &pids {
            let tracker = match old.iter().position(|(p, _)| *p == pid) {
                Some(i) => old.swap_remove(i).1,
                None => TreeTracker::from_birth(),
            };
            self.engine.push(tracker);
        }
        self.targets.engine_pids = pids;
    }

    /// Reads everything; returns a sample if there was a previous reading.
    /// If `/proc/stat` or `/proc/meminfo` is unreadable nothing is recorded,
    /// so the next sample spans from the last good reading.
    fn sample(&mut self, start: Instant, tick: u64) -> Option<SystemSample> {
        let at = Instant::now();
        let cpu = host::read_cpu().ok()?;
        let mem = host::read_mem().ok()?;
        let disks = host::read_disks();
        // Process CPU is a rate over the time between two process-table reads, which on a
        // machine busy with a thousand client threads can lag `at` by a good part of a second.
        let procs_at = Instant::now();
        let table = ProcTable::scan();

        let empty = ProcTable::default();
        let prev_table = self.prev.as_ref().map_or(&empty, |p| &p.table);
        let engine = self
            .targets
            .engine_pids
            .iter()
            .zip(self.engine.iter_mut())
            .filter_map(|(&pid, t)| t.update(pid, prev_table, &table, true))
            .reduce(procs::TreeDelta::plus);
        let me = self
            .me
            .update(self.targets.self_pid, prev_table, &table, false);

        let out = self.prev.as_ref().map(|p| {
            let interval_s = at.saturating_duration_since(p.at).as_secs_f64().max(1e-3);
            let procs_s = procs_at
                .saturating_duration_since(p.procs_at)
                .as_secs_f64()
                .max(1e-3);
            SystemSample {
                t_s: at.saturating_duration_since(start).as_secs_f64(),
                tick,
                cpu: host::cpu_pct(&p.cpu, &cpu),
                mem,
                devices: host::disk_rates(&p.disks, &disks, interval_s),
                engine: engine.map(|d| self.usage(&d, procs_s)),
                dbduel: me.map(|d| self.usage(&d, procs_s)).unwrap_or_default(),
            }
        });
        self.prev = Some(Reading {
            at,
            procs_at,
            cpu,
            disks,
            table,
        });
        out
    }

    fn usage(&self, d: &TreeDelta, interval_s: f64) -> ProcUsage {
        ProcUsage {
            pids: u32::try_from(d.pids.len()).unwrap_or(u32::MAX),
            cpu_pct: d.cpu_ticks as f64 / self.ticks_per_s / interval_s * 100.0,
            rss_bytes: d.rss_pages.saturating_mul(self.page_bytes),
            read_bytes_per_s: d.io.map(|io| io.read as f64 / interval_s),
            write_bytes_per_s: d.io.map(|io| io.write as f64 / interval_s),
        }
    }
}
