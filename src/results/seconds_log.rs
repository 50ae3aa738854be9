//! A step's per-second records written as they are made: each second's record is appended
//! to its file (`<step>.intervals.ndjson` for the runner's seconds, `<step>.system.ndjson`
//! for the sampler's) as soon as it is made, one whole line per write
//! straight to the file (no buffer in dbduel), so a run killed mid-step keeps the seconds it
//! had finished and a long step holds none of them in memory for the file's sake.

use super::ResultsError;
use super::intervals::IntervalRecord;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A per-second file of one step; created with its first record, so a step without
/// seconds leaves no file. Shared by reference with the step (and its threads).
pub struct SecondsLog {
    /// None: records are dropped (a step run outside a run directory).
    path: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    file: Option<File>,
    written: u64,
    /// The first failed write; nothing is written after it.
    error: Option<std::io::Error>,
}

impl SecondsLog {
    /// Records go to `path` (replaced by the first record).
    pub fn new(path: PathBuf) -> SecondsLog {
        SecondsLog {
            path: Some(path),
            state: Mutex::default(),
        }
    }

    /// Records go nowhere.
    pub fn discard() -> SecondsLog {
        SecondsLog {
            path: None,
            state: Mutex::default(),
        }
    }

    /// Where the records go.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Append one second's record, in one write. A failure is kept for
    /// [`SecondsLog::finish`], and nothing more is written.
    pub fn append<T: serde::Serialize>(&self, rec: &T) {
        let Some(path) = &self.path else { return };
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.error.is_some() {
            return;
        }
        let mut line = match serde_json::to_vec(rec) {
            Ok(l) => l,
            Err(e) => {
                state.error = Some(std::io::Error::other(e));
                return;
            }
        };
        line.push(b'\n');
        let written = match &mut state.file {
            Some(f) => f.write_all(&line),
            None => File::create(path).and_then(|mut f| {
                f.write_all(&line)?;
                state.file = Some(f);
                Ok(())
            }),
        };
        match written {
            Ok(()) => state.written += 1,
            Err(e) => state.error = Some(e),
        }
    }

    /// Append `rec` as the second `tick_base` seconds into the step it is part of, tagged
    /// with its `level` when given (see [`IntervalRecord::shifted`]).
    pub fn append_shifted(&self, rec: &IntervalRecord, tick_base: u64, level: Option<u64>) {
        if self.path.is_some() {
            self.append(&rec.shifted(tick_base, level));
        }
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).written
    }

    /// The step is over: the file synced to disk, or why a record could not be written.
    pub fn finish(&self) -> Result<u64, ResultsError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let path = self.path.as_deref().unwrap_or(Path::new(""));
        if let Some(e) = state.error.take() {
            return Err(ResultsError::Io {
                path: path.to_path_buf(),
                source: e,
            });
        }
        if let Some(f) = state.file.take() {
            f.sync_all().map_err(|source| ResultsError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        }
        Ok(state.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(tick: u64) -> IntervalRecord {
        IntervalRecord {
            tick,
            t_s: tick as f64 + 1.0,
            warmup: false,
            ops: 10,
            ops_per_s: 10.0,
            rows: 10,
            errors: 0,
            late: 0,
            dropped: 0,
            latency_us: None,
            per_op: Vec::new(),
            level: None,
            ..Default::default()
        }
    }

    #[test]
    fn each_second_is_on_disk_as_soon_as_it_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.intervals.ndjson");
        let log = SecondsLog::new(path.clone());
        assert!(!path.exists(), "no file before the first second");
        for tick in 0..3 {
            log.append(&second(tick));
            // Read back by another handle while the log is still open: already there.
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.lines().count() as u64, tick + 1);
            let last: IntervalRecord = serde_json::from_str(text.lines().last().unwrap()).unwrap();
            assert_eq!(last.tick, tick);
        }
        log.append_shifted(&second(0), 10, Some(4));
        let text = std::fs::read_to_string(&path).unwrap();
        let last: IntervalRecord = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!((last.tick, last.t_s, last.level), (10, 11.0, Some(4)));
        assert_eq!(log.finish().unwrap(), 4);
    }

    #[test]
    fn a_failed_write_is_reported_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let log = SecondsLog::new(dir.path().join("missing/s.intervals.ndjson"));
        log.append(&second(0));
        log.append(&second(1));
        assert_eq!(log.written(), 0);
        assert!(log.finish().is_err());
        let nowhere = SecondsLog::discard();
        nowhere.append(&second(0));
        assert_eq!(nowhere.finish().unwrap(), 0);
    }
}
