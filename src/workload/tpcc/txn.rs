//! One TPC-C terminal, as one client runs the five transactions (clauses 2.4–2.8, one file
//! each beside this one): its home warehouse, a shuffled deck of the standard mix, NURand
//! keys with the run's C constants, every statement prepared once, each transaction in
//! BEGIN … COMMIT, and conflicts (deadlocks, lock-wait timeouts, serialization failures,
//! SQLite busy) retried and counted by kind.

use super::statements::{ALL, Batch, MAX_LINES, S, STATEMENTS, batch_sql, sql};
use super::{Counters, HomeWarehouse, Mix, ThinkTime, TpccParams};
use crate::dataset::rng::SplitMix64;
use crate::dataset::tpcc::{self, Constants, DISTRICTS, nurand};
use crate::engine::{self, Dialect, EngineError, Session, StmtId, Value};
use crate::runner::Worker;
use crate::workload::oltp::placeholders;
use std::time::Duration;

/// The transaction types, in the order of their op kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Txn {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

pub const TXNS: [Txn; 5] = [
    Txn::NewOrder,
    Txn::Payment,
    Txn::OrderStatus,
    Txn::Delivery,
    Txn::StockLevel,
];

impl Txn {
    pub fn name(self) -> &'static str {
        match self {
            Txn::NewOrder => "new_order",
            Txn::Payment => "payment",
            Txn::OrderStatus => "order_status",
            Txn::Delivery => "delivery",
            Txn::StockLevel => "stock_level",
        }
    }

    /// Clause 5.2.5.7's mean think time and clause 5.2.5.2's keying time, seconds.
    fn think_and_keying_s(self) -> (f64, f64) {
        match self {
            Txn::NewOrder => (12.0, 18.0),
            Txn::Payment => (12.0, 3.0),
            Txn::OrderStatus => (10.0, 2.0),
            Txn::Delivery | Txn::StockLevel => (5.0, 2.0),
        }
    }

    /// Whether it writes (SQLite then takes the write lock at BEGIN, so two writers wait
    /// for each other instead of failing to upgrade).
    fn writes(self) -> bool {
        matches!(self, Txn::NewOrder | Txn::Payment | Txn::Delivery)
    }
}

/// The error kinds that are conflicts between transactions: retried, and counted.
pub const CONFLICTS: [&str; 4] = ["deadlock", "lock_timeout", "serialization", "busy"];

/// What one attempt of a transaction came to.
pub(super) enum Outcome {
    Committed,
    /// New-Order's 1 %: an unused item, rolled back as the specification asks.
    RolledBack,
}

/// An order line's input (New-Order's): item, supplying warehouse, quantity. The terminal
/// keeps one buffer of them for all its orders.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Line {
    pub(super) supply_w: i64,
    pub(super) item: i64,
    pub(super) quantity: i64,
}

/// One TPC-C terminal: a session, its home warehouse and district, and its random stream.
pub struct TpccWorker<'a> {
    pub(super) session: Box<dyn Session>,
    pub(super) stmts: [StmtId; STATEMENTS],
    /// `batches[b][n]`: batch `b` of `n` rows, prepared when first needed.
    pub(super) batches: [[Option<StmtId>; MAX_LINES + 1]; 3],
    pub(super) dialect: Dialect,
    pub(super) lock: &'static str,
    pub(super) begin_read: &'static str,
    pub(super) begin_write: &'static str,
    pub(super) p: &'a TpccParams,
    pub(super) counters: &'a Counters,
    pub(super) warehouses: i64,
    pub(super) home_w: i64,
    /// Stock-Level's district: fixed for a terminal (clause 2.8.1.1).
    pub(super) home_d: i64,
    pub(super) c: Constants,
    pub(super) rng: SplitMix64,
    pub(super) deck: Mix,
    /// The last transaction's type, for its think time.
    pub(super) last: Option<Txn>,
    pub(super) row: Vec<Value>,
    pub(super) lines: Vec<Line>,
    /// Each line's price (hundredths) and district info, in `lines` order.
    pub(super) priced: Vec<(i64, Value)>,
    pub(super) params: Vec<Value>,
    pub(super) name: String,
}

impl<'a> TpccWorker<'a> {
    /// Terminal `client` of a run on `warehouses`: home warehouse `client % W + 1` (with
    /// `home_warehouse = "random"`, redrawn before every transaction).
    pub fn new(
        engine: &dyn engine::Engine,
        p: &'a TpccParams,
        counters: &'a Counters,
        warehouses: u64,
        c: Constants,
        stream: u64,
        client: usize,
    ) -> engine::Result<Self> {
        let dialect = engine.dialect();
        let lock = dialect.row_lock_suffix();
        let mut session = engine.connect()?;
        let mut stmts = [StmtId(0); STATEMENTS];
        for (i, s) in ALL.iter().enumerate() {
            stmts[i] = session.prepare(&placeholders(&sql(*s, lock), dialect))?;
        }
        counters.prepares.add(STATEMENTS as u64);
        let (begin_read, begin_write) = ("BEGIN", dialect.begin_write());
        let w = warehouses as i64;
        let mut rng = SplitMix64::stream(stream, client as u64);
        let deck = Mix::new(&mut rng);
        Ok(TpccWorker {
            session,
            stmts,
            batches: [[None; MAX_LINES + 1]; 3],
            dialect,
            lock,
            begin_read,
            begin_write,
            p,
            counters,
            warehouses: w,
            home_w: client as i64 % w + 1,
            home_d: (client as i64 / w) % DISTRICTS as i64 + 1,
            c,
            rng,
            deck,
            last: None,
            row: Vec::with_capacity(16),
            lines: Vec::with_capacity(MAX_LINES),
            priced: Vec::with_capacity(MAX_LINES),
            params: Vec::with_capacity(10 * MAX_LINES),
            name: String::with_capacity(16),
        })
    }

    pub(super) fn run(&mut self, s: S, params: &[Value]) -> engine::Result<u64> {
        self.session
            .run_rows(self.stmts[s as usize], params, &mut self.row)
    }

    /// [`run`](Self::run) of a change that must touch exactly `want` rows: rows this
    /// transaction read, under a lock it still holds, just before. Under the isolation TPC-C
    /// asks for they are all still there; fewer means the engine let another transaction
    /// change them underneath (MyRocks once left a Delivery's ten customers uncredited or
    /// credited twice). That is a conflict: rolled back and retried like one, never a
    /// change silently lost.
    pub(super) fn run_changing(
        &mut self,
        s: S,
        params: &[Value],
        want: u64,
        what: &str,
    ) -> engine::Result<u64> {
        let got = self.run(s, params)?;
        if got != want {
            return Err(EngineError::new(
                "serialization",
                format!(
                    "{what}: {got} of the {want} row(s) this transaction had read were there to change; another transaction changed them first"
                ),
            ));
        }
        Ok(got)
    }

    pub(super) fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.rng.below_u64((hi - lo + 1) as u64) as i64
    }

    /// A warehouse other than the home one (the home one when there is only one).
    pub(super) fn remote_w(&mut self) -> i64 {
        if self.warehouses == 1 {
            return self.home_w;
        }
        let w = self.int(1, self.warehouses - 1);
        if w >= self.home_w { w + 1 } else { w }
    }

    pub(super) fn customer_id(&mut self) -> i64 {
        nurand(&mut self.rng, 1023, 1, tpcc::CUSTOMERS, self.c.c_id) as i64
    }

    /// The customer of clause 2.5.2.2's "by last name" rule: of those with the name, sorted
    /// by first name, the one at position ⌈n/2⌉.
    pub(super) fn customer_by_name(&mut self, w: i64, d: i64) -> engine::Result<i64> {
        let n = nurand(&mut self.rng, 255, 0, 999, self.c.c_last);
        tpcc::last_name(n, &mut self.name);
        let name = Value::Text(self.name.clone());
        let found = self.run(S::CustomerByName, &[Value::Int(w), Value::Int(d), name])?;
        if found == 0 {
            return Err(EngineError::new(
                "data",
                format!(
                    "no customer named {} in district {d} of warehouse {w}",
                    self.name
                ),
            ));
        }
        self.cell((found as usize).div_ceil(2) - 1, "c_id")?
            .as_i64()
    }

    /// Batch `b` of `n` rows, prepared on its first use.
    fn batch(&mut self, b: Batch, n: usize) -> engine::Result<StmtId> {
        if let Some(id) = self.batches[b as usize][n] {
            return Ok(id);
        }
        let id = self
            .session
            .prepare(&placeholders(&batch_sql(b, n, self.lock), self.dialect))?;
        self.batches[b as usize][n] = Some(id);
        Ok(id)
    }

    /// Run batch `b` with the parameters gathered in `self.params`.
    pub(super) fn run_batch(&mut self, b: Batch, n: usize) -> engine::Result<u64> {
        let id = self.batch(b, n)?;
        self.session.run_rows(id, &self.params, &mut self.row)
    }

    /// Column `i` of the first row read, or an error naming what was missing.
    pub(super) fn cell(&self, i: usize, what: &str) -> engine::Result<&Value> {
        self.row
            .get(i)
            .ok_or_else(|| EngineError::new("data", format!("no row with {what}")))
    }

    /// One attempt: BEGIN, the body, COMMIT (or ROLLBACK on any error or the planned
    /// rollback).
    fn attempt(&mut self, t: Txn) -> engine::Result<Outcome> {
        let begin = if t.writes() {
            self.begin_write
        } else {
            self.begin_read
        };
        self.session.execute(begin)?;
        let body = match t {
            Txn::NewOrder => self.new_order(),
            Txn::Payment => self.payment(),
            Txn::OrderStatus => self.order_status(),
            Txn::Delivery => self.delivery(),
            Txn::StockLevel => self.stock_level(),
        };
        match body {
            Ok(Outcome::Committed) => match self.session.execute("COMMIT") {
                Ok(_) => {
                    self.counters.commits.add(1);
                    Ok(Outcome::Committed)
                }
                Err(e) => {
                    // A commit refused (a conflict found at commit) ends the transaction
                    // rolled back; say so, in case it did not.
                    self.counters.rollbacks_sent.add(1);
                    let _ = self.session.execute("ROLLBACK");
                    Err(e)
                }
            },
            Ok(Outcome::RolledBack) => {
                self.counters.rollbacks_sent.add(1);
                self.session.execute("ROLLBACK")?;
                Ok(Outcome::RolledBack)
            }
            Err(e) => {
                self.counters.rollbacks_sent.add(1);
                let _ = self.session.execute("ROLLBACK");
                Err(e)
            }
        }
    }

    /// A transaction, its conflicts retried up to the step's limit and counted.
    fn transaction(&mut self, t: Txn) -> engine::Result<u64> {
        let mut tries = 0;
        loop {
            match self.attempt(t) {
                Ok(Outcome::Committed) => return Ok(1),
                Ok(Outcome::RolledBack) => {
                    self.counters.rollbacks[t as usize].add(1);
                    return Ok(1);
                }
                Err(e) => {
                    let Some(k) = CONFLICTS.iter().position(|c| *c == e.kind) else {
                        return Err(e);
                    };
                    self.counters.conflicts[t as usize][k].add(1);
                    if tries >= self.p.retries {
                        return Err(e);
                    }
                    tries += 1;
                    self.counters.retries[t as usize].add(1);
                }
            }
        }
    }
}

impl Worker for TpccWorker<'_> {
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let t = self.deck.draw(&mut self.rng);
        if self.p.home_warehouse == HomeWarehouse::Random {
            // tpcc-mysql's driver: a warehouse and a district drawn for each transaction
            // (its retries stay on them)
            self.home_w = self.int(1, self.warehouses);
            self.home_d = self.int(1, DISTRICTS as i64);
        }
        self.counters.dealt[t as usize].add(1);
        if let Some(n) = self.counters.by_warehouse.get(self.home_w as usize - 1) {
            n.add(1);
        }
        self.last = Some(t);
        (t as usize, self.transaction(t))
    }

    /// With `think_time = "spec"`: the think time after the last transaction (negative
    /// exponential, capped at ten times its mean) and the keying time before the next —
    /// which the deck draws now, so the pause is the one its type asks for.
    fn pause(&mut self) -> Option<Duration> {
        if self.p.think_time != ThinkTime::Spec {
            return None;
        }
        let next = self.deck.peek(&mut self.rng);
        Some(spec_pause(self.last, next, &mut self.rng))
    }
}

/// Clause 5.2.5's pause between two transactions: the last one's think time (negative
/// exponential around its mean, capped at ten times it) and the next one's keying time.
fn spec_pause(last: Option<Txn>, next: Txn, rng: &mut SplitMix64) -> Duration {
    let think = last.map_or(0.0, |t| {
        let mean = t.think_and_keying_s().0;
        (-(1.0 - rng.unit()).ln() * mean).min(10.0 * mean)
    });
    Duration::from_secs_f64(think + next.think_and_keying_s().1)
}

/// Ten-thousandths for a rate such as `0.1234`: [`Value::as_cents`] scaled by 100.
pub(super) trait Rate {
    fn as_cents_x100(&self) -> engine::Result<i64>;
}

impl Rate for Value {
    fn as_cents_x100(&self) -> engine::Result<i64> {
        match self {
            Value::Text(t) => t
                .parse::<f64>()
                .map(|f| (f * 10_000.0).round() as i64)
                .map_err(|_| EngineError::new("client", format!("not a rate: {t:?}"))),
            v => v.as_cents().map(|c| c * 100),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specifications_pauses_have_their_means_and_caps() {
        let mut rng = SplitMix64::stream(5, 6);
        // the first transaction of a terminal: keying time only
        assert_eq!(
            spec_pause(None, Txn::NewOrder, &mut rng),
            Duration::from_secs(18)
        );
        let n = 20_000;
        let mut sum = 0.0;
        let mut max = 0.0f64;
        for _ in 0..n {
            let p = spec_pause(Some(Txn::Payment), Txn::StockLevel, &mut rng).as_secs_f64();
            sum += p;
            max = max.max(p);
        }
        // Payment's 12 s mean think time (a little under, for the cap) and 2 s of keying
        let mean = sum / n as f64;
        assert!((13.3..14.3).contains(&mean), "{mean}");
        assert!(max <= 122.0 + 1e-9, "{max}");
    }
}
