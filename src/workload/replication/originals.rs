//! The originals of what a replication step is about to change on a topology — which
//! replicas it pauses, the primary's group-commit wait — kept in the run directory
//! (`replication-originals.json`) before the change is made, so that a run killed half-way
//! (SIGKILL, a power cut) leaves what `dbduel restore` needs to put them back. Servers are
//! named as results show targets, without a password: the password comes from the study's
//! `password_env`/`password_file` when restoring.

use crate::engine::replication::Replicated;
use crate::engine::{EngineError, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file's name in the run directory.
pub const FILE: &str = "replication-originals.json";

/// The file in run directory `run_dir`.
pub fn path_in(run_dir: &Path) -> PathBuf {
    run_dir.join(FILE)
}

/// A replica whose apply the step paused (it was applying before).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausedReplica {
    /// Its index in the contender's `replicas`.
    pub index: usize,
    pub name: String,
    /// Where it is, without a password.
    pub server: String,
    /// Whether the step stopped its receiving too (it was receiving before).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fetch_paused: bool,
}

/// The primary's group-commit wait before the step changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitWait {
    pub binlog_commit_wait_count: u64,
    pub binlog_commit_wait_usec: u64,
}

/// What one step changed, as its originals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Originals {
    /// Says what the file is, for someone who finds it.
    pub what: String,
    pub contender: String,
    pub step: String,
    /// The primary, without a password.
    pub primary: String,
    /// Replicas to start applying again.
    pub paused: Vec<PausedReplica>,
    /// The primary's values to set again.
    pub commit_wait: Option<CommitWait>,
}

impl Originals {
    /// Nothing changed yet by `step` of `contender` on `repl`.
    pub fn new(contender: &str, step: &str, repl: &dyn Replicated) -> Self {
        Originals {
            what: "what a replication step changed on a topology, to put back: run `dbduel restore <this run directory>`".into(),
            contender: contender.into(),
            step: step.into(),
            primary: repl.member_display(None),
            paused: Vec::new(),
            commit_wait: None,
        }
    }

    /// Write the file atomically (a reader sees the old or the new one, never a part).
    pub fn write(&self, path: &Path) -> Result<()> {
        let io = |e: String| {
            EngineError::new(
                "io",
                format!(
                    "cannot record the topology's originals in {} before changing it: {e}",
                    path.display()
                ),
            )
        };
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| io(e.to_string()))?;
        crate::results::write_atomic(path, &bytes).map_err(|e| io(e.to_string()))
    }

    /// The file at `path`, or `None` when there is none.
    pub fn read(path: &Path) -> std::result::Result<Option<Self>, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{} is not dbduel's originals file: {e}", path.display()))
    }

    /// Put every original back on `repl`: the primary's commit wait, then each paused
    /// replica applying. Idempotent: a replica already applying is started again harmlessly,
    /// a value already back is set to itself. The first error, after trying everything.
    pub fn put_back(&self, repl: &dyn Replicated) -> Result<()> {
        let mut first = match self.commit_wait {
            Some(w) => repl.put_commit_wait(w.binlog_commit_wait_count, w.binlog_commit_wait_usec),
            None => Ok(()),
        };
        for r in &self.paused {
            let fetch = if r.fetch_paused {
                repl.resume_fetch(r.index)
            } else {
                Ok(())
            };
            if let Err(e) = fetch.and(repl.resume_apply(r.index))
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    /// In words, for the user: what is (or was) changed.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.paused.is_empty() {
            let names: Vec<String> = self
                .paused
                .iter()
                .map(|r| {
                    let what = if r.fetch_paused {
                        ", receiving too"
                    } else {
                        ""
                    };
                    format!("{} ({}{what})", r.name, r.server)
                })
                .collect();
            parts.push(format!("apply paused on {}", names.join(", ")));
        }
        if let Some(w) = self.commit_wait {
            parts.push(format!(
                "binlog_commit_wait_count = {}, binlog_commit_wait_usec = {} to set again on {}",
                w.binlog_commit_wait_count, w.binlog_commit_wait_usec, self.primary
            ));
        }
        if parts.is_empty() {
            parts.push("nothing changed yet".into());
        }
        format!(
            "contender {}, step {}: {}",
            self.contender,
            self.step,
            parts.join("; ")
        )
    }
}

/// The environment variable that makes the replication step it names fail right after its
/// first change to the topology, for the tests of what a failed step leaves (tests/
/// e2e_replication.rs). Read only by debug builds.
pub const FAIL_AFTER_CHANGE_ENV: &str = "DBDUEL_TEST_FAIL_AFTER_CHANGE";

/// An error when [`FAIL_AFTER_CHANGE_ENV`] names `step` (debug builds only).
pub fn injected_failure(step: &str) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var(FAIL_AFTER_CHANGE_ENV).is_ok_and(|v| v == step) {
        return Err(EngineError::new(
            "test",
            format!(
                "{FAIL_AFTER_CHANGE_ENV} asked step `{step}` to fail after changing the topology"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_reads_back_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = path_in(dir.path());
        assert_eq!(Originals::read(&path), Ok(None));
        let o = Originals {
            what: "x".into(),
            contender: "c".into(),
            step: "s".into(),
            primary: "mysql://root@127.0.0.1:1/".into(),
            paused: vec![PausedReplica {
                index: 0,
                name: "r1".into(),
                server: "mysql://root@127.0.0.1:2/".into(),
                fetch_paused: false,
            }],
            commit_wait: Some(CommitWait {
                binlog_commit_wait_count: 3,
                binlog_commit_wait_usec: 7,
            }),
        };
        o.write(&path).expect("written");
        assert_eq!(Originals::read(&path), Ok(Some(o.clone())));
        assert!(
            o.describe().contains("apply paused on r1"),
            "{}",
            o.describe()
        );
        std::fs::write(&path, "{").expect("garbage");
        assert!(Originals::read(&path).is_err());
    }
}
