//! End to end on real MariaDB sandboxes: lifecycle (start, stop, restart, two at once,
//! left-behind cleanup) and the shootout on every MariaDB contender, checked against what
//! the server itself reports. With DBDUEL_REQUIRE_SERVERS=1 (CI) a missing server fails.

mod common;

use common::{figure, read_json, run, run_dir, step};
use dbduel::engines::mariadb::recipe::MariadbRecipe;
use dbduel::sandbox::{self, Sandbox};
use mysql::prelude::Queryable;
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn sandboxes_start_stop_restart_side_by_side() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut a = Sandbox::create(common::mariadb_recipe("32M"), "a", &root.path().join("a"))
        .expect("create a");
    let mut b = Sandbox::create(common::mariadb_recipe("32M"), "b", &root.path().join("b"))
        .expect("create b");
    a.start().expect("start a");
    b.start().expect("start b");
    assert_ne!(a.layout.port, b.layout.port);
    assert!(
        a.manifest
            .server_version
            .as_deref()
            .unwrap_or("")
            .contains("MariaDB")
    );
    let v: Option<String> = common::mysql_conn(a.layout.port, None)
        .query_first("SELECT @@port")
        .unwrap();
    assert_eq!(v, Some(a.layout.port.to_string()));
    let v: Option<String> = common::mysql_conn(b.layout.port, None)
        .query_first("SELECT @@port")
        .unwrap();
    assert_eq!(v, Some(b.layout.port.to_string()));

    // restart: a new process that answers again
    let pid = a.pid().expect("pid");
    a.restart().expect("restart");
    assert_ne!(a.pid(), Some(pid));
    assert!(!sandbox::alive(pid));
    let _ = common::mysql_conn(a.layout.port, None);

    // stop: the process is gone and the manifest says so
    let pid_b = b.pid().expect("pid");
    b.stop().expect("stop");
    assert!(!sandbox::alive(pid_b));
    let m: serde_json::Value = read_json(&root.path().join("b").join("sandbox.json"));
    assert!(m["pid"].is_null(), "{m:#}");

    // a sandbox left running (as --keep does) is found and removed by its directory alone
    let pid_a = a.pid().expect("pid");
    a.finish(true).expect("keep running");
    assert!(sandbox::alive(pid_a));
    let found = sandbox::find(root.path());
    let left = found
        .iter()
        .find(|f| f.manifest.name == "a")
        .expect("found a");
    assert!(left.running);
    sandbox::remove_found(left).expect("remove");
    assert!(!sandbox::alive(pid_a));
    assert!(!root.path().join("a").exists());
    b.destroy().expect("destroy b");
}

/// A server held to a memory limit and pushed past it: the kernel kills it, MariaDB's own
/// log says nothing, and dbduel says what happened.
#[test]
fn a_server_killed_at_its_memory_limit_is_named_as_such() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut settings = BTreeMap::new();
    settings.insert("innodb_buffer_pool_size".to_string(), "32M".to_string());
    settings.insert("max_allowed_packet".to_string(), "1G".to_string());
    let recipe = Box::new(MariadbRecipe {
        settings,
        rocksdb: false,
        memory_limit_mb: Some(200),
        device_profile: None,
        data_dir: None,
        galera: None,
        server_dir: None,
        secret: None,
        tls: None,
    });
    let mut sb = match Sandbox::create(recipe, "tight", &root.path().join("tight")) {
        Ok(sb) => sb,
        // no memory cgroup to be had here (no controller, or not allowed to make one)
        Err(e) if e.to_string().contains("cgroup") => {
            eprintln!("skipping: {e}");
            return;
        }
        Err(e) => panic!("create: {e}"),
    };
    sb.start().expect("start under the limit");
    assert_eq!(sb.exited(), None);
    // one value of 400 MB, built and sent whole: twice the limit
    let r: mysql::Result<Option<u64>> = common::mysql_conn(sb.layout.port, None)
        .query_first("SELECT LENGTH(REPEAT('x', 400000000))");
    assert!(r.is_err(), "the server answered: {r:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let how = loop {
        if let Some(how) = sb.exited() {
            break how;
        }
        assert!(std::time::Instant::now() < deadline, "the server lives on");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        how.contains("killed by the kernel's OOM killer at its memory limit of 200 MiB"),
        "{how}"
    );
    sb.destroy().expect("destroy");
}

#[test]
fn a_server_that_cannot_start_says_why() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    // A setting the server rejects: provisioning fails with the server's own words.
    let mut settings = BTreeMap::new();
    settings.insert(
        "innodb_buffer_pool_size".to_string(),
        "not-a-size".to_string(),
    );
    let err = Sandbox::create(
        Box::new(MariadbRecipe {
            settings,
            rocksdb: false,
            memory_limit_mb: None,
            device_profile: None,
            data_dir: None,
            galera: None,
            server_dir: None,
            secret: None,
            tls: None,
        }),
        "bad",
        &root.path().join("bad"),
    )
    .err()
    .expect("must not provision")
    .to_string();
    assert!(
        err.contains("[ERROR]") && err.contains("not-a-size"),
        "{err}"
    );
    // A server that provisions but then cannot start: its log's tail is in the error.
    let mut s = Sandbox::create(
        common::mariadb_recipe("32M"),
        "late",
        &root.path().join("late"),
    )
    .expect("create");
    let cnf = s.layout.config_file.clone();
    let text = std::fs::read_to_string(&cnf).unwrap() + "no_such_variable_at_all = 1\n";
    std::fs::write(&cnf, text).unwrap();
    let err = s.start().expect_err("must not start").to_string();
    assert!(
        err.contains("log ends") && err.contains("no_such_variable_at_all"),
        "{err}"
    );
    assert!(s.pid().is_none());
    // its private directory goes with it
    s.destroy().expect("destroy");
}

#[test]
fn shootout_on_every_mariadb_contender_agrees_with_the_server() {
    if !common::have_mariadb() {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let out_s = out.path().to_str().unwrap();
    let contenders = ["innodb", "myrocks", "myrocks-zstd", "aria"];
    let mut args = vec!["run", "shootout", "--out", out_s, "--keep", "-q"];
    for c in contenders {
        args.extend(["--contender", c]);
    }
    args.extend([
        "--set",
        "dataset.rows=20000",
        "--set",
        "step.range-queries.clients=20",
        "--set",
        "step.range-queries.per_client=10",
        "--set",
        "step.slap-count.clients=50",
        "--set",
        "step.slap-content.clients=50",
    ]);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    // the original's findings on InnoDB against TokuDB (MyRocks here), each given a verdict
    // from this run's figures; only the update's waits for the original's table
    assert_eq!(common::assert_findings_judged(&dir), 9);
    for c in contenders {
        common::assert_shootout_ok(&summary, c);
        assert_eq!(step(&summary, c, "load")["rows"], 20000);
        assert_eq!(step(&summary, c, "update")["rows"], 11100);
        // fresh rows: every matched row changed, as the server's info string says
        assert_eq!(
            figure(step(&summary, c, "update"), "rows_changed"),
            Some(11100.0)
        );
        assert_eq!(
            read_json(&dir.join(c).join("load.json"))["details"]["warnings"]["count"],
            0
        );
        assert_eq!(step(&summary, c, "count-cold")["rows"], 20000);

        // The kept sandbox still runs; ask the server itself.
        let sb = read_json(
            &dir.join("work")
                .join(c)
                .join("sandbox")
                .join("sandbox.json"),
        );
        let port = sb["port"].as_u64().unwrap() as u16;
        let mut db = common::mysql_conn(port, Some("dbduel_shootout"));
        let n: Option<i64> = db.query_first("SELECT COUNT(*) FROM user_logs").unwrap();
        assert_eq!(n, Some(20000));
        let changed: Option<i64> = db
            .query_first("SELECT COUNT(*) FROM user_logs WHERE content = 'ddddddddddddddddddddsssssss' AND id > 8900 AND id < 90000")
            .unwrap();
        assert_eq!(changed, Some(11100));
        let engine: Option<String> = db
            .query_first("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'dbduel_shootout' AND TABLE_NAME = 'user_logs'")
            .unwrap();
        let want = match c {
            "innodb" => "InnoDB",
            "aria" => "Aria",
            _ => "ROCKSDB",
        };
        assert_eq!(engine.as_deref(), Some(want));

        // bytes on disk are really on disk, and agree with what the server reports
        let fp = read_json(&dir.join(c).join("footprint.json"));
        let files = fp["details"]["files_bytes"].as_u64().unwrap();
        let engine_bytes = fp["details"]["engine_bytes"].as_u64().unwrap();
        let listed: u64 = fp["details"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(files, listed);
        assert!(files > 0 && engine_bytes > 0, "{c}: {fp:#}");
        let ratio = files as f64 / engine_bytes as f64;
        assert!(
            (0.8..2.0).contains(&ratio),
            "{c}: files {files} vs server {engine_bytes}"
        );

        // what dbduel counted is what the server executed
        let rq = read_json(&dir.join(c).join("range-queries.json"));
        let ours = rq["details"]["ops"].as_u64().unwrap();
        let server = rq["server_counters"]["Com_select"].as_u64().unwrap();
        assert_eq!(ours, 200);
        assert!(
            (server as f64 - ours as f64).abs() <= ours as f64 * 0.02,
            "{c}: dbduel {ours}, Com_select {server}"
        );
        // mysqlslap's shape: a connection and one query per client, both as the server
        // counted them (plus the connection reading its counters after the step)
        for s in ["slap-count", "slap-content"] {
            let j = read_json(&dir.join(c).join(format!("{s}.json")));
            assert_eq!(j["details"]["connect"]["connected"], 50, "{c}/{s}");
            assert_eq!(j["server_counters"]["Connections"], 51, "{c}/{s}");
            assert_eq!(j["server_counters"]["Com_select"], 50, "{c}/{s}");
        }
    }
    // compression shows: MyRocks is smaller than InnoDB, ZSTD smaller than Snappy
    let bytes = |c: &str| step(&summary, c, "footprint")["bytes"].as_u64().unwrap();
    assert!(bytes("myrocks") < bytes("innodb") && bytes("myrocks-zstd") < bytes("myrocks"));
    // the DDL steps say which algorithm the server used
    let alg = |c: &str, s: &str| {
        read_json(&dir.join(c).join(format!("{s}.json")))["details"]["algorithm"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(alg("innodb", "add-column"), "INSTANT");
    assert_eq!(alg("myrocks", "add-column"), "COPY");

    // kept sandboxes are listed, then removed, and no server is left
    let (code, status, _) = run(&["sandbox", "status", "--out", out_s]);
    assert_eq!(code, 0);
    assert_eq!(
        status.matches("running, left behind").count(),
        4,
        "{status}"
    );
    let (code, down, stderr) = run(&["sandbox", "down", "--out", out_s]);
    assert_eq!(code, 0, "{down}\n{stderr}");
    assert!(sandbox::find(out.path()).is_empty());
}

#[test]
fn no_server_is_left_after_a_run() {
    if !common::have_mariadb() {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let (code, _, stderr) = run(&[
        "run",
        "shootout",
        "--contender",
        "innodb",
        "--contender",
        "myrocks",
        "-q",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "dataset.rows=3000",
        "--set",
        "step.range-queries.clients=5",
        "--set",
        "step.slap-count.clients=5",
        "--set",
        "step.slap-content.clients=5",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let dir = run_dir(&stderr);
    assert!(!dir.join("work").exists());
    let leftover = common::processes_mentioning(out.path().to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// The shoot-out's forced-copy column changes run as a rebuild: the server rebuilt the
/// table by copy (`ALGORITHM=COPY`, dbduel's stand-in for the original's in-place rebuild), beside today's instant change of the same column.
#[test]
fn a_forced_copy_column_change_records_copy() {
    if !common::have_mariadb() {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let (code, _, stderr) = run(&[
        "run",
        "shootout",
        "--contender",
        "innodb",
        "-q",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "dataset.rows=2000",
        "--set",
        "step.range-queries.clients=5",
        "--set",
        "step.slap-count.clients=5",
        "--set",
        "step.slap-content.clients=5",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let dir = run_dir(&stderr);
    let details =
        |s: &str| read_json(&dir.join("innodb").join(format!("{s}.json")))["details"].clone();
    assert_eq!(details("add-column")["algorithm"], "INSTANT");
    assert_eq!(details("add-column")["algorithm_forced"], false);
    for s in ["add-column-copy", "drop-column-copy"] {
        let d = details(s);
        assert_eq!(d["algorithm"], "COPY", "{s}: {d:#}");
        assert_eq!(d["algorithm_forced"], true, "{s}: {d:#}");
        assert!(
            d["ran"].as_str().unwrap().ends_with("ALGORITHM=COPY"),
            "{s}: {d:#}"
        );
        assert_eq!(
            d["algorithms_refused"].as_array().map(Vec::len),
            Some(0),
            "{s}"
        );
    }
}

/// The shoot-out's lzma contender asks the original's 20:1 question with TokuDB's algorithm:
/// the server itself says its tables are page-compressed with lzma.
#[test]
fn the_lzma_contender_page_compresses_with_lzma() {
    if !common::have_mariadb() {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let out_s = out.path().to_str().unwrap();
    let (code, _, stderr) = run(&[
        "run",
        "shootout",
        "--contender",
        "innodb-lzma",
        "-q",
        "--keep",
        "--out",
        out_s,
        "--set",
        "dataset.rows=2000",
        "--set",
        "step.range-queries.clients=5",
        "--set",
        "step.slap-count.clients=5",
        "--set",
        "step.slap-content.clients=5",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let dir = run_dir(&stderr);
    // the manifest holds what the server said its settings were
    let manifest = read_json(&dir.join("manifest.json"));
    let eff = &manifest["contenders"][0]["effective"];
    assert_eq!(eff["innodb_compression_algorithm"], "lzma", "{eff:#}");
    // the bytes on disk are the blocks the page-compressed file holds
    let fp = read_json(&dir.join("innodb-lzma/footprint.json"))["details"].clone();
    assert_eq!(fp["files_bytes"], fp["allocated_bytes"], "{fp:#}");
    assert!(fp["files_bytes"].as_u64().unwrap() > 0, "{fp:#}");
    let sb = read_json(&dir.join("work/innodb-lzma/sandbox/sandbox.json"));
    let port = sb["port"].as_u64().unwrap() as u16;
    let mut db = common::mysql_conn(port, Some("dbduel_shootout"));
    let algorithm: Option<String> = db
        .query_first("SELECT @@GLOBAL.innodb_compression_algorithm")
        .unwrap();
    let default: Option<i64> = db
        .query_first("SELECT @@GLOBAL.innodb_compression_default")
        .unwrap();
    let provider: Option<String> = db
        .query_first("SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'provider_lzma'")
        .unwrap();
    let flags: Option<i64> = db
        .query_first("SELECT FLAG FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = 'dbduel_shootout/user_logs'")
        .unwrap();
    drop(db);
    let (code, _, stderr) = run(&["sandbox", "down", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(algorithm.as_deref(), Some("lzma"));
    assert_eq!(default, Some(1));
    assert_eq!(provider.as_deref(), Some("ACTIVE"));
    // The table's own tablespace says how its pages are compressed: in the full_crc32
    // format (bit 4) bits 5-7 hold the algorithm, 4 being lzma (1 zlib, 5 bzip2).
    let f = flags.expect("the table's tablespace");
    assert!(f & (1 << 4) != 0, "not a full_crc32 tablespace: {f:#x}");
    assert_eq!((f >> 5) & 7, 4, "tablespace flags {f:#x}");
}

/// A study of a few steps against an external MariaDB target.
fn target_study(dir: &Path, target_line: &str, engine_line: &str) -> std::path::PathBuf {
    let p = dir.join("target.toml");
    let text = common::fill(
        include_str!("studies/mariadb_external_target.toml"),
        &[("target_line", target_line), ("engine_line", engine_line)],
    );
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn external_targets_are_used_but_never_harmed() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    // Someone else's server, with a password user and a database of their own.
    let mut theirs = Sandbox::create(
        common::mariadb_recipe("32M"),
        "theirs",
        &root.path().join("theirs"),
    )
    .expect("create");
    theirs.start().expect("start");
    let port = theirs.layout.port;
    let mut admin = common::mysql_conn(port, None);
    admin
        .query_drop("CREATE USER bench@'127.0.0.1' IDENTIFIED BY 's3cret-pw'")
        .unwrap();
    admin
        .query_drop("GRANT ALL ON *.* TO bench@'127.0.0.1'")
        .unwrap();
    admin.query_drop("CREATE DATABASE precious").unwrap();
    admin
        .query_drop("CREATE TABLE precious.user_logs (id INT PRIMARY KEY)")
        .unwrap();
    admin
        .query_drop("INSERT INTO precious.user_logs VALUES (1), (2), (3)")
        .unwrap();
    let out = root.path().join("out");
    let out_s = out.to_str().unwrap();

    // A run with the password from the environment: every step but the cold count (which
    // needs a restart the contender cannot do) runs; the password is nowhere in the results.
    let study = target_study(
        root.path(),
        &format!("target = \"mysql://bench@127.0.0.1:{port}\"\npassword_env = \"DBDUEL_TEST_PW\""),
        "storage_engine = \"innodb\"",
    );
    // `bench` may do anything anywhere (`ALL ON *.*`), and the study sends SQL of its own (its
    // queries step): refused before anything runs, with the account that would suffice.
    let o = common::bin()
        .args(["run", study.to_str().unwrap(), "-q", "--out", out_s])
        .env("DBDUEL_TEST_PW", "s3cret-pw")
        .output()
        .expect("runs");
    let (code, stderr) = (o.status.code(), String::from_utf8_lossy(&o.stderr));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("GRANT ALL PRIVILEGES ON *.* TO `bench`@`127.0.0.1`")
            && stderr.contains("GRANT ALL PRIVILEGES ON `dbduel\\_ext`.* TO 'dbduel'@'%'")
            && stderr.contains("steps queries")
            && stderr.contains("wide_account = true"),
        "{stderr}"
    );
    assert!(!out.join("ext").exists() && std::fs::read_dir(&out).map_or(0, |d| d.count()) == 0);
    // The account it prints runs the study.
    for sql in [
        "CREATE USER 'dbduel'@'%' IDENTIFIED BY 'narrow-pw'",
        "GRANT ALL PRIVILEGES ON `dbduel\\_ext`.* TO 'dbduel'@'%'",
    ] {
        admin.query_drop(sql).unwrap();
    }
    let narrow = target_study(
        root.path(),
        &format!("target = \"mysql://dbduel@127.0.0.1:{port}\"\npassword_env = \"DBDUEL_TEST_PW\""),
        "storage_engine = \"innodb\"",
    );
    let o = common::bin()
        .args(["run", narrow.to_str().unwrap(), "-q", "--out", out_s])
        .env("DBDUEL_TEST_PW", "narrow-pw")
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    admin.query_drop("DROP DATABASE dbduel_ext").unwrap();
    let study = target_study(
        root.path(),
        &format!("target = \"mysql://bench@127.0.0.1:{port}\"\npassword_env = \"DBDUEL_TEST_PW\""),
        "storage_engine = \"innodb\"",
    );
    let run_it = || {
        common::bin()
            .args(["run", study.to_str().unwrap(), "-q", "--out", out_s])
            .arg("--allow-wide-account")
            .env("DBDUEL_TEST_PW", "s3cret-pw")
            .output()
            .expect("runs")
    };
    let o = run_it();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stderr}\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(step(&summary, "theirs", "load")["rows"], 2000);
    assert_eq!(step(&summary, "theirs", "queries")["status"], "ok");
    let cold = step(&summary, "theirs", "count-cold");
    assert_eq!(cold["status"], "skipped");
    assert!(
        cold["note"].as_str().unwrap().contains("restart_command"),
        "{cold:#}"
    );
    for f in dbduel::oscache::files_under(&dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_string();
        assert!(
            !text.contains("s3cret-pw"),
            "password leaked into {}",
            f.display()
        );
    }
    // dbduel made its own, marked database; a second run reuses it
    let marked: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM dbduel_ext.dbduel_marker")
        .unwrap();
    assert_eq!(marked, Some(1));
    let o = run_it();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );

    // A user on MariaDB's ed25519: benchmark sessions on the lean client, its administration
    // on the `mysql` crate, and the run succeeds. The account says it may be wide.
    admin.query_drop("INSTALL SONAME 'auth_ed25519'").unwrap();
    admin
        .query_drop("CREATE USER ed@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('ed-pw')")
        .unwrap();
    admin
        .query_drop("GRANT ALL ON *.* TO ed@'127.0.0.1'")
        .unwrap();
    let study = target_study(
        root.path(),
        &format!(
            "target = \"mysql://ed@127.0.0.1:{port}/dbduel_ext\"\npassword_env = \"DBDUEL_TEST_PW\"\nwide_account = true"
        ),
        "storage_engine = \"innodb\"",
    );
    let o = common::bin()
        .args(["run", study.to_str().unwrap(), "-q", "--out", out_s])
        .env("DBDUEL_TEST_PW", "ed-pw")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    assert_eq!(step(&summary, "theirs", "queries")["status"], "ok");
    // 400 more ed25519 connections (4 runs of 100, within the server's max_connections):
    // the `mysql` crate mis-signs 1 nonce in 256 (it drops a trailing zero byte), so without
    // dbduel's further handshakes about 4 times in 5 one of these would be refused.
    for _ in 0..4 {
        let o = common::bin()
            .args(["run", study.to_str().unwrap(), "-q", "--out", out_s])
            .args(["--set", "step.queries.clients=100"])
            .args(["--set", "step.queries.per_client=1"])
            .env("DBDUEL_TEST_PW", "ed-pw")
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(0), "{stderr}");
    }

    // A database dbduel did not create is refused and left exactly as it was.
    let study = target_study(
        root.path(),
        &format!(
            "target = \"{}\"",
            common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}/precious"), port)
        ),
        "storage_engine = \"innodb\"",
    );
    let (code, _, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        out_s,
        "--allow-wide-account",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("was not created by dbduel"), "{stderr}");
    let n: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM precious.user_logs")
        .unwrap();
    assert_eq!(n, Some(3));

    // A storage engine the server lacks stops the run before anything runs (exit 3).
    let study = target_study(
        root.path(),
        &format!(
            "target = \"{}\"",
            common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}"), port)
        ),
        "storage_engine = \"rocksdb\"",
    );
    let (code, _, stderr) = run(&["run", study.to_str().unwrap(), "-q", "--out", out_s]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no ROCKSDB storage engine"), "{stderr}");

    // A password in the target itself is refused (exit 2), and so are sandbox-only options.
    let study = target_study(
        root.path(),
        "target = \"mysql://bench:s3cret-pw@127.0.0.1:3306\"",
        "storage_engine = \"innodb\"",
    );
    let (code, _, stderr) = run(&["run", study.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("password_env") && !stderr.contains("s3cret-pw"),
        "{stderr}"
    );
    let study = target_study(
        root.path(),
        &format!("target = \"mysql://root@127.0.0.1:{port}\""),
        "buffer_pool_mb = 64",
    );
    let (code, _, stderr) = run(&["run", study.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("buffer_pool_mb configures a private server"),
        "{stderr}"
    );
    theirs.destroy().expect("destroy");
}

/// A target for the lean wire client on a sandbox.
fn wire_target(port: u16, user: &str, password: Option<&str>) -> dbduel::engine::target::Target {
    dbduel::engine::target::Target {
        scheme: "mysql".into(),
        user: user.into(),
        host: "127.0.0.1".into(),
        port,
        database: None,
        password: password.map(dbduel::engine::target::Secret::new),
        restart_command: None,
        allow_cleartext: false,
        tls: Default::default(),
    }
}

#[test]
fn the_wire_client_speaks_every_result_shape() {
    use dbduel::engine::{Session, Value};
    use dbduel::engines::wire::mysql::{ConnectError, WireSession};
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut sb = Sandbox::create(
        common::mariadb_recipe("32M"),
        "wire",
        &root.path().join("wire"),
    )
    .expect("create");
    sb.start().expect("start");
    let port = sb.layout.port;
    let mut admin = common::mysql_conn(port, None);
    admin.query_drop("CREATE DATABASE w").unwrap();
    let connect =
        |user: &str, pw: Option<&str>| WireSession::connect(&wire_target(port, user, pw), "w", 30);
    let secret = sb.secret().expect("the sandbox's secret");
    let Ok(mut s) = connect("root", Some(secret.expose())) else {
        panic!("root connects")
    };
    assert!(
        s.caches_metadata(),
        "MariaDB 10.6+ skips unchanged metadata"
    );

    // Text protocol: DDL, one integer. Several statements in one string are refused by the
    // server (multi-statements off), and neither of them ran.
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), big BIGINT)")
        .unwrap();
    let two = s
        .execute("INSERT INTO t VALUES (1,'a',1); DROP TABLE t")
        .unwrap_err();
    assert_eq!(two.kind, "sql", "{}", two.message);
    assert_eq!(
        s.query_i64("SELECT COUNT(*) FROM t").unwrap(),
        0,
        "nothing ran"
    );
    assert_eq!(s.execute("INSERT INTO t VALUES (1,'a',1)").unwrap(), 1);
    assert_eq!(
        s.execute("INSERT INTO t VALUES (2,'b',2),(5,'e',5)")
            .unwrap(),
        2
    );
    assert_eq!(s.query_i64("SELECT COUNT(*) FROM t").unwrap(), 3);
    assert_eq!(s.query_i64("SELECT SUM(big) FROM t").unwrap(), 8);
    assert_eq!(s.query_i64("SELECT NULL").unwrap(), 0);

    // Prepared: parameter types change from a 64-bit to a 32-bit integer between executions.
    let ins = s
        .prepare("INSERT INTO t (id, v, big) VALUES (?, ?, ?)")
        .unwrap();
    let row = |id, v: &str, big| [Value::Int(id), Value::Text(v.into()), Value::Int(big)];
    assert_eq!(s.run(ins, &row(3, "c", 1 << 40)).unwrap(), 1);
    assert_eq!(s.run(ins, &row(4, "dé", 7)).unwrap(), 1);
    let got: Vec<(i64, String, i64)> = admin
        .query("SELECT id, v, big FROM w.t WHERE id IN (3, 4) ORDER BY id")
        .unwrap();
    assert_eq!(got, vec![(3, "c".into(), 1 << 40), (4, "dé".into(), 7)]);

    // Rows counted, the same again with the metadata cached, and after the table changed
    // shape (the server sends the new column definitions).
    let sel = s
        .prepare("SELECT * FROM t WHERE id BETWEEN ? AND ?")
        .unwrap();
    for _ in 0..3 {
        assert_eq!(s.run(sel, &[Value::Int(2), Value::Int(4)]).unwrap(), 3);
    }
    s.execute("ALTER TABLE t ADD COLUMN z INT").unwrap();
    assert_eq!(s.run(sel, &[Value::Int(1), Value::Int(5)]).unwrap(), 5);
    assert_eq!(s.run(sel, &[Value::Int(6), Value::Int(9)]).unwrap(), 0);

    // Errors keep their kind, and the session goes on working after them.
    let dup = s.run(ins, &row(1, "x", 0)).unwrap_err();
    assert_eq!(dup.kind, "constraint", "{}", dup.message);
    assert!(dup.message.contains("1062"), "{}", dup.message);
    assert_eq!(s.execute("SELEC 1").unwrap_err().kind, "sql");
    assert_eq!(s.run(ins, &[Value::Int(1)]).unwrap_err().kind, "usage");
    assert_eq!(s.query_i64("SELECT COUNT(*) FROM t").unwrap(), 5);

    // Results over the receive buffer, and a row and a statement over one 16 MiB packet.
    assert_eq!(s.execute("SELECT REPEAT('x', 100000)").unwrap(), 1);
    let big = 17 << 20;
    assert_eq!(
        s.query_i64(&format!("SELECT LENGTH(REPEAT('y', {big}))"))
            .unwrap(),
        big
    );
    assert_eq!(s.execute(&format!("SELECT REPEAT('y', {big})")).unwrap(), 1);
    let long_sql = format!("SELECT LENGTH('{}')", "z".repeat(big as usize));
    assert_eq!(s.query_i64(&long_sql).unwrap(), big);
    drop(s);

    // Passwords: right, wrong; a method the wire client does not speak says so.
    admin
        .query_drop("CREATE USER pw@'127.0.0.1' IDENTIFIED BY 'pw1'")
        .unwrap();
    admin
        .query_drop("GRANT ALL ON w.* TO pw@'127.0.0.1'")
        .unwrap();
    let Ok(mut s) = connect("pw", Some("pw1")) else {
        panic!("password user connects")
    };
    assert_eq!(s.query_i64("SELECT COUNT(*) FROM t").unwrap(), 5);
    match connect("pw", Some("wrong")) {
        Err(ConnectError::Failed(e)) => assert!(e.message.contains("1045"), "{}", e.message),
        _ => panic!("a wrong password must fail"),
    }
    admin.query_drop("INSTALL SONAME 'auth_ed25519'").unwrap();
    admin
        .query_drop("CREATE USER ed@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('edpw')")
        .unwrap();
    admin
        .query_drop("GRANT ALL ON w.* TO ed@'127.0.0.1'")
        .unwrap();
    // MariaDB's ed25519 is spoken: the account logs in, and a wrong password is refused.
    let Ok(mut s) = connect("ed", Some("edpw")) else {
        panic!("an ed25519 account connects on the lean client")
    };
    assert_eq!(s.query_i64("SELECT COUNT(*) FROM t").unwrap(), 5);
    match connect("ed", Some("wrong")) {
        Err(ConnectError::Failed(e)) => assert!(e.message.contains("1045"), "{}", e.message),
        _ => panic!("a wrong ed25519 password must fail"),
    }
    // A method it does not speak is named with the account (wire/mysql.rs's unit test:
    // no server here asks for one it lacks).
    sb.destroy().expect("destroy");
}

/// A table whose `v` column holds 3 characters: longer values are truncated.
static NARROW: [dbduel::dataset::Column; 2] = [
    dbduel::dataset::Column {
        name: "id",
        ty: dbduel::dataset::ColumnType::Integer,
        primary_key: true,
        nullable: false,
        auto_increment: false,
    },
    dbduel::dataset::Column {
        name: "v",
        ty: dbduel::dataset::ColumnType::Char(3),
        primary_key: false,
        nullable: false,
        auto_increment: false,
    },
];

/// `rows` lines of `id\tvalue`, with ids from `ids`.
fn tsv(path: &Path, ids: impl Iterator<Item = u64>, value: &str) {
    use std::fmt::Write;
    let mut text = String::new();
    for id in ids {
        writeln!(text, "{id}\t{value}").unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// The same LOAD DATA LOCAL as dbduel's, on the test's own connection: what the server says.
fn servers_own_load(port: u16, db: &str, table: &str, file: &Path) -> mysql::Conn {
    let allowed = file.to_path_buf();
    let handler = mysql::LocalInfileHandler::new(move |_, out: &mut mysql::LocalInfile<'_>| {
        std::io::copy(&mut std::fs::File::open(&allowed)?, out)?;
        Ok(())
    });
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(common::sandbox_password(port)))
        .prefer_socket(false)
        .db_name(Some(db))
        .local_infile_handler(Some(handler));
    let mut c = mysql::Conn::new(opts).expect("connect");
    c.query_drop(format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE {table} FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n'",
        file.display()
    ))
    .expect("load");
    c
}

/// A MariaDB engine with default options on a sandbox of its own under `root`, its database
/// `dbduel_<name>`.
fn sandboxed_engine(root: &Path, name: &str) -> Box<dyn dbduel::engine::Engine> {
    use dbduel::engine::OpenCtx;
    use dbduel::engines::EngineConfig;
    let config = EngineConfig::decode("mariadb", &toml::Table::new(), None, &Default::default())
        .expect("options");
    config
        .open(&OpenCtx {
            contender: name,
            dir: &root.join(name),
            database: &format!("dbduel_{name}"),
            max_clients: 4,
        })
        .expect("sandbox")
}

#[test]
fn load_warnings_are_the_servers_own() {
    use dbduel::dataset::TableDef;
    use dbduel::engine::LoadRequest;
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = sandboxed_engine(root.path(), "warn");
    let dialect = engine.dialect();
    let table = |name: &str| TableDef {
        name: name.into(),
        columns: &NARROW,
        unique: Vec::new(),
        indexes: Vec::new(),
        rows: 0,
        foreign_keys: Vec::new(),
    };
    let load = |t: &TableDef, file: &Path| {
        let mut s = engine.connect().expect("connect");
        s.execute(&dialect.drop_table_if_exists(&t.name)).unwrap();
        s.execute(&dialect.create_table(t)).unwrap();
        engine
            .bulk_load(&LoadRequest {
                table: t,
                file,
                batch_rows: 1000,
            })
            .expect("load")
    };

    // Every value truncated, more warnings than the OK packet's 16 bits can say — as in the
    // shoot-out's original study ("65535 warnings", then "Warnings: 641098").
    let file = root.path().join("long.tsv");
    tsv(&file, 1..=70_000, "abcdef");
    let out = load(&table("narrow"), &file);
    let w = out.warnings.expect("MariaDB reports warnings");
    assert_eq!(out.rows, 70_000);
    assert_eq!(w.count, 70_000);
    assert_eq!(w.skipped, Some(0));
    assert!(w.serious);
    assert_eq!(
        w.info.as_deref(),
        Some("Records: 70000  Deleted: 0  Skipped: 0  Warnings: 70000")
    );
    // The server's own figures for the same load on its own connection.
    let port = {
        let mut s = engine.connect().unwrap();
        s.query_i64("SELECT @@port").unwrap() as u16
    };
    let mut admin = common::mysql_conn(port, Some("dbduel_warn"));
    admin
        .query_drop("CREATE TABLE narrow2 LIKE narrow")
        .unwrap();
    let mut c = servers_own_load(port, "dbduel_warn", "narrow2", &file);
    assert_eq!(
        c.warnings(),
        65_535,
        "the OK packet's count stops at 65,535"
    );
    assert_eq!(c.info_str(), w.info.as_deref().unwrap());
    let shown: Vec<(String, String, String)> = c.query("SHOW WARNINGS LIMIT 5").unwrap();
    let count: Option<u64> = c.query_first("SELECT @@warning_count").unwrap();
    assert_eq!(count, Some(70_000));
    let ours: Vec<(String, String, String)> = w
        .first
        .iter()
        .map(|x| (x.level.clone(), x.code.clone(), x.message.clone()))
        .collect();
    assert_eq!(ours, shown);
    assert_eq!(shown[0].1, "1265", "{shown:?}"); // Data truncated for column 'v' at row 1

    // Duplicate keys: LOAD DATA LOCAL skips the rows, each with a warning.
    let file = root.path().join("dups.tsv");
    tsv(&file, (1..=100).chain(1..=7), "abc");
    let out = load(&table("dups"), &file);
    let w = out.warnings.expect("warnings");
    assert_eq!((out.rows, w.count, w.skipped), (100, 7, Some(7)));
    assert!(w.serious);
    assert_eq!(w.first[0].code, "1062", "{:?}", w.first);
    let n: Option<i64> = admin.query_first("SELECT COUNT(*) FROM dups").unwrap();
    assert_eq!(n, Some(100));

    // A clean load: no warnings, and the server's summary says so.
    let file = root.path().join("clean.tsv");
    tsv(&file, 1..=100, "abc");
    let w = load(&table("clean"), &file).warnings.expect("warnings");
    assert_eq!((w.count, w.serious), (0, false));
    assert_eq!(
        w.info.as_deref(),
        Some("Records: 100  Deleted: 0  Skipped: 0  Warnings: 0")
    );
    engine.finish(false).expect("finish");
}

/// Load, clients that connect before the clock, the original study's mysqlslap shape (1,000 new
/// connections, one query each, timed from the first connect), and the same UPDATE twice;
/// `capped` allows 10 connections (with room for all 40 in its listen queue, so each is
/// refused rather than left waiting), so its 40 clients cannot all connect.
const CONNECT_STUDY: &str = include_str!("studies/mariadb_connects.toml");

#[test]
fn connects_load_warnings_and_matched_rows_agree_with_the_server() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("connects.toml");
    std::fs::write(&study, CONNECT_STUDY).unwrap();
    let out = root.path().join("out");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--keep",
        "-q",
    ]);
    // `capped` fails its client step: the run says so.
    assert_eq!(code, 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let json = |c: &str, s: &str| read_json(&dir.join(c).join(format!("{s}.json")));

    // Clients connected before the clock: every connect counted by the server too (plus the
    // connection that reads its counters after the step).
    let q = step(&summary, "innodb", "q");
    assert_eq!(q["status"], "ok", "{q:#}");
    let qd = json("innodb", "q");
    assert_eq!(qd["details"]["connect"]["connected"], 40);
    assert_eq!(qd["server_counters"]["Connections"], 41);
    assert_eq!(qd["server_counters"]["Com_stmt_prepare"], 80);
    let all_s = figure(q, "connect_s").expect("connect all");
    let per_s = figure(q, "connects_per_s").expect("connects/s");
    assert!(all_s > 0.0 && (per_s * all_s - 40.0).abs() < 1e-6, "{q:#}");
    let slowest = figure(q, "connect_max_us").expect("slowest connect");
    assert!(slowest > 0.0 && slowest <= all_s * 1e6 + 1.0, "{q:#}");

    // The seed's shape: 1,000 connections and 1,000 queries sent as text (mysqlslap gives a
    // client number-of-queries / concurrency queries, and one when that is 0), timed from
    // the first connect.
    let slap = step(&summary, "innodb", "slap");
    assert_eq!(slap["status"], "ok", "{slap:#}");
    let sd = json("innodb", "slap");
    assert_eq!(sd["details"]["connect"]["connected"], 1000);
    assert_eq!(sd["details"]["ops"], 1000);
    assert_eq!(sd["details"]["sent_as"], "text");
    assert_eq!(sd["server_counters"]["Connections"], 1001);
    assert_eq!(sd["server_counters"]["Com_select"], 1000);
    assert_eq!(sd["server_counters"]["Com_stmt_prepare"], 0);
    assert_eq!(slap["metrics"][0]["key"], "elapsed_s");
    let elapsed = figure(slap, "elapsed_s").unwrap();
    assert!(elapsed >= figure(slap, "connect_s").unwrap(), "{slap:#}");
    assert_eq!(slap["rows"], 1000); // one COUNT row a query

    // 40 clients on 2 threads: each of the 2,000 executions counted by the server, every
    // answer read whole.
    let shared = step(&summary, "innodb", "shared");
    assert_eq!(shared["status"], "ok", "{shared:#}");
    let jd = json("innodb", "shared");
    assert_eq!(jd["details"]["threads"], 2, "{:#}", jd["details"]);
    assert_eq!(jd["details"]["connect"]["connected"], 40);
    assert_eq!(jd["details"]["ops"], 2000);
    assert_eq!(jd["server_counters"]["Com_stmt_execute"], 2000);
    assert_eq!(shared["rows"], 2000 * 48);

    // Rows matched vs changed, as the server's info string says them.
    let up = step(&summary, "innodb", "update");
    assert_eq!(
        (figure(up, "rows"), figure(up, "rows_changed")),
        (Some(899.0), Some(899.0))
    );
    assert_eq!(
        json("innodb", "update")["details"]["info"],
        "Rows matched: 899  Changed: 899  Warnings: 0"
    );
    let again = step(&summary, "innodb", "update-again");
    assert_eq!(
        (figure(again, "rows"), figure(again, "rows_changed")),
        (Some(899.0), Some(0.0))
    );
    assert!(stdout.contains("rows changed"), "{stdout}");
    // The server's own account of the same statement once more: matched, none changed. Its
    // affected-rows count is the changed rows unless the client asks for CLIENT_FOUND_ROWS,
    // which dbduel's connections do not.
    let sb = read_json(
        &dir.join("work")
            .join("innodb")
            .join("sandbox")
            .join("sandbox.json"),
    );
    let port = sb["port"].as_u64().unwrap() as u16;
    let sql = "UPDATE user_logs SET content = 'x' WHERE id > 100 AND id < 1000";
    let mut db = common::mysql_conn(port, Some("dbduel_connects"));
    db.query_drop(sql).unwrap();
    assert_eq!(db.info_str(), "Rows matched: 899  Changed: 0  Warnings: 0");
    assert_eq!(db.affected_rows(), 0);
    let found_rows = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(common::sandbox_password(port)))
        .prefer_socket(false)
        .db_name(Some("dbduel_connects"))
        .additional_capabilities(mysql::consts::CapabilityFlags::CLIENT_FOUND_ROWS);
    let mut fr = mysql::Conn::new(found_rows).unwrap();
    fr.query_drop(sql).unwrap();
    assert_eq!(fr.affected_rows(), 899);
    let n: Option<i64> = db
        .query_first("SELECT COUNT(*) FROM user_logs WHERE content = 'x'")
        .unwrap();
    assert_eq!(n, Some(899));

    // A clean load records the server's summary and no warnings figure.
    let ld = json("innodb", "load");
    assert_eq!(ld["details"]["warnings"]["count"], 0);
    assert_eq!(
        ld["details"]["warnings"]["info"][0],
        "Records: 3000  Deleted: 0  Skipped: 0  Warnings: 0"
    );
    assert_eq!(figure(step(&summary, "innodb", "load"), "warnings"), None);

    // 40 clients against max_connections = 10: every client is waited for, the refusals are
    // counted by kind, and the server counted the same refusals.
    let capped = step(&summary, "capped", "q");
    assert_eq!(capped["status"], "failed", "{capped:#}");
    let note = capped["note"].as_str().unwrap();
    let failed: u64 = note
        .split(" of 40 clients could not connect")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        note.contains(&format!(": too_many_connections {failed} (first: client ")),
        "{note}"
    );
    assert!(note.contains("ERROR 1040"), "{note}");
    let connected: u64 = note
        .split("; ")
        .last()
        .and_then(|s| s.split(" connected in").next())
        .and_then(|n| n.parse().ok())
        .expect(note);
    assert_eq!(failed + connected, 40, "{note}");
    let cd = json("capped", "q");
    assert_eq!(
        cd["server_counters"]["Connection_errors_max_connections"],
        failed
    );
    assert_eq!(cd["server_counters"]["Connections"], connected + 1);
    assert_eq!(step(&summary, "capped", "slap")["status"], "skipped");

    let (code, _, _) = run(&["sandbox", "down", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0);
}

/// MariaDB's metadata lock and InnoDB's row locks each see only their own waits: a
/// transaction that holds `customer`'s metadata lock and waits for a row lock held by one
/// queued behind a change to `customer` is a deadlock neither detector breaks, for
/// `innodb_lock_wait_timeout` (50 s). The change gives way after its own lock wait and is
/// made on its next attempt, the workload held up for seconds, not a minute.
#[test]
fn a_hot_change_gives_way_to_a_deadlock_no_detector_sees() {
    use dbduel::workload::hot_ddl::{self, HotChange, LOCK_WAIT_S};
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = sandboxed_engine(root.path(), "hot");
    let port = {
        let mut s = engine.connect().unwrap();
        for sql in [
            "CREATE TABLE customer (id INT PRIMARY KEY, c_middle CHAR(2)) ENGINE=InnoDB",
            "CREATE TABLE warehouse (id INT PRIMARY KEY, ytd INT) ENGINE=InnoDB",
            "INSERT INTO customer VALUES (1, 'OE')",
            "INSERT INTO warehouse VALUES (1, 0)",
        ] {
            s.execute(sql).unwrap();
        }
        s.query_i64("SELECT @@port").unwrap() as u16
    };
    let change: HotChange = toml::from_str(
        "at_s = 0\ntable = \"customer\"\naction = \"rename_column\"\ncolumn = \"c_middle\"\nto = \"c_mi\"\n",
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let (held_s, runs) = hot_ddl::alongside(engine.as_ref(), &[change], &stop, |second| {
        let mut t1 = common::mysql_conn(port, Some("dbduel_hot"));
        let mut t2 = common::mysql_conn(port, Some("dbduel_hot"));
        t1.query_drop("BEGIN").unwrap();
        let _: Vec<String> = t1.query("SELECT c_middle FROM customer").unwrap();
        t2.query_drop("BEGIN").unwrap();
        t2.query_drop("UPDATE warehouse SET ytd = ytd + 1 WHERE id = 1")
            .unwrap();
        // t1, holding customer's metadata lock, waits for t2's row lock
        let waiter = std::thread::spawn(move || {
            t1.query_drop("UPDATE warehouse SET ytd = ytd + 1 WHERE id = 1")
                .and_then(|_| t1.query_drop("COMMIT"))
        });
        std::thread::sleep(Duration::from_millis(200));
        second(hot_ddl::Second::at(0.0)); // the change asks for customer's metadata lock, queued behind t1
        std::thread::sleep(Duration::from_millis(300));
        // t2 queues behind the change: the cycle is closed
        let t = Instant::now();
        let _: Vec<String> = t2.query("SELECT c_middle FROM customer").unwrap();
        let held = t.elapsed().as_secs_f64();
        t2.query_drop("COMMIT").unwrap();
        waiter.join().unwrap().expect("t1 commits");
        std::thread::sleep(Duration::from_secs(2)); // the change's next attempt
        held
    });
    let r = &runs[0];
    assert_eq!(r.error, None, "{r:?}");
    assert!(r.gave_way >= 1, "{r:?}");
    assert!(r.elapsed_s.unwrap() >= LOCK_WAIT_S as f64, "{r:?}");
    assert!(
        held_s < 3.0 * LOCK_WAIT_S as f64,
        "the workload was held {held_s:.1} s: {r:?}"
    );
    let mut s = engine.connect().unwrap();
    assert_eq!(
        s.query_i64("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'dbduel_hot' AND column_name = 'c_mi'")
            .unwrap(),
        1
    );
    drop(s);
    // the server's private directory outside the test's goes too
    engine.finish(false).expect("finish");
}

#[test]
fn a_second_run_of_one_study_on_one_target_is_refused_and_the_first_keeps_its_tables() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut theirs = Sandbox::create(
        common::mariadb_recipe("32M"),
        "theirs",
        &root.path().join("theirs"),
    )
    .expect("create");
    theirs.start().expect("start");
    let port = theirs.layout.port;
    let study = root.path().join("lease.toml");
    let text = common::fill(
        include_str!("studies/lease_target.toml"),
        &[
            ("engine", "mariadb"),
            (
                "target",
                &common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}"), port),
            ),
        ],
    );
    std::fs::write(&study, text).expect("study");
    let ((second, second_err), (first, first_err)) =
        common::two_runs_at_once(&study, &root.path().join("out"));
    assert_eq!(second, 1, "the second run must be refused:\n{second_err}");
    assert!(
        second_err.contains("in use by another dbduel run") && second_err.contains("--run-group"),
        "{second_err}"
    );
    assert_eq!(first, 0, "the first run must be undisturbed:\n{first_err}");
    let summary = read_json(&run_dir(&first_err).join("summary.json"));
    assert_eq!(step(&summary, "theirs", "queries")["status"], "ok");
    let rows: Option<i64> = common::mysql_conn(port, None)
        .query_first("SELECT COUNT(*) FROM dbduel_lease.user_logs")
        .expect("the first run's table");
    assert_eq!(rows, Some(2000));
    // Once the first run has ended its lease is gone: the study runs again.
    let (code, _, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "-q",
        "--out",
        root.path()
            .join("out")
            .join("third")
            .to_str()
            .expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    theirs.finish(false).expect("removed");
}
