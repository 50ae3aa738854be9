//! The run's dataset: every table's tab-separated file, generated from the seed into the
//! run's work directory.

use super::ExecError;
use crate::dataset::Generator;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Write every table's tab-separated file, tables in parallel (one thread per core);
/// returns the bytes written.
pub fn write(
    generator: Generator,
    ds: &crate::study::model::DatasetSpec,
    files: &[PathBuf],
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
                        bytes += generator
                            .write_tsv(ds.seed, ds.scale(), ds.tables, n as u64, path)
                            .map_err(|e| ExecError::Dataset {
                                path: path.clone(),
                                source: e,
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
    results.into_iter().sum()
}
