//! The history of runs: every finished run is also recorded in a results catalogue (an
//! embedded SQLite file under the results root, [`catalogue`]), which `dbduel history` lists
//! and filters ([`query`]) and in which it follows one figure across runs with the noise band
//! `compare` uses ([`trend`]). The run directories stay the source of truth: the catalogue is
//! rebuilt from them, and runs made elsewhere are imported by copying their directories in.

pub mod catalogue;
pub mod query;
pub mod trend;

pub use catalogue::{Catalogue, FILE, HistoryError};
pub use query::{Filter, Point, RunRow};

use std::path::{Path, PathBuf};

/// Record the finished run in `dir` in the catalogue of its results root (`dir`'s parent).
pub fn record_run(dir: &Path) -> Result<bool, HistoryError> {
    let root = dir.parent().unwrap_or(Path::new("."));
    Catalogue::open(root)?.record(dir)
}

/// Copy the run directories in `from` (a run directory, or a directory of them — a shard's
/// results, another machine's) into results root `root`, without their `work/` data, and
/// record them. A run whose directory name is already in the root is recorded again, not
/// copied. Returns the runs' directories under the root.
pub fn import(root: &Path, from: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let dirs = if from.join("summary.json").is_file() {
        vec![from.to_path_buf()]
    } else {
        Catalogue::run_dirs(from)
    };
    if dirs.is_empty() {
        return Err(HistoryError::NoRuns(from.to_path_buf()));
    }
    let mut cat = Catalogue::open(root)?;
    let mut out = Vec::new();
    for d in dirs {
        let name = d.file_name().map(PathBuf::from).unwrap_or_default();
        let to = root.join(name);
        let same = to.canonicalize().ok() == d.canonicalize().ok();
        if !same && !to.exists() {
            copy_run(&d, &to)?;
        }
        if cat.record(&to)? {
            out.push(to);
        }
    }
    Ok(out)
}

/// Copy a run directory, leaving out its `work/` (databases and dataset kept with `--keep`)
/// and any sandbox manifest.
fn copy_run(from: &Path, to: &Path) -> Result<(), HistoryError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HistoryError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let e = e.map_err(io(from))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ty = e.file_type().map_err(io(&src))?;
        if ty.is_dir() {
            if e.file_name() != "work" {
                copy_run(&src, &dst)?;
            }
        } else if ty.is_file() && e.file_name() != crate::sandbox::MANIFEST {
            // Never a sandbox's manifest: an imported run's servers are not this machine's
            // to stop, and `sandbox down` must find none of them.
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_run_brings_no_sandbox_manifest() {
        let from = tempfile::tempdir().expect("tmp");
        let to = tempfile::tempdir().expect("tmp");
        let deep = from.path().join("c/sandbox");
        std::fs::create_dir_all(&deep).expect("dir");
        std::fs::write(from.path().join("summary.json"), "{}").expect("write");
        std::fs::write(deep.join(crate::sandbox::MANIFEST), "{}").expect("write");
        std::fs::write(deep.join("server.log"), "x").expect("write");
        copy_run(from.path(), &to.path().join("r")).expect("copy");
        assert!(to.path().join("r/summary.json").is_file());
        assert!(to.path().join("r/c/sandbox/server.log").is_file());
        assert!(
            !to.path()
                .join("r/c/sandbox")
                .join(crate::sandbox::MANIFEST)
                .exists()
        );
    }
}
