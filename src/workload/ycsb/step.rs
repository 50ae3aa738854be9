//! `ycsb`: one of YCSB's core workloads (or a user's workload file) on the `ycsb` dataset's
//! `usertable`, over a sweep of client counts, closed or open loop like every client step.
//! Each client draws its operation from the workload's proportions and its record from the
//! workload's request distribution ([`super::keys`]); inserts extend the records the others
//! draw from, so `latest` reads the newest. Per level: operations a second, and each
//! operation's latency (read, update, insert, scan, read-modify-write) at every percentile;
//! the mix each client actually ran is printed beside the file's proportions.
//!
//! On a SQL engine the statements are those of YCSB's JDBC binding; on a document engine the
//! operations are its MongoDB binding's (`find` by `_id`, `$set`, `insert_one`, a `find` from
//! an `_id` on, sorted, limited).

use super::keys::{KeyChooser, ScanLength, ZIPFIAN_CONSTANT, Zipfian};
use super::properties::{self, ScanLengthDistribution, Workload};
use crate::dataset::rng::SplitMix64;
use crate::dataset::ycsb as records;
use crate::decode::{DecodeError, KeyPath};
use crate::engine::documents::DocSession;
use crate::engine::{self, Session, StmtId, Value};
use crate::metrics::Latency;
use crate::results::{Better, Metric, Unit};
use crate::runner::Worker;
use crate::workload::ctx::{StepCtx, StepError, StepOutput, summary};
use crate::workload::sweep::{self, Levels, SweepSpec};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The operations, in the order of [`properties::Proportions::normalized`]: the op kinds
/// the runner keeps a histogram of.
pub const OPS: [&str; 5] = ["read", "update", "insert", "scan", "read-modify-write"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YcsbParams {
    /// `threads`, `duration_s`, `warmup_s`, `cold_start`, decoded apart.
    #[serde(skip)]
    pub levels: Levels,
    /// A core workload by name (`a` … `f`, `workloada` … `workloadf`) or a YCSB workload
    /// file, relative to the study file.
    pub workload: String,
    /// `rate`, `start_rate`, `arrival`, `slo` (operations a second), decoded apart.
    #[serde(skip)]
    pub pace: crate::workload::pacing::Pace,
    /// The workload read: a built-in at decoding, a file once the study's place is known.
    #[serde(skip)]
    pub read: Option<Arc<Read>>,
}

/// A workload as read, with where it came from.
#[derive(Debug)]
pub struct Read {
    /// `builtin:workloada`, or the file as the study names it.
    pub origin: String,
    pub workload: Workload,
}

impl YcsbParams {
    fn workload(&self) -> Result<&Read, StepError> {
        self.read
            .as_deref()
            .ok_or_else(|| StepError::Check(format!("workload {} was not read", self.workload)))
    }
}

/// The records' shape is the dataset's (YCSB's defaults): a workload asking for another is
/// refused, naming the property.
fn check_shape(r: &Read) -> Result<(), String> {
    let w = &r.workload;
    let wrong = |what: String| {
        Err(format!(
            "{}: {what}: the ycsb dataset's records have YCSB's default shape ({} fields of {} bytes, hashed keys padded to {}, table {}); remove the property",
            r.origin,
            records::FIELDS,
            records::FIELD_LENGTH,
            records::ZERO_PADDING,
            records::TABLE
        ))
    };
    if w.field_count as usize != records::FIELDS {
        return wrong(format!("fieldcount = {}", w.field_count));
    }
    if w.field_length as usize != records::FIELD_LENGTH {
        return wrong(format!("fieldlength = {}", w.field_length));
    }
    if w.hashed_inserts != records::HASHED {
        return wrong("insertorder = ordered".into());
    }
    if w.zero_padding != records::ZERO_PADDING {
        return wrong(format!("zeropadding = {}", w.zero_padding));
    }
    if w.table != records::TABLE {
        return wrong(format!("table = {}", w.table));
    }
    Ok(())
}

impl crate::workload::kind::StepKind for YcsbParams {
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        let mut p: YcsbParams = crate::workload::pacing::decode_with(
            v,
            |v| crate::workload::sweep::decode(v, |p: &mut Self, levels| p.levels = levels),
            |p, pace| p.pace = pace,
        )?;
        if let Some(w) = properties::built_in(&p.workload) {
            p.read = Some(Arc::new(Read {
                origin: format!(
                    "builtin:{}",
                    if p.workload.len() == 1 {
                        format!("workload{}", p.workload)
                    } else {
                        p.workload.clone()
                    }
                ),
                workload: w,
            }));
        }
        Ok(p)
    }
    fn divides_clients() -> bool {
        true
    }
    fn is_sql(&self) -> bool {
        false
    }
    fn validate(&self) -> Result<(), DecodeError> {
        if self.workload.trim().is_empty() {
            return Err(DecodeError::at(
                KeyPath::root().key("workload"),
                format!(
                    "workload is empty: name a core workload ({}) or a YCSB workload file",
                    properties::built_in_names().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        self.pace.validate()?;
        self.levels.check()
    }
    fn levels(&self) -> Option<&Levels> {
        Some(&self.levels)
    }
    fn generator(&self) -> Option<crate::workload::kind::GeneratorNeed> {
        Some(crate::workload::kind::GeneratorNeed {
            generator: crate::dataset::Generator::Ycsb,
            why: "runs YCSB's operations on its usertable",
            fix: "generator = \"ycsb\"",
        })
    }
    fn read_beside(
        &mut self,
        beside: &crate::workload::kind::Beside<'_>,
    ) -> Result<(), crate::workload::kind::BesideError> {
        use crate::workload::kind::BesideError;
        let at = KeyPath::root().key("workload");
        if self.read.is_none() {
            let path = beside.base.join(&self.workload);
            let text = read_workload_file(&path).map_err(|e| {
                BesideError::At(
                    at.clone(),
                    format!(
                        "cannot read workload file {}: {e}; name a core workload ({}) or a YCSB workload file",
                        path.display(),
                        properties::built_in_names().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            let workload = properties::parse(&self.workload, &text)
                .map_err(|e| BesideError::At(at.clone(), e.to_string()))?;
            self.read = Some(Arc::new(Read {
                origin: self.workload.clone(),
                workload,
            }));
        }
        if let Some(r) = &self.read {
            check_shape(r).map_err(|m| BesideError::At(at, m))?;
        }
        Ok(())
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// The most a workload file may hold: YCSB's are under 4 KiB.
const MOST_WORKLOAD_BYTES: u64 = 1 << 20;

/// A workload file's text: a regular file of at most [`MOST_WORKLOAD_BYTES`] (a study may
/// name any path: a device or a huge file is refused, not read).
fn read_workload_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MOST_WORKLOAD_BYTES {
        return Err(std::io::Error::other(format!(
            "{} bytes, more than a workload file's {MOST_WORKLOAD_BYTES}",
            meta.len()
        )));
    }
    let mut text = String::new();
    file.take(MOST_WORKLOAD_BYTES).read_to_string(&mut text)?;
    Ok(text)
}

/// What every client of a step shares: the records that exist (loaded, then acknowledged
/// inserts) and the next key number an insert takes.
#[derive(Clone)]
struct Records {
    loaded: u64,
    next_insert: Arc<AtomicU64>,
    inserted: Arc<AtomicU64>,
}

impl Records {
    fn existing(&self) -> u64 {
        self.loaded + self.inserted.load(Ordering::Relaxed)
    }
}

/// One client's statements, each prepared once (only those its mix uses).
struct Statements {
    read_all: Option<StmtId>,
    read_one: Vec<StmtId>,
    update_all: Option<StmtId>,
    update_one: Vec<StmtId>,
    insert: Option<StmtId>,
    scan: Option<StmtId>,
}

fn prepare(
    session: &mut dyn Session,
    w: &Workload,
    dialect: crate::engine::Dialect,
) -> engine::Result<Statements> {
    let [read, update, insert, scan, rmw] = w.proportions.normalized().map(|p| p > 0.0);
    let reads = read || rmw;
    let updates = update || rmw;
    let t = records::TABLE;
    let fields: Vec<String> = (0..records::FIELDS).map(|f| format!("field{f}")).collect();
    let mut prep = |sql: String| session.prepare(&dialect.placeholders(&sql));
    let mut s = Statements {
        read_all: None,
        read_one: Vec::new(),
        update_all: None,
        update_one: Vec::new(),
        insert: None,
        scan: None,
    };
    if reads && w.read_all_fields {
        s.read_all = Some(prep(format!("SELECT * FROM {t} WHERE ycsb_key = ?"))?);
    } else if reads {
        for f in &fields {
            s.read_one
                .push(prep(format!("SELECT {f} FROM {t} WHERE ycsb_key = ?"))?);
        }
    }
    if updates && w.write_all_fields {
        let set: Vec<String> = fields.iter().map(|f| format!("{f} = ?")).collect();
        s.update_all = Some(prep(format!(
            "UPDATE {t} SET {} WHERE ycsb_key = ?",
            set.join(", ")
        ))?);
    } else if updates {
        for f in &fields {
            s.update_one
                .push(prep(format!("UPDATE {t} SET {f} = ? WHERE ycsb_key = ?"))?);
        }
    }
    if insert {
        let slots = ["?"; records::FIELDS + 1].join(", ");
        s.insert = Some(prep(format!(
            "INSERT INTO {t} (ycsb_key, {}) VALUES ({slots})",
            fields.join(", ")
        ))?);
    }
    if scan {
        s.scan = Some(prep(format!(
            "SELECT * FROM {t} WHERE ycsb_key >= ? ORDER BY ycsb_key LIMIT ?"
        ))?);
    }
    Ok(s)
}

/// Where a client's operations go: prepared statements on a SQL engine (YCSB's JDBC
/// binding's), or a document engine's session (its MongoDB binding's operations).
enum Target {
    Sql {
        session: Box<dyn Session>,
        stmts: Statements,
    },
    Doc {
        session: Box<dyn DocSession>,
        read_all: bool,
        write_all: bool,
    },
}

/// The fields' names, as documents and columns carry them.
const FIELD_NAMES: [&str; records::FIELDS] = [
    "field0", "field1", "field2", "field3", "field4", "field5", "field6", "field7", "field8",
    "field9",
];

/// One client: where its operations go, its random stream, choosers and reused values.
struct YcsbWorker {
    target: Target,
    rng: SplitMix64,
    /// Cumulative shares of [`OPS`].
    cumulative: [f64; 5],
    keys: KeyChooser,
    scan_length: ScanLength,
    records: Records,
    /// `[key, field0 … field9]` for an insert, `[field0 … field9, key]` for a full update,
    /// reused.
    values: Vec<Value>,
    /// `[value, key]` of a one-field update; `[key]` of a read; `[key, n]` of a scan.
    pair: [Value; 2],
    one: [Value; 1],
    scan: [Value; 2],
}

/// Set a reused text value to `f` of its string, without allocating once it has grown.
fn set_text(v: &mut Value, f: impl FnOnce(&mut String)) {
    if !matches!(v, Value::Text(_)) {
        *v = Value::Text(String::with_capacity(128));
    }
    if let Value::Text(s) = v {
        s.clear();
        f(s);
    }
}

/// A reused text value's text.
fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

fn key_text(s: &mut String, n: u64) {
    let n = if records::HASHED {
        records::fnv_hash64(n)
    } else {
        n
    };
    let _ = write!(s, "user{n:0width$}", width = records::ZERO_PADDING);
}

fn field_text(rng: &mut SplitMix64, s: &mut String) {
    records::fill_field_text(rng, records::FIELD_LENGTH, s);
}

impl YcsbWorker {
    fn choose_op(&mut self) -> usize {
        let u = self.rng.unit();
        self.cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(OPS.len() - 1)
    }

    fn read(&mut self, key: u64) -> engine::Result<u64> {
        set_text(&mut self.one[0], |s| key_text(s, key));
        let field = self.rng.below(records::FIELDS as u32) as usize;
        match &mut self.target {
            Target::Sql { session, stmts } => {
                let stmt = stmts.read_all.unwrap_or_else(|| stmts.read_one[field]);
                session.run(stmt, &self.one)
            }
            Target::Doc {
                session, read_all, ..
            } => session.read_by_key(
                records::TABLE,
                text(&self.one[0]),
                (!*read_all).then_some(FIELD_NAMES[field]),
            ),
        }
    }

    fn update(&mut self, key: u64) -> engine::Result<u64> {
        let field = self.rng.below(records::FIELDS as u32) as usize;
        let all = match &self.target {
            Target::Sql { stmts, .. } => stmts.update_all.is_some(),
            Target::Doc { write_all, .. } => *write_all,
        };
        if all {
            for v in self.values[..records::FIELDS].iter_mut() {
                set_text(v, |s| field_text(&mut self.rng, s));
            }
            set_text(&mut self.values[records::FIELDS], |s| key_text(s, key));
        } else {
            set_text(&mut self.pair[0], |s| field_text(&mut self.rng, s));
            set_text(&mut self.pair[1], |s| key_text(s, key));
        }
        match &mut self.target {
            Target::Sql { session, stmts } => match stmts.update_all {
                Some(stmt) => session.run(stmt, &self.values),
                None => session.run(stmts.update_one[field], &self.pair),
            },
            Target::Doc { session, .. } if all => {
                let fields: [(&str, &str); records::FIELDS] =
                    std::array::from_fn(|i| (FIELD_NAMES[i], text(&self.values[i])));
                session.update_by_key(records::TABLE, text(&self.values[records::FIELDS]), &fields)
            }
            Target::Doc { session, .. } => session.update_by_key(
                records::TABLE,
                text(&self.pair[1]),
                &[(FIELD_NAMES[field], text(&self.pair[0]))],
            ),
        }
    }

    fn insert(&mut self) -> engine::Result<u64> {
        let n = self.records.loaded + self.records.next_insert.fetch_add(1, Ordering::Relaxed);
        set_text(&mut self.values[0], |s| key_text(s, n));
        for v in self.values[1..].iter_mut() {
            set_text(v, |s| field_text(&mut self.rng, s));
        }
        let r = match &mut self.target {
            Target::Sql { session, stmts } => match stmts.insert {
                Some(stmt) => session.run(stmt, &self.values),
                None => return Ok(0),
            },
            Target::Doc { session, .. } => {
                let fields: [(&str, &str); records::FIELDS] =
                    std::array::from_fn(|i| (FIELD_NAMES[i], text(&self.values[i + 1])));
                session.insert_doc(records::TABLE, text(&self.values[0]), &fields)
            }
        };
        if r.is_ok() {
            self.records.inserted.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    fn scan(&mut self, key: u64) -> engine::Result<u64> {
        set_text(&mut self.scan[0], |s| key_text(s, key));
        let n = self.scan_length.next(&mut self.rng);
        self.scan[1] = Value::Int(n as i64);
        match &mut self.target {
            Target::Sql { session, stmts } => match stmts.scan {
                Some(stmt) => session.run(stmt, &self.scan),
                None => Ok(0),
            },
            Target::Doc { session, .. } => {
                session.scan_from(records::TABLE, text(&self.scan[0]), n)
            }
        }
    }
}

impl Worker for YcsbWorker {
    /// Rows read or written.
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let op = self.choose_op();
        let existing = self.records.existing();
        let r = match op {
            0 => {
                let k = self.keys.next(&mut self.rng, existing);
                self.read(k)
            }
            1 => {
                let k = self.keys.next(&mut self.rng, existing);
                self.update(k)
            }
            2 => self.insert(),
            3 => {
                let k = self.keys.next(&mut self.rng, existing);
                self.scan(k)
            }
            _ => {
                // YCSB's read-modify-write: a read, then an update of the same record,
                // timed as one operation.
                let k = self.keys.next(&mut self.rng, existing);
                match self.read(k) {
                    Ok(read) => self.update(k).map(|w| read + w),
                    e => e,
                }
            }
        };
        (op, r)
    }
}

fn cumulative(w: &Workload) -> [f64; 5] {
    let mut acc = 0.0;
    w.proportions.normalized().map(|p| {
        acc += p;
        acc
    })
}

fn worker(
    engine: &dyn engine::Engine,
    w: &Workload,
    records: Records,
    seed: u64,
) -> engine::Result<Box<dyn Worker>> {
    let target = match engine.documents() {
        Some(docs) => Target::Doc {
            session: docs.session()?,
            read_all: w.read_all_fields,
            write_all: w.write_all_fields,
        },
        None => {
            let mut session = engine.connect()?;
            let stmts = prepare(session.as_mut(), w, engine.dialect())?;
            Target::Sql { session, stmts }
        }
    };
    let text = || Value::Text(String::with_capacity(128));
    Ok(Box::new(YcsbWorker {
        target,
        rng: SplitMix64(seed),
        cumulative: cumulative(w),
        keys: KeyChooser::new(w.request_distribution, records.existing()),
        scan_length: match w.scan_length_distribution {
            ScanLengthDistribution::Uniform => ScanLength::Uniform {
                max: w.max_scan_length,
            },
            ScanLengthDistribution::Zipfian => {
                ScanLength::Zipfian(Zipfian::new(w.max_scan_length, ZIPFIAN_CONSTANT))
            }
        },
        records,
        values: (0..=records::FIELDS).map(|_| text()).collect(),
        pair: [text(), text()],
        one: [text()],
        scan: [text(), Value::Int(0)],
    }))
}

/// One operation's figures at a level, named as every step kind's per-operation items are
/// (a shard merge adds them up by name and takes each one's latency and share again).
#[derive(Debug, Clone, Serialize)]
struct OpLevel {
    name: &'static str,
    count: u64,
    /// Its share of the level's operations, percent.
    share_pct: f64,
    latency_us: Option<Latency>,
}

/// A level's figures.
#[derive(Debug, Clone, Serialize)]
struct Level {
    threads: u64,
    ops_per_s: f64,
    ops: u64,
    errors: u64,
    latency_us: Option<Latency>,
    per_op: Vec<OpLevel>,
    measured_s: f64,
    dbduel_cpu_us_per_op: f64,
}

impl Level {
    fn of(l: &sweep::LevelRun) -> Level {
        let total: u64 = l.out.per_op.iter().map(|h| h.len()).sum();
        let per_op = OPS
            .iter()
            .zip(&l.out.per_op)
            .filter(|(_, h)| !h.is_empty())
            .map(|(&name, h)| OpLevel {
                name,
                count: h.len(),
                share_pct: h.len() as f64 * 100.0 / total.max(1) as f64,
                latency_us: Latency::of(h),
            })
            .collect();
        Level {
            threads: l.threads,
            ops_per_s: l.rate(),
            ops: l.out.ops,
            errors: l.out.error_count(),
            latency_us: l.latency(),
            per_op,
            measured_s: l.out.measured_s,
            dbduel_cpu_us_per_op: l.out.cpu_us_per_op(),
        }
    }
}

pub fn run(p: &YcsbParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let read = p.workload()?;
    let w = &read.workload;
    let engine = ctx.engine;
    let names: Vec<String> = OPS.iter().map(|s| s.to_string()).collect();
    let start = crate::workload::restart::SweepStart::begin(p.levels.cold_start, ctx)?;
    let mut notes: Vec<String> = start.as_ref().map(|s| s.note("step")).into_iter().collect();
    // The records there are now: the dataset's, and what an earlier step inserted (counted
    // before the clock; an insert takes the next number, as YCSB's `insertstart` would).
    let at_start = match engine.documents() {
        Some(docs) => docs.count(records::TABLE),
        None => engine
            .connect()
            .and_then(|mut s| s.query_i64(&format!("SELECT COUNT(*) FROM {}", records::TABLE)))
            .map(|n| u64::try_from(n).unwrap_or(0)),
    }
    .map_err(|e| StepError::Check(format!("counting the records of {}: {e}", records::TABLE)))?;
    let records = Records {
        loaded: at_start,
        next_insert: Arc::new(AtomicU64::new(0)),
        inserted: Arc::new(AtomicU64::new(0)),
    };
    let what = format!("YCSB {} operations", read.origin);
    let spec = SweepSpec {
        levels: p.levels.threads.levels(),
        duration_s: p.levels.duration_s,
        warmup_s: p.levels.warmup_s,
        names: &names,
        what: &what,
        pacing: p.pace.pacing(1.0),
    };
    let make = |li: usize, client: usize| {
        let seed = crate::dataset::rng::mix64(0x0079_c5b0 ^ ((li as u64) << 32) ^ client as u64);
        worker(engine, w, records.clone(), seed)
    };
    let title = ctx.title(&format!("YCSB {}", read.origin));
    if let Some(slo) = &p.pace.slo {
        return sweep::search(ctx, &spec, &p.pace, slo, 1.0, title, "operations/s", make);
    }
    let swept = sweep::run(ctx, &spec, make)?;
    let levels: Vec<Level> = swept.levels.iter().map(Level::of).collect();
    let best = levels[sweep::best(&swept.levels)].clone();
    let inserted = records.inserted.load(Ordering::Relaxed);
    let mut s = summary(title);
    s.elapsed_s = Some(levels.iter().map(|l| l.measured_s).sum());
    s.ops_per_s = Some(best.ops_per_s);
    s.latency_us = best.latency_us;
    s.rows = Some(levels.iter().map(|l| l.ops).sum());
    s.errors = Some(levels.iter().map(|l| l.errors).sum());
    s.metrics = figures(&levels, &best, inserted);
    notes.insert(
        0,
        first_note(p, read, ctx.dataset_rows, records.loaded, &levels, inserted),
    );
    notes.extend(
        sweep::pace_notes(&p.pace, 1.0, &spec, &swept.levels, "operations/s")
            .into_iter()
            .skip(1),
    );
    if engine.embedded() {
        notes.push("dbduel's CPU per operation includes the embedded engine's own work".into());
    }
    s.note = Some(notes.join("; "));
    let [pr, pu, pi, ps, prmw] = w.proportions.normalized();
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "workload": read.origin,
            "proportions": { "read": pr, "update": pu, "insert": pi, "scan": ps, "read-modify-write": prmw },
            "request_distribution": format!("{:?}", w.request_distribution),
            "read_all_fields": w.read_all_fields,
            "write_all_fields": w.write_all_fields,
            "max_scan_length": w.max_scan_length,
            "records_loaded": ctx.dataset_rows,
            "records_at_start": records.loaded,
            "records_inserted": inserted,
            "duration_s": p.levels.duration_s,
            "warmup_s": p.levels.warmup_s,
            "pacing": p.pace.details(),
            "levels": levels,
            "best": best,
        }),
        seconds: swept.seconds,
        interrupted: swept.interrupted,
    })
}

/// The note's first part: the workload, its proportions beside the mix that ran, and what
/// of the file a study's own sizes replaced.
fn first_note(
    p: &YcsbParams,
    read: &Read,
    loaded: u64,
    at_start: u64,
    levels: &[Level],
    inserted: u64,
) -> String {
    let w = &read.workload;
    let wanted = w.proportions.normalized();
    let mut ran = [0u64; 5];
    for l in levels {
        for o in &l.per_op {
            if let Some(i) = OPS.iter().position(|&n| n == o.name) {
                ran[i] += o.count;
            }
        }
    }
    let total: u64 = ran.iter().sum();
    let mix: Vec<String> = OPS
        .iter()
        .enumerate()
        .filter(|&(i, _)| wanted[i] > 0.0 || ran[i] > 0)
        .map(|(i, op)| {
            format!(
                "{op} {:.1}% (file {:.1}%)",
                100.0 * ran[i] as f64 / total.max(1) as f64,
                100.0 * wanted[i]
            )
        })
        .collect();
    let mut parts = vec![
        format!(
            "workload {}: {} requests over {at_start} records{}{}",
            read.origin,
            distribution_name(w),
            if at_start != loaded {
                format!(
                    " (the dataset's {loaded} and {} an earlier step inserted)",
                    at_start.saturating_sub(loaded)
                )
            } else {
                String::new()
            },
            if inserted > 0 {
                format!(" and the {inserted} the run inserted")
            } else {
                String::new()
            }
        ),
        format!("mix run: {}", mix.join(", ")),
    ];
    if let Some(n) = w.record_count.filter(|&n| n != loaded) {
        parts.push(format!(
            "the file's recordcount = {n} is the dataset's {loaded} records here (dataset.rows), as YCSB's -p recordcount= overrides it"
        ));
    }
    if let Some(n) = w.operation_count {
        parts.push(format!(
            "the file's operationcount = {n} is {} s a level here (duration_s)",
            p.levels.duration_s
        ));
    }
    parts.push(if p.pace.is_open() {
        p.pace.loop_note("operations/s")
    } else {
        "closed loop, one operation in flight per client".to_string()
    });
    parts.join("; ")
}

fn distribution_name(w: &Workload) -> String {
    use super::keys::RequestDistribution as D;
    match w.request_distribution {
        D::Uniform => "uniform".into(),
        D::Zipfian => "zipfian (0.99, scrambled)".into(),
        D::Latest => "latest".into(),
        D::Hotspot {
            data_fraction,
            op_fraction,
        } => format!(
            "hotspot ({:.0}% of operations on {:.0}% of records)",
            op_fraction * 100.0,
            data_fraction * 100.0
        ),
    }
}

/// The step's figures: the best level's rate first, then each level's rate and latency,
/// and each operation's latency at every percentile (merged from the clients' histograms of
/// that operation when shards are merged).
fn figures(levels: &[Level], best: &Level, inserted: u64) -> Vec<Metric> {
    let mut m = Vec::from(sweep::best_figures(
        ("best_ops_per_s", "best operations/s", "operations"),
        "ops_t",
        best.ops_per_s,
        best.threads,
    ));
    for l in levels {
        let t = l.threads;
        m.push(Metric::new(
            &format!("ops_t{t}"),
            &format!("operations/s @{t}"),
            l.ops_per_s,
            Unit::PerSecond,
            Better::Higher,
        ));
        if let Some(lat) = &l.latency_us {
            m.extend(sweep::latency_figures(t, lat, &["p50", "p99"]));
        }
        for o in &l.per_op {
            let Some(lat) = &o.latency_us else { continue };
            for (key, v, q) in [
                ("p50", lat.p50, 0.5),
                ("p95", lat.p95, 0.95),
                ("p99", lat.p99, 0.99),
                ("p999", lat.p999, 0.999),
                ("max", lat.max, 1.0),
            ] {
                m.push(
                    Metric::new(
                        &format!("{}_{key}_us_t{t}", o.name.replace('-', "_")),
                        &format!("{} {key} @{t}", o.name),
                        v as f64,
                        Unit::Micros,
                        Better::Lower,
                    )
                    .quantile(q, Some(t), &[o.name]),
                );
            }
        }
    }
    m.push(Metric::new(
        "inserted",
        "records inserted",
        inserted as f64,
        Unit::Count,
        Better::None,
    ));
    m.push(Metric::new(
        "cpu_us_per_op",
        "dbduel CPU/operation",
        best.dbduel_cpu_us_per_op,
        Unit::Micros,
        Better::None,
    ));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_follow_the_workload_s_proportions() {
        let w = properties::built_in("a").unwrap();
        let c = cumulative(&w);
        assert_eq!(c, [0.5, 1.0, 1.0, 1.0, 1.0]);
        let f = properties::built_in("f").unwrap();
        assert_eq!(cumulative(&f), [0.5, 0.5, 0.5, 0.5, 1.0]);
    }

    #[test]
    fn keys_are_written_as_ycsb_names_them() {
        let mut s = String::new();
        key_text(&mut s, 0);
        assert_eq!(s, "user6284781860667377211");
        assert_eq!(
            s,
            records::key_name(0, records::HASHED, records::ZERO_PADDING)
        );
        let mut rng = SplitMix64(1);
        let mut f = String::new();
        field_text(&mut rng, &mut f);
        assert_eq!(f.len(), records::FIELD_LENGTH);
        assert!(f.is_ascii());
    }

    #[test]
    fn a_workload_path_that_is_no_regular_file_is_refused_unread() {
        let e = read_workload_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; (MOST_WORKLOAD_BYTES + 1) as usize]).unwrap();
        let e = read_workload_file(&big).unwrap_err();
        assert!(e.to_string().contains("more than a workload file's"), "{e}");
    }

    #[test]
    fn a_workload_of_another_record_shape_is_refused_naming_the_property() {
        let r = Read {
            origin: "w".into(),
            workload: properties::parse("w", "readproportion=1\nfieldcount=5\n").unwrap(),
        };
        let e = check_shape(&r).unwrap_err();
        assert!(e.contains("fieldcount = 5"), "{e}");
        let ok = Read {
            origin: "w".into(),
            workload: properties::built_in("b").unwrap(),
        };
        assert!(check_shape(&ok).is_ok());
    }
}
