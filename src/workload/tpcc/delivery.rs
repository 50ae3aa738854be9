//! TPC-C's Delivery (clause 2.7): the oldest undelivered order of each of a warehouse's ten
//! districts delivered, in one transaction.

use super::statements::S;
use super::txn::{Outcome, TpccWorker};
use crate::dataset::tpcc::DISTRICTS;
use crate::engine::{self, EngineError, Value};

impl TpccWorker<'_> {
    /// Clause 2.7.4: the oldest undelivered order of each district, found one district at a
    /// time (each locked), then the ten delivered together: their new-order rows deleted,
    /// carriers set, lines dated and summed in one statement each; each customer credited.
    pub(super) fn delivery(&mut self) -> engine::Result<Outcome> {
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
        let found = orders.iter().filter(|o| **o != 0).count() as u64;
        self.run_changing(
            S::DlDeleteNewOrder,
            &by_order,
            found,
            "Delivery's new-order rows",
        )?;
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
            self.run_changing(
                S::DlCustomerUpdate,
                &[
                    Value::cents(sums[i]),
                    w.clone(),
                    Value::Int(i as i64 + 1),
                    Value::Int(customers[i]),
                ],
                1,
                "Delivery's customer",
            )?;
        }
        Ok(Outcome::Committed)
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
