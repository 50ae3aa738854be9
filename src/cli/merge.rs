//! `dbduel merge`: make the shards of one run into one ordinary run directory, write its HTML
//! report and print its comparison.

use super::failure::{Failure, exit, finished, status_code};
use super::output::out;
use crate::report::{self, Format};
use crate::results::shard_merge;
use std::path::PathBuf;

/// `dbduel merge`'s arguments.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Every shard's run directory.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// The merged run's directory (must not exist yet).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// Merge the shards; the exit code is the merged run's status.
pub(super) fn exec(args: MergeArgs) -> Result<i32, Failure> {
    let read = args
        .runs
        .iter()
        .map(|d| shard_merge::ShardRun::read(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    for r in &read {
        finished(&r.dir, &r.summary.status)?;
    }
    let (dir, summary, manifest) =
        shard_merge::merge(read, &args.out, crate::workload::divides_clients).map_err(|e| {
            let code = match e {
                shard_merge::MergeError::NotOneRun(_) => exit::BAD_INPUT,
                shard_merge::MergeError::Results(_) => exit::FAILED,
            };
            Failure::new(code, e.to_string())
        })?;
    if let Err(e) = report::write_html(&dir, &summary, &manifest) {
        crate::errln!("could not write the HTML report: {e}");
    }
    out!(
        "{}",
        report::render(&dir.path, &summary, &manifest, args.format)
    );
    crate::errln!(
        "merged {} shards: {}",
        manifest.shards.len(),
        dir.path.display()
    );
    Ok(status_code(summary.status))
}
