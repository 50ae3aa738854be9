//! TPC-H's refresh functions (clause 2.5): RF1 inserts a refresh set's SF × 1,500 new orders
//! with their 1 to 7 lines each, RF2 deletes SF × 1,500 old orders and their lines, each in
//! one transaction, timed. The rows come from the dataset's generator
//! ([`crate::dataset::tpch::Tpch::refresh_tsv`]): new keys in the update key space, deleted
//! keys loaded ones (the specification's rule), as many lines added as deleted, so a pair
//! RF1 + RF2 leaves `orders` and `lineitem` holding as many rows as before. Which set a pair
//! uses is read from the database (the first set whose first key is not there), so every
//! step of a run, and every contender, applies the same sets in the same order.
//!
//! Written as SQL text through [`Session::execute`] with literals, in the engine's
//! [`Dialect`]: no step asks which engine it talks to.

use crate::dataset::tpch::{REFRESH_SETS, Table, Tpch};
use crate::dataset::{Column, ColumnType};
use crate::engine::{Dialect, EngineError, Session};
use serde::Serialize;
use std::time::Instant;

/// Rows one `INSERT` carries, and keys one `DELETE` names.
const BATCH: usize = 200;

/// One pair's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    /// The refresh set (1 for the first a database gets).
    pub set: u64,
    pub rf1_s: f64,
    pub rf2_s: f64,
    /// Rows RF1 inserted into `orders` and `lineitem`.
    pub rf1_rows: u64,
    /// Rows RF2 deleted from `lineitem` and `orders`.
    pub rf2_rows: u64,
}

/// Why a refresh function could not run.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error("{what} of refresh set {set} failed: {source}")]
    Engine {
        what: &'static str,
        set: u64,
        #[source]
        source: EngineError,
    },
    #[error(
        "every one of the {REFRESH_SETS} refresh sets the key space holds was applied already; \
         load the dataset again (a `load` step) before running more refresh functions"
    )]
    Exhausted,
}

/// The first refresh set not applied to the database yet: the first whose first new key
/// `orders` does not hold (one primary-key probe a set applied before).
pub fn next_set(session: &mut dyn Session, tpch: &Tpch) -> Result<u64, RefreshError> {
    match applied(session, tpch)? {
        n if n < REFRESH_SETS => Ok(n + 1),
        _ => Err(RefreshError::Exhausted),
    }
}

/// How many refresh sets' RF1 the database holds: the sets before the first whose first new
/// key `orders` does not hold.
fn applied(session: &mut dyn Session, tpch: &Tpch) -> Result<u64, RefreshError> {
    for set in 1..=REFRESH_SETS {
        let Some(key) = tpch.refresh_key(set, 0) else {
            return Ok(set - 1);
        };
        if !holds(session, key, set, "finding the next set")? {
            return Ok(set - 1);
        }
    }
    Ok(REFRESH_SETS)
}

/// Does `orders` hold the order keyed `key`?
fn holds(
    session: &mut dyn Session,
    key: u64,
    set: u64,
    what: &'static str,
) -> Result<bool, RefreshError> {
    let sql = format!("SELECT COUNT(*) FROM orders WHERE o_orderkey = {key}");
    let n = session
        .query_i64(&sql)
        .map_err(|source| RefreshError::Engine { what, set, source })?;
    Ok(n > 0)
}

/// The last refresh set whose RF1 ran and whose RF2 did not — a run stopped between the two
/// leaves it, with SF × 1,500 orders more than loaded — is completed: its RF2 runs now, so
/// the database holds the loaded counts again before this step counts them. The set, when
/// there was one.
pub fn complete_unfinished(
    session: &mut dyn Session,
    dialect: Dialect,
    tpch: &Tpch,
) -> Result<Option<u64>, RefreshError> {
    let last = applied(session, tpch)?;
    let Some(old) = tpch.refresh_old_key(last, 0) else {
        return Ok(None); // none applied
    };
    if !holds(session, old, last, "finding an unfinished set")? {
        return Ok(None);
    }
    rf2(session, dialect, tpch, last)?;
    Ok(Some(last))
}

/// RF1 of `set`: its orders, then their lines, in one transaction. (seconds, rows).
pub fn rf1(
    session: &mut dyn Session,
    dialect: Dialect,
    tpch: &Tpch,
    set: u64,
) -> Result<(f64, u64), RefreshError> {
    let mut statements = Vec::new();
    for t in [Table::Orders, Table::Lineitem] {
        let mut tsv = Vec::new();
        tpch.refresh_tsv(set, t, &mut tsv);
        let rows = values(&tsv, t.columns());
        for chunk in rows.chunks(BATCH) {
            statements.push(format!(
                "INSERT INTO {} VALUES {}",
                t.name(),
                chunk.join(",")
            ));
        }
    }
    transaction(session, dialect, &statements).map_err(|source| RefreshError::Engine {
        what: "RF1",
        set,
        source,
    })
}

/// RF2 of `set`: the old orders' lines, then the orders, in one transaction. (seconds, rows).
pub fn rf2(
    session: &mut dyn Session,
    dialect: Dialect,
    tpch: &Tpch,
    set: u64,
) -> Result<(f64, u64), RefreshError> {
    let keys: Vec<String> = (0..tpch.refresh_orders())
        .filter_map(|i| tpch.refresh_old_key(set, i))
        .map(|k| k.to_string())
        .collect();
    let mut statements = Vec::new();
    for chunk in keys.chunks(BATCH) {
        let list = chunk.join(",");
        statements.push(format!("DELETE FROM lineitem WHERE l_orderkey IN ({list})"));
        statements.push(format!("DELETE FROM orders WHERE o_orderkey IN ({list})"));
    }
    transaction(session, dialect, &statements).map_err(|source| RefreshError::Engine {
        what: "RF2",
        set,
        source,
    })
}

/// Rows of `orders` and `lineitem`, as (before, after) a step's refresh functions; a step
/// checks they are the same, so the steps after it see as many rows as were loaded.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub orders: [i64; 2],
    pub lineitem: [i64; 2],
}

impl Counts {
    /// The rows now, as both before and after.
    pub fn now(session: &mut dyn Session) -> Result<Counts, EngineError> {
        let o = session.query_i64("SELECT COUNT(*) FROM orders")?;
        let l = session.query_i64("SELECT COUNT(*) FROM lineitem")?;
        Ok(Counts {
            orders: [o, o],
            lineitem: [l, l],
        })
    }

    /// Count again, as after.
    pub fn after(mut self, session: &mut dyn Session) -> Result<Counts, EngineError> {
        let now = Counts::now(session)?;
        self.orders[1] = now.orders[1];
        self.lineitem[1] = now.lineitem[1];
        Ok(self)
    }

    /// Why the counts differ, in words, or `None` when both tables hold as many rows.
    pub fn changed(&self) -> Option<String> {
        (self.orders[0] != self.orders[1] || self.lineitem[0] != self.lineitem[1]).then(|| {
            format!(
                "the refresh functions left orders with {} rows (before: {}) and lineitem with \
                 {} (before: {}); load the dataset again before running later steps",
                self.orders[1], self.orders[0], self.lineitem[1], self.lineitem[0]
            )
        })
    }
}

/// RF1 then RF2 of the next set.
pub fn pair(
    session: &mut dyn Session,
    dialect: Dialect,
    tpch: &Tpch,
) -> Result<Pair, RefreshError> {
    let set = next_set(session, tpch)?;
    let (rf1_s, rf1_rows) = rf1(session, dialect, tpch, set)?;
    let (rf2_s, rf2_rows) = rf2(session, dialect, tpch, set)?;
    Ok(Pair {
        set,
        rf1_s,
        rf2_s,
        rf1_rows,
        rf2_rows,
    })
}

/// Run `statements` in one write transaction, rolled back on the first error: (seconds from
/// the `BEGIN` to the end of the `COMMIT`, rows affected).
fn transaction(
    session: &mut dyn Session,
    dialect: Dialect,
    statements: &[String],
) -> Result<(f64, u64), EngineError> {
    let t = Instant::now();
    session.execute(dialect.begin_write())?;
    let mut rows = 0;
    for sql in statements {
        match session.execute(sql) {
            Ok(n) => rows += n,
            Err(e) => {
                // The statement's error is the one to report; a failed rollback adds nothing.
                let _ = session.execute("ROLLBACK");
                return Err(e);
            }
        }
    }
    session.execute("COMMIT")?;
    Ok((t.elapsed().as_secs_f64(), rows))
}

/// Tab-separated rows as SQL row literals `(1,'a',...)`: numbers as they are, text and
/// dates quoted.
fn values(tsv: &[u8], columns: &[Column]) -> Vec<String> {
    String::from_utf8_lossy(tsv)
        .lines()
        .map(|line| {
            let cells: Vec<String> = line
                .split('\t')
                .zip(columns)
                .map(|(cell, c)| literal(cell, &c.ty))
                .collect();
            format!("({})", cells.join(","))
        })
        .collect()
}

/// One cell as a SQL literal of its column's type.
fn literal(cell: &str, ty: &ColumnType) -> String {
    match ty {
        ColumnType::Integer | ColumnType::SmallInt | ColumnType::Decimal(..) => cell.to_string(),
        _ => format!("'{}'", cell.replace('\'', "''")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_literals_of_their_columns_types() {
        let tsv = b"9\t37\tO\t1234.56\t1996-01-02\t5-LOW\tClerk#000000001\t0\tit's\n";
        let rows = values(tsv, Table::Orders.columns());
        assert_eq!(
            rows,
            ["(9,37,'O',1234.56,'1996-01-02','5-LOW','Clerk#000000001',0,'it''s')"]
        );
    }
}
