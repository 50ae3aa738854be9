//! `dbduel report`: render a past run from its directory alone, optionally against another
//! baseline contender than the run's.

use super::failure::{Failure, exit, join_names};
use super::output::out;
use crate::report::{self, Format};
use crate::results::RunDir;
use std::path::PathBuf;

/// `dbduel report`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A run directory (printed by `dbduel run`, listed by `dbduel list`).
    run_dir: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::parser())]
    format: Format,
    /// Print the client steps' per-second series as CSV instead (one row per second).
    #[arg(long, conflicts_with = "baseline")]
    series: bool,
    /// Show every figure also as a ratio to this contender's (overrides the run's baseline
    /// and its contenders' own).
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
}

/// Print the run's report.
pub(super) fn exec(args: ReportArgs) -> Result<(), Failure> {
    let dir = RunDir::open(&args.run_dir).map_err(|e| Failure::bad_input(e.to_string()))?;
    let summary = dir
        .read_summary()
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    let mut manifest = dir
        .read_manifest()
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    if let Some(b) = args.baseline {
        if !summary.contenders.iter().any(|c| c.name == b) {
            return Err(Failure::bad_input(format!(
                "--baseline {b}: no contender `{b}` in this run; its contenders are: {}",
                join_names(summary.contenders.iter().map(|c| c.name.as_str()))
            )));
        }
        // One baseline for every contender, as asked: the study's pairs give way.
        manifest.baseline = Some(b);
        manifest.baselines.clear();
    }
    if args.series {
        if !matches!(args.format.name(), "text" | "csv") {
            return Err(Failure::bad_input(
                "--series prints CSV: leave out --format or give --format csv",
            ));
        }
        let run = report::series::RunData::load(&dir.path, summary, manifest);
        let text = report::csv::seconds(&run).map_err(|e| Failure::new(exit::FAILED, e))?;
        out!("{text}");
        return Ok(());
    }
    let text = report::render(&dir.path, &summary, &manifest, args.format)
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    out!("{text}");
    if let Some(hint) = super::restore::hint(&dir.path) {
        crate::errln!("warning: {hint}");
    }
    Ok(())
}
