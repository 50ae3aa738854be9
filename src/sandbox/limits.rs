//! A memory limit for a sandbox's server: a Linux memory cgroup (v1 `memory.limit_in_bytes` or
//! v2 `memory.max`) made under the cgroup dbduel itself runs in, joined by the server as it
//! starts, and removed when the sandbox goes. The page cache the server's reads fill is
//! charged to it too, so a limit far below the data makes reads hit the disk — the state a
//! "cache far below the data" measurement needs. The kernel kills a server that exceeds it
//! and logs nothing in the server's own log, so the cgroup's OOM-kill count is read to say so.
//!
//! Hand-written over a few files in /sys/fs/cgroup: the crates that manage cgroups
//! (cgroups-rs, controlgroup) pull in far more than creating one directory, writing two
//! files and reading one counter.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const ROOT: &str = "/sys/fs/cgroup";

/// A memory cgroup of one sandbox.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    v2: bool,
    limit_bytes: u64,
    /// `cgroup.procs`, opened before any fork so the server's child side can join with one
    /// async-signal-safe `write`.
    procs: File,
}

impl MemoryCgroup {
    /// The cgroup of sandbox `name`: `dbduel-PID-N-NAME`, unique in this process, so a
    /// leftover is traceable to the run that made it.
    pub fn for_sandbox(name: &str, limit_bytes: u64) -> Result<Self, String> {
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
        Self::create(
            &format!("dbduel-{}-{n}-{safe}", std::process::id()),
            limit_bytes,
        )
    }

    /// Make a cgroup named `name` limited to `limit_bytes`, below dbduel's own memory cgroup.
    pub fn create(name: &str, limit_bytes: u64) -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let v2 = Path::new(ROOT).join("cgroup.controllers").exists();
        let parent = own_memory_cgroup(&own, v2).ok_or_else(|| {
            "this machine has no memory cgroup controller for dbduel to limit a server with"
                .to_string()
        })?;
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "cannot create memory cgroup {}: {e} (a memory limit needs root, or a delegated cgroup)",
                dir.display()
            )
        })?;
        let cleanup = |msg: String| {
            let _ = std::fs::remove_dir(&dir);
            msg
        };
        let limit_file = dir.join(if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        });
        std::fs::write(&limit_file, limit_bytes.to_string())
            .map_err(|e| cleanup(format!("cannot set {}: {e}", limit_file.display())))?;
        if v2 {
            // No swap either, or the limit would only move pages to swap.
            let _ = std::fs::write(dir.join("memory.swap.max"), "0");
        }
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .map_err(|e| cleanup(format!("cannot open {}/cgroup.procs: {e}", dir.display())))?;
        Ok(MemoryCgroup {
            dir,
            v2,
            limit_bytes,
            procs,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Make `cmd`'s process join the cgroup before it runs the server (its children follow).
    pub fn apply(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fd = self.procs.as_raw_fd();
        // SAFETY: between fork and exec only `write(2)`, which is async-signal-safe, runs;
        // writing "0" to cgroup.procs moves the writing process.
        unsafe {
            cmd.pre_exec(move || {
                if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }

    /// Processes the kernel's OOM killer has killed in this cgroup so far.
    pub fn oom_kills(&self) -> u64 {
        let (file, key) = if self.v2 {
            ("memory.events", "oom_kill")
        } else {
            ("memory.oom_control", "oom_kill")
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == key).then(|| v.trim().parse().ok()).flatten()
                })
            })
            .unwrap_or(0)
    }

    /// What a server killed in this cgroup died of, in words, when the OOM killer did it.
    pub fn oom_note(&self) -> Option<String> {
        (self.oom_kills() > 0).then(|| {
            format!(
                "killed by the kernel's OOM killer at its memory limit of {} MiB (memory_limit_mb; cgroup {})",
                self.limit_bytes >> 20,
                self.dir.display()
            )
        })
    }
}

impl Drop for MemoryCgroup {
    /// Remove the cgroup once its processes are gone (a kept sandbox's server still in it
    /// keeps it: rmdir refuses, and the cgroup stays with the server).
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The directory of dbduel's own memory cgroup from `/proc/self/cgroup`'s text.
fn own_memory_cgroup(text: &str, v2: bool) -> Option<PathBuf> {
    let rel = text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if v2 {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "memory")
        };
        wanted.then(|| path.trim_start_matches('/').to_string())
    })?;
    let base = if v2 {
        PathBuf::from(ROOT)
    } else {
        Path::new(ROOT).join("memory")
    };
    let dir = base.join(rel);
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_its_own_memory_cgroup_line() {
        assert_eq!(
            own_memory_cgroup("4:cpu:/x\n", false),
            None,
            "no memory line"
        );
        // the directory must exist: "/" of the memory hierarchy does wherever v1 is mounted
        if Path::new(ROOT).join("memory").is_dir() {
            assert_eq!(
                own_memory_cgroup("9:name=systemd:/\n4:memory:/\n", false),
                Some(Path::new(ROOT).join("memory"))
            );
        }
    }

    /// A real cgroup, where this machine lets dbduel make one: a process started in it is in
    /// it, and one that touches more memory than the limit is killed, and that is seen.
    #[test]
    fn a_process_started_in_it_is_held_to_its_limit() {
        let cg =
            match MemoryCgroup::create(&format!("dbduel-test-{}", std::process::id()), 64 << 20) {
                Ok(cg) => cg,
                Err(e) => {
                    eprintln!("skipping: {e}");
                    return;
                }
            };
        let name = cg
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
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
        let dir = cg.path().to_path_buf();
        drop(cg);
        assert!(!dir.exists(), "the cgroup is removed");
    }
}
