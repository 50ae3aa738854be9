//! The `script` step end to end with no server: the real binary makes pgbench's tables with
//! the built-in `pgbench-init`, runs the built-in `tpcb-like` transaction and a script of the
//! user's own (`\gset`, `\if`, `\sleep`, weights) on SQLite, and the tables it leaves
//! behind (`--keep`) agree with what the transactions did and with the step's own counts.
//! On the `dry` engine, the interpreter's cost per statement is printed beside a prepared
//! statement's.

mod common;

use common::{figure, read_json, run, run_dir, step};
use rusqlite::Connection;

const STUDY: &str = r#"
[study]
name = "scripts"
description = "pgbench's transactions as scripts"

[dataset]
generator = "user_logs"
rows = 100

[[contender]]
name = "lite"
engine = "sqlite"

[[step]]
name = "init"
kind = "script"
scripts = ["builtin:pgbench-init"]
clients = 1
per_client = 1
scale = 2

[[step]]
name = "tpcb"
kind = "script"
scripts = ["builtin:tpcb-like"]
clients = 3
per_client = 150
scale = 2

[[step]]
name = "mine"
kind = "script"
scripts = ["mine.sql@3", "builtin:select-only@1"]
clients = 2
per_client = 100
scale = 2
vars = { marker = 0 }
"#;

/// A user's script: reads a row into variables, branches on it, and writes a marker row
/// (`tid = :marker`) whose delta says which branch ran and which client ran it.
const MINE: &str = r"-- the user's own transaction
\set n :client_id + 1
\set aid random(1, 100000 * :scale)
SELECT abalance, bid
  FROM pgbench_accounts WHERE aid = :aid \gset acc_
\if :acc_bid < 1
  INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:marker, 0, :aid, -1000, CURRENT_TIMESTAMP);
\elif :acc_bid <= :scale
  INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
    VALUES (:marker, :acc_bid, :aid, :n, CURRENT_TIMESTAMP);
\else
  INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:marker, 0, :aid, -2000, CURRENT_TIMESTAMP);
\endif
\sleep 0 ms
";

fn i64_of(db: &Connection, sql: &str) -> i64 {
    db.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn tpcb_like_on_sqlite_leaves_what_its_transactions_did() {
    let tmp = tempfile::tempdir().expect("tmp");
    let study = tmp.path().join("scripts.toml");
    std::fs::write(&study, STUDY).expect("study");
    std::fs::write(tmp.path().join("mine.sql"), MINE).expect("script");
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--keep",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for s in ["init", "tpcb", "mine"] {
        assert_eq!(
            step(&summary, "lite", s)["status"],
            "ok",
            "{s}: {summary:#}"
        );
    }
    let db = Connection::open(dir.join("work").join("lite").join("db.sqlite")).expect("kept db");
    assert_eq!(i64_of(&db, "SELECT COUNT(*) FROM pgbench_branches"), 2);
    assert_eq!(i64_of(&db, "SELECT COUNT(*) FROM pgbench_tellers"), 20);
    assert_eq!(
        i64_of(&db, "SELECT COUNT(*) FROM pgbench_accounts"),
        200_000
    );
    assert_eq!(
        i64_of(&db, "SELECT MAX(aid) FROM pgbench_accounts"),
        200_000
    );

    // Every committed tpcb-like transaction added its delta to one account, one teller and
    // one branch, and wrote one history row; a failed one (SQLite's busy writers) left
    // nothing behind.
    let tpcb = read_json(&dir.join("lite").join("tpcb.json"));
    let committed = tpcb["details"]["levels"][0]["script_runs"]
        .as_i64()
        .expect("runs");
    let failed: i64 = tpcb["details"]["levels"][0]["errors"]
        .as_array()
        .map(|e| e.iter().map(|x| x["count"].as_i64().unwrap_or(0)).sum())
        .unwrap_or(0);
    assert_eq!(committed + failed, 3 * 150, "{tpcb:#}");
    assert!(committed > 0);
    let history = "FROM pgbench_history WHERE tid BETWEEN 1 AND 20";
    assert_eq!(
        i64_of(&db, &format!("SELECT COUNT(*) {history}")),
        committed
    );
    let deltas = i64_of(&db, &format!("SELECT COALESCE(SUM(delta), 0) {history}"));
    assert_eq!(
        i64_of(&db, "SELECT SUM(abalance) FROM pgbench_accounts"),
        deltas
    );
    assert_eq!(
        i64_of(&db, "SELECT SUM(tbalance) FROM pgbench_tellers"),
        deltas
    );
    assert_eq!(
        i64_of(&db, "SELECT SUM(bbalance) FROM pgbench_branches"),
        deltas
    );
    let stmts = &tpcb["details"]["scripts"][0]["statements"];
    assert_eq!(stmts.as_array().map(Vec::len), Some(7));
    assert_eq!(
        stmts[5]["line"], 10,
        "the INSERT is line 10 of the built-in"
    );
    assert_eq!(stmts[6]["count"].as_i64(), Some(committed), "{stmts:#}");
    let t = step(&summary, "lite", "tpcb");
    assert!(figure(t, "best_tps").is_some_and(|v| v > 0.0), "{t:#}");
    assert!(figure(t, "p99_us_t3").is_some(), "{t:#}");

    // The user's script: each run read one account (\gset), took the branch for a real
    // branch id, and wrote its client's number; select-only ran the rest.
    let mine = read_json(&dir.join("lite").join("mine.json"));
    let per_script = &mine["details"]["levels"][0]["script_runs_per_script"];
    let (mine_runs, selects) = (
        per_script[0].as_i64().expect("n"),
        per_script[1].as_i64().expect("n"),
    );
    assert_eq!(mine_runs + selects, 200, "{mine:#}");
    assert!(
        mine_runs > selects,
        "weights 3:1 gave {mine_runs}:{selects}"
    );
    let marked = "FROM pgbench_history WHERE tid = 0";
    assert_eq!(i64_of(&db, &format!("SELECT COUNT(*) {marked}")), mine_runs);
    assert_eq!(
        i64_of(
            &db,
            &format!("SELECT COUNT(*) {marked} AND delta NOT IN (1, 2)")
        ),
        0
    );
    assert_eq!(
        i64_of(
            &db,
            &format!("SELECT COUNT(*) {marked} AND bid NOT BETWEEN 1 AND 2")
        ),
        0
    );
    let m = step(&summary, "lite", "mine");
    assert!(
        figure(m, "tps_script1").is_some() && figure(m, "tps_script2").is_some(),
        "{m:#}"
    );
}

#[test]
fn a_statement_the_engine_refuses_names_the_script_line_and_the_engine_words() {
    let tmp = tempfile::tempdir().expect("tmp");
    let study = tmp.path().join("bad.toml");
    let text = STUDY
        .split("[[step]]")
        .next()
        .unwrap_or_default()
        .to_string()
        + "[[step]]\nname = \"oops\"\nkind = \"script\"\nscripts = [\"oops.sql\"]\nclients = 1\nper_client = 3\n";
    std::fs::write(&study, text).expect("study");
    std::fs::write(
        tmp.path().join("oops.sql"),
        "\\set a 1\nSELECT :a;\nSELEKT nothing FROM nowhere;\n",
    )
    .expect("script");
    let (code, stdout, stderr) = common::run_study(&study, &tmp.path().join("out"));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let s = step(&summary, "lite", "oops");
    let text = s.to_string();
    assert!(
        text.contains("oops.sql:3: ") && text.contains("syntax error"),
        "{s:#}"
    );
}

#[test]
fn the_interpreter_costs_little_beside_a_prepared_statement_on_the_dry_engine() {
    // Not a timed assertion: the figures are printed (run with --nocapture) for the record.
    let tmp = tempfile::tempdir().expect("tmp");
    let study = tmp.path().join("dry.toml");
    let text = r#"
[study]
name = "dry-scripts"
description = "the interpreter's own cost"

[dataset]
generator = "user_logs"
rows = 100

[[contender]]
name = "dry"
engine = "dry"

[[step]]
name = "prepared"
kind = "queries"
queries = ["SELECT abalance FROM pgbench_accounts WHERE aid = ?"]
params = [{ min = 1, max = 100000 }]
clients = 1
per_client = 200000

[[step]]
name = "script"
kind = "script"
scripts = ["builtin:tpcb-like"]
clients = 1
per_client = 30000
"#;
    let (_, summary) = common::run_study_ok(&study, text, &tmp.path().join("out"));
    let per_query = figure(step(&summary, "dry", "prepared"), "cpu_us_per_query").expect("cpu");
    let per_run = figure(step(&summary, "dry", "script"), "cpu_us_per_script_run").expect("cpu");
    // tpcb-like: 4 \set and 7 statements a run.
    let per_stmt = per_run / 7.0;
    println!(
        "dry engine: prepared statement {per_query:.2} µs CPU each; tpcb-like script {per_run:.2} µs a run = {per_stmt:.2} µs a statement (its \\set included), {:.2} µs over a prepared statement",
        per_stmt - per_query
    );
    assert!(per_run > 0.0);
}

/// `retries`: a script run that fails with a deadlock runs again from its start, and a retried
/// failure is no failed run. The dry engine fails every third statement with a deadlock; one
/// client's 30 runs of a one-statement script then meet 10 failures without retries, and with
/// them 14 (each retry is a statement too: the 30th success is statement 44, and 14 of the
/// first 44 are multiples of three), none of them a failed run.
#[test]
fn a_deadlocked_run_is_retried_when_asked_and_counted() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(
        tmp.path().join("one.sql"),
        "\\set k random(1, 10)\nSELECT :k;\n",
    )
    .expect("script");
    let study = tmp.path().join("retries.toml");
    let text = r#"
[study]
name = "retries"
description = "retries on deadlocks"

[[contender]]
name = "dry"
engine = "dry"
options = { fail_every = 3, fail_kind = "deadlock" }

[[step]]
name = "once"
kind = "script"
scripts = ["one.sql"]
clients = 1
per_client = 30

[[step]]
name = "again"
kind = "script"
scripts = ["one.sql"]
clients = 1
per_client = 30
retries = 5
"#;
    let (dir, _) = common::run_study_ok(&study, text, &tmp.path().join("out"));
    let errors = |d: &serde_json::Value| match &d["levels"][0]["errors"] {
        serde_json::Value::Array(a) => a.iter().map(|e| e["count"].as_u64().unwrap_or(0)).sum(),
        v => v.as_u64().expect("errors"),
    };
    let once = read_json(&dir.join("dry").join("once.json"))["details"].clone();
    let again = read_json(&dir.join("dry").join("again.json"))["details"].clone();
    assert_eq!(errors(&once), 10, "{once:#}");
    assert_eq!(once["retried"], 0, "{once:#}");
    assert_eq!(errors(&again), 0, "{again:#}");
    assert_eq!(again["retried"], 14, "{again:#}");
    assert_eq!(
        again["scripts"][0]["statements"][0]["retried"], 14,
        "{again:#}"
    );
    assert_eq!(again["levels"][0]["script_runs"], 30, "{again:#}");
}

/// pgbench's tables and 2 clients × 60 tpcb-like runs on `engine` (a private server);
/// the tpcb step's result file.
fn tpcb_on(engine: &str) -> serde_json::Value {
    let tmp = tempfile::tempdir().expect("tmp");
    let study = tmp.path().join("server.toml");
    let text = format!(
        r#"
[study]
name = "scripts_{engine}"
description = "tpcb-like on a server"

[dataset]
generator = "user_logs"
rows = 100

[[contender]]
name = "srv"
engine = "{engine}"

[[step]]
name = "init"
kind = "script"
scripts = ["builtin:pgbench-init"]
clients = 1
per_client = 1

[[step]]
name = "tpcb"
kind = "script"
scripts = ["builtin:tpcb-like"]
clients = 2
per_client = 60
"#
    );
    let (dir, summary) = common::run_study_ok(&study, &text, &tmp.path().join("out"));
    assert_eq!(step(&summary, "srv", "tpcb")["status"], "ok", "{summary:#}");
    read_json(&dir.join("srv").join("tpcb.json"))
}

/// `tpcb_on(engine)`'s script runs (120, checked) and the server's counters over the step.
fn tpcb_counters(engine: &str) -> (u64, serde_json::Value) {
    let j = tpcb_on(engine);
    let runs = j["details"]["levels"][0]["script_runs"]
        .as_u64()
        .expect("runs");
    assert_eq!(runs, 120, "{j:#}");
    (runs, j["server_counters"].clone())
}

#[test]
fn tpcb_like_statement_counts_equal_mariadbs_counters() {
    if !common::have_mariadb() {
        return;
    }
    let (runs, c) = tpcb_counters("mariadb");
    let c = &c;
    assert_eq!(c["Com_update"].as_u64(), Some(3 * runs), "{c:#}");
    assert_eq!(c["Com_insert"].as_u64(), Some(runs), "{c:#}");
    assert_eq!(c["Com_commit"].as_u64(), Some(runs), "{c:#}");
    assert_eq!(c["Com_select"].as_u64(), Some(runs), "{c:#}");
    // All seven statements executed prepared, BEGIN and END too, as pgbench -M prepared
    // and sysbench run them.
    assert_eq!(c["Com_stmt_execute"].as_u64(), Some(7 * runs), "{c:#}");
}

#[test]
fn tpcb_like_statement_counts_equal_postgres_counters() {
    if !common::have_postgres() {
        return;
    }
    let (runs, c) = tpcb_counters("postgres");
    let c = &c;
    assert_eq!(c["tup_updated"].as_u64(), Some(3 * runs), "{c:#}");
    assert_eq!(c["tup_inserted"].as_u64(), Some(runs), "{c:#}");
}
