//! The `crash` step on real servers: InnoDB at `flush_log_at_trx_commit = 1` loses no
//! acknowledged transaction over five process crashes; at `= 0` a crash loses some, and
//! what dbduel counts lost is exactly what the table lacks against its ledger (read here by
//! a query of the test's own on the kept server); PostgreSQL with `synchronous_commit = on`
//! loses none; an embedded engine's crash step is skipped with the reason. By power loss
//! (the data directory through dbduel's filesystem that forgets unsynced writes): InnoDB at
//! `= 1` loses nothing over five, at `= 2` it loses, and PostgreSQL with `synchronous_commit
//! = off` loses, each exactly what its table lacks; InnoDB with its binary log synced comes
//! back from each and loses nothing; without a FUSE device the step is refused before anything
//! runs (exit 3). A synchronous PostgreSQL standby promoted lacks nothing acknowledged.

mod common;

use common::{read_json, run, run_dir};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn study(dir: &Path, contender: &str, step: &str) -> PathBuf {
    study_of("crash", dir, contender, step)
}

/// A study of one contender and one step of `kind` (`crash` or `failover`) named `crash`.
fn study_of(kind: &str, dir: &Path, contender: &str, step: &str) -> PathBuf {
    let path = dir.join("durable.toml");
    let text = format!(
        "[study]\nname = \"durable\"\ndescription = \"what a commit setting loses\"\n\n[[contender]]\n{contender}\n\n[[step]]\nname = \"crash\"\nkind = \"{kind}\"\n{step}\n"
    );
    std::fs::write(&path, text).expect("write study");
    path
}

/// Run `study` (with `extra` arguments); the run directory and the step's result.
fn run_crash(
    study: &Path,
    out: &Path,
    contender: &str,
    extra: &[&str],
) -> (PathBuf, serde_json::Value) {
    let mut args = vec![
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let j = read_json(&dir.join(contender).join("crash.json"));
    (dir, j)
}

fn crashes(j: &serde_json::Value) -> &Vec<serde_json::Value> {
    j["details"]["crashes"].as_array().expect("crashes")
}

fn n(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v:#}"))
}

/// The acknowledged ids in a ledger (`crash client seq id` lines).
fn ledger(path: &Path) -> BTreeSet<i64> {
    std::fs::read_to_string(path)
        .expect("ledger")
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().parse().expect("an id"))
        .collect()
}

#[test]
fn innodb_loses_nothing_synced_and_what_it_loses_unsynced_is_what_the_table_lacks() {
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"innodb-1\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, flush_log_at_trx_commit = 1 }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 5",
    );
    let (dir, j) = run_crash(&path, tmp.path(), "innodb-1", &[]);
    let rounds = crashes(&j);
    assert_eq!(rounds.len(), 5, "{j:#}");
    let mut acked = 0;
    for r in rounds {
        assert!(n(r, "acked") > 0, "{r:#}");
        assert_eq!((n(r, "lost"), n(r, "torn")), (0, 0), "{r:#}");
        assert!(r["accepting_s"].as_f64().unwrap() > 0.0, "{r:#}");
        acked += n(r, "acked");
    }
    let book = ledger(&dir.join("innodb-1").join("crash.ledger.tsv"));
    assert_eq!(
        book.len() as u64,
        acked,
        "one ledger line an acknowledged transaction"
    );

    // At 0 the log reaches the OS about once a second: eight clients writing for two
    // seconds leave acknowledged commits only in the server's memory at the kill.
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"innodb-0\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, flush_log_at_trx_commit = 0 }",
        "threads = 8\ncrash_after_s = 2\ncrashes = 2",
    );
    let (dir, j) = run_crash(&path, tmp.path(), "innodb-0", &["--keep"]);
    let present = kept_ids(tmp.path(), mysql_ids);
    assert_lost_is_what_the_table_lacks(&dir, "innodb-0", &j, &present);
}

/// What the step counted lost is what the kept server's table lacks against the ledger, and
/// it is more than nothing; no transaction is torn.
fn assert_lost_is_what_the_table_lacks(
    dir: &Path,
    contender: &str,
    j: &serde_json::Value,
    present: &BTreeSet<i64>,
) {
    let lost: u64 = crashes(j).iter().map(|r| n(r, "lost")).sum();
    let torn: u64 = crashes(j).iter().map(|r| n(r, "torn")).sum();
    let book = ledger(&dir.join(contender).join("crash.ledger.tsv"));
    let missing = book.difference(present).count() as u64;
    assert_eq!(torn, 0, "{j:#}");
    assert!(lost > 0, "{contender} lost nothing: {j:#}");
    assert_eq!(lost, missing, "dbduel's count against the table's own ids");
}

/// The ids in `crash_ledger` on the one server kept under `out` (read by `ids` from its
/// port), which is then taken down.
fn kept_ids(out: &Path, ids: fn(u16) -> BTreeSet<i64>) -> BTreeSet<i64> {
    let found = dbduel::sandbox::find(out);
    let port = found.first().expect("the kept sandbox").manifest.port;
    let present = ids(port);
    let (code, _, stderr) = run(&["sandbox", "down", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    present
}

fn mysql_ids(port: u16) -> BTreeSet<i64> {
    use mysql::prelude::Queryable;
    let mut conn = common::mysql_conn(port, Some("dbduel_durable"));
    conn.query::<i64, _>("SELECT id FROM crash_ledger")
        .expect("the table's ids")
        .into_iter()
        .collect()
}

fn postgres_ids(port: u16) -> BTreeSet<i64> {
    let mut c = postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("dbduel")
        .password(common::sandbox_password(port))
        .dbname("dbduel_durable")
        .connect(postgres::NoTls)
        .expect("connect to the kept sandbox");
    c.query("SELECT id FROM crash_ledger", &[])
        .expect("the table's ids")
        .iter()
        .map(|r| i64::from(r.get::<_, i32>(0)))
        .collect()
}

#[test]
fn innodb_at_1_loses_nothing_to_five_power_losses_and_at_2_loses_what_its_table_lacks() {
    if !common::have_mariadb() || !power_here() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"innodb-1\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, flush_log_at_trx_commit = 1 }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 5\nfault = \"power\"",
    );
    let (_, j) = run_crash(&path, tmp.path(), "innodb-1", &[]);
    assert_eq!(j["summary"]["title"], "power loss under writes", "{j:#}");
    let rounds = crashes(&j);
    assert_eq!(rounds.len(), 5, "{j:#}");
    for r in rounds {
        assert!(n(r, "acked") > 0, "{r:#}");
        assert_eq!((n(r, "lost"), n(r, "torn")), (0, 0), "{r:#}");
        assert!(r["unsynced_lost"].is_object(), "{r:#}");
    }
    // At 2 the log is written at each commit and synced about once a second: what the OS
    // held of the last second is gone with the power.
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"innodb-2\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, flush_log_at_trx_commit = 2 }",
        "threads = 8\ncrash_after_s = 2\ncrashes = 2\nfault = \"power\"",
    );
    let (dir, j) = run_crash(&path, tmp.path(), "innodb-2", &["--keep"]);
    let unsynced: u64 = crashes(&j)
        .iter()
        .map(|r| n(&r["unsynced_lost"], "bytes"))
        .sum();
    assert!(unsynced > 0, "{j:#}");
    let present = kept_ids(tmp.path(), mysql_ids);
    assert_lost_is_what_the_table_lacks(&dir, "innodb-2", &j, &present);
}

#[test]
fn innodb_with_its_binary_log_synced_comes_back_from_power_losses_losing_nothing() {
    if !common::have_mariadb() || !power_here() {
        return;
    }
    // Each start makes a new binary log file: its name must survive the power loss for the
    // server to start again (it does once any file is synced, as on ext4 and XFS).
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"binlog\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, flush_log_at_trx_commit = 1, server = { log_bin = \"binlog\", sync_binlog = 1 } }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 3\nfault = \"power\"",
    );
    let (_, j) = run_crash(&path, tmp.path(), "binlog", &[]);
    let rounds = crashes(&j);
    assert_eq!(rounds.len(), 3, "{j:#}");
    for r in rounds {
        assert_eq!((n(r, "lost"), n(r, "torn")), (0, 0), "{r:#}");
    }
}

#[test]
fn postgres_without_synchronous_commit_loses_to_a_power_loss_what_its_table_lacks() {
    if !common::have_postgres() || !power_here() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"pg-off\"\nengine = \"postgres\"\noptions = { shared_buffers_mb = 64, synchronous_commit = \"off\" }",
        "threads = 8\ncrash_after_s = 2\ncrashes = 2\nfault = \"power\"",
    );
    let (dir, j) = run_crash(&path, tmp.path(), "pg-off", &["--keep"]);
    let present = kept_ids(tmp.path(), postgres_ids);
    assert_lost_is_what_the_table_lacks(&dir, "pg-off", &j, &present);
}

/// Can a power loss be had here (root, /dev/fuse)? Where it cannot, the test skips, unless
/// the servers' tests are required.
fn power_here() -> bool {
    let fuse = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok();
    if fuse && unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var_os("DBDUEL_REQUIRE_SERVERS").is_none(),
        "a power loss needs root and /dev/fuse"
    );
    eprintln!("skipping: a power loss needs root and /dev/fuse");
    false
}

#[test]
fn a_power_loss_without_a_fuse_device_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"innodb\"\nengine = \"mariadb\"",
        "fault = \"power\"",
    );
    let out = tmp.path().join("out");
    let got = common::bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "-q",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("DBDUEL_TEST_FUSE_DEVICE", "/nonexistent/fuse")
        .output()
        .expect("dbduel runs");
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert_eq!(got.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("step crash cuts its servers' power")
            && stderr.contains("/nonexistent/fuse cannot be opened")
            && stderr.contains("drop fault = \"power\""),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran, nothing was written");
}

#[test]
fn postgres_with_synchronous_commit_loses_nothing_acknowledged() {
    if !common::have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"pg\"\nengine = \"postgres\"\noptions = { shared_buffers_mb = 64, synchronous_commit = \"on\" }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 3",
    );
    let (_, j) = run_crash(&path, tmp.path(), "pg", &[]);
    let rounds = crashes(&j);
    assert_eq!(rounds.len(), 3, "{j:#}");
    for r in rounds {
        assert!(n(r, "acked") > 0, "{r:#}");
        assert_eq!((n(r, "lost"), n(r, "torn")), (0, 0), "{r:#}");
        // PostgreSQL says in its log that it recovered.
        let log = r["recovery_log"].as_array().expect("log lines");
        assert!(
            log.iter().any(|l| l.as_str().unwrap().contains("redo")),
            "{r:#}"
        );
    }
}

#[test]
fn an_embedded_engine_is_not_crashed_by_process() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"lite\"\nengine = \"sqlite\"",
        "threads = 2\ncrash_after_s = 1\ncrashes = 1",
    );
    let (code, stdout, stderr) = run(&[
        "run",
        path.to_str().unwrap(),
        "-q",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    let s = common::step(&summary, "lite", "crash");
    assert_eq!(s["status"], "skipped", "{s:#}");
    assert!(
        s["note"]
            .as_str()
            .unwrap()
            .contains("inside dbduel's process"),
        "{s:#}"
    );
}

#[test]
fn sqlite_full_loses_nothing_to_power_losses_and_off_loses_what_its_table_lacks() {
    if !power_here() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"full\"\nengine = \"sqlite\"\noptions = { synchronous = \"full\" }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 3\nfault = \"power\"",
    );
    let (_, j) = run_crash(&path, tmp.path(), "full", &[]);
    let rounds = crashes(&j);
    assert_eq!(rounds.len(), 3, "{j:#}");
    for r in rounds {
        assert!(n(r, "acked") > 0, "{r:#}");
        assert_eq!((n(r, "lost"), n(r, "torn")), (0, 0), "{r:#}");
    }
    // OFF syncs nothing: the WAL's last commits are the OS's alone when the power goes.
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"off\"\nengine = \"sqlite\"\noptions = { synchronous = \"off\" }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 2\nfault = \"power\"",
    );
    let (dir, j) = run_crash(&path, tmp.path(), "off", &["--keep"]);
    let db = rusqlite::Connection::open(dir.join("work").join("off").join("db.sqlite"))
        .expect("the kept database");
    let present: BTreeSet<i64> = db
        .prepare("SELECT id FROM crash_ledger")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .expect("the table's ids");
    assert_lost_is_what_the_table_lacks(&dir, "off", &j, &present);
}

/// A MariaDB primary with one replica (semi-synchronous when `semi`), killed under writes and
/// its replica promoted: the step's result.
fn failover(semi: bool) -> serde_json::Value {
    let (primary, replica) = if semi {
        (
            ", server = { rpl_semi_sync_master_enabled = \"ON\" }",
            ", server = { rpl_semi_sync_slave_enabled = \"ON\" }",
        )
    } else {
        ("", "")
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study_of(
        "failover",
        tmp.path(),
        &format!(
            "name = \"pair\"\nengine = \"mariadb\"\noptions = {{ buffer_pool_mb = 64, flush_log_at_trx_commit = 1{primary}, replicas = [{{ name = \"standby\", flush_log_at_trx_commit = 1{replica} }}] }}"
        ),
        "threads = 4\ncrash_after_s = 2",
    );
    let (_, j) = run_crash(&path, tmp.path(), "pair", &[]);
    let rounds = crashes(&j);
    assert_eq!(rounds.len(), 1, "a failover happens once: {j:#}");
    let r = &rounds[0];
    assert!(n(r, "acked") > 0, "{r:#}");
    assert_eq!(n(r, "torn"), 0, "{r:#}");
    assert_eq!(r["failover"]["promoted_name"], "standby", "{r:#}");
    assert!(r["accepting_s"].as_f64().unwrap() > 0.0, "{r:#}");
    r.clone()
}

#[test]
fn a_semi_synchronous_failover_loses_nothing_acknowledged_and_an_asynchronous_one_says_what_it_lost()
 {
    if !common::have_mariadb() {
        return;
    }
    let semi = failover(true);
    assert_eq!(n(&semi, "lost"), 0, "{semi:#}");
    // An asynchronous replica may or may not have received the last commits: the step counts
    // what the promoted replica lacks, whatever it is.
    let not = failover(false);
    assert!(n(&not, "lost") <= n(&not, "acked"), "{not:#}");
}

/// A PostgreSQL primary with one standby (synchronous when `sync`), killed under writes and
/// its standby promoted: the failover's round, and the primary's synchronous_standby_names.
fn pg_failover(sync: bool) -> (serde_json::Value, String) {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study_of(
        "failover",
        tmp.path(),
        &format!(
            "name = \"pg\"\nengine = \"postgres\"\noptions = {{ shared_buffers_mb = 64, replicas = [{{ name = \"standby\", synchronous = {sync} }}] }}"
        ),
        "threads = 4\ncrash_after_s = 2",
    );
    let (dir, j) = run_crash(&path, tmp.path(), "pg", &[]);
    let manifest = read_json(&dir.join("manifest.json"));
    let names = manifest["contenders"][0]["effective"]["synchronous_standby_names"]
        .as_str()
        .unwrap_or_else(|| panic!("the primary's setting in {manifest:#}"))
        .to_string();
    (crashes(&j)[0].clone(), names)
}

#[test]
fn a_synchronous_postgres_standby_promoted_lacks_nothing_acknowledged() {
    if !common::have_postgres() {
        return;
    }
    let (r, names) = pg_failover(true);
    assert_eq!(names, "FIRST 1 (\"standby\")");
    assert!(n(&r, "acked") > 0, "{r:#}");
    assert_eq!((n(&r, "lost"), n(&r, "torn")), (0, 0), "{r:#}");
}

#[test]
fn a_postgres_standby_is_promoted_and_what_it_lacks_is_counted() {
    if !common::have_postgres() {
        return;
    }
    let (r, names) = &pg_failover(false);
    assert_eq!(names, "", "an asynchronous standby");
    assert!(n(r, "acked") > 0, "{r:#}");
    // An asynchronous standby may lack the last commits; the promoted one took a write.
    assert!(n(r, "lost") <= n(r, "acked") && n(r, "torn") == 0, "{r:#}");
    assert_eq!(
        r["failover"]["commands"][0], "SELECT pg_promote(true, 60)",
        "{r:#}"
    );
    assert!(r["accepting_s"].as_f64().unwrap() > 0.0, "{r:#}");
}

#[test]
fn a_server_that_cannot_come_back_from_a_power_loss_fails_the_step_and_nothing_is_left() {
    if !common::have_mariadb() || !power_here() {
        return;
    }
    // Under POSIX's letter a name is durable only at its directory's sync, and MariaDB does
    // not sync the directory of the binary log it makes at each start: after the power loss
    // InnoDB names a log file that is gone, and the server refuses to start.
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        "name = \"binlog\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, server = { log_bin = \"binlog\", sync_binlog = 1 } }",
        "threads = 4\ncrash_after_s = 1\ncrashes = 2\nfault = \"power-posix\"",
    );
    let out = tmp.path().join("out");
    let (code, _, stderr) = run(&[
        "run",
        path.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "the step failed: {stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let s = common::step(&summary, "binlog", "crash");
    assert_eq!(s["status"], "failed", "{s:#}");
    let note = s["note"].as_str().unwrap();
    assert!(
        note.contains("starting mariadb") && note.contains("binlog"),
        "the failure says what the server said: {note}"
    );
    // Reported, then removed: no server running, no sandbox left, no mount over its data.
    let left = dbduel::sandbox::find(&out);
    assert!(
        left.is_empty(),
        "sandboxes left: {:?}",
        left.iter()
            .map(|f| (&f.path, f.running))
            .collect::<Vec<_>>()
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").expect("mounts");
    let here = out.to_str().unwrap();
    assert!(
        !mounts
            .lines()
            .any(|l| l.contains("dbduel-lazyfs") && l.contains(here)),
        "the power-loss filesystem is still mounted:\n{mounts}"
    );
}

#[test]
fn a_mysql_8_0_replica_is_promoted_and_what_it_lacks_is_counted() {
    if !common::have_cached("mysql-8.0.15") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study_of(
        "failover",
        tmp.path(),
        "name = \"mysql\"\nengine = \"mysql\"\nversion = \"8.0\"\noptions = { buffer_pool_mb = 64, flush_log_at_trx_commit = 1, replicas = [{ name = \"replica\", flush_log_at_trx_commit = 1 }] }",
        "threads = 4\ncrash_after_s = 2",
    );
    let (_, j) = run_crash(&path, tmp.path(), "mysql", &[]);
    let r = &crashes(&j)[0];
    assert!(n(r, "acked") > 0, "{r:#}");
    // An asynchronous replica may lack the last commits; the promoted one took a write.
    assert!(n(r, "lost") <= n(r, "acked") && n(r, "torn") == 0, "{r:#}");
    assert_eq!(r["failover"]["promoted_name"], "replica", "{r:#}");
    assert_eq!(r["failover"]["commands"][0], "STOP SLAVE", "{r:#}");
}

#[test]
fn a_galera_node_lost_under_writes_takes_no_acknowledged_transaction_with_it() {
    let galera = common::have_server(
        "MariaDB with Galera (galera-4, rsync)",
        Path::new(dbduel::engines::mariadb::recipe::GALERA_PROVIDER).exists()
            && common::have_mariadb(),
    );
    if !galera {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study_of(
        "failover",
        tmp.path(),
        "name = \"galera\"\nengine = \"mariadb\"\noptions = { buffer_pool_mb = 64, cluster = { nodes = 3 } }",
        "threads = 6\ncrash_after_s = 2",
    );
    let (_, j) = run_crash(&path, tmp.path(), "galera", &[]);
    let r = &crashes(&j)[0];
    assert!(n(r, "acked") > 0, "{r:#}");
    // Every node commits a write set only once the cluster has it: the survivors lack none,
    // the killed node's clients' included (a third of them wrote there).
    assert_eq!((n(r, "lost"), n(r, "torn")), (0, 0), "{r:#}");
    assert_eq!(r["failover"]["promoted_name"], "node-1", "{r:#}");
    assert!(
        j["summary"]["note"]
            .as_str()
            .unwrap()
            .contains("saw the cluster without it"),
        "{j:#}"
    );
}
