//! Built-in scripts, named `builtin:NAME` in a step's `scripts`: pgbench's built-in
//! transactions as its manual describes them (`tpcb-like`, `simple-update`, `select-only`)
//! over pgbench's four tables, and `pgbench-init`, which creates those tables and fills them
//! for `:scale` in portable SQL (no generator of dbduel's makes them).

/// pgbench's default transaction, TPC-B-like: `COMMIT` rather than PostgreSQL's `END`, so
/// every engine takes it.
const TPCB_LIKE: &str = r"\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
COMMIT;
";

/// pgbench's `simple-update` (`-N`): the TPC-B-like transaction without the tellers' and
/// branches' updates.
const SIMPLE_UPDATE: &str = r"\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
COMMIT;
";

/// pgbench's `select-only` (`-S`).
const SELECT_ONLY: &str = r"\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

/// The ten digits as a derived table, for numbering rows without a series function.
const DIGITS: &str = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";

/// pgbench's tables for `:scale` (1 to 9999): one branch, 10 tellers and 100,000 accounts
/// per unit of scale, balances 0, history empty. Run it once, by one client.
fn pgbench_init() -> String {
    let d = DIGITS;
    format!(
        r"DROP TABLE IF EXISTS pgbench_history;
DROP TABLE IF EXISTS pgbench_tellers;
DROP TABLE IF EXISTS pgbench_accounts;
DROP TABLE IF EXISTS pgbench_branches;
CREATE TABLE pgbench_branches (bid INTEGER NOT NULL PRIMARY KEY, bbalance INTEGER NOT NULL, filler CHAR(88));
CREATE TABLE pgbench_tellers (tid INTEGER NOT NULL PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL, filler CHAR(84));
CREATE TABLE pgbench_accounts (aid INTEGER NOT NULL PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL, filler CHAR(84));
CREATE TABLE pgbench_history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TIMESTAMP, filler CHAR(22));
INSERT INTO pgbench_branches (bid, bbalance, filler)
  SELECT n, 0, '' FROM (SELECT 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS n
    FROM {d} a, {d} b, {d} c, {d} e) t
  WHERE n <= :scale;
INSERT INTO pgbench_tellers (tid, bid, tbalance, filler)
  SELECT (br.bid - 1) * 10 + 1 + a.d, br.bid, 0, '' FROM pgbench_branches br, {d} a;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler)
  SELECT (br.bid - 1) * 100000 + 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d, br.bid, 0, ''
  FROM pgbench_branches br, {d} a, {d} b, {d} c, {d} e, {d} f;
"
    )
}

/// Every built-in script's name.
pub const NAMES: &[&str] = &["tpcb-like", "simple-update", "select-only", "pgbench-init"];

/// The text of built-in script `name`.
pub fn get(name: &str) -> Option<String> {
    Some(match name {
        "tpcb-like" => TPCB_LIKE.to_string(),
        "simple-update" => SIMPLE_UPDATE.to_string(),
        "select-only" => SELECT_ONLY.to_string(),
        "pgbench-init" => pgbench_init(),
        _ => return None,
    })
}
