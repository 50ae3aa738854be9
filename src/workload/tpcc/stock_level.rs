//! TPC-C's Stock-Level (clause 2.8): how many items of a district's last 20 orders are below
//! a stock threshold, read.

use super::statements::S;
use super::txn::{Outcome, TpccWorker};
use crate::engine::{self, Value};

impl TpccWorker<'_> {
    pub(super) fn stock_level(&mut self) -> engine::Result<Outcome> {
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
}
