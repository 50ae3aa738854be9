//! Running a loaded study for `run` and `rerun`: check every contender can run here, then run
//! it with Ctrl-C handling and progress.

use super::failure::{Failure, exit};
use crate::progress::Progress;
use crate::run::{self as execute, RunOptions};
use crate::sandbox;
use crate::study::Study;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Check that every contender can run here, then run the study with Ctrl-C handling and
/// progress.
pub(super) fn execute_study(
    study: &Study,
    out: PathBuf,
    keep: bool,
    shard: Option<execute::Sharding>,
    rounds: Option<execute::auto_rounds::RoundRule>,
    quiet: bool,
    metrics: Option<std::net::SocketAddr>,
) -> Result<execute::RunReport, Failure> {
    preflight(study, &out)?;
    let stop = install_signal_handlers()?;
    let mut progress = Progress::new(quiet);
    let shard_label = shard
        .as_ref()
        .map(|s| format!("{}/{}", s.shard.index, s.shard.count))
        .unwrap_or_default();
    let state = crate::live::shared(&study.file.study.name, &shard_label);
    let mut feed = crate::live::Feed(state.clone());
    // Dropped when the run is over, which stops its thread.
    let _endpoint = match metrics {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr).map_err(|e| {
                Failure::bad_input(format!("--metrics-listen {addr}: cannot listen there: {e}"))
            })?;
            let ep = crate::live::serve(listener, state)
                .map_err(|e| Failure::new(exit::FAILED, format!("--metrics-listen {addr}: {e}")))?;
            crate::errln!("metrics: http://{}/metrics", ep.addr);
            Some(ep)
        }
        None => None,
    };
    let mut html = HtmlReport::default();
    let mut more: Vec<&mut dyn execute::RunConsumer> = vec![&mut html];
    if metrics.is_some() {
        more.push(&mut feed);
    }
    let opts = RunOptions {
        out,
        keep,
        shard,
        rounds,
    };
    let report = execute::run_with(study, &opts, &mut progress, stop, &mut more)
        .map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    if let Some(e) = html.error {
        progress.note(&format!("could not write the HTML report: {e}"));
    }
    // The catalogue is an index of the run directories: a run it could not record is still
    // whole on disk, and `dbduel history rebuild` records it later.
    if let Err(e) = crate::history::record_run(&report.dir.path) {
        crate::errln!("warning: the run is not in the results catalogue: {e}");
    }
    if let Some(hint) = super::restore::hint(&report.dir.path) {
        crate::errln!("warning: {hint}");
    }
    Ok(report)
}

/// Writes the run's `report.html` when the run is over, from the files the journal wrote
/// (as `dbduel report --format html` reads them). The charts are a view of those files:
/// failing to write them loses no result, so the failure is kept to be said, not returned.
#[derive(Default)]
struct HtmlReport {
    dir: Option<PathBuf>,
    error: Option<String>,
}

impl execute::RunConsumer for HtmlReport {
    fn event(&mut self, event: &execute::RunEvent<'_>) -> Result<(), execute::ExecError> {
        match event {
            execute::RunEvent::RunStarted { dir, .. } => self.dir = Some(dir.to_path_buf()),
            execute::RunEvent::RunFinished { .. } => {
                let Some(path) = &self.dir else {
                    return Ok(());
                };
                let written = crate::results::RunDir::open(path).and_then(|dir| {
                    let summary = dir.read_summary()?;
                    let manifest = dir.read_manifest()?;
                    crate::report::write_html(&dir, &summary, &manifest)
                });
                self.error = written.err().map(|e| e.to_string());
            }
            _ => {}
        }
        Ok(())
    }
}

/// Every contender's engine is installed and answers, and its device profile can apply. All
/// contenders are asked, so one message names every one that cannot run (each with what it
/// misses and how to install it) and the `--contender` choice that runs the others.
fn preflight(study: &Study, out: &std::path::Path) -> Result<(), Failure> {
    power_loss_possible(study)?;
    let mut refused: Vec<(i32, String)> = Vec::new();
    let mut ready: Vec<&str> = Vec::new();
    for c in &study.contenders {
        match preflight_one(c, out).and_then(|()| least_privilege(study, c)) {
            Ok(()) => ready.push(&c.name),
            Err(e) => refused.push(e),
        }
    }
    let Some(&(code, _)) = refused.first() else {
        return Ok(());
    };
    let mut lines: Vec<String> = refused.into_iter().map(|(_, m)| m).collect();
    if !ready.is_empty() {
        let pick: Vec<String> = ready.iter().map(|n| format!("--contender {n}")).collect();
        lines.push(format!(
            "the others can run here: choose them with {}",
            pick.join(" ")
        ));
    }
    Err(Failure::new(code, lines.join("\n")))
}

/// A target whose account reaches beyond dbduel's database runs no study-written SQL unless
/// the contender says `wide_account = true` (or the run `--allow-wide-account`): the first
/// line of what keeps a study's SQL inside dbduel's database is an account that can reach
/// nothing else. The refusal (exit 3) names what the account may do and prints the account
/// that would suffice.
fn least_privilege(study: &Study, c: &crate::study::Contender) -> Result<(), (i32, String)> {
    let steps = study.study_sql_steps();
    if steps.is_empty() || study.wide_account_allowed(&c.name) {
        return Ok(());
    }
    let database = crate::engine::database_name(&study.file.study.name);
    let reach = c.engine.account_reach(&database).map_err(|e| {
        (
            exit::FAILED,
            format!(
                "contender `{}`: cannot read its account's privileges: {e}",
                c.name
            ),
        )
    })?;
    match reach {
        Some(r) if !r.wide.is_empty() => Err((
            exit::PREREQUISITE,
            format!(
                "contender `{}`: its target's account may do more than dbduel's database `{database}` needs:\n  {}\nthe study sends SQL of its own (steps {}), which dbduel runs only on an account that reaches no further; make one:\n{}\nand name it in the target, or say `wide_account = true` in the contender (or pass --allow-wide-account) to run on this account",
                c.name,
                r.wide.join("\n  "),
                steps.join(", "),
                r.recipe
                    .lines()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        )),
        _ => Ok(()),
    }
}

/// A step that cuts its servers' power serves their data directories through a FUSE
/// filesystem of dbduel's: where none can be mounted the run is refused before anything runs
/// (exit 3), with what is missing.
fn power_loss_possible(study: &Study) -> Result<(), Failure> {
    use crate::workload::StepParams;
    let steps: Vec<&str> = study
        .steps
        .iter()
        .filter(|s| matches!(&s.params, StepParams::Crash(p) if p.fault.cuts_power()))
        .map(|s| s.name.as_str())
        .collect();
    if steps.is_empty() {
        return Ok(());
    }
    #[cfg(feature = "servers")]
    let why = sandbox::power::unavailable();
    #[cfg(not(feature = "servers"))]
    let why = Some("this build has no server engines".to_string());
    match why {
        None => Ok(()),
        Some(why) => Err(Failure::new(
            exit::PREREQUISITE,
            format!(
                "step {} cuts its servers' power (fault = \"power\"), which serves their data through a FUSE filesystem that cannot be mounted here: {why}. Run dbduel as root on a machine with /dev/fuse (a container needs the device and CAP_SYS_ADMIN), or drop fault = \"power\" for a process crash",
                steps.join(", ")
            ),
        )),
    }
}

/// One contender's preflight: the exit code and message when it cannot run here.
fn preflight_one(c: &crate::study::Contender, out: &std::path::Path) -> Result<(), (i32, String)> {
    c.engine.preflight().map_err(|e| {
        // Something not installed (or an engine the server lacks, or TLS that cannot be
        // had as the target asks) is a missing prerequisite; a server that does not answer
        // is a failure.
        let code = if e.kind == "missing" || e.kind == "tls" {
            exit::PREREQUISITE
        } else {
            exit::FAILED
        };
        (code, format!("contender `{}` cannot run here: {e}", c.name))
    })?;
    // Never silently unthrottled: a profile that cannot apply stops the run now.
    if let Some(p) = c.engine.device_profile() {
        // where its data will be: its data_dir, else under the results
        let at = match c.engine.data_dir() {
            Some(d) => d.to_path_buf(),
            None => std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf()),
        };
        sandbox::limits::Limits::check_io(p, &at).map_err(|e| {
            (
                exit::PREREQUISITE,
                format!(
                    "contender `{}` asks for device_profile {}, which cannot be applied here: {e}",
                    c.name,
                    p.describe()
                ),
            )
        })?;
    }
    Ok(())
}

/// The first SIGINT, SIGTERM or SIGHUP raises the process's stop flag (the run stops its
/// phase at once — generation, load, server start, a step — stops its servers and writes
/// what it has); a second one exits at once with 130.
fn install_signal_handlers() -> Result<&'static AtomicBool, Failure> {
    crate::stop::install(exit::INTERRUPTED).map_err(|e| {
        Failure::new(
            exit::PREREQUISITE,
            format!("cannot install signal handlers: {e}"),
        )
    })?;
    Ok(crate::stop::flag())
}
