//! The run directory and every file in it: `manifest.json` (context), `summary.json` (what
//! scripts read), per contender per step `<step>.json`, `<step>.intervals.ndjson` and
//! `<step>.system.ndjson`. All JSON carries `schema_version`; files are written atomically.

pub mod format;
pub mod intervals;
pub mod merge_levels;
pub mod model;
pub mod rounds;
pub mod seconds_log;
pub mod shard_merge;
pub mod spread;

pub use intervals::{ErrorTick, IntervalRecord, OpInterval};
pub use model::*;
pub use seconds_log::SecondsLog;

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Version of every JSON file's layout; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// A run's directory of results.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
}

/// Errors writing or reading results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a dbduel result file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{path}: written by a newer dbduel (schema_version {found}, this build reads {SCHEMA_VERSION})"
    )]
    TooNew { path: PathBuf, found: u32 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RunDir {
    /// Make a new, empty directory `<root>/<study>-<UTC timestamp>[-N]`; never reuses one.
    pub fn create(root: &Path, study: &str) -> Result<RunDir, ResultsError> {
        std::fs::create_dir_all(root).map_err(io(root))?;
        let stamp = utc_stamp(std::time::SystemTime::now());
        for n in 0..1000 {
            let name = if n == 0 {
                format!("{study}-{stamp}")
            } else {
                format!("{study}-{stamp}-{n}")
            };
            let path = root.join(name);
            // create_dir (not _all) fails if it exists, so two runs never share a directory.
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(&path)(e)),
            }
        }
        Err(io(root)(std::io::Error::other(
            "could not find a free run directory name",
        )))
    }

    /// An existing run directory.
    pub fn open(path: &Path) -> Result<RunDir, ResultsError> {
        if path.join("summary.json").is_file() {
            Ok(RunDir {
                path: path.to_path_buf(),
            })
        } else {
            Err(io(path)(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no summary.json here; is this a dbduel run directory?",
            )))
        }
    }

    /// Directory for a contender's result files (created).
    pub fn contender_dir(&self, contender: &str) -> Result<PathBuf, ResultsError> {
        let d = self.path.join(contender);
        std::fs::create_dir_all(&d).map_err(io(&d))?;
        Ok(d)
    }

    /// Scratch space for data files (datasets, embedded databases); removed after the run.
    pub fn work_dir(&self) -> PathBuf {
        self.path.join("work")
    }

    /// Write `value` as pretty JSON to `rel`, atomically (temporary file, then rename).
    pub fn write_json<T: Serialize>(&self, rel: &str, value: &T) -> Result<(), ResultsError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| ResultsError::Parse {
            path: self.path.join(rel),
            source: e,
        })?;
        write_atomic(&self.path.join(rel), &bytes)
    }

    /// Write one JSON object per line to `rel`, atomically.
    pub fn write_ndjson<T: Serialize>(&self, rel: &str, rows: &[T]) -> Result<(), ResultsError> {
        let path = self.path.join(rel);
        let mut buf = Vec::new();
        for r in rows {
            serde_json::to_writer(&mut buf, r).map_err(|e| ResultsError::Parse {
                path: path.clone(),
                source: e,
            })?;
            buf.push(b'\n');
        }
        write_atomic(&path, &buf)
    }

    pub fn read_summary(&self) -> Result<Summary, ResultsError> {
        let mut s: Summary = read_versioned(&self.path.join("summary.json"))?;
        s.give_older_figures_roles();
        Ok(s)
    }

    pub fn read_manifest(&self) -> Result<Manifest, ResultsError> {
        read_versioned(&self.path.join("manifest.json"))
    }
}

/// Read a JSON file, refusing layouts newer than this build.
pub fn read_versioned<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ResultsError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let v: Version = serde_json::from_slice(&bytes).map_err(|e| ResultsError::Parse {
        path: path.to_path_buf(),
        source: e,
    })?;
    if v.schema_version > SCHEMA_VERSION {
        return Err(ResultsError::TooNew {
            path: path.to_path_buf(),
            found: v.schema_version,
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| ResultsError::Parse {
        path: path.to_path_buf(),
        source: e,
    })
}

/// Write `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader (or a crash) never sees a half-written file. The temporary file is made new (never
/// through a link left at its name) and removed on every error; the directory is synced after
/// the rename, so the new name survives a power cut too.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ResultsError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    // A leftover of a crashed writer with our pid (or anything planted there) goes first.
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .map_err(io(&tmp))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(io(path)));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// `YYYYMMDD-HHMMSS` in UTC.
pub fn utc_stamp(t: std::time::SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
}

/// RFC 3339 timestamp in UTC, second precision.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// UTC calendar fields of a time. Hand-written (Howard Hinnant's days-to-civil) because the
/// only date need here is a UTC stamp; a date crate would be a dependency for ten lines.
fn civil(t: std::time::SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn stamps_are_utc_calendar_dates() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_315_062); // 2026-11-22T02:37:42Z
        assert_eq!(rfc3339(t), "2026-11-22T02:37:42Z");
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101-000000");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_temporary_file_and_no_link_is_followed() {
        let root = tempfile::tempdir().expect("tmp");
        // A rename onto a directory that holds something fails after the data was written.
        let target = root.path().join("taken.json");
        std::fs::create_dir_all(target.join("inside")).expect("mkdir");
        assert!(write_atomic(&target, b"{}").is_err());
        let left: Vec<_> = std::fs::read_dir(root.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["taken.json"], "the temporary file is gone");
        // A link planted at the temporary name is not written through.
        let victim = root.path().join("victim");
        std::fs::write(&victim, "mine").expect("victim");
        let path = root.path().join("x.json");
        let tmp = root
            .path()
            .join(format!(".x.json.tmp{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).expect("link");
        write_atomic(&path, b"new").expect("write");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "mine");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
    }

    #[test]
    fn run_dirs_are_never_shared() {
        let root = tempfile::tempdir().expect("tmp");
        let a = RunDir::create(root.path(), "s").expect("a");
        let b = RunDir::create(root.path(), "s").expect("b");
        assert_ne!(a.path, b.path);
        a.write_json("x.json", &serde_json::json!({"schema_version": 1}))
            .expect("write");
        let names: Vec<_> = std::fs::read_dir(&a.path)
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left behind: {names:?}");
    }
}
