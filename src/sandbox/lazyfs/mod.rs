//! A filesystem that loses what was not synced, as a machine losing power does (the model of
//! Jepsen's lazyfs), for the crash step's `fault = "power"`. Mounted through FUSE over a
//! server's data directory, it serves the directory's own files: writes stay in memory until
//! the file is synced (`fsync`/`fdatasync`), and names made, removed or renamed stay undoable
//! until a sync makes them durable: any file's or directory's, as a journaling filesystem
//! (ext4, XFS) commits its whole journal then, or — POSIX's letter, `strict_names` — their
//! own directory's. [`LazyMount::lose_power`] forgets both and unmounts;
//! [`LazyMount::unmount`] keeps everything, as a clean shutdown would. The OS's own writeback
//! (a real kernel writes dirty pages out within about 30 s) is not modelled: a power loss here
//! loses everything unsynced, the worst case.

mod fuse;
mod journal;
mod pages;
mod tree;

use fuse::LazyFs;
use journal::Journal;
use rustix::fs::{Mode, OFlags};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tree::{ASIDE, Io, State, err, remove_tree};

/// The name the mount goes by in the mount table.
const FS_NAME: &str = "dbduel-lazyfs";

/// Unmount a power-loss filesystem a dbduel that died left over `dir` (its daemon gone with
/// it, every call on it fails): only a mount of this name exactly at `dir` is touched,
/// detached so a process still in it cannot stop the removal. Whether there was one.
pub fn unmount_left(dir: &Path) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    // The mount table writes a space in a path as \040.
    let at = dir.to_string_lossy().replace(' ', "\\040");
    let ours = table.lines().any(|l| {
        let mut f = l.split(' ');
        f.next() == Some(FS_NAME) && f.next() == Some(at.as_str())
    });
    if !ours {
        return false;
    }
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; umount2 touches no memory of ours.
    unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) == 0 }
}

/// A lazy filesystem mounted over a directory, serving that directory's own files.
pub struct LazyMount {
    state: Arc<Mutex<State>>,
    session: Option<fuser::BackgroundSession>,
    path: PathBuf,
}

/// What a power loss took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lost {
    /// Unsynced bytes the files' writers had written.
    pub bytes: u64,
    /// Files with unsynced writes.
    pub files: u64,
    /// Names made, removed or renamed in directories not synced since, undone.
    pub names: u64,
}

impl From<Lost> for crate::engine::UnsyncedLost {
    fn from(l: Lost) -> Self {
        crate::engine::UnsyncedLost {
            bytes: l.bytes,
            files: l.files,
            names: l.names,
        }
    }
}

impl LazyMount {
    /// Mount over `dir`, whose files it then serves (opened beneath it before the mount
    /// hides them). Every account may use it, with the files' own permissions. With
    /// `strict_names` a name change is durable only once its directory is synced (POSIX);
    /// without, at the next sync of any file or directory (ext4, XFS).
    pub fn over(dir: &Path, strict_names: bool) -> Io<LazyMount> {
        let root = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(err)?;
        match rustix::fs::mkdirat(&root, ASIDE, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(err(e)),
        }
        let state = Arc::new(Mutex::new(State::new(root, strict_names)));
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName(FS_NAME.into()),
            fuser::MountOption::DefaultPermissions,
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
        ];
        config.acl = fuser::SessionACL::All;
        let session = fuser::spawn_mount(LazyFs(state.clone()), dir, &config)?;
        Ok(LazyMount {
            state,
            session: Some(session),
            path: dir.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn strict_names(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .strict_names
    }

    /// Bytes written and not synced, now.
    pub fn unsynced_bytes(&self) -> u64 {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.held as u64
    }

    /// From now on every call on the mount fails with an I/O error (the power is going; its
    /// users end, then [`lose_power`](Self::lose_power)).
    pub fn cut(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).dark = true;
    }

    /// The power goes: what was not synced is forgotten, and the directory holds what a
    /// machine would find on its disk when it came back. Whoever used the mount must be gone
    /// (killed) first; the mount is removed.
    pub fn lose_power(mut self) -> Io<Lost> {
        let lost = {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            s.dark = true;
            let lost = Lost {
                bytes: s.files.values().map(|u| u.held() as u64).sum(),
                files: s.files.values().filter(|u| u.held() > 0).count() as u64,
                names: s.journal.len() as u64,
            };
            s.files.clear();
            s.handles.clear();
            let root = s.root.try_clone()?;
            let (_, failed) = s.journal.undo_all(&root);
            if let Some(f) = failed {
                return Err(io::Error::other(format!(
                    "cannot undo an unsynced change: {f}"
                )));
            }
            lost
        };
        self.finish()?;
        Ok(lost)
    }

    /// Unmount keeping everything, as a clean shutdown writes out what it holds.
    pub fn unmount(mut self) -> Io<()> {
        self.keep_all()?;
        self.finish()
    }

    fn keep_all(&mut self) -> Io<()> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let inos: Vec<u64> = s.files.keys().copied().collect();
        for ino in inos {
            match s.path(ino).and_then(|p| s.open_file(&p)) {
                Ok(f) => s.sync_file(ino, &f)?,
                // Its name is gone: so are its bytes.
                Err(_) => s.forget_file(ino),
            }
        }
        s.journal = Journal::default();
        s.dark = true;
        Ok(())
    }

    fn finish(&mut self) -> Io<()> {
        if let Some(session) = self.session.take() {
            session.umount_and_join()?;
        }
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match remove_tree(&s.root, Path::new(ASIDE)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

impl Drop for LazyMount {
    /// Dropped without a choice (an error on the way): unmount, keeping what was unsynced.
    fn drop(&mut self) {
        if self.session.is_some() {
            let _ = self.keep_all();
            let _ = self.finish();
        }
    }
}
