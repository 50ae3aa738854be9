//! `dbduel merge`: make the shards of one run into one ordinary run directory, write its HTML
//! report, record it in the results catalogue and print its comparison.

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
    #[arg(long, default_value = "text", value_parser = Format::parser())]
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
        check_names(r)?;
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
    // Recorded as a finished run is: the catalogue of the results root it was written in.
    if let Err(e) = crate::history::record_run(&dir.path) {
        crate::errln!("warning: the merged run is not in the results catalogue: {e}");
    }
    out!(
        "{}",
        report::render(&dir.path, &summary, &manifest, args.format)
            .map_err(|e| Failure::new(exit::FAILED, e))?
    );
    crate::errln!(
        "merged {} shards: {}",
        manifest.shards.len(),
        dir.path.display()
    );
    Ok(status_code(summary.status))
}

/// The contender and step names of a shard's `summary.json` become paths of the merged run:
/// each must be a name a study could have given (so none climbs out with `..` or `/`).
fn check_names(run: &shard_merge::ShardRun) -> Result<(), Failure> {
    let names = run.summary.contenders.iter().flat_map(|c| {
        std::iter::once(("contender", c.name.as_str()))
            .chain(c.steps.iter().map(|s| ("step", s.name.as_str())))
    });
    for (what, name) in names {
        let allowed = match what {
            "contender" => crate::study::is_contender_name(name),
            _ => crate::study::is_safe_name(name),
        };
        if !allowed {
            return Err(Failure::bad_input(format!(
                "{}: {what} name {name:?} is not one a study allows (1-64 letters, digits, `_` or `-`; `.` inside a contender's); it would be used as a path, so the shards are not merged",
                run.dir.join("summary.json").display()
            )));
        }
    }
    Ok(())
}
