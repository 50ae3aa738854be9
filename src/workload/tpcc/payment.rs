//! TPC-C's Payment (clause 2.5): a customer, found by id or by last name, pays an amount
//! to its district and warehouse (85 % its home one); a bad-credit customer's data grows.

use super::statements::S;
use super::txn::{Outcome, TpccWorker};
use crate::dataset::tpcc::DISTRICTS;
use crate::engine::{self, Value};

impl TpccWorker<'_> {
    pub(super) fn payment(&mut self) -> engine::Result<Outcome> {
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
            self.run_changing(
                S::PayCustomerUpdateData,
                &[
                    amount.clone(),
                    amount.clone(),
                    Value::Text(data),
                    kw,
                    kd,
                    kc,
                ],
                1,
                "Payment's customer",
            )?;
        } else {
            let [kw, kd, kc] = key;
            self.run_changing(
                S::PayCustomerUpdate,
                &[amount.clone(), amount.clone(), kw, kd, kc],
                1,
                "Payment's customer",
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
}
