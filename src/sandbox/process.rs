//! Which process a pid names: the stamp recorded when a server starts (its start time since
//! boot and the boot's id), the check that a pid is still that server before anything
//! signals it, and a look at a child's exit that does not reap it (so its pid, and its
//! process group's number, stay the server's until dbduel has finished with them).

use serde::{Deserialize, Serialize};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

/// When a process started: its start time in clock ticks after boot (`/proc/PID/stat` field
/// 22) and the boot's id. A pid reused by another process has another stamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStamp {
    pub start_ticks: u64,
    pub boot_id: String,
}

/// The stamp of the process `pid` now (a zombie's too), or `None` when there is none.
pub fn stamp(pid: i32) -> Option<ProcessStamp> {
    if pid <= 0 {
        return None;
    }
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    Some(ProcessStamp {
        start_ticks: stat.starttime,
        boot_id: boot_id()?,
    })
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// The children of `pid` now, each with its stamp (a server's workers: PostgreSQL's
/// backends, which leave the postmaster's process group).
pub fn children(pid: i32) -> Vec<(i32, ProcessStamp)> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter_map(|p| p.stat().ok())
        .filter(|st| st.ppid == pid)
        .filter_map(|st| Some((st.pid, stamp(st.pid)?)))
        .collect()
}

/// Send `sig` to `pid` only while it is still the process stamped `was` (running, or ended
/// and not reaped); says whether it was sent.
pub fn signal_if_same(pid: i32, was: &ProcessStamp, sig: i32) -> bool {
    if stamp(pid).as_ref() != Some(was) {
        return false;
    }
    super::signal(pid, sig);
    true
}

/// What a pid recorded for a server names now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// No process has the pid (or only a zombie): nothing to signal.
    Gone,
    /// The server: the same stamp, and its command line names the sandbox.
    Server,
    /// Another process has the pid now (why it cannot be the server): the server is gone.
    Stranger(String),
    /// A process that may be the server, but cannot be shown to be (why): never signalled,
    /// and its sandbox is kept.
    Unproven(String),
}

/// Is `pid` still the server recorded with `recorded` (its stamp at launch, when recorded),
/// whose command line names one of `names` (its configuration file, its data directory)?
pub fn identify(pid: i32, recorded: Option<&ProcessStamp>, names: &[&Path]) -> Identity {
    if pid <= 0 || !super::alive(pid) {
        return Identity::Gone;
    }
    let Some(now) = stamp(pid) else {
        return Identity::Gone;
    };
    let named = names_sandbox(pid, names);
    let listed = || {
        names
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    };
    match recorded {
        Some(r) if r.boot_id != now.boot_id => {
            Identity::Stranger("the machine has restarted since the server started".into())
        }
        Some(r) if r.start_ticks != now.start_ticks => {
            Identity::Stranger("it started at another time than the server".into())
        }
        Some(_) if named => Identity::Server,
        Some(_) => Identity::Unproven(format!(
            "it started when the server did, but its command line names neither {}",
            listed()
        )),
        None if named => Identity::Unproven(
            "its command line names the sandbox, and its sandbox.json was written by an older dbduel that recorded no start time to tell the server by".into(),
        ),
        None => Identity::Stranger(format!(
            "its command line names neither {}",
            listed()
        )),
    }
}

/// Does the command line of `pid` name one of `names` exactly: as an argument of its own
/// (`-D PATH`) or as an option's whole value (`--defaults-file=PATH`, FerretDB's
/// `--sqlite-url=file:PATH/`)? Never a part of one: a manifest naming `/` must not make
/// `postgres -D /var/lib/postgresql/data` look like a sandbox's server.
fn names_sandbox(pid: i32, names: &[&Path]) -> bool {
    let Ok(args) = procfs::process::Process::new(pid).and_then(|p| p.cmdline()) else {
        return false;
    };
    args_name(&args, names)
}

fn args_name(args: &[String], names: &[&Path]) -> bool {
    let values = args.iter().flat_map(|a| {
        let value = a
            .strip_prefix('-')
            .and_then(|o| o.split_once('='))
            .map(|(_, v)| v);
        [Some(a.as_str()), value].into_iter().flatten()
    });
    let values: Vec<&str> = values
        .map(|v| {
            let v = v.strip_prefix("file:").unwrap_or(v);
            if v.len() > 1 {
                v.trim_end_matches('/')
            } else {
                v
            }
        })
        .collect();
    names
        .iter()
        .filter_map(|p| p.to_str())
        .filter(|p| !p.is_empty())
        .any(|p| values.contains(&p))
}

/// Does `pid` run as `uid`, or as one of `uids`? (The owner of `/proc/PID`: its effective
/// user.)
pub fn runs_as(pid: i32, uids: &[u32]) -> bool {
    procfs::process::Process::new(pid)
        .and_then(|p| p.uid())
        .is_ok_and(|u| uids.contains(&u))
}

/// A child's state, looked at without reaping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildState {
    Running,
    /// It has ended and is not reaped yet: its pid is still its own.
    Ended(ExitStatus),
    /// Not a child that can be waited for (reaped already): its pid may be anyone's now.
    Reaped,
}

/// The state of the child `pid`, without reaping it (`waitid` with `WNOWAIT`).
pub fn child_state(pid: i32) -> ChildState {
    if pid <= 0 {
        return ChildState::Reaped;
    }
    // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes only into `info`; WNOWAIT leaves the child waitable.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return ChildState::Reaped;
    }
    // SAFETY: waitid succeeded, so the SIGCHLD fields are the ones filled (or all zero).
    let (who, code, status) = unsafe { (info.si_pid(), info.si_code, info.si_status()) };
    if who == 0 {
        return ChildState::Running;
    }
    let raw = match code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        _ => return ChildState::Running,
    };
    ChildState::Ended(ExitStatus::from_raw(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_names_a_path_only_as_a_whole_argument_or_value() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let host = args(&["postgres", "-D", "/var/lib/postgresql/15/main"]);
        // A manifest whose base is `/` names `/data` and `/server.cnf`: not the host's server.
        assert!(!args_name(
            &host,
            &[Path::new("/data"), Path::new("/server.cnf")]
        ));
        assert!(!args_name(&host, &[Path::new("/var/lib/postgresql")]));
        assert!(args_name(
            &host,
            &[Path::new("/var/lib/postgresql/15/main")]
        ));
        let maria = args(&["mariadbd", "--defaults-file=/s/b/server.cnf"]);
        assert!(args_name(&maria, &[Path::new("/s/b/server.cnf")]));
        assert!(!args_name(&maria, &[Path::new("/s/b")]));
        let ferret = args(&["ferretdb", "--sqlite-url=file:/p/data/"]);
        assert!(args_name(&ferret, &[Path::new("/p/data")]));
        assert!(!args_name(&ferret, &[Path::new("/p")]));
    }

    #[test]
    fn a_pid_is_the_server_only_with_its_stamp_and_its_command_line() {
        let dir = tempfile::tempdir().expect("tmp");
        let config = dir.path().join("server.cnf");
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30", "sh"])
            .arg(&config)
            .spawn()
            .expect("sh");
        let pid = child.id() as i32;
        let now = stamp(pid).expect("a stamp");
        // Until the child has called exec its command line is this test's.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !names_sandbox(pid, &[config.as_path()]) {
            assert!(std::time::Instant::now() < deadline, "sh never started");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let data = dir.path().join("data");
        let names = [config.as_path(), data.as_path()];
        assert_eq!(identify(pid, Some(&now), &names), Identity::Server);
        assert!(
            matches!(identify(pid, None, &names), Identity::Unproven(w) if w.contains("no start time"))
        );
        let earlier = ProcessStamp {
            start_ticks: now.start_ticks.saturating_sub(1),
            ..now.clone()
        };
        assert!(matches!(
            identify(pid, Some(&earlier), &names),
            Identity::Stranger(_)
        ));
        let elsewhere = dir.path().join("other.cnf");
        assert!(matches!(
            identify(pid, Some(&now), &[elsewhere.as_path()]),
            Identity::Unproven(_)
        ));
        assert!(matches!(
            identify(pid, None, &[elsewhere.as_path()]),
            Identity::Stranger(_)
        ));
        assert_eq!(child_state(pid), ChildState::Running);
        child.kill().expect("kill");
        while child_state(pid) == ChildState::Running {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(matches!(child_state(pid), ChildState::Ended(s) if s.signal() == Some(9)));
        assert_eq!(identify(pid, Some(&now), &names), Identity::Gone);
        child.wait().expect("reaped");
        assert_eq!(child_state(pid), ChildState::Reaped);
    }
}
