//! The `ycsb` step end to end: YCSB's six core workloads on SQLite with the mix each ran
//! beside the file's and the table holding the loaded records plus every acknowledged
//! insert; a user's workload file in YCSB's syntax, and one with a property dbduel does not
//! implement (refused at its line, exit 2); on MariaDB (InnoDB, MyRocks), PostgreSQL and a
//! MongoDB-wire server (FerretDB) the reads, updates and inserts equal the servers' own
//! counters.

mod common;

use common::{figure, read_json, run, run_dir, step};
use std::path::Path;

/// Every core workload, a second each at two clients.
const CORE_STEPS: &str = r#"
[[step]]
name = "a"
kind = "ycsb"
workload = "a"
threads = 2
duration_s = 1
[[step]]
name = "b"
kind = "ycsb"
workload = "workloadb"
threads = 2
duration_s = 1
[[step]]
name = "c"
kind = "ycsb"
workload = "c"
threads = 2
duration_s = 1
[[step]]
name = "d"
kind = "ycsb"
workload = "d"
threads = 2
duration_s = 1
[[step]]
name = "e"
kind = "ycsb"
workload = "e"
threads = 2
duration_s = 1
[[step]]
name = "f"
kind = "ycsb"
workload = "f"
threads = 2
duration_s = 1
"#;

/// Workloads A (reads and updates) and D (reads and inserts) of [`CORE_STEPS`].
fn a_and_d() -> String {
    CORE_STEPS
        .split("[[step]]")
        .filter(|s| s.contains("\"a\"") || s.contains("\"d\""))
        .map(|s| format!("[[step]]{s}"))
        .collect()
}

fn study(dir: &Path, contenders: &str, steps: &str) -> std::path::PathBuf {
    let path = dir.join("ycsb.toml");
    let text = common::fill(
        include_str!("studies/ycsb.toml"),
        &[("contenders", contenders), ("steps", steps)],
    );
    std::fs::write(&path, text).expect("write study");
    path
}

/// Run the study; the run directory and its summary.
fn run_ok(path: &Path, out: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let (code, stdout, stderr) = run(&[
        "run",
        path.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    (dir, summary)
}

/// Each operation's count over the step's levels, as dbduel measured it.
fn ops(j: &serde_json::Value) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for l in j["details"]["levels"].as_array().unwrap() {
        for o in l["per_op"].as_array().unwrap() {
            *out.entry(o["name"].as_str().unwrap().to_string())
                .or_insert(0) += o["count"].as_u64().unwrap();
        }
    }
    out
}

#[test]
fn sqlite_runs_every_core_workload_in_its_mix_and_keeps_every_insert() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "[[contender]]\nname = \"lite\"\nengine = \"sqlite\"\n",
        CORE_STEPS,
    );
    let (dir, summary) = run_ok(&path, tmp.path());
    let mut inserted = 0;
    for (st, mix) in [
        ("a", [("read", 0.5), ("update", 0.5)].as_slice()),
        ("b", &[("read", 0.95), ("update", 0.05)]),
        ("c", &[("read", 1.0)]),
        ("d", &[("read", 0.95), ("insert", 0.05)]),
        ("e", &[("scan", 0.95), ("insert", 0.05)]),
        ("f", &[("read", 0.5), ("read-modify-write", 0.5)]),
    ] {
        let s = step(&summary, "lite", st);
        assert_eq!(s["status"], "ok", "{st}: {s:#}");
        assert_eq!(s["errors"], 0, "{st}: {s:#}");
        let j = read_json(&dir.join("lite").join(format!("{st}.json")));
        let ran = ops(&j);
        let total: u64 = ran.values().sum();
        assert!(total > 500, "{st}: {ran:?}");
        assert_eq!(ran.len(), mix.len(), "{st}: {ran:?}");
        // every operation in its share, within sampling error of a few thousand draws
        for (op, share) in mix {
            let got = ran[*op] as f64 / total as f64;
            assert!((got - share).abs() < 0.03, "{st}: {op} {got} of {ran:?}");
            let key = format!("{}_p99_us_t2", op.replace('-', "_"));
            assert!(figure(s, &key).is_some(), "{st}: no {key}");
        }
        let note = s["note"].as_str().unwrap();
        assert!(note.contains("mix run: "), "{note}");
        inserted += j["details"]["records_inserted"].as_u64().unwrap();
        assert_eq!(
            j["details"]["records_at_start"].as_u64().unwrap(),
            2000 + inserted - j["details"]["records_inserted"].as_u64().unwrap(),
            "{st}: an insert goes on from the records there are"
        );
    }
    assert!(inserted > 0);
    // the table holds the loaded records and every acknowledged insert
    let count = step(&summary, "lite", "count");
    assert_eq!(count["rows"].as_u64(), Some(2000 + inserted), "{count:#}");
}

#[test]
fn a_users_workload_file_runs_and_an_unknown_property_is_refused_at_its_line() {
    let tmp = tempfile::tempdir().expect("tmp");
    let files = tmp.path().join("workloads");
    std::fs::create_dir(&files).unwrap();
    for f in ["hotspot_one_field", "unknown_property"] {
        std::fs::copy(Path::new("tests/studies/ycsb").join(f), files.join(f)).unwrap();
    }
    let steps = "[[step]]\nname = \"hot\"\nkind = \"ycsb\"\nworkload = \"workloads/hotspot_one_field\"\nthreads = 2\nduration_s = 1\n";
    let path = study(
        tmp.path(),
        "[[contender]]\nname = \"lite\"\nengine = \"sqlite\"\n",
        steps,
    );
    let (_, summary) = run_ok(&path, tmp.path());
    let s = step(&summary, "lite", "hot");
    let note = s["note"].as_str().unwrap();
    assert!(
        note.contains("hotspot (80% of operations on 20% of records)")
            && note.contains("the file's recordcount = 1000 is the dataset's 2000 records here"),
        "{note}"
    );
    // the same study naming the other file: refused before anything runs, located
    let bad = std::fs::read_to_string(&path)
        .unwrap()
        .replace("hotspot_one_field", "unknown_property");
    std::fs::write(&path, bad).unwrap();
    let (code, stdout, stderr) = run(&["run", path.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2, "{stderr}\n{stdout}");
    assert!(
        stderr.contains(
            "workloads/unknown_property:4:3: property `measurementtype` is not implemented"
        ),
        "{stderr}"
    );
}

#[test]
fn mariadb_counts_the_operations_dbduel_ran() {
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let contenders = "[[contender]]\nname = \"innodb\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64 }\n[[contender]]\nname = \"myrocks\"\nengine = \"mariadb\"\noptions = { storage_engine = \"rocksdb\", block_cache_mb = 64 }\n";
    let steps = a_and_d();
    let path = study(tmp.path(), contenders, &steps);
    let (dir, summary) = run_ok(&path, tmp.path());
    for c in ["innodb", "myrocks"] {
        let mut inserted = 0;
        for st in ["a", "d"] {
            let j = read_json(&dir.join(c).join(format!("{st}.json")));
            let ran = ops(&j);
            let counters = &j["server_counters"];
            // each operation is one statement; the step's count of the records before the
            // clock is one more SELECT; an operation in flight when a level ends is not
            // counted by dbduel, so the server may have run a few more
            for (op, name, extra) in [
                ("read", "Com_select", 1),
                ("update", "Com_update", 0),
                ("insert", "Com_insert", 0),
            ] {
                let ours = ran.get(op).copied().unwrap_or(0) + extra;
                let server = counters[name].as_u64().unwrap();
                assert!(
                    server >= ours && server <= ours + 4,
                    "{c}/{st}: {op}: dbduel {ours}, {name} {server}"
                );
            }
            inserted += j["details"]["records_inserted"].as_u64().unwrap();
        }
        let count = step(&summary, c, "count");
        assert_eq!(
            count["rows"].as_u64(),
            Some(2000 + inserted),
            "{c}: {count:#}"
        );
    }
}

#[test]
fn postgres_counts_the_operations_dbduel_ran() {
    if !common::have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let steps = a_and_d();
    let path = study(
        tmp.path(),
        "[[contender]]\nname = \"pg\"\nengine = \"postgres\"\noptions = { shared_buffers_mb = 64 }\n",
        &steps,
    );
    let (dir, summary) = run_ok(&path, tmp.path());
    let mut inserted = 0;
    for st in ["a", "d"] {
        let j = read_json(&dir.join("pg").join(format!("{st}.json")));
        let ran = ops(&j);
        let counters = &j["server_counters"];
        // pg_stat_statements' SELECTs: the reads and the count of the records before the clock
        for (op, name, extra) in [
            ("read", "select_calls", 1),
            ("update", "tup_updated", 0),
            ("insert", "tup_inserted", 0),
        ] {
            let ours = ran.get(op).copied().unwrap_or(0) + extra;
            let server = counters[name].as_u64().unwrap();
            assert!(
                server >= ours && server <= ours + 4,
                "{st}: {op}: dbduel {ours}, {name} {server}"
            );
        }
        inserted += j["details"]["records_inserted"].as_u64().unwrap();
    }
    let count = step(&summary, "pg", "count");
    assert_eq!(count["rows"].as_u64(), Some(2000 + inserted), "{count:#}");
}

#[test]
fn the_mongodb_engine_runs_ycsb_as_its_mongodb_binding_does_and_the_server_counts_it() {
    if !common::have_server(
        "ferretdb",
        dbduel::engines::mongodb::ferretdb::binary().is_some(),
    ) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let steps = a_and_d();
    let path = study(
        tmp.path(),
        "[[contender]]\nname = \"ferret\"\nengine = \"mongodb\"\n",
        &steps,
    );
    let (dir, summary) = run_ok(&path, tmp.path());
    for st in ["a", "d"] {
        let s = step(&summary, "ferret", st);
        assert_eq!(s["status"], "ok", "{st}: {s:#}");
        let j = read_json(&dir.join("ferret").join(format!("{st}.json")));
        let ran = ops(&j);
        assert!(ran.values().sum::<u64>() > 0, "{st}: {ran:?}");
        // find by _id, $set, insert_one: one command each (FerretDB scans for an _id, so
        // few run; what runs is counted)
        let counters = &j["server_counters"];
        for (op, name) in [
            ("read", "commands.find"),
            ("update", "commands.update"),
            ("insert", "commands.insert"),
        ] {
            let ours = ran.get(op).copied().unwrap_or(0);
            let server = counters[name].as_u64().unwrap_or(0);
            assert!(
                server >= ours && server <= ours + 4,
                "{st}: {op}: dbduel {ours}, {name} {server}"
            );
        }
    }
}
