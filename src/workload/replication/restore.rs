//! What a replication step changes on a topology, put back however the step ends: the
//! replicas whose apply it paused start applying again, and the primary gets its own
//! group-commit wait back — on success, on an error returned by `?` and on a panic, since
//! the topology may be someone else's (`control_replication = true`). Before each change the
//! originals are written to the run directory (see [`super::originals`]), so that a run
//! that dies without unwinding leaves what `dbduel restore` needs; the file goes once all is
//! back.

use super::originals::{CommitWait, Originals, PausedReplica, injected_failure};
use crate::engine::replication::Replicated;
use crate::workload::ctx::StepCtx;
use std::path::PathBuf;

/// Restores on drop what the step changed so far.
pub struct Restore<'a> {
    repl: &'a dyn Replicated,
    originals: Originals,
    /// Where the originals are kept (none in tests that run a step without a run directory).
    file: Option<PathBuf>,
    /// Whether the file holds this step's originals (once it first wrote them).
    recorded: bool,
}

impl<'a> Restore<'a> {
    /// Nothing changed yet by the step `ctx` runs.
    pub fn new(repl: &'a dyn Replicated, ctx: &StepCtx<'_>) -> Self {
        Self::at(repl, ctx.contender, ctx.step, ctx.originals)
    }

    /// Nothing changed yet by `step` of `contender`, its originals kept in `file`.
    fn at(
        repl: &'a dyn Replicated,
        contender: &str,
        step: &str,
        file: Option<&std::path::Path>,
    ) -> Self {
        Restore {
            repl,
            originals: Originals::new(contender, step, repl),
            file: file.map(|p| p.to_path_buf()),
            recorded: false,
        }
    }

    /// Record the originals as they are now; nothing is changed when this fails. A file
    /// an earlier step left (its put-back failed) is never overwritten: it holds the only
    /// record of the values to put back, and this step's would be the ones that step left.
    /// The step stops instead, before it changes anything.
    fn record(&mut self) -> crate::engine::Result<()> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        if !self.recorded {
            let earlier =
                Originals::read(path).map_err(|e| crate::engine::EngineError::new("io", e))?;
            if let Some(e) = earlier {
                return Err(crate::engine::EngineError::new(
                    "refused",
                    format!(
                        "the topology still holds what step `{}` of contender `{}` changed ({}): putting it back failed, so no replication step changes a topology again in this run; put it back with `dbduel restore` on this run's directory",
                        e.step,
                        e.contender,
                        e.describe()
                    ),
                ));
            }
        }
        self.originals.write(path)?;
        self.recorded = true;
        Ok(())
    }

    /// Pause replica `i`'s apply; it is resumed on drop.
    pub fn pause(&mut self, i: usize) -> crate::engine::Result<()> {
        if !self.originals.paused.iter().any(|r| r.index == i) {
            // Noted first: a pause that failed half-way is resumed too (resuming is harmless).
            self.originals.paused.push(PausedReplica {
                index: i,
                name: self.repl.replica_name(i),
                server: self.repl.member_display(Some(i)),
                fetch_paused: false,
            });
            if let Err(e) = self.record() {
                self.originals.paused.pop();
                return Err(e);
            }
        }
        self.repl.pause_apply(i)?;
        injected_failure(&self.originals.step)
    }

    /// Pause replica `i`'s receiving as well as its apply; both start again on drop.
    pub fn pause_fetch(&mut self, i: usize) -> crate::engine::Result<()> {
        self.pause(i)?;
        let r = self.originals.paused.iter_mut().find(|r| r.index == i);
        if let Some(r) = r.filter(|r| !r.fetch_paused) {
            // Noted first, as a pause is: a receiving started again is harmless.
            r.fetch_paused = true;
            self.record()?;
        }
        self.repl.pause_fetch(i)
    }

    /// Set the primary's group-commit wait; its original values are put back on drop.
    pub fn set_commit_wait(&mut self, count: u64, usec: u64) -> crate::engine::Result<(u64, u64)> {
        let original = match self.originals.commit_wait {
            Some(w) => (w.binlog_commit_wait_count, w.binlog_commit_wait_usec),
            None => {
                let (c, u) = self.repl.commit_wait()?;
                self.originals.commit_wait = Some(CommitWait {
                    binlog_commit_wait_count: c,
                    binlog_commit_wait_usec: u,
                });
                if let Err(e) = self.record() {
                    self.originals.commit_wait = None;
                    return Err(e);
                }
                (c, u)
            }
        };
        self.repl.set_commit_wait(count, usec)?;
        injected_failure(&self.originals.step)?;
        Ok(original)
    }

    /// Put everything back now, the commit wait first; its error, if any (the replicas are
    /// resumed whatever it says). When all is back the originals file goes; when not, it
    /// stays for `dbduel restore`.
    pub fn now(&mut self) -> crate::engine::Result<()> {
        let put = self.originals.put_back(self.repl);
        if put.is_ok() {
            self.originals.paused.clear();
            self.originals.commit_wait = None;
            if let Some(path) = &self.file {
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(crate::engine::EngineError::new(
                            "io",
                            format!("cannot remove {}: {e}", path.display()),
                        ));
                    }
                }
            }
        }
        put
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        if self.originals.paused.is_empty() && self.originals.commit_wait.is_none() {
            return;
        }
        if let Err(e) = self.now() {
            crate::errln!(
                "warning: could not put back what {} changed ({}): {e}; run `dbduel restore` on this run's directory",
                self.originals.step,
                self.originals.describe()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::replication::{Position, ReplicaFacts, ReplicaState, TableSum};
    use crate::engine::{EngineError, Result, Session};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A topology whose commit wait is (4, 10000) and can be set, but not put back while
    /// `broken`.
    struct Topology {
        broken: AtomicBool,
    }

    fn no<T>() -> Result<T> {
        Err(EngineError::new("unsupported", "not in this test"))
    }

    impl Replicated for Topology {
        fn replica_count(&self) -> usize {
            1
        }
        fn replica_name(&self, _r: usize) -> String {
            "r1".into()
        }
        fn replica_facts(&self, _r: usize) -> Result<ReplicaFacts> {
            no()
        }
        fn replica_pid(&self, _r: usize) -> Option<i32> {
            None
        }
        fn replica_gone(&self, _r: usize) -> Option<String> {
            None
        }
        fn controls_replication(&self) -> bool {
            true
        }
        fn pause_apply(&self, _r: usize) -> Result<()> {
            Ok(())
        }
        fn resume_apply(&self, _r: usize) -> Result<()> {
            Ok(())
        }
        fn primary_position(&self) -> Result<Position> {
            no()
        }
        fn replica_state(&self, _r: usize) -> Result<ReplicaState> {
            no()
        }
        fn checksums(&self, _m: Option<usize>) -> Result<Vec<TableSum>> {
            no()
        }
        fn checksum_rule(&self) -> &'static str {
            ""
        }
        fn replica_session(&self, _r: usize) -> Result<Box<dyn Session>> {
            no()
        }
        fn set_commit_wait(&self, _c: u64, _u: u64) -> Result<(u64, u64)> {
            Ok((4, 10_000))
        }
        fn put_commit_wait(&self, _c: u64, _u: u64) -> Result<()> {
            if self.broken.load(Ordering::Relaxed) {
                Err(EngineError::new("connection", "the primary went away"))
            } else {
                Ok(())
            }
        }
        fn commit_wait(&self) -> Result<(u64, u64)> {
            Ok((4, 10_000))
        }
        fn member_display(&self, m: Option<usize>) -> String {
            format!("127.0.0.1:{}", m.map_or(1, |i| i + 2))
        }
    }

    #[test]
    fn a_later_step_never_overwrites_originals_an_earlier_one_could_not_put_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = super::super::originals::path_in(dir.path());
        let t = Topology {
            broken: AtomicBool::new(true),
        };
        {
            let mut first = Restore::at(&t, "maria", "commit-wait", Some(&file));
            first.set_commit_wait(12, 100_000).expect("changed");
            assert!(first.now().is_err(), "the put-back fails");
        } // dropped: tried again, and failed again
        let kept = Originals::read(&file).expect("read").expect("kept");
        assert_eq!(kept.step, "commit-wait");
        assert_eq!(
            kept.commit_wait
                .map(|w| (w.binlog_commit_wait_count, w.binlog_commit_wait_usec)),
            Some((4, 10_000))
        );
        // The next step changes nothing and says why; the file is as the first step left it.
        let before = std::fs::read(&file).expect("bytes");
        let mut second = Restore::at(&t, "maria", "catch-up", Some(&file));
        let e = second.pause(0).expect_err("refused");
        assert!(
            e.message.contains("commit-wait") && e.message.contains("dbduel restore"),
            "{}",
            e.message
        );
        drop(second);
        assert_eq!(std::fs::read(&file).expect("bytes"), before);
        // Once put back (here, by a step whose own put-back works), the file goes.
        t.broken.store(false, Ordering::Relaxed);
        std::fs::remove_file(&file).expect("restored by hand");
        let mut third = Restore::at(&t, "maria", "catch-up", Some(&file));
        third.pause(0).expect("changed");
        third.now().expect("put back");
        assert!(!file.exists());
    }
}
