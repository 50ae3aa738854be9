//! The FerretDB sandbox: a MongoDB-wire server (FerretDB, built by `scripts/install-ferretdb`)
//! on its SQLite backend, one directory of SQLite files a database. It stands in for `mongod`,
//! which Debian does not package, to prove the MongoDB engine works; its lookups scan, so its
//! figures are never MongoDB's. FerretDB 1.x has no authentication on this backend, so it
//! listens on no TCP port at all: only on a Unix socket in the sandbox's private directory
//! (0700, the server's account's), which no other account but root can reach. When dbduel is
//! root it runs as dbduel's dedicated account.

use crate::sandbox::{Layout, Recipe, Result, SandboxError, ServiceUser};
use std::path::PathBuf;
use std::process::Command;

/// Where `scripts/install-ferretdb` puts the binary (besides a link on the PATH).
const INSTALLED: &str = "/usr/local/lib/dbduel/ferretdb-v1.24.0/ferretdb";

/// The FerretDB binary: `DBDUEL_FERRETDB`, else `ferretdb` on the PATH, else where the
/// install script puts it.
pub fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DBDUEL_FERRETDB") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ferretdb"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from(INSTALLED)).filter(|p| p.is_file()))
}

/// FerretDB's version line (`v1.24.0`), from `ferretdb --version`.
pub fn version() -> Option<String> {
    let out = Command::new(binary()?).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("version:")
                .map(|v| v.trim().to_string())
        })
        .or_else(|| text.lines().next().map(|l| l.trim().to_string()))
}

/// A FerretDB server on SQLite files in the sandbox's data directory.
#[derive(Debug, Clone, Default)]
pub struct FerretdbRecipe {}

impl FerretdbRecipe {
    fn args(&self, l: &Layout) -> Vec<String> {
        vec![
            // No TCP listener: anyone on the host could use one without a password.
            "--listen-addr=".into(),
            format!("--listen-unix={}", l.socket.display()),
            "--handler=sqlite".into(),
            // FerretDB wants a directory URL ending in a slash.
            format!("--sqlite-url=file:{}/", l.datadir.display()),
            format!("--state-dir={}", l.server_dir().display()),
            "--telemetry=disable".into(),
            "--debug-addr=-".into(),
            "--log-level=warn".into(),
        ]
    }
}

impl Recipe for FerretdbRecipe {
    fn flavor(&self) -> &'static str {
        "ferretdb"
    }

    fn check_installed(&self) -> Result<()> {
        match binary() {
            Some(_) => Ok(()),
            None => Err(SandboxError::Missing {
                what: "ferretdb (a MongoDB-wire server, built from the Go module proxy)".into(),
                hint: "run `bash scripts/install-ferretdb` (or `make install-servers`), or set DBDUEL_FERRETDB to its path".into(),
            }),
        }
    }

    fn config(&self, l: &Layout) -> String {
        let mut s = String::from(
            "# Written by dbduel for one sandbox: the command-line flags the server runs with.\n",
        );
        for a in self.args(l) {
            s.push_str(&a);
            s.push('\n');
        }
        s
    }

    fn service_user(&self) -> Result<Option<ServiceUser>> {
        crate::sandbox::user::sandbox_account()
    }

    fn init(&self, l: &Layout) -> Result<()> {
        l.beneath(&l.datadir)?
            .mkdir(&l.datadir, 0o700, l.owner.as_ref())
    }

    fn command(&self, l: &Layout) -> Command {
        let mut c = l.command(binary().unwrap_or_else(|| PathBuf::from("ferretdb")));
        c.args(self.args(l));
        c
    }

    /// The listener opens once the backend is ready, so an accepted connection is an answer.
    fn probe(&self, l: &Layout) -> Option<String> {
        let s = std::os::unix::net::UnixStream::connect(&l.socket).ok()?;
        drop(s);
        Some(format!(
            "FerretDB {} on SQLite",
            version().unwrap_or_else(|| "(version unknown)".into())
        ))
    }

    fn port_in_use(&self, log_tail: &str) -> bool {
        log_tail.contains("address already in use")
    }
}
