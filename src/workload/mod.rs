//! Step kinds: each decodes its own parameters and runs against an `Engine`, producing a
//! summary with its own metrics. One file per kind, registered in the kinds table here; this
//! module only dispatches.

pub mod checksums;
pub mod cluster;
pub mod count;
pub mod ddl;
pub mod flight;
pub mod footprint;
pub mod hot_ddl;
pub mod kind;
pub mod load;
pub mod lookups;
pub mod oltp;
pub mod pacing;
pub mod queries;
pub mod replication;
pub mod script;
pub mod slo;
pub mod sql_file;
pub mod sql_lex;
pub mod sql_reach;
pub mod sql_text;
pub mod sweep;
pub mod tiers;
pub mod tpcc;
pub mod tpch;
pub mod update;
pub mod user_files;

use crate::dataset::TableDef;
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{Engine, EngineError, RestartOutcome};
use crate::progress::Progress;
use crate::results::StepSummary;
pub use kind::StepKind;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Declares the step kinds: each line maps the names studies use (`kind = "..."`) to the
/// `StepParams` variant and the parameter type (a [`StepKind`]) that decodes and runs it. From
/// it come [`STEP_KINDS`], [`StepParams`] (an enum, so matches on it stay exhaustive), the
/// decoding by name, [`divides_clients`], and the dispatch of every [`StepKind`] question.
macro_rules! kinds {
    ($( $($name:literal)|+ => $variant:ident($ty:ty), )+) => {
        /// Step kinds this build can run.
        pub const STEP_KINDS: &[&str] = &[$($($name,)+)+];

        /// A step's parameters, decoded for its kind.
        #[derive(Debug, Clone)]
        pub enum StepParams {
            $($variant($ty),)+
        }

        impl StepParams {
            /// The kind's own answers (see [`StepKind`]).
            pub fn kind(&self) -> &dyn StepKind {
                match self {
                    $(StepParams::$variant(p) => p,)+
                }
            }

            /// Decode a step of `kind`, or `None` for a name that is no kind.
            fn decode_kind(
                kind: &str,
                v: toml::Value,
            ) -> Option<Result<Self, DecodeError>> {
                match kind {
                    $($($name)|+ => Some(
                        <$ty as StepKind>::decode(kind, v).map(StepParams::$variant),
                    ),)+
                    _ => None,
                }
            }
        }

        /// Is a step of this kind divided among clients (see [`StepKind::divides_clients`])?
        pub fn divides_clients(kind: &str) -> bool {
            match kind {
                $($($name)|+ => <$ty as StepKind>::divides_clients(),)+
                _ => false,
            }
        }
    };
}

kinds! {
    "load" => Load(load::LoadParams),
    "footprint" => Footprint(footprint::FootprintParams),
    "count" => Count(count::CountParams),
    "queries" => Queries(queries::QueriesParams),
    "update" => Update(update::UpdateParams),
    "ddl" => Ddl(ddl::DdlParams),
    "oltp" => Oltp(oltp::OltpParams),
    "lookups" => Lookups(lookups::LookupsParams),
    "insert-trickle" => Trickle(tiers::TrickleParams),
    "select-triple" => Triple(tiers::TripleParams),
    "catch-up" | "commit-wait" | "replica-lag" => Replication(replication::ReplicationParams),
    "tpcc" => Tpcc(tpcc::TpccParams),
    "tpcc-check" => TpccCheck(tpcc::check::CheckParams),
    "checksums" => Checksums(checksums::ChecksumsParams),
    "script" => Script(script::ScriptParams),
    "sql" => Sql(sql_file::SqlParams),
    "tpch-power" => TpchPower(tpch::PowerParams),
    "tpch-throughput" => TpchThroughput(tpch::throughput::ThroughputParams),
}

impl StepParams {
    /// Is the step's work SQL statements (so a document engine cannot run it)?
    pub fn is_sql(&self) -> bool {
        self.kind().is_sql()
    }

    /// Decode the parameters of a step of `kind`. Paths in errors are relative to the step.
    pub fn decode(kind: &str, params: &toml::Table) -> Result<Self, DecodeError> {
        let v = toml::Value::Table(params.clone());
        let Some(p) = Self::decode_kind(kind, v) else {
            return Err(DecodeError::at(
                KeyPath::root().key("kind"),
                format!(
                    "unknown step kind `{kind}`; kinds are: {}",
                    STEP_KINDS.join(", ")
                ),
            ));
        };
        let p = p?;
        p.kind().validate()?;
        Ok(p)
    }

    /// Does the step restart the server (a cold count, a cold start before a sweep)? The key
    /// that asks for it.
    pub fn restarts(&self) -> Option<&'static str> {
        self.kind().restarts()
    }

    /// Clients this step opens at once (for sizing servers' connection limits).
    pub fn clients(&self) -> u64 {
        self.kind().clients()
    }
}

/// What a step works with.
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

/// Run one step.
pub fn run(params: &StepParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    if params.is_sql() && ctx.engine.documents().is_some() {
        return Err(StepError::Skipped(format!(
            "{} speaks no SQL, and this step's work is SQL statements",
            ctx.engine.kind()
        )));
    }
    params.kind().run(ctx)
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

/// An engine with its device profile turned off for a while (a load, or a step whose figure
/// is bytes, not speed). [`finish`] turns it back on, and fails the step if it cannot (later
/// figures would be unthrottled); dropping it — when the step failed — tries the same.
///
/// [`finish`]: Unthrottled::finish
pub struct Unthrottled<'a>(&'a dyn Engine);

impl<'a> Unthrottled<'a> {
    /// Turn the profile off; `None` when the engine has none.
    pub fn begin(engine: &'a dyn Engine) -> Result<Option<Self>, EngineError> {
        Ok(engine.set_throttle(false)?.then_some(Unthrottled(engine)))
    }

    pub fn finish(self) -> Result<(), EngineError> {
        let r = self.0.set_throttle(true).map(drop);
        std::mem::forget(self);
        r
    }
}

impl Drop for Unthrottled<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.set_throttle(true) {
            // The step failed already; later steps would run unthrottled: say so.
            crate::errln!("warning: the device profile could not be turned back on: {e}");
        }
    }
}

/// A summary with figures to be filled in by a step.
pub fn summary(title: impl Into<String>) -> StepSummary {
    let mut s = StepSummary::without_figures("", "", crate::results::Status::Ok, "");
    s.title = title.into();
    s.note = None;
    s
}

/// Restart the engine and drop its files from the OS page cache (the `count` step's cold
/// start, and a sweep's `cold_start`). An engine that cannot restart (an external server
/// without a restart command) answers `Unsupported`, with the reason, for the caller to
/// skip or to note.
pub fn cold_restart(ctx: &StepCtx<'_>) -> Result<RestartOutcome, ColdRestart> {
    let restarted = ctx.engine.restart(true);
    if let Some(sampler) = ctx.sampler.filter(|_| !ctx.engine.embedded()) {
        // the server runs under new pids now, and its work is still the engine's
        sampler.retarget(ctx.engine.server_pids());
    }
    match restarted {
        Ok(r) => Ok(r),
        Err(e) if e.kind == "unsupported" => Err(ColdRestart::Unsupported(e.message)),
        Err(e) => Err(ColdRestart::Failed(e)),
    }
}

/// Why a cold restart did not happen.
pub enum ColdRestart {
    /// The engine cannot restart here; the reason.
    Unsupported(String),
    Failed(EngineError),
}

/// How a step that sweeps levels began when asked for a `cold_start`.
pub enum SweepStart {
    Restarted(RestartOutcome),
    /// The engine could not restart; why.
    Warm(String),
}

impl SweepStart {
    /// Restart the engine cold before a sweep's first level, if `cold`; an engine that cannot
    /// restart runs warm, and the reason is kept.
    pub fn begin(cold: bool, ctx: &StepCtx<'_>) -> Result<Option<SweepStart>, StepError> {
        if !cold {
            return Ok(None);
        }
        ctx.progress.status("restarting the engine cold");
        match cold_restart(ctx) {
            Ok(r) => Ok(Some(SweepStart::Restarted(r))),
            Err(ColdRestart::Unsupported(why)) => Ok(Some(SweepStart::Warm(why))),
            Err(ColdRestart::Failed(e)) => Err(e.into()),
        }
    }

    /// The step's note on it (`what`: "sweep", "step").
    pub fn note(&self, what: &str) -> String {
        match self {
            SweepStart::Restarted(r) => format!("before the first level: {}", restart_note(r)),
            SweepStart::Warm(why) => format!(
                "cold_start asked for, but the engine could not restart, so the {what} started warm: {why}"
            ),
        }
    }

    /// For the step's JSON.
    pub fn details(&self) -> serde_json::Value {
        match self {
            SweepStart::Restarted(r) => serde_json::json!({ "restart": r }),
            SweepStart::Warm(why) => serde_json::json!({ "not_restarted": why }),
        }
    }
}

/// How a restart left the cache, in a note's words.
pub fn restart_note(r: &RestartOutcome) -> String {
    if r.cold {
        format!("cold: restarted; {}", r.cache)
    } else {
        format!("warm-restart: {}", r.cache)
    }
}

/// Time one statement on a fresh session: (seconds, rows affected).
pub fn timed_execute(engine: &dyn Engine, sql: &str) -> Result<(f64, u64), EngineError> {
    let mut session = engine.connect()?;
    let t = std::time::Instant::now();
    let rows = session.execute(sql)?;
    Ok((t.elapsed().as_secs_f64(), rows))
}

/// A step kind's parameters decoded from TOML text as a study's step would be, for tests.
#[cfg(test)]
pub(crate) fn params_of<P>(text: &str) -> Result<P, DecodeError>
where
    P: StepKind + serde::de::DeserializeOwned,
{
    P::decode("", toml::from_str::<toml::Value>(text).expect("TOML"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_kind_decodes_by_its_name() {
        for kind in STEP_KINDS {
            let none = toml::Table::new();
            if let Err(e) = StepParams::decode(kind, &none) {
                assert!(!e.message.contains("unknown step kind"), "{kind}: {e:?}");
            }
        }
        let e = StepParams::decode("sleep", &toml::Table::new()).expect_err("no such kind");
        assert!(
            e.message
                .starts_with("unknown step kind `sleep`; kinds are: load, ")
        );
    }

    #[test]
    fn the_client_steps_are_the_divided_ones() {
        let divided: Vec<&str> = STEP_KINDS
            .iter()
            .copied()
            .filter(|k| divides_clients(k))
            .collect();
        assert_eq!(divided, ["queries", "oltp", "lookups", "tpcc", "script"]);
        assert!(!divides_clients("no-such-kind"));
    }
}
