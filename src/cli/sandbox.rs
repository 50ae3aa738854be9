//! `dbduel sandbox`: start a private server of a family the engines registry offers and leave
//! it running (`up`), list the sandboxes under a results root (`status`), stop and remove them
//! (`down`).

use super::failure::{Failure, exit};
use super::output::outln;
use crate::engines::{SANDBOX_FAMILIES, SandboxFamily};
use crate::sandbox;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand, Debug)]
pub enum SandboxAction {
    /// Start a private MariaDB or PostgreSQL server and leave it running, to point studies'
    /// `target`s at (the shards of a sharded run on this machine, or a try of a target);
    /// prints its target. `dbduel sandbox down` stops and removes it.
    Up {
        /// mariadb or postgres.
        #[arg(value_parser = family_parser())]
        engine: &'static SandboxFamily,
        /// The sandbox's name (its directory under OUT/sandboxes/).
        #[arg(long, default_value = "target")]
        name: String,
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
    /// List sandboxes under the results root: running or not, and whether the dbduel that
    /// started them is still there (`--keep` and crashes leave them behind).
    Status {
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
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
        SandboxAction::Up { engine, name, out } => up(engine, &name, &out).map(|()| exit::OK),
        SandboxAction::Status { out } => {
            status(&out);
            Ok(exit::OK)
        }
        SandboxAction::Down { out, all } => Ok(down(&out, all)),
    }
}

/// Start a server of `family` in OUT/sandboxes/NAME, leave it running and print its target.
fn up(family: &SandboxFamily, name: &str, out: &Path) -> Result<(), Failure> {
    let engine = family.name;
    let dir = out.join("sandboxes").join(name);
    if dir.exists() {
        return Err(Failure::bad_input(format!(
            "{} exists: choose another --name, or remove it with `dbduel sandbox down --out {}`",
            dir.display(),
            out.display()
        )));
    }
    let started = sandbox::Sandbox::create((family.recipe)(), name, &dir).and_then(|mut sb| {
        sb.start()?;
        let port = sb.layout.port;
        sb.finish(true)?;
        Ok(port)
    });
    let port = started.map_err(|e| {
        let code = match e {
            sandbox::SandboxError::Missing { .. } => exit::PREREQUISITE,
            _ => exit::FAILED,
        };
        Failure::new(code, format!("{engine} sandbox `{name}`: {e}"))
    })?;
    outln!("target = \"{}\"", (family.target)(port));
    eprintln!(
        "{engine} running in {}; stop and remove it with `dbduel sandbox down --out {}`",
        dir.display(),
        out.display()
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
                eprintln!("error: {}: {e}", f.path.display());
            }
        }
    }
    // Cgroups whose dbduel is gone and that hold no process (a `kill -9` left them).
    for dir in sandbox::limits::sweep() {
        outln!("removed cgroup {}", dir.display());
    }
    if failed { exit::FAILED } else { exit::OK }
}
