//! One run split into shards, each a dbduel process started as a Kubernetes Indexed Job
//! starts it (JOB_COMPLETION_INDEX, DBDUEL_SHARDS, DBDUEL_RUN_GROUP), against a real MariaDB
//! and PostgreSQL server; then merged. The merged counts equal the shards' sum and the
//! server's own; its percentiles equal those of the shards' histograms added together; a
//! shard that never comes fails the others' meeting with its index.

mod common;

use common::{read_json, run_dir, step};
use dbduel::sandbox::{Sandbox, mariadb::MariadbRecipe, postgres::PostgresRecipe};
use mysql::prelude::Queryable;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

const CLIENTS: u64 = 8;
const PER_CLIENT: u64 = 150;

/// The study: a load, and a queries step of CLIENTS clients, PER_CLIENT queries each, of
/// keys drawn from each client's own stream, half of them not in the table.
fn study(dir: &Path, file: &str, target: &str, placeholder: &str, with_load: bool) -> PathBuf {
    let load = if with_load {
        "[[step]]\nname = \"load\"\nkind = \"load\"\n"
    } else {
        ""
    };
    let p = dir.join(file);
    std::fs::write(
        &p,
        format!(
            r#"[study]
name = "sharded"
description = "a queries step split over shards"
[dataset]
generator = "user_logs"
rows = 2000
[[contender]]
name = "db"
engine = "{engine}"
target = "{target}"
{load}
[[step]]
name = "q"
kind = "queries"
clients = {CLIENTS}
per_client = {PER_CLIENT}
queries = ["SELECT id FROM user_logs WHERE id = {placeholder}"]
params = [{{ min = 1, max = 4000 }}]
"#,
            engine = if target.starts_with("mysql") {
                "mariadb"
            } else {
                "postgres"
            },
        ),
    )
    .unwrap();
    p
}

/// Start `n` shards at once, as an Indexed Job's pods would be; their outputs in index order.
fn shards(study: &Path, out: &Path, n: u32, group: &str, only: Option<u32>) -> Vec<Output> {
    let children: Vec<_> = (0..n)
        .filter(|i| only.is_none_or(|o| o == *i))
        .map(|i| {
            common::bin()
                .args(["run", study.to_str().unwrap(), "-q", "--out"])
                .arg(out)
                .args(["--barrier-timeout-s", "8"])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("DBDUEL_SHARDS", n.to_string())
                .env("DBDUEL_RUN_GROUP", group)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start a shard")
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("shard ends"))
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the server's own count counts.
enum Counted {
    Queries,
    RowsFound,
}

/// Run the study sharded in two and merge, and check what holds on any engine; `counted`
/// reads the server's own count of the queries or of the rows they found.
fn shard_and_merge(
    root: &Path,
    target: &str,
    placeholder: &str,
    counted: (Counted, &dyn Fn() -> u64),
) {
    let out = root.join("out");
    // the tables, loaded by one unsharded run
    let full = study(root, "full.toml", target, placeholder, true);
    let (code, _, stderr) = common::run(&[
        "run",
        full.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let whole = read_json(&run_dir(&stderr).join("summary.json"));
    let whole_rows = step(&whole, "db", "q")["rows"].as_u64().unwrap();
    // the sharded run: its load runs on shard 0 alone, the queries on both
    let runs = shards(&full, &out, 2, "e2e-1", None);
    let mut dirs = Vec::new();
    let mut sum = 0;
    for (i, o) in runs.iter().enumerate() {
        let err = text(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(0),
            "shard {i}: {err}{}",
            text(&o.stdout)
        );
        let d = run_dir(&err);
        assert!(
            d.to_str()
                .unwrap()
                .contains(&format!("sharded-shard-{i}-of-2-")),
            "{}",
            d.display()
        );
        let s = read_json(&d.join("summary.json"));
        let q = step(&s, "db", "q");
        // each shard ran its own half of the clients, each client its PER_CLIENT queries
        assert_eq!(
            figure(q, "ops"),
            (CLIENTS / 2 * PER_CLIENT) as f64,
            "shard {i}"
        );
        sum += figure(q, "ops") as u64;
        let load = step(&s, "db", "load");
        match i {
            0 => assert_eq!(load["status"], "ok"),
            _ => assert_eq!(load["status"], "skipped", "{load}"),
        }
        let m = read_json(&d.join("manifest.json"));
        assert_eq!(m["shards"][0]["index"], i);
        assert_eq!(m["shards"][0]["group"], "e2e-1");
        let offset = m["shards"][0]["clock_offset_ms"]["db"]
            .as_f64()
            .expect("clock offset");
        assert!(offset.abs() < 1000.0, "same host, same clock: {offset} ms");
        dirs.push(d);
    }
    let merged = root.join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend([
        "--out".into(),
        merged.display().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = common::run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"q\""), "{stdout}");
    let s = read_json(&merged.join("summary.json"));
    let q = step(&s, "db", "q");
    assert_eq!(figure(q, "ops") as u64, sum);
    assert_eq!(sum, CLIENTS * PER_CLIENT);
    // each client kept its id, so its keys: the same rows found as unsharded
    assert_eq!(q["rows"].as_u64().unwrap(), whole_rows);
    assert!(
        whole_rows > sum / 4 && whole_rows < sum * 3 / 4,
        "{whole_rows}"
    );
    // every percentile is that of the shards' histograms added up
    let mut union = dbduel::metrics::new_hist();
    for d in &dirs {
        let ivs = std::fs::read_to_string(d.join("db/q.intervals.ndjson")).unwrap();
        for line in ivs.lines() {
            let iv: serde_json::Value = serde_json::from_str(line).unwrap();
            for op in iv["per_op"].as_array().unwrap() {
                if let Some(h) = op["hist"].as_str() {
                    dbduel::metrics::merge(&mut union, &dbduel::metrics::decode(h).unwrap());
                }
            }
        }
    }
    assert_eq!(union.len(), sum, "every query is in a histogram");
    for (key, quantile) in [
        ("p50_us", 0.5),
        ("p95_us", 0.95),
        ("p99_us", 0.99),
        ("max_us", 1.0),
    ] {
        assert_eq!(
            figure(q, key) as u64,
            dbduel::metrics::quantile(&union, quantile),
            "{key}"
        );
    }
    let m = read_json(&merged.join("manifest.json"));
    assert_eq!(m["shards"].as_array().unwrap().len(), 2);
    assert!(
        q["note"].as_str().unwrap().contains("merged from 2 shards"),
        "{q}"
    );
    // the merged run reads like any other
    let (code, report, stderr) = common::run(&["report", merged.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(report.contains("db"), "{report}");
    // a shard that never comes fails the other's meeting, naming it
    let alone = shards(&full, &out, 2, "e2e-2", Some(0));
    let err = text(&alone[0].stderr);
    assert_eq!(alone[0].status.code(), Some(1), "{err}");
    let s = read_json(&run_dir(&err).join("summary.json"));
    let note = step(&s, "db", "load")["note"].as_str().unwrap().to_string();
    assert!(note.contains("shard(s) 1 of 2 never arrived"), "{note}");
    // and a group once used is not used again
    let again = shards(&full, &out, 2, "e2e-1", Some(1));
    let err = text(&again[0].stderr);
    assert_eq!(again[0].status.code(), Some(1), "{err}");
    // merging what is not every shard of one run is refused
    let (code, _, stderr) = common::run(&[
        "merge",
        dirs[0].to_str().unwrap(),
        "--out",
        root.join("m2").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("shard(s) 1 of 2 missing"), "{stderr}");
    // the server counts what the merged run says: the queries alone, sharded again
    let queries = study(root, "queries.toml", target, placeholder, false);
    let (what, count) = counted;
    let before = count();
    let runs = shards(&queries, &out, 2, "e2e-3", None);
    let after = count();
    let mut args = vec!["merge".to_string()];
    for o in &runs {
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        args.push(run_dir(&err).display().to_string());
    }
    let merged = root.join("merged-3");
    args.extend(["--out".into(), merged.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(common::run(&args).0, 0);
    let s = read_json(&merged.join("summary.json"));
    let q = step(&s, "db", "q");
    let ops = figure(q, "ops") as u64;
    assert_eq!(ops, CLIENTS * PER_CLIENT);
    let ours = match what {
        Counted::Queries => ops,
        Counted::RowsFound => q["rows"].as_u64().unwrap(),
    };
    assert_eq!(after - before, ours, "the server's count");
}

fn figure(step: &serde_json::Value, key: &str) -> f64 {
    common::figure(step, key).unwrap_or_else(|| panic!("no {key} in {step}"))
}

#[test]
fn mariadb_shards_meet_and_merge_exactly() {
    if !common::have_server("MariaDB", Path::new("/usr/sbin/mariadbd").exists()) {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut settings = BTreeMap::new();
    settings.insert("innodb_buffer_pool_size".to_string(), "32M".to_string());
    let mut server = Sandbox::create(
        Box::new(MariadbRecipe {
            settings,
            rocksdb: false,
            memory_limit_mb: None,
            device_profile: None,
            data_dir: None,
            galera: None,
        }),
        "target",
        &root.path().join("target"),
    )
    .expect("create");
    server.start().expect("start");
    let port = server.layout.port;
    let mut admin = mysql::Conn::new(
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some("root"))
            .prefer_socket(false),
    )
    .expect("connect");
    // the server's own count of rows read through the table's primary key (user
    // statistics): one for each query that found its key; dbduel's own statements read none
    admin.query_drop("SET GLOBAL userstat = 1").unwrap();
    let admin = std::cell::RefCell::new(admin);
    let read = || -> u64 {
        let n: Option<u64> = admin
            .borrow_mut()
            .query_first(
                "SELECT ROWS_READ FROM information_schema.INDEX_STATISTICS WHERE TABLE_SCHEMA = 'dbduel_sharded' AND TABLE_NAME = 'user_logs' AND INDEX_NAME = 'PRIMARY'",
            )
            .unwrap();
        n.unwrap_or(0)
    };
    let target = format!("mysql://root@127.0.0.1:{port}");
    shard_and_merge(root.path(), &target, "?", (Counted::RowsFound, &read));
    server.stop().ok();
}

#[test]
fn postgres_shards_meet_and_merge_exactly() {
    if !common::have_server("PostgreSQL", dbduel::sandbox::postgres::bin_dir().is_some()) {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut settings = BTreeMap::new();
    settings.insert("shared_buffers".to_string(), "16MB".to_string());
    let mut server = Sandbox::create(
        Box::new(PostgresRecipe {
            settings,
            ..Default::default()
        }),
        "target",
        &root.path().join("target"),
    )
    .expect("create");
    server.start().expect("start");
    let port = server.layout.port;
    let target = format!("postgres://dbduel@127.0.0.1:{port}");
    // the server's own count of index lookups on the table (a new session each time reads
    // what the shards' sessions flushed as they ended)
    let scans = || -> u64 {
        let mut c = postgres::Config::new()
            .host("127.0.0.1")
            .port(port)
            .user("dbduel")
            .dbname("dbduel_sharded")
            .connect(postgres::NoTls)
            .expect("connect");
        let n: i64 = c
            .query_one(
                "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'user_logs'",
                &[],
            )
            .unwrap()
            .get(0);
        n as u64
    };
    shard_and_merge(root.path(), &target, "$1", (Counted::Queries, &scans));
    server.stop().ok();
}

/// One shard of one merged on its own gives back every figure its run reported that a merge
/// can compute (latency percentiles from the histograms, a sweep's best level), on each step
/// kind whose clients are divided: oltp, lookups and tpcc sweeps.
#[test]
fn one_shard_merged_gives_its_figures_back() {
    if !common::have_server("MariaDB", Path::new("/usr/sbin/mariadbd").exists()) {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut settings = BTreeMap::new();
    settings.insert("innodb_buffer_pool_size".to_string(), "64M".to_string());
    let mut server = Sandbox::create(
        Box::new(MariadbRecipe {
            settings,
            rocksdb: false,
            memory_limit_mb: None,
            device_profile: None,
            data_dir: None,
            galera: None,
        }),
        "target",
        &root.path().join("target"),
    )
    .expect("create");
    server.start().expect("start");
    let target = format!("mysql://root@127.0.0.1:{}", server.layout.port);
    let kinds = [
        (
            "oltp",
            "generator = \"sbtest\"\nrows = 2000",
            "kind = \"oltp\"\nworkload = \"read_write\"\nthreads = [1, 3]\nduration_s = 3\nwarmup_s = 1",
        ),
        (
            "lookups",
            "generator = \"codes\"\ntable = \"codes\"\nrows = 4000",
            "kind = \"lookups\"\nkeys = \"full-random\"\nthreads = [1, 2]\nduration_s = 2",
        ),
        (
            "tpcc",
            "generator = \"tpcc\"\nwarehouses = 1",
            "kind = \"tpcc\"\nthreads = [1, 2]\nduration_s = 3",
        ),
    ];
    for (kind, dataset, step_toml) in kinds {
        let path = root.path().join(format!("{kind}.toml"));
        std::fs::write(
            &path,
            format!(
                "[study]\nname = \"one-{kind}\"\ndescription = \"x\"\n[dataset]\n{dataset}\n\
                 [[contender]]\nname = \"db\"\nengine = \"mariadb\"\ntarget = \"{target}\"\n\
                 [[step]]\nname = \"load\"\nkind = \"load\"\n[[step]]\nname = \"s\"\n{step_toml}\n"
            ),
        )
        .unwrap();
        let out = root.path().join("out");
        let (code, _, stderr) = common::run(&[
            "run",
            path.to_str().unwrap(),
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--shard",
            "0/1",
            "--run-group",
            &format!("one-{kind}"),
        ]);
        assert_eq!(code, 0, "{kind}: {stderr}");
        let dir = run_dir(&stderr);
        let merged = root.path().join(format!("merged-{kind}"));
        let (code, _, stderr) = common::run(&[
            "merge",
            dir.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{kind}: {stderr}");
        let before = read_json(&dir.join("summary.json"));
        let after = read_json(&merged.join("summary.json"));
        let (b, a) = (step(&before, "db", "s"), step(&after, "db", "s"));
        let mut recomputed = 0;
        for m in b["metrics"].as_array().unwrap() {
            let key = m["key"].as_str().unwrap();
            let found = a["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["key"] == key);
            let mergeable =
                !m["from"].is_null() || !matches!(m["unit"].as_str(), Some("micros" | "percent"));
            match found {
                Some(x) => {
                    assert!(mergeable, "{kind}: {key} merged without a way to");
                    let (v, w) = (m["value"].as_f64().unwrap(), x["value"].as_f64().unwrap());
                    assert!(
                        (v - w).abs() <= 1e-9 * v.abs().max(1.0),
                        "{kind}: {key} {v} became {w}"
                    );
                    recomputed += usize::from(!m["from"].is_null());
                }
                None => assert!(!mergeable, "{kind}: {key} lost"),
            }
        }
        assert!(recomputed >= 3, "{kind}: {recomputed} figures recomputed");
        assert_eq!(a["latency_us"], b["latency_us"], "{kind}");
    }
    server.stop().ok();
}
