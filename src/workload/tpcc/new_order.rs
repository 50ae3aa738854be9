//! TPC-C's New-Order (clause 2.4): an order of 5 to 15 lines entered for a customer, the
//! district's next order id taken, each line's stock updated; 1 % roll back on an unused item.

use super::statements::{Batch, MAX_LINES, S};
use super::txn::{Line, Outcome, Rate, TpccWorker};
use crate::dataset::tpcc::{DISTRICTS, ITEMS, nurand};
use crate::engine::{self, EngineError, Value};

impl TpccWorker<'_> {
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
    pub(super) fn new_order(&mut self) -> engine::Result<Outcome> {
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
        if !self.price_items(n)? {
            return Ok(Outcome::RolledBack);
        }
        self.take_stock(w, d)?;
        let total = self.insert_lines(&wv, &dv, o_id)?;
        // The terminal's total (clause 2.4.2.2), in ten-thousandths of a cent: computed, as
        // the specification asks, though only a screen would show it.
        std::hint::black_box(total * (10_000 - discount) * (10_000 + w_tax + d_tax));
        Ok(Outcome::Committed)
    }

    /// The order's `n` items, read in one statement, each line's price kept in `priced`;
    /// `false` when one is missing: the planned rollback.
    fn price_items(&mut self, n: usize) -> engine::Result<bool> {
        self.params.clear();
        self.params
            .extend(self.lines.iter().map(|l| Value::Int(l.item)));
        if self.run_batch(Batch::Items, n)? < n as u64 {
            return Ok(false);
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
        Ok(true)
    }

    /// The stock rows, each supplying warehouse's read and locked in one statement, then
    /// each updated on its own; each line's district info (district `d`'s) kept in `priced`.
    fn take_stock(&mut self, w: i64, d: i64) -> engine::Result<()> {
        let n = self.lines.len();
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
        Ok(())
    }

    /// The order's lines, in one INSERT; the order's total, hundredths.
    fn insert_lines(&mut self, wv: &Value, dv: &Value, o_id: i64) -> engine::Result<i64> {
        let n = self.lines.len();
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
        Ok(total)
    }
}
