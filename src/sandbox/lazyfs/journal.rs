//! Directory changes not yet synced. POSIX makes a new, removed or renamed name durable only
//! once its directory is synced (`fsync` on the directory); until then a power loss may undo
//! it. Each change is done at once on the synced tree and journaled with how to undo it and
//! the directories it waits for; a power loss undoes what is left, newest first.

use rustix::fs::AtFlags;
use std::path::{Path, PathBuf};

/// How to undo one change, by paths from the tree's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// A file or node made: remove it.
    Remove(PathBuf),
    /// A directory made: remove it.
    Rmdir(PathBuf),
    /// A name removed, its file kept aside at `aside`: put it back at `path`.
    PutBack { aside: PathBuf, path: PathBuf },
    /// A rename from `from` to `to`: move it back.
    MoveBack { from: PathBuf, to: PathBuf },
}

#[derive(Debug, Default)]
pub struct Journal {
    /// Each change, oldest first, with the directories (inode numbers) not synced since it.
    changes: Vec<(Undo, Vec<u64>)>,
}

impl Journal {
    pub fn record(&mut self, undo: Undo, dirs: &[u64]) {
        let mut dirs = dirs.to_vec();
        dirs.dedup();
        self.changes.push((undo, dirs));
    }

    /// Directory `dir` was synced: the changes that waited only for it are durable, and
    /// come back (a removed name's file kept aside can go for good).
    pub fn synced(&mut self, dir: u64) -> Vec<Undo> {
        for (_, dirs) in &mut self.changes {
            dirs.retain(|&d| d != dir);
        }
        let (durable, waiting) = std::mem::take(&mut self.changes)
            .into_iter()
            .partition(|(_, dirs)| dirs.is_empty());
        self.changes = waiting;
        durable.into_iter().map(|(u, _)| u).collect()
    }

    /// Every change is durable (a journaling filesystem committed its journal).
    pub fn take_all(&mut self) -> Vec<Undo> {
        self.changes.drain(..).map(|(u, _)| u).collect()
    }

    /// Is `path`'s making still undoable? Then removing it again just removes it (nothing
    /// to put back at a power loss) and forgets the making.
    pub fn forget_made(&mut self, path: &Path) -> bool {
        let made = self
            .changes
            .iter()
            .rposition(|(u, _)| matches!(u, Undo::Remove(p) | Undo::Rmdir(p) if p == path));
        match made {
            Some(i) => {
                self.changes.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// The power is lost: undo every change not yet durable, newest first, on the tree at
    /// `root`. Returns how many were undone and the first that could not be.
    pub fn undo_all(&mut self, root: impl rustix::fd::AsFd) -> (usize, Option<String>) {
        let mut undone = 0;
        let mut failed = None;
        for (undo, _) in self.changes.drain(..).rev() {
            let r = match &undo {
                Undo::Remove(p) => rustix::fs::unlinkat(&root, p, AtFlags::empty()),
                Undo::Rmdir(p) => rustix::fs::unlinkat(&root, p, AtFlags::REMOVEDIR),
                Undo::PutBack { aside, path } => rustix::fs::renameat(&root, aside, &root, path),
                Undo::MoveBack { from, to } => rustix::fs::renameat(&root, from, &root, to),
            };
            match r {
                Ok(()) => undone += 1,
                Err(e) => {
                    failed.get_or_insert_with(|| format!("{undo:?}: {e}"));
                }
            }
        }
        (undone, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_durable_once_every_directory_it_touched_is_synced() {
        let mut j = Journal::default();
        j.record(Undo::Remove("a".into()), &[1]);
        j.record(
            Undo::MoveBack {
                from: "d/b".into(),
                to: "b".into(),
            },
            &[1, 2],
        );
        assert_eq!(j.synced(1), [Undo::Remove("a".into())]);
        assert_eq!(j.len(), 1, "the rename still waits for d");
        assert_eq!(j.synced(2).len(), 1);
        assert_eq!(j.len(), 0);
    }

    #[test]
    fn undo_runs_newest_first_on_the_tree() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::File::open(d.path()).unwrap();
        let mut j = Journal::default();
        // made x, renamed it to y, made dir z: undone as rmdir z, y -> x, remove x.
        std::fs::write(d.path().join("x"), b"1").unwrap();
        j.record(Undo::Remove("x".into()), &[1]);
        std::fs::rename(d.path().join("x"), d.path().join("y")).unwrap();
        j.record(
            Undo::MoveBack {
                from: "y".into(),
                to: "x".into(),
            },
            &[1],
        );
        std::fs::create_dir(d.path().join("z")).unwrap();
        j.record(Undo::Rmdir("z".into()), &[1]);
        assert_eq!(j.undo_all(&root), (3, None));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn removing_an_unsynced_new_name_leaves_nothing_to_undo() {
        let mut j = Journal::default();
        j.record(Undo::Remove("t".into()), &[1]);
        assert!(j.forget_made(Path::new("t")));
        assert!(!j.forget_made(Path::new("t")));
        assert_eq!(j.len(), 0);
    }
}
