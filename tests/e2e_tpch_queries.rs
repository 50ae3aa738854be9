//! TPC-H's queries on real engines: the real binary runs a study at SF 0.01 on SQLite, MariaDB
//! (InnoDB), PostgreSQL and MySQL 8.0 (from the server cache); every query runs on each, and
//! each answer agrees with the first contender's; the cold runs are verified cold; a query
//! past its timeout is recorded `timed out` and, on a server, cancelled there (its process
//! list shows it no more).

mod common;

use common::{read_json, step};
use dbduel::engine::{Engine, OpenCtx, TIMEOUT};
use dbduel::engines::EngineConfig;
use std::path::Path;
use std::time::{Duration, Instant};

fn engine(root: &Path, kind: &str, options: &str) -> Box<dyn Engine> {
    let options: toml::Table = toml::from_str(options).expect("options");
    let config = EngineConfig::decode(kind, &options, None, &Default::default()).expect("options");
    config
        .open(&OpenCtx {
            contender: kind,
            dir: &root.join(kind),
            database: "dbduel_tpch_test",
            max_clients: 4,
        })
        .expect("engine")
}

const STUDY: &str = r#"
[study]
name = "tpch-e2e"
description = "TPC-H at SF 0.01"

[dataset]
generator = "tpch"
sf = 0.01
seed = 7

[[contender]]
name = "sqlite"
engine = "sqlite"
CONTENDERS

[[step]]
name = "load"
kind = "load"

# all 22 queries, warm, one hot run: the answers
[[step]]
name = "power"
kind = "tpch-power"
cold = false
hot_runs = 1
timeout_s = 120

# two queries cold: the restarts
[[step]]
name = "power-cold"
kind = "tpch-power"
queries = [6, 14]
hot_runs = 1

# Q9 (six tables joined on LIKE) in a microsecond: past its timeout everywhere
[[step]]
name = "power-timeout"
kind = "tpch-power"
queries = [9]
cold = false
hot_runs = 0
timeout_s = 0.000001
"#;

/// Every query runs on SQLite, MariaDB, PostgreSQL and MySQL 8.0 over the generator's SF 0.01, and each
/// answer agrees with SQLite's (the first contender, the reference); cold runs say they were
/// cold; a query past its timeout is recorded `timed out`, with no seconds.
#[test]
fn every_query_answers_alike_on_sqlite_mariadb_postgres_and_mysql() {
    let mut names = vec!["sqlite"];
    let mut extra = String::new();
    if common::have_mariadb() {
        names.push("innodb");
        extra.push_str("\n[[contender]]\nname = \"innodb\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64 }\n");
    }
    if common::have_postgres() {
        names.push("postgres");
        extra.push_str("\n[[contender]]\nname = \"postgres\"\nengine = \"postgres\"\n");
    }
    if common::have_cached("mysql-8.0.15") {
        names.push("mysql-8.0");
        extra.push_str("\n[[contender]]\nname = \"mysql-8.0\"\nengine = \"mysql\"\nversion = \"8.0\"\noptions = { buffer_pool_mb = 64 }\n");
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let text = STUDY.replace("CONTENDERS", &extra);
    let (code, stdout, stderr) = {
        std::fs::write(tmp.path().join("tpch.toml"), &text).expect("study");
        common::run(&[
            "run",
            tmp.path().join("tpch.toml").to_str().expect("utf-8"),
            "--out",
            tmp.path().to_str().expect("utf-8"),
        ])
    };
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = common::run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for (i, c) in names.iter().enumerate() {
        let s = step(&summary, c, "power");
        assert_eq!(s["status"], "ok", "{c}: {s:#}");
        // each query's seconds say which query and phase they are, for the report's chart
        let q7 = s["metrics"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["key"] == "q07_hot_s"))
            .expect("Q7's hot seconds");
        assert_eq!(
            q7["role"],
            serde_json::json!({ "is": "query", "number": 7, "phase": "hot" }),
            "{c}"
        );
        let note = s["note"].as_str().expect("note");
        assert!(
            note.starts_with("TPC-H-like, not audited; SF 0.01; RF1, 22 queries, RF2;"),
            "{note}"
        );
        let d = &read_json(&dir.join(c).join("power.json"))["details"];
        let qs = d["queries"].as_array().expect("queries");
        assert_eq!(qs.len(), 22);
        let mut non_empty = 0;
        for q in qs {
            assert_eq!(q["status"], "ok", "{c}: {q:#}");
            non_empty += usize::from(q["answer"]["row_count"].as_u64().expect("rows") > 0);
            // the first contender is the reference of every later one
            let want = if i == 0 {
                serde_json::Value::Null
            } else {
                "sqlite".into()
            };
            assert_eq!(q["reference"], want, "{c}: Q{}", q["query"]);
        }
        assert!(non_empty >= 18, "{c}: only {non_empty} answers have rows");
        assert!(
            d["power_at_size"].as_f64().is_some_and(|p| p > 0.0),
            "{d:#}"
        );
        assert!(
            d["explain_worst"]["plan"]
                .as_array()
                .is_some_and(|p| !p.is_empty()),
            "{c}: {}",
            d["explain_worst"]
        );
        // cold runs verified cold, or saying why not, as the count step's are
        let cold = read_json(&dir.join(c).join("power-cold.json"));
        let restarts: Vec<bool> = cold["details"]["queries"]
            .as_array()
            .expect("queries")
            .iter()
            .map(|q| {
                q["restart"]["cold"]
                    .as_bool()
                    .expect("a restart before each query")
            })
            .collect();
        assert_eq!(restarts.len(), 2, "{c}");
        let note = step(&summary, c, "power-cold")["note"]
            .as_str()
            .expect("note")
            .to_string();
        if restarts.iter().all(|x| *x) {
            assert!(
                note.contains("; cold: restarted before each query, each verified cold"),
                "{c}: {note}"
            );
        } else {
            assert!(note.contains("; warm-restart: "), "{c}: {note}");
        }
        let warm = step(&summary, c, "power")["note"]
            .as_str()
            .expect("note")
            .to_string();
        assert!(warm.contains("; warm: no restart"), "{c}: {warm}");
        let t = step(&summary, c, "power-timeout");
        assert_eq!(t["status"], "ok", "{c}: {t:#}");
        let q9 = &read_json(&dir.join(c).join("power-timeout.json"))["details"]["queries"][0];
        assert_eq!(q9["status"], "timed out", "{c}: {q9:#}");
        assert!(
            q9["cold_s"].is_null() && q9["answer"].is_null(),
            "{c}: {q9:#}"
        );
        assert!(
            t["note"].as_str().unwrap_or("").contains("timed out after"),
            "{c}: {t:#}"
        );
    }
}

/// A statement slower than its timeout fails as `timeout` soon after the limit, and the
/// server no longer runs it: MariaDB's process list and PostgreSQL's pg_stat_activity show
/// it no more; SQLite's interrupt stops it in dbduel's own process.
#[test]
fn a_query_past_its_timeout_is_cancelled_on_the_server() {
    let root = tempfile::tempdir().expect("tmp");
    let slow_sqlite =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n";
    let mut cases: Vec<(Box<dyn Engine>, &str, &str)> =
        vec![(engine(root.path(), "sqlite", ""), slow_sqlite, "")];
    if common::have_mariadb() {
        cases.push((
            engine(root.path(), "mariadb", "buffer_pool_mb = 64"),
            "SELECT /* tpch-slow */ SLEEP(30)",
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%tpch-slow%' AND INFO NOT LIKE '%PROCESSLIST%'",
        ));
    }
    if common::have_postgres() {
        cases.push((
            engine(root.path(), "postgres", ""),
            "SELECT /* tpch-slow */ pg_sleep(30)",
            "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%tpch-slow%' AND query NOT LIKE '%pg_stat_activity%'",
        ));
    }
    for (e, slow, listed) in cases {
        let mut s = e.connect().expect("connect");
        assert!(
            s.statement_timeout(Some(Duration::from_millis(500)))
                .expect("set")
        );
        let t = Instant::now();
        let st = s.prepare(slow).expect("prepare");
        let err = s.run_rows(st, &[], &mut Vec::new()).expect_err("cancelled");
        let took = t.elapsed();
        assert_eq!(err.kind, TIMEOUT, "{}: {err}", e.kind());
        assert!(took < Duration::from_secs(10), "{}: {took:?}", e.kind());
        // the session still works, and the server lists the statement no more
        s.statement_timeout(None).expect("unset");
        if !listed.is_empty() {
            let mut other = e.connect().expect("connect");
            assert_eq!(other.query_i64(listed).expect("list"), 0, "{}", e.kind());
        }
        assert_eq!(s.query_i64("SELECT 1").expect("after"), 1);
        drop(s);
        e.finish(false).expect("finish");
    }
}
