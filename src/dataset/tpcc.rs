//! TPC-C's nine tables and their initial population, as the TPC-C specification (revision
//! 5.11) lays them out in clause 1.3 and fills them in clause 4.3.3.1, for W warehouses:
//! 100,000 items; per warehouse 100,000 stock rows and 10 districts; per district 3,000
//! customers (last names from the syllable table, NURand(255) after the first 1,000), one
//! history row each, 3,000 orders (customers in a random permutation, 5–15 lines each, the
//! first 2,100 delivered) and 900 new orders. Deterministic for a seed: each table's file is
//! written on its own, and what two tables must agree on (an order's line count) is a pure
//! function of the order's key.
//!
//! Money is `DECIMAL(12,2)` and rates `DECIMAL(4,4)`, as the specification types them;
//! primary-key columns come first in each table, in key order. Dates are one fixed instant
//! (the specification's "current date/time" of the load), so a seed names one dataset.

use super::digits::format_u64;
use super::rng::{SplitMix64, mix64};
use super::{Column, ColumnType, TableDef, col};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Items in the catalogue (clause 4.3.3.1).
pub const ITEMS: u64 = 100_000;
/// Districts a warehouse serves.
pub const DISTRICTS: u64 = 10;
/// Customers a district has.
pub const CUSTOMERS: u64 = 3_000;
/// Orders a district starts with; the last [`NEW_ORDERS`] are undelivered.
pub const ORDERS: u64 = 3_000;
/// Undelivered orders a district starts with (order ids 2,101–3,000).
pub const NEW_ORDERS: u64 = 900;
/// The first undelivered order id.
pub const FIRST_NEW_ORDER: u64 = ORDERS - NEW_ORDERS + 1;
/// The load's "current date/time".
pub const LOAD_TIME: &[u8] = b"2024-01-01 00:00:00";
/// The TSV spelling of NULL.
const NULL: &[u8] = b"\\N";

/// The syllables of clause 4.3.2.3: a last name is three of them, by the digits of a number
/// below 1,000.
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The last name of number `n` (0–999) into `out`, cleared first.
pub fn last_name(n: u64, out: &mut String) {
    out.clear();
    out.push_str(SYLLABLES[(n / 100 % 10) as usize]);
    out.push_str(SYLLABLES[(n / 10 % 10) as usize]);
    out.push_str(SYLLABLES[(n % 10) as usize]);
}

/// NURand(A, x, y) of clause 2.1.6: `(((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x`.
pub fn nurand(rng: &mut SplitMix64, a: u64, x: u64, y: u64, c: u64) -> u64 {
    let r1 = rng.below_u64(a + 1);
    let r2 = x + rng.below_u64(y - x + 1);
    (((r1 | r2) + c) % (y - x + 1)) + x
}

/// The C constants of NURand for customer last names (A = 255), customer ids (1023) and
/// item ids (8191).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Constants {
    pub c_last: u64,
    pub c_id: u64,
    pub ol_i_id: u64,
}

impl Constants {
    /// The constants the load used for a seed.
    pub fn load(seed: u64) -> Constants {
        let mut r = SplitMix64::stream(seed, 0x7bcc_c0de);
        Constants {
            c_last: r.below_u64(256),
            c_id: r.below_u64(1024),
            ol_i_id: r.below_u64(8192),
        }
    }

    /// The constants of a run (clause 2.1.6.1): the same C for customer and item ids, and a C
    /// for last names whose distance to the load's is in 65..=119 and neither 96 nor 112 —
    /// so the names a run looks up are not the load's distribution over again.
    pub fn run(seed: u64, load: Constants) -> Constants {
        let mut r = SplitMix64::stream(seed, 0x7bcc_0e11);
        loop {
            let c = r.below_u64(256);
            if run_c_last_allowed(load.c_last, c) {
                return Constants { c_last: c, ..load };
            }
        }
    }
}

/// Clause 2.1.6.1's rule for a run's C of last names against the load's.
pub fn run_c_last_allowed(load: u64, run: u64) -> bool {
    let d = load.abs_diff(run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

use ColumnType::{Char, Decimal, Integer, SmallInt, Timestamp, Varchar};
const MONEY: ColumnType = Decimal(12, 2);
const RATE: ColumnType = Decimal(4, 4);

const WAREHOUSE: &[Column] = &[
    col("w_id", Integer, true, false),
    col("w_name", Varchar(10), false, false),
    col("w_street_1", Varchar(20), false, false),
    col("w_street_2", Varchar(20), false, false),
    col("w_city", Varchar(20), false, false),
    col("w_state", Char(2), false, false),
    col("w_zip", Char(9), false, false),
    col("w_tax", RATE, false, false),
    col("w_ytd", MONEY, false, false),
];
const DISTRICT: &[Column] = &[
    col("d_w_id", Integer, true, false),
    col("d_id", SmallInt, true, false),
    col("d_name", Varchar(10), false, false),
    col("d_street_1", Varchar(20), false, false),
    col("d_street_2", Varchar(20), false, false),
    col("d_city", Varchar(20), false, false),
    col("d_state", Char(2), false, false),
    col("d_zip", Char(9), false, false),
    col("d_tax", RATE, false, false),
    col("d_ytd", MONEY, false, false),
    col("d_next_o_id", Integer, false, false),
];
const CUSTOMER: &[Column] = &[
    col("c_w_id", Integer, true, false),
    col("c_d_id", SmallInt, true, false),
    col("c_id", Integer, true, false),
    col("c_first", Varchar(16), false, false),
    col("c_middle", Char(2), false, false),
    col("c_last", Varchar(16), false, false),
    col("c_street_1", Varchar(20), false, false),
    col("c_street_2", Varchar(20), false, false),
    col("c_city", Varchar(20), false, false),
    col("c_state", Char(2), false, false),
    col("c_zip", Char(9), false, false),
    col("c_phone", Char(16), false, false),
    col("c_since", Timestamp, false, false),
    col("c_credit", Char(2), false, false),
    col("c_credit_lim", MONEY, false, false),
    col("c_discount", RATE, false, false),
    col("c_balance", MONEY, false, false),
    col("c_ytd_payment", MONEY, false, false),
    col("c_payment_cnt", Integer, false, false),
    col("c_delivery_cnt", Integer, false, false),
    col("c_data", Varchar(500), false, false),
];
const HISTORY: &[Column] = &[
    col("h_c_id", Integer, false, false),
    col("h_c_d_id", SmallInt, false, false),
    col("h_c_w_id", Integer, false, false),
    col("h_d_id", SmallInt, false, false),
    col("h_w_id", Integer, false, false),
    col("h_date", Timestamp, false, false),
    col("h_amount", Decimal(6, 2), false, false),
    col("h_data", Varchar(24), false, false),
];
const NEW_ORDER: &[Column] = &[
    col("no_w_id", Integer, true, false),
    col("no_d_id", SmallInt, true, false),
    col("no_o_id", Integer, true, false),
];
const ORDERS_COLS: &[Column] = &[
    col("o_w_id", Integer, true, false),
    col("o_d_id", SmallInt, true, false),
    col("o_id", Integer, true, false),
    col("o_c_id", Integer, false, false),
    col("o_entry_d", Timestamp, false, false),
    col("o_carrier_id", SmallInt, false, true),
    col("o_ol_cnt", SmallInt, false, false),
    col("o_all_local", SmallInt, false, false),
];
const ORDER_LINE: &[Column] = &[
    col("ol_w_id", Integer, true, false),
    col("ol_d_id", SmallInt, true, false),
    col("ol_o_id", Integer, true, false),
    col("ol_number", SmallInt, true, false),
    col("ol_i_id", Integer, false, false),
    col("ol_supply_w_id", Integer, false, false),
    col("ol_delivery_d", Timestamp, false, true),
    col("ol_quantity", SmallInt, false, false),
    col("ol_amount", Decimal(6, 2), false, false),
    col("ol_dist_info", Char(24), false, false),
];
const ITEM: &[Column] = &[
    col("i_id", Integer, true, false),
    col("i_im_id", Integer, false, false),
    col("i_name", Varchar(24), false, false),
    col("i_price", Decimal(5, 2), false, false),
    col("i_data", Varchar(50), false, false),
];
const STOCK: &[Column] = &[
    col("s_w_id", Integer, true, false),
    col("s_i_id", Integer, true, false),
    col("s_quantity", SmallInt, false, false),
    col("s_dist_01", Char(24), false, false),
    col("s_dist_02", Char(24), false, false),
    col("s_dist_03", Char(24), false, false),
    col("s_dist_04", Char(24), false, false),
    col("s_dist_05", Char(24), false, false),
    col("s_dist_06", Char(24), false, false),
    col("s_dist_07", Char(24), false, false),
    col("s_dist_08", Char(24), false, false),
    col("s_dist_09", Char(24), false, false),
    col("s_dist_10", Char(24), false, false),
    col("s_ytd", Integer, false, false),
    col("s_order_cnt", Integer, false, false),
    col("s_remote_cnt", Integer, false, false),
    col("s_data", Varchar(50), false, false),
];

/// The nine tables, in the order their files are written and loaded (the big ones first, so
/// parallel loads finish together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Stock,
    Customer,
    OrderLine,
    History,
    Orders,
    Item,
    NewOrder,
    District,
    Warehouse,
}

pub const TABLES: [Table; 9] = [
    Table::Stock,
    Table::Customer,
    Table::OrderLine,
    Table::History,
    Table::Orders,
    Table::Item,
    Table::NewOrder,
    Table::District,
    Table::Warehouse,
];

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Warehouse => "warehouse",
            Table::District => "district",
            Table::Customer => "customer",
            Table::History => "history",
            Table::NewOrder => "new_order",
            Table::Orders => "orders",
            Table::OrderLine => "order_line",
            Table::Item => "item",
            Table::Stock => "stock",
        }
    }

    fn columns(self) -> &'static [Column] {
        match self {
            Table::Warehouse => WAREHOUSE,
            Table::District => DISTRICT,
            Table::Customer => CUSTOMER,
            Table::History => HISTORY,
            Table::NewOrder => NEW_ORDER,
            Table::Orders => ORDERS_COLS,
            Table::OrderLine => ORDER_LINE,
            Table::Item => ITEM,
            Table::Stock => STOCK,
        }
    }

    /// The secondary indexes the transactions need: customers by last name (Payment and
    /// Order-Status), a customer's latest order (Order-Status).
    fn indexes(self) -> Vec<(String, Vec<String>)> {
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect();
        match self {
            Table::Customer => vec![(
                "idx_customer_name".into(),
                cols(&["c_w_id", "c_d_id", "c_last", "c_first"]),
            )],
            Table::Orders => vec![(
                "idx_orders_customer".into(),
                cols(&["o_w_id", "o_d_id", "o_c_id", "o_id"]),
            )],
            _ => Vec::new(),
        }
    }
}

/// The tables of a TPC-C database of `warehouses`, with the rows each starts with.
pub fn tables(seed: u64, warehouses: u64) -> Vec<TableDef> {
    let g = Tpcc { seed, warehouses };
    TABLES
        .iter()
        .map(|&t| TableDef {
            name: t.name().to_string(),
            columns: t.columns(),
            unique: Vec::new(),
            indexes: t.indexes(),
            rows: g.rows(t),
            foreign_keys: Vec::new(),
        })
        .collect()
}

/// Lines order `o_id` of district `(w, d)` has: 5 to 15, the same for the orders and the
/// order-line files.
pub fn order_lines(seed: u64, w: u64, d: u64, o: u64) -> u64 {
    5 + mix64(seed ^ mix64(0x01c0_0000 ^ (w << 32) ^ (d << 16) ^ o)) % 11
}

/// The population generator.
#[derive(Debug, Clone, Copy)]
pub struct Tpcc {
    pub seed: u64,
    pub warehouses: u64,
}

impl Tpcc {
    /// Rows `t` starts with.
    pub fn rows(&self, t: Table) -> u64 {
        let w = self.warehouses;
        match t {
            Table::Warehouse => w,
            Table::District => w * DISTRICTS,
            Table::Customer | Table::History | Table::Orders => w * DISTRICTS * CUSTOMERS,
            Table::NewOrder => w * DISTRICTS * NEW_ORDERS,
            Table::Item => ITEMS,
            Table::Stock => w * ITEMS,
            Table::OrderLine => (1..=w)
                .flat_map(|w| (1..=DISTRICTS).map(move |d| (w, d)))
                .flat_map(|(w, d)| (1..=ORDERS).map(move |o| order_lines(self.seed, w, d, o)))
                .sum(),
        }
    }

    /// Write table `n` (in [`TABLES`] order) to `path`; returns bytes written.
    pub fn write_tsv_file(&self, n: u64, path: &Path) -> io::Result<u64> {
        let t = TABLES
            .get(n as usize)
            .copied()
            .ok_or_else(|| io::Error::other(format!("tpcc has no table number {n}")))?;
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let bytes = self.write_tsv(t, &mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(bytes)
    }

    /// Write table `t`'s rows as tab-separated lines; returns bytes written.
    pub fn write_tsv(&self, t: Table, out: &mut impl Write) -> io::Result<u64> {
        let mut buf = Vec::with_capacity(1 << 16);
        let mut bytes = 0u64;
        let mut flush = |buf: &mut Vec<u8>, force: bool| -> io::Result<()> {
            if force || buf.len() >= 1 << 15 {
                out.write_all(buf)?;
                bytes += buf.len() as u64;
                buf.clear();
            }
            Ok(())
        };
        let mut r = SplitMix64::stream(self.seed, 0x7bcc_0000 + t as u64);
        let c = Constants::load(self.seed);
        let mut name = String::new();
        match t {
            Table::Item => {
                for i in 1..=ITEMS {
                    item_row(&mut r, i, &mut buf);
                    flush(&mut buf, false)?;
                }
            }
            _ => {
                for w in 1..=self.warehouses {
                    // One stream per warehouse and table: a warehouse's rows do not depend
                    // on how many came before it.
                    r = SplitMix64::stream(self.seed ^ (t as u64) << 56, w);
                    match t {
                        Table::Warehouse => address_row(&mut r, &[w], 30_000_000, &mut buf),
                        Table::Stock => {
                            for i in 1..=ITEMS {
                                stock_row(&mut r, w, i, &mut buf);
                                flush(&mut buf, false)?;
                            }
                        }
                        _ => {
                            for d in 1..=DISTRICTS {
                                self.district_rows(t, &mut r, c, w, d, &mut name, &mut buf);
                                flush(&mut buf, false)?;
                            }
                        }
                    }
                    flush(&mut buf, false)?;
                }
            }
        }
        flush(&mut buf, true)?;
        Ok(bytes)
    }

    /// Rows of table `t` that belong to district `(w, d)`.
    #[allow(clippy::too_many_arguments)]
    fn district_rows(
        &self,
        t: Table,
        r: &mut SplitMix64,
        c: Constants,
        w: u64,
        d: u64,
        name: &mut String,
        buf: &mut Vec<u8>,
    ) {
        match t {
            Table::District => {
                address_row(r, &[w, d], 3_000_000, buf);
                // the district has one column more than a warehouse: d_next_o_id
                buf.pop();
                buf.push(b'\t');
                push_u64(buf, ORDERS + 1);
                buf.push(b'\n');
            }
            Table::Customer => {
                for id in 1..=CUSTOMERS {
                    let n = if id <= 1000 {
                        id - 1
                    } else {
                        nurand(r, 255, 0, 999, c.c_last)
                    };
                    last_name(n, name);
                    customer_row(r, [w, d, id], name, buf);
                }
            }
            Table::History => {
                for id in 1..=CUSTOMERS {
                    for v in [id, d, w, d, w] {
                        push_u64(buf, v);
                        buf.push(b'\t');
                    }
                    buf.extend_from_slice(LOAD_TIME);
                    buf.extend_from_slice(b"\t10.00\t");
                    a_string(r, 12, 24, buf);
                    buf.push(b'\n');
                }
            }
            Table::Orders => self.orders_rows(r, w, d, buf),
            Table::OrderLine => self.order_line_rows(r, w, d, buf),
            Table::NewOrder => {
                for o in FIRST_NEW_ORDER..=ORDERS {
                    for (i, v) in [w, d, o].into_iter().enumerate() {
                        if i > 0 {
                            buf.push(b'\t');
                        }
                        push_u64(buf, v);
                    }
                    buf.push(b'\n');
                }
            }
            Table::Warehouse | Table::Item | Table::Stock => {
                unreachable!("not a district's rows")
            }
        }
    }

    /// A district's `orders` rows: each customer's one order, in a random order of customers.
    fn orders_rows(&self, r: &mut SplitMix64, w: u64, d: u64, buf: &mut Vec<u8>) {
        // o_c_id: a random permutation of the district's customers.
        let mut perm: Vec<u64> = (1..=CUSTOMERS).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, r.below_u64(i as u64 + 1) as usize);
        }
        for o in 1..=ORDERS {
            for v in [w, d, o, perm[o as usize - 1]] {
                push_u64(buf, v);
                buf.push(b'\t');
            }
            buf.extend_from_slice(LOAD_TIME);
            buf.push(b'\t');
            if o < FIRST_NEW_ORDER {
                push_u64(buf, 1 + r.below_u64(10));
            } else {
                buf.extend_from_slice(NULL);
            }
            buf.push(b'\t');
            push_u64(buf, order_lines(self.seed, w, d, o));
            buf.extend_from_slice(b"\t1\n");
        }
    }

    /// A district's `order_line` rows: each order's lines, delivered before `FIRST_NEW_ORDER`.
    fn order_line_rows(&self, r: &mut SplitMix64, w: u64, d: u64, buf: &mut Vec<u8>) {
        for o in 1..=ORDERS {
            for n in 1..=order_lines(self.seed, w, d, o) {
                for v in [w, d, o, n, 1 + r.below_u64(ITEMS), w] {
                    push_u64(buf, v);
                    buf.push(b'\t');
                }
                if o < FIRST_NEW_ORDER {
                    buf.extend_from_slice(LOAD_TIME);
                    buf.extend_from_slice(b"\t5\t0.00\t");
                } else {
                    buf.extend_from_slice(NULL);
                    buf.extend_from_slice(b"\t5\t");
                    push_cents(buf, 1 + r.below_u64(999_999) as i64);
                    buf.push(b'\t');
                }
                a_string(r, 24, 24, buf);
                buf.push(b'\n');
            }
        }
    }
}

fn push_u64(buf: &mut Vec<u8>, v: u64) {
    let mut num = [0u8; 20];
    buf.extend_from_slice(format_u64(v, &mut num));
}

/// An amount in hundredths as `123.45`.
pub fn push_cents(buf: &mut Vec<u8>, cents: i64) {
    if cents < 0 {
        buf.push(b'-');
    }
    let c = cents.unsigned_abs();
    push_u64(buf, c / 100);
    buf.push(b'.');
    buf.push(b'0' + (c / 10 % 10) as u8);
    buf.push(b'0' + (c % 10) as u8);
}

/// A rate in ten-thousandths as `0.1234`.
fn push_rate(buf: &mut Vec<u8>, r: u64) {
    buf.extend_from_slice(b"0.");
    let mut num = [0u8; 20];
    let digits = format_u64(r, &mut num);
    buf.extend(std::iter::repeat_n(b'0', 4 - digits.len()));
    buf.extend_from_slice(digits);
}

const ALNUM: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A random a-string (clause 4.3.2.2): `lo` to `hi` alphanumeric characters.
fn a_string(r: &mut SplitMix64, lo: u64, hi: u64, buf: &mut Vec<u8>) {
    let n = lo + r.below_u64(hi - lo + 1);
    let mut bits = 0u64;
    for i in 0..n {
        if i % 10 == 0 {
            bits = r.next_u64();
        }
        // 6 bits a character, scaled to 62 (a bias of 2 in 64 is irrelevant here)
        buf.push(ALNUM[(((bits & 63) * 62) >> 6) as usize]);
        bits >>= 6;
    }
}

/// A random n-string: `n` digits.
fn n_string(r: &mut SplitMix64, n: u64, buf: &mut Vec<u8>) {
    for _ in 0..n {
        buf.push(b'0' + r.below(10) as u8);
    }
}

/// An i_data/s_data: 26 to 50 characters, 10 % with "ORIGINAL" at a random place.
fn data_string(r: &mut SplitMix64, buf: &mut Vec<u8>) {
    let at = buf.len();
    a_string(r, 26, 50, buf);
    if r.chance(10) {
        let len = buf.len() - at;
        let p = at + r.below_u64((len - 8 + 1) as u64) as usize;
        buf[p..p + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// Street 1, street 2, city, state, zip (4 random digits and `11111`), each followed by a tab.
fn address(r: &mut SplitMix64, buf: &mut Vec<u8>) {
    for _ in 0..3 {
        a_string(r, 10, 20, buf);
        buf.push(b'\t');
    }
    for _ in 0..2 {
        buf.push(b'A' + r.below(26) as u8);
    }
    buf.push(b'\t');
    n_string(r, 4, buf);
    buf.extend_from_slice(b"11111\t");
}

/// A warehouse (`keys` = [w]) or district ([w, d]) row: keys, name, address, tax, YTD.
fn address_row(r: &mut SplitMix64, keys: &[u64], ytd_cents: i64, buf: &mut Vec<u8>) {
    for k in keys {
        push_u64(buf, *k);
        buf.push(b'\t');
    }
    a_string(r, 6, 10, buf);
    buf.push(b'\t');
    address(r, buf);
    push_rate(buf, r.below_u64(2001));
    buf.push(b'\t');
    push_cents(buf, ytd_cents);
    buf.push(b'\n');
}

fn item_row(r: &mut SplitMix64, i: u64, buf: &mut Vec<u8>) {
    push_u64(buf, i);
    buf.push(b'\t');
    push_u64(buf, 1 + r.below_u64(10_000));
    buf.push(b'\t');
    a_string(r, 14, 24, buf);
    buf.push(b'\t');
    push_cents(buf, 100 + r.below_u64(9_901) as i64);
    buf.push(b'\t');
    data_string(r, buf);
    buf.push(b'\n');
}

fn stock_row(r: &mut SplitMix64, w: u64, i: u64, buf: &mut Vec<u8>) {
    push_u64(buf, w);
    buf.push(b'\t');
    push_u64(buf, i);
    buf.push(b'\t');
    push_u64(buf, 10 + r.below_u64(91));
    buf.push(b'\t');
    for _ in 0..10 {
        a_string(r, 24, 24, buf);
        buf.push(b'\t');
    }
    buf.extend_from_slice(b"0\t0\t0\t");
    data_string(r, buf);
    buf.push(b'\n');
}

fn customer_row(r: &mut SplitMix64, keys: [u64; 3], last: &str, buf: &mut Vec<u8>) {
    for k in keys {
        push_u64(buf, k);
        buf.push(b'\t');
    }
    a_string(r, 8, 16, buf);
    buf.extend_from_slice(b"\tOE\t");
    buf.extend_from_slice(last.as_bytes());
    buf.push(b'\t');
    address(r, buf);
    n_string(r, 16, buf);
    buf.push(b'\t');
    buf.extend_from_slice(LOAD_TIME);
    buf.extend_from_slice(if r.chance(10) { b"\tBC\t" } else { b"\tGC\t" });
    buf.extend_from_slice(b"50000.00\t");
    push_rate(buf, r.below_u64(5001));
    buf.extend_from_slice(b"\t-10.00\t10.00\t1\t0\t");
    a_string(r, 300, 500, buf);
    buf.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(t: Table, w: u64) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        Tpcc {
            seed: 7,
            warehouses: w,
        }
        .write_tsv(t, &mut out)
        .expect("write");
        String::from_utf8(out)
            .expect("ascii")
            .lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    }

    #[test]
    fn every_table_has_its_rows_and_columns() {
        let g = Tpcc {
            seed: 7,
            warehouses: 1,
        };
        for t in TABLES {
            let rows = lines(t, 1);
            assert_eq!(rows.len() as u64, g.rows(t), "{}", t.name());
            for r in &rows {
                assert_eq!(r.len(), t.columns().len(), "{}: {r:?}", t.name());
            }
        }
    }

    #[test]
    fn orders_and_order_lines_agree_and_the_last_900_are_new() {
        let orders = lines(Table::Orders, 1);
        let ol = lines(Table::OrderLine, 1);
        let sum: u64 = orders.iter().map(|o| o[6].parse::<u64>().unwrap()).sum();
        assert_eq!(sum, ol.len() as u64);
        // delivered orders have a carrier; new ones none, and their lines no delivery date
        assert!(orders.iter().all(|o| {
            let id: u64 = o[2].parse().unwrap();
            (o[5] == "\\N") == (id >= FIRST_NEW_ORDER)
        }));
        assert!(ol.iter().all(|l| {
            let id: u64 = l[2].parse().unwrap();
            (l[6] == "\\N") == (id >= FIRST_NEW_ORDER) && (l[8] == "0.00") == (id < FIRST_NEW_ORDER)
        }));
        // each district's customers appear once among its orders
        let mut c: Vec<u64> = orders
            .iter()
            .filter(|o| o[1] == "3")
            .map(|o| o[3].parse().unwrap())
            .collect();
        c.sort();
        assert_eq!(c, (1..=CUSTOMERS).collect::<Vec<_>>());
    }

    #[test]
    fn customers_have_the_specified_names_and_credit() {
        let rows = lines(Table::Customer, 1);
        let mut name = String::new();
        last_name(0, &mut name);
        assert_eq!(rows[0][5], "BARBARBAR");
        last_name(371, &mut name);
        assert_eq!(name, "PRICALLYOUGHT");
        assert_eq!(rows[371][5], "PRICALLYOUGHT");
        let bad = rows.iter().filter(|r| r[13] == "BC").count() as f64 / rows.len() as f64;
        assert!((0.08..0.12).contains(&bad), "{bad}");
        let data = lines(Table::Item, 1);
        let original = data.iter().filter(|r| r[4].contains("ORIGINAL")).count();
        assert!((9_000..11_000).contains(&original), "{original}");
        assert!(data.iter().all(|r| (26..=50).contains(&r[4].len())));
    }

    #[test]
    fn nurand_and_the_run_constant_follow_the_specification() {
        let load = Constants::load(42);
        let run = Constants::run(42, load);
        assert!(run_c_last_allowed(load.c_last, run.c_last));
        assert_eq!((run.c_id, run.ol_i_id), (load.c_id, load.ol_i_id));
        assert!(!run_c_last_allowed(10, 106));
        assert!(!run_c_last_allowed(10, 122));
        assert!(run_c_last_allowed(10, 75));
        assert!(!run_c_last_allowed(10, 74));
        let mut r = SplitMix64::stream(1, 2);
        let mut hist = vec![0u32; 3000];
        for _ in 0..300_000 {
            let v = nurand(&mut r, 1023, 1, 3000, run.c_id);
            assert!((1..=3000).contains(&v));
            hist[v as usize - 1] += 1;
        }
        // non-uniform: the busiest customers are asked for far more than the mean of 100
        let max = *hist.iter().max().unwrap();
        assert!(max > 300, "{max}");
    }

    #[test]
    fn the_same_seed_writes_the_same_rows() {
        assert_eq!(lines(Table::District, 2), lines(Table::District, 2));
        // a warehouse's rows do not depend on the warehouses before it
        assert_eq!(
            lines(Table::District, 2)[..10],
            lines(Table::District, 1)[..]
        );
    }
}
