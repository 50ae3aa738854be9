//! What the sampler records each tick: host CPU, memory and devices, and the use of a process
//! or process tree, as written to `<step>.system.ndjson`.

use serde::{Deserialize, Serialize};

/// Host CPU time split over the interval, in percent of all cores (the five
/// fields sum to ~100).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct HostCpu {
    /// User time, including nice (and guest) time.
    pub user_pct: f64,
    /// System time, including hard and soft interrupt time.
    pub sys_pct: f64,
    /// Idle time (not waiting on I/O).
    pub idle_pct: f64,
    /// Idle while I/O was outstanding.
    pub iowait_pct: f64,
    /// Time stolen by the hypervisor.
    pub steal_pct: f64,
}

/// Host memory at the sample instant, from `/proc/meminfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HostMem {
    /// `MemTotal`.
    pub total_bytes: u64,
    /// `MemAvailable` (estimated from free + buffers + cached on old kernels).
    pub available_bytes: u64,
    /// `total_bytes - available_bytes`.
    pub used_bytes: u64,
    /// `Cached`: page cache, including shmem/tmpfs.
    pub cached_bytes: u64,
}

/// I/O of one whole block device over the interval.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeviceIo {
    /// Kernel name, e.g. `nvme0n1`, `sda`, `dm-0`.
    pub name: String,
    /// Bytes read per second.
    pub read_bytes_per_s: f64,
    /// Bytes written per second.
    pub write_bytes_per_s: f64,
    /// Completed reads per second.
    pub read_iops: f64,
    /// Completed writes per second.
    pub write_iops: f64,
    /// Share of the interval with at least one request in flight, 0–100.
    pub busy_pct: f64,
}

/// Resource use of a process or process tree over the interval.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcUsage {
    /// Number of processes counted (root plus live descendants).
    pub pids: u32,
    /// CPU in percent of one core (200 = two cores fully busy), including
    /// descendants that exited and were reaped during the interval.
    pub cpu_pct: f64,
    /// Resident set size at the sample instant, summed over the processes.
    pub rss_bytes: u64,
    /// Storage bytes read per second; `None` if `/proc/PID/io` of some
    /// process was unreadable.
    pub read_bytes_per_s: Option<f64>,
    /// Storage bytes written per second; `None` as for reads.
    pub write_bytes_per_s: Option<f64>,
}

/// Everything measured at one tick, with rates over the interval since the
/// previous sample (or the baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemSample {
    /// Seconds since `start` when this sample was read (≈ `tick`; less than
    /// `tick` for the final partial sample taken by [`Sampler::stop`](super::Sampler::stop)).
    pub t_s: f64,
    /// Tick number `k` (deadline `start + k` s). The final partial sample
    /// carries the tick it fell short of.
    pub tick: u64,
    /// Host CPU split.
    pub cpu: HostCpu,
    /// Host memory.
    pub mem: HostMem,
    /// Whole block devices, sorted by name.
    pub devices: Vec<DeviceIo>,
    /// Engine process tree; `None` with no engine pid or if it is not running.
    pub engine: Option<ProcUsage>,
    /// dbduel's own process (all threads, not its children).
    pub dbduel: ProcUsage,
}
