//! TPC-C's Order-Status (clause 2.6): a customer's balance, last order and its lines, read.

use super::statements::S;
use super::txn::{Outcome, TpccWorker};
use crate::dataset::tpcc::DISTRICTS;
use crate::engine::{self, EngineError, Value};

impl TpccWorker<'_> {
    pub(super) fn order_status(&mut self) -> engine::Result<Outcome> {
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
}
