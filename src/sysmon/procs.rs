//! One pass over the process table per tick, and CPU / RSS / I/O accounting
//! for a process tree (or a single process) across ticks.
//!
//! `/proc/PID/stat` is parsed by hand rather than with `procfs::process`:
//! the pass reads the stat line of *every* process on the host each tick,
//! needs only six fields, and `procfs::process::Process` opens an extra
//! `O_PATH` directory fd per process and parses all ~50 fields (allocating
//! the command name) — twice the syscalls for nothing. Splitting after the
//! last `)` is the standard robust way to skip the free-form command name.
//! `/proc/PID/io` is read with `procfs` (only for the few tree members).
//!
//! # Accounting across ticks
//!
//! CPU time is summed per member as a per-pid delta (keyed by pid *and*
//! start time, so a recycled pid is a new process). Processes that exit
//! between two passes would lose their last partial interval, and short-lived
//! ones (PostgreSQL parallel workers) would be missed entirely, so the
//! reaped-children times of each member (`cutime + cstime`, which the kernel
//! folds into the parent on `wait`) are counted too. To avoid counting a
//! member twice — once while alive and again when its total lands in its
//! parent's `cutime` — the last-seen total of a vanished member becomes a
//! *debt* of its parent, paid out of the parent's next child-time increases
//! (for at most [`DEBT_TICKS`] ticks: a parent that ignores `SIGCHLD` never
//! receives the fold). The same applies to `/proc/PID/io`, where the kernel
//! adds a reaped child's I/O to the parent's own counters.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::io::Read;

use procfs::FromRead;

/// How many ticks a vanished member's debt waits for its parent's fold.
pub(super) const DEBT_TICKS: u8 = 2;

/// The fields of `/proc/PID/stat` the sampler uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PidStat {
    /// Parent pid.
    pub ppid: i32,
    /// Start time in clock ticks after boot (distinguishes recycled pids).
    pub starttime: u64,
    /// `utime + stime` in clock ticks, all threads of the process.
    pub own_ticks: u64,
    /// `cutime + cstime` in clock ticks: waited-for (reaped) descendants.
    pub child_ticks: u64,
    /// Resident set size in pages.
    pub rss_pages: u64,
}

/// Parses one `/proc/PID/stat` line. `None` if it is malformed.
pub(super) fn parse_stat(line: &[u8]) -> Option<PidStat> {
    // The command name is in parentheses and may itself contain ')' and
    // spaces; everything after the *last* ')' is space-separated numbers.
    let close = line.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(line.get(close + 1..)?).ok()?;
    let f: Vec<&str> = rest.split_ascii_whitespace().take(22).collect();
    // Field n of stat(5) (1-based, pid = 1, comm = 2) is f[n - 3].
    let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
    // cutime / cstime / rss are printed as signed longs.
    let signed = |i: usize| {
        f.get(i)
            .and_then(|s| s.parse::<i64>().ok())
            .map(|v| u64::try_from(v).unwrap_or(0))
    };
    Some(PidStat {
        ppid: f.get(1)?.parse().ok()?,
        own_ticks: num(11)?.saturating_add(num(12)?),
        child_ticks: signed(13)?.saturating_add(signed(14)?),
        starttime: num(19)?,
        rss_pages: signed(21)?,
    })
}

/// Stat lines of every process visible in `/proc`, from one pass.
#[derive(Debug, Default)]
pub(super) struct ProcTable {
    /// Pid to its stat fields. Processes that vanished mid-pass are absent.
    pub stats: HashMap<i32, PidStat>,
}

impl ProcTable {
    /// Reads `/proc/*/stat` once. Never fails: an unreadable `/proc` gives an
    /// empty table, a process that exits mid-pass is simply left out.
    pub fn scan() -> ProcTable {
        let mut stats = HashMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return ProcTable { stats };
        };
        let mut path = String::with_capacity(32);
        let mut buf = Vec::with_capacity(512);
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            path.clear();
            let _ = write!(path, "/proc/{pid}/stat");
            buf.clear();
            let read = std::fs::File::open(&path).and_then(|mut f| f.read_to_end(&mut buf));
            if read.is_ok()
                && let Some(st) = parse_stat(&buf)
            {
                stats.insert(pid, st);
            }
        }
        ProcTable { stats }
    }

    /// `root` and all its descendants present in this table, root first.
    /// Empty if `root` is absent.
    pub fn tree(&self, root: i32) -> Vec<i32> {
        if !self.stats.contains_key(&root) {
            return Vec::new();
        }
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for (&pid, st) in &self.stats {
            if pid != root {
                children.entry(st.ppid).or_default().push(pid);
            }
        }
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([root]);
        while let Some(pid) = queue.pop_front() {
            if !seen.insert(pid) {
                continue; // cannot happen with a consistent table; guards races
            }
            out.push(pid);
            if let Some(kids) = children.get(&pid) {
                queue.extend(kids.iter().copied());
            }
        }
        out
    }
}

/// Storage I/O counters of one process (`read_bytes`, `write_bytes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct IoBytes {
    /// Bytes read from storage.
    pub read: u64,
    /// Bytes written (dirtied for writeback) to storage.
    pub write: u64,
}

/// `/proc/PID/io` storage counters; `None` when unreadable (another user's
/// process without `CAP_SYS_PTRACE`, or the process is gone).
fn read_io(pid: i32) -> Option<IoBytes> {
    let io = procfs::process::Io::from_file(format!("/proc/{pid}/io")).ok()?;
    Some(IoBytes {
        read: io.read_bytes,
        write: io.write_bytes,
    })
}

/// What one tracked member looked like at the previous tick.
#[derive(Debug, Clone, Copy)]
struct Member {
    starttime: u64,
    ppid: i32,
    own: u64,
    child: u64,
    io: Option<IoBytes>,
}

/// Totals of vanished members not yet seen folded into their parent.
#[derive(Debug, Clone, Copy, Default)]
struct Debt {
    ticks: u64,
    read: u64,
    write: u64,
    age: u8,
}

/// Usage of a tracked process set over one interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TreeDelta {
    /// Members alive at this tick (root first).
    pub pids: Vec<i32>,
    /// CPU clock ticks consumed during the interval.
    pub cpu_ticks: u64,
    /// Sum of members' RSS, in pages.
    pub rss_pages: u64,
    /// Storage bytes during the interval; `None` if any member's
    /// `/proc/PID/io` was unreadable now or at the previous tick.
    pub io: Option<IoBytes>,
}

impl TreeDelta {
    /// Two process sets' usage as one (the servers of one cluster).
    pub fn plus(mut self, other: TreeDelta) -> TreeDelta {
        self.pids.extend(other.pids);
        self.cpu_ticks += other.cpu_ticks;
        self.rss_pages += other.rss_pages;
        self.io = match (self.io, other.io) {
            (Some(a), Some(b)) => Some(IoBytes {
                read: a.read + b.read,
                write: a.write + b.write,
            }),
            _ => None,
        };
        self
    }
}

/// Tracks one root pid (with or without descendants) across ticks.
#[derive(Debug, Default)]
pub(super) struct TreeTracker {
    members: HashMap<i32, Member>,
    debts: HashMap<i32, Debt>,
    /// Count every member from its birth at the next update: a root handed over while the
    /// sampler runs (a server restarted during the step) did all its work within the step.
    from_birth: bool,
}

impl TreeTracker {
    /// A tracker whose first update counts each member's work since it was born.
    pub(super) fn from_birth() -> TreeTracker {
        TreeTracker {
            from_birth: true,
            ..TreeTracker::default()
        }
    }

    /// Records the current state of `root` (and, with `with_children`, its
    /// descendants) and returns usage since the previous call. `prev` is the
    /// table of the previous tick (empty for the baseline): a member absent
    /// from it was born during the interval and is counted from zero; one
    /// that existed but was not yet tracked is only baselined. Returns `None`
    /// if `root` is not in `cur`.
    pub fn update(
        &mut self,
        root: i32,
        prev: &ProcTable,
        cur: &ProcTable,
        with_children: bool,
    ) -> Option<TreeDelta> {
        let pids = if with_children {
            cur.tree(root)
        } else if cur.stats.contains_key(&root) {
            vec![root]
        } else {
            Vec::new()
        };
        if pids.is_empty() {
            self.members.clear();
            self.debts.clear();
            return None;
        }

        if with_children {
            self.age_debts();
            self.add_debts_of_vanished(cur);
        }

        let mut members = HashMap::with_capacity(pids.len());
        let mut cpu_ticks = 0u64;
        let mut rss_pages = 0u64;
        let mut io_sum = Some(IoBytes::default());
        for &pid in &pids {
            let Some(st) = cur.stats.get(&pid) else {
                continue;
            };
            let io = read_io(pid);
            let (d_own, mut d_child, mut d_io, member) = self.member_delta(pid, *st, io, prev);
            if !with_children {
                d_child = 0;
            } else {
                self.pay_debt(pid, &mut d_child, &mut d_io);
            }
            cpu_ticks = cpu_ticks.saturating_add(d_own.saturating_add(d_child));
            rss_pages = rss_pages.saturating_add(st.rss_pages);
            io_sum = match (io_sum, d_io) {
                (Some(s), Some(d)) => Some(IoBytes {
                    read: s.read.saturating_add(d.read),
                    write: s.write.saturating_add(d.write),
                }),
                _ => None,
            };
            members.insert(pid, member);
        }
        self.members = members;
        self.from_birth = false;
        self.debts.retain(|pid, d| {
            (d.ticks > 0 || d.read > 0 || d.write > 0) && self.members.contains_key(pid)
        });

        Some(TreeDelta {
            pids,
            cpu_ticks,
            rss_pages,
            io: io_sum,
        })
    }

    /// `pid`'s own ticks, reaped children's ticks and I/O since the previous tick, and what
    /// to remember of it: counted from its last state when tracked, from zero when born
    /// during the interval (or on a tracker counting [`from_birth`](Self::from_birth)),
    /// baselined only when it existed before but was not yet tracked.
    fn member_delta(
        &self,
        pid: i32,
        st: PidStat,
        io: Option<IoBytes>,
        prev: &ProcTable,
    ) -> (u64, u64, Option<IoBytes>, Member) {
        let known = self
            .members
            .get(&pid)
            .filter(|m| m.starttime == st.starttime)
            .copied();
        match known {
            Some(m) => {
                // Counters are monotonic for one process; keep the max so a
                // transient low read (zombie) cannot be counted twice.
                let own = st.own_ticks.max(m.own);
                let child = st.child_ticks.max(m.child);
                let d_io = match (io, m.io) {
                    (Some(c), Some(p)) => Some(IoBytes {
                        read: c.read.saturating_sub(p.read),
                        write: c.write.saturating_sub(p.write),
                    }),
                    _ => None,
                };
                let io_keep = match (io, m.io) {
                    (Some(c), Some(p)) => Some(IoBytes {
                        read: c.read.max(p.read),
                        write: c.write.max(p.write),
                    }),
                    (c, _) => c,
                };
                let member = Member {
                    starttime: st.starttime,
                    ppid: st.ppid,
                    own,
                    child,
                    io: io_keep,
                };
                (own - m.own, child - m.child, d_io, member)
            }
            None => {
                let born_in_interval = self.from_birth
                    || !prev.stats.is_empty()
                        && prev
                            .stats
                            .get(&pid)
                            .is_none_or(|p| p.starttime != st.starttime);
                let member = Member {
                    starttime: st.starttime,
                    ppid: st.ppid,
                    own: st.own_ticks,
                    child: st.child_ticks,
                    io,
                };
                if born_in_interval {
                    (st.own_ticks, st.child_ticks, io, member)
                } else {
                    // Existed before but only now tracked: baseline only.
                    (0, 0, io.map(|_| IoBytes::default()), member)
                }
            }
        }
    }

    /// Takes off `pid`'s reaped-children ticks and I/O what its vanished descendants left
    /// as a debt on it: already counted while they were members.
    fn pay_debt(&mut self, pid: i32, d_child: &mut u64, d_io: &mut Option<IoBytes>) {
        let Some(debt) = self.debts.get_mut(&pid) else {
            return;
        };
        let take = debt.ticks.min(*d_child);
        debt.ticks -= take;
        *d_child -= take;
        if let Some(d) = d_io.as_mut() {
            let r = debt.read.min(d.read);
            let w = debt.write.min(d.write);
            debt.read -= r;
            debt.write -= w;
            d.read -= r;
            d.write -= w;
        }
    }

    /// Ages debts by one tick and forgets those that waited too long.
    fn age_debts(&mut self) {
        self.debts.retain(|_, d| {
            d.age += 1;
            d.age <= DEBT_TICKS
        });
    }

    /// Members of the previous tick that are gone from `cur` leave their last
    /// totals as a debt on their nearest live ancestor, which will see them
    /// in `cutime` / its I/O counters once the chain of reaping reaches it
    /// (a grandchild folds into a child that, exiting, folds into us). Debts
    /// still owed by a vanished member move up the same way.
    fn add_debts_of_vanished(&mut self, cur: &ProcTable) {
        let vanished: HashSet<i32> = self
            .members
            .iter()
            .filter(|(pid, m)| {
                cur.stats
                    .get(pid)
                    .is_none_or(|s| s.starttime != m.starttime)
            })
            .map(|(&pid, _)| pid)
            .collect();
        let members = &self.members;
        let live_ancestor = |pid: i32| {
            let mut at = members.get(&pid).map_or(pid, |m| m.ppid);
            // Bounded: a pid cycle is impossible, but the bound makes sure.
            for _ in 0..members.len() {
                match members.get(&at) {
                    Some(m) if vanished.contains(&at) => at = m.ppid,
                    _ => break,
                }
            }
            at
        };
        let mut moved: Vec<(i32, Debt)> = Vec::new();
        for &pid in &vanished {
            let heir = live_ancestor(pid);
            if let Some(d) = self.debts.remove(&pid) {
                moved.push((heir, d));
            }
            if let Some(m) = members.get(&pid) {
                let io = m.io.unwrap_or_default();
                moved.push((
                    heir,
                    Debt {
                        ticks: m.own.saturating_add(m.child),
                        read: io.read,
                        write: io.write,
                        age: 0,
                    },
                ));
            }
        }
        for (heir, d) in moved {
            let debt = self.debts.entry(heir).or_default();
            debt.age = 0;
            debt.ticks = debt.ticks.saturating_add(d.ticks);
            debt.read = debt.read.saturating_add(d.read);
            debt.write = debt.write.saturating_add(d.write);
        }
    }
}
