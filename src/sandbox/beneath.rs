//! Root's writes inside directories a server's account owns, made through descriptors: each
//! path is resolved by the kernel beneath a directory that account cannot change, and no
//! symbolic link is followed on the way (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`), so the account cannot point a write of root's at a file of its
//! choosing by planting a link, or a directory's place, anywhere below.

use super::{Result, SandboxError, ServiceUser};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// A directory nobody but root (or dbduel's user) can change, open for writes below it.
pub struct Beneath {
    dir: File,
    path: PathBuf,
}

impl Beneath {
    /// Open `trusted`: a directory only root or dbduel's own user can write into (it is
    /// opened by its path, and no link is followed at its last component).
    pub fn open(trusted: &Path) -> Result<Beneath> {
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(trusted)
            .map_err(|e| SandboxError::Io(format!("cannot open {}: {e}", trusted.display())))?;
        Ok(Beneath {
            dir,
            path: trusted.to_path_buf(),
        })
    }

    /// Open `path` (absolute, under the trusted directory; or relative to it) with `flags`.
    /// `RESOLVE_NO_SYMLINKS` refuses a link at the last component as well as on the way
    /// (ELOOP), so no `O_NOFOLLOW` is needed (with `O_DIRECTORY` it would say ENOTDIR instead).
    fn open_at(&self, path: &Path, flags: OFlags, mode: u32) -> Result<File> {
        let rel = self.relative(path)?;
        self.open_rel(&rel, flags, mode)
            .map_err(|e| refused(&self.path.join(&rel), e))
    }

    /// [`Beneath::open_at`] of a path already relative, with the system's error.
    fn open_rel(&self, rel: &Path, flags: OFlags, mode: u32) -> std::io::Result<File> {
        let fd = rustix::fs::openat2(
            &self.dir,
            rel,
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )?;
        Ok(File::from(fd))
    }

    /// `path` relative to the trusted directory, with nothing to climb out by.
    fn relative(&self, path: &Path) -> Result<PathBuf> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.path).map_err(|_| {
                SandboxError::Io(format!(
                    "{} is not under {}",
                    path.display(),
                    self.path.display()
                ))
            })?
        } else {
            path
        };
        if rel.as_os_str().is_empty()
            || !rel.components().all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(SandboxError::Io(format!(
                "{} names no file below {}",
                path.display(),
                self.path.display()
            )));
        }
        Ok(rel.to_path_buf())
    }

    /// Write `bytes` into a new file at `path` (never one already there), `mode`, given to
    /// `owner` when there is one (through the open file).
    pub fn write_new(
        &self,
        path: &Path,
        bytes: &[u8],
        mode: u32,
        owner: Option<&ServiceUser>,
    ) -> Result<()> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        let mut f = self.open_at(path, flags, mode)?;
        let err =
            |e: std::io::Error| SandboxError::Io(format!("cannot write {}: {e}", path.display()));
        give(&f, path, owner, mode)?;
        f.write_all(bytes).map_err(err)?;
        f.sync_all().map_err(err)
    }

    /// Append `bytes` to the file at `path`.
    pub fn append(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let mut f = self.open_at(path, OFlags::WRONLY | OFlags::APPEND, 0)?;
        f.write_all(bytes)
            .map_err(|e| SandboxError::Io(format!("cannot write {}: {e}", path.display())))
    }

    /// The bytes of the file at `path`.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>> {
        let mut f = self.open_at(path, OFlags::RDONLY, 0)?;
        let mut v = Vec::new();
        f.read_to_end(&mut v)
            .map_err(|e| SandboxError::Io(format!("cannot read {}: {e}", path.display())))?;
        Ok(v)
    }

    /// Make the directory `path` (its parent must exist; one already there is taken when it
    /// is a real directory), `mode`, given to `owner` when there is one.
    pub fn mkdir(&self, path: &Path, mode: u32, owner: Option<&ServiceUser>) -> Result<()> {
        let rel = self.relative(path)?;
        let name = rel.file_name().map(PathBuf::from).unwrap_or_default();
        let parent = match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => self.open_at(p, OFlags::RDONLY | OFlags::DIRECTORY, 0)?,
            None => self.dir.try_clone().map_err(|e| {
                SandboxError::Io(format!("cannot open {}: {e}", self.path.display()))
            })?,
        };
        match rustix::fs::mkdirat(&parent, &name, Mode::from_raw_mode(mode)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => {
                return Err(SandboxError::Io(format!(
                    "cannot create {}: {}",
                    path.display(),
                    std::io::Error::from(e)
                )));
            }
        }
        let made = self.open_at(&rel, OFlags::RDONLY | OFlags::DIRECTORY, 0)?;
        give(&made, path, owner, mode)
    }

    /// Copy the directory tree `from` (dbduel's own, read by path) to `to` below the trusted
    /// directory (made here), every directory and file given to `owner`.
    pub fn copy_tree(&self, from: &Path, to: &Path, owner: Option<&ServiceUser>) -> Result<()> {
        let io = |p: &Path, e: std::io::Error| {
            SandboxError::Io(format!("cannot copy {}: {e}", p.display()))
        };
        self.mkdir(to, 0o700, owner)?;
        for entry in std::fs::read_dir(from).map_err(|e| io(from, e))? {
            let entry = entry.map_err(|e| io(from, e))?;
            let (src, dst) = (entry.path(), to.join(entry.file_name()));
            let kind = entry.file_type().map_err(|e| io(&src, e))?;
            if kind.is_dir() {
                self.copy_tree(&src, &dst, owner)?;
            } else if kind.is_file() {
                let bytes = std::fs::read(&src).map_err(|e| io(&src, e))?;
                let mode = entry
                    .metadata()
                    .map_err(|e| io(&src, e))?
                    .permissions()
                    .mode();
                self.write_new(&dst, &bytes, mode & 0o700, owner)?;
            }
        }
        Ok(())
    }
}

/// What a copy from another account's tree does with one entry (by its path below the tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Copy it (a directory with all it holds).
    All,
    /// A directory made empty at the copy; a file left out.
    Empty,
    /// Left out.
    Skip,
}

impl Beneath {
    /// Copy the tree `from` below `src` (a directory another account owns: every file in it
    /// must be `source_uid`'s when given) to `to` below this directory (made here), each
    /// directory and file given to `owner`, each entry as `take` says for its path below
    /// `from`. No link is followed, on either side: one in the tree stops the copy. A file
    /// that is gone by the time it is opened is left out (the tree of a running server).
    /// Returns the bytes copied.
    pub fn copy_tree_from(
        &self,
        src: &Beneath,
        from: &Path,
        to: &Path,
        owner: Option<&ServiceUser>,
        source_uid: Option<u32>,
        take: &dyn Fn(&Path) -> Take,
    ) -> Result<u64> {
        let from = src.relative(from)?;
        let to = self.relative(to)?;
        self.mkdir(&to, 0o700, owner)?;
        let walk = Walk {
            src,
            owner,
            source_uid,
            take,
        };
        walk.dir(self, &from, &to, Path::new(""))
    }
}

/// One copy of another account's tree ([`Beneath::copy_tree_from`]).
struct Walk<'a> {
    src: &'a Beneath,
    owner: Option<&'a ServiceUser>,
    source_uid: Option<u32>,
    take: &'a dyn Fn(&Path) -> Take,
}

impl Walk<'_> {
    fn dir(&self, dst: &Beneath, from: &Path, to: &Path, below: &Path) -> Result<u64> {
        let shown = self.src.path.join(from);
        let io =
            |e: std::io::Error| SandboxError::Io(format!("cannot copy {}: {e}", shown.display()));
        // A directory the running server removed since it was listed is left out too.
        let d = match self
            .src
            .open_rel(from, OFlags::RDONLY | OFlags::DIRECTORY, 0)
        {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(refused(&shown, e)),
        };
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&d).map_err(|e| io(e.into()))? {
            let name = entry
                .map_err(|e| io(e.into()))?
                .file_name()
                .to_bytes()
                .to_vec();
            if name != b"." && name != b".." {
                names.push(std::ffi::OsString::from_vec(name));
            }
        }
        let mut bytes = 0;
        for name in names {
            let rel = below.join(&name);
            let take = (self.take)(&rel);
            if take == Take::Skip {
                continue;
            }
            let (src_path, dst_path) = (from.join(&name), to.join(&name));
            // Non-blocking, so a pipe planted in the tree cannot hold the copy.
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
            let f = match self.src.open_rel(&src_path, flags, 0) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(refused(&self.src.path.join(&src_path), e)),
            };
            let st = rustix::fs::fstat(&f).map_err(|e| io(e.into()))?;
            match rustix::fs::FileType::from_raw_mode(st.st_mode) {
                rustix::fs::FileType::Directory => {
                    dst.mkdir(&dst_path, st.st_mode & 0o700, self.owner)?;
                    if take == Take::All {
                        bytes += self.dir(dst, &src_path, &dst_path, &rel)?;
                    }
                }
                rustix::fs::FileType::RegularFile if take == Take::All => {
                    if let Some(uid) = self.source_uid
                        && st.st_uid != uid
                    {
                        return Err(SandboxError::Io(format!(
                            "refusing to copy {}: it belongs to uid {}, not to the account whose tree it is in",
                            self.src.path.join(&src_path).display(),
                            st.st_uid
                        )));
                    }
                    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
                    let mode = st.st_mode & 0o700;
                    let mut out = dst.open_at(&dst_path, flags, mode)?;
                    give(&out, &dst_path, self.owner, mode)?;
                    let mut f = f;
                    bytes += std::io::copy(&mut f, &mut out).map_err(io)?;
                }
                // Sockets, pipes and devices are the running server's, not its data.
                _ => {}
            }
        }
        Ok(bytes)
    }
}

/// Give the open `f` (at `path`) to `owner` and set its `mode`.
fn give(f: &File, path: &Path, owner: Option<&ServiceUser>, mode: u32) -> Result<()> {
    if let Some(u) = owner {
        std::os::unix::fs::fchown(f, Some(u.uid), Some(u.gid)).map_err(|e| {
            SandboxError::Io(format!(
                "cannot chown {} to {}: {e}",
                path.display(),
                u.name
            ))
        })?;
    }
    f.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| SandboxError::Io(format!("cannot set permissions on {}: {e}", path.display())))
}

/// The error of an open that met a link, climbed out or failed otherwise.
fn refused(path: &Path, e: std::io::Error) -> SandboxError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => SandboxError::Io(format!(
            "refusing {}: a symbolic link is on its way (the server's account may have planted it); dbduel writes and copies only through real directories",
            path.display()
        )),
        Some(libc::EXDEV) => SandboxError::Io(format!(
            "refusing {}: its path leaves the sandbox's directory",
            path.display()
        )),
        _ => SandboxError::Io(format!("cannot open {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_anywhere_below_is_never_followed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (base, outside) = (tmp.path().join("base"), tmp.path().join("outside"));
        std::fs::create_dir_all(base.join("srv/data")).expect("mkdir");
        std::fs::create_dir(&outside).expect("mkdir");
        std::fs::write(outside.join("victim"), "untouched").expect("write");
        let b = Beneath::open(&base).expect("open");
        // A real path works.
        b.write_new(&base.join("srv/data/new"), b"x", 0o600, None)
            .expect("written");
        b.append(&base.join("srv/data/new"), b"y")
            .expect("appended");
        assert_eq!(b.read(Path::new("srv/data/new")).expect("read"), b"xy");
        b.mkdir(&base.join("srv/files"), 0o700, None).expect("made");
        b.mkdir(&base.join("srv/files"), 0o700, None)
            .expect("taken when it is there");
        // A link as the last component, and as a directory on the way.
        std::os::unix::fs::symlink(outside.join("victim"), base.join("srv/data/conf"))
            .expect("link");
        std::os::unix::fs::symlink(&outside, base.join("srv/link")).expect("link");
        let e = b
            .append(&base.join("srv/data/conf"), b"evil")
            .expect_err("a link at the end");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        for p in ["srv/link/victim", "srv/link/fresh"] {
            let e = b
                .write_new(&base.join(p), b"evil", 0o600, None)
                .expect_err("a link on the way");
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        let e = b
            .mkdir(&base.join("srv/link/d"), 0o700, None)
            .expect_err("mkdir through a link");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(b.read(Path::new("srv/link/victim")).is_err());
        // Nothing climbs out, nothing outside is named.
        assert!(
            b.write_new(Path::new("srv/../../outside/x"), b"", 0o600, None)
                .is_err()
        );
        assert!(b.write_new(&outside.join("x"), b"", 0o600, None).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("victim")).unwrap(),
            "untouched"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        // A file already there is never written over.
        assert!(
            b.write_new(&base.join("srv/data/new"), b"z", 0o600, None)
                .is_err()
        );
    }

    #[test]
    fn a_tree_is_copied_through_real_directories_only() {
        let tmp = tempfile::tempdir().expect("tmp");
        let from = tmp.path().join("from");
        std::fs::create_dir_all(from.join("a/b")).expect("mkdir");
        std::fs::write(from.join("top"), "1").expect("write");
        std::fs::write(from.join("a/b/deep"), "2").expect("write");
        let base = tmp.path().join("base");
        std::fs::create_dir(&base).expect("mkdir");
        let b = Beneath::open(&base).expect("open");
        b.copy_tree(&from, &base.join("data"), None)
            .expect("copied");
        assert_eq!(
            std::fs::read_to_string(base.join("data/a/b/deep")).unwrap(),
            "2"
        );
        assert_eq!(std::fs::read_to_string(base.join("data/top")).unwrap(), "1");
        // Into a place a link holds: refused.
        std::os::unix::fs::symlink(tmp.path(), base.join("held")).expect("link");
        assert!(b.copy_tree(&from, &base.join("held/data"), None).is_err());
        assert!(!tmp.path().join("data").exists());
    }

    #[test]
    fn another_accounts_tree_is_copied_as_taken_and_never_through_a_link() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (theirs, ours) = (tmp.path().join("theirs"), tmp.path().join("ours"));
        std::fs::create_dir_all(theirs.join("data/base/1")).expect("mkdir");
        std::fs::create_dir_all(theirs.join("data/pg_wal")).expect("mkdir");
        std::fs::create_dir(&ours).expect("mkdir");
        std::fs::write(theirs.join("data/base/1/1259"), "rows").expect("write");
        std::fs::write(theirs.join("data/pg_wal/000001"), "wal").expect("write");
        std::fs::write(theirs.join("data/postmaster.pid"), "42").expect("write");
        let fifo = theirs.join("data/pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("fifo");
        let (src, dst) = (
            Beneath::open(&theirs).expect("open"),
            Beneath::open(&ours).expect("open"),
        );
        let take = |p: &Path| match p.to_str() {
            Some("pg_wal") => Take::Empty,
            Some("postmaster.pid") => Take::Skip,
            _ => Take::All,
        };
        let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&theirs).expect("stat"));
        let n = dst
            .copy_tree_from(
                &src,
                Path::new("data"),
                Path::new("copy"),
                None,
                Some(uid),
                &take,
            )
            .expect("copied");
        assert_eq!(n, 4, "only the table's bytes");
        assert_eq!(
            std::fs::read_to_string(ours.join("copy/base/1/1259")).unwrap(),
            "rows"
        );
        assert!(ours.join("copy/pg_wal").is_dir());
        assert_eq!(
            std::fs::read_dir(ours.join("copy/pg_wal")).unwrap().count(),
            0
        );
        assert!(!ours.join("copy/postmaster.pid").exists());
        assert!(!ours.join("copy/pipe").exists(), "a pipe is not data");
        // A file of another owner's is refused.
        let e = dst
            .copy_tree_from(
                &src,
                Path::new("data"),
                Path::new("again"),
                None,
                Some(uid + 1),
                &take,
            )
            .expect_err("not the account's");
        assert!(e.to_string().contains("belongs to uid"), "{e}");
        // A link planted in the tree stops the copy; what it points at is never read.
        std::fs::write(tmp.path().join("secret"), "root's").expect("write");
        std::os::unix::fs::symlink(tmp.path().join("secret"), theirs.join("data/base/1/2600"))
            .expect("link");
        let e = dst
            .copy_tree_from(
                &src,
                Path::new("data"),
                Path::new("linked"),
                None,
                Some(uid),
                &take,
            )
            .expect_err("a link");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!ours.join("linked/base/1/2600").exists());
    }
}
