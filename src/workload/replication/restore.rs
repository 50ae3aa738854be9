//! What a replication step changes on a topology, put back however the step ends: the
//! replicas whose apply it paused start applying again, and the primary gets its own
//! group-commit wait back — on success, on an error returned by `?` and on a panic, since
//! the topology may be someone else's (`control_replication = true`).

use crate::engine::replication::Replicated;

/// Restores on drop what the step changed so far.
pub struct Restore<'a> {
    repl: &'a dyn Replicated,
    paused: Vec<usize>,
    commit_wait: Option<(u64, u64)>,
}

impl<'a> Restore<'a> {
    /// Nothing changed yet.
    pub fn new(repl: &'a dyn Replicated) -> Self {
        Restore {
            repl,
            paused: Vec::new(),
            commit_wait: None,
        }
    }

    /// Pause replica `i`'s apply; it is resumed on drop.
    pub fn pause(&mut self, i: usize) -> crate::engine::Result<()> {
        // Noted first: a pause that failed half-way is resumed too (resuming is harmless).
        self.paused.push(i);
        self.repl.pause_apply(i)
    }

    /// Set the primary's group-commit wait; its original values are put back on drop.
    pub fn set_commit_wait(&mut self, count: u64, usec: u64) -> crate::engine::Result<(u64, u64)> {
        let original = self.repl.set_commit_wait(count, usec)?;
        self.commit_wait.get_or_insert(original);
        Ok(original)
    }

    /// Put everything back now, the commit wait first; its error, if any (the replicas are
    /// resumed whatever it says).
    pub fn now(&mut self) -> crate::engine::Result<()> {
        let restored = match self.commit_wait.take() {
            Some((count, usec)) => self.repl.set_commit_wait(count, usec).map(drop),
            None => Ok(()),
        };
        let mut resumed = Ok(());
        for i in std::mem::take(&mut self.paused) {
            if let Err(e) = self.repl.resume_apply(i) {
                resumed = Err(e);
            }
        }
        restored.and(resumed)
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let _ = self.now();
    }
}
