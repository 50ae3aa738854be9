//! What a replication step changes on a topology, put back however the step ends: the
//! replicas whose apply it paused start applying again, and the primary gets its own
//! group-commit wait back — on success, on an error returned by `?` and on a panic, since
//! the topology may be someone else's (`control_replication = true`). Before each change the
//! originals are written to the run directory (see [`super::originals`]), so that a run
//! that dies without unwinding leaves what `dbduel restore` needs; the file goes once all is
//! back.

use super::originals::{CommitWait, Originals, PausedReplica, injected_failure};
use crate::engine::replication::Replicated;
use crate::workload::StepCtx;
use std::path::PathBuf;

/// Restores on drop what the step changed so far.
pub struct Restore<'a> {
    repl: &'a dyn Replicated,
    originals: Originals,
    /// Where the originals are kept (none in tests that run a step without a run directory).
    file: Option<PathBuf>,
}

impl<'a> Restore<'a> {
    /// Nothing changed yet by the step `ctx` runs.
    pub fn new(repl: &'a dyn Replicated, ctx: &StepCtx<'_>) -> Self {
        Restore {
            repl,
            originals: Originals::new(ctx.contender, ctx.step, repl),
            file: ctx.originals.map(|p| p.to_path_buf()),
        }
    }

    /// Record the originals as they are now; nothing is changed when this fails.
    fn record(&self) -> crate::engine::Result<()> {
        match &self.file {
            Some(path) => self.originals.write(path),
            None => Ok(()),
        }
    }

    /// Pause replica `i`'s apply; it is resumed on drop.
    pub fn pause(&mut self, i: usize) -> crate::engine::Result<()> {
        if !self.originals.paused.iter().any(|r| r.index == i) {
            // Noted first: a pause that failed half-way is resumed too (resuming is harmless).
            self.originals.paused.push(PausedReplica {
                index: i,
                name: self.repl.replica_name(i),
                server: self.repl.member_display(Some(i)),
            });
            if let Err(e) = self.record() {
                self.originals.paused.pop();
                return Err(e);
            }
        }
        self.repl.pause_apply(i)?;
        injected_failure(&self.originals.step)
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
