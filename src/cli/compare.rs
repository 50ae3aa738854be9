//! `dbduel compare`: two runs, or several a side pooled, compared per contender per step; the
//! change from A to B and whether it is beyond the threshold and the noise.

use super::failure::{Failure, exit, finished};
use super::output::out;
use crate::report::{self, Format};
use std::path::PathBuf;

/// `dbduel compare`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The run to compare against (before) and the run to judge (after); or, with `--`,
    /// the runs of side A.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// After `--`: the runs of side B.
    #[arg(last = true, value_name = "RUN_B")]
    runs_b: Vec<PathBuf>,
    /// Smallest change that counts, in percent (`5%` or `5`).
    #[arg(long, default_value = "5%")]
    threshold: String,
    /// Exit 1 when a figure regressed significantly (beyond the threshold and the noise).
    #[arg(long)]
    fail_on_regression: bool,
    #[arg(long, default_value = "text", value_parser = Format::parser())]
    format: Format,
}

/// Print the comparison; exit 1 with `--fail-on-regression` when a figure regressed.
pub(super) fn exec(args: CompareArgs) -> Result<i32, Failure> {
    let threshold =
        report::compare::parse_threshold(&args.threshold).map_err(Failure::bad_input)?;
    let (side_a, side_b) = match (args.runs.as_slice(), args.runs_b.is_empty()) {
        ([a, b], true) => (vec![a.clone()], vec![b.clone()]),
        (_, true) => {
            return Err(Failure::bad_input(format!(
                "compare takes two runs (A B), or several a side separated by `--` (A1 A2 -- B1 B2); got {} run(s) and no `--`",
                args.runs.len()
            )));
        }
        (_, false) => (args.runs, args.runs_b),
    };
    let c = report::compare::compare(&load(&side_a)?, &load(&side_b)?, threshold);
    out!(
        "{}",
        args.format
            .compare(&c)
            .map_err(|e| Failure::new(exit::FAILED, e))?
    );
    Ok(
        if args.fail_on_regression && c.regressions().next().is_some() {
            exit::FAILED
        } else {
            exit::OK
        },
    )
}

/// One side's runs, pooled.
fn load(ps: &[PathBuf]) -> Result<report::series::RunData, Failure> {
    let loaded = ps
        .iter()
        .map(|p| {
            let run = report::load(p).map_err(|e| Failure::bad_input(e.to_string()))?;
            finished(p, &run.summary.status)?;
            Ok(run)
        })
        .collect::<Result<Vec<_>, _>>()?;
    report::series::RunData::pooled(loaded).map_err(Failure::bad_input)
}
