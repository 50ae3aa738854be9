//! The shard gate: the layer between the executor and a sharded run's steps. Before every
//! step the shards meet in the contender's database and the plan's share says who runs it;
//! a step shard 0 runs alone is beaten on so the others keep waiting; after it, this shard's
//! clock is reported and the others are told at once when this one cannot go on. An
//! unsharded run's gate lets every step through and does nothing else.

use super::ExecError;
use super::Sharding;
use super::events::{RunEvent, Sinks};
use super::plan::{Pass, Share};
use crate::engine::Engine;
use crate::results::{Status, StepSummary};
use crate::shard::{Barrier, Team};
use crate::study::Step;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One pass's gate: the meeting table of its contender's database, when sharded.
pub struct Gate {
    barrier: Option<Arc<Barrier>>,
}

/// What the gate decided about a step.
pub enum Admit {
    /// Run it here: as this shard's part of the team when its clients are divided, else
    /// alone (unsharded, or shard 0's own step).
    Run(Option<Team>),
    /// Not here: another shard runs it (shard 0, a step not divided among clients; skipped),
    /// or the shards could not meet (failed, the other shards told). Its record.
    Recorded(Box<StepSummary>),
}

impl Gate {
    /// The gate of a pass whose files go to `rel_dir`; a sharded run meets the other shards
    /// in this contender's database. Err: why the shards cannot meet.
    pub fn open(
        sharding: Option<&Sharding>,
        engine: &dyn Engine,
        rel_dir: &str,
    ) -> Result<Gate, String> {
        let barrier = match sharding {
            None => None,
            Some(sh) => Some(Arc::new(
                Barrier::open(engine, sh.shard, &sh.group, rel_dir, sh.timeout)
                    .map_err(|e| format!("the shards cannot meet: {e}"))?,
            )),
        };
        Ok(Gate { barrier })
    }

    /// The run stops before a step: the other shards are told.
    pub fn interrupted(&self) {
        if let Some(b) = &self.barrier {
            b.abandon("interrupted");
        }
    }

    /// Meet the other shards before `step` (`share`: who runs it, from the plan).
    pub fn before(
        &self,
        pass: &Pass,
        step: &Step,
        share: Share,
        stop: &AtomicBool,
        sinks: &mut Sinks,
    ) -> Result<Admit, ExecError> {
        let Some(b) = &self.barrier else {
            return Ok(Admit::Run(None));
        };
        let point = format!("{}/{}", pass.rel_dir, step.name);
        let record = |status, note: String| {
            Admit::Recorded(Box::new(StepSummary::without_figures(
                &step.name, &step.kind, status, note,
            )))
        };
        sinks.emit(RunEvent::ShardsWaiting { point: &point })?;
        if let Err(e) = b.meet(&point, stop) {
            let error = e.to_string();
            sinks.emit(RunEvent::ShardsFailed {
                point: &point,
                error: &error,
            })?;
            b.abandon(&format!("{point}: {e}"));
            let status = match e {
                crate::shard::BarrierError::Interrupted => Status::Interrupted,
                _ => Status::Failed,
            };
            return Ok(record(status, error));
        }
        let shard = b.shard();
        sinks.emit(RunEvent::ShardsMet {
            point: &point,
            share,
            count: shard.count,
        })?;
        Ok(match share {
            Share::Divided => Admit::Run(Some(Team::new(shard, b.clone(), point))),
            Share::Alone | Share::Whole => Admit::Run(None),
            Share::Elsewhere => record(
                Status::Skipped,
                "run by shard 0 alone: its work is not divided among clients".into(),
            ),
        })
    }

    /// Run an admitted step's `work`. Shard 0 running a step alone (no team) says it is busy,
    /// so the others wait for it.
    pub fn during<T>(&self, team: Option<&Team>, work: impl FnOnce() -> T) -> T {
        let alone = self.barrier.as_deref().filter(|_| team.is_none());
        beating(alone, work)
    }

    /// After a step of `pass` ran here with `status`: this shard's clock, and the other
    /// shards told at once when this one cannot go on.
    pub fn after(
        &self,
        pass: &Pass,
        step: &Step,
        status: Status,
        stop: &AtomicBool,
        sinks: &mut Sinks,
    ) -> Result<(), ExecError> {
        let Some(b) = &self.barrier else {
            return Ok(());
        };
        sinks.emit(RunEvent::ShardClock {
            pass,
            clock_offset_ms: b.clock_offset_ms(),
            late_start_ms: b.late_start_ms(),
        })?;
        if matches!(status, Status::Failed | Status::Interrupted) || stop.load(Ordering::Relaxed) {
            b.abandon(&format!("step `{}`: {}", step.name, status.as_str()));
        }
        Ok(())
    }
}

/// Run `work`, saying every [`BEAT`](crate::shard::barrier::BEAT) at `barrier` (when there
/// is one) that this shard is busy with it.
fn beating<T>(barrier: Option<&Barrier>, work: impl FnOnce() -> T) -> T {
    let Some(b) = barrier else {
        return work();
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Raised however `work` ends, a panic included: the beating stops.
        let _done = crate::stop::RaiseOnDrop(&done);
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                // A beat that fails costs the others only their patience: the timeout.
                let _ = b.beat();
                let next = Instant::now() + crate::shard::barrier::BEAT;
                while !done.load(Ordering::Relaxed) && Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
        let out = work();
        done.store(true, Ordering::Relaxed);
        out
    })
}
