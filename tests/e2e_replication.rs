//! End to end on real MariaDB replication topologies: a primary and replicas provisioned by
//! dbduel replicate, catch up and are removed with nothing left running; the replicas apply
//! exactly what the primary committed and their checksums match; a row written on a replica
//! makes the check fail naming the table; a replica stopped by a duplicate key fails with the
//! server's own message. With DBDUEL_REQUIRE_SERVERS=1 (CI) a missing server fails.

mod common;

use common::{figure, have_server, processes_mentioning, read_json, run, run_dir, step};
use dbduel::engine::OpenCtx;
use dbduel::engine::replication::Replicated;
use dbduel::engines::EngineConfig;
use dbduel::workload::StepError;
use dbduel::workload::replication::follow::Follower;
use dbduel::workload::replication::verify;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn have_postgres() -> bool {
    have_server(
        "PostgreSQL",
        dbduel::engines::postgres::recipe::bin_dir().is_some_and(|b| b.join("postgres").exists()),
    )
}

/// The topology study on a PostgreSQL contender with one standby (`version`: the server's).
fn postgres_study(version: Option<&str>) -> String {
    let version = version.map_or(String::new(), |v| format!("version = \"{v}\"\n"));
    let text = STUDY.replace(
        "engine = \"mariadb\"\noptions = { buffer_pool_mb = 64, replicas = [\n    { name = \"serial\" },\n    { name = \"optimistic-2\", parallel_mode = \"optimistic\", parallel_threads = 2 },\n] }",
        &format!("engine = \"postgres\"\n{version}options = {{ shared_buffers_mb = 64, replicas = [{{ name = \"standby\" }}] }}"),
    );
    assert!(
        text.contains("engine = \"postgres\""),
        "the study's contender changed"
    );
    text
}

/// A small topology through every replication step; the PostgreSQL test swaps its contender.
const STUDY: &str = include_str!("studies/replication_topology.toml");

#[test]
fn a_topology_replicates_every_step_and_leaves_nothing_running() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("repl.toml");
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, STUDY, &out);

    // Catch-up: each replica applied exactly what the primary committed during the writes,
    // and its own handler counters saw the rows.
    let c = step(&summary, "topo", "catch-up");
    assert_eq!(c["status"], "ok", "{c:#}");
    let details = read_json(&dir.join("topo/catch-up.json"))["details"].clone();
    let written = details["transactions_written"].as_u64().expect("written");
    assert!(written > 100, "{details:#}");
    let committed = c["rows"].as_u64().expect("rows");
    assert_eq!(committed, written);
    // `fetch = "after"`: stopped, each replica's received position (read from its own
    // status) was the same when the writes ended as when they began
    let during = &details["received_while_writing"];
    assert_eq!(during["stopped"], true, "{during:#}");
    let received = during["replicas"].as_array().expect("replicas");
    assert_eq!(received.len(), 2, "{during:#}");
    for r in received {
        assert_eq!(r["nothing"], true, "{r:#}");
        assert_eq!(r["at_start"], r["at_end"], "{r:#}");
    }
    assert!(
        c["note"]
            .as_str()
            .is_some_and(|n| n.contains("with the replicas stopped (each one's received position")),
        "{c:#}"
    );
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
    // each commit then waits the full 50 ms, so 4 writers make at most about 80/s, and
    // without the wait at least twice that (a commit under 25 ms, fsync included).
    let w = step(&summary, "topo", "commit-wait");
    assert_eq!(w["status"], "ok", "{w:#}");
    let stalled = figure(w, "tps_wait_8_50000").expect("wait 8");
    let free = figure(w, "tps_wait_0_50000").expect("wait 0");
    assert!(stalled < 88.0 && free > 2.0 * stalled, "{w:#}");
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

    // The HTML report draws each replica's seconds: apply rate, lag and CPU per replica.
    let (code, html, stderr) = run(&["report", dir.to_str().expect("utf-8"), "--format", "html"]);
    assert_eq!(code, 0, "{stderr}");
    for caption in [
        "lag: replica apply rate",
        "lag: replica lag",
        "catch-up: replica CPU",
    ] {
        assert!(html.contains(caption), "no chart {caption:?}");
    }
    assert!(html.contains(">optimistic-2<"), "a line per replica, named");

    // The seed's bitmap rows, applied by both replicas together, written with the original's
    // group commit (4 transactions or 10 ms), as the primary itself reported it.
    let b = step(&summary, "topo", "bitmaps");
    assert_eq!(b["status"], "ok", "{b:#}");
    let wait = &read_json(&dir.join("topo/bitmaps.json"))["details"]["commit_wait"];
    assert_eq!(wait["read_back"], serde_json::json!([4, 10000]), "{wait:#}");
    assert!(
        b["note"]
            .as_str()
            .is_some_and(|n| n.contains("waiting for 4 transactions or 10")),
        "{b:#}"
    );

    // Writers in two GTID domains: the primary's position has both, and each replica applied
    // every transaction of both.
    let d = step(&summary, "topo", "domains");
    assert_eq!(d["status"], "ok", "{d:#}");
    let details = read_json(&dir.join("topo/domains.json"))["details"].clone();
    assert_eq!(details["gtid_domains"], 2, "{details:#}");
    let end = details["primary_end"]["text"].as_str().expect("position");
    assert!(
        end.split(',').any(|g| g.trim().starts_with("1-")),
        "domain 1 in {end}"
    );
    let written = details["transactions_written"].as_u64().expect("written");
    for r in details["replicas"].as_array().expect("replicas") {
        assert_eq!(r["transactions"].as_u64(), Some(written), "{r:#}");
    }
    assert!(
        d["note"]
            .as_str()
            .is_some_and(|n| n.contains("in 2 GTID domains")),
        "{d:#}"
    );

    // Reads split from writes go to the replicas: the primary answered none of them.
    let split = step(&summary, "topo", "split");
    assert_eq!(split["status"], "ok", "{split:#}");
    assert!(split["rows"].as_u64().unwrap_or(0) > 50, "{split:#}");
    let counters = &read_json(&dir.join("topo/split.json"))["server_counters"];
    assert_eq!(counters["Com_select"].as_u64(), Some(0), "{counters:#}");
    assert!(
        split["note"]
            .as_str()
            .is_some_and(|n| n.contains("reads split from writes")),
        "{split:#}"
    );

    // The checksums step compares the primary and both replicas once they caught up.
    let sums = step(&summary, "topo", "sums");
    assert_eq!(figure(sums, "copies_equal"), Some(3.0), "{sums:#}");

    // Every member of the topology was stopped and removed.
    let left = processes_mentioning(dir.to_str().expect("utf-8"));
    assert!(left.is_empty(), "left running: {left:?}");
    assert!(!dir.join("work").exists() || dbduel::sandbox::find(&dir).is_empty());
}

/// A topology opened through the library, for what a study cannot do: write on a replica.
fn open_topology(engine: &str, options: &str, dir: &Path) -> Box<dyn dbduel::engine::Engine> {
    let options: toml::Table = toml::from_str(options).expect("options");
    let config =
        EngineConfig::decode(engine, &options, None, &Default::default()).expect("valid options");
    config
        .open(&OpenCtx {
            contender: "faults",
            dir,
            database: "dbduel_faults",
            max_clients: 4,
        })
        .expect("topology starts")
}

/// Open a contender whose primary is `url` (someone else's server, as far as dbduel knows).
fn open_target(
    engine: &str,
    options: &str,
    url: &str,
    password_file: &Path,
    dir: &Path,
) -> Result<Box<dyn dbduel::engine::Engine>, String> {
    let options: toml::Table = toml::from_str(options).expect("options");
    let password_file = password_file.to_path_buf();
    let spec = dbduel::engine::target::TargetSpec {
        url,
        password_env: None,
        password_file: Some(&password_file),
        restart_command: None,
        read_password: true,
    };
    let config = EngineConfig::decode(engine, &options, Some(&spec), &Default::default())
        .map_err(|e| format!("{e:?}"))?;
    std::fs::create_dir_all(dir).expect("dir");
    config
        .open(&OpenCtx {
            contender: "theirs",
            dir,
            database: "dbduel_theirs",
            max_clients: 4,
        })
        .map_err(|e| e.to_string())
}

/// The ports of the primary and of the first member whose role starts with `replica_role`,
/// among the sandboxes under `dir`; each of them (a MariaDB replica, a PostgreSQL standby and
/// their primaries) closed to another local account.
fn ports_by_role(dir: &Path, replica_role: &str) -> (u16, u16) {
    let found = dbduel::sandbox::find(dir);
    for f in &found {
        common::assert_closed_to_strangers(&f.manifest);
    }
    let port = |prefix: &str| {
        found
            .iter()
            .find(|f| {
                f.manifest
                    .role
                    .as_deref()
                    .is_some_and(|r| r.starts_with(prefix))
            })
            .map(|f| f.manifest.port)
            .unwrap_or_else(|| panic!("no {prefix} among {} sandboxes", found.len()))
    };
    (port("primary"), port(replica_role))
}

fn settle(repl: &dyn Replicated) -> Result<bool, StepError> {
    Follower::new(repl, Instant::now()).settle(Duration::from_secs(60), &AtomicBool::new(false))
}

#[test]
fn a_replica_that_differs_or_stops_fails_with_the_table_or_the_servers_words() {
    if !common::have_mariadb() {
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
    let text = postgres_study(None);
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, &text, &out);
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

    // The same servers as someone else's: a primary and a standby given by target are
    // attached as they are, and their replay is not dbduel's to pause.
    let (p, s) = ports_by_role(&root.path().join("lib"), "standby");
    let user = dbduel::engines::postgres::recipe::SUPERUSER;
    let ext = open_target(
        "postgres",
        &format!(
            "replicas = [{{ name = \"theirs\", target = \"postgres://{user}@127.0.0.1:{s}\" }}]"
        ),
        &format!("postgres://{user}@127.0.0.1:{p}/dbduel_faults"),
        // the standby's password is the primary's: its accounts are a copy
        &common::sandbox_secret_file(p),
        &root.path().join("ext"),
    )
    .expect("an external topology opens");
    let theirs = ext.replication().expect("a topology");
    assert!(!theirs.controls_replication());
    assert!(settle(theirs).expect("their standby is applying"));
    verify::checksums_equal(theirs).expect("equal through the targets");
    let facts = theirs.replica_facts(0).expect("facts");
    assert!(
        facts.settings["target"].ends_with(&format!(":{s}/")),
        "{facts:?}"
    );
    ext.finish(false).expect("let go");
    // A standby that is not one: the primary named as its own replica.
    let err = open_target(
        "postgres",
        &format!(
            "replicas = [{{ name = \"self\", target = \"postgres://{user}@127.0.0.1:{p}\" }}]"
        ),
        &format!("postgres://{user}@127.0.0.1:{p}/dbduel_faults"),
        &common::sandbox_secret_file(p),
        &root.path().join("ext2"),
    )
    .err()
    .expect("a primary is not a standby");
    assert!(err.contains("is not a standby"), "{err}");
    // Letting go of someone else's servers stopped nothing.
    primary
        .execute("INSERT INTO t VALUES (3, 'c')")
        .expect("still up");
    assert!(settle(repl).expect("still replicating"));
    drop(primary);
    engine.finish(false).expect("removed");
    assert!(processes_mentioning(root.path().to_str().expect("utf-8")).is_empty());
}

/// The server cache's PostgreSQL 18 has no `pg_basebackup`: its standby is made by dbduel's
/// own base backup, of the same version, and applies all the primary committed.
#[test]
fn a_postgres_18_standby_catches_up_with_equal_checksums() {
    if !common::have_cached("postgres-18.1") {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("repl-pg18.toml");
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, &postgres_study(Some("18")), &out);
    let c = step(&summary, "topo", "catch-up");
    assert_eq!(c["status"], "ok", "{c:#}");
    assert!(
        c["note"]
            .as_str()
            .is_some_and(|n| n.contains("checksums equal on 1 replica(s)")),
        "{c:#}"
    );
    let details = read_json(&dir.join("topo/catch-up.json"))["details"].clone();
    let written = details["transactions_written"].as_u64().expect("written");
    assert!(written > 100, "{details:#}");
    assert_eq!(
        details["replicas"][0]["transactions"].as_u64(),
        Some(written),
        "{details:#}"
    );
    // Both servers are the cache's 18.
    let m = read_json(&dir.join("manifest.json"));
    let topo = &m["contenders"][0];
    assert!(
        topo["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("18.")),
        "{topo:#}"
    );
    assert!(
        topo["effective"]["replica.standby.server"]
            .as_str()
            .is_some_and(|v| v.starts_with("PostgreSQL 18.")),
        "{topo:#}"
    );
    assert!(processes_mentioning(dir.to_str().expect("utf-8")).is_empty());
}

#[test]
fn someone_elses_topology_is_measured_as_it_runs_and_controlled_only_when_told() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = open_topology(
        "mariadb",
        "buffer_pool_mb = 32\nreplicas = [{ name = \"r1\" }]",
        &root.path().join("servers"),
    );
    let repl = engine.replication().expect("a topology");
    let (p, r) = ports_by_role(&root.path().join("servers"), "replica");
    let study = root.path().join("theirs.toml");
    let text = common::fill(
        include_str!("studies/replication_external_topology.toml"),
        &[
            ("primary_port", &p.to_string()),
            ("replica_port", &r.to_string()),
            (
                "primary_secret",
                &common::sandbox_secret_file(p).display().to_string(),
            ),
            (
                "replica_secret",
                &common::sandbox_secret_file(r).display().to_string(),
            ),
        ],
    );
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, &text, &out);
    // Not told: nothing that stops their apply or changes their primary's settings runs.
    for st in ["catch-up", "commit-wait"] {
        let s = step(&summary, "theirs", st);
        assert_eq!(s["status"], "skipped", "{s:#}");
        assert!(
            s["note"]
                .as_str()
                .is_some_and(|n| n.contains("control_replication = true")),
            "{s:#}"
        );
    }
    let lag = step(&summary, "theirs", "lag");
    assert_eq!(lag["status"], "ok", "{lag:#}");
    assert!(figure(lag, "max_lag_s.r1").is_some(), "{lag:#}");
    // Told: the same servers through every step, and equal afterwards.
    for st in ["catch-up", "commit-wait", "lag"] {
        let s = step(&summary, "told", st);
        assert_eq!(s["status"], "ok", "{s:#}");
    }
    let manifest = read_json(&dir.join("manifest.json"));
    let text = manifest.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{r}")),
        "replica target recorded"
    );
    // Their replica still applies, and what it held before is intact.
    let state = repl.replica_state(0).expect("state");
    assert!(state.applying && state.receiving, "{state:?}");
    verify::checksums_equal(repl).expect("the topology is still whole");

    // A "replica" that is not one is refused with what to do.
    let bad = root.path().join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&study)
            .expect("study")
            .replace(&format!("127.0.0.1:{r}\""), &format!("127.0.0.1:{p}\""))
            .replace(
                &common::sandbox_secret_file(r).display().to_string(),
                &common::sandbox_secret_file(p).display().to_string(),
            ),
    )
    .expect("bad study");
    let (code, stdout, stderr) = run(&[
        "run",
        bad.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("is not a replica"),
        "{stdout}\n{stderr}"
    );
    engine.finish(false).expect("removed");
    assert!(processes_mentioning(root.path().to_str().expect("utf-8")).is_empty());
}

/// The primary's group-commit wait now, read on a session of `engine` (the primary).
fn commit_wait_now(engine: &dyn dbduel::engine::Engine) -> (u64, u64) {
    let mut s = engine.connect().expect("a session on the primary");
    let count = s
        .query_i64("SELECT @@GLOBAL.binlog_commit_wait_count")
        .expect("count");
    let usec = s
        .query_i64("SELECT @@GLOBAL.binlog_commit_wait_usec")
        .expect("usec");
    (count as u64, usec as u64)
}

/// `replication_restore.toml` for the topology whose primary and replica listen on `p` and
/// `r`, with one step of `kind` lasting `duration_s`.
fn restore_study(dir: &Path, p: u16, r: u16, kind: &str, duration_s: u64) -> std::path::PathBuf {
    let extra = if kind == "commit-wait" {
        "wait_counts = [5]\nwait_usecs = [50000]"
    } else {
        ""
    };
    let text = common::fill(
        include_str!("studies/replication_restore.toml"),
        &[
            ("primary_port", &p.to_string()),
            ("replica_port", &r.to_string()),
            (
                "primary_secret",
                &common::sandbox_secret_file(p).display().to_string(),
            ),
            (
                "replica_secret",
                &common::sandbox_secret_file(r).display().to_string(),
            ),
            ("step", kind),
            ("duration_s", &duration_s.to_string()),
            ("extra", extra),
        ],
    );
    let path = dir.join(format!("{kind}-{duration_s}.toml"));
    std::fs::write(&path, text).expect("study");
    path
}

/// The originals file of the one run under `out`, once it is there.
fn originals_appear(out: &Path, limit: Duration) -> Option<std::path::PathBuf> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
            let f = e.path().join("replication-originals.json");
            if f.exists() {
                return Some(f);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn a_step_that_fails_after_changing_their_topology_leaves_it_as_it_was() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = open_topology(
        "mariadb",
        "buffer_pool_mb = 32\nreplicas = [{ name = \"r1\" }]",
        &root.path().join("servers"),
    );
    let repl = engine.replication().expect("a topology");
    let (p, r) = ports_by_role(&root.path().join("servers"), "replica");
    // Their own group-commit wait, which no default would give back.
    repl.set_commit_wait(3, 4321).expect("their setting");
    for kind in ["catch-up", "commit-wait"] {
        let study = restore_study(root.path(), p, r, kind, 2);
        let out = root.path().join(format!("out-{kind}"));
        let o = common::bin()
            .args([
                "run",
                study.to_str().expect("utf-8"),
                "--out",
                out.to_str().expect("utf-8"),
            ])
            .env("DBDUEL_TEST_FAIL_AFTER_CHANGE", kind)
            .output()
            .expect("dbduel runs");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{kind}: {stderr}");
        let dir = run_dir(&stderr);
        let summary = read_json(&dir.join("summary.json"));
        let s = step(&summary, "told", kind);
        assert_eq!(s["status"], "failed", "{s:#}");
        // Failed after the change, and everything back: their replica applies, their primary
        // has its own values, and no originals are left to restore.
        let state = repl.replica_state(0).expect("state");
        assert!(state.applying && state.receiving, "{kind}: {state:?}");
        assert_eq!(commit_wait_now(engine.as_ref()), (3, 4321), "{kind}");
        assert!(
            !dir.join("replication-originals.json").exists(),
            "{kind}: originals left although all was put back"
        );
    }
    settle(repl).expect("caught up");
    verify::checksums_equal(repl).expect("the topology is still whole");
    engine.finish(false).expect("removed");
}

#[test]
fn a_run_killed_while_their_topology_is_changed_is_put_back_by_restore() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = open_topology(
        "mariadb",
        "buffer_pool_mb = 32\nreplicas = [{ name = \"r1\" }]",
        &root.path().join("servers"),
    );
    let repl = engine.replication().expect("a topology");
    let (p, r) = ports_by_role(&root.path().join("servers"), "replica");
    repl.set_commit_wait(3, 4321).expect("their setting");
    for kind in ["catch-up", "commit-wait"] {
        let study = restore_study(root.path(), p, r, kind, 120);
        let out = root.path().join(format!("out-{kind}"));
        let mut child = common::bin()
            .args([
                "run",
                study.to_str().expect("utf-8"),
                "--out",
                out.to_str().expect("utf-8"),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("dbduel starts");
        let found = originals_appear(&out, Duration::from_secs(60));
        // The change itself, seen from outside, before the kill.
        let deadline = Instant::now() + Duration::from_secs(20);
        let changed = || match kind {
            "catch-up" => !repl.replica_state(0).expect("state").applying,
            _ => commit_wait_now(engine.as_ref()) == (5, 50000),
        };
        while found.is_some() && !changed() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let was_changed = changed();
        dbduel::sandbox::signal(child.id() as i32, libc::SIGKILL);
        let _ = child.wait();
        let file = found.unwrap_or_else(|| panic!("{kind}: no originals file in the run"));
        assert!(was_changed, "{kind}: the step never changed the topology");
        assert!(
            file.exists(),
            "{kind}: a killed run must leave its originals"
        );
        let dir = file.parent().expect("run dir").to_path_buf();
        // `list` says what is left to restore.
        let (code, stdout, stderr) = run(&["list", "--out", out.to_str().expect("utf-8")]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("dbduel restore"), "{stdout}");

        let (code, stdout, stderr) = run(&["restore", dir.to_str().expect("utf-8")]);
        assert_eq!(code, 0, "{kind}: {stdout}\n{stderr}");
        let state = repl.replica_state(0).expect("state");
        assert!(state.applying && state.receiving, "{kind}: {state:?}");
        assert_eq!(commit_wait_now(engine.as_ref()), (3, 4321), "{kind}");
        assert!(!file.exists(), "{kind}: restored, the file goes");
        // Again: nothing to do, and says so.
        let (code, stdout, _) = run(&["restore", dir.to_str().expect("utf-8")]);
        assert_eq!(code, 0);
        assert!(stdout.contains("nothing to restore"), "{stdout}");
    }
    settle(repl).expect("caught up");
    verify::checksums_equal(repl).expect("the topology is still whole");
    engine.finish(false).expect("removed");
}
