//! One run split into shards, each a dbduel process started as a Kubernetes Indexed Job
//! starts it (JOB_COMPLETION_INDEX, DBDUEL_SHARDS, DBDUEL_RUN_GROUP), against a real MariaDB
//! and PostgreSQL server; then merged. The merged counts equal the shards' sum and the
//! server's own; its percentiles equal those of the shards' histograms added together; a
//! shard that never comes fails the others' meeting with its index.

mod common;

use common::{read_json, run_dir, step};
use dbduel::engines::postgres::recipe::PostgresRecipe;
use dbduel::sandbox::Sandbox;
use mysql::prelude::Queryable;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

const CLIENTS: u64 = 8;
/// Shards of the run, each started as an Indexed Job's pod would be.
const SHARDS: u32 = 4;
const PER_CLIENT: u64 = 150;

/// The study: a load, and a queries step of CLIENTS clients, PER_CLIENT queries each, of
/// keys drawn from each client's own stream, half of them not in the table.
fn study(dir: &Path, file: &str, target: &str, placeholder: &str, with_load: bool) -> PathBuf {
    let load = if with_load {
        "[[step]]\nname = \"load\"\nkind = \"load\"\n"
    } else {
        ""
    };
    let engine = if target.starts_with("mysql") {
        "mariadb"
    } else {
        "postgres"
    };
    let text = common::fill(
        include_str!("studies/shard_queries.toml"),
        &[
            ("engine", engine),
            ("target", target),
            ("load", load),
            ("clients", &CLIENTS.to_string()),
            ("per_client", &PER_CLIENT.to_string()),
            ("placeholder", placeholder),
        ],
    );
    let p = dir.join(file);
    std::fs::write(&p, text).unwrap();
    p
}

/// `dbduel run STUDY -q --out OUT` with its output piped, started with `how` (a shard's
/// index and group, by arguments or environment).
fn start_shard(study: &Path, out: &Path, how: impl FnOnce(&mut Command)) -> Child {
    let mut c = common::bin();
    c.args(["run", study.to_str().unwrap(), "-q", "--out"])
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    how(&mut c);
    c.spawn().expect("start a shard")
}

/// `dbduel merge DIRS… --out OUT` and `extra` arguments: exit code, stdout, stderr.
fn merge(dirs: &[PathBuf], out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    common::run(&args)
}

/// The study text of a sharded run on a MariaDB target with these steps.
fn mariadb_study(target: &str, steps: &str) -> String {
    common::fill(
        include_str!("studies/shard_steps_on_mariadb.toml"),
        &[("target", target), ("steps", steps)],
    )
}

/// Start `n` shards at once, as an Indexed Job's pods would be; their outputs in index order.
fn shards(study: &Path, out: &Path, n: u32, group: &str, only: Option<u32>) -> Vec<Output> {
    let children: Vec<_> = (0..n)
        .filter(|i| only.is_none_or(|o| o == *i))
        .map(|i| {
            start_shard(study, out, |c| {
                c.args(["--barrier-timeout-s", "8"])
                    .env("JOB_COMPLETION_INDEX", i.to_string())
                    .env("DBDUEL_SHARDS", n.to_string())
                    .env("DBDUEL_RUN_GROUP", group);
            })
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("shard ends"))
        .collect()
}

/// The study at `path` as shards 0/2 and 1/2 of `group`, started at once; their run
/// directories, each shard having succeeded.
fn two_shards(path: &Path, out: &Path, group: &str) -> Vec<PathBuf> {
    let runs: Vec<_> = (0..2)
        .map(|i| {
            start_shard(path, out, |c| {
                c.args(["--shard", &format!("{i}/2"), "--run-group", group]);
            })
        })
        .collect();
    runs.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let o = r.wait_with_output().unwrap();
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "shard {i}: {err}");
            run_dir(&err)
        })
        .collect()
}

/// One step of `kind` on `dataset` as the only step of two shards on a MariaDB target
/// started under `root`, then merged: the target (to destroy), the shards' run directories
/// and the merged one.
fn two_shards_merged(
    root: &Path,
    (kind, dataset): (&str, &str),
    step_toml: &str,
) -> (Sandbox, Vec<PathBuf>, PathBuf) {
    let server = mariadb_target(root, "64M");
    let port = server.layout.port;
    let target = common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}"), port);
    let path = root.join(format!("{kind}.toml"));
    let study_text = common::fill(
        include_str!("studies/shard_one_step_kind.toml"),
        &[
            ("kind", kind),
            ("dataset", dataset),
            ("target", &target),
            ("step_toml", step_toml),
        ],
    );
    std::fs::write(&path, study_text).unwrap();
    let dirs = two_shards(&path, &root.join("out"), &format!("e2e-{kind}"));
    let merged = root.join(format!("merged-{kind}"));
    let (code, _, stderr) = merge(&dirs, &merged, &[]);
    assert_eq!(code, 0, "{stderr}");
    (server, dirs, merged)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the server's own count counts.
enum Counted {
    Queries,
    RowsFound,
}

/// Run the study in SHARDS shards and merge, and check what holds on any engine; `counted`
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
    let (dirs, sum) = run_in_shards(&full, &out);
    check_merged(root, &dirs, sum, whole_rows);
    check_refusals(root, &full, &out, &dirs);
    check_servers_count(root, target, placeholder, &out, counted);
}

/// The sharded run: its load runs on shard 0 alone, the queries on every shard. Each shard's
/// run directory, and the queries they ran together.
fn run_in_shards(full: &Path, out: &Path) -> (Vec<PathBuf>, u64) {
    let runs = shards(full, out, SHARDS, "e2e-1", None);
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
                .contains(&format!("sharded-shard-{i}-of-{SHARDS}-")),
            "{}",
            d.display()
        );
        let s = read_json(&d.join("summary.json"));
        let q = step(&s, "db", "q");
        // each shard ran its own half of the clients, each client its PER_CLIENT queries
        assert_eq!(
            figure(q, "ops"),
            (CLIENTS / SHARDS as u64 * PER_CLIENT) as f64,
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
    (dirs, sum)
}

/// Merged, the shards' queries add up to every client's, each found the rows it found
/// unsharded (`whole_rows`), and every percentile is that of their histograms added up.
fn check_merged(root: &Path, dirs: &[PathBuf], sum: u64, whole_rows: u64) {
    let merged = root.join("merged");
    let (code, stdout, stderr) = merge(dirs, &merged, &["--format", "json"]);
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
    for d in dirs {
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
    assert_eq!(m["shards"].as_array().unwrap().len(), SHARDS as usize);
    assert!(
        q["note"]
            .as_str()
            .unwrap()
            .contains(&format!("merged from {SHARDS} shards")),
        "{q}"
    );
    // the merged run reads like any other
    let (code, report, stderr) = common::run(&["report", merged.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(report.contains("db"), "{report}");
}

/// A shard that never comes, a group used again and a merge of too few shards are refused.
fn check_refusals(root: &Path, full: &Path, out: &Path, dirs: &[PathBuf]) {
    // a shard that never comes fails the other's meeting, naming it
    let alone = shards(full, out, 2, "e2e-2", Some(0));
    let err = text(&alone[0].stderr);
    assert_eq!(alone[0].status.code(), Some(1), "{err}");
    let s = read_json(&run_dir(&err).join("summary.json"));
    let note = step(&s, "db", "load")["note"].as_str().unwrap().to_string();
    assert!(note.contains("shard(s) 1 of 2 never arrived"), "{note}");
    // and a group once used is not used again
    let again = shards(full, out, 2, "e2e-1", Some(1));
    let err = text(&again[0].stderr);
    assert_eq!(again[0].status.code(), Some(1), "{err}");
    // merging what is not every shard of one run is refused
    let (code, _, stderr) = merge(&dirs[..1], &root.join("m2"), &[]);
    assert_eq!(code, 2);
    let others: Vec<String> = (1..SHARDS).map(|i| i.to_string()).collect();
    let missing = format!("shard(s) {} of {SHARDS} missing", others.join(", "));
    assert!(stderr.contains(&missing), "{stderr}");
}

/// The server counts what the merged run says: the queries alone, sharded again.
fn check_servers_count(
    root: &Path,
    target: &str,
    placeholder: &str,
    out: &Path,
    counted: (Counted, &dyn Fn() -> u64),
) {
    let queries = study(root, "queries.toml", target, placeholder, false);
    let (what, count) = counted;
    let before = count();
    let runs = shards(&queries, out, 2, "e2e-3", None);
    let after = count();
    let mut run_dirs = Vec::new();
    for o in &runs {
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        run_dirs.push(run_dir(&err));
    }
    let merged = root.join("merged-3");
    assert_eq!(merge(&run_dirs, &merged, &[]).0, 0);
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

/// A private MariaDB server for the shards' target, started.
fn mariadb_target(root: &Path, buffer_pool: &str) -> Sandbox {
    let mut server = Sandbox::create(
        common::mariadb_recipe(buffer_pool),
        "target",
        &root.join("target"),
    )
    .expect("create");
    server.start().expect("start");
    server
}

fn figure(step: &serde_json::Value, key: &str) -> f64 {
    common::figure(step, key).unwrap_or_else(|| panic!("no {key} in {step}"))
}

#[test]
fn mariadb_shards_meet_and_merge_exactly() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let server = mariadb_target(root.path(), "32M");
    let port = server.layout.port;
    let mut admin = common::mysql_conn(port, None);
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
    let target = common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}"), port);
    shard_and_merge(root.path(), &target, "?", (Counted::RowsFound, &read));
    interrupted_shard_stops_the_others(root.path(), &target);
    others_wait_while_shard_0_works_alone(root.path(), &target);
    server.destroy().expect("destroy");
}

#[test]
fn postgres_shards_meet_and_merge_exactly() {
    if !common::have_postgres() {
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
    let target = common::target_with_secret(&format!("postgres://dbduel@127.0.0.1:{port}"), port);
    // the server's own count of index lookups on the table (a new session each time reads
    // what the shards' sessions flushed as they ended)
    let scans = || -> u64 {
        let mut c = postgres::Config::new()
            .host("127.0.0.1")
            .port(port)
            .user("dbduel")
            .password(common::sandbox_password(port))
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
    server.destroy().expect("destroy");
}

/// One shard of one merged on its own gives back every figure its run reported that a merge
/// can compute (latency percentiles from the histograms, a sweep's best level), on each step
/// kind whose clients are divided: oltp, lookups and tpcc sweeps.
#[test]
fn one_shard_merged_gives_its_figures_back() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let server = mariadb_target(root.path(), "64M");
    let port = server.layout.port;
    let target = common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}"), port);
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
        let text = common::fill(
            include_str!("studies/shard_one_step_kind.toml"),
            &[
                ("kind", kind),
                ("dataset", dataset),
                ("target", &target),
                ("step_toml", step_toml),
            ],
        );
        std::fs::write(&path, text).unwrap();
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
        let (code, _, stderr) = merge(std::slice::from_ref(&dir), &merged, &[]);
        assert_eq!(code, 0, "{kind}: {stderr}");
        // the merged run is in the catalogue of the root it was written in, as a run is
        let (code, listed, stderr) =
            common::run(&["history", "--out", root.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{kind}: {stderr}");
        assert!(
            listed.contains(&format!("merged-{kind}")),
            "{kind}: the merged run is not in the catalogue: {listed}"
        );
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
            let mergeable = match m["from"]["of"].as_str() {
                Some(of) => of != "at_own_best",
                None => !matches!(m["unit"].as_str(), Some("micros" | "percent")),
            };
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
        // and every level's details, computed again from the one shard's seconds
        let (rb, ra) = (
            read_json(&dir.join("db/s.json")),
            read_json(&merged.join("db/s.json")),
        );
        same_json(
            &rb["details"]["levels"],
            &ra["details"]["levels"],
            &format!("{kind}: levels"),
        );
        same_json(
            &rb["details"]["best"],
            &ra["details"]["best"],
            &format!("{kind}: best"),
        );
    }
    server.destroy().expect("destroy");
}

/// `a` and `b` alike, numbers within a relative 1e-9 (a float added up again).
fn same_json(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: {a} became {b}");
            for (k, v) in x {
                same_json(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (serde_json::Value::Array(x), serde_json::Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: {a} became {b}");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                same_json(v, w, &format!("{at}[{i}]"));
            }
        }
        (serde_json::Value::Number(x), serde_json::Value::Number(y)) => {
            let (v, w) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (v - w).abs() <= 1e-9 * v.abs().max(1.0),
                "{at}: {v} became {w}"
            );
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// Ctrl-C on one shard: it ends as interrupted (130) and tells the others, which fail at their
/// next meeting naming it instead of waiting for it.
fn interrupted_shard_stops_the_others(root: &Path, target: &str) {
    let path = root.join("two-steps.toml");
    std::fs::write(
        &path,
        mariadb_study(
            target,
            "[[step]]\nname = \"long\"\nkind = \"queries\"\nclients = 2\nduration_s = 4\n\
             queries = [\"SELECT id FROM user_logs WHERE id = 7\"]\n\
             [[step]]\nname = \"after\"\nkind = \"queries\"\nclients = 2\nper_client = 10\n\
             queries = [\"SELECT id FROM user_logs WHERE id = 7\"]\n",
        ),
    )
    .unwrap();
    let out = root.join("out");
    let spawn = |i: u32| {
        start_shard(&path, &out, |c| {
            c.args(["--shard", &format!("{i}/2"), "--run-group", "e2e-int"]);
        })
    };
    let (zero, one) = (spawn(0), spawn(1));
    std::thread::sleep(std::time::Duration::from_secs(2));
    dbduel::sandbox::signal(one.id() as i32, libc::SIGINT);
    let one = one.wait_with_output().unwrap();
    let said = text(&one.stderr);
    assert_eq!(one.status.code(), Some(130), "{said}");
    assert!(!said.contains("could not tell the other shards"), "{said}");
    let began = std::time::Instant::now();
    let zero = zero.wait_with_output().unwrap();
    let err = text(&zero.stderr);
    assert_eq!(zero.status.code(), Some(1), "{err}");
    assert!(
        began.elapsed().as_secs() < 8,
        "shard 0 waited out its timeout"
    );
    let s = read_json(&run_dir(&err).join("summary.json"));
    let note = step(&s, "db", "after")["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.contains("shard 1 of this run stopped: step `long`: interrupted"),
        "{note}"
    );
}

/// `dbduel k8s` prints objects Kubernetes reads, whose passwords are references: the value in
/// this environment never appears, and an unset variable is no error (the pods have it).
#[test]
fn k8s_prints_the_objects_without_a_secret_value() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = study(
        dir.path(),
        "s.toml",
        "mysql://bench@db7.internal:3306",
        "?",
        true,
    );
    let toml = std::fs::read_to_string(&path).unwrap().replace(
        "target = \"mysql://bench@db7.internal:3306\"",
        "target = \"mysql://bench@db7.internal:3306\"\npassword_env = \"BENCH_PW\"",
    );
    std::fs::write(&path, toml).unwrap();
    let args = [
        "k8s",
        path.to_str().unwrap(),
        "--shards",
        "3",
        "--image",
        "registry.example/dbduel:1",
        "--secret",
        "bench-db",
        "--set",
        "step.q.per_client=10",
    ];
    for value in [Some("s3cret-value"), None] {
        let mut cmd = common::bin();
        cmd.args(args);
        match value {
            Some(v) => cmd.env("BENCH_PW", v),
            None => cmd.env_remove("BENCH_PW"),
        };
        let out = cmd.output().unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(!stdout.contains("s3cret-value"));
        let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let job: k8s_openapi::api::batch::v1::Job =
            serde_json::from_value(list["items"][2].clone()).expect("a Job");
        let spec = job.spec.unwrap();
        assert_eq!(spec.completions, Some(3));
        let c = &spec.template.spec.unwrap().containers[0];
        let cmd = c.command.clone().unwrap().join(" ");
        assert!(cmd.ends_with("--set step.q.per_client=10"), "{cmd}");
        let env = c.env.clone().unwrap();
        let pw = env.iter().find(|e| e.name == "BENCH_PW").unwrap();
        assert_eq!(
            pw.value_from
                .as_ref()
                .unwrap()
                .secret_key_ref
                .as_ref()
                .unwrap()
                .name,
            "bench-db"
        );
    }
    // a step that restarts the shared server cannot be sharded
    let cold = std::fs::read_to_string(&path)
        .unwrap()
        .replace("kind = \"queries\"", "kind = \"count\"\ncold = true")
        .replace("clients = ", "# clients = ")
        .replace("per_client = ", "# per_client = ")
        .replace("queries = [", "# queries = [")
        .replace("params = [", "# params = [");
    let cold_path = dir.path().join("cold.toml");
    std::fs::write(&cold_path, cold).unwrap();
    let out = common::bin()
        .args(["run", cold_path.to_str().unwrap(), "--check"])
        .args(["--shard", "0/2", "--run-group", "g"])
        .env("BENCH_PW", "x")
        .output()
        .unwrap();
    let (code, stderr) = (out.status.code().unwrap_or(-1), text(&out.stderr));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("restarts the server (cold = true)"),
        "{stderr}"
    );
    // a study whose contenders start their own servers cannot be sharded
    let (code, _, stderr) = common::run(&["k8s", "shootout", "--shards", "2", "--image", "x"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("sharded runs need MariaDB or PostgreSQL"),
        "{stderr}"
    );
}

/// `dbduel sandbox up` leaves a server running for targets (the shards of a run on one
/// machine); a study runs against it; `sandbox down` removes it.
#[test]
fn sandbox_up_gives_a_target_that_down_removes() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let out = root.path().join("res");
    let out_s = out.to_str().unwrap();
    let (code, stdout, stderr) = common::run(&["sandbox", "up", "postgres", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}");
    // its target, and the file of its password (never the password itself)
    let (target, password_file) = stdout
        .trim()
        .strip_prefix("target = \"")
        .and_then(|t| t.split_once("\"\npassword_file = \""))
        .and_then(|(t, f)| Some((t, f.strip_suffix('"')?)))
        .unwrap_or_else(|| panic!("{stdout}"));
    let target = format!("{target}\"\npassword_file = \"{password_file}");
    let (code, _, stderr) = common::run(&["sandbox", "up", "postgres", "--out", out_s]);
    assert_eq!(code, 2, "a second of the same name: {stderr}");
    let path = study(root.path(), "s.toml", &target, "$1", true);
    let (code, _, stderr) = common::run(&["run", path.to_str().unwrap(), "-q", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}");
    let (_, status, _) = common::run(&["sandbox", "status", "--out", out_s]);
    assert!(status.contains("running"), "{status}");
    let (code, down, stderr) = common::run(&["sandbox", "down", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}");
    assert!(down.contains("removed postgres target"), "{down}");
    assert!(!out.join("sandboxes/target").exists());
}

/// A step shard 0 runs alone may take longer than the meeting's timeout: the others wait for
/// it as long as it says it is busy.
fn others_wait_while_shard_0_works_alone(root: &Path, target: &str) {
    let path = root.join("slow.toml");
    std::fs::write(
        &path,
        mariadb_study(
            target,
            "[[step]]\nname = \"slow\"\nkind = \"update\"\n\
             sql = \"UPDATE user_logs SET uid = uid WHERE id <= 3 AND SLEEP(1) = 0\"\n\
             [[step]]\nname = \"after\"\nkind = \"queries\"\nclients = 2\nper_client = 10\n\
             queries = [\"SELECT id FROM user_logs WHERE id = 7\"]\n",
        ),
    )
    .unwrap();
    let out = root.join("out");
    let runs: Vec<_> = (0..2)
        .map(|i| {
            start_shard(&path, &out, |c| {
                c.args(["--shard", &format!("{i}/2"), "--run-group", "e2e-slow"])
                    .args(["--barrier-timeout-s", "1"]);
            })
        })
        .collect();
    for (i, r) in runs.into_iter().enumerate() {
        let o = r.wait_with_output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "shard {i}: {err}");
        let s = read_json(&run_dir(&err).join("summary.json"));
        let slow = &step(&s, "db", "slow")["status"];
        assert_eq!(slow, if i == 0 { "ok" } else { "skipped" });
        assert_eq!(step(&s, "db", "after")["status"], "ok");
    }
}

/// Two shards of an oltp sweep, merged: every level's figures in the step's details are the
/// merged ones (events summed, latency from the level's histograms added up, the best level
/// chosen again), as the summary's are, and each shard's own levels are kept under `shards`.
#[test]
fn merged_sweep_is_merged_at_every_level() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let (server, dirs, merged) = two_shards_merged(
        root.path(),
        ("oltp", "generator = \"sbtest\"\nrows = 2000"),
        "kind = \"oltp\"\nworkload = \"point_select\"\nthreads = [2, 4]\nduration_s = 2",
    );
    let shard_records: Vec<serde_json::Value> = dirs
        .iter()
        .map(|d| read_json(&d.join("db/s.json")))
        .collect();
    let record = read_json(&merged.join("db/s.json"));
    let levels = record["details"]["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 2);
    let mut all_events = 0;
    for (li, level) in levels.iter().enumerate() {
        let threads = level["threads"].as_u64().unwrap();
        assert_eq!(threads, [2, 4][li]);
        let theirs: Vec<&serde_json::Value> = shard_records
            .iter()
            .map(|r| &r["details"]["levels"][li])
            .collect();
        let sum: u64 = theirs.iter().map(|l| l["events"].as_u64().unwrap()).sum();
        assert_eq!(
            level["events"].as_u64().unwrap(),
            sum,
            "events at {threads}"
        );
        all_events += sum;
        let tps: f64 = theirs.iter().map(|l| l["tps"].as_f64().unwrap()).sum();
        assert!((level["tps"].as_f64().unwrap() - tps).abs() < 1e-6 * tps);
        // the level's latency is that of its histograms added up
        let mut union = dbduel::metrics::new_hist();
        for d in &dirs {
            let ivs = std::fs::read_to_string(d.join("db/s.intervals.ndjson")).unwrap();
            for line in ivs.lines() {
                let iv: serde_json::Value = serde_json::from_str(line).unwrap();
                if iv["level"].as_u64() != Some(threads) || iv["warmup"] == true {
                    continue;
                }
                for op in iv["per_op"].as_array().unwrap() {
                    if let Some(h) = op["hist"].as_str() {
                        dbduel::metrics::merge(&mut union, &dbduel::metrics::decode(h).unwrap());
                    }
                }
            }
        }
        assert_eq!(
            union.len(),
            sum,
            "every event of level {threads} in a histogram"
        );
        assert_eq!(
            level["latency_us"]["p99"].as_u64().unwrap(),
            dbduel::metrics::quantile(&union, 0.99),
            "p99 at {threads}"
        );
    }
    // the best level is the summed one the summary names, and each shard's own is kept
    let summary = read_json(&merged.join("summary.json"));
    let s = step(&summary, "db", "s");
    assert_eq!(s["rows"].as_u64().unwrap(), all_events);
    assert_eq!(
        record["details"]["best"]["threads"].as_f64().unwrap(),
        figure(s, "best_threads")
    );
    assert_eq!(
        record["details"]["best"]["tps"].as_f64().unwrap(),
        s["ops_per_s"].as_f64().unwrap()
    );
    for (i, r) in shard_records.iter().enumerate() {
        assert_eq!(record["shards"][i]["details"], r["details"], "shard {i}");
    }
    server.destroy().expect("destroy");
}

/// What `dbduel k8s` prints for a fixed study is kept as a golden file, and that file is valid
/// against the Kubernetes API's own schema for the pinned version (v1.32, strict: no field the
/// API does not know), checked by `scripts/k8s-schema` without a cluster; an object with a
/// field the API lacks is refused by the same check.
#[test]
fn k8s_objects_match_the_golden_and_the_api_schema() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = study(
        dir.path(),
        "s.toml",
        "mysql://bench@db7.internal:3306",
        "?",
        true,
    );
    let toml = std::fs::read_to_string(&path).unwrap().replace(
        "target = \"mysql://bench@db7.internal:3306\"",
        "target = \"mysql://bench@db7.internal:3306\"\npassword_env = \"BENCH_PW\"",
    );
    std::fs::write(&path, toml).unwrap();
    let (code, stdout, stderr) = common::run(&[
        "k8s",
        path.to_str().unwrap(),
        "--shards",
        "4",
        "--image",
        "registry.example/dbduel:1",
        "--secret",
        "bench-db",
        "--namespace",
        "bench",
        "--metrics-port",
        "9464",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden/k8s.json");
    if std::env::var("DBDUEL_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::write(&golden, &stdout).unwrap();
    }
    assert_eq!(
        stdout,
        std::fs::read_to_string(&golden).unwrap(),
        "dbduel k8s prints other objects than tests/fixtures/golden/k8s.json: check them, then write it again with DBDUEL_UPDATE_GOLDEN=1"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/k8s-schema");
    let installed = Command::new(&script)
        .arg("dir")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::have_server(
        "the Kubernetes schema (scripts/k8s-schema install)",
        installed,
    ) {
        return;
    }
    let validate = |file: &Path| {
        let o = Command::new(&script)
            .arg("validate")
            .arg(file)
            .output()
            .expect("k8s-schema runs");
        (o.status.code(), text(&o.stdout) + &text(&o.stderr))
    };
    let (code, said) = validate(&golden);
    assert_eq!(code, Some(0), "{said}");
    // the check is strict: a field the API does not know is refused, naming it
    let mut list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    list["items"][2]["spec"]["completionsPerPod"] = serde_json::json!(2);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, list.to_string()).unwrap();
    let (code, said) = validate(&bad);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("completionsPerPod"), "{said}");
}

/// YCSB's workload B over two shards on one MariaDB target: the merged level's operations of
/// each kind are the shards' added up, and its per-operation p99 that of the shards' histograms
/// of that operation.
#[test]
fn a_sharded_ycsb_workload_merges_its_operations_by_kind() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let (server, dirs, merged) = two_shards_merged(
        root.path(),
        ("ycsb", "generator = \"ycsb\"\nrows = 2000"),
        "kind = \"ycsb\"\nworkload = \"b\"\nthreads = [4]\nduration_s = 2",
    );
    let ops_of = |r: &serde_json::Value, name: &str| -> u64 {
        r["details"]["levels"][0]["per_op"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .and_then(|o| o["count"].as_u64())
            .unwrap_or(0)
    };
    let shard_records: Vec<serde_json::Value> = dirs
        .iter()
        .map(|d| read_json(&d.join("db/s.json")))
        .collect();
    let record = read_json(&merged.join("db/s.json"));
    for name in ["read", "update"] {
        let sum: u64 = shard_records.iter().map(|r| ops_of(r, name)).sum();
        assert!(sum > 0, "{name}");
        assert_eq!(
            ops_of(&record, name),
            sum,
            "{name}: merged against the shards' sum"
        );
    }
    // the per-operation p99 of the merged level is that of the shards' read histograms
    let mut union = dbduel::metrics::new_hist();
    for d in &dirs {
        let ivs = std::fs::read_to_string(d.join("db/s.intervals.ndjson")).unwrap();
        for line in ivs.lines() {
            let iv: serde_json::Value = serde_json::from_str(line).unwrap();
            for op in iv["per_op"].as_array().unwrap() {
                if op["op"] == "read"
                    && let Some(h) = op["hist"].as_str()
                {
                    dbduel::metrics::merge(&mut union, &dbduel::metrics::decode(h).unwrap());
                }
            }
        }
    }
    let summary = read_json(&merged.join("summary.json"));
    let s = step(&summary, "db", "s");
    assert_eq!(
        figure(s, "read_p99_us_t4") as u64,
        dbduel::metrics::quantile(&union, 0.99),
        "read p99 from the shards' read histograms"
    );
    server.destroy().expect("destroy");
}
