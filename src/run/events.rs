//! What a run says while it runs: the events the executor emits, in order, and the consumers
//! that act on them (the journal writes the run directory, the status lines print progress).

use super::ExecError;
use super::plan::{Pass, Share};
use crate::results::{ContenderFacts, DatasetFacts, Host, StepSummary};
use crate::study::Step;
use crate::study::model::DatasetSpec;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

/// One thing that happened in a run.
pub enum RunEvent<'a> {
    /// The run directory exists; nothing has run yet.
    RunStarted {
        dir: &'a Path,
        host: &'a Host,
        started: SystemTime,
    },
    /// The dataset is being generated.
    DatasetStarted { spec: &'a DatasetSpec },
    /// The dataset's files are written.
    DatasetWritten {
        facts: &'a DatasetFacts,
        /// Rows in all its tables.
        all_rows: u64,
    },
    /// The run has several rounds: each round's contenders, in the order they run.
    RoundsPlanned { orders: &'a [Vec<String>] },
    /// A contender's engine is being opened for a pass.
    ContenderOpening {
        pass: &'a Pass,
        engine: &'static str,
    },
    /// Its engine answers; what it runs.
    ContenderOpened {
        pass: &'a Pass,
        facts: &'a ContenderFacts,
    },
    /// The pass cannot run its steps (the engine did not start, the shards cannot meet);
    /// each step's record follows as [`RunEvent::StepRecorded`].
    ContenderBlocked { pass: &'a Pass, why: &'a str },
    /// A sharded run waits for the other shards at `point`.
    ShardsWaiting { point: &'a str },
    /// The shards met at `point`; `share` says who runs the step.
    ShardsMet {
        point: &'a str,
        share: Share,
        count: u32,
    },
    /// The shards did not meet at `point`.
    ShardsFailed { point: &'a str, error: &'a str },
    /// A step starts running here.
    StepStarted { pass: &'a Pass, step: &'a Step },
    /// A step that did not run here, recorded as such; published with the pass's end.
    StepRecorded {
        pass: &'a Pass,
        summary: &'a StepSummary,
    },
    /// A step's record is final: it ran here (`files`: what it measured), or the shards
    /// decided about it.
    StepFinished {
        pass: &'a Pass,
        step: &'a Step,
        summary: &'a StepSummary,
        files: Option<&'a StepFiles>,
    },
    /// How this shard's clock and start compared to shard 0's, after a step of `pass`.
    ShardClock {
        pass: &'a Pass,
        clock_offset_ms: Option<f64>,
        late_start_ms: f64,
    },
    /// The pass is over: its engine stopped (`stop_error`: how stopping it failed).
    ContenderClosed {
        pass: &'a Pass,
        stop_error: Option<String>,
    },
    /// Every pass of round `round` ran.
    RoundDone { round: usize },
    /// `--repeat auto` or `--budget` decided the run's last round: what stopped it, and the
    /// rounds each judged figure needed.
    RoundsDecided {
        facts: &'a crate::results::AutoRoundsFacts,
    },
    /// The run is over: `rounds_run` rounds began, `interrupted` when it was stopped.
    RunFinished {
        rounds_run: usize,
        interrupted: bool,
    },
}

/// What a step that ran measured besides its summary: the contents of its files (its
/// per-second records are written as they are made, through [`super::journal::seconds_log`]).
pub struct StepFiles {
    /// The machine's samples (`<step>.system.ndjson`).
    pub samples: Vec<crate::sysmon::SystemSample>,
    /// The step's own details (`<step>.json`).
    pub details: serde_json::Value,
    /// The server's counters over the step.
    pub server_counters: Option<BTreeMap<String, u64>>,
    /// Why the step failed, as shown (`contender · step: why`).
    pub error: Option<String>,
}

/// Something that acts on a run's events. An error stops the run.
pub trait RunConsumer {
    fn event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError>;
}

/// The consumers of one run, each told every event in turn.
pub struct Sinks<'s>(pub Vec<&'s mut dyn RunConsumer>);

impl Sinks<'_> {
    /// Tell every consumer, in order; the first error stops.
    pub fn emit(&mut self, event: RunEvent<'_>) -> Result<(), ExecError> {
        self.0.iter_mut().try_for_each(|c| c.event(&event))
    }
}
