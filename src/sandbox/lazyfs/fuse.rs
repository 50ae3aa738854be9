//! The power-loss filesystem's side of FUSE: each request of the kernel answered from the
//! [`State`] of the tree, an error as its errno; once the power is cut every request fails
//! with EIO.

use super::journal::Undo;
use super::pages::Unsynced;
use super::tree::{Io, State, err};
use fuser::{
    Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite, Request, WriteFlags,
};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

const TTL: Duration = Duration::from_secs(1);

pub(super) struct LazyFs(pub(super) Arc<Mutex<State>>);

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
