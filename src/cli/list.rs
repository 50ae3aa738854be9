//! `dbduel list`: the runs under a results root, newest first, one line each.

use super::failure::Failure;
use super::output::outln;
use crate::results::{RunDir, Status, Summary};
use std::path::{Path, PathBuf};

/// Print the runs under `out`, newest first.
pub(super) fn exec(out: &Path) -> Result<(), Failure> {
    let entries = match std::fs::read_dir(out) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            outln!(
                "no runs in {} yet; start one with `dbduel run shootout`",
                out.display()
            );
            return Ok(());
        }
        Err(e) => {
            return Err(Failure::bad_input(format!("{}: {e}", out.display())));
        }
    };
    let mut runs: Vec<(PathBuf, Summary)> = entries
        .flatten()
        .filter_map(|e| {
            let dir = RunDir::open(&e.path()).ok()?;
            let s = dir.read_summary().ok()?;
            Some((dir.path, s))
        })
        .collect();
    runs.sort_by(|a, b| b.1.started_at.cmp(&a.1.started_at).then(b.0.cmp(&a.0)));
    if runs.is_empty() {
        outln!(
            "no runs in {} yet; start one with `dbduel run shootout`",
            out.display()
        );
    }
    let unfinished = runs.iter().any(|(_, s)| s.status == Status::Running);
    let mut to_restore = Vec::new();
    for (path, s) in runs {
        to_restore.extend(super::restore::hint(&path));
        let names: Vec<&str> = s.contenders.iter().map(|c| c.name.as_str()).collect();
        outln!(
            "{}  {:<11} {:<12} {:<10} {}  {}",
            s.started_at,
            match s.status {
                Status::Running => "unfinished",
                other => other.as_str(),
            },
            s.study,
            s.scale.as_deref().unwrap_or("-"),
            names.join(","),
            path.display()
        );
    }
    if unfinished {
        outln!(
            "unfinished: the run never wrote its end — it is still running, or dbduel was killed or the machine went down; compare, merge and rerun refuse it"
        );
    }
    for hint in to_restore {
        outln!("NOT RESTORED: {hint}");
    }
    Ok(())
}
