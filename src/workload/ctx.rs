//! What a step works with and what it hands back: its context (`StepCtx`, built once per
//! step by the run's executor and passed on), its output, and why it could not produce one.

use crate::dataset::TableDef;
use crate::engine::{Engine, EngineError};
use crate::progress::Progress;
use crate::results::StepSummary;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// What a step works with.
#[derive(Clone, Copy)]
pub struct StepCtx<'a> {
    pub contender: &'a str,
    pub step: &'a str,
    /// The study's title for this step, if it gave one.
    pub title: Option<&'a str>,
    pub engine: &'a dyn Engine,
    /// The dataset's tables (one for user_logs, N for sbtest).
    pub tables: &'a [TableDef],
    /// Each table's generated tab-separated file, in the same order.
    pub dataset_files: &'a [PathBuf],
    /// Rows per table (for `tpcc`, the warehouses; each table's own count is its `rows`).
    pub dataset_rows: u64,
    /// The dataset's seed: steps that rebuild rows (to look them up, or to insert more of
    /// them) need it.
    pub dataset_seed: u64,
    /// The block device holding the data directories (e.g. `/dev/vda1`), when known.
    pub data_device: Option<&'a str>,
    pub progress: &'a Progress,
    pub stop: &'a AtomicBool,
    /// In a sharded run, the step's team: its runs start only this shard's clients, when
    /// every shard is ready (see [`divides_clients`]).
    pub team: Option<&'a crate::shard::Team>,
    /// Where each second's record goes as soon as it is made (`<step>.intervals.ndjson`):
    /// a client step appends each of its records as it is made, and counts them in
    /// [`StepOutput::seconds`].
    pub seconds: &'a crate::results::SecondsLog,
    /// Where a step that changes a topology writes the originals before changing it
    /// (`replication-originals.json` in the run directory); none outside a run.
    pub originals: Option<&'a std::path::Path>,
    /// The same step's result files (`<step>.json`) of the contenders that ran it before this
    /// one in the run, in the study's order: (contender, path). A step that compares its
    /// answers with theirs (`tpch-power`) reads them; empty outside a run.
    pub earlier: &'a [(String, PathBuf)],
    /// This contender's result files (`<step>.json`) of the steps before this one in this
    /// pass, in the study's order: (step, path). A step that combines its figures with an
    /// earlier step's (`tpch-throughput`'s QphH@Size) reads them; empty outside a run.
    pub before: &'a [(String, PathBuf)],
    /// The step's system sampler, told the server's new processes after a restart; none
    /// outside a run.
    pub sampler: Option<&'a crate::sysmon::Sampler>,
}

/// What a step produced.
pub struct StepOutput {
    /// Figures for `summary.json`; name, kind and status are filled in by the caller.
    pub summary: StepSummary,
    /// Everything else worth keeping, written to `<step>.json`.
    pub details: serde_json::Value,
    /// How many per-second records its clients wrote to [`StepCtx::seconds`] (0: no
    /// client ran). The records themselves are not kept: a step that needs a second's
    /// figures takes them as the second closes.
    pub seconds: u64,
    /// The step ended early because of the stop flag.
    pub interrupted: bool,
}

/// A step that could not produce its result.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Run(#[from] crate::runner::RunError),
    /// The step ran but its result is wrong (e.g. rows loaded ≠ rows generated).
    #[error("{0}")]
    Check(String),
    /// The step cannot run on this contender (e.g. a restart on an external server with no
    /// restart_command); the reason goes into the report. Later steps still run.
    #[error("{0}")]
    Skipped(String),
    /// The step ran to the end and its figures stand, but its result is wrong (a TPC-C
    /// consistency condition broken): the figures are kept, and the step fails.
    #[error("{0}")]
    Failed(String, Kept),
}

/// A failed step's output, kept for the results.
pub struct Kept(pub Box<StepOutput>);

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kept(..)")
    }
}

impl StepCtx<'_> {
    /// The first (for single-table datasets: the) table.
    pub fn table(&self) -> &TableDef {
        &self.tables[0]
    }

    /// What only one shard may do (DDL alongside the load, say): all of it on shard 0 or
    /// unsharded, nothing on the others.
    pub fn own<'t, T>(&self, work: &'t [T]) -> &'t [T] {
        match self.team {
            Some(t) if !t.shard.leads() => &[],
            _ => work,
        }
    }

    /// The step's title: the study's, or the kind's default.
    pub fn title(&self, default: &str) -> String {
        self.title.unwrap_or(default).to_string()
    }
}

/// A summary with figures to be filled in by a step.
pub fn summary(title: impl Into<String>) -> StepSummary {
    let mut s = StepSummary::without_figures("", "", crate::results::Status::Ok, "");
    s.title = title.into();
    s.note = None;
    s
}
