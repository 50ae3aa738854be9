//! The five TPC-C transactions (clauses 2.4–2.8) as one client runs them: its home
//! warehouse, a shuffled deck of the standard mix, NURand keys with the run's C constants,
//! every statement prepared once, and conflicts (deadlocks, lock-wait timeouts,
//! serialization failures, SQLite busy) retried and counted by kind.

use super::{Counters, Mix, ThinkTime, TpccParams};
use crate::dataset::rng::SplitMix64;
use crate::dataset::tpcc::{self, Constants, DISTRICTS, ITEMS, nurand};
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

/// A transaction's prepared statements.
#[derive(Clone, Copy)]
enum S {
    NoCustomer,
    NoDistrict,
    NoDistrictUpdate,
    NoOrder,
    NoNewOrder,
    NoStockUpdate,
    PayWarehouseUpdate,
    PayWarehouse,
    PayDistrictUpdate,
    PayDistrict,
    CustomerByName,
    PayCustomer,
    PayCustomerData,
    PayCustomerUpdate,
    PayCustomerUpdateData,
    PayHistory,
    OsCustomer,
    OsOrder,
    OsLines,
    DlNewOrder,
    DlDeleteNewOrder,
    DlOrder,
    DlOrderUpdate,
    DlLinesUpdate,
    DlLinesSum,
    DlCustomerUpdate,
    SlNextOrder,
    SlCount,
}

const STATEMENTS: usize = S::SlCount as usize + 1;

/// The SQL of statement `s`; `lock` is the engine's `FOR UPDATE` (empty for SQLite, whose
/// writers hold the database's write lock from BEGIN IMMEDIATE).
fn sql(s: S, lock: &str) -> String {
    match s {
        S::NoCustomer => "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?".into(),
        S::NoDistrict => format!("SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ?{lock}"),
        S::NoDistrictUpdate => "UPDATE district SET d_next_o_id = ? WHERE d_w_id = ? AND d_id = ?".into(),
        S::NoOrder => "INSERT INTO orders (o_w_id, o_d_id, o_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)".into(),
        S::NoNewOrder => "INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES (?, ?, ?)".into(),
        S::NoStockUpdate => "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?".into(),
        S::PayWarehouseUpdate => "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?".into(),
        S::PayWarehouse => "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?".into(),
        S::PayDistrictUpdate => "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?".into(),
        S::PayDistrict => "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ? AND d_id = ?".into(),
        S::CustomerByName => "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first".into(),
        S::PayCustomer => format!("SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?{lock}"),
        S::PayCustomerData => "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        S::PayCustomerUpdate => "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        S::PayCustomerUpdateData => "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        S::PayHistory => "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)".into(),
        S::OsCustomer => "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        S::OsOrder => "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1".into(),
        S::OsLines => "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?".into(),
        S::DlNewOrder => format!("SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1{lock}"),
        // Delivery's ten orders at once, by each one's (w, d, o).
        S::DlDeleteNewOrder => format!("DELETE FROM new_order WHERE {}", ten("no_")),
        S::DlOrder => format!("SELECT o_d_id, o_c_id FROM orders WHERE {}", ten("o_")),
        S::DlOrderUpdate => format!("UPDATE orders SET o_carrier_id = ? WHERE {}", ten("o_")),
        S::DlLinesUpdate => format!("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE {}", ten("ol_")),
        S::DlLinesSum => format!("SELECT ol_d_id, SUM(ol_amount) FROM order_line WHERE {} GROUP BY ol_d_id", ten("ol_")),
        S::DlCustomerUpdate => "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        S::SlNextOrder => "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?".into(),
        S::SlCount => "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?".into(),
    }
}

/// `(w = ? AND d = ? AND o = ?) OR …` for the ten districts' orders (columns named with
/// `prefix`: `o_w_id`, `o_d_id`, `o_id`): a condition every engine plans as ten primary-key
/// lookups. (Row-value `IN` lists are not planned alike everywhere, and SQLite uses an index
/// for each term of an OR only when each names the whole key.)
fn ten(prefix: &str) -> String {
    let o = if prefix == "o_" {
        "o_id"
    } else {
        &format!("{prefix}o_id")
    };
    vec![format!("({prefix}w_id = ? AND {prefix}d_id = ? AND {o} = ?)"); DISTRICTS as usize]
        .join(" OR ")
}

const ALL: [S; STATEMENTS] = [
    S::NoCustomer,
    S::NoDistrict,
    S::NoDistrictUpdate,
    S::NoOrder,
    S::NoNewOrder,
    S::NoStockUpdate,
    S::PayWarehouseUpdate,
    S::PayWarehouse,
    S::PayDistrictUpdate,
    S::PayDistrict,
    S::CustomerByName,
    S::PayCustomer,
    S::PayCustomerData,
    S::PayCustomerUpdate,
    S::PayCustomerUpdateData,
    S::PayHistory,
    S::OsCustomer,
    S::OsOrder,
    S::OsLines,
    S::DlNewOrder,
    S::DlDeleteNewOrder,
    S::DlOrder,
    S::DlOrderUpdate,
    S::DlLinesUpdate,
    S::DlLinesSum,
    S::DlCustomerUpdate,
    S::SlNextOrder,
    S::SlCount,
];

/// The statements New-Order sends once for all its lines, one of each for every line count.
#[derive(Clone, Copy)]
enum Batch {
    /// The order's items, by `i_id IN (…)`.
    Items,
    /// One supplying warehouse's stock rows, locked, by `s_w_id = ? AND s_i_id IN (…)`.
    Stock,
    /// The order's lines, one multi-row INSERT.
    Lines,
}

/// Most lines an order has.
const MAX_LINES: usize = 15;

/// The SQL of a batch of `n` rows.
fn batch_sql(b: Batch, n: usize, lock: &str) -> String {
    let list = |one: &str| vec![one; n].join(", ");
    match b {
        Batch::Items => format!(
            "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({})",
            list("?")
        ),
        Batch::Stock => format!(
            "SELECT s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = ? AND s_i_id IN ({}){lock}",
            list("?")
        ),
        Batch::Lines => format!(
            "INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES {}",
            list("(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)")
        ),
    }
}

/// An order line's input: item, supplying warehouse, quantity.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Line {
    supply_w: i64,
    item: i64,
    quantity: i64,
}

/// What one attempt of a transaction came to.
enum Outcome {
    Committed,
    /// New-Order's 1 %: an unused item, rolled back as the specification asks.
    RolledBack,
}

/// One TPC-C terminal: a session, its home warehouse and district, and its random stream.
pub struct TpccWorker<'a> {
    session: Box<dyn Session>,
    stmts: [StmtId; STATEMENTS],
    /// `batches[b][n]`: batch `b` of `n` rows, prepared when first needed.
    batches: [[Option<StmtId>; MAX_LINES + 1]; 3],
    dialect: Dialect,
    lock: &'static str,
    begin_read: &'static str,
    begin_write: &'static str,
    p: &'a TpccParams,
    counters: &'a Counters,
    warehouses: i64,
    home_w: i64,
    /// Stock-Level's district: fixed for a terminal (clause 2.8.1.1).
    home_d: i64,
    c: Constants,
    rng: SplitMix64,
    deck: Mix,
    /// The last transaction's type, for its think time.
    last: Option<Txn>,
    row: Vec<Value>,
    lines: Vec<Line>,
    /// Each line's price (hundredths) and district info, in `lines` order.
    priced: Vec<(i64, Value)>,
    params: Vec<Value>,
    name: String,
}

impl<'a> TpccWorker<'a> {
    /// Terminal `client` of a run on `warehouses`: home warehouse `client % W + 1`.
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

    fn run(&mut self, s: S, params: &[Value]) -> engine::Result<u64> {
        self.session
            .run_rows(self.stmts[s as usize], params, &mut self.row)
    }

    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.rng.below_u64((hi - lo + 1) as u64) as i64
    }

    /// A warehouse other than the home one (the home one when there is only one).
    fn remote_w(&mut self) -> i64 {
        if self.warehouses == 1 {
            return self.home_w;
        }
        let w = self.int(1, self.warehouses - 1);
        if w >= self.home_w { w + 1 } else { w }
    }

    fn customer_id(&mut self) -> i64 {
        nurand(&mut self.rng, 1023, 1, tpcc::CUSTOMERS, self.c.c_id) as i64
    }

    /// The customer of clause 2.5.2.2's "by last name" rule: of those with the name, sorted
    /// by first name, the one at position ⌈n/2⌉.
    fn customer_by_name(&mut self, w: i64, d: i64) -> engine::Result<i64> {
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
    fn run_batch(&mut self, b: Batch, n: usize) -> engine::Result<u64> {
        let id = self.batch(b, n)?;
        self.session.run_rows(id, &self.params, &mut self.row)
    }

    /// The order's lines: 5 to 15 distinct items (the last an unused one in 1 % of orders),
    /// 1 % from another warehouse, sorted by warehouse and item so that every terminal locks
    /// stock rows in one order — fewer deadlocks, none hidden.
    fn order_lines(&mut self, w: i64) {
        let count = self.int(5, MAX_LINES as i64);
        let rollback = self.rng.chance(1);
        self.lines.clear();
        for i in 0..count {
            let item = if rollback && i == count - 1 {
                ITEMS as i64 + 1 // unused: the transaction rolls back when it finds it missing
            } else {
                loop {
                    let id = nurand(&mut self.rng, 8191, 1, ITEMS, self.c.ol_i_id) as i64;
                    if !self.lines.iter().any(|l| l.item == id) {
                        break id;
                    }
                }
            };
            let supply_w = if self.rng.chance(1) {
                self.remote_w()
            } else {
                w
            };
            let quantity = self.int(1, 10);
            self.lines.push(Line {
                supply_w,
                item,
                quantity,
            });
        }
        self.lines.sort_unstable();
    }

    /// Clause 2.4.2: the order, its new-order row and its lines, with the items read in one
    /// statement, each supplying warehouse's stock rows read and locked in one, and the lines
    /// inserted in one (each stock row is still updated on its own).
    fn new_order(&mut self) -> engine::Result<Outcome> {
        let (w, d) = (self.home_w, self.int(1, DISTRICTS as i64));
        let c = self.customer_id();
        self.order_lines(w);
        let n = self.lines.len();
        let all_local = self.lines.iter().all(|l| l.supply_w == w);
        let (wv, dv) = (Value::Int(w), Value::Int(d));
        self.run(S::NoCustomer, &[wv.clone(), dv.clone(), Value::Int(c)])?;
        let discount = self.cell(0, "c_discount")?.as_cents_x100()?;
        let w_tax = self.cell(3, "w_tax")?.as_cents_x100()?;
        self.run(S::NoDistrict, &[wv.clone(), dv.clone()])?;
        let o_id = self.cell(0, "d_next_o_id")?.as_i64()?;
        let d_tax = self.cell(1, "d_tax")?.as_cents_x100()?;
        self.run(
            S::NoDistrictUpdate,
            &[Value::Int(o_id + 1), wv.clone(), dv.clone()],
        )?;
        self.run(
            S::NoOrder,
            &[
                wv.clone(),
                dv.clone(),
                Value::Int(o_id),
                Value::Int(c),
                Value::Int(n as i64),
                Value::Int(all_local as i64),
            ],
        )?;
        self.run(S::NoNewOrder, &[wv.clone(), dv.clone(), Value::Int(o_id)])?;
        // The items: one missing is the planned rollback.
        self.params.clear();
        self.params
            .extend(self.lines.iter().map(|l| Value::Int(l.item)));
        if self.run_batch(Batch::Items, n)? < n as u64 {
            return Ok(Outcome::RolledBack);
        }
        if self.row.len() != 4 * n {
            return Err(EngineError::new(
                "data",
                "the items came back in another shape",
            ));
        }
        self.priced.clear();
        for l in 0..n {
            let item = self.lines[l].item;
            let price = self
                .row
                .chunks(4)
                .find(|r| r[0].as_i64().ok() == Some(item))
                .ok_or_else(|| EngineError::new("data", format!("item {item} not returned")))?[1]
                .as_cents()?;
            self.priced.push((price, Value::Null));
        }
        // The stock rows, each supplying warehouse's in one statement.
        let mut at = 0;
        while at < n {
            let supply_w = self.lines[at].supply_w;
            let end = at
                + self.lines[at..]
                    .iter()
                    .take_while(|l| l.supply_w == supply_w)
                    .count();
            self.params.clear();
            self.params.push(Value::Int(supply_w));
            self.params
                .extend(self.lines[at..end].iter().map(|l| Value::Int(l.item)));
            let found = self.run_batch(Batch::Stock, end - at)?;
            if found < (end - at) as u64 || self.row.len() != 13 * found as usize {
                return Err(EngineError::new(
                    "data",
                    format!("warehouse {supply_w} lacks stock rows for an order's items"),
                ));
            }
            for i in at..end {
                let l = self.lines[i];
                let k = self
                    .row
                    .chunks(13)
                    .position(|r| r[0].as_i64().ok() == Some(l.item))
                    .ok_or_else(|| {
                        EngineError::new("data", format!("stock {} not returned", l.item))
                    })?;
                let r = &mut self.row[k * 13..k * 13 + 13];
                let s_quantity = r[1].as_i64()?;
                self.priced[i].1 = std::mem::replace(&mut r[2 + d as usize], Value::Null);
                let quantity = if s_quantity >= l.quantity + 10 {
                    s_quantity - l.quantity
                } else {
                    s_quantity - l.quantity + 91
                };
                self.session.run(
                    self.stmts[S::NoStockUpdate as usize],
                    &[
                        Value::Int(quantity),
                        Value::Int(l.quantity),
                        Value::Int((l.supply_w != w) as i64),
                        Value::Int(l.supply_w),
                        Value::Int(l.item),
                    ],
                )?;
            }
            at = end;
        }
        // The lines, in one INSERT.
        let mut total = 0i64;
        self.params.clear();
        for (i, l) in self.lines.iter().enumerate() {
            let (price, dist) = &mut self.priced[i];
            let amount = l.quantity * *price;
            total += amount;
            self.params.extend([
                wv.clone(),
                dv.clone(),
                Value::Int(o_id),
                Value::Int(i as i64 + 1),
                Value::Int(l.item),
                Value::Int(l.supply_w),
                Value::Int(l.quantity),
                Value::cents(amount),
                std::mem::replace(dist, Value::Null),
            ]);
        }
        self.run_batch(Batch::Lines, n)?;
        // The terminal's total (clause 2.4.2.2), in ten-thousandths of a cent: computed, as
        // the specification asks, though only a screen would show it.
        std::hint::black_box(total * (10_000 - discount) * (10_000 + w_tax + d_tax));
        Ok(Outcome::Committed)
    }

    /// Column `i` of the first row read, or an error naming what was missing.
    fn cell(&self, i: usize, what: &str) -> engine::Result<&Value> {
        self.row
            .get(i)
            .ok_or_else(|| EngineError::new("data", format!("no row with {what}")))
    }

    fn payment(&mut self) -> engine::Result<Outcome> {
        let (w, d) = (self.home_w, self.int(1, DISTRICTS as i64));
        let (c_w, c_d) = if self.rng.chance(85) {
            (w, d)
        } else {
            (self.remote_w(), self.int(1, DISTRICTS as i64))
        };
        let amount = Value::cents(self.int(100, 500_000));
        let by_name = self.rng.chance(60);
        let (wv, dv) = (Value::Int(w), Value::Int(d));
        self.run(S::PayWarehouseUpdate, &[amount.clone(), wv.clone()])?;
        self.run(S::PayWarehouse, std::slice::from_ref(&wv))?;
        let w_name = self.cell(0, "w_name")?.clone();
        self.run(
            S::PayDistrictUpdate,
            &[amount.clone(), wv.clone(), dv.clone()],
        )?;
        self.run(S::PayDistrict, &[wv.clone(), dv.clone()])?;
        let d_name = self.cell(0, "d_name")?.clone();
        let c = if by_name {
            self.customer_by_name(c_w, c_d)?
        } else {
            self.customer_id()
        };
        let key = [Value::Int(c_w), Value::Int(c_d), Value::Int(c)];
        self.run(S::PayCustomer, &key)?;
        let bad_credit = matches!(self.cell(10, "c_credit")?, Value::Text(t) if t == "BC");
        if bad_credit {
            self.run(S::PayCustomerData, &key)?;
            let old = match self.cell(0, "c_data")? {
                Value::Text(t) => t.clone(),
                _ => String::new(),
            };
            let amount_text = match &amount {
                Value::Text(t) => t.as_str(),
                _ => "",
            };
            let mut data = format!("{c} {c_d} {c_w} {d} {w} {amount_text} | {old}");
            data.truncate(500);
            let [kw, kd, kc] = key;
            self.run(
                S::PayCustomerUpdateData,
                &[
                    amount.clone(),
                    amount.clone(),
                    Value::Text(data),
                    kw,
                    kd,
                    kc,
                ],
            )?;
        } else {
            let [kw, kd, kc] = key;
            self.run(
                S::PayCustomerUpdate,
                &[amount.clone(), amount.clone(), kw, kd, kc],
            )?;
        }
        let text = |v: &Value| match v {
            Value::Text(t) => t.clone(),
            _ => String::new(),
        };
        let h_data = format!("{}    {}", text(&w_name), text(&d_name));
        self.run(
            S::PayHistory,
            &[
                Value::Int(c),
                Value::Int(c_d),
                Value::Int(c_w),
                dv,
                wv,
                amount,
                Value::Text(h_data),
            ],
        )?;
        Ok(Outcome::Committed)
    }

    fn order_status(&mut self) -> engine::Result<Outcome> {
        let (w, d) = (self.home_w, self.int(1, DISTRICTS as i64));
        let c = if self.rng.chance(60) {
            self.customer_by_name(w, d)?
        } else {
            self.customer_id()
        };
        let key = [Value::Int(w), Value::Int(d), Value::Int(c)];
        self.run(S::OsCustomer, &key)?;
        if self.run(S::OsOrder, &key)? == 0 {
            return Err(EngineError::new(
                "data",
                format!("customer {c} of district {d}, warehouse {w} has no order"),
            ));
        }
        let o = self.cell(0, "o_id")?.clone();
        self.run(S::OsLines, &[Value::Int(w), Value::Int(d), o])?;
        Ok(Outcome::Committed)
    }

    /// Clause 2.7.4: the oldest undelivered order of each district, found one district at a
    /// time (each locked), then the ten delivered together: their new-order rows deleted,
    /// carriers set, lines dated and summed in one statement each; each customer credited.
    fn delivery(&mut self) -> engine::Result<Outcome> {
        let w = Value::Int(self.home_w);
        let carrier = Value::Int(self.int(1, 10));
        // (d, o) of each district's order; o = 0 (no such order) where there is none
        let mut orders = [0i64; DISTRICTS as usize];
        for (i, o) in orders.iter_mut().enumerate() {
            if self.run(S::DlNewOrder, &[w.clone(), Value::Int(i as i64 + 1)])? == 0 {
                // nothing to deliver in this district (clause 2.7.4.2 counts it)
                self.counters.skipped_deliveries.add(1);
                continue;
            }
            *o = self.cell(0, "no_o_id")?.as_i64()?;
        }
        if orders.iter().all(|o| *o == 0) {
            return Ok(Outcome::Committed);
        }
        let keyed = |head: &[Value]| {
            let mut p = head.to_vec();
            for (i, o) in orders.iter().enumerate() {
                p.extend([w.clone(), Value::Int(i as i64 + 1), Value::Int(*o)]);
            }
            p
        };
        let by_order = keyed(&[]);
        self.run(S::DlDeleteNewOrder, &by_order)?;
        self.run(S::DlOrder, &by_order)?;
        let mut customers = [0i64; DISTRICTS as usize];
        for (d, v) in district_pairs(&self.row)? {
            *slot(&mut customers, d)? = v.as_i64()?;
        }
        self.run(S::DlOrderUpdate, &keyed(&[carrier]))?;
        self.run(S::DlLinesUpdate, &by_order)?;
        self.run(S::DlLinesSum, &by_order)?;
        let mut sums = [0i64; DISTRICTS as usize];
        for (d, v) in district_pairs(&self.row)? {
            if *v != Value::Null {
                *slot(&mut sums, d)? = v.as_cents()?;
            }
        }
        for (i, o) in orders.iter().enumerate() {
            if *o == 0 {
                continue;
            }
            self.run(
                S::DlCustomerUpdate,
                &[
                    Value::cents(sums[i]),
                    w.clone(),
                    Value::Int(i as i64 + 1),
                    Value::Int(customers[i]),
                ],
            )?;
        }
        Ok(Outcome::Committed)
    }

    fn stock_level(&mut self) -> engine::Result<Outcome> {
        let (w, d) = (Value::Int(self.home_w), Value::Int(self.home_d));
        let threshold = self.int(10, 20);
        self.run(S::SlNextOrder, &[w.clone(), d.clone()])?;
        let next = self.cell(0, "d_next_o_id")?.as_i64()?;
        self.run(
            S::SlCount,
            &[
                w.clone(),
                d,
                Value::Int(next),
                Value::Int(next - 20),
                w,
                Value::Int(threshold),
            ],
        )?;
        Ok(Outcome::Committed)
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
        self.counters.dealt[t as usize].add(1);
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

/// Rows of (district, value) as a Delivery statement returns them.
fn district_pairs(row: &[Value]) -> engine::Result<Vec<(i64, &Value)>> {
    if !row.len().is_multiple_of(2) {
        return Err(EngineError::new(
            "data",
            "a row of (district, value) expected",
        ));
    }
    row.chunks(2).map(|r| Ok((r[0].as_i64()?, &r[1]))).collect()
}

/// District `d`'s place in a per-district array, or an error for a district that is none.
fn slot(per: &mut [i64; DISTRICTS as usize], d: i64) -> engine::Result<&mut i64> {
    usize::try_from(d - 1)
        .ok()
        .and_then(|i| per.get_mut(i))
        .ok_or_else(|| EngineError::new("data", format!("district {d} is not one of the ten")))
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
trait Rate {
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

    #[test]
    fn every_statement_has_its_sql_and_the_lock_only_where_asked() {
        for s in ALL {
            let plain = sql(s, "");
            assert!(!plain.contains("FOR UPDATE"), "{plain}");
            assert_eq!(
                plain.matches('?').count(),
                sql(s, " FOR UPDATE").matches('?').count()
            );
        }
        assert!(sql(S::DlNewOrder, " FOR UPDATE").ends_with("LIMIT 1 FOR UPDATE"));
        for n in 1..=MAX_LINES {
            assert_eq!(batch_sql(Batch::Items, n, "").matches('?').count(), n);
            assert_eq!(
                batch_sql(Batch::Stock, n, " FOR UPDATE")
                    .matches('?')
                    .count(),
                n + 1
            );
            assert_eq!(batch_sql(Batch::Lines, n, "").matches('?').count(), 9 * n);
        }
    }
}
