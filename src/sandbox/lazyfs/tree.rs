//! The tree a power-loss filesystem serves: its names by inode number, the writes each file
//! holds unsynced, the open handles and the journal of name changes not yet durable; every
//! operation as a caller of the mount makes it, done on the synced tree beneath (through a
//! descriptor opened before the mount hid it) or held in memory.

use super::journal::{Journal, Undo};
use super::pages::Unsynced;
use fuser::{FileAttr, FileType, INodeNo, RenameFlags, ReplyDirectory, Request};
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Where removed names wait, inside the tree's root and hidden from it, until their
/// directory is synced.
pub(super) const ASIDE: &str = ".dbduel-unsynced";
/// Unsynced bytes held before a file's are written out, as memory pressure would.
const MAX_HELD: usize = 1 << 30;
/// One name in the tree: its directory and the name in it.
pub(super) struct Node {
    pub(super) parent: u64,
    pub(super) name: OsString,
}

pub(super) struct State {
    pub(super) root: OwnedFd,
    pub(super) nodes: HashMap<u64, Node>,
    pub(super) files: HashMap<u64, Unsynced>,
    pub(super) handles: HashMap<u64, (u64, File)>,
    pub(super) next_fh: u64,
    pub(super) journal: Journal,
    pub(super) next_aside: u64,
    pub(super) held: usize,
    /// Power lost: every request fails until the mount is gone.
    pub(super) dark: bool,
    /// Names durable only once their own directory is synced (POSIX's letter); otherwise
    /// every name change is durable at the next sync of any file or directory, as a
    /// journaling filesystem (ext4, XFS) commits its journal then.
    pub(super) strict_names: bool,
}

pub(super) type Io<T> = io::Result<T>;

pub(super) fn err(e: rustix::io::Errno) -> io::Error {
    e.into()
}

impl State {
    /// Nothing unsynced yet over the tree at `root`.
    pub(super) fn new(root: OwnedFd, strict_names: bool) -> State {
        State {
            root,
            nodes: HashMap::new(),
            files: HashMap::new(),
            handles: HashMap::new(),
            next_fh: 0,
            journal: Journal::default(),
            next_aside: 0,
            held: 0,
            dark: false,
            strict_names,
        }
    }

    pub(super) fn path(&self, ino: u64) -> Io<PathBuf> {
        let mut names = Vec::new();
        let mut at = ino;
        while at != INodeNo::ROOT.0 {
            let n = self
                .nodes
                .get(&at)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
            names.push(n.name.clone());
            at = n.parent;
        }
        Ok(match names.is_empty() {
            true => PathBuf::from("."),
            false => names.iter().rev().collect(),
        })
    }

    pub(super) fn child(&self, parent: u64, name: &OsStr) -> Io<PathBuf> {
        if parent == INodeNo::ROOT.0 && name == ASIDE {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        Ok(self.path(parent)?.join(name))
    }

    pub(super) fn stat(&self, path: &Path) -> Io<rustix::fs::Stat> {
        rustix::fs::statat(&self.root, path, AtFlags::SYMLINK_NOFOLLOW).map_err(err)
    }

    pub(super) fn attr(&self, ino: u64, st: &rustix::fs::Stat) -> FileAttr {
        let time = |s: i64, ns: u64| UNIX_EPOCH + Duration::new(s.max(0) as u64, ns as u32);
        let mut size = st.st_size as u64;
        let mut blocks = st.st_blocks as u64;
        if let Some(u) = self.files.get(&ino) {
            size = u.size;
            blocks = blocks.max(size.div_ceil(512));
        }
        let kind = kind(rustix::fs::FileType::from_raw_mode(st.st_mode));
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks,
            atime: time(st.st_atime, st.st_atime_nsec),
            mtime: time(st.st_mtime, st.st_mtime_nsec),
            ctime: time(st.st_ctime, st.st_ctime_nsec),
            crtime: time(st.st_ctime, st.st_ctime_nsec),
            kind,
            perm: (st.st_mode & 0o7777) as u16,
            nlink: st.st_nlink as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev as u32,
            blksize: 4096,
            flags: 0,
        }
    }

    /// Look `name` up in `parent` and remember it under its inode number.
    pub(super) fn lookup(&mut self, parent: u64, name: &OsStr) -> Io<FileAttr> {
        let path = self.child(parent, name)?;
        let st = self.stat(&path)?;
        let ino = st.st_ino + 1;
        self.nodes.insert(
            ino,
            Node {
                parent,
                name: name.to_os_string(),
            },
        );
        Ok(self.attr(ino, &st))
    }

    pub(super) fn open_file(&self, path: &Path) -> Io<File> {
        let fd = rustix::fs::openat(
            &self.root,
            path,
            OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(err)?;
        Ok(File::from(fd))
    }

    pub(super) fn handle(&mut self, ino: u64, file: File) -> u64 {
        self.next_fh += 1;
        self.handles.insert(self.next_fh, (ino, file));
        self.next_fh
    }

    pub(super) fn file(&self, fh: u64) -> Io<&File> {
        self.handles
            .get(&fh)
            .map(|(_, f)| f)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    /// The unsynced state of `ino`, made over its synced size when there is none.
    pub(super) fn unsynced(&mut self, ino: u64, file: &File) -> Io<&mut Unsynced> {
        Ok(match self.files.entry(ino) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => v.insert(Unsynced::over(file.metadata()?.len())),
        })
    }

    pub(super) fn write(&mut self, fh: u64, offset: u64, data: &[u8]) -> Io<u32> {
        let (ino, file) = self
            .handles
            .remove(&fh)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
        let done = self.write_through(ino, &file, offset, data);
        self.handles.insert(fh, (ino, file));
        done
    }

    pub(super) fn write_through(
        &mut self,
        ino: u64,
        file: &File,
        offset: u64,
        data: &[u8],
    ) -> Io<u32> {
        let u = self.unsynced(ino, file)?;
        let before = u.held();
        u.write(file, offset, data)?;
        let after = u.held();
        self.held = self.held + after - before;
        if self.held > MAX_HELD {
            self.sync_file(ino, file)?;
        }
        Ok(data.len() as u32)
    }

    pub(super) fn sync_file(&mut self, ino: u64, file: &File) -> Io<()> {
        if let Some(mut u) = self.files.remove(&ino) {
            self.held -= u.held();
            u.sync(file)?;
        }
        if !self.strict_names {
            // A journaling filesystem's fsync commits its journal: every name change so far.
            self.sync_dir(INodeNo::ROOT.0);
        }
        Ok(())
    }

    pub(super) fn truncate(&mut self, ino: u64, size: u64) -> Io<()> {
        let path = self.path(ino)?;
        let file = self.open_file(&path)?;
        self.unsynced(ino, &file)?.truncate(size);
        Ok(())
    }

    /// A new name's owner is the one who asked; the journal can undo it until `parent` syncs.
    pub(super) fn made(
        &mut self,
        req: &Request,
        parent: u64,
        name: &OsStr,
        undo: Undo,
    ) -> Io<FileAttr> {
        let path = self.child(parent, name)?;
        rustix::fs::chownat(
            &self.root,
            &path,
            Some(rustix::fs::Uid::from_raw(req.uid())),
            Some(rustix::fs::Gid::from_raw(req.gid())),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(err)?;
        self.journal.record(undo, &[parent]);
        self.lookup(parent, name)
    }

    /// Move the name at `path` aside, to be put back if the power goes before `parent` syncs.
    pub(super) fn set_aside(&mut self, parent: u64, path: &Path) -> Io<()> {
        self.next_aside += 1;
        let aside = Path::new(ASIDE).join(self.next_aside.to_string());
        rustix::fs::renameat(&self.root, path, &self.root, &aside).map_err(err)?;
        self.journal.record(
            Undo::PutBack {
                aside,
                path: path.to_path_buf(),
            },
            &[parent],
        );
        Ok(())
    }

    pub(super) fn remove(&mut self, parent: u64, name: &OsStr, dir: bool) -> Io<()> {
        let path = self.child(parent, name)?;
        if let Ok(st) = self.stat(&path) {
            self.forget_file(st.st_ino + 1);
        }
        if self.journal.forget_made(&path) {
            let flags = if dir {
                AtFlags::REMOVEDIR
            } else {
                AtFlags::empty()
            };
            return rustix::fs::unlinkat(&self.root, &path, flags).map_err(err);
        }
        if dir
            && rustix::fs::Dir::read_from(self.open_dir(&path)?)
                .map_err(err)?
                .count()
                > 2
        {
            return Err(io::Error::from_raw_os_error(libc::ENOTEMPTY));
        }
        self.set_aside(parent, &path)
    }

    pub(super) fn forget_file(&mut self, ino: u64) {
        if let Some(u) = self.files.remove(&ino) {
            self.held -= u.held();
        }
    }

    pub(super) fn open_dir(&self, path: &Path) -> Io<OwnedFd> {
        rustix::fs::openat(
            &self.root,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(err)
    }

    pub(super) fn rename(
        &mut self,
        from: (u64, &OsStr),
        to: (u64, &OsStr),
        flags: RenameFlags,
    ) -> Io<()> {
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let old = self.child(from.0, from.1)?;
        let new = self.child(to.0, to.1)?;
        let st = self.stat(&old)?;
        if let Ok(there) = self.stat(&new) {
            if flags.contains(RenameFlags::RENAME_NOREPLACE) {
                return Err(io::Error::from_raw_os_error(libc::EEXIST));
            }
            self.forget_file(there.st_ino + 1);
            // What the rename replaces comes back if the rename is undone.
            self.set_aside(to.0, &new)?;
        }
        rustix::fs::renameat(&self.root, &old, &self.root, &new).map_err(err)?;
        self.journal.record(
            Undo::MoveBack {
                from: new.clone(),
                to: old,
            },
            &[from.0, to.0],
        );
        self.nodes.insert(
            st.st_ino + 1,
            Node {
                parent: to.0,
                name: to.1.to_os_string(),
            },
        );
        Ok(())
    }

    /// A directory was synced: the changes that waited for it are durable (all changes, when
    /// names are not strict), and the names it removed can go for good.
    pub(super) fn sync_dir(&mut self, dir: u64) {
        let durable = match self.strict_names {
            true => self.journal.synced(dir),
            false => self.journal.take_all(),
        };
        for undo in durable {
            if let Undo::PutBack { aside, .. } = undo {
                let _ = remove_tree(&self.root, &aside);
            }
        }
    }

    pub(super) fn readdir(&self, ino: u64, offset: u64, reply: &mut ReplyDirectory) -> Io<()> {
        let dir = self.open_dir(&self.path(ino)?)?;
        let parent = self.nodes.get(&ino).map_or(INodeNo::ROOT.0, |n| n.parent);
        let entries = rustix::fs::Dir::read_from(&dir).map_err(err)?;
        let mut i = 0u64;
        for e in entries {
            let e = e.map_err(err)?;
            let name = OsStr::from_bytes(e.file_name().to_bytes());
            if ino == INodeNo::ROOT.0 && name == ASIDE {
                continue;
            }
            i += 1;
            if i <= offset {
                continue;
            }
            let at = match name.as_bytes() {
                b"." => ino,
                b".." => parent,
                _ => e.ino() + 1,
            };
            if reply.add(INodeNo(at), i, kind(e.file_type()), name) {
                break;
            }
        }
        Ok(())
    }
}

/// FUSE's name for a kind of file.
fn kind(t: rustix::fs::FileType) -> FileType {
    match t {
        rustix::fs::FileType::Directory => FileType::Directory,
        rustix::fs::FileType::Symlink => FileType::Symlink,
        rustix::fs::FileType::Socket => FileType::Socket,
        rustix::fs::FileType::Fifo => FileType::NamedPipe,
        _ => FileType::RegularFile,
    }
}

/// Remove `path` under `root`, a directory with all it holds.
pub(super) fn remove_tree(root: &OwnedFd, path: &Path) -> Io<()> {
    match rustix::fs::unlinkat(root, path, AtFlags::empty()) {
        Err(rustix::io::Errno::ISDIR) => {}
        other => return other.map_err(err),
    }
    let dir = rustix::fs::openat(
        root,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(err)?;
    for e in rustix::fs::Dir::read_from(&dir).map_err(err)? {
        let e = e.map_err(err)?;
        let name = OsStr::from_bytes(e.file_name().to_bytes());
        if name != "." && name != ".." {
            remove_tree(root, &path.join(name))?;
        }
    }
    rustix::fs::unlinkat(root, path, AtFlags::REMOVEDIR).map_err(err)
}
