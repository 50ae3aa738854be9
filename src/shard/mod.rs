//! One shard of a run split over several processes or machines: which shard this is (from
//! `--shard I/N` or the index a scheduler sets), which clients are its own, and the meeting
//! point every shard waits at before a step and before each measured run.
//!
//! Together the N shards run exactly the unsharded study: client `c` belongs to shard
//! `c mod N` and keeps its id `c`, so its random stream, home warehouse and key range are the
//! unsharded run's; an open loop's rate is divided by the clients, so by the shards too. Steps
//! that are not divided among clients (a load, a footprint, a check) run on shard 0 alone.

pub mod barrier;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

pub use barrier::{Barrier, BarrierError};

/// Most shards a run may be split into.
pub const MAX_SHARDS: u32 = 1024;

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// `I/N`, e.g. `2/4` (shards 0/4 … 3/4).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad =
            || format!("--shard {s}: write it as I/N with 0 <= I < N <= {MAX_SHARDS}, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(index, count).ok_or_else(bad)
    }

    pub fn new(index: u32, count: u32) -> Option<Shard> {
        ((1..=MAX_SHARDS).contains(&count) && index < count).then_some(Shard { index, count })
    }

    /// The shard a scheduler's environment names, when `--shard` is not given: a Kubernetes
    /// Indexed Job's `JOB_COMPLETION_INDEX` with the count from `--shards` or
    /// `DBDUEL_SHARDS`; a Slurm job array's `SLURM_ARRAY_TASK_ID` and
    /// `SLURM_ARRAY_TASK_COUNT`, counted from `SLURM_ARRAY_TASK_MIN` (`--array=1-4` is shards 0
    /// to 3). `None` when nothing names one.
    pub fn from_env(
        shards: Option<u32>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, String> {
        let num = |var: &str| -> Result<Option<u32>, String> {
            match env(var) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{var}={v:?} is not a whole number")),
            }
        };
        let count = match shards {
            Some(n) => Some(n),
            None => num("DBDUEL_SHARDS")?,
        };
        let (index, count, from) = if let Some(i) = num("JOB_COMPLETION_INDEX")? {
            let n = count.ok_or(
                "JOB_COMPLETION_INDEX is set but not the number of shards: pass --shards N or set DBDUEL_SHARDS (the Job's completions)",
            )?;
            (i, n, "JOB_COMPLETION_INDEX")
        } else if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
            let i = id.saturating_sub(num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0));
            let n = match count {
                Some(n) => n,
                None => num("SLURM_ARRAY_TASK_COUNT")?.ok_or(
                    "SLURM_ARRAY_TASK_ID is set but not the number of shards: pass --shards N",
                )?,
            };
            (i, n, "SLURM_ARRAY_TASK_ID")
        } else if let Some(n) = shards {
            return Err(format!(
                "--shards {n} says how many shards there are, but not which one this is: pass --shard I/{n}, or run where JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID is set"
            ));
        } else {
            return Ok(None);
        };
        Shard::new(index, count).map(Some).ok_or_else(|| {
            format!(
                "{from}={index} is not a shard of {count}: it must be below the number of shards"
            )
        })
    }

    /// Does client `client` (its id in the unsharded run) belong to this shard?
    pub fn owns(&self, client: usize) -> bool {
        client % self.count as usize == self.index as usize
    }

    /// The shard that runs the steps not divided among clients (the load, checks).
    pub fn leads(&self) -> bool {
        self.index == 0
    }

    /// `shard-2-of-4`, for directory names.
    pub fn label(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A run group names the shards of one run in the barrier table: every shard must be given
/// the same one, and a new run a new one. Letters, digits, `.`, `_` and `-`, up to 64.
pub fn check_group(g: &str) -> Result<(), String> {
    let ok = !g.is_empty()
        && g.len() <= 64
        && g.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "run group {g:?}: use 1 to 64 letters, digits, '.', '_' or '-' (e.g. the Job's uid)"
        ))
    }
}

/// Where shards meet: the table in the target ([`Barrier`]), or anything else that returns
/// the instant every shard starts at.
pub trait Meet: Send + Sync {
    /// Wait at `point` for every shard; the instant they all start at.
    fn meet(&self, point: &str, stop: &AtomicBool) -> Result<Instant, BarrierError>;
}

impl Meet for Barrier {
    fn meet(&self, point: &str, stop: &AtomicBool) -> Result<Instant, BarrierError> {
        Barrier::meet(self, point, stop)
    }
}

/// What a step's runs need of the shard: whose clients to run, and where to meet the other
/// shards before each measured run. Cloned into each run's spec; the meeting points of one
/// step are numbered in the order the runs begin (every shard runs the same plan).
#[derive(Clone)]
pub struct Team {
    pub shard: Shard,
    barrier: Arc<dyn Meet>,
    step: String,
    runs: Arc<AtomicU32>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Team({} at {})", self.shard, self.step)
    }
}

impl Team {
    /// The team for one step (`contender/step`) of shard `shard`, meeting at `barrier`.
    pub fn new(shard: Shard, barrier: Arc<dyn Meet>, step: String) -> Team {
        Team {
            shard,
            barrier,
            step,
            runs: Arc::new(AtomicU32::new(0)),
        }
    }

    /// Wait until every shard is ready for the step's next run; returns the common instant to
    /// start it at.
    pub fn meet(&self, stop: &AtomicBool) -> Result<Instant, BarrierError> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        self.barrier.meet(&format!("{}#{n}", self.step), stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn shards_parse_and_refuse_what_is_not_one() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        for bad in ["4/4", "1", "a/2", "0/0", "-1/2", "0/5000"] {
            let e = Shard::parse(bad).unwrap_err();
            assert!(e.contains("write it as I/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn schedulers_name_the_shard() {
        let k8s = [("JOB_COMPLETION_INDEX", "3")];
        assert_eq!(
            Shard::from_env(Some(4), env(&k8s)),
            Ok(Some(Shard { index: 3, count: 4 }))
        );
        let k8s_env = [("JOB_COMPLETION_INDEX", "1"), ("DBDUEL_SHARDS", "2")];
        assert_eq!(
            Shard::from_env(None, env(&k8s_env)),
            Ok(Some(Shard { index: 1, count: 2 }))
        );
        let e = Shard::from_env(None, env(&k8s)).unwrap_err();
        assert!(e.contains("pass --shards N"), "{e}");
        let e = Shard::from_env(Some(3), env(&k8s)).unwrap_err();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=3 is not a shard of 3"),
            "{e}"
        );
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ];
        assert_eq!(
            Shard::from_env(None, env(&slurm)),
            Ok(Some(Shard { index: 0, count: 8 }))
        );
        let from_one = [
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(
            Shard::from_env(None, env(&from_one)),
            Ok(Some(Shard { index: 3, count: 4 }))
        );
        assert_eq!(Shard::from_env(None, env(&[])), Ok(None));
        let e = Shard::from_env(Some(4), env(&[])).unwrap_err();
        assert!(e.contains("pass --shard I/4"), "{e}");
    }

    #[test]
    fn every_client_belongs_to_exactly_one_shard() {
        let shards: Vec<Shard> = (0..4).map(|i| Shard::new(i, 4).unwrap()).collect();
        for c in 0..37 {
            assert_eq!(shards.iter().filter(|s| s.owns(c)).count(), 1, "client {c}");
        }
        assert!(shards[1].owns(5) && !shards[1].owns(4));
    }

    #[test]
    fn groups_are_plain_names() {
        assert!(check_group("job-7f3a.1_b").is_ok());
        for bad in ["", "a b", "x'; DROP", &"a".repeat(65)] {
            assert!(check_group(bad).is_err(), "{bad}");
        }
    }
}
