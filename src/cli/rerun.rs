//! `dbduel rerun`: run a past run again exactly as it ran, compare the new run with it, and
//! say whether this machine reproduced it within the noise.

use super::execute::execute_study;
use super::failure::{Failure, exit, finished, status_code};
use super::output::out;
use crate::report::{self, Format};
use crate::study;
use std::path::PathBuf;

/// `dbduel rerun`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RerunArgs {
    /// The run directory to reproduce.
    run_dir: PathBuf,
    /// Results root for the new run.
    #[arg(long, default_value = "dbduel-results")]
    out: PathBuf,
    /// Keep the data files of the new run.
    #[arg(long)]
    keep: bool,
    /// Smallest change that counts, in percent (`5%` or `5`).
    #[arg(long, default_value = "5%")]
    threshold: String,
    /// Format of the comparison printed at the end.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// Rerun and compare; exit 1 when the new run failed or did not reproduce the old one.
pub(super) fn exec(args: RerunArgs, quiet: bool) -> Result<i32, Failure> {
    let threshold =
        report::compare::parse_threshold(&args.threshold).map_err(Failure::bad_input)?;
    let before = report::load(&args.run_dir).map_err(|e| Failure::bad_input(e.to_string()))?;
    finished(&args.run_dir, &before.summary.status)?;
    let names: Vec<String> = before
        .summary
        .contenders
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let study = study::as_run(
        &before.manifest,
        &before.name,
        names,
        Some(study::resources::Machine::here(&args.out)),
    )
    .map_err(|e| Failure::bad_input(e.to_string()))?;
    let report = execute_study(&study, args.out, args.keep, None, quiet)?;
    crate::errln!("results: {}", report.dir.path.display());
    let after =
        report::load(&report.dir.path).map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    let c = report::compare::compare(&before, &after, threshold);
    out!("{}", report::compare::render(&c, args.format));
    let reproduced = c.reproduction();
    match &reproduced {
        Ok(how) => crate::errln!("reproduced {}: {how}", before.name),
        Err(why) => crate::errln!("NOT reproduced ({}): {why}", before.name),
    }
    Ok(match status_code(report.summary.status) {
        exit::OK if reproduced.is_err() => exit::FAILED,
        code => code,
    })
}
