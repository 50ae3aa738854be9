//! Runs a validated study. A run is a plan plus events: [`plan`] decides what runs (rounds ×
//! contenders × steps), the [`executor`] walks it — the dataset once, then for each contender
//! of a round its engine and every step, with the system sampler beside it and the shard
//! `gate` around it — and emits [`events`]; the [`journal`] writes them to the run
//! directory after each step, so nothing finished is lost, and the `status` lines print
//! them.

pub mod auto_rounds;
mod dataset;
pub mod events;
pub mod executor;
mod gate;
pub mod journal;
pub mod plan;
mod status;
mod step;

pub use events::{RunConsumer, RunEvent};
pub use plan::Plan;

use crate::progress::Progress;
use crate::results::{Manifest, RunDir, Summary};
use crate::shard::Shard;
use crate::study::Study;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results root; the run makes its own directory inside.
    pub out: PathBuf,
    /// Keep data files (databases, dataset) after the run.
    pub keep: bool,
    /// Run one shard of the study (see [`crate::shard`]).
    pub shard: Option<Sharding>,
    /// `--repeat auto`, `--budget`: rounds decided as the run goes (the plan's are the most).
    pub rounds: Option<auto_rounds::RoundRule>,
}

/// Which shard to run, and how the shards meet.
#[derive(Debug, Clone)]
pub struct Sharding {
    pub shard: Shard,
    /// The name every shard of the run shares in the meeting table.
    pub group: String,
    /// How long a shard waits for the others at a meeting point.
    pub timeout: Duration,
}

/// A finished (or stopped) run.
pub struct RunReport {
    pub dir: RunDir,
    pub summary: Summary,
    pub manifest: Manifest,
}

/// Errors that stop a run before or outside any step.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error("{}", crate::stop::INTERRUPTED)]
    Interrupted,
    #[error("generating the dataset into {path}: {source}")]
    Dataset {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Run `study`. Step failures are recorded in the summary (status `failed`), not returned.
pub fn run(
    study: &Study,
    opts: &RunOptions,
    progress: &mut Progress,
    stop: &AtomicBool,
) -> Result<RunReport, ExecError> {
    run_with(study, opts, progress, stop, &mut [])
}

/// [`run`], with more consumers of its events after the journal and the status lines (a
/// live endpoint).
pub fn run_with(
    study: &Study,
    opts: &RunOptions,
    progress: &mut Progress,
    stop: &AtomicBool,
    more: &mut [&mut dyn RunConsumer],
) -> Result<RunReport, ExecError> {
    let plan = Plan::new(study, opts.shard.as_ref().map(|sh| sh.shard));
    let dir = journal::create_dir(&opts.out, &plan.label)?;
    let work = dir.work_dir();
    std::fs::create_dir_all(&work).map_err(|e| crate::results::ResultsError::Io {
        path: work.clone(),
        source: e,
    })?;
    let host = executor::host(&work);
    let started = SystemTime::now();
    let path = dir.path.clone();
    let mut journal = journal::Journal::new(dir, study, opts, &host, started);
    let progress: &Progress = progress;
    let mut lines = status::StatusLines(progress);
    let executor = executor::Executor {
        study,
        opts,
        plan: &plan,
        dir: &path,
        work: &work,
        host: &host,
        started,
        progress,
        stop,
        tally: Default::default(),
    };
    let mut sinks: Vec<&mut dyn RunConsumer> = vec![&mut journal, &mut lines];
    for m in more.iter_mut() {
        sinks.push(&mut **m);
    }
    executor.run(&mut events::Sinks(sinks))?;
    Ok(journal.finish())
}
