//! End to end on real MariaDB replication topologies: a primary and replicas provisioned by
//! dbduel replicate, catch up and are removed with nothing left running; the replicas apply
//! exactly what the primary committed and their checksums match; a row written on a replica
//! makes the check fail naming the table; a replica stopped by a duplicate key fails with the
//! server's own message. With DBDUEL_REQUIRE_SERVERS=1 (CI) a missing server fails.

mod common;

use common::{figure, have_server, processes_mentioning, read_json, run, run_dir, step};
use dbduel::engine::replication::Replicated;
use dbduel::engine::{EngineConfig, OpenCtx};
use dbduel::workload::StepError;
use dbduel::workload::replication::follow::Follower;
use dbduel::workload::replication::verify;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn have_postgres() -> bool {
    have_server(
        "PostgreSQL",
        dbduel::sandbox::postgres::bin_dir().is_some_and(|b| b.join("pg_basebackup").exists()),
    )
}

fn have_mariadb() -> bool {
    have_server(
        "mariadbd",
        Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists(),
    )
}

const STUDY: &str = r#"
[study]
name = "repl-test"
description = "a small topology through every replication step"

[dataset]
generator = "sbtest"
tables = 2
rows = 2000

[[contender]]
name = "topo"
engine = "mariadb"
options = { buffer_pool_mb = 64, replicas = [
    { name = "serial" },
    { name = "optimistic-2", parallel_mode = "optimistic", parallel_threads = 2 },
] }

[[step]]
name = "load"
kind = "load"

[[step]]
name = "catch-up"
kind = "catch-up"
writers = 4
duration_s = 3

[[step]]
name = "commit-wait"
kind = "commit-wait"
writers = 4
duration_s = 2
wait_counts = [0, 8]
wait_usecs = [10000]

[[step]]
name = "lag"
kind = "replica-lag"
writers = 4
duration_s = 3

[[step]]
name = "bitmaps"
kind = "catch-up"
writes = "bitmaps"
writers = 2
duration_s = 2
bitmap_min_bytes = 1024
bitmap_max_bytes = 65536
apply = "together"
"#;

#[test]
fn a_topology_replicates_every_step_and_leaves_nothing_running() {
    if !have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("repl.toml");
    std::fs::write(&study, STUDY).expect("study");
    let out = root.path().join("out");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));

    // Catch-up: each replica applied exactly what the primary committed during the writes,
    // and its own handler counters saw the rows.
    let c = step(&summary, "topo", "catch-up");
    assert_eq!(c["status"], "ok", "{c:#}");
    let details = read_json(&dir.join("topo/catch-up.json"))["details"].clone();
    let written = details["transactions_written"].as_u64().expect("written");
    assert!(written > 100, "{details:#}");
    let committed = c["rows"].as_u64().expect("rows");
    assert_eq!(committed, written);
    for r in details["replicas"].as_array().expect("replicas") {
        let name = r["replica"].as_str().expect("name");
        assert_eq!(r["transactions"].as_u64(), Some(written), "{r:#}");
        let tps = figure(c, &format!("apply_tps.{name}")).expect("apply rate");
        let secs = figure(c, &format!("catch_up_s.{name}")).expect("catch-up");
        assert!(
            (tps * secs - written as f64).abs() <= written as f64 * 0.01,
            "{r:#}"
        );
        // One sbtest row a transaction: the replica's own handler counters agree with the
        // transactions dbduel counted by GTID within 2 %.
        let rows = r["rows"].as_u64().expect("handler counters") as f64;
        assert!(
            (rows - written as f64).abs() <= written as f64 * 0.02,
            "{name}: {rows} rows by its counters for {written} transactions"
        );
    }
    assert!(
        c["note"]
            .as_str()
            .is_some_and(|n| n.contains("checksums equal on 2 replica(s)")),
        "{c:#}"
    );
    // The dbduel writers' count agrees with the primary's own GTID position.
    let d = &details;
    assert_eq!(
        d["primary_end"]["transactions"].as_u64().unwrap_or(0)
            - d["primary_start"]["transactions"].as_u64().unwrap_or(0),
        written
    );

    // Commit wait: a count above the writers never fills a group, and the step says so;
    // each commit then waits the full 10 ms, so 4 writers make at most about 400/s.
    let w = step(&summary, "topo", "commit-wait");
    assert_eq!(w["status"], "ok", "{w:#}");
    let stalled = figure(w, "tps_wait_8_10000").expect("wait 8");
    let free = figure(w, "tps_wait_0_10000").expect("wait 0");
    assert!(stalled < 440.0 && free > 2.0 * stalled, "{w:#}");
    assert!(
        w["note"]
            .as_str()
            .is_some_and(|n| n.contains("a commit group never fills")),
        "{w:#}"
    );

    // Lag: a second-by-second timeline for each replica, and everything drained.
    let l = step(&summary, "topo", "lag");
    assert_eq!(l["status"], "ok", "{l:#}");
    let lag = read_json(&dir.join("topo/lag.json"))["details"].clone();
    for name in ["serial", "optimistic-2"] {
        let seconds = lag["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .filter(|s| s["replica"] == name)
            .count();
        assert!(seconds >= 3, "{name}: {seconds} seconds in {lag:#}");
        assert!(figure(l, &format!("max_lag_s.{name}")).is_some(), "{l:#}");
    }

    // The seed's bitmap rows, applied by both replicas together.
    let b = step(&summary, "topo", "bitmaps");
    assert_eq!(b["status"], "ok", "{b:#}");

    // Every member of the topology was stopped and removed.
    let left = processes_mentioning(dir.to_str().expect("utf-8"));
    assert!(left.is_empty(), "left running: {left:?}");
    assert!(!dir.join("work").exists() || dbduel::sandbox::find(&dir).is_empty());
}

/// A topology opened through the library, for what a study cannot do: write on a replica.
fn open_topology(engine: &str, options: &str, dir: &Path) -> Box<dyn dbduel::engine::Engine> {
    let options: toml::Table = toml::from_str(options).expect("options");
    let config = EngineConfig::decode(engine, &options, None).expect("valid options");
    config
        .open(&OpenCtx {
            contender: "faults",
            dir,
            database: "dbduel_faults",
            max_clients: 4,
        })
        .expect("topology starts")
}

fn settle(repl: &dyn Replicated) -> Result<bool, StepError> {
    Follower::new(repl, Instant::now()).settle(Duration::from_secs(60), &AtomicBool::new(false))
}

#[test]
fn a_replica_that_differs_or_stops_fails_with_the_table_or_the_servers_words() {
    if !have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = open_topology(
        "mariadb",
        "buffer_pool_mb = 32\nreplicas = [{ name = \"r1\" }, { name = \"r2\", parallel_threads = 2 }]",
        root.path(),
    );
    let repl = engine.replication().expect("a topology");
    assert_eq!(repl.replica_count(), 2);
    let status = dbduel::sandbox::find(root.path());
    let roles: Vec<String> = status
        .iter()
        .filter_map(|f| f.manifest.role.clone())
        .collect();
    assert_eq!(roles.len(), 3, "{roles:?}");
    assert!(
        roles.iter().any(|r| r == "primary of 2 replicas"),
        "{roles:?}"
    );

    let mut primary = engine.connect().expect("primary");
    primary
        .execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        .expect("create");
    primary
        .execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        .expect("insert");
    assert!(settle(repl).expect("replicas catch up"));
    let checked = verify::checksums_equal(repl).expect("equal");
    assert!(checked.tables >= 2, "{checked:?}");

    // A row written on a replica behind the primary's back.
    let mut r1 = repl.replica_session(0).expect("replica r1");
    r1.execute("INSERT INTO t VALUES (3, 'only on r1')")
        .expect("write on the replica");
    let err = verify::checksums_equal(repl).expect_err("r1 differs");
    let msg = err.to_string();
    assert!(
        msg.contains("replica r1") && msg.contains("table t differs"),
        "{msg}"
    );

    // The primary then writes the same key: r1's SQL thread stops on the duplicate.
    primary
        .execute("INSERT INTO t VALUES (3, 'primary')")
        .expect("insert on the primary");
    let err = settle(repl).expect_err("r1 stops");
    let msg = err.to_string();
    assert!(
        msg.contains("replica r1 stopped replicating") && msg.contains("Duplicate entry"),
        "{msg}"
    );
    drop(r1);
    drop(primary);
    engine.finish(false).expect("removed");
    let left = processes_mentioning(root.path().to_str().expect("utf-8"));
    assert!(left.is_empty(), "left running: {left:?}");
    assert!(dbduel::sandbox::find(root.path()).is_empty());
}

#[test]
fn a_postgres_standby_catches_up_and_a_row_it_lacks_fails_the_check() {
    if !have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("repl-pg.toml");
    let text = STUDY
        .replace(
            "engine = \"mariadb\"\noptions = { buffer_pool_mb = 64, replicas = [\n    { name = \"serial\" },\n    { name = \"optimistic-2\", parallel_mode = \"optimistic\", parallel_threads = 2 },\n] }",
            "engine = \"postgres\"\noptions = { shared_buffers_mb = 64, replicas = [{ name = \"standby\" }] }",
        );
    assert!(
        text.contains("engine = \"postgres\""),
        "the study's contender changed"
    );
    std::fs::write(&study, text).expect("study");
    let out = root.path().join("out");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let c = step(&summary, "topo", "catch-up");
    assert_eq!(c["status"], "ok", "{c:#}");
    let details = read_json(&dir.join("topo/catch-up.json"))["details"].clone();
    let written = details["transactions_written"].as_u64().expect("written");
    assert_eq!(c["rows"].as_u64(), Some(written));
    // Transactions by transaction id on the standby equal the primary's commits.
    assert_eq!(
        details["replicas"][0]["transactions"].as_u64(),
        Some(written),
        "{details:#}"
    );
    assert!(
        figure(c, "apply_tps.standby").is_some_and(|v| v > 0.0),
        "{c:#}"
    );
    let w = step(&summary, "topo", "commit-wait");
    assert_eq!(w["status"], "skipped", "{w:#}");
    assert_eq!(step(&summary, "topo", "lag")["status"], "ok");
    assert_eq!(step(&summary, "topo", "bitmaps")["status"], "ok");
    assert!(processes_mentioning(dir.to_str().expect("utf-8")).is_empty());

    // Through the library: a standby that misses a row the primary has fails the check.
    let engine = open_topology(
        "postgres",
        "shared_buffers_mb = 32\nreplicas = [{ name = \"s1\" }]",
        &root.path().join("lib"),
    );
    let repl = engine.replication().expect("a topology");
    let mut primary = engine.connect().expect("primary");
    primary
        .execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        .expect("create");
    primary
        .execute("INSERT INTO t VALUES (1, 'a')")
        .expect("insert");
    assert!(settle(repl).expect("standby catches up"));
    verify::checksums_equal(repl).expect("equal");
    repl.pause_apply(0).expect("pause");
    primary
        .execute("INSERT INTO t VALUES (2, 'b')")
        .expect("insert");
    let err = verify::checksums_equal(repl).expect_err("s1 lacks a row");
    assert!(
        err.to_string().contains("replica s1") && err.to_string().contains("table t differs"),
        "{err}"
    );
    repl.resume_apply(0).expect("resume");
    assert!(settle(repl).expect("standby catches up"));
    verify::checksums_equal(repl).expect("equal again");
    drop(primary);
    engine.finish(false).expect("removed");
    assert!(processes_mentioning(root.path().to_str().expect("utf-8")).is_empty());
}
