//! `tpcc`: TPC-C's five transactions in the standard mix on the `tpcc` dataset, over a
//! sweep of terminal counts, closed loop or at a New-Order rate: tpmC (New-Order transactions a minute over each
//! level's measured window), its efficiency against the 12.86 tpmC a warehouse that keying
//! and think times allow, every type's latency, rollbacks, retries and conflicts. Without
//! think times (the default, as go-tpc and HammerDB run) the figure is TPC-C-like, not a
//! TPC-C result, and the step's note says so.
//!
//! `tpcc-check` ([`check`]) tests the specification's consistency conditions afterwards.

pub mod check;
mod delivery;
mod new_order;
mod order_status;
mod payment;
mod statements;
mod stock_level;
pub mod txn;

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::hot_ddl::{self, HotChange, HotRun};
use super::sweep::Levels;
use crate::dataset::rng::SplitMix64;
use crate::dataset::tpcc::Constants;
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::metrics::Latency;
use crate::results::{Better, Derived, Metric, Role, Unit};
use crate::runner::{self, Bound, RunSpec};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use txn::{CONFLICTS, TXNS, TpccWorker, Txn};

/// The most tpmC a warehouse can give with the specification's keying and think times.
pub const TPMC_PER_WAREHOUSE: f64 = 12.86;

/// Keying and think times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkTime {
    /// None: each terminal runs its next transaction at once.
    #[default]
    None,
    /// Clause 5.2.5's keying times and mean think times, outside the response times.
    Spec,
}

/// Which warehouse a terminal's transactions run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HomeWarehouse {
    /// The specification's rule: terminal i's home warehouse is `i % W + 1` for the whole
    /// run (and its Stock-Level district fixed), so a level of T terminals touches at most T
    /// warehouses.
    #[default]
    Fixed,
    /// tpcc-mysql's rule: every transaction draws its warehouse (and Stock-Level's district)
    /// at random from all W, so every level spreads over the whole database.
    Random,
}

impl HomeWarehouse {
    /// The value as a study writes it.
    pub fn name(self) -> &'static str {
        match self {
            HomeWarehouse::Fixed => "fixed",
            HomeWarehouse::Random => "random",
        }
    }
}

fn d_final() -> f64 {
    1.0
}
fn d_retries() -> u32 {
    10
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TpccParams {
    /// `threads` (terminals; terminal i's home warehouse is `i % warehouses + 1`),
    /// `duration_s`, `warmup_s` and `cold_start`, decoded apart (see [`super::sweep::Levels`]).
    #[serde(skip)]
    pub levels: Levels,
    /// The share of each level, at its end, whose mean is the level's figure.
    #[serde(default = "d_final")]
    pub final_fraction: f64,
    /// How often a conflict (deadlock, lock-wait timeout, serialization failure, busy) is
    /// retried before the transaction counts as failed.
    #[serde(default = "d_retries")]
    pub retries: u32,
    #[serde(default, deserialize_with = "by_name")]
    pub think_time: ThinkTime,
    /// `"fixed"` (the specification's home warehouse per terminal, the default) or
    /// `"random"` (tpcc-mysql's warehouse drawn for every transaction).
    #[serde(default, deserialize_with = "by_name")]
    pub home_warehouse: HomeWarehouse,
    /// Schema changes made on busy tables at chosen seconds of the (one) level.
    #[serde(default)]
    pub ddl: Vec<HotChange>,
    /// `rate` (New-Order transactions a minute wanted: tpmC), `start_rate`, `arrival`,
    /// decoded apart (see [`super::pacing`]); scheduled as all transactions by the mix.
    #[serde(skip)]
    pub pace: super::pacing::Pace,
}

/// Transactions of every type a second per New-Order a minute: the deck deals 45 New-Orders
/// in 100 cards.
pub fn per_tpmc() -> f64 {
    100.0 / DECK[0] as f64 / 60.0
}

impl TpccParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.levels.check()?;
        super::oltp::check_final_fraction(self.final_fraction)?;
        hot_ddl::validate(
            &self.ddl,
            self.levels.threads.levels().len(),
            self.levels.duration_s,
        )?;
        self.pace.validate()?;
        if self.pace.slo.is_some() && !self.ddl.is_empty() {
            return Err(DecodeError::at(
                KeyPath::root().key("slo"),
                "an slo search repeats one level at many rates: leave ddl out of it",
            ));
        }
        if self.retries > 1000 {
            return Err(DecodeError::at(
                KeyPath::root().key("retries"),
                format!("retries = {} is too many; use 0 to 1000", self.retries),
            ));
        }
        Ok(())
    }

    /// Seconds at the start of a level not counted.
    pub fn skipped_s(&self) -> u64 {
        super::oltp::skipped_s(
            self.levels.duration_s,
            self.final_fraction,
            self.levels.warmup_s,
        )
    }
}

/// The standard mix as a deck (clause 5.2.4.2's allowed method): 45 New-Order, 43 Payment
/// and 4 each of the others in 100 cards, shuffled, dealt, reshuffled when empty — so every
/// 100 transactions meet the minimum percentages exactly.
pub struct Mix {
    cards: [Txn; 100],
    next: usize,
}

/// Cards of each type in the deck, in [`TXNS`] order.
pub const DECK: [usize; 5] = [45, 43, 4, 4, 4];

impl Mix {
    pub fn new(rng: &mut SplitMix64) -> Mix {
        let mut cards = [Txn::NewOrder; 100];
        let mut i = 0;
        for (t, n) in TXNS.iter().zip(DECK) {
            cards[i..i + n].fill(*t);
            i += n;
        }
        let mut m = Mix { cards, next: 100 };
        m.refill(rng);
        m
    }

    fn refill(&mut self, rng: &mut SplitMix64) {
        for i in (1..self.cards.len()).rev() {
            self.cards.swap(i, rng.below_u64(i as u64 + 1) as usize);
        }
        self.next = 0;
    }

    /// The next transaction, without dealing it.
    pub fn peek(&mut self, rng: &mut SplitMix64) -> Txn {
        if self.next == self.cards.len() {
            self.refill(rng);
        }
        self.cards[self.next]
    }

    pub fn draw(&mut self, rng: &mut SplitMix64) -> Txn {
        let t = self.peek(rng);
        self.next += 1;
        t
    }
}

/// A count shared by a level's terminals (a few additions a transaction, not a statement).
#[derive(Default)]
pub struct Count(AtomicU64);

impl Count {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a level's terminals counted besides what the runner times, over the whole level
/// (its warm-up included).
#[derive(Default)]
pub struct Counters {
    /// Per type: transactions rolled back on purpose (New-Order's unused item).
    pub rollbacks: [Count; 5],
    /// Per type: attempts retried after a conflict.
    pub retries: [Count; 5],
    /// Per type and conflict kind (in [`CONFLICTS`] order).
    pub conflicts: [[Count; 4]; 5],
    /// Delivery's districts found with nothing to deliver.
    pub skipped_deliveries: Count,
    /// COMMITs the server accepted, and ROLLBACKs sent (planned, after a conflict, after an
    /// error): what the server's own counters should show.
    pub commits: Count,
    pub rollbacks_sent: Count,
    /// Per type: transactions dealt from the decks, whatever became of them.
    pub dealt: [Count; 5],
    /// Statements the terminals prepared outside a transaction, as they connected
    /// (PostgreSQL commits each one's implicit transaction; the batches prepared on first use
    /// are inside New-Order's).
    pub prepares: Count,
    /// Per warehouse (index `w - 1`): transactions dealt on it, whatever became of them.
    pub by_warehouse: Vec<Count>,
}

impl Counters {
    /// Zero counts for a run on `warehouses`.
    pub fn new(warehouses: u64) -> Counters {
        Counters {
            by_warehouse: (0..warehouses).map(|_| Count::default()).collect(),
            ..Counters::default()
        }
    }
}

/// Warehouses up to which a level lists its transactions per warehouse.
const LISTED_WAREHOUSES: u64 = 100;

/// One transaction type's figures in a level.
#[derive(Debug, Clone, Serialize)]
struct TypeFigures {
    name: &'static str,
    count: u64,
    /// Dealt over the whole level (warm-up included).
    dealt_all: u64,
    share_pct: f64,
    latency_us: Option<Latency>,
    rollbacks: u64,
    retries: u64,
    /// Conflicts by kind (only the kinds seen).
    conflicts: std::collections::BTreeMap<&'static str, u64>,
    errors: u64,
}

/// A level's figures.
#[derive(Debug, Clone, Serialize)]
struct Level {
    threads: u64,
    tpmc: f64,
    efficiency_pct: f64,
    tpm_total: f64,
    transactions: u64,
    measured_s: f64,
    types: Vec<TypeFigures>,
    errors: u64,
    skipped_deliveries: u64,
    /// COMMITs and ROLLBACKs sent over the whole level (warm-up included, as a server
    /// counts them).
    commits_all: u64,
    rollbacks_all: u64,
    prepares_all: u64,
    dbduel_cpu_us_per_txn: f64,
    /// New-Order transactions in each 10 s of the level (the seed's axis), warm-up included.
    new_orders_per_10s: Vec<u64>,
    first_tick: u64,
    /// Open loop: the New-Orders a minute wanted over the measured part, and transactions
    /// started late and dropped.
    target_tpmc: Option<f64>,
    late: u64,
    dropped: u64,
    /// Open loop: due before the end, not started by it.
    unstarted: u64,
    /// Warehouses at least one transaction of the level (warm-up included) ran on: in the
    /// note, not the details, where a merge of shards would add the shards' counts up.
    #[serde(skip)]
    warehouses_touched: u64,
    /// Transactions dealt on each warehouse over the level, warm-up included (up to
    /// [`LISTED_WAREHOUSES`] warehouses).
    #[serde(skip_serializing_if = "Option::is_none")]
    transactions_by_warehouse: Option<Vec<u64>>,
}

impl super::kind::StepKind for TpccParams {
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
        TpccParams::validate(self)
    }
    fn levels(&self) -> Option<&Levels> {
        Some(&self.levels)
    }
    fn generator(&self) -> Option<super::kind::GeneratorNeed> {
        Some(TPCC)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all(
            "runs TPC-C's transactions on",
            tables,
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// TPC-C's nine tables, which its steps need.
pub(crate) const TPCC: super::kind::GeneratorNeed = super::kind::GeneratorNeed {
    generator: crate::dataset::Generator::Tpcc,
    why: "runs TPC-C's transactions, which need its nine tables",
    fix: "generator = \"tpcc\" with warehouses = N",
};

pub fn run(p: &TpccParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    if ctx.tables.first().map(|t| t.name.as_str()) != Some("stock") {
        return Err(StepError::Check(
            "the tpcc step runs on the tpcc dataset (generator = \"tpcc\")".into(),
        ));
    }
    if !ctx.engine.keeps_rows() {
        return Err(StepError::Skipped(format!(
            "the {} engine returns no rows, and TPC-C's transactions read what they write next",
            ctx.engine.kind()
        )));
    }
    let warehouses = ctx.dataset_rows;
    let load_c = Constants::load(ctx.dataset_seed);
    let c = Constants::run(ctx.dataset_seed, load_c);
    let names: Vec<String> = TXNS.iter().map(|t| t.name().to_string()).collect();
    let start = super::restart::SweepStart::begin(p.levels.cold_start, ctx)?;
    if let Some(slo) = &p.pace.slo {
        return capacity(p, ctx, slo, warehouses, c, &names);
    }
    let Ran {
        levels,
        seconds,
        interrupted,
        hot_changes,
    } = run_levels(p, ctx, warehouses, c, &names)?;
    let Some(best) = levels
        .iter()
        .max_by(|a, b| a.tpmc.total_cmp(&b.tpmc))
        .cloned()
    else {
        return Err(StepError::Skipped(
            "interrupted before the first level".into(),
        ));
    };
    let mut s = summary(ctx.title("TPC-C"));
    s.elapsed_s = Some(levels.iter().map(|l| l.measured_s).sum());
    s.ops_per_s = Some(best.tpm_total / 60.0);
    s.latency_us = best.types[0].latency_us;
    s.latency_ops = vec![best.types[0].name.to_string()];
    s.rows = Some(levels.iter().map(|l| l.transactions).sum());
    s.errors = Some(levels.iter().map(|l| l.errors).sum());
    s.metrics = metrics(&levels, &best);
    let (ddl_metrics, ddl_notes) = hot_ddl::figures(&hot_changes);
    s.metrics.extend(ddl_metrics);
    let mut note = notes(p, ctx, &levels, &best, warehouses, start.as_ref());
    for n in ddl_notes {
        note.push_str("; ");
        note.push_str(&n);
    }
    s.note = Some(note);
    let failed = hot_ddl::failures(&hot_changes);
    let out = StepOutput {
        summary: s,
        details: serde_json::json!({
            "warehouses": warehouses,
            "duration_s": p.levels.duration_s,
            "final_fraction": p.final_fraction,
            "measured_s_per_level": p.levels.duration_s - p.skipped_s(),
            "think_time": p.think_time,
            "home_warehouse": p.home_warehouse,
            "retries": p.retries,
            "constants": { "load": load_c, "run": c },
            "deck": { "new_order": DECK[0], "payment": DECK[1], "order_status": DECK[2], "delivery": DECK[3], "stock_level": DECK[4] },
            "pacing": p.pace.details(),
            "levels": levels,
            "best": best,
            "cold_start": start.as_ref().map(super::restart::SweepStart::details),
            "ddl": hot_changes,
        }),
        seconds,
        interrupted,
    };
    hot_ddl::outcome(out, failed)
}

/// The levels as they ran, up to the stop flag.
struct Ran {
    levels: Vec<Level>,
    /// Per-second records the levels wrote to the step's file.
    seconds: u64,
    interrupted: bool,
    /// The last level's schema changes under load.
    hot_changes: Vec<HotRun>,
}

/// Run each level of terminals in turn (with the step's schema changes alongside); fails
/// when every transaction of a level failed.
/// `slo`: the highest tpmC rate whose probes meet the goal (each probe one level of the
/// largest terminal count, every transaction type paced by the mix, as a `rate` is).
fn capacity(
    p: &TpccParams,
    ctx: &StepCtx<'_>,
    slo: &super::slo::Slo,
    warehouses: u64,
    c: Constants,
    names: &[String],
) -> Result<StepOutput, StepError> {
    let spec = super::sweep::SweepSpec {
        levels: p.levels.threads.levels(),
        duration_s: p.levels.duration_s,
        warmup_s: p.levels.warmup_s,
        names,
        what: "transactions",
        pacing: p.pace.pacing(per_tpmc()),
    };
    let counters = Counters::new(warehouses);
    let make = |li: usize, client: usize| terminal(ctx, p, &counters, (warehouses, c), li, client);
    let title = ctx.title("TPC-C transactions");
    super::sweep::search(ctx, &spec, &p.pace, slo, per_tpmc(), title, "tpmC", make)
}

/// Terminal `client` of level `li`: its own stream of the dataset's seed, counting into
/// `counters`.
fn terminal<'a>(
    ctx: &StepCtx<'_>,
    p: &'a TpccParams,
    counters: &'a Counters,
    (warehouses, c): (u64, Constants),
    li: usize,
    client: usize,
) -> crate::engine::Result<Box<dyn runner::Worker + 'a>> {
    TpccWorker::new(
        ctx.engine,
        p,
        counters,
        warehouses,
        c,
        0x7bcc_5eed ^ (li as u64) << 32 ^ ctx.dataset_seed,
        client,
    )
    .map(|w| Box::new(w) as Box<dyn runner::Worker + 'a>)
}

fn run_levels(
    p: &TpccParams,
    ctx: &StepCtx<'_>,
    warehouses: u64,
    c: Constants,
    names: &[String],
) -> Result<Ran, StepError> {
    let mut seconds = 0;
    let mut hot_changes: Vec<HotRun> = Vec::new();
    let threads_of_levels = p.levels.threads.levels();
    let timing = (0, p.levels.duration_s);
    let (levels, interrupted) = super::sweep::walk(
        ctx,
        &threads_of_levels,
        timing,
        |li, threads, tick_base| {
            let spec = RunSpec {
                clients: threads as usize,
                bound: Bound::Duration(Duration::from_secs(p.levels.duration_s)),
                warmup_s: p.skipped_s(),
                pacing: p.pace.pacing(per_tpmc()),
                seed: li as u64,
                team: ctx.team.cloned(),
                threads: None,
            };
            let counters = Counters::new(warehouses);
            ctx.progress
                .status(&format!("{threads} terminals connecting"));
            let make = |client: usize| terminal(ctx, p, &counters, (warehouses, c), li, client);
            let progress = ctx.progress;
            let mut new_orders_per_10s: Vec<u64> = Vec::new();
            let (out, runs) = hot_ddl::alongside(ctx.engine, ctx.own(&p.ddl), ctx.stop, |second| {
                runner::run_closed(&spec, names, make, ctx.stop, |iv| {
                    ctx.seconds.append_shifted(iv, tick_base, Some(threads));
                    second(iv.into());
                    let no = iv.per_op.first().map_or(0, |o| o.ops);
                    let slot = (iv.tick / 10) as usize;
                    if new_orders_per_10s.len() <= slot {
                        new_orders_per_10s.resize(slot + 1, 0);
                    }
                    new_orders_per_10s[slot] += no;
                    progress.status(&format!(
                        "{threads} terminals t={:.0}s {:.0} tx/s, {} new orders/s",
                        iv.t_s, iv.ops_per_s, no
                    ));
                })
            });
            let out = out?;
            hot_changes = runs;
            if !out.interrupted
                && let Some((errors, first)) = out.all_failed()
            {
                return Err(StepError::Check(format!(
                    "every transaction failed at {threads} terminals ({errors} errors); first: {first}"
                )));
            }
            let mut level = figures(
                &out,
                &counters,
                threads,
                warehouses,
                tick_base,
                new_orders_per_10s,
            );
            level.target_tpmc =
                p.pace
                    .target_mean(1.0, p.skipped_s() as f64, p.levels.duration_s as f64);
            seconds += out.seconds.count;
            Ok((level, out.interrupted))
        },
    )?;
    Ok(Ran {
        levels,
        seconds,
        interrupted,
        hot_changes,
    })
}

/// One level's figures from the runner's outcome, the terminals' counters and the New-Orders
/// its seconds counted, ten seconds at a time.
fn figures(
    out: &runner::RunOutcome,
    counters: &Counters,
    threads: u64,
    warehouses: u64,
    first_tick: u64,
    new_orders_per_10s: Vec<u64>,
) -> Level {
    let per_min = |n: u64| {
        if out.measured_s > 0.0 {
            n as f64 * 60.0 / out.measured_s
        } else {
            0.0
        }
    };
    let counts: Vec<u64> = out.per_op.iter().map(|h| h.len()).collect();
    let total: u64 = counts.iter().sum();
    let types = TXNS
        .iter()
        .enumerate()
        .map(|(i, t)| TypeFigures {
            name: t.name(),
            count: counts.get(i).copied().unwrap_or(0),
            dealt_all: counters.dealt[i].get(),
            share_pct: if total > 0 {
                counts[i] as f64 * 100.0 / total as f64
            } else {
                0.0
            },
            latency_us: out.per_op.get(i).and_then(Latency::of),
            rollbacks: counters.rollbacks[i].get(),
            retries: counters.retries[i].get(),
            conflicts: CONFLICTS
                .iter()
                .zip(&counters.conflicts[i])
                .filter(|(_, n)| n.get() > 0)
                .map(|(k, n)| (*k, n.get()))
                .collect(),
            errors: out
                .errors
                .iter()
                .filter(|e| e.op == t.name())
                .map(|e| e.count)
                .sum(),
        })
        .collect::<Vec<_>>();
    let tpmc = per_min(types[0].count);
    let by_w: Vec<u64> = counters.by_warehouse.iter().map(Count::get).collect();
    Level {
        threads,
        tpmc,
        efficiency_pct: tpmc * 100.0 / (TPMC_PER_WAREHOUSE * warehouses as f64),
        tpm_total: per_min(total),
        transactions: total,
        measured_s: out.measured_s,
        errors: out.error_count(),
        skipped_deliveries: counters.skipped_deliveries.get(),
        commits_all: counters.commits.get(),
        rollbacks_all: counters.rollbacks_sent.get(),
        prepares_all: counters.prepares.get(),
        dbduel_cpu_us_per_txn: out.cpu_us_per_op(),
        target_tpmc: None,
        late: out.late,
        dropped: out.dropped,
        unstarted: out.unstarted,
        new_orders_per_10s,
        types,
        first_tick,
        warehouses_touched: by_w.iter().filter(|n| **n > 0).count() as u64,
        transactions_by_warehouse: (warehouses <= LISTED_WAREHOUSES).then_some(by_w),
    }
}

fn metrics(levels: &[Level], best: &Level) -> Vec<Metric> {
    let sweep = levels.len() > 1;
    // For a merge of shards: a figure of the best level adds up over shards when there is
    // one level; in a sweep each shard's best level may be another.
    let at_best = || {
        if sweep {
            Derived::AtOwnBest
        } else {
            Derived::Sum
        }
    };
    let mut m = vec![
        Metric::new("tpmc", "tpmC", best.tpmc, Unit::Count, Better::Higher)
            .derived(if sweep {
                Derived::Best {
                    prefix: "tpmc_t".into(),
                }
            } else {
                Derived::Sum
            })
            .with_role(Role::new_orders()),
        Metric::new(
            "efficiency_pct",
            "efficiency",
            best.efficiency_pct,
            Unit::Percent,
            Better::None,
        )
        .derived(at_best()),
        Metric::new(
            "tpm_total",
            "tpmTotal",
            best.tpm_total,
            Unit::Count,
            Better::Higher,
        )
        .derived(at_best()),
    ];
    if sweep {
        m.push(
            Metric::new(
                "best_threads",
                "at terminals",
                best.threads as f64,
                Unit::Count,
                Better::None,
            )
            .derived(Derived::BestLevel {
                prefix: "tpmc_t".into(),
            }),
        );
        for l in levels {
            m.push(Metric::new(
                &format!("tpmc_t{}", l.threads),
                &format!("tpmC @{}", l.threads),
                l.tpmc,
                Unit::Count,
                Better::Higher,
            ));
        }
    }
    m.extend(type_p99s(best, sweep));
    let conflicts: u64 = best.types.iter().flat_map(|t| t.conflicts.values()).sum();
    m.push(
        Metric::new(
            "conflicts",
            "conflicts",
            conflicts as f64,
            Unit::Count,
            Better::Lower,
        )
        .derived(at_best()),
    );
    m.push(Metric::new(
        "rollback_pct",
        "New-Order rolled back",
        if best.types[0].count > 0 {
            best.types[0].rollbacks as f64 * 100.0 / best.types[0].count as f64
        } else {
            0.0
        },
        Unit::Percent,
        Better::None,
    ));
    m.push(Metric::new(
        "cpu_us_per_txn",
        "dbduel CPU/txn",
        best.dbduel_cpu_us_per_txn,
        Unit::Micros,
        Better::None,
    ));
    m
}

/// Each transaction type's p99 at the best level (for a merge of shards: the quantile of the
/// merged histograms, of the best level in a sweep).
fn type_p99s(best: &Level, sweep: bool) -> Vec<Metric> {
    let mut m = Vec::new();
    for t in &best.types {
        if let Some(lat) = t.latency_us {
            let p99 = Metric::new(
                &format!("{}_p99_us", t.name),
                &format!("{} p99", t.name.replace('_', "-")),
                lat.p99 as f64,
                Unit::Micros,
                Better::Lower,
            );
            m.push(if sweep {
                p99.derived(Derived::QuantileAtBest {
                    q: 0.99,
                    prefix: "tpmc_t".into(),
                    ops: vec![t.name.to_string()],
                })
            } else {
                p99.quantile(0.99, Some(best.threads), &[t.name])
            });
        }
    }
    m
}

fn notes(
    p: &TpccParams,
    ctx: &StepCtx<'_>,
    levels: &[Level],
    best: &Level,
    warehouses: u64,
    start: Option<&super::restart::SweepStart>,
) -> String {
    let mut notes = vec![format!(
        "{warehouses} warehouse(s); {}; each level's figure is the mean of its last {:.0}% ({} of {} s); tpmC counts New-Order transactions completed, the 1% rolled back on purpose included",
        p.pace
            .loop_note("New-Orders a minute, all transactions scheduled by the mix"),
        p.final_fraction * 100.0,
        p.levels.duration_s - p.skipped_s(),
        p.levels.duration_s
    )];
    notes.push(match p.think_time {
        ThinkTime::None => format!(
            "no keying or think times (as go-tpc and HammerDB run): a TPC-C-like figure, not a TPC-C result; the specification's times would allow at most {:.0} tpmC on {warehouses} warehouse(s)",
            TPMC_PER_WAREHOUSE * warehouses as f64
        ),
        ThinkTime::Spec => {
            "keying and think times as clause 5.2.5 sets them, outside the response times".into()
        }
    });
    let mix: Vec<String> = best
        .types
        .iter()
        .map(|t| format!("{} {:.1}%", t.name, t.share_pct))
        .collect();
    notes.push(format!("mix at the best level: {}", mix.join(", ")));
    for l in levels {
        notes.extend(super::pacing::shortfall(
            &format!("at {} terminals", l.threads),
            l.target_tpmc,
            l.tpmc,
            l.late,
            l.dropped,
            l.unstarted,
            "tpmC",
        ));
    }
    for l in levels {
        let conflicts: Vec<String> = l
            .types
            .iter()
            .filter(|t| !t.conflicts.is_empty())
            .map(|t| {
                let kinds: Vec<String> = t
                    .conflicts
                    .iter()
                    .map(|(k, n)| format!("{n} {k}"))
                    .collect();
                format!("{}: {} ({} retried)", t.name, kinds.join(", "), t.retries)
            })
            .collect();
        if !conflicts.is_empty() {
            notes.push(format!(
                "conflicts at {} terminals: {}",
                l.threads,
                conflicts.join("; ")
            ));
        }
    }
    if best.skipped_deliveries > 0 {
        notes.push(format!(
            "{} district deliveries found no new order",
            best.skipped_deliveries
        ));
    }
    notes.push(match p.home_warehouse {
        HomeWarehouse::Fixed => format!(
            "home warehouse fixed per terminal (the specification's rule): {} of {warehouses} warehouses ran transactions at the best level",
            best.warehouses_touched
        ),
        HomeWarehouse::Random => format!(
            "home warehouse drawn at random for every transaction (tpcc-mysql's rule): {} of {warehouses} warehouses ran transactions at the best level",
            best.warehouses_touched
        ),
    });
    notes.extend(start.map(|s| s.note("sweep")));
    if ctx.engine.embedded() {
        notes.push("dbduel's CPU per transaction includes the embedded engine's own work".into());
    }
    if levels.len() > 1 {
        notes.push(format!(
            "best: {:.0} tpmC at {} terminals",
            best.tpmc, best.threads
        ));
    }
    notes.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deck_deals_the_standard_mix_exactly() {
        let mut rng = SplitMix64::stream(3, 4);
        let mut deck = Mix::new(&mut rng);
        let mut n = [0usize; 5];
        for _ in 0..10_000 {
            let peeked = deck.peek(&mut rng);
            let t = deck.draw(&mut rng);
            assert_eq!(peeked, t);
            n[t as usize] += 1;
        }
        assert_eq!(n, [4500, 4300, 400, 400, 400]);
    }

    #[test]
    fn parameters_are_checked_where_they_are_written() {
        let p: TpccParams =
            crate::workload::kind::params_of("threads = [1, 4]\nduration_s = 10\n").unwrap();
        p.validate().unwrap();
        assert_eq!(p.skipped_s(), 0);
        assert_eq!(p.think_time, ThinkTime::None);
        let p: TpccParams =
            crate::workload::kind::params_of("threads = 2\nduration_s = 10\nretries = 5000\n")
                .unwrap();
        assert_eq!(
            p.validate().unwrap_err().path.to_string(),
            "retries".to_string()
        );
        assert!(
            crate::workload::kind::params_of::<TpccParams>(
                "threads = 2\nduration_s = 10\nmix = 1\n"
            )
            .is_err()
        );
    }

    #[test]
    fn the_home_warehouse_rule_is_fixed_unless_asked_and_checked_where_written() {
        let p: TpccParams =
            crate::workload::kind::params_of("threads = 2\nduration_s = 10\n").unwrap();
        assert_eq!(p.home_warehouse, HomeWarehouse::Fixed);
        let p: TpccParams = crate::workload::kind::params_of(
            "threads = 2\nduration_s = 10\nhome_warehouse = \"random\"\n",
        )
        .unwrap();
        assert_eq!(p.home_warehouse, HomeWarehouse::Random);
        let e = crate::workload::kind::params_of::<TpccParams>(
            "threads = 2\nduration_s = 10\nhome_warehouse = \"sometimes\"\n",
        )
        .unwrap_err();
        assert_eq!(e.path.to_string(), "home_warehouse");
        assert!(e.message.contains("fixed"), "{e:?}");
    }
}
