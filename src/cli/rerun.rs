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
    #[arg(long, default_value = "text", value_parser = Format::parser())]
    format: Format,
    /// Run the `restart_command` and read the password files the old run's manifest gives
    /// without asking: the manifest may be someone else's, a command runs through `sh -c` on
    /// this machine, and a password file's first line goes to the contender's server.
    #[arg(long, visible_alias = "yes")]
    allow_restart_command: bool,
}

/// What `study`, read from a run's manifest, would have dbduel do on this machine beyond
/// the run itself: the restart commands it would run and the password files and variables
/// it would read (and send to a server), as `contender: what` lines.
fn manifest_actions(study: &study::Study) -> Vec<String> {
    let mut out = Vec::new();
    for c in &study.file.contenders {
        if let Some(cmd) = &c.restart_command {
            out.push(format!("  {}: restart_command {cmd}", c.name));
        }
        if let Some(f) = &c.password_file {
            out.push(format!("  {}: password_file {}", c.name, f.display()));
        }
        if let Some(v) = &c.password_env {
            out.push(format!("  {}: password_env {v}", c.name));
        }
        let key_in = crate::engine::target::client_key_in;
        if let Some(k) = c.target.as_deref().and_then(key_in) {
            out.push(format!(
                "  {}: the TLS client key {k} its target names",
                c.name
            ));
        }
        let replicas = c.options.get("replicas").and_then(toml::Value::as_array);
        for r in replicas.into_iter().flatten() {
            for key in ["password_file", "password_env"] {
                if let Some(f) = r.get(key).and_then(toml::Value::as_str) {
                    out.push(format!("  {}: a replica's {key} {f}", c.name));
                }
            }
            if let Some(k) = r
                .get("target")
                .and_then(toml::Value::as_str)
                .and_then(key_in)
            {
                out.push(format!(
                    "  {}: the TLS client key {k} a replica's target names",
                    c.name
                ));
            }
        }
    }
    out
}

/// A manifest's restart commands run, and its password files are read, only when allowed:
/// by the flag, or by a `y` typed at a terminal. Without a terminal and without the flag,
/// refuse (bad input) and say how.
fn allow_manifest_actions(study: &study::Study, allowed: bool) -> Result<(), Failure> {
    use std::io::{BufRead, IsTerminal, Write};
    let actions = manifest_actions(study);
    if actions.is_empty() || allowed {
        return Ok(());
    }
    let what = format!(
        "the run's manifest (which may be someone else's) would have dbduel run commands through `sh -c`, read passwords from files or variables, or sign in with a TLS client key, on this machine:\n{}",
        actions.join("\n")
    );
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::bad_input(format!(
            "{what}\nnot done without asking: check them, then pass --allow-restart-command (or --yes)"
        )));
    }
    // Never `eprint!`: a closed stderr would panic it.
    let _ = write!(std::io::stderr(), "{what}\nAllow them? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Failure::bad_input(
            "not rerun: the manifest's restart commands and password files were not allowed",
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
    let read = |passwords: bool| {
        study::as_run(
            &before.manifest,
            &before.name,
            names.clone(),
            Some(study::resources::Machine::here(&args.out)),
            passwords,
        )
        .map_err(|e| Failure::bad_input(e.to_string()))
    };
    // Checked as a study file is, but no password file is read before it is allowed.
    allow_manifest_actions(&read(false)?, args.allow_restart_command)?;
    let study = read(true)?;
    // An auto run's rounds are decided again by its own rule (its study holds MAX rounds).
    let rounds = before
        .manifest
        .auto_rounds
        .as_ref()
        .map(crate::run::auto_rounds::RoundRule::as_ran);
    let report = execute_study(&study, args.out, args.keep, None, rounds, quiet, None)?;
    crate::errln!("results: {}", report.dir.path.display());
    let after =
        report::load(&report.dir.path).map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    let c = report::compare::compare(&before, &after, threshold);
    out!(
        "{}",
        args.format
            .compare(&c)
            .map_err(|e| Failure::new(exit::FAILED, e))?
    );
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
