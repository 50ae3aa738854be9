//! `dbduel sandbox`: start a private server of a family the engines registry offers and leave
//! it running (`up`), list the sandboxes under a results root (`status`), stop and remove them
//! (`down`); which server versions are installed and which can be (`versions`).

use super::failure::{Failure, exit};
use super::output::outln;
use crate::engines::{SANDBOX_FAMILIES, SandboxFamily};
use crate::sandbox;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand, Debug)]
pub enum SandboxAction {
    /// Start a private MariaDB, MySQL or PostgreSQL server and leave it running, to point
    /// studies' `target`s at (the shards of a sharded run on this machine, or a try of a
    /// target); prints its target and the file holding its password (never the password
    /// itself). `dbduel sandbox down` stops and removes it.
    Up {
        /// mariadb, mysql or postgres.
        #[arg(value_parser = family_parser())]
        engine: &'static SandboxFamily,
        /// The server version, as a contender's `version` (`10.11`, `11.4`; `5.6`, `5.7`,
        /// `8.0`; `15`, `17`; `dbduel sandbox versions` lists them). Absent: the system's
        /// server, or for mysql (which has none) the newest version installed.
        #[arg(long)]
        version: Option<String>,
        /// The sandbox's name (its directory under OUT/sandboxes/).
        #[arg(long, default_value = "target")]
        name: String,
        /// Serve clients over TLS, with a CA made for this sandbox and a certificate for
        /// 127.0.0.1 and localhost; the printed target checks it in full.
        #[arg(long)]
        tls: bool,
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
    /// List sandboxes under the results root: running or not, and whether the dbduel that
    /// started them is still there (`--keep` and crashes leave them behind).
    Status {
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
    /// The server versions contenders can choose (`version = "…"`): what is installed
    /// (the system's and the server cache's) and the command that installs the rest.
    Versions,
    /// Stop and remove sandboxes whose dbduel is gone; with --all, every sandbox found.
    Down {
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
        /// Also those of dbduel runs still in progress.
        #[arg(long)]
        all: bool,
    },
}

/// The families `sandbox up` accepts, by name, from the engines registry.
fn family_parser() -> impl TypedValueParser<Value = &'static SandboxFamily> {
    PossibleValuesParser::new(SANDBOX_FAMILIES.iter().map(|f| f.name)).map(|name: String| {
        SANDBOX_FAMILIES
            .iter()
            .find(|f| f.name == name)
            .expect("the parser accepts only the families' names")
    })
}

/// Run a `sandbox` action.
pub(super) fn exec(action: SandboxAction) -> Result<i32, Failure> {
    match action {
        SandboxAction::Up {
            engine,
            version,
            name,
            tls,
            out,
        } => up(engine, version, &name, tls, &out).map(|()| exit::OK),
        SandboxAction::Status { out } => {
            status(&out);
            Ok(exit::OK)
        }
        SandboxAction::Down { out, all } => Ok(down(&out, all)),
        SandboxAction::Versions => {
            versions();
            Ok(exit::OK)
        }
    }
}

/// One line per version: family, series, where it comes from, installed where or how to
/// install it.
fn versions() {
    use crate::engines::versions;
    outln!(
        "server cache: {}",
        crate::sandbox::binaries::root().display()
    );
    let rows = versions::available(crate::engines::VERSIONED);
    for r in &rows {
        let state = match (&r.installed, &r.install) {
            (Some(at), _) => format!("installed  {at}"),
            (None, Some(cmd)) => format!("not installed: {cmd}"),
            (None, None) => "not installed".into(),
        };
        outln!("{:<11} {:<8} {:<7} {state}", r.family, r.series, r.origin);
    }
    if rows.iter().any(|r| r.installed.is_none()) {
        outln!(
            "install every missing server: make install-servers (or {})",
            crate::sandbox::binaries::INSTALL_COMMAND
        );
    }
}

/// Start a server of `family` (of `version`) in OUT/sandboxes/NAME, leave it running and
/// print its target.
fn up(
    family: &SandboxFamily,
    version: Option<String>,
    name: &str,
    tls: bool,
    out: &Path,
) -> Result<(), Failure> {
    let engine = family.name;
    let certs = if tls {
        Some(crate::sandbox::certs::for_sandbox(name).map_err(|m| Failure::new(exit::FAILED, m))?)
    } else {
        None
    };
    let choice = crate::engines::versions::BinaryChoice {
        version,
        basedir: None,
    };
    choice
        .validate()
        .map_err(|e| Failure::bad_input(format!("--{}", e.message)))?;
    let dir = out.join("sandboxes").join(name);
    if dir.exists() {
        return Err(Failure::bad_input(format!(
            "{} exists: choose another --name, or remove it with `dbduel sandbox down --out {}`",
            dir.display(),
            out.display()
        )));
    }
    // Before the directory is made: a version not installed leaves nothing behind.
    let recipe = (family.recipe)(&choice, certs).map_err(|e| {
        let code = if e.kind == "missing" {
            exit::PREREQUISITE
        } else {
            exit::FAILED
        };
        Failure::new(code, format!("{engine} sandbox `{name}`: {}", e.message))
    })?;
    let started = sandbox::Sandbox::create(recipe, name, &dir).and_then(|mut sb| {
        sb.start()?;
        let port = sb.layout.port;
        let secret = sandbox::secret::path(&sb.layout.dir);
        let version = sb.manifest.server_version.clone();
        let ca = sb.client_ca();
        sb.finish(true)?;
        Ok((port, secret, version, ca))
    });
    let (port, secret, version, ca) = started.map_err(|e| {
        let code = match e {
            sandbox::SandboxError::Missing { .. } => exit::PREREQUISITE,
            _ => exit::FAILED,
        };
        Failure::new(code, format!("{engine} sandbox `{name}`: {e}"))
    })?;
    // The password stays in its file: a contender names the file (or a variable set from
    // it), so it never lands in a terminal, a shell's history or a study.
    outln!("target = \"{}\"", (family.target)(port, ca.as_deref()));
    outln!("password_file = \"{}\"", secret.display());
    crate::errln!(
        "{engine} {}running in {}; stop and remove it with `dbduel sandbox down --out {}`",
        version.map(|v| format!("{v} ")).unwrap_or_default(),
        dir.display(),
        out.display()
    );
    crate::errln!(
        "its password is in {} (readable by you alone): a study's contender takes the two lines above, or `password_env = \"{}\"` after `export {}=\"$(cat {})\"`",
        secret.display(),
        sandbox::secret::ENV,
        sandbox::secret::ENV,
        secret.display()
    );
    Ok(())
}

/// One line per sandbox under `out`: its server, port, process and whether it was left behind.
fn status(out: &Path) {
    let found = sandbox::find(out);
    if found.is_empty() {
        outln!("no sandboxes under {}", out.display());
    }
    for f in found {
        let state = match (f.running, f.orphaned) {
            (true, false) => "running (its dbduel is running)",
            (true, true) => "running, left behind",
            (false, false) => "stopped (its dbduel is running)",
            (false, true) => "stopped, left behind",
        };
        outln!(
            "{:<8} {:<16} {:<28} port {:<5} pid {:<8} {state}  {}",
            f.manifest.flavor,
            f.manifest.name,
            f.manifest.role.as_deref().unwrap_or("single server"),
            f.manifest.port,
            f.manifest
                .pid
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
            f.path.display()
        );
    }
}

/// Stop and remove the sandboxes left behind (every one with `all`), then the empty cgroups
/// of gone dbduels; the exit code says whether every removal worked.
fn down(out: &Path, all: bool) -> i32 {
    let mut failed = false;
    for f in sandbox::find(out) {
        if !all && !f.orphaned {
            outln!(
                "skipping {} (its dbduel {} is running; use --all)",
                f.path.display(),
                f.manifest.owner_pid
            );
            continue;
        }
        match sandbox::remove_found(&f) {
            Ok(notes) => {
                for n in notes {
                    outln!("{}: {n}", f.path.display());
                }
                outln!(
                    "removed {} {} ({})",
                    f.manifest.flavor,
                    f.manifest.name,
                    f.path.display()
                )
            }
            Err(e) => {
                failed = true;
                crate::errln!("error: {}: {e}", f.path.display());
            }
        }
    }
    // Cgroups whose dbduel is gone and that hold no process (a `kill -9` left them).
    for dir in sandbox::limits::sweep() {
        outln!("removed cgroup {}", dir.display());
    }
    if failed { exit::FAILED } else { exit::OK }
}
