//! Limits a server runs under, as Linux cgroups made below the cgroup dbduel itself runs in,
//! joined by the server as it starts and removed when the sandbox goes:
//!
//! - **memory** (v1 `memory.limit_in_bytes`, v2 `memory.max`): the server's memory and the
//!   page cache its reads fill, so data far above it is read from the disk. The kernel kills a
//!   server that exceeds it and the server logs nothing, so the cgroup's OOM-kill count is
//!   read to say so.
//! - **block I/O** (v1 `blkio.throttle.*`, v2 `io.max`): a [`DeviceProfile`]'s bandwidth and
//!   requests a second on the disk under the data directory. v1 throttles what the server's
//!   own threads submit — reads, O_DIRECT writes and the writes its fsyncs flush — but not
//!   the kernel's background writeback of its dirty pages.
//!
//! Hand-written over a few files in /sys/fs/cgroup: the crates that manage cgroups
//! (cgroups-rs, controlgroup) pull in far more than creating a directory, writing a few
//! files and reading one counter.

use super::device_profile::DeviceProfile;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ROOT: &str = "/sys/fs/cgroup";
/// Every cgroup dbduel makes is named `dbduel-PID-N-…`, so a leftover is traceable to the run
/// that made it (and [`sweep`] finds those whose run is gone).
const PREFIX: &str = "dbduel-";

/// A disk to throttle: its kernel name and `major:minor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDevice {
    pub name: String,
    pub dev: String,
}

/// The cgroups of one sandbox: one directory per hierarchy (v1 has one per controller).
#[derive(Debug)]
pub struct Limits {
    groups: Vec<Group>,
    v2: bool,
    memory_bytes: Option<u64>,
    io: Option<(DeviceProfile, BlockDevice)>,
}

#[derive(Debug)]
struct Group {
    dir: PathBuf,
    /// The controller it was made for (v2: the first; the group holds them all).
    controller: &'static str,
    /// `cgroup.procs`, opened before any fork so a server's child side can join with one
    /// async-signal-safe `write`.
    procs: File,
}

impl Limits {
    /// The cgroups of sandbox `name` (`dbduel-PID-N-NAME`, unique in this process) for a
    /// memory limit and/or a device profile on the disk under `data_dir`; `None` when
    /// neither is asked for.
    pub fn for_sandbox(
        name: &str,
        memory_bytes: Option<u64>,
        io: Option<&DeviceProfile>,
        data_dir: &Path,
    ) -> Result<Option<Self>, String> {
        if memory_bytes.is_none() && io.is_none() {
            return Ok(None);
        }
        static MADE: AtomicU64 = AtomicU64::new(0);
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let io = match io {
            Some(p) => Some((p.clone(), block_device_of(data_dir)?)),
            None => None,
        };
        Self::create(
            &format!("{PREFIX}{}-{n}-{safe}", std::process::id()),
            memory_bytes,
            io,
        )
        .map(Some)
    }

    /// Can a server's I/O under `data_dir` be throttled here? Makes a cgroup with the
    /// profile's limits and removes it; the reason when it cannot.
    pub fn check_io(profile: &DeviceProfile, data_dir: &Path) -> Result<(), String> {
        Self::for_sandbox("probe", None, Some(profile), data_dir).map(drop)
    }

    fn create(
        name: &str,
        memory_bytes: Option<u64>,
        io: Option<(DeviceProfile, BlockDevice)>,
    ) -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let v2 = Path::new(ROOT).join("cgroup.controllers").exists();
        let mut limits = Limits {
            groups: Vec::new(),
            v2,
            memory_bytes,
            io,
        };
        // Each controller's files, written into its hierarchy's group (v2: the one group).
        let mut wanted: Vec<(&str, Vec<(String, String)>)> = Vec::new();
        if let Some(bytes) = memory_bytes {
            wanted.push((
                "memory",
                if v2 {
                    // No swap either, or the limit would only move pages to swap.
                    vec![
                        ("memory.max".into(), bytes.to_string()),
                        ("memory.swap.max".into(), "0".into()),
                    ]
                } else {
                    vec![("memory.limit_in_bytes".into(), bytes.to_string())]
                },
            ));
        }
        if limits.io.is_some() {
            wanted.push((io_controller(v2), limits.io_files(true)));
        }
        for (controller, files) in wanted {
            let parent = own_cgroup(&own, v2, controller).ok_or_else(|| {
                format!(
                    "this machine has no {controller} cgroup controller for dbduel to limit a server with"
                )
            })?;
            let dir = parent.join(name);
            // v2: the controller must be enabled for the parent's children. The kernel refuses
            // that (EBUSY) while the parent itself holds processes, as dbduel's own cgroup does
            // unless dbduel was started in one delegated to it with room for children.
            let enabled = if v2 {
                std::fs::write(
                    parent.join("cgroup.subtree_control"),
                    format!("+{controller}"),
                )
                .map_err(|e| {
                    format!(
                        "cannot enable the {controller} controller for dbduel's cgroup's children ({}/cgroup.subtree_control: {e}); start dbduel in a cgroup delegated to it, e.g. `systemd-run --scope -p Delegate=yes dbduel …`",
                        parent.display()
                    )
                })
            } else {
                Ok(())
            };
            if !limits.groups.iter().any(|g| g.dir == dir) {
                std::fs::create_dir(&dir).map_err(|e| {
                    format!(
                        "cannot create cgroup {}: {e} (limits need root, or a delegated cgroup)",
                        dir.display()
                    )
                })?;
                let procs = std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"));
                let procs = match procs {
                    Ok(f) => f,
                    Err(e) => {
                        let _ = std::fs::remove_dir(&dir);
                        return Err(format!("cannot open {}/cgroup.procs: {e}", dir.display()));
                    }
                };
                limits.groups.push(Group {
                    dir: dir.clone(),
                    controller: if v2 { "io" } else { controller },
                    procs,
                });
            }
            for (file, value) in files {
                let path = dir.join(&file);
                // memory.swap.max is absent where swap accounting is off: nothing to limit.
                if file == "memory.swap.max" && !path.exists() {
                    continue;
                }
                std::fs::write(&path, &value).map_err(|e| match &enabled {
                    Err(why) => why.clone(),
                    Ok(()) => format!("cannot set {} to {value:?}: {e}", path.display()),
                })?;
            }
        }
        Ok(limits)
    }

    /// The throttle's files and values: the profile's limits when `on`, none when off.
    fn io_files(&self, on: bool) -> Vec<(String, String)> {
        let Some((p, d)) = &self.io else {
            return Vec::new();
        };
        let v = |n: u64| if on { n.to_string() } else { "max".into() };
        if self.v2 {
            vec![(
                "io.max".into(),
                format!(
                    "{} rbps={} wbps={} riops={} wiops={}",
                    d.dev,
                    v(p.read_bps()),
                    v(p.write_bps()),
                    v(p.read_iops),
                    v(p.write_iops)
                ),
            )]
        } else {
            // v1 removes a device's rule when its value is 0.
            [
                ("read_bps_device", p.read_bps()),
                ("write_bps_device", p.write_bps()),
                ("read_iops_device", p.read_iops),
                ("write_iops_device", p.write_iops),
            ]
            .into_iter()
            .map(|(f, n)| {
                (
                    format!("blkio.throttle.{f}"),
                    format!("{} {}", d.dev, if on { n } else { 0 }),
                )
            })
            .collect()
        }
    }

    /// Turn the device profile's throttle on or off (the server stays in its group);
    /// whether there is one.
    pub fn set_io(&self, on: bool) -> Result<bool, String> {
        if self.io.is_none() {
            return Ok(false);
        }
        let controller = io_controller(self.v2);
        let Some(g) = self.groups.iter().find(|g| g.controller == controller) else {
            return Ok(false);
        };
        for (file, value) in self.io_files(on) {
            let path = g.dir.join(&file);
            std::fs::write(&path, &value)
                .map_err(|e| format!("cannot set {} to {value:?}: {e}", path.display()))?;
        }
        Ok(true)
    }

    /// The cgroup directories, for the sandbox's manifest (so `sandbox down` can remove
    /// them after a crash).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.groups.iter().map(|g| g.dir.clone()).collect()
    }

    /// The device profile and the disk it throttles.
    pub fn io(&self) -> Option<&(DeviceProfile, BlockDevice)> {
        self.io.as_ref()
    }

    /// Make `cmd`'s process join every group before it runs the server (its children follow).
    pub fn apply(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fds: Vec<i32> = self.groups.iter().map(|g| g.procs.as_raw_fd()).collect();
        // SAFETY: between fork and exec only `write(2)`, which is async-signal-safe, runs on
        // fds opened before the fork; writing "0" to cgroup.procs moves the writing process.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &fds {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }

    /// Move dbduel's own process (every thread) into the groups until the guard is dropped:
    /// an embedded engine's I/O is dbduel's.
    pub fn enter(&self) -> Result<Entered, String> {
        let mut entered = Entered { back: Vec::new() };
        for g in &self.groups {
            std::fs::write(g.dir.join("cgroup.procs"), std::process::id().to_string())
                .map_err(|e| format!("cannot move dbduel into {}: {e}", g.dir.display()))?;
            // The group's parent is where dbduel was (they were made under its own); a
            // failure above drops `entered`, which moves dbduel back from those joined.
            entered
                .back
                .push(g.dir.parent().map(Path::to_path_buf).unwrap_or_default());
        }
        Ok(entered)
    }

    /// Processes the kernel's OOM killer has killed in the memory group so far.
    pub fn oom_kills(&self) -> u64 {
        if self.memory_bytes.is_none() {
            return 0;
        }
        let (file, key) = if self.v2 {
            ("memory.events", "oom_kill")
        } else {
            ("memory.oom_control", "oom_kill")
        };
        self.groups
            .iter()
            .filter_map(|g| std::fs::read_to_string(g.dir.join(file)).ok())
            .find_map(|t| {
                t.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == key).then(|| v.trim().parse().ok()).flatten()
                })
            })
            .unwrap_or(0)
    }

    /// What a server killed in these groups died of, in words, when the OOM killer did it.
    pub fn oom_note(&self) -> Option<String> {
        let limit = self.memory_bytes?;
        (self.oom_kills() > 0).then(|| {
            format!(
                "killed by the kernel's OOM killer at its memory limit of {} MiB (memory_limit_mb; cgroup {})",
                limit >> 20,
                self.groups
                    .iter()
                    .map(|g| g.dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

impl Drop for Limits {
    /// Remove the groups once their processes are gone (a kept sandbox's server still in one
    /// keeps it: rmdir refuses, and the group stays with the server).
    fn drop(&mut self) {
        for g in &self.groups {
            let alive = std::fs::read_to_string(g.dir.join("cgroup.procs")).is_ok_and(|t| {
                t.lines()
                    .any(|l| l.trim().parse::<i32>().is_ok_and(super::alive))
            });
            // Processes just killed take a moment to leave; a running one stays.
            let wait = if alive {
                Duration::ZERO
            } else {
                Duration::from_secs(2)
            };
            remove_group(&g.dir, wait);
        }
    }
}

/// Remove a cgroup dbduel made (and nothing that is not one), retrying for up to `within`
/// while its last processes leave; whether it is gone.
pub fn remove_group(dir: &Path, within: Duration) -> bool {
    let ours = dir.starts_with(ROOT)
        && dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
    if !ours {
        return false;
    }
    let deadline = Instant::now() + within;
    loop {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn io_controller(v2: bool) -> &'static str {
    if v2 { "io" } else { "blkio" }
}

/// dbduel's process inside a sandbox's groups; dropping it moves dbduel back.
#[must_use]
pub struct Entered {
    back: Vec<PathBuf>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        for dir in &self.back {
            if let Err(e) = std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
            {
                // dbduel would stay throttled, and the group could not be removed: say so.
                crate::errln!(
                    "warning: dbduel could not move itself back to {}: {e}",
                    dir.display()
                );
            }
        }
    }
}

/// The directory of dbduel's own cgroup for `controller` from `/proc/self/cgroup`'s text
/// (v2: the unified one).
fn own_cgroup(text: &str, v2: bool, controller: &str) -> Option<PathBuf> {
    let rel = text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if v2 {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        wanted.then(|| path.trim_start_matches('/').to_string())
    })?;
    let base = if v2 {
        PathBuf::from(ROOT)
    } else {
        Path::new(ROOT).join(controller)
    };
    let dir = base.join(rel);
    dir.is_dir().then_some(dir)
}

/// The whole disk holding `path` (a partition's parent disk: throttles apply to disks).
pub fn block_device_of(path: &Path) -> Result<BlockDevice, String> {
    use std::os::unix::fs::MetadataExt;
    let existing = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let meta = std::fs::metadata(existing)
        .map_err(|e| format!("cannot stat {}: {e}", existing.display()))?;
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let sys = std::fs::canonicalize(&sys).map_err(|_| {
        format!(
            "{} is on no block device (device {major}:{minor}: an overlay, tmpfs, btrfs or network filesystem), so its I/O cannot be throttled; give the contender a data_dir on a disk",
            existing.display()
        )
    })?;
    // A partition's directory sits inside its disk's.
    let disk = if sys.join("partition").exists() {
        sys.parent().map(Path::to_path_buf).unwrap_or(sys)
    } else {
        sys
    };
    let dev = std::fs::read_to_string(disk.join("dev"))
        .map_err(|e| format!("cannot read {}/dev: {e}", disk.display()))?;
    Ok(BlockDevice {
        name: disk
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dev: dev.trim().to_string(),
    })
}

/// Remove cgroups dbduel made whose run is gone and that hold no process (left by a
/// `kill -9`); returns the directories removed.
pub fn sweep() -> Vec<PathBuf> {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    let v2 = Path::new(ROOT).join("cgroup.controllers").exists();
    let parents: Vec<PathBuf> = if v2 {
        own_cgroup(&own, true, "").into_iter().collect()
    } else {
        ["memory", "blkio"]
            .iter()
            .filter_map(|c| own_cgroup(&own, false, c))
            .collect()
    };
    let mut removed = Vec::new();
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(PREFIX)
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let empty = std::fs::read_to_string(e.path().join("cgroup.procs"))
                .is_ok_and(|t| t.trim().is_empty());
            if !super::alive(pid) && empty && std::fs::remove_dir(e.path()).is_ok() {
                removed.push(e.path());
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_its_own_cgroup_line() {
        assert_eq!(
            own_cgroup("4:cpu:/x\n", false, "memory"),
            None,
            "no memory line"
        );
        // the directory must exist: "/" of the memory hierarchy does wherever v1 is mounted
        if Path::new(ROOT).join("memory").is_dir() {
            assert_eq!(
                own_cgroup("9:name=systemd:/\n4:memory:/\n", false, "memory"),
                Some(Path::new(ROOT).join("memory"))
            );
        }
    }

    #[test]
    fn the_disk_of_a_path_is_whole() {
        match block_device_of(Path::new("/")) {
            Ok(d) => {
                assert!(d.dev.contains(':'), "{d:?}");
                let sys = format!("/sys/dev/block/{}/partition", d.dev);
                assert!(!Path::new(&sys).exists(), "{d:?} is a disk");
            }
            Err(e) => assert!(e.contains("no block device"), "{e}"),
        }
        let e = block_device_of(Path::new("/proc")).unwrap_err();
        assert!(
            e.contains("no block device") && e.contains("data_dir"),
            "{e}"
        );
    }

    /// A real cgroup, where this machine lets dbduel make one: a process started in it is in
    /// it, and one that touches more memory than the limit is killed, and that is seen.
    #[test]
    fn a_process_started_in_it_is_held_to_its_limit() {
        let cg = match Limits::create(
            &format!("{PREFIX}test-{}", std::process::id()),
            Some(64 << 20),
            None,
        ) {
            Ok(cg) => cg,
            Err(e) => {
                eprintln!("skipping: {e}");
                return;
            }
        };
        let dir = cg.paths().remove(0);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut cmd = std::process::Command::new("cat");
        cmd.arg("/proc/self/cgroup");
        cg.apply(&mut cmd);
        let out = cmd.output().expect("cat runs");
        assert!(String::from_utf8_lossy(&out.stdout).contains(&name));
        assert_eq!(cg.oom_kills(), 0);
        assert_eq!(cg.oom_note(), None);
        // dd reads into one 256 MiB buffer: more than the limit, all of it touched
        let mut dd = std::process::Command::new("dd");
        dd.args(["if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"])
            .stderr(std::process::Stdio::null());
        cg.apply(&mut dd);
        let status = dd.status().expect("dd runs");
        assert!(!status.success(), "dd was killed");
        assert_eq!(cg.oom_kills(), 1);
        let note = cg.oom_note().expect("the OOM kill is seen");
        assert!(
            note.contains("OOM killer at its memory limit of 64 MiB"),
            "{note}"
        );
        drop(cg);
        assert!(!dir.exists(), "the cgroup is removed");
    }
}
