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
    /// Run the `restart_command` the old run's manifest gives without asking: the manifest
    /// may be someone else's, and the command runs through `sh -c` on this machine.
    #[arg(long, visible_alias = "yes")]
    allow_restart_command: bool,
}

/// The restart commands `study` would run, as `contender: command` lines.
fn restart_commands(study: &study::Study) -> Vec<String> {
    study
        .file
        .contenders
        .iter()
        .filter_map(|c| {
            c.restart_command
                .as_ref()
                .map(|cmd| format!("  {}: {cmd}", c.name))
        })
        .collect()
}

/// A manifest's restart commands run only when allowed: by the flag, or by a `y` typed at a
/// terminal. Without a terminal and without the flag, refuse (bad input) and say how.
fn allow_restart_commands(study: &study::Study, allowed: bool) -> Result<(), Failure> {
    use std::io::{BufRead, IsTerminal, Write};
    let commands = restart_commands(study);
    if commands.is_empty() || allowed {
        return Ok(());
    }
    let what = format!(
        "the run's manifest gives restart_command, which dbduel would run through `sh -c` on this machine:\n{}",
        commands.join("\n")
    );
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::bad_input(format!(
            "{what}\nnot run without asking: check the commands, then pass --allow-restart-command (or --yes)"
        )));
    }
    eprint!("{what}\nRun them when a step needs a restart? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Failure::bad_input(
            "not rerun: the restart commands were not allowed",
        ))
    }
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
    allow_restart_commands(&study, args.allow_restart_command)?;
    let report = execute_study(&study, args.out, args.keep, None, quiet, None)?;
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
