//! One step on an opened engine: the system sampler beside it, a watcher for the server's
//! death and the stop flag, and the step's record made from what it measured. Writes
//! nothing: the record goes to the journal as an event.

use super::events::StepFiles;
use crate::engine::Engine;
use crate::results::{Better, Host, Metric, Status, StepSummary, Unit};
use crate::study::Step;
use crate::sysmon;
use crate::workload::{self, StepCtx, StepError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What a step runs with: its context as the workload sees it (the run's stop flag in it, no
/// sampler yet: `measure` gives the step a stop of its own and its sampler), and what the
/// record of it needs besides.
pub struct StepEnv<'a> {
    /// The step's context, built once by the executor.
    pub ctx: StepCtx<'a>,
    pub step: &'a Step,
    /// The machine (its cores and memory, against which dbduel's own use is judged).
    pub host: &'a Host,
    /// Where the sampler appends each second's sample as it is taken (None: nowhere).
    pub system_log: Option<PathBuf>,
}

/// What a step left behind before its record is made.
struct Measured {
    result: Result<workload::StepOutput, StepError>,
    samples: Vec<sysmon::SystemSample>,
    own: sysmon::own::OwnUse,
    server_counters: Option<BTreeMap<String, u64>>,
}

/// Run one step with the sampler beside it: its summary and the contents of its files. A
/// panic inside the step fails the step (its helper threads stop on their guards), and the
/// run goes on to stop its servers and keep what earlier steps measured.
pub fn run_step(env: &StepEnv) -> (StepSummary, StepFiles) {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| measured_step(env)))
        .unwrap_or_else(|payload| panicked(env, payload.as_ref()))
}

/// The record of a step that panicked: failed, with the panic's message.
fn panicked(env: &StepEnv, payload: &(dyn std::any::Any + Send)) -> (StepSummary, StepFiles) {
    let what = crate::runner::panic_message(payload);
    let why = format!("dbduel panicked during the step ({what}); this is a bug in dbduel");
    let summary = StepSummary::without_figures(
        &env.step.name,
        &env.step.kind,
        Status::Failed,
        format!("FAILED: {why}"),
    );
    let files = StepFiles {
        samples: Vec::new(),
        details: serde_json::Value::Null,
        server_counters: None,
        error: Some(format!("{} · {}: {why}", env.ctx.contender, env.step.name)),
    };
    (summary, files)
}

/// [`run_step`] without its guard against a panic.
fn measured_step(env: &StepEnv) -> (StepSummary, StepFiles) {
    let m = measure(env);
    // A step whose result is wrong but whose figures stand keeps them, and fails.
    let (summary, details, error) = match m.result {
        Err(StepError::Failed(why, workload::Kept(out))) => {
            figures(env, *out, Some(why), &m.samples, m.own)
        }
        Ok(out) => figures(env, out, None, &m.samples, m.own),
        Err(e) => failure(env, e),
    };
    let files = StepFiles {
        samples: m.samples,
        details,
        server_counters: m.server_counters,
        error,
    };
    (summary, files)
}

/// Run the step's workload, sampled and watched; its server's counters over it.
fn measure(env: &StepEnv) -> Measured {
    let engine = env.ctx.engine;
    let start = Instant::now();
    let system_log = env.system_log.clone().map_or_else(
        crate::results::SecondsLog::discard,
        crate::results::SecondsLog::new,
    );
    let sampler = sysmon::Sampler::start_with(
        start,
        sysmon::Targets {
            // An embedded engine works inside dbduel, so its process is ours; an external
            // server's process is not visible from here.
            engine_pids: if engine.embedded() {
                vec![std::process::id() as i32]
            } else {
                engine.server_pids()
            },
            self_pid: std::process::id() as i32,
        },
        // The file is rewritten whole with the step's record; this is for watchers meanwhile.
        move |s| system_log.append(s),
    );
    // The step stops on Ctrl-C and when its server dies; a watcher notices the latter
    // within a fraction of a second, whatever the step is doing.
    let step_stop = AtomicBool::new(false);
    let ctx = StepCtx {
        stop: &step_stop,
        sampler: Some(&sampler),
        ..env.ctx
    };
    let counters_before = engine.counters().ok().flatten();
    let pid_before = engine.server_pid();
    let own = sysmon::own::OwnMeter::begin();
    let (result, server_died) = watched(engine, env.ctx.stop, &step_stop, start, || {
        injected_panic(&env.step.name);
        workload::run(&env.step.params, &ctx)
    });
    let samples = sampler.stop();
    let own = own.end(
        samples
            .iter()
            .map(|s| s.dbduel.rss_bytes)
            .max()
            .unwrap_or(0),
    );
    // A server restarted inside the step (a cold count, a sweep's cold start) counts from
    // zero again, unless it keeps its counters: then afterwards they are what the step did
    // since it started.
    let restarted = pid_before.is_some()
        && engine.server_pid() != pid_before
        && !engine.counters_survive_restart();
    let server_counters = match (counters_before, engine.counters().ok().flatten()) {
        (Some(_), Some(after)) if restarted => Some(after),
        (Some(before), Some(after)) => Some(counter_delta(&before, &after)),
        _ => None,
    };
    let result = match (result, server_died) {
        (r, None) => r,
        (_, Some(death)) => Err(StepError::Check(death)),
    };
    Measured {
        result,
        samples,
        own,
        server_counters,
    }
}

/// The record of a step that produced its figures (`wrong`: why its result is wrong anyway):
/// its summary, details and error (its per-second records are on disk already).
fn figures(
    env: &StepEnv,
    out: workload::StepOutput,
    wrong: Option<String>,
    samples: &[sysmon::SystemSample],
    own: sysmon::own::OwnUse,
) -> (StepSummary, serde_json::Value, Option<String>) {
    let (engine, host, step) = (env.ctx.engine, env.host, env.step);
    let mut s = out.summary;
    s.name = step.name.clone();
    s.kind = step.kind.clone();
    s.status = if wrong.is_some() {
        Status::Failed
    } else if out.interrupted {
        Status::Interrupted
    } else {
        Status::Ok
    };
    if out.seconds > 0 {
        s.metrics.push(Metric::new(
            "dbduel_peak_rss_bytes",
            "dbduel peak RSS",
            own.peak_rss_bytes as f64,
            Unit::Bytes,
            Better::None,
        ));
    }
    s.machine = machine_share(engine, samples, host.cores);
    let disturbed = s.machine.iter().flat_map(|m| m.disturbances()).map(|w| {
        format!("warning: {w}; the step's figures are disturbed and compare will not judge them")
    });
    let warnings = [
        client_cpu_warning(engine, samples, host.cores),
        client_memory_warning(engine, own.peak_rss_bytes, host.mem_total_bytes),
    ];
    for w in warnings.into_iter().flatten().chain(disturbed) {
        s.note = Some(match s.note.take() {
            Some(n) => format!("{n}; {w}"),
            None => w,
        });
    }
    s.dbduel = Some(own);
    if let Some(why) = &wrong {
        s.note = Some(match s.note.take() {
            Some(n) => format!("FAILED: {why}; {n}"),
            None => format!("FAILED: {why}"),
        });
    }
    let error = wrong.map(|why| format!("{} · {}: {why}", env.ctx.contender, step.name));
    (s, out.details, error)
}

/// The record of a step that produced no figures: skipped, interrupted or failed (with the
/// server log's tail).
fn failure(env: &StepEnv, e: StepError) -> (StepSummary, serde_json::Value, Option<String>) {
    let step = env.step;
    let record =
        |status, note: String| StepSummary::without_figures(&step.name, &step.kind, status, note);
    match e {
        StepError::Skipped(reason) => (
            record(Status::Skipped, format!("skipped: {reason}")),
            serde_json::Value::Null,
            None,
        ),
        // Ctrl-C while the clients connected or waited for the other shards.
        e @ StepError::Run(
            crate::runner::RunError::Interrupted
            | crate::runner::RunError::Shards(crate::shard::BarrierError::Interrupted),
        ) => (
            record(Status::Interrupted, e.to_string()),
            serde_json::Value::Null,
            None,
        ),
        // A step's work ended by a stop (a load's stream cut, a restart command killed)
        // fails with the stop's error: interrupted, not failed.
        e if env.ctx.stop.load(Ordering::Relaxed) => (
            record(Status::Interrupted, format!("interrupted: {e}")),
            serde_json::Value::Null,
            None,
        ),
        e => {
            let msg = format!("{} · {}: {e}", env.ctx.contender, step.name);
            // The server's own account of what went wrong.
            let log = env
                .ctx
                .engine
                .server_log()
                .map(|p| crate::sandbox::tail(&p, 30));
            (
                record(Status::Failed, e.to_string()),
                serde_json::json!({ "server_log_tail": log }),
                Some(msg),
            )
        }
    }
}

/// Per-counter change over a step. A counter that went down was reset by a restart inside
/// the step that the server's pid did not show (an external server's restart command); its
/// value after the restart is what the step did since.
fn counter_delta(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, a)| {
            let b = before.get(k).copied().unwrap_or(0);
            (k.clone(), if *a >= b { a - b } else { *a })
        })
        .collect()
}

/// A warning when dbduel itself used more than half of the machine's CPU during a step
/// against a server: the client then competed with the server and may have capped the
/// figures. (An embedded engine runs inside dbduel, so there it is expected.)
fn client_cpu_warning(
    engine: &dyn Engine,
    samples: &[sysmon::SystemSample],
    cores: usize,
) -> Option<String> {
    engine.server_pid()?;
    if samples.is_empty() || cores == 0 {
        return None;
    }
    let mean = samples.iter().map(|s| s.dbduel.cpu_pct).sum::<f64>() / samples.len() as f64;
    let share = mean / (cores as f64 * 100.0);
    (share > 0.5).then(|| {
        format!(
            "warning: dbduel itself used {:.0}% of the machine's CPU during this step; the client may have limited these figures",
            share * 100.0
        )
    })
}

/// What the rest of the machine did during a step. Not for a replication topology: its
/// replicas are servers of the contender outside the primary's process tree, and would count
/// as others.
fn machine_share(
    engine: &dyn Engine,
    samples: &[sysmon::SystemSample],
    cores: usize,
) -> Option<sysmon::machine::MachineShare> {
    if engine.replication().is_some() {
        return None;
    }
    sysmon::machine::MachineShare::of(samples, cores, engine.embedded())
}

/// Share of the machine's memory above which dbduel's own peak RSS is called out.
const CLIENT_MEMORY_WARN_SHARE: f64 = 0.05;

/// A warning when dbduel itself held a significant share of the machine's memory during a
/// step against a server: on a shared host that is page cache the server did not have.
/// (An embedded engine's caches live inside dbduel, so there it is expected.)
fn client_memory_warning(engine: &dyn Engine, peak_rss: u64, mem_total: u64) -> Option<String> {
    engine.server_pid()?;
    let share = peak_rss as f64 / mem_total.max(1) as f64;
    (mem_total > 0 && share > CLIENT_MEMORY_WARN_SHARE).then(|| {
        format!(
            "warning: dbduel itself held {} ({:.0}% of the machine's memory) during this step; on a shared host that memory was not the server's",
            crate::results::format::bytes(peak_rss),
            share * 100.0
        )
    })
}

/// How often the watcher looks at the server and the stop flag.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Run `f` while a watcher thread mirrors the run's stop flag into the step's and checks
/// that the engine's server is alive. Returns `f`'s result and, if the server died, what
/// happened and when it was noticed.
fn watched<T: Send>(
    engine: &dyn Engine,
    run_stop: &AtomicBool,
    step_stop: &AtomicBool,
    start: Instant,
    f: impl FnOnce() -> T + Send,
) -> (T, Option<String>) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        // Raised however `f` ends, a panic included: the watcher never waits forever.
        let _done = crate::stop::RaiseOnDrop(&done);
        let watcher = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if run_stop.load(Ordering::Relaxed) {
                    step_stop.store(true, Ordering::Relaxed);
                }
                if let Some(how) = engine.server_gone() {
                    step_stop.store(true, Ordering::Relaxed);
                    return Some(format!(
                        "the server died during the step ({how}; noticed {:.1} s into the step)",
                        start.elapsed().as_secs_f64()
                    ));
                }
                std::thread::sleep(WATCH_EVERY);
            }
            None
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        let died = watcher.join().unwrap_or(None);
        (out, died)
    })
}

/// The environment variable that makes the step it names panic, for the tests of what a
/// panic in a step does (tests/faults.rs). Read only by debug builds — the ones tests run —
/// so a release build has no way to be made to panic.
pub const PANIC_IN_STEP_ENV: &str = "DBDUEL_TEST_PANIC_IN_STEP";

/// Panic here when [`PANIC_IN_STEP_ENV`] names `step` (debug builds only).
fn injected_panic(step: &str) {
    if cfg!(debug_assertions) && std::env::var(PANIC_IN_STEP_ENV).is_ok_and(|v| v == step) {
        panic!("{PANIC_IN_STEP_ENV} asked step `{step}` to panic");
    }
}
