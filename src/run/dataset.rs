//! The run's dataset: every table's tab-separated file, generated from the seed into the
//! run's work directory. A stop asked for meanwhile ends every table's writer at its next
//! write.

use super::ExecError;
use crate::dataset::Generator;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Write every table's tab-separated file, tables in parallel (one thread per core);
/// returns the bytes written. Err [`ExecError::Interrupted`] once `stop` is raised.
pub fn write(
    generator: Generator,
    ds: &crate::study::model::DatasetSpec,
    files: &[PathBuf],
    stop: &AtomicBool,
) -> Result<u64, ExecError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Result<u64, ExecError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut bytes = 0;
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = files.get(n) else {
                            return Ok(bytes);
                        };
                        if stop.load(Ordering::Relaxed) {
                            return Err(ExecError::Interrupted);
                        }
                        bytes += write_table(generator, ds, n as u64, path, stop).map_err(|e| {
                            if stop.load(Ordering::Relaxed) {
                                ExecError::Interrupted
                            } else {
                                ExecError::Dataset {
                                    path: path.clone(),
                                    source: e,
                                }
                            }
                        })?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ExecError::Dataset {
                        path: PathBuf::from("(dataset)"),
                        source: std::io::Error::other("a generator thread panicked"),
                    })
                })
            })
            .collect()
    });
    // An interrupted writer says so first, whatever the others said.
    if stop.load(Ordering::Relaxed) {
        return Err(ExecError::Interrupted);
    }
    results.into_iter().sum()
}

/// Table number `n` into the file at `path` (created or truncated), synced; returns bytes.
fn write_table(
    generator: Generator,
    ds: &crate::study::model::DatasetSpec,
    n: u64,
    path: &Path,
    stop: &AtomicBool,
) -> std::io::Result<u64> {
    let file = std::fs::File::create(path)?;
    let mut out = crate::stop::Writer {
        inner: std::io::BufWriter::with_capacity(1 << 20, file),
        stop,
    };
    let bytes = generator.write_tsv_to(ds.seed, ds.scale(), ds.tables, n, &mut out)?;
    out.flush()?;
    out.inner
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()?;
    Ok(bytes)
}
