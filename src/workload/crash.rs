//! `crash`: what a durability setting loses when the server dies. Clients write transactions
//! (two rows each, in two tables) and keep a ledger of the ones the server acknowledged; after
//! `crash_after_s` the server is killed (SIGKILL to its process group), started again and
//! timed until it accepts a connection; then every acknowledged transaction is read back.
//! An acknowledged transaction missing is lost; one with only one of its two rows is torn.
//! Repeated `crashes` times.

use super::ctx::{Kept, StepCtx, StepError, StepOutput, summary};
use crate::dataset::{Column, ColumnType, TableDef, col};
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{EngineError, Value};
use crate::results::{Better, Metric, Unit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The table each transaction's first row goes to, and the one its second row goes to: a
/// transaction with only one of them after a crash was torn.
const FIRST: &str = "crash_ledger";
const SECOND: &str = "crash_ledger_pair";

const FIRST_COLUMNS: &[Column] = &[
    col("id", ColumnType::Integer, true, false),
    col("client", ColumnType::Integer, false, false),
    col("seq", ColumnType::Integer, false, false),
    col("pad", ColumnType::Varchar(100), false, false),
];
/// The failover's first write on the promoted replica goes here.
const PROBE: &str = "crash_probe";
const PROBE_COLUMNS: &[Column] = &[col("id", ColumnType::Integer, true, false)];
const SECOND_COLUMNS: &[Column] = &[
    col("id", ColumnType::Integer, true, false),
    col("pad", ColumnType::Varchar(100), false, false),
];

pub use crate::engine::Fault;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashParams {
    /// Clients writing at once.
    #[serde(default = "default_threads")]
    pub threads: u64,
    /// Seconds of writes before each kill.
    #[serde(default = "default_after")]
    pub crash_after_s: u64,
    /// Kills, each after its own seconds of writes.
    #[serde(default = "default_crashes")]
    pub crashes: u64,
    #[serde(default = "default_fault")]
    pub fault: Fault,
    /// `kind = "failover"`: the primary of a replicated contender is killed and its most
    /// advanced replica promoted, once.
    #[serde(skip)]
    pub failover: bool,
}

fn default_threads() -> u64 {
    8
}
fn default_after() -> u64 {
    10
}
fn default_crashes() -> u64 {
    3
}
fn default_fault() -> Fault {
    Fault::Process
}

/// Transactions a round may write (ids are 32-bit integers on every engine).
const MAX_IDS: i64 = i32::MAX as i64;

impl super::kind::StepKind for CrashParams {
    fn decode(kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        let once = v.get("crashes").is_none();
        let mut p: CrashParams = crate::decode::decode(v)?;
        p.failover = kind == "failover";
        if p.failover && once {
            p.crashes = 1;
        }
        Ok(p)
    }

    fn validate(&self) -> Result<(), DecodeError> {
        let root = KeyPath::root();
        if self.failover && self.crashes != 1 {
            return Err(DecodeError::at(
                root.key("crashes"),
                "a failover happens once (the promoted replica is the primary after it); leave crashes out",
            ));
        }
        if self.failover && self.fault.cuts_power() {
            return Err(DecodeError::at(
                root.key("fault"),
                "a failover's primary dies by a process crash: a power loss there is not built yet; leave fault out",
            ));
        }
        for (key, v, max) in [
            ("threads", self.threads, 1024),
            ("crash_after_s", self.crash_after_s, 86_400),
            ("crashes", self.crashes, 100),
        ] {
            if !(1..=max).contains(&v) {
                return Err(DecodeError::at(
                    root.key(key),
                    format!("{key} must be from 1 to {max}, not {v}"),
                ));
            }
        }
        Ok(())
    }

    fn restarts(&self) -> Option<&'static str> {
        Some("kind")
    }

    fn clients(&self) -> u64 {
        self.threads
    }

    fn makes_own_tables(&self) -> bool {
        true
    }

    fn read_beside(
        &mut self,
        beside: &super::kind::Beside<'_>,
    ) -> Result<(), super::kind::BesideError> {
        // A crash kills the server: never one dbduel did not start.
        match beside.users.iter().find(|c| c.target) {
            Some(c) => Err(super::kind::BesideError::At(
                KeyPath::root().key("kind"),
                format!(
                    "a crash step kills the server, and contender `{}` runs on someone else's (its target): dbduel kills only servers it started; drop the target or run the crash step on other contenders",
                    c.name
                ),
            )),
            None => Ok(()),
        }
    }

    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// One crash: what was written before it, how the server came back, what it lost.
#[derive(Debug, Clone, Serialize)]
pub struct CrashRound {
    /// Transactions the server acknowledged before it was killed.
    pub acked: u64,
    /// Seconds of writes before the kill.
    pub written_s: f64,
    pub tps: f64,
    /// Seconds from the kill until the server accepted a connection again.
    pub accepting_s: f64,
    /// Acknowledged transactions missing after the restart.
    pub lost: u64,
    /// `lost` as seconds of the write rate before the kill.
    pub lost_s: f64,
    /// Transactions with one of their two rows only.
    pub torn: u64,
    /// Transactions present in full that were never acknowledged (their commit was in
    /// flight at the kill: in doubt, and kept).
    pub unacknowledged_present: u64,
    /// What the server's log said of its recovery.
    pub recovery_log: Vec<String>,
    /// A power loss: what the server's files held unsynced, and lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsynced_lost: Option<crate::engine::UnsyncedLost>,
    /// A failover's promotion: which replica, after how long, by which commands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<crate::engine::FailoverOutcome>,
}

/// What one writing client did until the kill.
#[derive(Default)]
struct Written {
    acked: Vec<i64>,
    /// The sequence number after the last one tried: a transaction in flight at the kill may
    /// have committed, so its id is never used again.
    next: i64,
    /// The first failure before the kill, which stopped the client.
    failed: Option<String>,
}

/// Why this contender cannot take the step, if it cannot.
fn unfit(p: &CrashParams, ctx: &StepCtx<'_>) -> Option<String> {
    if ctx.engine.embedded() && !p.fault.cuts_power() {
        return Some(format!(
            "{} runs inside dbduel's process: a process crash would be dbduel's own (fault = \"power\" tests it)",
            ctx.engine.kind()
        ));
    }
    if ctx.engine.cluster().is_some() {
        return (!p.failover).then(|| {
            "a cluster does not crash as one server: its node's death is a failover (kind = \"failover\")".into()
        });
    }
    match (p.failover, ctx.engine.replication().is_some()) {
        (false, true) => Some(
            "a replicated contender does not crash as one server: its primary's death is a failover (kind = \"failover\")".into(),
        ),
        (true, false) => {
            Some("a failover needs a primary with replicas (options.replicas)".into())
        }
        _ => None,
    }
}

/// The step's own tables, made anew in dbduel's database.
fn make_tables(ctx: &StepCtx<'_>) -> Result<(), EngineError> {
    let dialect = ctx.engine.dialect();
    let mut s = ctx.engine.connect()?;
    for (name, columns) in [
        (FIRST, FIRST_COLUMNS),
        (SECOND, SECOND_COLUMNS),
        (PROBE, PROBE_COLUMNS),
    ] {
        let def = TableDef {
            name: name.into(),
            columns,
            unique: Vec::new(),
            indexes: Vec::new(),
            rows: 0,
            foreign_keys: Vec::new(),
        };
        s.execute(&dialect.drop_table_if_exists(name))?;
        s.execute(&dialect.create_table(&def))?;
    }
    // A cluster's writers are dealt round-robin over its nodes: each node must have
    // applied this DDL before a writer there inserts (a causal read waits for it).
    if let Some(c) = ctx.engine.cluster() {
        for node in 0..c.client_nodes() {
            c.causal_session(node)?
                .query_i64(&format!("SELECT COUNT(*) FROM {SECOND}"))?;
        }
    }
    Ok(())
}

/// What the two tables hold against every acknowledged id, read from the server that
/// came back (or the promoted replica).
fn read_back(ctx: &StepCtx<'_>, back: &Back, acked: &BTreeSet<i64>) -> Result<Tally, EngineError> {
    let mut reader = match &back.failover {
        Some(f) => after_failover(ctx, f.promoted)?,
        None => ctx.engine.connect()?,
    };
    let dialect = ctx.engine.dialect();
    let first = ids(reader.as_mut(), dialect, FIRST)?;
    let second = ids(reader.as_mut(), dialect, SECOND)?;
    Ok(Tally::of(acked, &first, &second))
}

pub fn run(p: &CrashParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    if let Some(why) = unfit(p, ctx) {
        return Err(StepError::Skipped(why));
    }
    make_tables(ctx)?;
    if p.fault.cuts_power() {
        // The tables are made (and durable) first: what a power loss takes is the writes.
        ctx.engine.power_layer(Some(p.fault))?;
        let out = crashes(p, ctx);
        // Back on its own filesystem for the steps after, the step's result as it was.
        let off = ctx.engine.power_layer(None);
        return match (out, off) {
            (out, Ok(())) => out,
            (Ok(_), Err(e)) => Err(e.into()),
            (Err(e), Err(off)) => {
                crate::errln!("warning: {}: {off}", ctx.step);
                Err(e)
            }
        };
    }
    crashes(p, ctx)
}

/// The step's crashes, one after another, each read back before the next.
fn crashes(p: &CrashParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let clients = p.threads as i64;
    let mut next_seq = vec![0i64; p.threads as usize];
    let mut acked_all = BTreeSet::new();
    let mut before = Tally::default();
    let mut rounds = Vec::new();
    let mut ledger = Ledger::open(ctx);
    for crash in 0..p.crashes {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        ctx.progress.status(&format!(
            "crash {}/{}: {} clients writing for {} s",
            crash + 1,
            p.crashes,
            p.threads,
            p.crash_after_s
        ));
        let (written, written_s, outcome) = match write_then_crash(p, ctx, &next_seq, crash) {
            Ok(w) => w,
            // The engine cannot do it here (a failover its family has not built): skipped.
            Err(StepError::Engine(e)) if e.kind == "unsupported" && rounds.is_empty() => {
                return Err(StepError::Skipped(e.message));
            }
            Err(e) if rounds.is_empty() => return Err(e),
            Err(e) => {
                let why = format!("crash {}: {e}", crash + 1);
                return Err(kept(p, ctx, &rounds, &ledger, why));
            }
        };
        if let Some(sampler) = ctx.sampler {
            sampler.retarget(ctx.engine.server_pids());
        }
        let mut acked = 0u64;
        for (c, w) in written.iter().enumerate() {
            if let Some(e) = &w.failed {
                let why = format!("client {c} failed before the server was killed: {e}");
                return Err(kept(p, ctx, &rounds, &ledger, why));
            }
            next_seq[c] = w.next;
            acked += w.acked.len() as u64;
            acked_all.extend(w.acked.iter().copied());
        }
        ledger.append(crash, clients, &written);
        ctx.progress.status(&format!(
            "crash {}/{}: reading back {acked} acknowledged transactions",
            crash + 1,
            p.crashes
        ));
        let tally = read_back(ctx, &outcome, &acked_all)?;
        let tps = acked as f64 / written_s.max(1e-9);
        let lost = tally.lost - before.lost;
        rounds.push(CrashRound {
            acked,
            written_s,
            tps,
            accepting_s: outcome.back_s,
            lost,
            lost_s: if tps > 0.0 { lost as f64 / tps } else { 0.0 },
            torn: tally.torn - before.torn,
            unacknowledged_present: tally.unacknowledged - before.unacknowledged,
            recovery_log: outcome.recovery_log,
            unsynced_lost: outcome.unsynced_lost,
            failover: outcome.failover,
        });
        before = tally;
        if next_seq.iter().any(|&s| s * clients >= MAX_IDS - clients) {
            break;
        }
    }
    let out = output(p, ctx, &rounds, ledger.path());
    if rounds.is_empty() {
        return Err(StepError::Check(crate::stop::INTERRUPTED.into()));
    }
    if before.torn > 0 {
        let why = format!(
            "{} transaction(s) came back with one of their two rows: the engine broke a transaction apart in a crash",
            before.torn
        );
        return Err(StepError::Failed(why, Kept(Box::new(out))));
    }
    Ok(out)
}

/// The step's failure `why`, with the crashes before it kept (they stand) when there were any.
fn kept(
    p: &CrashParams,
    ctx: &StepCtx<'_>,
    rounds: &[CrashRound],
    ledger: &Ledger,
    why: String,
) -> StepError {
    if rounds.is_empty() {
        return StepError::Check(why);
    }
    StepError::Failed(why, Kept(Box::new(output(p, ctx, rounds, ledger.path()))))
}

/// `p.threads` clients write until the kill; the server is killed after `crash_after_s` and
/// started again. What each client had acknowledged, the seconds written, and the restart.
fn write_then_crash(
    p: &CrashParams,
    ctx: &StepCtx<'_>,
    next_seq: &[i64],
    crash: u64,
) -> Result<(Vec<Written>, f64, Back), StepError> {
    let dialect = ctx.engine.dialect();
    let first = dialect.placeholders(&format!(
        "INSERT INTO {FIRST} (id, client, seq, pad) VALUES (?, ?, ?, ?)"
    ));
    let second = dialect.placeholders(&format!("INSERT INTO {SECOND} (id, pad) VALUES (?, ?)"));
    let killing = AtomicBool::new(false);
    let embedded = ctx.engine.embedded();
    let sessions = (0..p.threads)
        .map(|_| ctx.engine.connect())
        .collect::<Result<Vec<_>, EngineError>>()?;
    std::thread::scope(|scope| {
        let writers: Vec<_> = sessions
            .into_iter()
            .enumerate()
            .map(|(c, mut s)| {
                let (first, second, killing) = (&first, &second, &killing);
                let seq0 = next_seq[c];
                scope.spawn(move || {
                    write(
                        p,
                        ctx,
                        s.as_mut(),
                        c,
                        seq0,
                        (first, second),
                        killing,
                        embedded,
                    )
                })
            })
            .collect();
        let started = Instant::now();
        let until = started + Duration::from_secs(p.crash_after_s);
        while Instant::now() < until && !ctx.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
        }
        killing.store(true, Ordering::SeqCst);
        let written_s = started.elapsed().as_secs_f64();
        let join = |writers: Vec<std::thread::ScopedJoinHandle<'_, Written>>| -> Vec<Written> {
            writers
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| Written {
                        failed: Some("the client panicked".into()),
                        ..Written::default()
                    })
                })
                .collect()
        };
        if embedded {
            // The engine runs in dbduel's process: its disk stops answering first, its
            // sessions end on that (none closes cleanly, none syncs), and the power goes once
            // they are gone.
            let cut = ctx.engine.cut_power();
            let written = join(writers);
            cut?;
            return Ok((written, written_s, kill(ctx, p, crash)?));
        }
        let crashed = kill(ctx, p, crash);
        let written = join(writers);
        Ok((written, written_s, crashed?))
    })
}

/// One client's writes until the kill (or, `embedded`, until its power cut's errors): each
/// transaction a row in each table, its id acknowledged when its `COMMIT` returned.
#[allow(clippy::too_many_arguments)]
fn write(
    p: &CrashParams,
    ctx: &StepCtx<'_>,
    s: &mut dyn crate::engine::Session,
    c: usize,
    seq0: i64,
    (first, second): (&str, &str),
    killing: &AtomicBool,
    embedded: bool,
) -> Written {
    let dialect = ctx.engine.dialect();
    let mut w = Written {
        next: seq0,
        ..Written::default()
    };
    let prepared = s.prepare(first).and_then(|a| Ok((a, s.prepare(second)?)));
    let (a, b) = match prepared {
        Ok(ab) => ab,
        Err(e) => {
            w.failed = Some(e.to_string());
            return w;
        }
    };
    let pad = Value::Text(format!("{c:0>100}"));
    for seq in seq0.. {
        // No transaction begins once the kill is under way (on a cluster,
        // the nodes that live on would take writes for ever) — but an
        // embedded engine's sessions end only on its power cut's errors: one
        // closing before it would checkpoint and sync what the cut is to lose.
        let stopping = killing.load(Ordering::SeqCst) && !embedded;
        if ctx.stop.load(Ordering::Relaxed) || stopping {
            break;
        }
        w.next = seq + 1;
        let id = seq * p.threads as i64 + c as i64;
        let r = s
            .execute(dialect.begin_write())
            .and_then(|_| {
                let row = [
                    Value::Int(id),
                    Value::Int(c as i64),
                    Value::Int(seq),
                    pad.clone(),
                ];
                s.run(a, &row)
            })
            .and_then(|_| s.run(b, &[Value::Int(id), pad.clone()]))
            .and_then(|_| s.execute("COMMIT"));
        match r {
            Ok(_) => w.acked.push(id),
            // The kill ends every session: an error then is the crash's.
            Err(_) if killing.load(Ordering::SeqCst) => break,
            Err(e) => {
                w.failed = Some(e.to_string());
                break;
            }
        }
    }
    w
}

/// How the server came back: after a crash, or in a promoted replica.
struct Back {
    /// Seconds from the kill until the server accepted a connection, or the promoted
    /// replica a write.
    back_s: f64,
    recovery_log: Vec<String>,
    unsynced_lost: Option<crate::engine::UnsyncedLost>,
    failover: Option<crate::engine::FailoverOutcome>,
}

/// Kill the server (crash `round`): restart it, or fail over to a replica and time the first
/// write it takes.
fn kill(ctx: &StepCtx<'_>, p: &CrashParams, round: u64) -> Result<Back, EngineError> {
    if !p.failover {
        let c = ctx.engine.crash(p.fault)?;
        return Ok(Back {
            back_s: c.accepting_s,
            recovery_log: c.recovery_log,
            unsynced_lost: c.unsynced_lost,
            failover: None,
        });
    }
    let killed = Instant::now();
    let f = ctx.engine.fail_over()?;
    let mut s = after_failover(ctx, f.promoted)?;
    let insert = ctx
        .engine
        .dialect()
        .placeholders(&format!("INSERT INTO {PROBE} (id) VALUES (?)"));
    let stmt = s.prepare(&insert)?;
    s.run(stmt, &[Value::Int(round as i64)])?;
    Ok(Back {
        back_s: killed.elapsed().as_secs_f64(),
        recovery_log: Vec::new(),
        unsynced_lost: None,
        failover: Some(f),
    })
}

/// A session on the replica promoted in a failover.
fn after_failover(
    ctx: &StepCtx<'_>,
    replica: usize,
) -> Result<Box<dyn crate::engine::Session>, EngineError> {
    if let Some(c) = ctx.engine.cluster() {
        return c.node_session(replica);
    }
    let r = ctx.engine.replication().ok_or_else(|| {
        EngineError::new(
            "replication",
            "the contender lost its replicas in the failover",
        )
    })?;
    r.replica_session(replica)
}

/// Every id in `table`, read in pages in id order.
fn ids(
    s: &mut dyn crate::engine::Session,
    dialect: crate::engine::Dialect,
    table: &str,
) -> Result<BTreeSet<i64>, EngineError> {
    const PAGE: i64 = 50_000;
    let stmt = s.prepare(&dialect.placeholders(&format!(
        "SELECT id FROM {table} WHERE id > ? ORDER BY id LIMIT {PAGE}"
    )))?;
    let (mut all, mut rows, mut after) = (BTreeSet::new(), Vec::new(), -1i64);
    loop {
        let n = s.run_rows(stmt, &[Value::Int(after)], &mut rows)?;
        for v in &rows {
            let id = v.as_i64()?;
            all.insert(id);
            after = after.max(id);
        }
        if (n as i64) < PAGE {
            return Ok(all);
        }
    }
}

/// What the two tables hold against the ledger, over every crash so far.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    /// Acknowledged, and missing from the first table.
    lost: u64,
    /// In one table only.
    torn: u64,
    /// In both, never acknowledged.
    unacknowledged: u64,
}

impl Tally {
    fn of(acked: &BTreeSet<i64>, first: &BTreeSet<i64>, second: &BTreeSet<i64>) -> Tally {
        let torn = first.symmetric_difference(second).count() as u64;
        // A torn transaction is counted as torn, not also as lost.
        let lost = acked
            .iter()
            .filter(|id| !first.contains(id) && !second.contains(id))
            .count() as u64;
        let unacknowledged = first
            .intersection(second)
            .filter(|id| !acked.contains(id))
            .count() as u64;
        Tally {
            lost,
            torn,
            unacknowledged,
        }
    }
}

/// The acknowledged transactions, one line each (`crash client seq id`), appended to
/// `<step>.ledger.tsv` beside the step's results and synced after each crash's writes.
struct Ledger {
    file: Option<(std::path::PathBuf, std::fs::File)>,
}

impl Ledger {
    fn open(ctx: &StepCtx<'_>) -> Ledger {
        let path = ctx
            .seconds
            .path()
            .and_then(|p| p.parent())
            .map(|d| d.join(format!("{}.ledger.tsv", ctx.step)));
        let file = path.and_then(|p| {
            let f = std::fs::File::create(&p)
                .map_err(|e| crate::errln!("warning: cannot write the ledger {}: {e}", p.display()))
                .ok()?;
            Some((p, f))
        });
        Ledger { file }
    }

    fn path(&self) -> Option<&std::path::Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    fn append(&mut self, crash: u64, clients: i64, written: &[Written]) {
        let Some((path, f)) = &self.file else {
            return;
        };
        let mut w = std::io::BufWriter::new(f);
        let wrote = written
            .iter()
            .enumerate()
            .flat_map(|(c, w)| w.acked.iter().map(move |id| (c, id)))
            .try_for_each(|(c, id)| writeln!(w, "{crash}\t{c}\t{}\t{id}", id / clients))
            .and_then(|_| w.flush())
            .and_then(|_| f.sync_data());
        if let Err(e) = wrote {
            crate::errln!("warning: cannot write the ledger {}: {e}", path.display());
            drop(w);
            self.file = None;
        }
    }
}

fn output(
    p: &CrashParams,
    ctx: &StepCtx<'_>,
    rounds: &[CrashRound],
    ledger: Option<&std::path::Path>,
) -> StepOutput {
    let n = rounds.len().max(1) as f64;
    let mean = |f: fn(&CrashRound) -> f64| rounds.iter().map(f).sum::<f64>() / n;
    let tps = mean(|r| r.tps);
    let lost = mean(|r| r.lost as f64);
    let lost_s = mean(|r| r.lost_s);
    let torn: u64 = rounds.iter().map(|r| r.torn).sum();
    let mut accepting: Vec<f64> = rounds.iter().map(|r| r.accepting_s).collect();
    accepting.sort_by(f64::total_cmp);
    let accepting_s = accepting.get(accepting.len() / 2).copied().unwrap_or(0.0);
    let mut s = summary(ctx.title(match (p.failover, p.fault) {
        (true, _) => "primary killed, replica promoted",
        (false, Fault::Process) => "process crash under writes",
        (false, _) => "power loss under writes",
    }));
    s.metrics = vec![
        Metric::new("tps", "TPS before", tps, Unit::PerSecond, Better::Higher),
        Metric::new(
            "lost_per_crash",
            "lost/crash",
            lost,
            Unit::Count,
            Better::Lower,
        ),
        Metric::new(
            "lost_s_per_crash",
            "lost s/crash",
            lost_s,
            Unit::Seconds,
            Better::Lower,
        ),
        Metric::new("torn", "torn", torn as f64, Unit::Count, Better::Lower),
        Metric::new(
            "accepting_s",
            "back in s",
            accepting_s,
            Unit::Seconds,
            Better::Lower,
        ),
    ];
    s.note = Some(note(p, ctx, rounds, accepting_s, torn));
    StepOutput {
        summary: s,
        details: serde_json::json!({
            "fault": p.fault,
            "threads": p.threads,
            "crash_after_s": p.crash_after_s,
            "tables": [FIRST, SECOND],
            "ledger": ledger.map(|l| l.display().to_string()),
            "crashes": rounds,
        }),
        seconds: 0,
        interrupted: ctx.stop.load(Ordering::Relaxed),
    }
}

/// The step's note: how the server died and came back (or which replica took over), and
/// what was lost.
fn note(
    p: &CrashParams,
    ctx: &StepCtx<'_>,
    rounds: &[CrashRound],
    accepting_s: f64,
    torn: u64,
) -> String {
    let lost_all = rounds.iter().map(|r| r.lost).sum::<u64>();
    let received = |f: &crate::engine::FailoverOutcome| {
        f.received
            .iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match rounds.first().and_then(|r| r.failover.as_ref()) {
        // A cluster: nothing promoted, every node takes writes.
        Some(f) if f.commands.is_empty() => format!(
            "a node killed by SIGKILL after {} s of writes from {} clients; {} saw the cluster without it after {:.2} s (the survivors had committed: {}) and took a write {accepting_s:.2} s after the kill; {lost_all} acknowledged transaction(s) lost, {torn} torn",
            p.crash_after_s,
            p.threads,
            f.promoted_name,
            f.caught_up_s,
            received(f),
        ),
        Some(f) => format!(
            "the primary killed by SIGKILL after {} s of writes from {} clients; replica {} (it had received the most: {}) applied what it received in {:.2} s and was promoted by `{}`; it took a write {accepting_s:.2} s after the kill; {lost_all} acknowledged transaction(s) lost, {torn} torn",
            p.crash_after_s,
            p.threads,
            f.promoted_name,
            received(f),
            f.caught_up_s,
            f.commands.join("; "),
        ),
        None => format!(
            "{} {} after {} s of writes from {} clients: {lost_all} acknowledged transaction(s) lost in all, {torn} torn; back in {accepting_s:.2} s (median, crash recovery included){}",
            rounds.len(),
            match (p.fault, ctx.engine.embedded()) {
                (Fault::Process, _) => "crash(es) by SIGKILL",
                (Fault::Power, false) =>
                    "power loss(es) (SIGKILL, and the data directory's unsynced writes and names forgotten)",
                (Fault::PowerPosix, false) =>
                    "power loss(es) (SIGKILL, and the data directory's unsynced writes forgotten, with every name whose directory was not synced)",
                (Fault::Power, true) =>
                    "power loss(es) (the database's files stopped answering mid-write, their unsynced writes and names forgotten)",
                (Fault::PowerPosix, true) =>
                    "power loss(es) (the database's files stopped answering mid-write, their unsynced writes forgotten, with every name whose directory was not synced)",
            },
            p.crash_after_s,
            p.threads,
            unsynced_note(rounds),
        ),
    }
}

/// What the power losses took from the files, beside what they took from the tables.
fn unsynced_note(rounds: &[CrashRound]) -> String {
    let lost: Vec<_> = rounds
        .iter()
        .filter_map(|r| r.unsynced_lost.as_ref())
        .collect();
    if lost.is_empty() {
        return String::new();
    }
    let kib: u64 = lost.iter().map(|l| l.bytes).sum::<u64>() / 1024;
    let names: u64 = lost.iter().map(|l| l.names).sum();
    format!(
        "; the filesystem forgot {} KiB of unsynced pages per power loss (mean) and {names} unsynced name change(s) in all",
        kib / lost.len() as u64
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::kind::params_of;

    fn set(ids: &[i64]) -> BTreeSet<i64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn the_tally_tells_lost_torn_and_in_doubt_apart() {
        // 1..=4 acknowledged; 4 is gone, 3 has its first row only; 5 committed unacknowledged.
        let t = Tally::of(&set(&[1, 2, 3, 4]), &set(&[1, 2, 3, 5]), &set(&[1, 2, 5]));
        assert_eq!(
            t,
            Tally {
                lost: 1,
                torn: 1,
                unacknowledged: 1
            }
        );
        let whole = Tally::of(&set(&[1, 2]), &set(&[1, 2]), &set(&[1, 2]));
        assert_eq!((whole.lost, whole.torn, whole.unacknowledged), (0, 0, 0));
    }

    #[test]
    fn parameters_default_and_refuse_what_is_not_built() {
        use crate::workload::kind::StepKind;
        let p: CrashParams = params_of("").expect("defaults");
        assert_eq!((p.threads, p.crash_after_s, p.crashes), (8, 10, 3));
        assert_eq!(p.fault, Fault::Process);
        let p: CrashParams = params_of("fault = \"power\"").expect("power");
        p.validate().expect("a crash by power loss");
        let failover =
            CrashParams::decode("failover", toml::from_str("fault = \"power\"").unwrap())
                .expect("decodes");
        let e = failover
            .validate()
            .expect_err("a failover's power loss is not built");
        assert!(e.message.contains("not built yet"), "{e:?}");
        let e = params_of::<CrashParams>("crashes = 0")
            .and_then(|p| p.validate().map(|_| p))
            .expect_err("no crash");
        assert!(e.message.contains("from 1 to 100"), "{e:?}");
    }
}
