//! Schema changes on busy tables: at chosen seconds of a workload's level (`ddl = [...]` on a
//! `tpcc` or `oltp` step) a separate session adds, drops or renames a column, or creates or
//! drops an index — the seed's Hot Column Add/Drop/Rename and hot indexing. Each change is
//! timed with the algorithm MariaDB accepted, and the workload's throughput, worst
//! per-second p99 and errors are taken from its own seconds before, during and after it.
//!
//! A change waits at most [`LOCK_WAIT_S`] for its table's lock, then gives way and asks
//! again, as pt-online-schema-change and gh-ost do: a change queued for the lock holds up
//! every new transaction on the table, and on MariaDB a transaction that holds the table's
//! metadata lock while it waits for a row lock of one queued behind the change is a deadlock
//! no detector sees (it lasts `innodb_lock_wait_timeout`, 50 s by default).

use super::ctx::{StepError, StepOutput};
use super::ddl::{self, DdlAction, DdlParams};
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::Engine;
use crate::results::IntervalRecord;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Seconds of the workload before a change (and after it) that its effect is measured over.
pub const WINDOW_S: f64 = 5.0;

/// Seconds a change waits for its table's lock before it gives way and asks again.
pub const LOCK_WAIT_S: u64 = 2;

/// What a server change's session does between two attempts: the transactions it held up go
/// first.
const GIVE_WAY: Duration = Duration::from_millis(100);

/// One change, as a study writes it: `{ at_s = 10, table = "customer", action =
/// "rename_column", column = "c_middle", to = "c_initials" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotChange {
    /// Seconds into the level (its clock, once every client connected).
    pub at_s: u64,
    pub table: String,
    #[serde(deserialize_with = "by_name")]
    pub action: DdlAction,
    #[serde(default)]
    pub index: Option<String>,
    #[serde(default)]
    pub columns: Vec<String>,
    #[serde(default)]
    pub column: Option<String>,
    #[serde(default)]
    pub column_type: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
}

impl HotChange {
    fn ddl(&self) -> DdlParams {
        DdlParams {
            action: self.action,
            index: self.index.clone(),
            columns: self.columns.clone(),
            column: self.column.clone(),
            column_type: self.column_type.clone(),
            to: self.to.clone(),
            algorithm: None,
        }
    }
}

/// Check a step's changes: each inside the level, on a plain table name, well formed; a step
/// with changes runs one level (paths relative to the step).
pub fn validate(changes: &[HotChange], levels: usize, duration_s: u64) -> Result<(), DecodeError> {
    if changes.is_empty() {
        return Ok(());
    }
    if levels != 1 {
        return Err(DecodeError::at(
            KeyPath::root().key("threads"),
            "a step with ddl changes runs one level: give threads as one number".to_string(),
        ));
    }
    for (i, c) in changes.iter().enumerate() {
        let at = KeyPath::root().key("ddl").index(i);
        if c.at_s >= duration_s {
            return Err(DecodeError::at(
                at.key("at_s"),
                format!("at_s = {} is not inside the level's {duration_s} s", c.at_s),
            ));
        }
        if c.table.is_empty()
            || !c
                .table
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        {
            return Err(DecodeError::at(
                at.key("table"),
                format!("table = {:?} must be 1-64 letters, digits or _", c.table),
            ));
        }
        c.ddl().validate().map_err(|e| DecodeError {
            path: at.join(&e.path),
            ..e
        })?;
    }
    Ok(())
}

/// The workload's figures over a window of its seconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Window {
    pub from_s: f64,
    pub to_s: f64,
    pub ops_per_s: f64,
    /// The worst of the window's per-second p99s.
    pub p99_us: Option<u64>,
    pub errors: u64,
}

/// A change as it ran under load.
#[derive(Debug, Clone, Serialize)]
pub struct HotRun {
    pub table: String,
    pub title: &'static str,
    pub sql: String,
    pub ran: Option<String>,
    pub algorithm: Option<&'static str>,
    /// Seconds into the level it started and ended (`None`: it never ran).
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    pub elapsed_s: Option<f64>,
    /// Times it gave way to the workload, having waited [`LOCK_WAIT_S`] for the table's lock
    /// (or been chosen as a deadlock's victim), before it was made.
    pub gave_way: u32,
    pub error: Option<String>,
    pub before: Window,
    pub during: Window,
    pub after: Window,
}

impl HotRun {
    /// `c` as it stands before it runs (its statement in dialect `d`).
    fn not_run(c: &HotChange, d: crate::engine::Dialect) -> Self {
        let (sql, title) = c
            .ddl()
            .statement(d, &c.table)
            .unwrap_or_else(|e| (e.message, "invalid change"));
        HotRun {
            table: c.table.clone(),
            title,
            sql,
            ran: None,
            algorithm: None,
            start_s: None,
            end_s: None,
            elapsed_s: None,
            gave_way: 0,
            error: None,
            before: Window::default(),
            during: Window::default(),
            after: Window::default(),
        }
    }

    /// `rename column c_middle on customer`.
    pub fn label(&self) -> String {
        format!("{} on {}", self.title, self.table)
    }
}

/// What a change's windows read of one second of its level: kept only on a level with
/// changes, a few words a second (the runner keeps none of its seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Second {
    pub tick: u64,
    /// End of the second, seconds into the level.
    pub t_s: f64,
    pub ops_per_s: f64,
    pub p99_us: Option<u64>,
    pub errors: u64,
}

impl Second {
    /// A second ending `t_s` into the level, with nothing counted (a test's clock).
    pub fn at(t_s: f64) -> Second {
        Second {
            tick: t_s as u64,
            t_s,
            ..Second::default()
        }
    }
}

impl From<&IntervalRecord> for Second {
    fn from(iv: &IntervalRecord) -> Second {
        Second {
            tick: iv.tick,
            t_s: iv.t_s,
            ops_per_s: iv.ops_per_s,
            p99_us: iv.latency_us.map(|l| l.p99),
            errors: iv.errors,
        }
    }
}

/// Run `level` (a workload's level, which hands each of its seconds, as the runner closes
/// it, to the function it is given: the first starts the changes' clock) while a session of
/// its own makes `changes` at their seconds. Returns the level's result and the changes as
/// they ran, each with its windows of the level's seconds.
pub fn alongside<R>(
    engine: &dyn Engine,
    changes: &[HotChange],
    stop: &AtomicBool,
    level: impl FnOnce(&dyn Fn(Second)) -> R,
) -> (R, Vec<HotRun>) {
    if changes.is_empty() {
        return (level(&|_| {}), Vec::new());
    }
    let origin: OnceLock<Instant> = OnceLock::new();
    let seconds: Mutex<Vec<Second>> = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        // Raised however the level ends, a panic included: the changes stop waiting.
        let _done = crate::stop::RaiseOnDrop(&done);
        let ddl = s.spawn(|| make_changes(engine, changes, &origin, &done, stop));
        let r = level(&|sec: Second| {
            origin.get_or_init(|| Instant::now() - Duration::from_secs_f64(sec.t_s));
            seconds.lock().unwrap_or_else(|p| p.into_inner()).push(sec);
        });
        done.store(true, Ordering::Relaxed);
        // A panic in the changes' thread is a failed change, never a step that reads ok
        // with nothing measured: each change says so, and the level's figures stand.
        let mut runs = ddl.join().unwrap_or_else(|payload| {
            let why = format!(
                "the schema-change thread panicked ({}); this is a bug in dbduel",
                crate::runner::panic_message(payload.as_ref())
            );
            changes
                .iter()
                .map(|c| HotRun {
                    error: Some(why.clone()),
                    ..HotRun::not_run(c, engine.dialect())
                })
                .collect()
        });
        measure(
            &mut runs,
            &seconds.into_inner().unwrap_or_else(|p| p.into_inner()),
        );
        (r, runs)
    })
}

fn make_changes(
    engine: &dyn Engine,
    changes: &[HotChange],
    origin: &OnceLock<Instant>,
    done: &AtomicBool,
    stop: &AtomicBool,
) -> Vec<HotRun> {
    let d = engine.dialect();
    let mut order: Vec<&HotChange> = changes.iter().collect();
    order.sort_by_key(|c| c.at_s);
    let mut session = None;
    let mut runs = Vec::new();
    for c in order {
        let mut run = HotRun::not_run(c, d);
        // Wait for the level's clock, then for the change's second.
        let start = loop {
            if done.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                break None;
            }
            if let Some(o) = origin.get() {
                let due = *o + Duration::from_secs(c.at_s);
                let now = Instant::now();
                if now >= due {
                    break Some(*o);
                }
                std::thread::sleep((due - now).min(Duration::from_millis(20)));
            } else {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let Some(o) = start else {
            run.error = Some("not made: the level ended before its second".into());
            runs.push(run);
            continue;
        };
        run.start_s = Some(o.elapsed().as_secs_f64());
        let s = match &mut session {
            Some(s) => Ok(s),
            None => open_session(engine).map(|s| session.insert(s)),
        };
        let t = Instant::now();
        let mut waits = 0u64;
        let applied = s.map_err(StepError::from).and_then(|s| {
            loop {
                match ddl::apply(s.as_mut(), engine, &run.sql, None) {
                    Err(StepError::Engine(e)) if !done.load(Ordering::Relaxed) => match e.kind {
                        // SQLite's write lock: asked for again at once (see `open_session`)
                        "busy" => {
                            waits += 1;
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        "lock_timeout" | "deadlock" => {
                            waits += 1;
                            run.gave_way += 1;
                            std::thread::sleep(GIVE_WAY);
                        }
                        _ => break Err(StepError::Engine(e)),
                    },
                    r => break r,
                }
            }
        });
        match applied {
            Ok(a) => {
                // the change's time includes its waits for the lock
                run.elapsed_s = Some(if waits > 0 {
                    t.elapsed().as_secs_f64()
                } else {
                    a.elapsed_s
                });
                run.ran = Some(a.ran);
                run.algorithm = a.algorithm;
            }
            Err(e) => run.error = Some(e.to_string()),
        }
        run.end_s = Some(o.elapsed().as_secs_f64());
        runs.push(run);
    }
    runs
}

/// The changes' own session. On a server it waits at most [`LOCK_WAIT_S`] for a table's
/// lock. On SQLite it does not wait in SQLite's busy handler, whose sleeps grow to 100 ms
/// while the terminals, newly waiting, poll every millisecond or two and always take the
/// write lock first: a change would wait for the level to end. It asks again every 0.2 ms
/// instead, as often as they do.
fn open_session(engine: &dyn Engine) -> crate::engine::Result<Box<dyn crate::engine::Session>> {
    let mut s = engine.connect()?;
    if let Some(sql) = engine.dialect().lock_wait_sql(LOCK_WAIT_S) {
        s.execute(&sql)?;
    }
    Ok(s)
}

/// Fill each change's windows from the level's seconds (`t_s` is a second's end, seconds
/// into the level).
fn measure(runs: &mut [HotRun], intervals: &[Second]) {
    for r in runs.iter_mut() {
        let (Some(a), Some(b)) = (r.start_s, r.end_s) else {
            continue;
        };
        // whole seconds before the start; every second the change touched; whole seconds
        // after its end
        r.before = window(intervals, a - WINDOW_S, a, |iv| {
            iv.t_s <= a && iv.t_s > a - WINDOW_S
        });
        r.during = window(intervals, a, b, |iv| {
            iv.t_s > a && iv.t_s - 1.0 < b.max(a + 1e-3)
        });
        r.after = window(intervals, b, b + WINDOW_S, |iv| {
            iv.t_s - 1.0 >= b && iv.t_s - 1.0 < b + WINDOW_S
        });
    }
}

/// The figures of the seconds `within` picks (an interval covers the second before its
/// `t_s`), for the window `[from, to]`.
fn window(intervals: &[Second], from: f64, to: f64, within: impl Fn(&Second) -> bool) -> Window {
    // A level's last interval may be a sliver: its rate says little.
    let secs: Vec<&Second> = intervals
        .iter()
        .filter(|iv| iv.t_s - iv.tick as f64 >= 0.5 && within(iv))
        .collect();
    let span: f64 = secs.len() as f64;
    Window {
        from_s: from.max(0.0),
        to_s: to,
        ops_per_s: if span > 0.0 {
            secs.iter().map(|iv| iv.ops_per_s).sum::<f64>() / span
        } else {
            0.0
        },
        p99_us: secs.iter().filter_map(|iv| iv.p99_us).max(),
        errors: secs.iter().map(|iv| iv.errors).sum(),
    }
}

/// The step's figures and note for its changes.
pub fn figures(runs: &[HotRun]) -> (Vec<crate::results::Metric>, Vec<String>) {
    use crate::results::{Better, Metric, Unit};
    let mut metrics = Vec::new();
    let mut notes = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let label = r.label();
        match (r.elapsed_s, &r.error) {
            (Some(s), _) => {
                metrics.push(Metric::new(
                    &format!("ddl{}_s", i + 1),
                    &label,
                    s,
                    Unit::Seconds,
                    Better::Lower,
                ));
                let kept = if r.before.ops_per_s > 0.0 {
                    r.during.ops_per_s * 100.0 / r.before.ops_per_s
                } else {
                    0.0
                };
                metrics.push(Metric::new(
                    &format!("ddl{}_kept_pct", i + 1),
                    &format!("{label}: throughput kept"),
                    kept,
                    Unit::Percent,
                    Better::Higher,
                ));
                notes.push(format!(
                    "{label} at {:.1} s took {}{}{}: {:.0} → {:.0} → {:.0} ops/s before/during/after, worst p99 {} → {} → {} µs, {} error(s) during",
                    r.start_s.unwrap_or(0.0),
                    crate::results::format::seconds(s),
                    r.algorithm.map(|a| format!(" (ALGORITHM={a})")).unwrap_or_default(),
                    match r.gave_way {
                        0 => String::new(),
                        n => format!(
                            ", having given way to the workload {n} time(s) (it waits at most {LOCK_WAIT_S} s for the table's lock)"
                        ),
                    },
                    r.before.ops_per_s,
                    r.during.ops_per_s,
                    r.after.ops_per_s,
                    opt(r.before.p99_us),
                    opt(r.during.p99_us),
                    opt(r.after.p99_us),
                    r.during.errors
                ));
            }
            (None, Some(e)) => notes.push(format!("{label}: FAILED: {e}")),
            (None, None) => {}
        }
    }
    (metrics, notes)
}

/// The changes that did not run, each with why.
pub fn failures(runs: &[HotRun]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.elapsed_s.is_none())
        .filter_map(|r| Some(format!("{}: {}", r.label(), r.error.as_ref()?)))
        .collect()
}

/// A workload step's result: failed (its figures kept) when a change failed, unless the step
/// was interrupted (changes not reached then are no failure).
pub fn outcome(out: StepOutput, failed: Vec<String>) -> Result<StepOutput, StepError> {
    if failed.is_empty() || out.interrupted {
        return Ok(out);
    }
    Err(StepError::Failed(
        format!("schema changes under load failed: {}", failed.join("; ")),
        super::ctx::Kept(Box::new(out)),
    ))
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(text: &str) -> HotChange {
        toml::from_str(text).expect("change")
    }

    /// An engine whose sessions panic when made: the changes' thread panics.
    struct Panicking;

    impl Engine for Panicking {
        fn kind(&self) -> &'static str {
            "panicking"
        }
        fn dialect(&self) -> crate::engine::Dialect {
            crate::engine::Dialect::Sqlite
        }
        fn connect(&self) -> crate::engine::Result<Box<dyn crate::engine::Session>> {
            panic!("the session could not be made")
        }
        fn info(&self) -> crate::engine::Result<crate::engine::EngineInfo> {
            Err(crate::engine::EngineError::new("unsupported", "not here"))
        }
        fn bulk_load(
            &self,
            _r: &crate::engine::LoadRequest<'_>,
        ) -> crate::engine::Result<crate::engine::LoadOutcome> {
            Err(crate::engine::EngineError::new("unsupported", "not here"))
        }
        fn footprint(&self, _t: &[&str]) -> crate::engine::Result<crate::engine::Footprint> {
            Err(crate::engine::EngineError::new("unsupported", "not here"))
        }
        fn restart(&self, _cold: bool) -> crate::engine::Result<crate::engine::RestartOutcome> {
            Err(crate::engine::EngineError::new("unsupported", "not here"))
        }
    }

    #[test]
    fn a_panic_among_the_changes_fails_them_and_keeps_the_level() {
        let c = change(
            "at_s = 0\ntable = \"customer\"\naction = \"rename_column\"\ncolumn = \"c_middle\"\nto = \"c_mi\"\n",
        );
        let stop = AtomicBool::new(false);
        let (level, runs) = alongside(&Panicking, &[c], &stop, |second| {
            second(Second::at(0.0));
            std::thread::sleep(Duration::from_millis(200));
            42
        });
        assert_eq!(level, 42, "the level's result stands");
        assert_eq!(runs.len(), 1);
        let e = runs[0].error.as_deref().unwrap_or_default();
        assert!(
            e.contains("panicked (the session could not be made)"),
            "{e}"
        );
        assert_eq!(failures(&runs).len(), 1, "it fails the step");
    }

    #[test]
    fn changes_are_checked_where_they_are_written() {
        let ok = change(
            "at_s = 3\ntable = \"customer\"\naction = \"rename_column\"\ncolumn = \"c_middle\"\nto = \"c_mi\"\n",
        );
        validate(std::slice::from_ref(&ok), 1, 10).unwrap();
        let e = validate(std::slice::from_ref(&ok), 2, 10).unwrap_err();
        assert_eq!(e.path.to_string(), "threads");
        let e = validate(std::slice::from_ref(&ok), 1, 3).unwrap_err();
        assert_eq!(e.path.to_string(), "ddl[0].at_s");
        let no_to = change(
            "at_s = 3\ntable = \"customer\"\naction = \"rename_column\"\ncolumn = \"c_middle\"\n",
        );
        let e = validate(&[ok, no_to], 1, 10).unwrap_err();
        assert_eq!(e.path.to_string(), "ddl[1].to");
    }

    #[test]
    fn windows_take_the_seconds_around_a_change() {
        let iv = |t: f64, ops: u64, errors: u64| Second {
            tick: t as u64 - 1,
            t_s: t,
            ops_per_s: ops as f64,
            p99_us: None,
            errors,
        };
        let ivs: Vec<Second> = (1..=20)
            .map(|t| {
                if (8..=9).contains(&t) {
                    iv(t as f64, 10, 2)
                } else {
                    iv(t as f64, 100, 0)
                }
            })
            .collect();
        // a change from 7.2 s to 8.5 s touched the seconds ending at 8 and 9
        let mut runs = vec![HotRun {
            table: "t".into(),
            title: "add column",
            sql: String::new(),
            ran: None,
            algorithm: None,
            start_s: Some(7.2),
            end_s: Some(8.5),
            elapsed_s: Some(1.3),
            gave_way: 0,
            error: None,
            before: Window::default(),
            during: Window::default(),
            after: Window::default(),
        }];
        measure(&mut runs, &ivs);
        let r = &runs[0];
        assert_eq!((r.during.ops_per_s, r.during.errors), (10.0, 4));
        // the whole seconds before (ending at 3..=7) and after (starting at 9..=13)
        assert_eq!((r.before.ops_per_s, r.before.errors), (100.0, 0));
        assert_eq!((r.after.ops_per_s, r.after.errors), (100.0, 0));
    }
}
