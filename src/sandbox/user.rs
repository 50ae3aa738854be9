//! The unprivileged OS account a sandbox's server runs as when dbduel is root (PostgreSQL
//! refuses to run as root): one of the sandbox's own, made and removed with it; and the
//! private directories such a server writes into.

use super::{Result, SandboxError};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// An OS account.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServiceUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// Is dbduel running as root?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Look an account up by name.
pub fn lookup(name: &str) -> Option<ServiceUser> {
    let c = CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer to static storage or null; we copy out at once and
    // call it from one thread at a time in practice (sandbox creation is sequential).
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: pw is non-null and points to a valid passwd struct.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Some(ServiceUser {
        name: name.to_string(),
        uid,
        gid,
    })
}

/// The name of the usual private root, and the start of the ones dbduel makes beside it.
const ROOT_NAME: &str = "dbduel-sandboxes";

/// The private root this process uses (reachable by anyone, 0711; listable by dbduel's user
/// only): `$TMPDIR/dbduel-sandboxes` when it is dbduel's own and nobody else can swap any
/// directory above it; else a root of dbduel's own made beside it
/// (`dbduel-sandboxes-UID-RANDOM`), under `/tmp` when TMPDIR's own directories are not safe.
/// A root someone else made first is never used, and never stops a sandbox. Chosen once a
/// process (a `OnceLock`: every sandbox of a run shares it).
fn private_root() -> Result<PathBuf> {
    static CHOSEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(p) = CHOSEN.get() {
        return Ok(p.clone());
    }
    let chosen = choose_private_root()?;
    Ok(CHOSEN.get_or_init(|| chosen).clone())
}

fn choose_private_root() -> Result<PathBuf> {
    choose_private_root_in(&std::env::temp_dir())
}

/// [`private_root`]'s choice for a temporary directory `tmp`.
fn choose_private_root_in(tmp: &Path) -> Result<PathBuf> {
    let base = match safe_ancestors(tmp) {
        Ok(b) => b,
        Err(why) => safe_ancestors(Path::new("/tmp")).map_err(|e| {
            SandboxError::Io(format!(
                "no safe place for the private directories: TMPDIR {} ({why}) and /tmp ({e}); set TMPDIR to a directory of your own",
                tmp.display()
            ))
        })?,
    };
    let usual = base.join(ROOT_NAME);
    if open_private_root(&usual).is_ok() {
        return Ok(usual);
    }
    // Taken (or spoilt) by someone: one of dbduel's own beside it, a new name each try.
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut last = String::new();
    for _ in 0..8 {
        let mut r = [0u8; 6];
        // SAFETY: the pointer and length name `r`; getrandom writes at most that much.
        unsafe { libc::getrandom(r.as_mut_ptr().cast(), r.len(), 0) };
        let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
        let root = base.join(format!("{ROOT_NAME}-{me}-{hex}"));
        match open_private_root(&root) {
            Ok(_) => return Ok(root),
            Err(e) => last = e.to_string(),
        }
    }
    Err(SandboxError::Io(last))
}

/// `dir` made canonical, when every directory from `/` down to it is one no other account
/// can swap: owned by root or dbduel's user, and writable by no one else unless sticky
/// (`/tmp`, whose entries only their owners may rename or remove).
fn safe_ancestors(dir: &Path) -> std::result::Result<PathBuf, String> {
    let real = dir
        .canonicalize()
        .map_err(|e| format!("cannot resolve it: {e}"))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for a in real.ancestors() {
        let m = std::fs::metadata(a).map_err(|e| format!("cannot inspect {}: {e}", a.display()))?;
        let sticky = m.mode() & 0o1000 != 0;
        if m.uid() != 0 && m.uid() != me {
            return Err(format!("{} belongs to uid {}", a.display(), m.uid()));
        }
        if m.mode() & 0o022 != 0 && !sticky {
            return Err(format!(
                "other accounts can write into {} (mode {:04o})",
                a.display(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(real)
}

/// Is `p` a private root dbduel uses or used: named as they are, in TMPDIR or `/tmp`, and
/// dbduel's own (a real directory of its user that no one else can write into)?
fn is_private_root(p: &Path) -> bool {
    let named = p.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n == ROOT_NAME || n.starts_with(&format!("{ROOT_NAME}-"))
    });
    let bases = [
        std::env::temp_dir().canonicalize().ok(),
        Path::new("/tmp").canonicalize().ok(),
        Some(std::env::temp_dir()),
    ];
    plain(p)
        && named
        && bases
            .iter()
            .flatten()
            .any(|b| p.parent() == Some(b.as_path()))
        && std::fs::symlink_metadata(p)
            .is_ok_and(|m| !m.file_type().is_symlink() && check_not_shared(&m, true).is_ok())
}

/// A path with nothing to climb out by: absolute, without `.` or `..`.
pub fn plain(p: &Path) -> bool {
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// Is `d` named as `private_dir` names them: one level under a private root of dbduel's?
pub fn is_private_dir(d: &Path) -> bool {
    plain(d) && d.parent().is_some_and(is_private_root)
}

/// A new directory for a sandbox whose own directory is `sandbox_dir` (which the server's
/// account may be unable to reach: it may sit under a 0700 home or temp directory, or be too
/// deep for a socket's path): dbduel's own user's (0700) with no `user`; with one, dbduel's
/// and readable by that account's group (0750), holding [`SERVER_SUBDIR`], the account's.
pub fn private_dir(user: Option<&ServiceUser>, sandbox_dir: &Path) -> Result<PathBuf> {
    private_dir_in(&private_root()?, user, sandbox_dir)
}

/// `private_dir` under `root`: the root is made, or taken only when it is a real directory of
/// dbduel's own user that no other account can write into; what is made in it is made and
/// given away through file descriptors, never by a path someone else could redirect.
fn private_dir_in(root: &Path, user: Option<&ServiceUser>, sandbox_dir: &Path) -> Result<PathBuf> {
    let dir = open_private_root(root)?;
    // A short name whatever the sandbox's path, so the socket inside fits a socket's path:
    // the process and a hash of the sandbox's directory (FNV-1a).
    let tag = sandbox_dir
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    let made = new_dir(
        &dir,
        root,
        &format!("{}-{:08x}", std::process::id(), tag as u32),
        None,
    )?;
    if let Some(u) = user {
        // Root's, open to the account's group to read: what the server only reads (its
        // configuration, certificates, the accounts' SQL) stays out of its reach to change;
        // what it writes is in SERVER_SUBDIR, the account's own.
        let at = open_dir(None, &made, true)
            .map_err(|e| SandboxError::Io(format!("cannot open {}: {e}", made.display())))?;
        std::os::unix::fs::fchown(&at, None, Some(u.gid)).map_err(|e| {
            SandboxError::Io(format!(
                "cannot chown {} to {}: {e}",
                made.display(),
                u.name
            ))
        })?;
        at.set_permissions(std::fs::Permissions::from_mode(0o750))
            .map_err(|e| {
                SandboxError::Io(format!("cannot set permissions on {}: {e}", made.display()))
            })?;
        super::beneath::Beneath::open(&made)?.mkdir(Path::new(SERVER_SUBDIR), 0o700, Some(u))?;
    }
    Ok(made)
}

/// The directory, in a private directory made for another account, that the account owns and
/// its server writes into (data, socket, temporary files); the private directory itself is
/// root's.
pub const SERVER_SUBDIR: &str = "srv";

/// What to do about a private root dbduel will not use.
const ROOT_ADVICE: &str = "dbduel makes it itself (owned by its user, mode 0711); check what it is, remove it, or set TMPDIR to a directory of your own";

/// Make the private root (0711) or take the one there, open without following a link, and
/// check it is a directory of dbduel's user that no other account can write into.
fn open_private_root(root: &Path) -> Result<File> {
    match std::fs::DirBuilder::new().mode(0o711).create(root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(SandboxError::Io(format!(
                "cannot create {}: {e}",
                root.display()
            )));
        }
    }
    let refuse = |why: String| {
        SandboxError::Io(format!(
            "refusing the private directories' root {}: {why}; {ROOT_ADVICE}",
            root.display()
        ))
    };
    // lstat first, for a message that says what is there.
    let seen = std::fs::symlink_metadata(root)
        .map_err(|e| SandboxError::Io(format!("cannot inspect {}: {e}", root.display())))?;
    if seen.file_type().is_symlink() {
        let to = std::fs::read_link(root).unwrap_or_default();
        return Err(refuse(format!(
            "it is a symbolic link (to {}), not a directory",
            to.display()
        )));
    }
    let dir = open_dir(None, root, true).map_err(|e| refuse(e.to_string()))?;
    let meta = dir
        .metadata()
        .map_err(|e| SandboxError::Io(format!("cannot inspect {}: {e}", root.display())))?;
    check_not_shared(&meta, true).map_err(refuse)?;
    dir.set_permissions(std::fs::Permissions::from_mode(0o711))
        .map_err(|e| {
            SandboxError::Io(format!("cannot set permissions on {}: {e}", root.display()))
        })?;
    Ok(dir)
}

/// Is a directory (as `fstat` saw it) one only dbduel's user controls: owned by it when
/// `own`, and writable by no other account (a sticky directory's entries are safe from them
/// when not `own`)?
fn check_not_shared(meta: &std::fs::Metadata, own: bool) -> std::result::Result<(), String> {
    if !meta.is_dir() {
        return Err("it is not a directory".into());
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if own && meta.uid() != me {
        return Err(format!(
            "it belongs to uid {}, not to dbduel's user (uid {me}): another account may have made it first",
            meta.uid()
        ));
    }
    let mode = meta.mode();
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && (own || !sticky) {
        return Err(format!(
            "other accounts can write into it (mode {:04o})",
            mode & 0o7777
        ));
    }
    Ok(())
}

/// Open the directory `name` (under the open directory `at`, else a path) for `fstat`,
/// `fchown`, `fchmod` and `*at` calls; with `nofollow`, a symbolic link there is an error.
fn open_dir(at: Option<&File>, name: &Path, nofollow: bool) -> std::io::Result<File> {
    let c = CString::new(name.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    if nofollow {
        flags |= libc::O_NOFOLLOW;
    }
    let base = at.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `c` is a NUL-terminated path; openat returns a new descriptor or -1.
    let fd = unsafe { libc::openat(base, c.as_ptr(), flags) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::other("it is a symbolic link, not a directory")
        } else {
            e
        });
    }
    // SAFETY: fd is a descriptor openat just returned, owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// A directory `PREFIX-N` that did not exist (the first free N) in the open directory `root`
/// (whose path is `root_path`), 0700, owned by `owner` when given: made with `mkdirat`,
/// opened without following a link, checked to be the one dbduel made, then given away with
/// `fchown`/`fchmod`.
fn new_dir(
    root: &File,
    root_path: &Path,
    prefix: &str,
    owner: Option<&ServiceUser>,
) -> Result<PathBuf> {
    for n in 0..1000 {
        let name = format!("{prefix}-{n}");
        let d = root_path.join(&name);
        let c = CString::new(name.as_bytes()).map_err(|_| {
            SandboxError::Io(format!("cannot create {}: a NUL in its name", d.display()))
        })?;
        // SAFETY: `c` is a NUL-terminated name; mkdirat touches only the file system.
        if unsafe { libc::mkdirat(root.as_raw_fd(), c.as_ptr(), 0o700) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                continue;
            }
            return Err(SandboxError::Io(format!(
                "cannot create {}: {e}",
                d.display()
            )));
        }
        let made = open_dir(Some(root), Path::new(&name), true)
            .map_err(|e| SandboxError::Io(format!("cannot open {}: {e}", d.display())))?;
        let meta = made
            .metadata()
            .map_err(|e| SandboxError::Io(format!("cannot inspect {}: {e}", d.display())))?;
        check_not_shared(&meta, true).map_err(|why| {
            SandboxError::Io(format!(
                "{} is not the directory dbduel just made ({why}): someone replaced it",
                d.display()
            ))
        })?;
        if let Some(u) = owner {
            std::os::unix::fs::fchown(&made, Some(u.uid), Some(u.gid)).map_err(|e| {
                SandboxError::Io(format!("cannot chown {} to {}: {e}", d.display(), u.name))
            })?;
        }
        made.set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(|e| {
                SandboxError::Io(format!("cannot set permissions on {}: {e}", d.display()))
            })?;
        return Ok(d);
    }
    Err(SandboxError::Io(format!(
        "no free directory name under {}",
        root_path.display()
    )))
}

/// Names of the data directories dbduel makes under a contender's `data_dir`.
const DATA_HOME_PREFIX: &str = "dbduel-data-";

/// A new directory under `root` (a contender's `data_dir`) for the data of the sandbox in
/// `sandbox_dir`, owned by `owner` when the server runs as another user. A `data_dir` other
/// accounts can write into (without the sticky bit) is refused: they could swap what dbduel
/// makes there.
pub fn data_home(root: &Path, sandbox_dir: &Path, owner: Option<&ServiceUser>) -> Result<PathBuf> {
    let tag = sandbox_dir
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = open_dir(None, root, false)
        .map_err(|e| SandboxError::Io(format!("cannot open data_dir {}: {e}", root.display())))?;
    let meta = dir
        .metadata()
        .map_err(|e| SandboxError::Io(format!("cannot inspect {}: {e}", root.display())))?;
    check_not_shared(&meta, false).map_err(|why| {
        SandboxError::Io(format!(
            "refusing data_dir {}: {why}; make it writable by its owner only (chmod go-w) or sticky (chmod +t)",
            root.display()
        ))
    })?;
    new_dir(
        &dir,
        root,
        &format!("{DATA_HOME_PREFIX}{}-{tag}", std::process::id()),
        owner,
    )
}

/// Remove a directory made by `data_home` for the sandbox in `sandbox_dir` (and nothing not
/// named as one for it, nor a link, nor a path that climbs out with `..`).
pub fn remove_data_home(d: &Path, sandbox_dir: &Path) -> Result<()> {
    let tag = sandbox_dir
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // DATA_HOME_PREFIX, then PID-TAG-N.
    let named = |n: &str| {
        n.strip_prefix(DATA_HOME_PREFIX)
            .and_then(|r| r.split_once('-'))
            .and_then(|(pid, r)| Some((pid, r.rsplit_once('-')?)))
            .is_some_and(|(pid, (t, n))| digits(pid) && t == tag && digits(n))
    };
    let ours = plain(d) && d.file_name().is_some_and(|n| named(&n.to_string_lossy()));
    remove_ours(d, ours, "a dbduel data directory of this sandbox")
}

/// Remove a private directory made by `private_dir` (and nothing outside their root, nor
/// anything under a root dbduel would not use).
pub fn remove_private_dir(d: &Path) -> Result<()> {
    remove_ours(
        d,
        is_private_dir(d),
        "a dbduel sandbox directory under a private root of dbduel's in TMPDIR or /tmp (a sandbox made with another TMPDIR is removed with that TMPDIR set)",
    )
}

/// Remove `d` and all in it when it is `ours` and a directory, not a link (else refuse,
/// saying it is not `what`); a directory already gone is fine.
fn remove_ours(d: &Path, ours: bool, what: &str) -> Result<()> {
    let refuse = || SandboxError::Io(format!("refusing to remove {}: not {what}", d.display()));
    if !ours {
        return Err(refuse());
    }
    match std::fs::symlink_metadata(d) {
        Ok(m) if m.file_type().is_dir() => {}
        Ok(_) => return Err(refuse()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(SandboxError::Io(format!(
                "cannot inspect {}: {e}",
                d.display()
            )));
        }
    }
    match std::fs::remove_dir_all(d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SandboxError::Io(format!(
            "cannot remove {}: {e}",
            d.display()
        ))),
    }
}

/// The account every sandbox's server ran as before each got its own: a server an older
/// dbduel left running may still run as it.
pub const SERVER_ACCOUNT: &str = "dbduel-server";

/// How the accounts dbduel makes for its sandboxes begin; nothing else is ever removed.
pub const SANDBOX_ACCOUNT_PREFIX: &str = "dbduel-s";

/// The account a sandbox's server runs as: when dbduel is root, a new account of the
/// sandbox's own — its own uid and group, made here and removed with the sandbox
/// ([`remove_sandbox_account`]), as systemd's dynamic users are — so that one sandbox's
/// server (a PostgreSQL superuser's `pg_read_file` or `COPY … TO PROGRAM`, say) can read
/// nothing of another's; dbduel's own user otherwise (`None`).
pub fn sandbox_account() -> Result<Option<ServiceUser>> {
    if !is_root() {
        return Ok(None);
    }
    let failed = |detail: String| SandboxError::Failed {
        what: "creating the sandbox's OS account (useradd)".into(),
        detail,
    };
    for _ in 0..8 {
        let mut bytes = [0u8; 4];
        std::io::Read::read_exact(
            &mut File::open("/dev/urandom").map_err(|e| failed(e.to_string()))?,
            &mut bytes,
        )
        .map_err(|e| failed(e.to_string()))?;
        let name = format!("{SANDBOX_ACCOUNT_PREFIX}{:08x}", u32::from_le_bytes(bytes));
        if lookup(&name).is_some() {
            continue;
        }
        let out = account_tool(
            "useradd",
            &[
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                &name,
            ],
        )
        .map_err(|e| failed(e.to_string()))?;
        if !out.status.success() {
            return Err(failed(String::from_utf8_lossy(&out.stderr).into_owned()));
        }
        return lookup(&name)
            .map(Some)
            .ok_or_else(|| failed(format!("useradd made no account `{name}`")));
    }
    Err(failed("no free account name in 8 tries".into()))
}

/// `useradd` or `userdel` with `args`, tried again while another one holds the account files'
/// lock (sandboxes made side by side, by several runs at once).
fn account_tool(tool: &str, args: &[&str]) -> std::io::Result<std::process::Output> {
    let mut tries = 0;
    loop {
        let out = std::process::Command::new(tool).args(args).output()?;
        let locked = String::from_utf8_lossy(&out.stderr).contains("lock");
        if out.status.success() || !locked || tries == 100 {
            return Ok(out);
        }
        tries += 1;
        std::thread::sleep(std::time::Duration::from_millis(50 + tries * 5));
    }
}

/// Remove a sandbox's account (and its group) once its server is gone: only an account
/// dbduel makes ([`SANDBOX_ACCOUNT_PREFIX`]) that still has the uid it was made with; one
/// already gone is fine.
pub fn remove_sandbox_account(account: &ServiceUser) -> Result<()> {
    let Some(now) = lookup(&account.name) else {
        return Ok(());
    };
    if !account.name.starts_with(SANDBOX_ACCOUNT_PREFIX) || now.uid != account.uid {
        return Err(SandboxError::Io(format!(
            "refusing to remove the account {}: not the one dbduel made for this sandbox",
            account.name
        )));
    }
    let out = account_tool("userdel", &[&account.name])
        .map_err(|e| SandboxError::Io(format!("cannot run userdel: {e}")))?;
    if out.status.success() || lookup(&account.name).is_none() {
        Ok(())
    } else {
        Err(SandboxError::Io(format!(
            "cannot remove the account {}: {}",
            account.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An account to give directories to: nobody as root, else dbduel's own.
    fn someone() -> ServiceUser {
        if is_root() {
            ServiceUser {
                name: "nobody".into(),
                uid: 65534,
                gid: 65534,
            }
        } else {
            // SAFETY: getuid and getgid have no preconditions.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            ServiceUser {
                name: "me".into(),
                uid,
                gid,
            }
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).expect("stat").mode() & 0o7777
    }

    /// A manifest names the account to remove: one it plants — the host's own, or a sandbox
    /// account under another uid than it was made with (another sandbox's, renamed) — is
    /// refused and left in place.
    #[test]
    fn a_planted_manifests_account_is_never_removed() {
        if !is_root() {
            return;
        }
        let root = lookup("root").expect("root");
        let e = remove_sandbox_account(&root).expect_err("the host's root");
        assert!(e.to_string().contains("not the one dbduel made"), "{e}");
        assert!(lookup("root").is_some());
        let made = sandbox_account()
            .expect("made")
            .expect("an account, being root");
        let other = ServiceUser {
            uid: made.uid + 1,
            ..made.clone()
        };
        let e = remove_sandbox_account(&other).expect_err("another uid under its name");
        assert!(e.to_string().contains("not the one dbduel made"), "{e}");
        assert!(lookup(&made.name).is_some(), "left in place");
        remove_sandbox_account(&made).expect("its own is removed");
        assert!(lookup(&made.name).is_none());
        // One already gone is fine.
        remove_sandbox_account(&made).expect("already gone");
    }

    #[test]
    fn a_private_root_is_made_private_and_its_directories_given_away() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("dbduel-sandboxes");
        let d =
            private_dir_in(&root, Some(&someone()), Path::new("/r/run/c/sandbox")).expect("made");
        assert_eq!(mode(&root), 0o711);
        // dbduel's, open to the account's group to read; what the server writes is below.
        assert_eq!(mode(&d), 0o750);
        let (meta, me) = (std::fs::metadata(&d).expect("stat"), unsafe {
            libc::geteuid()
        });
        assert_eq!((meta.uid(), meta.gid()), (me, someone().gid));
        let srv = d.join(SERVER_SUBDIR);
        assert_eq!(mode(&srv), 0o700);
        assert_eq!(std::fs::metadata(&srv).expect("stat").uid(), someone().uid);
        assert_eq!(d.parent(), Some(root.as_path()));
        // Taken again as it is.
        private_dir_in(&root, Some(&someone()), Path::new("/r/run/c/sandbox")).expect("again");
    }

    #[test]
    fn a_planted_symlink_at_the_private_root_is_refused_and_its_target_untouched() {
        let tmp = tempfile::tempdir().expect("tmp");
        let victim = tmp.path().join("victim");
        std::fs::create_dir(&victim).expect("victim");
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o750)).expect("chmod");
        let root = tmp.path().join("dbduel-sandboxes");
        std::os::unix::fs::symlink(&victim, &root).expect("link");
        let e = private_dir_in(&root, Some(&someone()), Path::new("/r/c/sandbox"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("symbolic link") && e.contains("TMPDIR"), "{e}");
        assert_eq!(mode(&victim), 0o750);
        assert_eq!(std::fs::read_dir(&victim).expect("ls").count(), 0);
    }

    #[test]
    fn a_root_someone_made_first_is_passed_over_for_one_of_dbduels_own() {
        let tmp = tempfile::tempdir().expect("tmp");
        let base = tmp.path().canonicalize().expect("real");
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // Their root: writable by all (and, as root, another account's).
        let theirs = base.join(ROOT_NAME);
        std::fs::create_dir(&theirs).expect("mkdir");
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        if is_root() {
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
        }
        let root = choose_private_root_in(&base).expect("a root of dbduel's own");
        assert_ne!(root, theirs);
        assert_eq!(root.parent(), Some(base.as_path()));
        assert!(
            root.file_name()
                .expect("name")
                .to_string_lossy()
                .starts_with("dbduel-sandboxes-")
        );
        assert_eq!(mode(&root), 0o711);
        assert_eq!(mode(&theirs), 0o777, "theirs is left as it was");
        assert_eq!(std::fs::read_dir(&theirs).expect("ls").count(), 0);
    }

    #[test]
    fn a_tmpdir_under_a_directory_others_can_write_is_not_used() {
        let tmp = tempfile::tempdir().expect("tmp");
        let open = tmp.path().join("open");
        let inner = open.join("tmp");
        std::fs::create_dir_all(&inner).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = safe_ancestors(&inner).expect_err("refused");
        assert!(
            e.contains("other accounts can write") && e.contains("open"),
            "{e}"
        );
        // /tmp is sticky: its entries are safe from other accounts.
        assert!(safe_ancestors(Path::new("/tmp")).is_ok());
        let root = choose_private_root_in(&inner).expect("a root elsewhere");
        assert!(!root.starts_with(&open), "{}", root.display());
        assert!(root.starts_with(Path::new("/tmp").canonicalize().expect("tmp")));
    }

    #[test]
    fn a_private_root_others_own_or_can_write_into_is_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("dbduel-sandboxes");
        std::fs::create_dir(&root).expect("mkdir");
        for m in [0o777, 0o1777, 0o731] {
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(m)).expect("chmod");
            let e = private_dir_in(&root, Some(&someone()), Path::new("/r/c/sandbox"))
                .expect_err("refused")
                .to_string();
            assert!(e.contains("other accounts can write"), "{m:o}: {e}");
            assert_eq!(mode(&root), m, "left as it was");
        }
        if is_root() {
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711)).expect("chmod");
            std::os::unix::fs::chown(&root, Some(65534), Some(65534)).expect("chown");
            let e = private_dir_in(&root, Some(&someone()), Path::new("/r/c/sandbox"))
                .expect_err("refused")
                .to_string();
            assert!(e.contains("uid 65534"), "{e}");
        }
        assert_eq!(std::fs::read_dir(&root).expect("ls").count(), 0);
    }

    #[test]
    fn a_data_home_is_made_only_where_others_cannot_swap_it() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path().join("data");
        std::fs::create_dir(&data).expect("mkdir");
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let sb = Path::new("/r/run/c/sandbox");
        let e = data_home(&data, sb, Some(&someone()))
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("chmod go-w") && e.contains("other accounts"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&data).expect("ls").count(), 0);
        // Sticky: others cannot move what dbduel makes. A link planted at the first name is
        // passed by, not followed.
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        let victim = tmp.path().join("victim");
        std::fs::create_dir(&victim).expect("victim");
        let first = data.join(format!("{DATA_HOME_PREFIX}{}-c-0", std::process::id()));
        std::os::unix::fs::symlink(&victim, &first).expect("link");
        let d = data_home(&data, sb, Some(&someone())).expect("made");
        assert_ne!(d, first);
        assert_eq!(mode(&d), 0o700);
        assert_eq!(std::fs::metadata(&d).expect("stat").uid(), someone().uid);
        assert_eq!(std::fs::read_dir(&victim).expect("ls").count(), 0);
        // Removal takes the directory, never a link or a path that climbs out.
        assert!(remove_data_home(&first, sb).is_err());
        assert!(victim.is_dir());
        assert!(remove_data_home(&data.join("..").join("victim"), sb).is_err());
        let other = Path::new("/r/run/another/sandbox");
        assert!(
            remove_data_home(&d, other).is_err(),
            "another sandbox's is not this one's"
        );
        remove_data_home(&d, sb).expect("removed");
        assert!(!d.exists());
    }
}
