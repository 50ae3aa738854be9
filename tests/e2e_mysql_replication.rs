//! End to end on the seed-003 topology: a MariaDB primary with a MariaDB replica and a MySQL
//! 5.6 replica (from the server cache) side by side, the MySQL one replicating by binary-log
//! file and position. Both catch up on exactly what the primary committed and end with
//! checksums equal to the primary's; a MySQL replica stopped by a conflicting row fails with
//! its own `Last_SQL_Error`; nothing is left running. With DBDUEL_REQUIRE_SERVERS=1 (CI) a
//! missing server fails.

mod common;

use common::{figure, have_cached, processes_mentioning, read_json, step};
use dbduel::engine::OpenCtx;
use dbduel::engine::replication::Replicated;
use dbduel::engines::EngineConfig;
use dbduel::workload::replication::follow::Follower;
use dbduel::workload::replication::verify;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const STUDY: &str = include_str!("studies/replication_seed003.toml");

/// MariaDB from the system and MySQL 5.6 from the server cache.
fn have_servers() -> bool {
    common::have_mariadb() && have_cached("mysql-5.6.24")
}

#[test]
fn the_seed_003_topology_catches_up_with_equal_checksums() {
    if !have_servers() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("seed003.toml");
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, STUDY, &out);

    // Both replicas applied exactly the transactions the primary committed during the
    // writes: the MariaDB one counted by GTID, the MySQL one by its own statement counters,
    // with rows by its own InnoDB counters.
    let c = step(&summary, "topo", "catch-up");
    assert_eq!(c["status"], "ok", "{c:#}");
    let details = read_json(&dir.join("topo/catch-up.json"))["details"].clone();
    let written = details["transactions_written"].as_u64().expect("written");
    assert!(written > 100, "{details:#}");
    let replicas = details["replicas"].as_array().expect("replicas");
    assert_eq!(replicas.len(), 2, "{details:#}");
    for r in replicas {
        let name = r["replica"].as_str().expect("name");
        assert_eq!(r["transactions"].as_u64(), Some(written), "{r:#}");
        let rows = r["rows"].as_u64().expect("its counters") as f64;
        assert!(
            (rows - written as f64).abs() <= written as f64 * 0.02,
            "{name}: {rows} rows by its counters for {written} transactions"
        );
        assert!(figure(c, &format!("apply_tps.{name}")).is_some(), "{c:#}");
    }
    let mysql = &replicas[1];
    assert_eq!(mysql["replica"], "mysql56");
    assert_eq!(
        mysql["settings"]["replication"], "binary-log file and position",
        "{mysql:#}"
    );
    assert_eq!(
        mysql["settings"]["slave_parallel_workers"], "0",
        "{mysql:#}"
    );
    assert_eq!(
        replicas[0]["settings"]["replication"], "MariaDB GTID (slave_pos)",
        "{details:#}"
    );
    assert!(
        c["note"]
            .as_str()
            .is_some_and(|n| n.contains("checksums equal on 2 replica(s)")),
        "{c:#}"
    );

    // The contender's heading names each replica's server.
    let manifest = read_json(&dir.join("manifest.json"));
    let text = manifest.to_string();
    assert!(
        text.contains("\"replica.mysql56.version\":\"5.6.24")
            && text.contains("\"replica.mariadb.version\":\"10."),
        "{manifest:#}"
    );

    // Lag: each replica drained what the writers wrote.
    let l = step(&summary, "topo", "lag");
    assert_eq!(l["status"], "ok", "{l:#}");
    assert!(figure(l, "max_lag_s.mysql56").is_some(), "{l:#}");

    // The primary and both replicas hold the same tables.
    let sums = step(&summary, "topo", "sums");
    assert_eq!(figure(sums, "copies_equal"), Some(3.0), "{sums:#}");

    let left = processes_mentioning(dir.to_str().expect("utf-8"));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_mysql_replica_stopped_by_a_conflicting_row_fails_with_its_last_sql_error() {
    if !have_servers() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let options: toml::Table = toml::from_str(
        "buffer_pool_mb = 32\nreplicas = [{ name = \"mysql56\", engine = \"mysql\", version = \"5.6\", parallel_threads = 2 }]",
    )
    .expect("options");
    let config =
        EngineConfig::decode("mariadb", &options, None, &Default::default()).expect("valid");
    let engine = config
        .open(&OpenCtx {
            contender: "faults",
            dir: root.path(),
            database: "dbduel_faults",
            max_clients: 4,
        })
        .expect("topology starts");
    let repl = engine.replication().expect("a topology");
    let facts = repl.replica_facts(0).expect("facts");
    assert!(facts.version.starts_with("5.6."), "{facts:?}");
    assert_eq!(facts.settings["slave_parallel_workers"], "2", "{facts:?}");

    let mut primary = engine.connect().expect("primary");
    primary
        .execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        .expect("create");
    primary
        .execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        .expect("insert");
    let settle = |r: &dyn Replicated| {
        Follower::new(r, Instant::now()).settle(Duration::from_secs(60), &AtomicBool::new(false))
    };
    assert!(settle(repl).expect("the MySQL replica catches up"));
    verify::checksums_equal(repl).expect("equal checksums");

    // A row written on the MySQL replica first; then the primary writes the same key and
    // the replica's SQL thread stops on the duplicate.
    let mut mine = repl.replica_session(0).expect("replica session");
    mine.execute("INSERT INTO t VALUES (3, 'only here')")
        .expect("write on the replica");
    primary
        .execute("INSERT INTO t VALUES (3, 'primary')")
        .expect("insert on the primary");
    let err = settle(repl).expect_err("the replica stops");
    let msg = err.to_string();
    assert!(
        msg.contains("replica mysql56 stopped replicating at binlog.")
            && msg.contains("Duplicate entry '3' for key 'PRIMARY'"),
        "{msg}"
    );
    drop(mine);
    drop(primary);
    engine.finish(false).expect("removed");
    let left = processes_mentioning(root.path().to_str().expect("utf-8"));
    assert!(left.is_empty(), "left running: {left:?}");
    assert!(dbduel::sandbox::find(root.path()).is_empty());
}

const GTID_STUDY: &str = include_str!("studies/replication_mysql_gtid.toml");

#[test]
fn mysql_primaries_with_serial_and_parallel_replicas_catch_up_by_gtid() {
    if !(have_cached("mysql-5.7.22") && have_cached("mysql-5.6.24")) {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("gtid.toml");
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, GTID_STUDY, &out);
    for contender in ["mysql57", "mysql56"] {
        let c = step(&summary, contender, "catch-up");
        assert_eq!(c["status"], "ok", "{c:#}");
        let details = read_json(&dir.join(format!("{contender}/catch-up.json")))["details"].clone();
        let written = details["transactions_written"].as_u64().expect("written");
        assert!(written > 100, "{details:#}");
        for r in details["replicas"].as_array().expect("replicas") {
            // Counted from the GTID sets each server executed.
            assert_eq!(r["transactions"].as_u64(), Some(written), "{r:#}");
            assert_eq!(
                r["settings"]["replication"], "MySQL GTID (auto-position)",
                "{r:#}"
            );
            assert_eq!(r["settings"]["gtid_mode"], "ON", "{r:#}");
            // 5.6's InnoDB counters count the study's rows alone; 5.7's also its GTID table's,
            // so none are claimed there.
            match contender {
                "mysql56" => {
                    let rows = r["rows"].as_u64().expect("rows") as f64;
                    assert!(
                        (rows - written as f64).abs() <= written as f64 * 0.02,
                        "{r:#}"
                    );
                }
                _ => assert!(r["rows"].is_null(), "{r:#}"),
            }
        }
        let sums = step(&summary, contender, "sums");
        let copies = details["replicas"].as_array().map_or(0, Vec::len) + 1;
        assert_eq!(
            figure(sums, "copies_equal"),
            Some(copies as f64),
            "{sums:#}"
        );
        assert_eq!(step(&summary, contender, "lag")["status"], "ok");
    }
    // 5.7's parallel replica applies by LOGICAL_CLOCK with its workers.
    let details = read_json(&dir.join("mysql57/catch-up.json"))["details"].clone();
    let parallel = &details["replicas"][1];
    assert_eq!(parallel["settings"]["slave_parallel_type"], "LOGICAL_CLOCK");
    assert_eq!(parallel["settings"]["slave_parallel_workers"], "2");
    // Commit wait: 5.7's binlog_group_commit_sync_delay ran; 5.6 has none and says so.
    // A count above the 4 writers never fills a group: each commit waits the full 50 ms.
    let w = step(&summary, "mysql57", "commit-wait");
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
    let w = step(&summary, "mysql56", "commit-wait");
    assert_eq!(w["status"], "skipped", "{w:#}");
    assert!(
        w["note"]
            .as_str()
            .is_some_and(|n| n.contains("no group-commit wait")),
        "{w:#}"
    );
    let left = processes_mentioning(dir.to_str().expect("utf-8"));
    assert!(left.is_empty(), "left running: {left:?}");
}

const EXTERNAL_STUDY: &str = include_str!("studies/mysql_external_topology.toml");

/// The `Auto_Position` and whether both threads run, of the replica on `port`.
fn replication_of(port: u16) -> (u64, bool) {
    use mysql::prelude::Queryable;
    let mut c = common::mysql_conn(port, None);
    let row: mysql::Row = c
        .query_first("SHOW SLAVE STATUS")
        .expect("status")
        .expect("a replica");
    let text = |k: &str| row.get_opt::<String, _>(k).and_then(Result::ok);
    let auto = text("Auto_Position").and_then(|v| v.parse().ok());
    let running = text("Slave_IO_Running").as_deref() == Some("Yes")
        && text("Slave_SQL_Running").as_deref() == Some("Yes");
    (auto.expect("Auto_Position"), running)
}

/// Someone else's MySQL 5.7 topology (here: one dbduel provisioned, given back to it by
/// target), one replica by GTID and one switched to file and position: each attached replica
/// is read by the way it actually replicates, catches up with checksums equal to the
/// primary's when told it may control them, and is left replicating as it was, with its
/// primary's commit wait as it was.
#[test]
fn someone_elses_mysql_topology_attaches_each_replica_as_it_replicates() {
    if !have_cached("mysql-5.7.22") {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let servers = root.path().join("servers");
    let options: toml::Table =
        toml::from_str("buffer_pool_mb = 32\nreplicas = [{ name = \"a\" }, { name = \"b\" }]")
            .expect("options");
    let binary = dbduel::engines::versions::BinaryChoice {
        version: Some("5.7".into()),
        basedir: None,
    };
    let engine = EngineConfig::decode("mysql", &options, None, &binary)
        .expect("valid options")
        .open(&OpenCtx {
            contender: "servers",
            dir: &servers,
            database: "dbduel_servers",
            max_clients: 4,
        })
        .expect("topology starts");
    let repl = engine.replication().expect("a topology");
    Follower::new(repl, Instant::now())
        .settle(Duration::from_secs(60), &AtomicBool::new(false))
        .expect("settles");
    let port = |prefix: &str| -> Vec<u16> {
        let mut ports: Vec<u16> = dbduel::sandbox::find(&servers)
            .iter()
            .filter(|f| {
                f.manifest
                    .role
                    .as_deref()
                    .is_some_and(|r| r.starts_with(prefix))
            })
            .map(|f| f.manifest.port)
            .collect();
        ports.sort_unstable();
        ports
    };
    let (p, replicas) = (port("primary")[0], port("replica"));
    assert_eq!(replicas.len(), 2, "{replicas:?}");
    let (g, f) = (replicas[0], replicas[1]);
    // The second replica replicates by file and position from where it is.
    {
        use mysql::prelude::Queryable;
        let mut primary = common::mysql_conn(p, None);
        let at: (String, u64) = primary
            .query_first("SHOW MASTER STATUS")
            .map(|r: Option<mysql::Row>| {
                let r = r.expect("a binary log");
                (r.get(0).expect("file"), r.get(1).expect("position"))
            })
            .expect("master status");
        let mut c = common::mysql_conn(f, None);
        c.query_drop("STOP SLAVE").expect("stop");
        c.query_drop(format!(
            "CHANGE MASTER TO MASTER_AUTO_POSITION = 0, MASTER_LOG_FILE = '{}', MASTER_LOG_POS = {}",
            at.0, at.1
        ))
        .expect("file and position");
        c.query_drop("START SLAVE").expect("start");
        // Their primary holds every commit group 2 ms (a count of 0 does not turn MySQL's
        // delay off): the commit-wait sweep's settings must not outlive it.
        primary
            .query_drop("SET GLOBAL binlog_group_commit_sync_delay = 2000")
            .expect("their delay");
    }
    let before = [replication_of(g), replication_of(f)];
    assert_eq!(before, [(1, true), (0, true)]);

    let study = root.path().join("theirs.toml");
    let secret = |port: u16| common::sandbox_secret_file(port).display().to_string();
    let text = common::fill(
        EXTERNAL_STUDY,
        &[
            ("primary_port", &p.to_string()),
            ("gtid_port", &g.to_string()),
            ("filepos_port", &f.to_string()),
            ("primary_secret", &secret(p)),
            ("gtid_secret", &secret(g)),
            ("filepos_secret", &secret(f)),
        ],
    );
    let out = root.path().join("out");
    let (dir, summary) = common::run_study_ok(&study, &text, &out);
    // Not told: nothing stops their apply.
    let c = step(&summary, "theirs", "catch-up");
    assert_eq!(c["status"], "skipped", "{c:#}");
    assert!(
        c["note"]
            .as_str()
            .is_some_and(|n| n.contains("control_replication = true")),
        "{c:#}"
    );
    let lag = step(&summary, "theirs", "lag");
    assert_eq!(lag["status"], "ok", "{lag:#}");
    assert!(figure(lag, "max_lag_s.filepos").is_some(), "{lag:#}");
    // Told: each replica catches up, read the way it replicates.
    for st in ["catch-up", "commit-wait", "lag"] {
        assert_eq!(step(&summary, "told", st)["status"], "ok", "{st}");
    }
    let details = read_json(&dir.join("told/catch-up.json"))["details"].clone();
    let written = details["transactions_written"].as_u64().expect("written");
    assert!(written > 10, "{details:#}");
    let ways: Vec<(String, String)> = details["replicas"]
        .as_array()
        .expect("replicas")
        .iter()
        .map(|r| {
            let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (s(&r["replica"]), s(&r["settings"]["replication"]))
        })
        .collect();
    assert_eq!(
        ways,
        [
            ("gtid".into(), "MySQL GTID (auto-position)".into()),
            ("filepos".into(), "binary-log file and position".into())
        ],
        "{details:#}"
    );
    let gtid = &details["replicas"][0];
    assert_eq!(gtid["transactions"].as_u64(), Some(written), "{gtid:#}");
    // Left as it was found: the same ways, both applying, and every copy equal.
    assert_eq!([replication_of(g), replication_of(f)], before);
    let wait: Option<(u64, u64)> = {
        use mysql::prelude::Queryable;
        common::mysql_conn(p, None)
            .query_first("SELECT @@binlog_group_commit_sync_no_delay_count, @@binlog_group_commit_sync_delay")
            .expect("commit wait")
    };
    assert_eq!(wait, Some((0, 2000)), "their primary's commit wait is back");
    Follower::new(repl, Instant::now())
        .settle(Duration::from_secs(60), &AtomicBool::new(false))
        .expect("settles");
    verify::checksums_equal(repl).expect("the topology is still whole");
    engine.finish(false).expect("removed");
    assert!(processes_mentioning(root.path().to_str().expect("utf-8")).is_empty());
}
