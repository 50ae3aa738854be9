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

mod journal;
mod pages;

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, WriteFlags,
};
use journal::{Journal, Undo};
use pages::Unsynced;
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where removed names wait, inside the tree's root and hidden from it, until their
/// directory is synced.
const ASIDE: &str = ".dbduel-unsynced";
/// Unsynced bytes held before a file's are written out, as memory pressure would.
const MAX_HELD: usize = 1 << 30;
const TTL: Duration = Duration::from_secs(1);

/// One name in the tree: its directory and the name in it.
struct Node {
    parent: u64,
    name: OsString,
}

struct State {
    root: OwnedFd,
    nodes: HashMap<u64, Node>,
    files: HashMap<u64, Unsynced>,
    handles: HashMap<u64, (u64, File)>,
    next_fh: u64,
    journal: Journal,
    next_aside: u64,
    held: usize,
    /// Power lost: every request fails until the mount is gone.
    dark: bool,
    /// Names durable only once their own directory is synced (POSIX's letter); otherwise
    /// every name change is durable at the next sync of any file or directory, as a
    /// journaling filesystem (ext4, XFS) commits its journal then.
    strict_names: bool,
}

type Io<T> = io::Result<T>;

fn err(e: rustix::io::Errno) -> io::Error {
    e.into()
}

impl State {
    fn path(&self, ino: u64) -> Io<PathBuf> {
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

    fn child(&self, parent: u64, name: &OsStr) -> Io<PathBuf> {
        if parent == INodeNo::ROOT.0 && name == ASIDE {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        Ok(self.path(parent)?.join(name))
    }

    fn stat(&self, path: &Path) -> Io<rustix::fs::Stat> {
        rustix::fs::statat(&self.root, path, AtFlags::SYMLINK_NOFOLLOW).map_err(err)
    }

    fn attr(&self, ino: u64, st: &rustix::fs::Stat) -> FileAttr {
        let time = |s: i64, ns: u64| UNIX_EPOCH + Duration::new(s.max(0) as u64, ns as u32);
        let mut size = st.st_size as u64;
        let mut blocks = st.st_blocks as u64;
        if let Some(u) = self.files.get(&ino) {
            size = u.size;
            blocks = blocks.max(size.div_ceil(512));
        }
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => FileType::Directory,
            libc::S_IFLNK => FileType::Symlink,
            libc::S_IFSOCK => FileType::Socket,
            libc::S_IFIFO => FileType::NamedPipe,
            _ => FileType::RegularFile,
        };
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
    fn lookup(&mut self, parent: u64, name: &OsStr) -> Io<FileAttr> {
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

    fn open_file(&self, path: &Path) -> Io<File> {
        let fd = rustix::fs::openat(
            &self.root,
            path,
            OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(err)?;
        Ok(File::from(fd))
    }

    fn handle(&mut self, ino: u64, file: File) -> u64 {
        self.next_fh += 1;
        self.handles.insert(self.next_fh, (ino, file));
        self.next_fh
    }

    fn file(&self, fh: u64) -> Io<&File> {
        self.handles
            .get(&fh)
            .map(|(_, f)| f)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    /// The unsynced state of `ino`, made over its synced size when there is none.
    fn unsynced(&mut self, ino: u64, file: &File) -> Io<&mut Unsynced> {
        Ok(match self.files.entry(ino) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => v.insert(Unsynced::over(file.metadata()?.len())),
        })
    }

    fn write(&mut self, fh: u64, offset: u64, data: &[u8]) -> Io<u32> {
        let (ino, file) = self
            .handles
            .remove(&fh)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
        let done = self.write_through(ino, &file, offset, data);
        self.handles.insert(fh, (ino, file));
        done
    }

    fn write_through(&mut self, ino: u64, file: &File, offset: u64, data: &[u8]) -> Io<u32> {
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

    fn sync_file(&mut self, ino: u64, file: &File) -> Io<()> {
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

    fn truncate(&mut self, ino: u64, size: u64) -> Io<()> {
        let path = self.path(ino)?;
        let file = self.open_file(&path)?;
        self.unsynced(ino, &file)?.truncate(size);
        Ok(())
    }

    /// A new name's owner is the one who asked; the journal can undo it until `parent` syncs.
    fn made(&mut self, req: &Request, parent: u64, name: &OsStr, undo: Undo) -> Io<FileAttr> {
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
    fn set_aside(&mut self, parent: u64, path: &Path) -> Io<()> {
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

    fn remove(&mut self, parent: u64, name: &OsStr, dir: bool) -> Io<()> {
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

    fn forget_file(&mut self, ino: u64) {
        if let Some(u) = self.files.remove(&ino) {
            self.held -= u.held();
        }
    }

    fn open_dir(&self, path: &Path) -> Io<OwnedFd> {
        rustix::fs::openat(
            &self.root,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(err)
    }

    fn rename(&mut self, from: (u64, &OsStr), to: (u64, &OsStr), flags: RenameFlags) -> Io<()> {
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
    fn sync_dir(&mut self, dir: u64) {
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

    fn readdir(&self, ino: u64, offset: u64, reply: &mut ReplyDirectory) -> Io<()> {
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
            let kind = match e.file_type() {
                rustix::fs::FileType::Directory => FileType::Directory,
                rustix::fs::FileType::Symlink => FileType::Symlink,
                rustix::fs::FileType::Socket => FileType::Socket,
                rustix::fs::FileType::Fifo => FileType::NamedPipe,
                _ => FileType::RegularFile,
            };
            if reply.add(INodeNo(at), i, kind, name) {
                break;
            }
        }
        Ok(())
    }
}

/// Remove `path` under `root`, a directory with all it holds.
fn remove_tree(root: &OwnedFd, path: &Path) -> Io<()> {
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

struct LazyFs(Arc<Mutex<State>>);

impl LazyFs {
    fn state(&self) -> Io<MutexGuard<'_, State>> {
        let s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match s.dark {
            true => Err(io::Error::from_raw_os_error(libc::EIO)),
            false => Ok(s),
        }
    }
}

fn no(e: io::Error) -> Errno {
    Errno::from(e)
}

macro_rules! answer {
    ($reply:expr, $what:expr, |$v:ident| $ok:expr) => {
        match $what {
            Ok($v) => $ok,
            Err(e) => $reply.error(no(e)),
        }
    };
}

impl Filesystem for LazyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = self.state().and_then(|mut s| s.lookup(parent.0, name));
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let r = self.state().and_then(|s| {
            let st = s.stat(&s.path(ino.0)?)?;
            Ok(s.attr(ino.0, &st))
        });
        answer!(reply, r, |a| reply.attr(&TTL, &a));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let r = self.state().and_then(|mut s| {
            let path = s.path(ino.0)?;
            if let Some(mode) = mode {
                rustix::fs::chmodat(
                    &s.root,
                    &path,
                    Mode::from_raw_mode(mode & 0o7777),
                    AtFlags::empty(),
                )
                .map_err(err)?;
            }
            if uid.is_some() || gid.is_some() {
                let (u, g) = (
                    uid.map(rustix::fs::Uid::from_raw),
                    gid.map(rustix::fs::Gid::from_raw),
                );
                rustix::fs::chownat(&s.root, &path, u, g, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(err)?;
            }
            if let Some(size) = size {
                s.truncate(ino.0, size)?;
            }
            let st = s.stat(&path)?;
            Ok(s.attr(ino.0, &st))
        });
        answer!(reply, r, |a| reply.attr(&TTL, &a));
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = self.state().and_then(|mut s| {
            let path = s.child(parent.0, name)?;
            let kind = rustix::fs::FileType::from_raw_mode(mode);
            let perm = Mode::from_raw_mode(mode & !umask & 0o7777);
            rustix::fs::mknodat(&s.root, &path, kind, perm, rdev as u64).map_err(err)?;
            s.made(req, parent.0, name, Undo::Remove(path))
        });
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)));
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.state().and_then(|mut s| {
            let path = s.child(parent.0, name)?;
            let perm = Mode::from_raw_mode(mode & !umask & 0o7777);
            rustix::fs::mkdirat(&s.root, &path, perm).map_err(err)?;
            s.made(req, parent.0, name, Undo::Rmdir(path))
        });
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self
            .state()
            .and_then(|mut s| s.remove(parent.0, name, false));
        answer!(reply, r, |_v| reply.ok());
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self
            .state()
            .and_then(|mut s| s.remove(parent.0, name, true));
        answer!(reply, r, |_v| reply.ok());
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = self
            .state()
            .and_then(|mut s| s.rename((parent.0, name), (newparent.0, newname), flags));
        answer!(reply, r, |_v| reply.ok());
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = self.state().and_then(|mut s| {
            let file = s.open_file(&s.path(ino.0)?)?;
            if flags.0 & libc::O_TRUNC != 0 {
                s.unsynced(ino.0, &file)?.truncate(0);
            }
            Ok(s.handle(ino.0, file))
        });
        answer!(reply, r, |fh| reply
            .opened(FileHandle(fh), FopenFlags::empty()));
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.state().and_then(|mut s| {
            let path = s.child(parent.0, name)?;
            let existed = s.stat(&path).is_ok();
            if existed && flags & libc::O_EXCL != 0 {
                return Err(io::Error::from_raw_os_error(libc::EEXIST));
            }
            let perm = Mode::from_raw_mode(mode & !umask & 0o7777);
            let fd = rustix::fs::openat(
                &s.root,
                &path,
                OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                perm,
            )
            .map_err(err)?;
            let file = File::from(fd);
            let attr = match existed {
                true => s.lookup(parent.0, name)?,
                false => s.made(req, parent.0, name, Undo::Remove(path))?,
            };
            if existed && flags & libc::O_TRUNC != 0 {
                s.unsynced(attr.ino.0, &file)?.truncate(0);
            }
            let fh = s.handle(attr.ino.0, file);
            Ok((attr, fh))
        });
        answer!(reply, r, |v| reply.created(
            &TTL,
            &v.0,
            Generation(0),
            FileHandle(v.1),
            FopenFlags::empty()
        ));
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        let r = self.state().and_then(|s| {
            let file = s.file(fh.0)?;
            match s.files.get(&ino.0) {
                Some(u) => u.read(file, offset, size as usize),
                None => Unsynced::over(file.metadata()?.len()).read(file, offset, size as usize),
            }
        });
        answer!(reply, r, |data| reply.data(&data));
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = self.state().and_then(|mut s| s.write(fh.0, offset, data));
        answer!(reply, r, |n| reply.written(n));
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // Closing syncs nothing.
        if let Ok(mut s) = self.state() {
            s.handles.remove(&fh.0);
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.state().and_then(|mut s| {
            let file = s.file(fh.0)?.try_clone()?;
            s.sync_file(ino.0, &file)
        });
        answer!(reply, r, |_v| reply.ok());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self
            .state()
            .and_then(|s| s.readdir(ino.0, offset, &mut reply));
        answer!(reply, r, |_v| reply.ok());
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.state().map(|mut s| s.sync_dir(ino.0));
        answer!(reply, r, |_v| reply.ok());
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let r = self
            .state()
            .and_then(|s| rustix::fs::fstatvfs(&s.root).map_err(err));
        answer!(reply, r, |v| reply.statfs(
            v.f_blocks,
            v.f_bfree,
            v.f_bavail,
            v.f_files,
            v.f_ffree,
            v.f_bsize as u32,
            v.f_namemax as u32,
            v.f_frsize as u32
        ));
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = self.state().and_then(|mut s| {
            if mode != 0 {
                return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
            }
            let file = s.file(fh.0)?.try_clone()?;
            let u = s.unsynced(ino.0, &file)?;
            if offset + length > u.size {
                u.truncate(offset + length);
            }
            Ok(())
        });
        answer!(reply, r, |_v| reply.ok());
    }
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
        let state = Arc::new(Mutex::new(State {
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
        }));
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("dbduel-lazyfs".into()),
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
