//! One-shot host facts for the run manifest, filesystem lookup, and the two
//! `sysconf` constants the rate arithmetic needs.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use procfs::{Current, FromRead};
use serde::{Deserialize, Serialize};

/// Static facts about the host, recorded once per run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// CPU model name from `/proc/cpuinfo` (`"unknown"` if absent).
    pub cpu_model: String,
    /// Online logical CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`).
    pub cores: usize,
    /// `MemTotal` in bytes (0 if unreadable).
    pub mem_total_bytes: u64,
    /// Kernel release, e.g. `6.8.0-45-generic` (`"unknown"` if unreadable).
    pub kernel: String,
    /// Host name (`"unknown"` if unreadable).
    pub hostname: String,
}

/// The filesystem that holds a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsInfo {
    /// Filesystem type, e.g. `ext4`, `xfs`, `tmpfs`, `overlay`.
    pub fs_type: String,
    /// Where it is mounted, e.g. `/` or `/var/lib/postgresql`.
    pub mount_point: String,
    /// Mount source, usually the device (`/dev/nvme0n1p2`); `"none"` if the
    /// kernel reports none.
    pub source: String,
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of CPU times in
/// `/proc`; 100 if `sysconf` fails.
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(v).ok().filter(|&v| v > 0).unwrap_or(100)
}

/// Memory page size in bytes (`sysconf(_SC_PAGESIZE)`), the unit of RSS in
/// `/proc/PID/stat`; 4096 if `sysconf` fails.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(v).ok().filter(|&v| v > 0).unwrap_or(4096)
}

/// Online logical CPUs; falls back to the scheduler's view, then 1.
fn online_cores() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// First line of a small `/proc` file, trimmed; `None` if unreadable/empty.
fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// CPU model of the first CPU, trying the x86 field then common ARM ones.
fn cpu_model() -> Option<String> {
    let info = procfs::CpuInfo::current().ok()?;
    ["model name", "Model", "Hardware", "cpu model", "Processor"]
        .iter()
        .find_map(|f| {
            info.get_field(0, f)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        })
        .map(str::to_string)
}

/// Collects [`HostFacts`]. Never fails; unreadable facts read `"unknown"`/0.
pub fn host_facts() -> HostFacts {
    let unknown = || "unknown".to_string();
    HostFacts {
        cpu_model: cpu_model().unwrap_or_else(unknown),
        cores: online_cores(),
        mem_total_bytes: procfs::Meminfo::current().map_or(0, |m| m.mem_total),
        kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(unknown),
        hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(unknown),
    }
}

/// Undoes the octal escapes (`\040` for space, `\011`, `\012`, `\134`) the
/// kernel applies to paths in `/proc/self/mountinfo`; procfs keeps them.
pub(super) fn unescape_mount(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\'
            && let Some(&[a, b, c]) = raw.get(i + 1..i + 4)
            && [a, b, c].iter().all(|d| (b'0'..=b'7').contains(d))
        {
            let v = u32::from(a - b'0') * 64 + u32::from(b - b'0') * 8 + u32::from(c - b'0');
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    out
}

/// Absolute, symlink-free form of `path`, or of its nearest existing
/// ancestor if it does not exist yet (a data directory about to be created).
fn resolve(path: &Path) -> Option<PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    abs.ancestors().find_map(|a| a.canonicalize().ok())
}

/// Filesystem type, mount point and source of the filesystem holding `path`:
/// the longest mount point in `/proc/self/mountinfo` that contains it (the
/// last one listed wins among equals, as it is the one on top). `None` if
/// the path cannot be resolved or mountinfo is unreadable.
pub fn filesystem_of(path: &Path) -> Option<FsInfo> {
    let target = resolve(path)?;
    let mounts = procfs::process::MountInfos::from_file("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, PathBuf, procfs::process::MountInfo)> = None;
    for m in mounts {
        let mp = PathBuf::from(OsString::from_vec(unescape_mount(
            m.mount_point.as_os_str().as_bytes(),
        )));
        if !target.starts_with(&mp) {
            continue;
        }
        let depth = mp.components().count();
        if best.as_ref().is_none_or(|(d, _, _)| depth >= *d) {
            best = Some((depth, mp, m));
        }
    }
    let (_, mp, m) = best?;
    let source = m.mount_source.as_deref().map_or_else(
        || "none".to_string(),
        |s| String::from_utf8_lossy(&unescape_mount(s.as_bytes())).into_owned(),
    );
    Some(FsInfo {
        fs_type: m.fs_type,
        mount_point: mp.to_string_lossy().into_owned(),
        source,
    })
}
