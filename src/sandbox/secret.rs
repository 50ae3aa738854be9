//! A sandbox's secret: the random password its server's accounts authenticate with, made when
//! the sandbox is created and kept in one file (`secret`, mode 0600, owned by the user dbduel
//! runs as) in the sandbox directory. Nothing else holds it on disk except what a server must
//! read itself (a password file handed to `initdb`, a standby's passfile), each 0600 in the
//! server's private directory; it never goes into a manifest, a result file, a command line
//! or an environment.

use super::{Result, SandboxError};
use std::fmt;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// File name of the secret in a sandbox directory.
pub const FILE: &str = "secret";

/// The environment variable `dbduel sandbox up` suggests for a target's `password_env`.
pub const ENV: &str = "DBDUEL_SANDBOX_PASSWORD";

/// Random bytes in a secret (printed as twice as many hex digits).
const BYTES: usize = 24;

/// A sandbox's password: printable ASCII (hex digits, so it needs no quoting in SQL, a
/// connection string or a passfile) that never shows in `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct SandboxSecret(String);

impl SandboxSecret {
    /// The password itself, for a client to authenticate with.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SandboxSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SandboxSecret(***)")
    }
}

/// Where the secret of the sandbox in `dir` is kept.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// A new random secret from the kernel's generator (getrandom(2)).
pub fn generate() -> Result<SandboxSecret> {
    let mut buf = [0u8; BYTES];
    let mut filled = 0;
    while filled < BYTES {
        // SAFETY: the pointer and length name the unfilled tail of `buf`, which outlives the
        // call; getrandom writes at most that many bytes.
        let n = unsafe {
            libc::getrandom(
                buf[filled..].as_mut_ptr().cast::<libc::c_void>(),
                BYTES - filled,
                0,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(SandboxError::Io(format!(
                "cannot draw a random secret: {e}"
            )));
        }
        filled += n as usize;
    }
    Ok(SandboxSecret(
        buf.iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

/// Keep `secret` (a new random one when `None`) as the secret of the sandbox in `dir`: a new
/// file, 0600 from its creation, refused if one is already there.
pub fn create(dir: &Path, secret: Option<&SandboxSecret>) -> Result<SandboxSecret> {
    let secret = match secret {
        Some(s) => s.clone(),
        None => generate()?,
    };
    write_private(&path(dir), &format!("{}\n", secret.0))?;
    Ok(secret)
}

/// The secret of the sandbox in `dir`.
pub fn read(dir: &Path) -> Result<SandboxSecret> {
    let p = path(dir);
    let text = std::fs::read_to_string(&p)
        .map_err(|e| SandboxError::Io(format!("cannot read {}: {e}", p.display())))?;
    let s = text.lines().next().unwrap_or("").trim();
    if s.is_empty() {
        return Err(SandboxError::Io(format!("{} is empty", p.display())));
    }
    Ok(SandboxSecret(s.to_string()))
}

/// Write `text` into a new file at `p` that only its owner can read (0600 from the start, no
/// following a link planted there).
pub fn write_private(p: &Path, text: &str) -> Result<()> {
    write_new(p, text).map(drop)
}

fn write_new(p: &Path, text: &str) -> Result<std::fs::File> {
    let err = |e: std::io::Error| SandboxError::Io(format!("cannot write {}: {e}", p.display()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)
        .map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)?;
    Ok(f)
}

/// Write a file a server only reads — its certificates, the accounts' SQL, a password file
/// for its init tool — at `p`, in the directory of what it only reads ([`Layout::conf_dir`]):
/// [`write_private`], and when the server runs as `owner`, open to that account's group to
/// read (0640, through the open file): the account reads it and cannot change it.
///
/// [`Layout::conf_dir`]: super::Layout::conf_dir
pub fn write_readable_by(p: &Path, text: &str, owner: Option<&super::ServiceUser>) -> Result<()> {
    let f = write_new(p, text)?;
    if let Some(u) = owner {
        std::os::unix::fs::fchown(&f, None, Some(u.gid)).map_err(|e| {
            SandboxError::Io(format!("cannot chown {} to {}: {e}", p.display(), u.name))
        })?;
        f.set_permissions(std::fs::Permissions::from_mode(0o640))
            .map_err(|e| {
                SandboxError::Io(format!("cannot set permissions on {}: {e}", p.display()))
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_secret_is_random_private_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = create(dir.path(), None).expect("created");
        assert_eq!(s.expose().len(), 2 * BYTES);
        assert!(s.expose().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(s, generate().expect("another"));
        let mode = std::fs::metadata(path(dir.path()))
            .expect("file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read(dir.path()).expect("read"), s);
        assert!(!format!("{s:?}").contains(s.expose()));
        // Never overwritten.
        assert!(create(dir.path(), None).is_err());
    }
}
