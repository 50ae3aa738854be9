//! `dbduel restore`: put back what a run that died changed on someone else's replication
//! topology — replicas whose apply a step paused, the primary's group-commit wait — from the
//! originals the step wrote into the run directory before changing anything.

use super::failure::{Failure, exit};
use super::output::outln;
use crate::results::RunDir;
use crate::workload::replication::originals::{self, Originals};
use std::path::{Path, PathBuf};

/// `dbduel restore`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// The run directory that holds `replication-originals.json`.
    run_dir: PathBuf,
}

/// The hint shown wherever a run directory still holds originals to put back.
pub(super) fn hint(run_dir: &Path) -> Option<String> {
    let o = Originals::read(&originals::path_in(run_dir)).ok()??;
    Some(format!(
        "{} holds changes a replication step made and never put back ({}): run `dbduel restore {}`",
        run_dir.display(),
        o.describe(),
        run_dir.display()
    ))
}

/// Reconnect with the run's own study (its passwords from `password_env`/`password_file`
/// as now set), put the originals back and remove the file. Safe to run again.
pub(super) fn exec(args: RestoreArgs) -> Result<i32, Failure> {
    let path = originals::path_in(&args.run_dir);
    let o = match Originals::read(&path) {
        Ok(Some(o)) => o,
        Ok(None) => {
            outln!(
                "nothing to restore: {} holds no {}",
                args.run_dir.display(),
                originals::FILE
            );
            return Ok(exit::OK);
        }
        Err(e) => return Err(Failure::bad_input(e)),
    };
    let dir = RunDir::open(&args.run_dir).map_err(|e| Failure::bad_input(e.to_string()))?;
    let manifest = dir
        .read_manifest()
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    let name = args
        .run_dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let study = crate::study::as_run(&manifest, &name, vec![o.contender.clone()], None, true)
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    let Some(contender) = study.contenders.iter().find(|c| c.name == o.contender) else {
        return Err(Failure::bad_input(format!(
            "the run's study has no contender {}",
            o.contender
        )));
    };
    let database = crate::engine::database_name(&study.file.study.name);
    let cannot = |e: String| {
        Failure::new(
            exit::FAILED,
            format!(
                "cannot put back {}: {e}; the file {} stays, run this again when the servers are reachable",
                o.describe(),
                path.display()
            ),
        )
    };
    match contender
        .engine
        .attach_replication(&database)
        .map_err(|e| cannot(e.to_string()))?
    {
        Some(repl) => o
            .put_back(repl.as_ref())
            .map_err(|e| cannot(e.to_string()))?,
        // dbduel's own sandboxes: they stopped with the run, or `sandbox down` removes them.
        None => outln!(
            "contender {} ran on servers dbduel provisioned; nothing of anyone else's to put back",
            o.contender
        ),
    }
    std::fs::remove_file(&path)
        .map_err(|e| Failure::new(exit::FAILED, format!("{}: {e}", path.display())))?;
    outln!("restored: {}", o.describe());
    Ok(exit::OK)
}
