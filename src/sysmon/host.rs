//! Host-wide counters: `/proc/stat` CPU time, `/proc/meminfo`, and
//! `/proc/diskstats` for whole block devices. All three use the `procfs`
//! parsers; only the `/sys/block` directory listing is read directly.

use std::collections::{BTreeMap, HashSet};

use procfs::{Current, CurrentSI};

use super::sample::{DeviceIo, HostCpu, HostMem};

/// Bytes per sector in `/proc/diskstats` (always 512, whatever the device's
/// logical block size).
const SECTOR_BYTES: u64 = 512;

/// Aggregate CPU time of all cores, in clock ticks, grouped as reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CpuSnap {
    user: u64,
    sys: u64,
    idle: u64,
    iowait: u64,
    steal: u64,
}

/// Reads the `cpu` line of `/proc/stat`.
pub(super) fn read_cpu() -> Result<CpuSnap, procfs::ProcError> {
    let t = procfs::KernelStats::current()?.total;
    // guest / guest_nice are already included in user / nice.
    Ok(CpuSnap {
        user: t.user.saturating_add(t.nice),
        sys: t
            .system
            .saturating_add(t.irq.unwrap_or(0))
            .saturating_add(t.softirq.unwrap_or(0)),
        idle: t.idle,
        iowait: t.iowait.unwrap_or(0),
        steal: t.steal.unwrap_or(0),
    })
}

/// Host CPU percentages between two snapshots (they sum to 100, or are all
/// zero if no tick elapsed). Each counter's delta saturates at zero: idle and
/// iowait are known to step backwards on some NO_HZ kernels.
pub(super) fn cpu_pct(prev: &CpuSnap, cur: &CpuSnap) -> HostCpu {
    let d = [
        cur.user.saturating_sub(prev.user),
        cur.sys.saturating_sub(prev.sys),
        cur.idle.saturating_sub(prev.idle),
        cur.iowait.saturating_sub(prev.iowait),
        cur.steal.saturating_sub(prev.steal),
    ];
    let total: u64 = d.iter().sum();
    let pct = |v: u64| {
        if total == 0 {
            0.0
        } else {
            v as f64 * 100.0 / total as f64
        }
    };
    HostCpu {
        user_pct: pct(d[0]),
        sys_pct: pct(d[1]),
        idle_pct: pct(d[2]),
        iowait_pct: pct(d[3]),
        steal_pct: pct(d[4]),
    }
}

/// Reads `/proc/meminfo` (procfs converts kB to bytes).
pub(super) fn read_mem() -> Result<HostMem, procfs::ProcError> {
    let m = procfs::Meminfo::current()?;
    // MemAvailable exists since Linux 3.14; before that, approximate it.
    let available = m.mem_available.unwrap_or_else(|| {
        m.mem_free
            .saturating_add(m.buffers)
            .saturating_add(m.cached)
    });
    Ok(HostMem {
        total_bytes: m.mem_total,
        available_bytes: available,
        used_bytes: m.mem_total.saturating_sub(available),
        cached_bytes: m.cached,
    })
}

/// Cumulative counters of one whole block device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct DiskSnap {
    /// Completed reads.
    pub reads: u64,
    /// Completed writes.
    pub writes: u64,
    /// 512-byte sectors read.
    pub sectors_read: u64,
    /// 512-byte sectors written.
    pub sectors_written: u64,
    /// Milliseconds the device had I/O in flight (`io_ticks`).
    pub io_ticks_ms: u64,
}

/// Names in `/sys/block`, i.e. whole devices (partitions are not listed
/// there), with `!` turned back into the `/` that `/proc/diskstats` uses.
fn whole_devices() -> HashSet<String> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else {
        return HashSet::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().map(|s| s.replace('!', "/")))
        .collect()
}

/// Whether a whole-device name is worth reporting (no loop, ram or zram).
pub(super) fn keep_device(name: &str) -> bool {
    !(name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram"))
}

/// Reads `/proc/diskstats` for whole devices; empty if unreadable.
pub(super) fn read_disks() -> BTreeMap<String, DiskSnap> {
    let Ok(stats) = procfs::diskstats() else {
        return BTreeMap::new();
    };
    let whole = whole_devices();
    stats
        .into_iter()
        .filter(|d| keep_device(&d.name) && whole.contains(&d.name))
        .map(|d| {
            let snap = DiskSnap {
                reads: d.reads,
                writes: d.writes,
                sectors_read: d.sectors_read,
                sectors_written: d.sectors_written,
                io_ticks_ms: d.time_in_progress,
            };
            (d.name, snap)
        })
        .collect()
}

/// Per-device rates over `interval_s`. A device present only in `cur`
/// (hot-plugged) is left out until it has a previous reading.
pub(super) fn disk_rates(
    prev: &BTreeMap<String, DiskSnap>,
    cur: &BTreeMap<String, DiskSnap>,
    interval_s: f64,
) -> Vec<DeviceIo> {
    let per_s = |v: u64| v as f64 / interval_s;
    cur.iter()
        .filter_map(|(name, c)| {
            let p = prev.get(name)?;
            let busy_ms = c.io_ticks_ms.saturating_sub(p.io_ticks_ms) as f64;
            Some(DeviceIo {
                name: name.clone(),
                read_bytes_per_s: per_s(
                    c.sectors_read
                        .saturating_sub(p.sectors_read)
                        .saturating_mul(SECTOR_BYTES),
                ),
                write_bytes_per_s: per_s(
                    c.sectors_written
                        .saturating_sub(p.sectors_written)
                        .saturating_mul(SECTOR_BYTES),
                ),
                read_iops: per_s(c.reads.saturating_sub(p.reads)),
                write_iops: per_s(c.writes.saturating_sub(p.writes)),
                busy_pct: (busy_ms / (interval_s * 1000.0) * 100.0).clamp(0.0, 100.0),
            })
        })
        .collect()
}
