//! The unprivileged OS user a server runs as when dbduel is root (PostgreSQL refuses to run
//! as root), and the private directories such a server writes into.

use super::{Result, SandboxError};
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// An OS account.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// The first of `names` that exists, or `names[last]` created as a system account.
pub fn ensure(names: &[&str]) -> Result<ServiceUser> {
    for n in names {
        if let Some(u) = lookup(n) {
            return Ok(u);
        }
    }
    let name = names.last().copied().unwrap_or("dbduel");
    let out = std::process::Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            name,
        ])
        .output()
        .map_err(|e| SandboxError::Failed {
            what: format!("creating the OS user `{name}` (useradd)"),
            detail: e.to_string(),
        })?;
    if !out.status.success() && lookup(name).is_none() {
        return Err(SandboxError::Failed {
            what: format!("creating the OS user `{name}` (useradd)"),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    lookup(name).ok_or_else(|| SandboxError::Failed {
        what: format!("creating the OS user `{name}`"),
        detail: "useradd succeeded but the user is not there".into(),
    })
}

/// Root of the private directories: reachable by anyone (0711), listable by root only.
fn private_root() -> PathBuf {
    std::env::temp_dir().join("dbduel-sandboxes")
}

/// A new directory only `user` can use, for a sandbox whose own directory is `sandbox_dir`
/// (which the user may be unable to reach: it may sit under a 0700 home or temp directory).
pub fn private_dir(user: &ServiceUser, sandbox_dir: &Path) -> Result<PathBuf> {
    let root = private_root();
    std::fs::create_dir_all(&root)
        .map_err(|e| SandboxError::Io(format!("cannot create {}: {e}", root.display())))?;
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711)).map_err(|e| {
        SandboxError::Io(format!("cannot set permissions on {}: {e}", root.display()))
    })?;
    let tag: String = sandbox_dir
        .components()
        .rev()
        .take(3)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("-");
    new_dir(
        &root,
        &format!("{}-{}", std::process::id(), tag),
        Some(user),
    )
}

/// A directory `root/PREFIX-N` that did not exist (the first free N), 0700, owned by `owner`
/// when given.
fn new_dir(root: &Path, prefix: &str, owner: Option<&ServiceUser>) -> Result<PathBuf> {
    for n in 0..1000 {
        let d = root.join(format!("{prefix}-{n}"));
        match std::fs::create_dir(&d) {
            Ok(()) => {
                if let Some(u) = owner {
                    chown(&d, u)?;
                }
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).map_err(
                    |e| SandboxError::Io(format!("cannot set permissions on {}: {e}", d.display())),
                )?;
                return Ok(d);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(SandboxError::Io(format!(
                    "cannot create {}: {e}",
                    d.display()
                )));
            }
        }
    }
    Err(SandboxError::Io(format!(
        "no free directory name under {}",
        root.display()
    )))
}

/// Names of the data directories dbduel makes under a contender's `data_dir`.
const DATA_HOME_PREFIX: &str = "dbduel-data-";

/// A new directory under `root` (a contender's `data_dir`) for the data of the sandbox in
/// `sandbox_dir`, owned by `owner` when the server runs as another user.
pub fn data_home(root: &Path, sandbox_dir: &Path, owner: Option<&ServiceUser>) -> Result<PathBuf> {
    let tag = sandbox_dir
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    new_dir(
        root,
        &format!("{DATA_HOME_PREFIX}{}-{tag}", std::process::id()),
        owner,
    )
}

/// Remove a directory made by `data_home` (and nothing not named as one).
pub fn remove_data_home(d: &Path) -> Result<()> {
    let ours = d
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(DATA_HOME_PREFIX));
    remove_ours(d, ours, "a dbduel data directory")
}

/// Remove a private directory made by `private_dir` (and nothing outside their root).
pub fn remove_private_dir(d: &Path) -> Result<()> {
    remove_ours(
        d,
        d.starts_with(private_root()),
        "a dbduel sandbox directory",
    )
}

/// Remove `d` and all in it when it is `ours` (else refuse, saying it is not `what`); a
/// directory already gone is fine.
fn remove_ours(d: &Path, ours: bool, what: &str) -> Result<()> {
    if !ours {
        return Err(SandboxError::Io(format!(
            "refusing to remove {}: not {what}",
            d.display()
        )));
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

/// Give `path` to `user`.
pub fn chown(path: &Path, user: &ServiceUser) -> Result<()> {
    std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).map_err(|e| {
        SandboxError::Io(format!(
            "cannot chown {} to {}: {e}",
            path.display(),
            user.name
        ))
    })
}

/// The dedicated account servers run as when dbduel is root: created by dbduel for its
/// servers alone, so it owns nothing else on the host (not Debian's `mysql` or `postgres`,
/// which own the host's own clusters).
pub const SERVER_ACCOUNT: &str = "dbduel-server";

/// The account a server runs as: [`SERVER_ACCOUNT`] (created on first use) when dbduel is
/// root, dbduel's own user otherwise (`None`).
pub fn server_account() -> Result<Option<ServiceUser>> {
    if is_root() {
        ensure(&[SERVER_ACCOUNT]).map(Some)
    } else {
        Ok(None)
    }
}
