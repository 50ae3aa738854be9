//! dbduel's own footprint over one step: its peak resident memory, read from the kernel's
//! high-water mark (reset at the step's start), and the CPU time it used.
//!
//! The per-second sampler sees dbduel's RSS only at its ticks and misses a short spike (a
//! thousand clients connecting in a 0.3 s step); `VmHWM` in `/proc/self/status` is the exact
//! peak, and writing `5` to `/proc/self/clear_refs` (Linux 4.0+) resets it to the current
//! RSS, so each step gets its own.

use serde::{Deserialize, Serialize};

/// What dbduel itself used during a step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OwnUse {
    /// Peak resident memory of dbduel's process during the step (for an embedded engine,
    /// its caches included), bytes.
    pub peak_rss_bytes: u64,
    /// CPU seconds (user + system) of dbduel's process over the step, all threads.
    pub cpu_s: f64,
}

/// Starts measuring at `begin`; `end` gives the step's figures.
pub struct OwnMeter {
    cpu_before: f64,
    /// Whether the high-water mark was reset; if not, the peak is the largest RSS seen
    /// (the start's and the end's) — a lower bound, not the process's lifetime peak.
    hwm_reset: bool,
    rss_before: u64,
}

impl OwnMeter {
    pub fn begin() -> Self {
        // Memory freed by earlier steps (an embedded engine's thousand connections) stays
        // in the allocator's arenas and in the RSS unless handed back; without this a
        // later contender's step would carry an earlier one's footprint.
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only returns free heap pages to the kernel.
        unsafe {
            libc::malloc_trim(0);
        }
        let hwm_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        OwnMeter {
            cpu_before: process_cpu_s(),
            hwm_reset,
            rss_before: status_kib("VmRSS:").unwrap_or(0) * 1024,
        }
    }

    /// dbduel's use since `begin`. `sampled_peak` is the largest RSS the sampler saw, used
    /// when the kernel's high-water mark could not be reset.
    pub fn end(&self, sampled_peak: u64) -> OwnUse {
        let now = status_kib("VmRSS:").unwrap_or(0) * 1024;
        let peak = match (self.hwm_reset, status_kib("VmHWM:")) {
            (true, Some(hwm)) => hwm * 1024,
            _ => self.rss_before.max(now).max(sampled_peak),
        };
        OwnUse {
            peak_rss_bytes: peak.max(sampled_peak),
            cpu_s: (process_cpu_s() - self.cpu_before).max(0.0),
        }
    }
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU seconds (user + system) used so far by this process, all threads.
pub fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_sees_its_own_peak_not_an_earlier_one() {
        // An earlier spike of 1 GiB, freed before the step begins.
        let spike = vec![1u8; 1 << 30];
        std::hint::black_box(&spike);
        drop(spike);
        let m = OwnMeter::begin();
        // The step touches 16 MiB.
        let during = vec![1u8; 16 << 20];
        std::hint::black_box(&during);
        let u = m.end(0);
        drop(during);
        assert!(u.peak_rss_bytes >= 16 << 20, "{u:?}");
        if m.hwm_reset {
            // Other tests run in this process at the same time (the TPC-H ones build
            // dbgen's 300 MB text pool); leave them room above what was resident at
            // `begin`, but the 1 GiB spike before it must not count.
            assert!(u.peak_rss_bytes < m.rss_before + (640 << 20), "{u:?}");
        }
        assert!(u.cpu_s >= 0.0);
    }
}
