//! `lookups`: primary-key lookups of single rows (or documents by `_id`), the activation-code
//! study's work — keys from the first tenth of the table ("small random"), from all of it
//! ("full random"), or each key once in a seeded order ("permutation", as codes are used) —
//! over a sweep of client counts, with QPS, latency and the data device's reads, busy share
//! and IOPS for each second. Runs on SQL engines and on document engines alike.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::oltp::placeholders;
use super::sweep::{self, Levels, SweepSpec};
use crate::dataset::permutation::Permutation;
use crate::dataset::rng::SplitMix64;
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::documents::DocSession;
use crate::engine::{self, Session, StmtId, Value};
use crate::metrics::Latency;
use crate::results::{Better, Metric, Unit};
use crate::runner::Worker;
use crate::sysmon::DeviceIo;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which keys the clients look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Keys {
    /// Uniform over the first `small_fraction` of the keys: a working set that fits a cache.
    SmallRandom,
    /// Uniform over every key.
    FullRandom,
    /// Every key once, in a seeded order shared by all clients (then again, from the start).
    Permutation,
    /// sysbench's zipfian over every key (key 1 hottest, P(k) ∝ k^-0.8).
    Zipfian,
}

impl Keys {
    fn name(self) -> &'static str {
        match self {
            Keys::SmallRandom => "small-random",
            Keys::FullRandom => "full-random",
            Keys::Permutation => "permutation",
            Keys::Zipfian => "zipfian",
        }
    }
}

fn d_small() -> f64 {
    0.1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookupsParams {
    /// `threads`, `duration_s`, `warmup_s` and `cold_start`, decoded apart (see
    /// [`super::sweep::Levels`]).
    #[serde(skip)]
    pub levels: Levels,
    #[serde(deserialize_with = "by_name")]
    pub keys: Keys,
    /// The share of keys, from the first, that `small-random` draws from.
    #[serde(default = "d_small")]
    pub small_fraction: f64,
    /// `rate`, `start_rate`, `arrival`, `slo` (lookups a second), decoded apart (see
    /// [`super::pacing`]).
    #[serde(skip)]
    pub pace: super::pacing::Pace,
}

impl LookupsParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if !(self.small_fraction > 0.0 && self.small_fraction <= 1.0) {
            return at(
                "small_fraction",
                "small_fraction must be above 0 and at most 1 (0.1: the first 10 % of keys)".into(),
            );
        }
        self.pace.validate()?;
        self.levels.check()
    }
}

/// The permutation of a step and how far its clients have gone through it, shared by all.
#[derive(Clone)]
pub struct Order {
    perm: Permutation,
    position: Arc<AtomicU64>,
}

impl Order {
    /// A seeded order of the keys `1..=rows`, from its start.
    pub fn new(seed: u64, rows: u64) -> Self {
        Order {
            perm: Permutation::new(seed, rows),
            position: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Lookups taken from the order so far.
    pub fn taken(&self) -> u64 {
        self.position.load(Ordering::Relaxed)
    }
}

/// Where a client's keys come from: its own random stream, or the step's shared order.
pub struct KeySource {
    /// Keys drawn from: `1..=range`.
    range: u64,
    rng: SplitMix64,
    order: Option<Order>,
    zipfian: Option<crate::dataset::distribution::Zipfian>,
}

impl KeySource {
    /// Keys over a table of `rows` keys `1..=rows` for client `client`, drawn from the stream
    /// `seed` — or, for `permutation`, taken in turn from `order`.
    pub fn new(
        p: &LookupsParams,
        rows: u64,
        seed: u64,
        client: usize,
        order: Option<&Order>,
    ) -> Self {
        let rows = rows.max(1);
        KeySource {
            range: match p.keys {
                Keys::SmallRandom => ((rows as f64 * p.small_fraction) as u64).max(1),
                _ => rows,
            },
            rng: SplitMix64::stream(seed, client as u64),
            order: order.cloned(),
            zipfian: (p.keys == Keys::Zipfian)
                .then(|| crate::dataset::distribution::Zipfian::new(rows)),
        }
    }

    pub fn next_key(&mut self) -> u64 {
        match &self.order {
            Some(o) => o.perm.key(o.position.fetch_add(1, Ordering::Relaxed)),
            None => match &self.zipfian {
                Some(z) => z.sample(&mut self.rng),
                None => 1 + self.rng.below_u64(self.range),
            },
        }
    }
}

/// How a client looks a key up.
enum Lookup {
    Sql {
        session: Box<dyn Session>,
        stmt: StmtId,
        key: [Value; 1],
    },
    Doc {
        session: Box<dyn DocSession>,
        collection: String,
    },
}

struct LookupWorker {
    lookup: Lookup,
    keys: KeySource,
}

impl Worker for LookupWorker {
    /// Rows found: 1 for a hit, 0 for a miss (counted, not an error).
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let id = self.keys.next_key() as i64;
        let r = match &mut self.lookup {
            Lookup::Sql { session, stmt, key } => {
                key[0] = Value::Int(id);
                session.run(*stmt, key)
            }
            Lookup::Doc {
                session,
                collection,
            } => session.find_by_id(collection, id),
        };
        (0, r)
    }
}

/// One client of `engine` looking keys up in `table`: a prepared `SELECT *` by `id` on a
/// SQL engine, `find_one` by `_id` on a document engine.
fn worker(
    engine: &dyn engine::Engine,
    table: &str,
    keys: KeySource,
) -> engine::Result<Box<dyn Worker>> {
    let lookup = match engine.documents() {
        Some(docs) => Lookup::Doc {
            session: docs.session()?,
            collection: table.to_string(),
        },
        None => {
            let mut session = engine.connect()?;
            let sql = placeholders(
                &format!("SELECT * FROM {table} WHERE id = ?"),
                engine.dialect(),
            );
            let stmt = session.prepare(&sql)?;
            Lookup::Sql {
                session,
                stmt,
                key: [Value::Int(0)],
            }
        }
    };
    Ok(Box::new(LookupWorker { lookup, keys }))
}

/// A level's figures.
#[derive(Debug, Clone, Serialize)]
struct Level {
    threads: u64,
    qps: f64,
    lookups: u64,
    hits: u64,
    misses: u64,
    errors: u64,
    latency_us: Option<Latency>,
    measured_s: f64,
    /// The data device over the level's measured seconds (means of its seconds).
    disk: Option<DeviceIo>,
    dbduel_cpu_us_per_lookup: f64,
}

impl super::kind::StepKind for LookupsParams {
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        super::pacing::decode_with(
            v,
            |v| super::sweep::decode(v, |p: &mut Self, levels| p.levels = levels),
            |p, pace| p.pace = pace,
        )
    }
    fn divides_clients() -> bool {
        true
    }
    fn validate(&self) -> Result<(), DecodeError> {
        LookupsParams::validate(self)
    }
    fn is_sql(&self) -> bool {
        false
    }
    fn levels(&self) -> Option<&Levels> {
        Some(&self.levels)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::one(
            KeyPath::root().key("kind"),
            format!("looks keys up in table {}", super::kind::first(tables)),
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(p: &LookupsParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let engine = ctx.engine;
    let table = ctx.table().name.clone();
    let rows = ctx.dataset_rows;
    let names = vec!["lookup".to_string()];
    let start = super::restart::SweepStart::begin(p.levels.cold_start, ctx)?;
    let mut notes: Vec<String> = start.as_ref().map(|s| s.note("step")).into_iter().collect();
    // One order for the whole step: a later level goes on where the last one stopped, so no
    // key is read twice until every key has been read once.
    let order = (p.keys == Keys::Permutation).then(|| Order::new(0x0000_c0de_5eed, rows));
    let spec = SweepSpec {
        levels: p.levels.threads.levels(),
        duration_s: p.levels.duration_s,
        warmup_s: p.levels.warmup_s,
        names: &names,
        what: &format!("{} lookups", p.keys.name()),
        pacing: p.pace.pacing(1.0),
    };
    let make = |li: usize, client: usize| {
        let seed = 0x0010_0c0b ^ li as u64;
        worker(
            engine,
            &table,
            KeySource::new(p, rows, seed, client, order.as_ref()),
        )
    };
    if let Some(slo) = &p.pace.slo {
        let title = ctx.title(&format!("lookups by primary key, {}", p.keys.name()));
        return sweep::search(ctx, &spec, &p.pace, slo, 1.0, title, "lookups/s", make);
    }
    let swept = sweep::run(ctx, &spec, make)?;
    let levels: Vec<Level> = swept.levels.iter().map(Level::of).collect();
    let best = levels[sweep::best(&swept.levels)].clone();
    let mut s = summary(ctx.title(&format!("lookups by primary key, {}", p.keys.name())));
    s.elapsed_s = Some(levels.iter().map(|l| l.measured_s).sum());
    s.ops_per_s = Some(best.qps);
    s.latency_us = best.latency_us;
    s.rows = Some(levels.iter().map(|l| l.lookups).sum());
    s.errors = Some(levels.iter().map(|l| l.errors).sum());
    s.metrics = figures(&levels, &best);
    notes.insert(0, first_note(p, rows, &levels, order.as_ref()));
    notes.extend(
        sweep::pace_notes(&p.pace, 1.0, &spec, &swept.levels, "lookups/s")
            .into_iter()
            .skip(1),
    );
    if let Some(d) = &best.disk {
        notes.push(format!(
            "at {} clients the data device ({}) read {:.1} MB/s in {:.0} IOPS, busy {:.0}% of the time",
            best.threads,
            d.name,
            d.read_bytes_per_s / 1e6,
            d.read_iops,
            d.busy_pct
        ));
    }
    if engine.embedded() {
        notes.push("dbduel's CPU per lookup includes the embedded engine's own work".into());
    }
    s.note = Some(notes.join("; "));
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "keys": p.keys,
            "small_fraction": p.small_fraction,
            "table": table,
            "rows": rows,
            "duration_s": p.levels.duration_s,
            "warmup_s": p.levels.warmup_s,
            "pacing": p.pace.details(),
            "levels": levels,
            "best": best,
            "disk_seconds": swept.disk_seconds(),
        }),
        seconds: swept.seconds,
        interrupted: swept.interrupted,
    })
}

impl Level {
    /// A level's figures from how it ran.
    fn of(l: &sweep::LevelRun) -> Level {
        Level {
            threads: l.threads,
            qps: l.rate(),
            lookups: l.out.ops,
            hits: l.out.rows,
            misses: l.out.ops.saturating_sub(l.out.rows),
            errors: l.out.error_count(),
            latency_us: l.latency(),
            measured_s: l.out.measured_s,
            disk: l.disk_mean(),
            dbduel_cpu_us_per_lookup: l.out.cpu_us_per_op(),
        }
    }
}

/// The note's first part: how the keys were drawn, the loop, the misses and the warm-up.
fn first_note(p: &LookupsParams, rows: u64, levels: &[Level], order: Option<&Order>) -> String {
    let misses: u64 = levels.iter().map(|l| l.misses).sum();
    let total: u64 = levels.iter().map(|l| l.lookups).sum();
    let mut first = vec![
        keys_note(p, rows, total, order),
        if p.pace.is_open() {
            p.pace.loop_note("lookups/s")
        } else {
            "closed loop, one lookup in flight per client".to_string()
        },
    ];
    if misses > 0 {
        first.push(format!(
            "{misses} looked-up keys were not there: counted as misses"
        ));
    }
    if p.levels.warmup_s > 0 {
        first.push(format!(
            "the first {} s of each level not counted",
            p.levels.warmup_s
        ));
    }
    first.join("; ")
}

/// How the step drew its keys, for its note (`total`: lookups made).
fn keys_note(p: &LookupsParams, rows: u64, total: u64, order: Option<&Order>) -> String {
    match p.keys {
        Keys::SmallRandom => format!(
            "keys uniform over the first {:.0}% of the {rows} keys",
            p.small_fraction * 100.0
        ),
        Keys::FullRandom => format!("keys uniform over all {rows} keys"),
        Keys::Zipfian => format!("keys zipfian over all {rows} keys (sysbench's, exponent 0.8)"),
        Keys::Permutation if order.is_some_and(|o| o.taken() > rows) => format!(
            "each of the {rows} keys once in a seeded order, then again from the start ({total} lookups)"
        ),
        Keys::Permutation => format!("{total} of the {rows} keys, each once, in a seeded order"),
    }
}

/// The step's figures: the best level's QPS first (reports lead with it), then each level's
/// QPS, latency percentiles and data-device reads.
fn figures(levels: &[Level], best: &Level) -> Vec<Metric> {
    let mut m = Vec::from(sweep::best_figures(
        ("best_qps", "best QPS", "lookups"),
        "qps_t",
        best.qps,
        best.threads,
    ));
    for l in levels {
        let t = l.threads;
        m.push(Metric::new(
            &format!("qps_t{t}"),
            &format!("QPS @{t}"),
            l.qps,
            Unit::PerSecond,
            Better::Higher,
        ));
        if let Some(lat) = &l.latency_us {
            m.extend(sweep::latency_figures(
                t,
                lat,
                &["p50", "p95", "p99", "max"],
            ));
        }
        if let Some(d) = &l.disk {
            m.extend(sweep::disk_figures(t, d, false));
        }
    }
    m.push(Metric::new(
        "misses",
        "misses",
        levels.iter().map(|l| l.misses).sum::<u64>() as f64,
        Unit::Count,
        Better::None,
    ));
    m.push(Metric::new(
        "cpu_us_per_lookup",
        "dbduel CPU/lookup",
        best.dbduel_cpu_us_per_lookup,
        Unit::Micros,
        Better::None,
    ));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(keys: &str) -> LookupsParams {
        let p: LookupsParams = crate::workload::kind::params_of(&format!(
            "keys = \"{keys}\"\nthreads = [16, 24]\nduration_s = 10\n"
        ))
        .expect("params");
        p.validate().expect("valid");
        p
    }

    #[test]
    fn small_random_keys_fall_in_the_first_tenth() {
        let p = params("small-random");
        let mut k = KeySource::new(&p, 1_000_000, 7, 3, None);
        let keys: Vec<u64> = (0..100_000).map(|_| k.next_key()).collect();
        assert!(keys.iter().all(|&x| (1..=100_000).contains(&x)));
        // and cover it: the top of the range is reached
        assert!(keys.iter().any(|&x| x > 99_000));
        let mut full = KeySource::new(&params("full-random"), 1_000_000, 7, 3, None);
        assert!((0..10_000).map(|_| full.next_key()).any(|x| x > 100_000));
    }

    #[test]
    fn zipfian_keys_cover_the_table_with_key_one_hottest() {
        let mut k = KeySource::new(&params("zipfian"), 1_000_000, 7, 3, None);
        let keys: Vec<u64> = (0..200_000).map(|_| k.next_key()).collect();
        assert!(keys.iter().all(|&x| (1..=1_000_000).contains(&x)));
        let ones = keys.iter().filter(|&&x| x == 1).count();
        let tens = keys.iter().filter(|&&x| x == 10).count();
        // P(1) / P(10) = 10^0.8 ≈ 6.3 under sysbench's exponent.
        assert!(ones > tens * 4 && ones < tens * 9, "{ones} vs {tens}");
        assert!(keys.iter().any(|&x| x > 500_000), "the tail is reached");
    }

    #[test]
    fn the_permutation_is_shared_by_the_clients_and_visits_each_key_once() {
        let p = params("permutation");
        let n = 5_000u64;
        let order = Order::new(11, n);
        // two levels of clients with streams of their own, one order
        let mut clients: Vec<KeySource> = (0..4)
            .map(|c| KeySource::new(&p, n, c as u64, c, Some(&order)))
            .collect();
        let mut seen = vec![0u32; n as usize];
        for i in 0..n as usize {
            seen[(clients[i % 4].next_key() - 1) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 1));
        assert_eq!(order.taken(), n);
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = crate::workload::kind::params_of::<LookupsParams>(
            "keys = \"small\"\nthreads = 4\nduration_s = 10\n",
        );
        assert!(e.is_err());
        let p: LookupsParams = crate::workload::kind::params_of(
            "keys = \"full-random\"\nthreads = 4\nduration_s = 10\nsmall_fraction = 0\n",
        )
        .expect("parses");
        let e = p.validate().expect_err("0 is refused");
        assert!(format!("{e:?}").contains("small_fraction"), "{e:?}");
    }
}
