//! What steps do to their engine around their work: a cold restart (the `count` step's, a
//! sweep's `cold_start`), a device profile turned off for a while, one statement timed.

use super::ctx::{StepCtx, StepError};
use crate::engine::{Engine, EngineError, RestartOutcome};

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
