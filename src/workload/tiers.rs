//! The storage study's two workloads over the `tiers40` tables, as the 2010 CUBRID-vs-MySQL
//! post ran them: `insert-trickle` — each client inserts single rows into a table of its own,
//! one row a transaction — and `select-triple` — one transaction is three SELECTs of one row's
//! keys (by the primary key, by the unique key, by the non-unique index), keys drawn from a
//! range that fits the cache (CPU-bound) or from the whole table (I/O-bound). Both report
//! transactions a second, latency, and the data device's reads, writes, IOPS and busy share
//! each second, as the post's nmon screens showed them.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::kind::{GeneratorNeed, TableNeed};
use super::lookups::Keys;
use super::oltp::placeholders;
use super::sweep::{self, LevelRun, Levels, SweepSpec, Threads};
use crate::dataset::rng::SplitMix64;
use crate::dataset::tiers40::{self, TIERS40_COLUMNS, Tiers40};
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::{self, Session, StmtId, Value};
use crate::results::{Better, Metric, Role, StepSummary, Unit};
use crate::runner::Worker;
use crate::sysmon::DeviceIo;
use serde::{Deserialize, Serialize};

fn d_small() -> f64 {
    0.05
}

/// `insert-trickle`: single-row inserts, one a transaction, each client into its own table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrickleParams {
    /// Clients, each with a table of its own (at most the dataset's tables).
    pub clients: u64,
    pub duration_s: u64,
    /// Seconds at the start left out of the figures.
    #[serde(default)]
    pub warmup_s: u64,
    /// `rate`, `start_rate`, `arrival`, `slo` (inserts a second), decoded apart (see
    /// [`super::pacing`]).
    #[serde(skip)]
    pub pace: super::pacing::Pace,
}

impl TrickleParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        if self.clients == 0 {
            return Err(DecodeError::at(
                KeyPath::root().key("clients"),
                "clients must be at least 1 (each inserts into a table of its own)",
            ));
        }
        self.pace.validate()?;
        let threads = Threads::One(self.clients);
        super::sweep::check_levels(&threads, self.duration_s, self.warmup_s)
    }
}

/// `select-triple`: three SELECTs a transaction over one row's keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TripleParams {
    /// `threads` (client c reads table c mod tables), `duration_s`, `warmup_s` and
    /// `cold_start`, decoded apart (see [`super::sweep::Levels`]).
    #[serde(skip)]
    pub levels: Levels,
    /// `small-random` (the first `small_fraction` of each table: CPU-bound when it fits the
    /// cache) or `full-random` (the whole table: I/O-bound when the cache is far smaller).
    #[serde(deserialize_with = "by_name")]
    pub keys: Keys,
    #[serde(default = "d_small")]
    pub small_fraction: f64,
    /// `rate`, `start_rate`, `arrival`, `slo` (transactions a second), decoded apart (see
    /// [`super::pacing`]).
    #[serde(skip)]
    pub pace: super::pacing::Pace,
}

impl TripleParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if self.keys == Keys::Permutation {
            return at(
                "keys",
                "select-triple draws keys at random: use \"small-random\" or \"full-random\""
                    .into(),
            );
        }
        if !(self.small_fraction > 0.0 && self.small_fraction <= 1.0) {
            return at(
                "small_fraction",
                "small_fraction must be above 0 and at most 1 (0.05: the first 5 % of each table)"
                    .into(),
            );
        }
        self.pace.validate()?;
        self.levels.check()
    }
}

/// The dataset as the generator that made it, or why these steps cannot run on it.
fn dataset(ctx: &StepCtx<'_>) -> Result<Tiers40, StepError> {
    if ctx.tables.is_empty() || ctx.tables.iter().any(|t| t.columns != TIERS40_COLUMNS) {
        return Err(StepError::Check(
            "this step runs on the tiers40 dataset (dataset.generator = \"tiers40\")".into(),
        ));
    }
    Ok(Tiers40 {
        seed: ctx.dataset_seed,
        rows: ctx.dataset_rows,
        tables: ctx.tables.len() as u64,
    })
}

/// A generated line's fields as statement parameters, for `columns` of the schema.
fn params_of(line: &[u8], pick: &[usize], out: &mut Vec<Value>) {
    out.clear();
    let fields: Vec<Option<&str>> = tiers40::fields(line).collect();
    for &i in pick {
        out.push(match fields[i] {
            None => Value::Null,
            Some(v) if TIERS40_COLUMNS[i].ty.is_integer() => {
                Value::Int(v.parse().expect("generated integers parse"))
            }
            Some(v) => Value::Text(v.to_string()),
        });
    }
}

struct InsertWorker {
    session: Box<dyn Session>,
    stmt: StmtId,
    data: Tiers40,
    table: u64,
    next: u64,
    line: Vec<u8>,
    params: Vec<Value>,
    all: Vec<usize>,
}

impl Worker for InsertWorker {
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        self.line.clear();
        self.data.row(self.table, self.next, &mut self.line);
        params_of(&self.line, &self.all, &mut self.params);
        // On to the next row either way: an insert that failed may still have committed (a
        // timeout, a lost connection), and retrying its key would fail every insert after it.
        self.next += 1;
        (0, self.session.run(self.stmt, &self.params))
    }
}

/// Row number `n` where table `name` goes on: past the last row it holds — the load's
/// (all the dataset's rows, or the first ones of a `load` with `rows`) and any earlier
/// trickle's — read from the primary key's end: row n is id n / 8, seq n % 8 + 1.
fn next_row(s: &mut dyn Session, name: &str, dialect: engine::Dialect) -> engine::Result<u64> {
    let mut out = Vec::new();
    let last_id = s.prepare(&format!("SELECT MAX(id) FROM {name}"))?;
    s.run_rows(last_id, &[], &mut out)?;
    let id = match out.first() {
        Some(engine::Value::Text(id)) => id.clone(),
        // an empty table goes on from its first row
        Some(engine::Value::Null) | None => return Ok(0),
        Some(v) => {
            return Err(engine::EngineError::new(
                "client",
                format!("{name}: MAX(id) read as {v:?}, not an id"),
            ));
        }
    };
    let number = id
        .strip_prefix('u')
        .and_then(|d| d.parse::<u64>().ok())
        .ok_or_else(|| {
            engine::EngineError::new(
                "client",
                format!("{name}: the last id {id:?} is not one the tiers40 generator makes"),
            )
        })?;
    let last_seq = s.prepare(&placeholders(
        &format!("SELECT MAX(seq) FROM {name} WHERE id = ?"),
        dialect,
    ))?;
    s.run_rows(last_seq, &[engine::Value::Text(id)], &mut out)?;
    let seq = out.first().map_or(Ok(0), engine::Value::as_i64)?.max(0) as u64;
    Ok(number * tiers40::ROWS_PER_ID + seq)
}

impl super::kind::StepKind for TrickleParams {
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        super::pacing::decode_with(v, crate::decode::decode, |p: &mut Self, pace| p.pace = pace)
    }
    fn validate(&self) -> Result<(), DecodeError> {
        TrickleParams::validate(self)
    }
    fn clients(&self) -> u64 {
        self.clients
    }
    fn generator(&self) -> Option<GeneratorNeed> {
        Some(TIERS40)
    }
    fn needs(&self, tables: &[String]) -> Option<TableNeed> {
        Some(TableNeed::all("inserts rows into", tables))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run_trickle(self, ctx)
    }
}

impl super::kind::StepKind for TripleParams {
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        super::pacing::decode_with(
            v,
            |v| super::sweep::decode(v, |p: &mut Self, levels| p.levels = levels),
            |p, pace| p.pace = pace,
        )
    }
    fn validate(&self) -> Result<(), DecodeError> {
        TripleParams::validate(self)
    }
    fn levels(&self) -> Option<&Levels> {
        Some(&self.levels)
    }
    fn generator(&self) -> Option<GeneratorNeed> {
        Some(TIERS40)
    }
    fn needs(&self, tables: &[String]) -> Option<TableNeed> {
        Some(TableNeed::all("reads rows of", tables))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run_triple(self, ctx)
    }
}

/// The storage study's tables, which both its steps need.
const TIERS40: GeneratorNeed = GeneratorNeed {
    generator: crate::dataset::Generator::Tiers40,
    why: "works on the storage study's 40-table schema",
    fix: "generator = \"tiers40\"",
};

pub fn run_trickle(p: &TrickleParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let data = dataset(ctx)?;
    let engine = ctx.engine;
    let clients = p.clients;
    if clients > data.tables {
        return Err(StepError::Check(format!(
            "{clients} clients but the dataset has {} tables; each client inserts into a table of its own: use at most {} clients or more tables",
            data.tables, data.tables
        )));
    }
    let cols: Vec<&str> = TIERS40_COLUMNS.iter().map(|c| c.name).collect();
    let marks = vec!["?"; cols.len()].join(", ");
    let mut starts = Vec::new();
    {
        let mut s = engine.connect()?;
        for t in &ctx.tables[..clients as usize] {
            starts.push(next_row(s.as_mut(), &t.name, engine.dialect())?);
        }
    }
    let names = vec!["insert".to_string()];
    let spec = SweepSpec {
        levels: vec![clients],
        duration_s: p.duration_s,
        warmup_s: p.warmup_s,
        names: &names,
        what: "inserts",
        pacing: p.pace.pacing(1.0),
    };
    let make = |_: usize, client: usize| {
        let table = &ctx.tables[client];
        let mut session = engine.connect()?;
        let sql = placeholders(
            &format!(
                "INSERT INTO {} ({}) VALUES ({marks})",
                table.name,
                cols.join(", ")
            ),
            engine.dialect(),
        );
        let stmt = session.prepare(&sql)?;
        Ok(Box::new(InsertWorker {
            session,
            stmt,
            data,
            table: client as u64,
            next: starts[client],
            line: Vec::with_capacity(1024),
            params: Vec::with_capacity(cols.len()),
            all: (0..cols.len()).collect(),
        }) as Box<dyn Worker>)
    };
    let title = ctx.title("single-row inserts, each client its own table");
    if let Some(slo) = &p.pace.slo {
        return sweep::search(ctx, &spec, &p.pace, slo, 1.0, title, "inserts/s", make);
    }
    let swept = sweep::run(ctx, &spec, make)?;
    let inserted: u64 = swept.levels.iter().map(|l| l.out.ops_all).sum();
    let mut s = summary(title);
    let first = starts.iter().min().copied().unwrap_or(0);
    let mut note = vec![format!(
        "{clients} clients, each inserting one row a transaction (autocommit) into its own table after the rows it held ({first} or more); {inserted} rows inserted"
    )];
    note.extend(sweep::pace_notes(
        &p.pace,
        1.0,
        &spec,
        &swept.levels,
        "inserts/s",
    ));
    let mut details = fill(&mut s, &swept, note.join("; "), ctx.engine.embedded());
    details["pacing"] = p.pace.details();
    details["rows_before"] = serde_json::json!(starts);
    Ok(StepOutput {
        summary: s,
        details,
        seconds: swept.seconds,
        interrupted: swept.interrupted,
    })
}

/// The three statements of a triple, prepared on one session for one table.
struct TripleWorker {
    session: Box<dyn Session>,
    stmts: [StmtId; 3],
    data: Tiers40,
    table: u64,
    range: u64,
    rng: SplitMix64,
    line: Vec<u8>,
    params: Vec<Value>,
}

/// Columns each statement binds: (id, seq); (id, col3, col4, col5); (id).
const BINDS: [&[usize]; 3] = [&[0, 1], &[0, 2, 3, 4], &[0]];

impl Worker for TripleWorker {
    /// Rows the primary-key lookup found: 1, or 0 for a miss.
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let n = self.rng.below_u64(self.range);
        self.line.clear();
        self.data.row(self.table, n, &mut self.line);
        let mut found = 0;
        for (i, &stmt) in self.stmts.iter().enumerate() {
            params_of(&self.line, BINDS[i], &mut self.params);
            match self.session.run(stmt, &self.params) {
                Ok(rows) if i == 0 => found = rows,
                Ok(_) => {}
                Err(e) => return (0, Err(e)),
            }
        }
        (0, Ok(found))
    }
}

pub fn run_triple(p: &TripleParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let data = dataset(ctx)?;
    let engine = ctx.engine;
    let range = match p.keys {
        Keys::SmallRandom => ((data.rows as f64 * p.small_fraction) as u64).max(1),
        _ => data.rows.max(1),
    };
    let start = super::restart::SweepStart::begin(p.levels.cold_start, ctx)?;
    let names = vec!["transaction".to_string()];
    let spec = SweepSpec {
        levels: p.levels.threads.levels(),
        duration_s: p.levels.duration_s,
        warmup_s: p.levels.warmup_s,
        names: &names,
        what: "transactions",
        pacing: p.pace.pacing(1.0),
    };
    let make = |li: usize, client: usize| {
        let table = client as u64 % data.tables;
        let name = &ctx.tables[table as usize].name;
        let mut session = engine.connect()?;
        let mut stmts = [StmtId(0); 3];
        for (slot, sql) in stmts.iter_mut().zip([
            format!("SELECT * FROM {name} WHERE id = ? AND seq = ?"),
            format!("SELECT * FROM {name} WHERE id = ? AND col3 = ? AND col4 = ? AND col5 = ?"),
            format!("SELECT * FROM {name} WHERE id = ? ORDER BY col9 DESC LIMIT 5"),
        ]) {
            *slot = session.prepare(&placeholders(&sql, engine.dialect()))?;
        }
        Ok(Box::new(TripleWorker {
            session,
            stmts,
            data,
            table,
            range,
            rng: SplitMix64::stream(0x7472_6970 ^ li as u64, client as u64),
            line: Vec::with_capacity(1024),
            params: Vec::with_capacity(4),
        }) as Box<dyn Worker>)
    };
    let title = ctx.title(&format!(
        "three SELECTs a transaction, {}",
        keys_name(p.keys)
    ));
    if let Some(slo) = &p.pace.slo {
        return sweep::search(ctx, &spec, &p.pace, slo, 1.0, title, "transactions/s", make);
    }
    let swept = sweep::run(ctx, &spec, make)?;
    let misses: u64 = swept
        .levels
        .iter()
        .map(|l| l.out.ops.saturating_sub(l.out.rows))
        .sum();
    let mut s = summary(title);
    let mut note = vec![format!(
        "a transaction is three autocommitted SELECTs of one row (by the primary key, the unique key and the non-unique index), rows drawn uniformly from the first {range} of each table's {} rows; client c reads table c mod {}",
        data.rows, data.tables
    )];
    if let Some(st) = &start {
        note.push(st.note("step"));
    }
    if misses > 0 {
        note.push(format!("{misses} primary-key lookups found no row"));
    }
    note.extend(sweep::pace_notes(
        &p.pace,
        1.0,
        &spec,
        &swept.levels,
        "transactions/s",
    ));
    let mut details = fill(&mut s, &swept, note.join("; "), ctx.engine.embedded());
    details["pacing"] = p.pace.details();
    details["keys"] = serde_json::json!(p.keys);
    details["key_range"] = serde_json::json!(range);
    details["misses"] = serde_json::json!(misses);
    if let Some(st) = &start {
        details["start"] = st.details();
    }
    Ok(StepOutput {
        summary: s,
        details,
        seconds: swept.seconds,
        interrupted: swept.interrupted,
    })
}

fn keys_name(k: Keys) -> &'static str {
    match k {
        Keys::SmallRandom => "small random (CPU-bound)",
        _ => "full random (I/O-bound)",
    }
}

/// A level's figures, for the step's JSON.
#[derive(Debug, Clone, Serialize)]
struct Level {
    threads: u64,
    tps: f64,
    transactions: u64,
    errors: u64,
    latency_us: Option<crate::metrics::Latency>,
    measured_s: f64,
    disk: Option<DeviceIo>,
    dbduel_cpu_us_per_tx: f64,
}

/// Fill the summary from the sweep (the best level leads) and return the step's JSON.
fn fill(
    s: &mut StepSummary,
    swept: &sweep::Sweep,
    mut note: String,
    embedded: bool,
) -> serde_json::Value {
    let levels: Vec<Level> = swept.levels.iter().map(level).collect();
    let best = &levels[sweep::best(&swept.levels)];
    s.elapsed_s = Some(levels.iter().map(|l| l.measured_s).sum());
    s.ops_per_s = Some(best.tps);
    s.latency_us = best.latency_us;
    s.rows = Some(levels.iter().map(|l| l.transactions).sum());
    s.errors = Some(levels.iter().map(|l| l.errors).sum());
    s.metrics = figures(&levels, best);
    if let Some(d) = &best.disk {
        note.push_str(&format!(
            "; at {} clients the data device ({}) read {:.1} MB/s in {:.0} IOPS and wrote {:.1} MB/s in {:.0} IOPS, busy {:.0}% of the time",
            best.threads,
            d.name,
            d.read_bytes_per_s / 1e6,
            d.read_iops,
            d.write_bytes_per_s / 1e6,
            d.write_iops,
            d.busy_pct
        ));
    }
    if embedded {
        note.push_str("; dbduel's CPU per transaction includes the embedded engine's own work");
    }
    s.note = Some(note);
    serde_json::json!({
        "levels": levels,
        "best": best,
        "disk_seconds": swept.disk_seconds(),
    })
}

fn level(l: &LevelRun) -> Level {
    Level {
        threads: l.threads,
        tps: l.rate(),
        transactions: l.out.ops,
        errors: l.out.error_count(),
        latency_us: l.latency(),
        measured_s: l.out.measured_s,
        disk: l.disk_mean(),
        dbduel_cpu_us_per_tx: l.out.cpu_us_per_op(),
    }
}

/// The best level's TPS first (reports lead with it), then each level's TPS, latency and
/// device figures.
fn figures(levels: &[Level], best: &Level) -> Vec<Metric> {
    let mut m = vec![
        Metric::new("tps", "TPS", best.tps, Unit::PerSecond, Better::Higher).with_role(
            Role::Lead {
                counts: "transactions".into(),
            },
        ),
        Metric::new(
            "best_threads",
            "at clients",
            best.threads as f64,
            Unit::Count,
            Better::None,
        ),
    ];
    for l in levels {
        let t = l.threads;
        m.push(
            Metric::new(
                &format!("tps_t{t}"),
                &format!("TPS @{t}"),
                l.tps,
                Unit::PerSecond,
                Better::Higher,
            )
            .with_role(Role::Rate),
        );
        if let Some(lat) = &l.latency_us {
            m.extend(sweep::latency_figures(t, lat, &["p50", "p99", "max"]));
        }
        if let Some(d) = &l.disk {
            m.extend(sweep::disk_figures(t, d, true));
        }
    }
    m.push(Metric::new(
        "cpu_us_per_tx",
        "dbduel CPU/tx",
        best.dbduel_cpu_us_per_tx,
        Unit::Micros,
        Better::None,
    ));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_with_their_names() {
        let p: TripleParams = crate::workload::kind::params_of(
            "keys = \"permutation\"\nthreads = 4\nduration_s = 5\n",
        )
        .unwrap();
        let e = format!("{:?}", p.validate().unwrap_err());
        assert!(e.contains("keys") && e.contains("full-random"), "{e}");
        let p: TripleParams = crate::workload::kind::params_of(
            "keys = \"small-random\"\nthreads = 4\nduration_s = 5\n",
        )
        .unwrap();
        p.validate().unwrap();
        assert_eq!(p.small_fraction, 0.05);
        let p: TrickleParams = toml::from_str("clients = 0\nduration_s = 5\n").unwrap();
        let e = format!("{:?}", p.validate().unwrap_err());
        assert!(e.contains("clients"), "{e}");
    }

    #[test]
    fn a_row_binds_its_keys_and_nulls() {
        let g = Tiers40 {
            seed: 3,
            rows: 100,
            tables: 2,
        };
        let mut line = Vec::new();
        let mut p = Vec::new();
        // find a row with a NULL col6
        let n = (0..100)
            .find(|&n| {
                line.clear();
                g.row(1, n, &mut line);
                tiers40::fields(&line).nth(5).unwrap().is_none()
            })
            .expect("a third of rows have col6 NULL");
        line.clear();
        g.row(1, n, &mut line);
        params_of(&line, &(0..15).collect::<Vec<_>>(), &mut p);
        assert_eq!(p.len(), 15);
        assert!(matches!(p[5], Value::Null));
        assert!(matches!(p[1], Value::Int(s) if (1..=8).contains(&s)));
        params_of(&line, BINDS[1], &mut p);
        assert_eq!(p.len(), 4);
        assert!(matches!(&p[0], Value::Text(id) if id.starts_with('u')));
    }
}
