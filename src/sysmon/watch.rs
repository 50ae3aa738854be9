//! CPU of chosen process trees and of the host between two readings, for a step that watches
//! servers other than its contender's main one (a topology's replicas) at its own pace. The
//! per-second `Sampler` watches one engine tree on the runner's ticks; this reads on demand.

use super::host::{self, CpuSnap};
use super::procs::{ProcTable, TreeTracker};
use super::sample::HostCpu;
use std::collections::HashMap;
use std::time::Instant;

/// Usage since the previous reading.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuReading {
    /// Seconds since the previous reading.
    pub elapsed_s: f64,
    /// The host's CPU split over the interval, percent of all cores.
    pub host: HostCpu,
    /// Each watched root's process tree: CPU busy over the interval, in cores (1.0 = one core
    /// fully busy); `None` for a root that is not running.
    pub trees_cores: Vec<Option<f64>>,
}

/// Reads the CPU of process trees (roots by pid) and of the host; each `read` reports the
/// usage since the one before. Owned by one thread.
pub struct CpuWatch {
    table: ProcTable,
    trackers: HashMap<i32, TreeTracker>,
    host: Option<CpuSnap>,
    at: Instant,
}

impl CpuWatch {
    /// Take the baseline for `roots`.
    pub fn new(roots: &[i32]) -> CpuWatch {
        let mut w = CpuWatch {
            table: ProcTable::default(),
            trackers: HashMap::new(),
            host: None,
            at: Instant::now(),
        };
        w.read(roots);
        w
    }

    /// Usage of `roots` (in the order given) and of the host since the previous reading. A
    /// root first seen now is baselined and reads 0.
    pub fn read(&mut self, roots: &[i32]) -> CpuReading {
        let now = Instant::now();
        let elapsed_s = now.duration_since(self.at).as_secs_f64();
        self.at = now;
        let cur = ProcTable::scan();
        let ticks = super::clock_ticks_per_second().max(1) as f64;
        let trees_cores = roots
            .iter()
            .map(|&root| {
                let known = self.trackers.contains_key(&root);
                let tracker = self.trackers.entry(root).or_default();
                let prev = if known { &self.table } else { &cur };
                let d = tracker.update(root, prev, &cur, true)?;
                Some(if elapsed_s > 0.0 && known {
                    d.cpu_ticks as f64 / ticks / elapsed_s
                } else {
                    0.0
                })
            })
            .collect();
        self.table = cur;
        let snap = host::read_cpu().ok();
        let host = match (&self.host, &snap) {
            (Some(p), Some(c)) => host::cpu_pct(p, c),
            _ => HostCpu::default(),
        };
        if snap.is_some() {
            self.host = snap;
        }
        CpuReading {
            elapsed_s,
            host,
            trees_cores,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's own CPU time (the scheduler's clock, not `/proc`'s ticks), ns.
    fn thread_cpu_ns() -> u64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec for the call to fill.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        assert_eq!(rc, 0, "clock_gettime");
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    /// A spinning thread's CPU shows in its process tree's reading: at least what the
    /// thread's own CPU clock says it ran over the same interval (about one core on an idle
    /// machine, less on a busy one), and no more than the machine has (the tree also holds
    /// the other tests' threads and children).
    #[test]
    fn a_busy_thread_reads_as_about_one_core() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let me = std::process::id() as i32;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let ran_ns = std::sync::Arc::new(AtomicU64::new(0));
        let (s, ran) = (stop.clone(), ran_ns.clone());
        let spin = std::thread::spawn(move || {
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
                if x.is_multiple_of(65_536) {
                    ran.store(thread_cpu_ns(), Ordering::Relaxed);
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        let ran0 = ran_ns.load(Ordering::Relaxed);
        let mut w = CpuWatch::new(&[me, i32::MAX]);
        std::thread::sleep(std::time::Duration::from_millis(600));
        let r = w.read(&[me, i32::MAX]);
        let ran1 = ran_ns.load(Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        spin.join().expect("spinner");
        let spinner = (ran1 - ran0) as f64 / 1e9 / r.elapsed_s;
        let cores = r.trees_cores[0].expect("dbduel runs");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(spinner > 0.05, "the spinner ran {spinner} cores");
        assert!(
            cores >= spinner - 0.1 && cores <= cpus + 0.5,
            "{cores} cores read; the spinner alone ran {spinner}, the machine has {cpus}"
        );
        assert_eq!(r.trees_cores[1], None, "no such process");
        assert!(r.host.idle_pct < 100.0 && r.elapsed_s > 0.5);
    }
}
