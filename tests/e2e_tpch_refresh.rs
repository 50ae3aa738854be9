//! TPC-H's refresh functions and throughput test on real engines: the real binary runs a
//! power step (RF1, the 22 queries, RF2) and a throughput step (query streams beside a
//! refresh stream) at SF 0.01 on SQLite, MariaDB (InnoDB and Aria) and PostgreSQL; RF1's and
//! RF2's seconds, Throughput@Size and QphH@Size are figures; the refresh sets follow one
//! another; and `orders` and `lineitem` hold as many rows after each step as were loaded.

mod common;

use common::{figure, read_json, step};
use dbduel::dataset::tpch::{Table, Tpch};

const STUDY: &str = r#"
[study]
name = "tpch-refresh-e2e"
description = "TPC-H refresh functions and throughput at SF 0.01"

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

[[step]]
name = "power"
kind = "tpch-power"
cold = false
hot_runs = 0
timeout_s = 120

[[step]]
name = "throughput"
kind = "tpch-throughput"
timeout_s = 120
"#;

/// The rows `orders` and `lineitem` were loaded with.
fn loaded() -> [i64; 2] {
    let g = Tpch { seed: 7, units: 1 };
    [Table::Orders, Table::Lineitem].map(|t| g.rows(t) as i64)
}

#[test]
fn refresh_functions_and_throughput_run_and_leave_the_row_counts_as_loaded() {
    let mut names = vec!["sqlite"];
    let mut extra = String::new();
    if common::have_mariadb() {
        names.extend(["innodb", "aria"]);
        extra.push_str(
            "\n[[contender]]\nname = \"innodb\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64 }\n\
             \n[[contender]]\nname = \"aria\"\nengine = \"mariadb\"\noptions = { storage_engine = \"aria\" }\n",
        );
    }
    if common::have_postgres() {
        names.push("postgres");
        extra.push_str("\n[[contender]]\nname = \"postgres\"\nengine = \"postgres\"\n");
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let text = STUDY.replace("CONTENDERS", &extra);
    let (dir, summary) = common::run_study_ok(&tmp.path().join("tpch.toml"), &text, tmp.path());
    let [orders, lineitem] = loaded();
    for c in &names {
        let p = step(&summary, c, "power");
        assert_eq!(p["status"], "ok", "{c}: {p:#}");
        for key in ["rf1_s", "rf2_s", "power_at_size"] {
            assert!(figure(p, key).is_some_and(|v| v > 0.0), "{c}: {key}: {p:#}");
        }
        let note = p["note"].as_str().expect("note");
        assert!(
            note.starts_with("TPC-H-like, not audited; SF 0.01; RF1, 22 queries, RF2;"),
            "{note}"
        );
        let d = &read_json(&dir.join(c).join("power.json"))["details"];
        let order: Vec<u64> = d["queries"]
            .as_array()
            .expect("queries")
            .iter()
            .map(|q| q["query"].as_u64().expect("query"))
            .collect();
        assert_eq!(&order[..4], [14, 2, 9, 20], "{c}: stream 0's order");
        let r = &d["refresh"];
        assert_eq!(r["set"], 1, "{c}: {r:#}");
        assert_eq!(
            r["rows"]["orders"],
            serde_json::json!([orders, orders]),
            "{c}"
        );
        assert_eq!(
            r["rows"]["lineitem"],
            serde_json::json!([lineitem, lineitem]),
            "{c}"
        );
        // 15 orders and their lines in, 15 old orders and their lines out
        assert!(
            r["rf1_rows"].as_u64().is_some_and(|n| n >= 30),
            "{c}: {r:#}"
        );
        assert_eq!(r["rf1_rows"], r["rf2_rows"], "{c}: {r:#}");

        let t = step(&summary, c, "throughput");
        assert_eq!(t["status"], "ok", "{c}: {t:#}");
        for key in [
            "ts_s",
            "rf1_mean_s",
            "rf2_mean_s",
            "throughput_at_size",
            "qphh_at_size",
        ] {
            assert!(figure(t, key).is_some_and(|v| v > 0.0), "{c}: {key}: {t:#}");
        }
        let d = &read_json(&dir.join(c).join("throughput.json"))["details"];
        assert_eq!(d["streams"], 2, "{c}: SF 0.01 runs the fewest, 2");
        assert_eq!(d["power_step"], "power", "{c}");
        let qs = d["query_streams"].as_array().expect("streams");
        assert_eq!(qs.len(), 2);
        assert_eq!(
            qs[0]["queries"][0]["query"], 21,
            "{c}: stream 1 starts with Q21"
        );
        assert_eq!(
            qs[1]["queries"][0]["query"], 6,
            "{c}: stream 2 starts with Q6"
        );
        let rs = &d["refresh_stream"];
        let sets: Vec<u64> = rs["pairs"]
            .as_array()
            .expect("pairs")
            .iter()
            .map(|p| p["set"].as_u64().expect("set"))
            .collect();
        assert_eq!(sets, [2, 3], "{c}: the sets after the power step's");
        assert_eq!(
            rs["rows"]["orders"],
            serde_json::json!([orders, orders]),
            "{c}"
        );
        assert_eq!(
            rs["rows"]["lineitem"],
            serde_json::json!([lineitem, lineitem]),
            "{c}"
        );
        let power = figure(p, "power_at_size").expect("power");
        let throughput = figure(t, "throughput_at_size").expect("throughput");
        let qphh = figure(t, "qphh_at_size").expect("qphh");
        assert!(
            (qphh - (power * throughput).sqrt()).abs() < 1e-6 * qphh,
            "{c}: {qphh} vs {power} {throughput}"
        );
    }
}

/// A run stopped between RF1 and RF2 leaves a refresh set's new orders beside the old ones
/// its RF2 would delete: the next refresh completes that RF2 first, so the counts are the
/// loaded ones again, and the sets go on from the next. On SQLite, with the orders RF2 of
/// set 1 deletes standing for the loaded ones.
#[test]
fn a_set_left_after_its_rf1_has_its_rf2_run_first() {
    use dbduel::dataset::tpch::order_key;
    use dbduel::engine::{Dialect, OpenCtx};
    use dbduel::workload::tpch::refresh;
    let root = tempfile::tempdir().expect("tmp");
    let config = dbduel::engines::EngineConfig::decode(
        "sqlite",
        &toml::Table::new(),
        None,
        &Default::default(),
    )
    .expect("sqlite");
    let engine = config
        .open(&OpenCtx {
            contender: "sqlite",
            dir: root.path(),
            database: "dbduel_refresh_test",
            max_clients: 1,
        })
        .expect("engine");
    let mut s = engine.connect().expect("session");
    s.execute(
        "CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey, o_orderstatus, \
         o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment)",
    )
    .expect("orders");
    s.execute(
        "CREATE TABLE lineitem (l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, \
         l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, \
         l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment, \
         PRIMARY KEY (l_orderkey, l_linenumber))",
    )
    .expect("lineitem");
    let g = Tpch { seed: 7, units: 1 };
    for i in 0..g.refresh_orders() {
        s.execute(&format!(
            "INSERT INTO orders (o_orderkey) VALUES ({})",
            order_key(i)
        ))
        .expect("an old order");
    }
    let count = |s: &mut Box<dyn dbduel::engine::Session>| {
        s.query_i64("SELECT COUNT(*) FROM orders").expect("count")
    };
    let complete = |s: &mut Box<dyn dbduel::engine::Session>| {
        refresh::complete_unfinished(s.as_mut(), Dialect::Sqlite, &g).expect("complete")
    };
    assert_eq!(complete(&mut s), None, "nothing applied yet");
    refresh::rf1(s.as_mut(), Dialect::Sqlite, &g, 1).expect("RF1");
    assert_eq!(count(&mut s), 30, "set 1's new orders beside the old");
    assert_eq!(complete(&mut s), Some(1), "set 1's RF2 had not run");
    assert_eq!(count(&mut s), 15, "the old orders deleted");
    assert_eq!(complete(&mut s), None, "nothing left unfinished");
    assert_eq!(refresh::next_set(s.as_mut(), &g).expect("next"), 2);
}
