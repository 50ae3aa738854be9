//! The TPC-C transactions' SQL: every statement a terminal prepares once, and New-Order's
//! batches (one of each for every line count), with the engine's `FOR UPDATE` where a row is
//! locked.

use crate::dataset::tpcc::DISTRICTS;

/// A transaction's prepared statements.
#[derive(Clone, Copy)]
pub(super) enum S {
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

pub(super) const STATEMENTS: usize = S::SlCount as usize + 1;

/// The SQL of statement `s`; `lock` is the engine's `FOR UPDATE` (empty for SQLite, whose
/// writers hold the database's write lock from BEGIN IMMEDIATE).
pub(super) fn sql(s: S, lock: &str) -> String {
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

pub(super) const ALL: [S; STATEMENTS] = [
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
pub(super) enum Batch {
    /// The order's items, by `i_id IN (…)`.
    Items,
    /// One supplying warehouse's stock rows, locked, by `s_w_id = ? AND s_i_id IN (…)`.
    Stock,
    /// The order's lines, one multi-row INSERT.
    Lines,
}

/// Most lines an order has.
pub(super) const MAX_LINES: usize = 15;

/// The SQL of a batch of `n` rows.
pub(super) fn batch_sql(b: Batch, n: usize, lock: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
