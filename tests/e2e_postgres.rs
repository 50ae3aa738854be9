//! End to end on real PostgreSQL sandboxes: lifecycle as root (the server runs as an
//! unprivileged account) and as an ordinary user, and the shootout, connects, `$1` lookups and
//! loads checked against what the server itself reports. With DBDUEL_REQUIRE_SERVERS=1 (CI) a
//! missing server fails.

mod common;

use common::{figure, read_json, run, run_dir, run_with_pid, step};
use dbduel::engines::postgres::recipe::PostgresRecipe;
use dbduel::sandbox::{self, Sandbox};
use std::collections::BTreeMap;

fn client(port: u16, db: &str) -> postgres::Client {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("dbduel")
        .password(common::sandbox_password(port))
        .dbname(db)
        .connect(postgres::NoTls)
        .expect("connect to sandbox")
}

/// A PostgreSQL sandbox of the default recipe named `name` under `root`, started.
fn started(root: &std::path::Path, name: &str) -> Sandbox {
    let mut sb = Sandbox::create(Box::new(PostgresRecipe::default()), name, &root.join(name))
        .expect("create");
    sb.start().expect("start");
    sb
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn sandbox_starts_stops_and_restarts() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp"); // 0700: the server's account cannot enter it
    let mut settings = BTreeMap::new();
    settings.insert("shared_buffers".to_string(), "16MB".to_string());
    let mut sb = Sandbox::create(
        Box::new(PostgresRecipe {
            settings,
            ..Default::default()
        }),
        "pg",
        &root.path().join("pg"),
    )
    .expect("create");
    sb.start().expect("start");
    assert!(
        sb.manifest
            .server_version
            .as_deref()
            .unwrap_or("")
            .starts_with("PostgreSQL")
    );
    let pid = sb.pid().expect("pid");
    // PostgreSQL refuses root: as root the server runs as another account
    let uid = std::fs::metadata(format!("/proc/{pid}"))
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap();
    if is_root() {
        assert_ne!(uid, 0, "postgres must not run as root");
        assert!(sb.manifest.private_dir.is_some());
    }
    let v: String = client(sb.layout.port, "postgres")
        .query_one("SHOW port", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, sb.layout.port.to_string());
    sb.restart().expect("restart");
    assert_ne!(sb.pid(), Some(pid));
    assert!(!sandbox::alive(pid));
    let _ = client(sb.layout.port, "postgres");
    let pid = sb.pid().expect("pid");
    let private = sb.manifest.private_dir.clone();
    sb.destroy().expect("destroy");
    assert!(!sandbox::alive(pid));
    assert!(!root.path().join("pg").exists());
    if let Some(p) = private {
        assert!(
            !p.exists(),
            "private data directory left behind: {}",
            p.display()
        );
    }
}

#[test]
fn a_sandbox_dropped_while_running_stops_and_leaves_no_private_directory() {
    // As when a test panics holding it: no finish, no destroy.
    if !common::have_postgres() || !is_root() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let sb = started(root.path(), "dropped");
    let pid = sb.pid().expect("pid");
    let private = sb
        .manifest
        .private_dir
        .clone()
        .expect("a private directory");
    assert!(sb.layout.datadir.starts_with(&private) && sb.layout.datadir.is_dir());
    drop(sb);
    assert!(!sandbox::alive(pid));
    assert!(
        !private.exists(),
        "private directory left behind: {}",
        private.display()
    );
    // its own directory stays, with the server's log
    assert!(root.path().join("dropped").join("server.log").is_file());
}

#[test]
fn shootout_on_postgres_agrees_with_the_server() {
    if !common::have_postgres() {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let out_s = out.path().to_str().unwrap();
    let (pid, code, stdout, stderr) = run_with_pid(&[
        "run",
        "shootout",
        "--contender",
        "postgres",
        "--out",
        out_s,
        "--keep",
        "-q",
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
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    common::assert_shootout_ok(&summary, "postgres");
    assert_eq!(step(&summary, "postgres", "load")["rows"], 20000);
    assert_eq!(step(&summary, "postgres", "update")["rows"], 11100);

    let sb = read_json(
        &dir.join("work")
            .join("postgres")
            .join("sandbox")
            .join("sandbox.json"),
    );
    let port = sb["port"].as_u64().unwrap() as u16;
    let mut c = client(port, "dbduel_shootout");
    let n: i64 = c
        .query_one("SELECT COUNT(*) FROM user_logs", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 20000);
    let changed: i64 = c
        .query_one("SELECT COUNT(*) FROM user_logs WHERE content = 'ddddddddddddddddddddsssssss' AND id > 8900 AND id < 90000", &[])
        .unwrap()
        .get(0);
    assert_eq!(changed, 11100);

    // bytes on disk: the relation files, equal to what the server counts
    let fp = read_json(&dir.join("postgres").join("footprint.json"));
    let files = fp["details"]["files_bytes"].as_u64().unwrap();
    let engine = fp["details"]["engine_bytes"].as_u64().unwrap();
    assert_eq!(files, engine, "{fp:#}");
    assert!(files > 20000 * 700);

    // queries counted by dbduel = executions counted by pg_stat_statements
    let rq = read_json(&dir.join("postgres").join("range-queries.json"));
    let ours = rq["details"]["ops"].as_u64().unwrap();
    let server = rq["server_counters"]["select_calls"].as_u64().unwrap();
    assert_eq!(ours, 200);
    assert!(
        (server as f64 - ours as f64).abs() <= ours as f64 * 0.02,
        "dbduel {ours}, pg_stat_statements {server}"
    );
    // mysqlslap's shape: one session and one query (sent as text) per client, as the server
    // counted them
    for s in ["slap-count", "slap-content"] {
        let j = read_json(&dir.join("postgres").join(format!("{s}.json")));
        assert_eq!(j["details"]["connect"]["connected"], 50, "{s}");
        let calls = j["server_counters"]["select_calls"].as_u64().unwrap();
        assert!((50..=51).contains(&calls), "{s}: select_calls {calls}");
    }
    // PostgreSQL counts matched rows only; the load's COPY raised no warnings
    let up = step(&summary, "postgres", "update");
    assert_eq!(figure(up, "rows_changed"), None);
    assert_eq!(up["metrics"][0]["label"], "rows matched");
    let ld = read_json(&dir.join("postgres").join("load.json"));
    assert_eq!(ld["details"]["warnings"]["count"], 0);
    assert_eq!(ld["details"]["warnings"]["info"][0], "COPY 20000");
    // the load step says what ran after COPY
    assert!(
        step(&summary, "postgres", "load")["note"]
            .as_str()
            .unwrap()
            .contains("VACUUM ANALYZE")
    );

    let (code, _, _) = common::run(&["sandbox", "down", "--out", out_s]);
    assert_eq!(code, 0);
    assert!(sandbox::find(out.path()).is_empty());
    let left = common::processes_mentioning(&format!("dbduel-sandboxes/{pid}-"));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn postgres_runs_the_same_for_an_ordinary_user() {
    if !common::have_postgres() || !is_root() {
        return; // as an ordinary user, the test above already is this test
    }
    // An ordinary account, a results directory it owns, the same command.
    let out = tempfile::tempdir().expect("tmp");
    let dir = out.path().join("results");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(
        out.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let output = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_dbduel"))
        .args(["run", "shootout", "--contender", "postgres", "-q", "--out"])
        .arg(&dir)
        .args([
            "--set",
            "dataset.rows=2000",
            "--set",
            "step.range-queries.clients=3",
            "--set",
            "step.range-queries.per_client=5",
            "--set",
            "step.slap-count.clients=3",
            "--set",
            "step.slap-content.clients=3",
        ])
        .current_dir(&dir)
        .env("TMPDIR", &dir)
        .output()
        .expect("setpriv runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{stderr}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    assert_eq!(summary["status"], "ok");
    let manifest = read_json(&run_dir(&stderr).join("manifest.json"));
    assert_eq!(manifest["contenders"][0]["engine"], "postgres");
    assert!(common::processes_mentioning(dir.to_str().unwrap()).is_empty());
}

#[test]
fn external_postgres_target_is_used_but_never_harmed() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut settings = BTreeMap::new();
    settings.insert("shared_buffers".to_string(), "16MB".to_string());
    let mut theirs = Sandbox::create(
        Box::new(PostgresRecipe {
            settings,
            ..Default::default()
        }),
        "theirs",
        &root.path().join("theirs"),
    )
    .expect("create");
    theirs.start().expect("start");
    let port = theirs.layout.port;
    let mut admin = client(port, "postgres");
    admin.batch_execute("CREATE DATABASE precious").unwrap();
    let mut precious = client(port, "precious");
    precious
        .batch_execute("CREATE TABLE user_logs (id int); INSERT INTO user_logs VALUES (1), (2)")
        .unwrap();
    let study = root.path().join("t.toml");
    let write = |target: &str| {
        let text = common::fill(
            include_str!("studies/postgres_external_target.toml"),
            &[("target", target)],
        );
        std::fs::write(&study, text).unwrap()
    };
    let out = root.path().join("out");
    write(&common::target_with_secret(
        &format!("postgres://dbduel@127.0.0.1:{port}"),
        port,
    ));
    // The sandbox's superuser, and a study with SQL of its own (its queries step): refused
    // before anything runs, with the role that would suffice, which then runs it.
    let (code, _, stderr) = common::run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("the role is SUPERUSER")
            && stderr.contains("CREATE ROLE dbduel LOGIN CREATEDB PASSWORD")
            && stderr.contains("GRANT pg_checkpoint TO dbduel")
            && stderr.contains("wide_account = true"),
        "{stderr}"
    );
    admin
        .batch_execute(
            "CREATE ROLE narrow LOGIN CREATEDB PASSWORD 'narrow-pw'; GRANT pg_checkpoint TO narrow",
        )
        .unwrap();
    write(&format!(
        "postgres://narrow@127.0.0.1:{port}\"\npassword_env = \"DBDUEL_TEST_PW"
    ));
    let o = common::bin()
        .args(["run", study.to_str().unwrap(), "-q", "--out"])
        .arg(&out)
        .env("DBDUEL_TEST_PW", "narrow-pw")
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    admin.batch_execute("DROP DATABASE dbduel_ext").unwrap();
    write(&common::target_with_secret(
        &format!("postgres://dbduel@127.0.0.1:{port}"),
        port,
    ));
    let (code, stdout, stderr) = common::run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--allow-wide-account",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    assert_eq!(step(&summary, "theirs", "load")["rows"], 1000);
    assert_eq!(step(&summary, "theirs", "q")["status"], "ok");
    assert_eq!(step(&summary, "theirs", "count-cold")["status"], "skipped");
    let marked: i64 = client(port, "dbduel_ext")
        .query_one("SELECT count(*) FROM dbduel_marker", &[])
        .unwrap()
        .get(0);
    assert_eq!(marked, 1);
    // a database dbduel did not create is refused and left as it was
    write(&common::target_with_secret(
        &format!("postgres://dbduel@127.0.0.1:{port}/precious"),
        port,
    ));
    let (code, _, stderr) = common::run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--allow-wide-account",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("was not created by dbduel"), "{stderr}");
    let n: i64 = precious
        .query_one("SELECT count(*) FROM user_logs", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    theirs.destroy().expect("destroy");
}

#[test]
fn the_wire_client_speaks_every_result_shape_and_password_method() {
    use dbduel::engine::target::{Secret, Target};
    use dbduel::engine::{Session, Value};
    use dbduel::engines::wire::pg::PgWire;
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let sb = started(root.path(), "wire");
    let port = sb.layout.port;
    let mut admin = client(port, "postgres");
    admin.batch_execute("CREATE DATABASE w").unwrap();
    let target = |user: &str, pw: Option<&str>| Target {
        scheme: "postgres".into(),
        user: user.into(),
        host: "127.0.0.1".into(),
        port,
        database: None,
        password: pw.map(Secret::new),
        restart_command: None,
        allow_cleartext: false,
        tls: Default::default(),
    };
    let secret = sb.secret().expect("the sandbox's secret");
    let mut s = PgWire::connect(&target("dbduel", Some(secret.expose())), "w").expect("connects");

    // SQL text: rows, one integer, NULL. Several statements in one string are refused (the
    // extended protocol takes one), and neither of them ran.
    s.execute("CREATE TABLE t (id int PRIMARY KEY, v text, c char(10), big bigint)")
        .unwrap();
    let two = s
        .execute("INSERT INTO t VALUES (1,'a','x',1); DROP TABLE t")
        .unwrap_err();
    assert_eq!(two.kind, "sql", "{}", two.message);
    assert_eq!(
        s.query_i64("SELECT count(*) FROM t").unwrap(),
        0,
        "nothing ran"
    );
    assert_eq!(s.execute("INSERT INTO t VALUES (1,'a','x',1)").unwrap(), 1);
    assert_eq!(
        s.execute("INSERT INTO t VALUES (2,'b','y',2),(5,'e','z',5)")
            .unwrap(),
        2
    );
    assert_eq!(s.execute("SELECT * FROM t").unwrap(), 3);
    assert_eq!(s.query_i64("SELECT count(*) FROM t").unwrap(), 3);
    assert_eq!(s.query_i64("SELECT sum(big) FROM t").unwrap(), 8);
    assert_eq!(s.query_i64("SELECT NULL::int").unwrap(), 0);

    // Extended protocol: parameters as text into int, text, char and bigint columns.
    let ins = s.prepare("INSERT INTO t VALUES ($1, $2, $3, $4)").unwrap();
    let row = |id, v: &str, big| {
        [
            Value::Int(id),
            Value::Text(v.into()),
            Value::Text(v.into()),
            Value::Int(big),
        ]
    };
    assert_eq!(s.run(ins, &row(3, "c", 1 << 40)).unwrap(), 1);
    assert_eq!(s.run(ins, &row(4, "dé", -7)).unwrap(), 1);
    let got: Vec<(i32, String, i64)> = client(port, "w")
        .query(
            "SELECT id, v, big FROM t WHERE id IN (3, 4) ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(got, vec![(3, "c".into(), 1 << 40), (4, "dé".into(), -7)]);
    let sel = s
        .prepare("SELECT * FROM t WHERE id BETWEEN $1 AND $2")
        .unwrap();
    assert_eq!(s.run(sel, &[Value::Int(2), Value::Int(4)]).unwrap(), 3);
    assert_eq!(s.run(sel, &[Value::Int(6), Value::Int(9)]).unwrap(), 0);
    let upd = s
        .prepare("UPDATE t SET big = big + 1 WHERE id <= $1")
        .unwrap();
    assert_eq!(s.run(upd, &[Value::Int(4)]).unwrap(), 4);

    // Errors keep their kind; the session goes on after them, on both protocols.
    let dup = s.run(ins, &row(1, "x", 0)).unwrap_err();
    assert_eq!(dup.kind, "constraint", "{}", dup.message);
    assert!(dup.message.contains("duplicate key"), "{}", dup.message);
    assert_eq!(s.execute("SELEC 1").unwrap_err().kind, "sql");
    assert_eq!(s.prepare("SELECT nope FROM t").unwrap_err().kind, "sql");
    assert_eq!(s.query_i64("SELECT count(*) FROM t").unwrap(), 5);
    assert!(s.execute("COPY t FROM STDIN").is_err(), "refused, not hung");
    // A server's error text is kept to a sane length, with a note of what was cut.
    let long = s
        .execute("DO $$ BEGIN RAISE EXCEPTION '%', repeat('x', 100000); END $$")
        .unwrap_err();
    assert!(long.message.len() <= 4200, "{} bytes", long.message.len());
    assert!(
        long.message.ends_with("more bytes cut]"),
        "{}",
        &long.message[..80]
    );
    // A result larger than the receive buffer.
    assert_eq!(
        s.execute("SELECT repeat('x', 100000) FROM generate_series(1, 3)")
            .unwrap(),
        3
    );
    drop(s);

    // Passwords by SCRAM-SHA-256 and by MD5, once the server asks for them.
    admin
        .batch_execute(
            "CREATE ROLE scram LOGIN PASSWORD 'scram-pw'; GRANT ALL ON DATABASE w TO scram; \
             SET password_encryption = 'md5'; CREATE ROLE md LOGIN PASSWORD 'md-pw'; \
             GRANT ALL ON DATABASE w TO md",
        )
        .unwrap();
    let hba = sb.layout.conf_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("host all scram 127.0.0.1/32 scram-sha-256\nhost all md 127.0.0.1/32 md5\n{old}"),
    )
    .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // MD5 goes only where the target says allow_cleartext=1, even on loopback.
    let refused = PgWire::connect(&target("md", Some("md-pw")), "w")
        .err()
        .expect("MD5 is refused unless allowed");
    assert!(
        refused.message.contains("as an MD5 hash") && refused.message.contains("allow_cleartext=1"),
        "{}",
        refused.message
    );
    let allowed = |user: &str, pw: Option<&str>| Target {
        allow_cleartext: true,
        ..target(user, pw)
    };
    for (user, pw) in [("scram", "scram-pw"), ("md", "md-pw")] {
        let target = |user: &str, pw: Option<&str>| allowed(user, pw);
        let mut s = PgWire::connect(&target(user, Some(pw)), "w")
            .unwrap_or_else(|e| panic!("{user}: {}", e.message));
        assert_eq!(s.query_i64("SELECT 41 + 1").unwrap(), 42);
        let wrong = PgWire::connect(&target(user, Some("nope")), "w")
            .err()
            .expect("a wrong password fails");
        assert!(
            wrong.message.contains("password authentication failed"),
            "{}",
            wrong.message
        );
        let none = PgWire::connect(&target(user, None), "w")
            .err()
            .expect("no password fails");
        assert!(none.message.contains("password_env"), "{}", none.message);
    }
    // destroy, not stop: the private directory it ran from goes too.
    sb.destroy().expect("destroy");
}

/// Load, clients that connect before the clock, mysqlslap's shape, the same UPDATE twice;
/// `capped` allows 10 connections, so its 40 clients cannot all connect.
const CONNECT_STUDY: &str = include_str!("studies/postgres_connects.toml");

#[test]
fn connects_and_matched_rows_agree_with_the_server() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("connects.toml");
    std::fs::write(&study, CONNECT_STUDY).unwrap();
    let out = root.path().join("out");
    let out_s = out.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "--out",
        out_s,
        "--keep",
        "-q",
    ]);
    assert_eq!(code, 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let json = |c: &str, s: &str| read_json(&dir.join(c).join(format!("{s}.json")));
    // Sessions the server counted over the step: the clients, give or take the connection
    // reading the counters.
    let sessions = |j: &serde_json::Value| j["server_counters"]["sessions"].as_u64().unwrap();

    let q = step(&summary, "pg", "q");
    assert_eq!(q["status"], "ok", "{q:#}");
    let qd = json("pg", "q");
    assert_eq!(qd["details"]["connect"]["connected"], 40);
    assert!((40..=42).contains(&sessions(&qd)), "{qd:#}");
    let (all_s, per_s) = (
        figure(q, "connect_s").unwrap(),
        figure(q, "connects_per_s").unwrap(),
    );
    assert!(all_s > 0.0 && (per_s * all_s - 40.0).abs() < 1e-6, "{q:#}");
    assert!(figure(q, "connect_max_us").unwrap() <= all_s * 1e6 + 1.0);

    let slap = step(&summary, "pg", "slap");
    assert_eq!(slap["status"], "ok", "{slap:#}");
    let sd = json("pg", "slap");
    assert_eq!(sd["details"]["connect"]["connected"], 300);
    assert_eq!(sd["details"]["ops"], 300);
    assert!((300..=302).contains(&sessions(&sd)), "{sd:#}");
    let calls = sd["server_counters"]["select_calls"].as_u64().unwrap();
    assert!((300..=301).contains(&calls), "select_calls {calls}");
    assert!(figure(slap, "elapsed_s").unwrap() >= figure(slap, "connect_s").unwrap());
    assert_eq!(slap["rows"], 300 * 48);

    // UPDATE's command tag counts every matched row, changed or not: both runs say 899.
    for s in ["update", "update-again"] {
        let u = step(&summary, "pg", s);
        assert_eq!(figure(u, "rows"), Some(899.0), "{u:#}");
        assert_eq!(figure(u, "rows_changed"), None, "{u:#}");
    }
    let sb = read_json(
        &dir.join("work")
            .join("pg")
            .join("sandbox")
            .join("sandbox.json"),
    );
    let port = sb["port"].as_u64().unwrap() as u16;
    let mut c = client(port, "dbduel_connects");
    // the server wrote a new version of each matched row both times
    let upd: i64 = c
        .query_one(
            "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'user_logs'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(upd, 2 * 899);
    assert_eq!(
        c.execute(
            "UPDATE user_logs SET content = 'x' WHERE id > 100 AND id < 1000",
            &[]
        )
        .unwrap(),
        899
    );

    // 40 clients against max_connections = 10: every refusal counted, as the server logged it.
    let capped = step(&summary, "capped", "q");
    assert_eq!(capped["status"], "failed", "{capped:#}");
    let note = capped["note"].as_str().unwrap();
    let failed: usize = note
        .split(" of 40 clients could not connect")
        .next()
        .unwrap()
        .parse()
        .expect(note);
    assert!(
        note.contains(&format!(": too_many_connections {failed} (first: client "))
            && note.contains("too many clients already"),
        "{note}"
    );
    let sb = read_json(
        &dir.join("work")
            .join("capped")
            .join("sandbox")
            .join("sandbox.json"),
    );
    let log = std::fs::read_to_string(sb["log_file"].as_str().unwrap()).unwrap();
    let refused = log
        .lines()
        .filter(|l| {
            l.contains("FATAL:")
                && (l.contains("too many clients already")
                    || l.contains("remaining connection slots are reserved"))
        })
        .count();
    assert_eq!(refused, failed, "{log}");

    let (code, _, _) = run(&["sandbox", "down", "--out", out_s]);
    assert_eq!(code, 0);
}

/// On PostgreSQL (`$1` placeholders and `?` ones as other engines write them, the blocking
/// client connection): every lookup finds its
/// row, the server executed exactly the SELECTs dbduel counted, and every session said
/// goodbye properly (nothing about broken connections in the server's log).
#[test]
fn postgres_lookups_match_the_servers_count() {
    if !common::have_postgres() {
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("pg.toml");
    std::fs::write(&p, include_str!("studies/postgres_random_params.toml")).unwrap();
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    let (code, stdout, stderr) = run(&["run", p.to_str().unwrap(), "-q", "--keep", "--out", out_s]);
    let run_path = run_dir(&stderr);
    let log = std::fs::read_to_string(run_path.join("work/postgres/sandbox/server.log"));
    let (down, _, _) = run(&["sandbox", "down", "--all", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    assert_eq!(down, 0);
    let summary = read_json(&run_path.join("summary.json"));
    // Each of a step's 2000 lookups found its one row, and the server counted each.
    let lookups_counted = |name: &str| {
        let s = step(&summary, "postgres", name);
        assert_eq!(s["errors"], 0, "{s:#}");
        assert_eq!(
            s["rows"], 2000,
            "each of 2000 lookups finds its one row: {s:#}"
        );
        let j = read_json(&run_path.join("postgres").join(format!("{name}.json")));
        let calls = j["server_counters"]["select_calls"]
            .as_u64()
            .expect("pg_stat_statements counts");
        assert!(
            (2000..=2010).contains(&calls),
            "{name}: server ran {calls} SELECTs: {:#}",
            j["server_counters"]
        );
        j
    };
    lookups_counted("hits");
    // 40 clients on 2 threads: every client ran its 50, each counted by the server
    let j = lookups_counted("shared");
    assert_eq!(j["details"]["threads"], 2, "{:#}", j["details"]);
    assert_eq!(
        j["details"]["connect"]["connected"], 40,
        "{:#}",
        j["details"]
    );
    let log = log.expect("the kept sandbox's server log");
    for bad in [
        "could not receive data from client",
        "unexpected EOF",
        "connection reset",
    ] {
        assert!(
            !log.to_lowercase().contains(&bad.to_lowercase()),
            "server log says {bad:?}:\n{log}"
        );
    }
}

#[test]
fn load_warnings_and_rejected_rows_are_the_servers_own() {
    use dbduel::dataset::{Column, ColumnType, TableDef};
    use dbduel::engine::{LoadRequest, OpenCtx};
    use dbduel::engines::EngineConfig;
    use std::sync::{Arc, Mutex};
    if !common::have_postgres() {
        return;
    }
    static COLUMNS: [Column; 2] = [
        Column {
            name: "id",
            ty: ColumnType::Integer,
            primary_key: true,
            nullable: false,
            auto_increment: false,
        },
        Column {
            name: "v",
            ty: ColumnType::Text,
            primary_key: false,
            nullable: false,
            auto_increment: false,
        },
    ];
    let root = tempfile::tempdir().expect("tmp");
    let config = EngineConfig::decode("postgres", &toml::Table::new(), None, &Default::default())
        .expect("options");
    let engine = config
        .open(&OpenCtx {
            contender: "warn",
            dir: &root.path().join("warn"),
            database: "dbduel_warn",
            max_clients: 4,
        })
        .expect("sandbox");
    let def = |name: &str| TableDef {
        name: name.into(),
        columns: &COLUMNS,
        unique: Vec::new(),
        indexes: Vec::new(),
        rows: 0,
        foreign_keys: Vec::new(),
    };
    // A table whose rows each raise a WARNING as they go in (a trigger's RAISE WARNING).
    let warned = |name: &str| {
        let mut s = engine.connect().unwrap();
        s.execute(&engine.dialect().create_table(&def(name)))
            .unwrap();
        s.execute(&format!(
            "CREATE FUNCTION warn_{name}() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE WARNING 'row %', NEW.id; RETURN NEW; END $$"
        ))
        .unwrap();
        s.execute(&format!(
            "CREATE TRIGGER w BEFORE INSERT ON {name} FOR EACH ROW EXECUTE FUNCTION warn_{name}()"
        ))
        .unwrap();
    };
    let file = root.path().join("rows.tsv");
    let text: String = (1..=50).map(|i| format!("{i}\tv{i}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    warned("warned");
    let out = engine
        .bulk_load(&LoadRequest {
            table: &def("warned"),
            file: &file,
            batch_rows: 10,
        })
        .expect("load");
    let w = out.warnings.expect("PostgreSQL reports warnings");
    assert_eq!((out.rows, w.count, w.serious), (50, 50, true));
    assert_eq!(w.info.as_deref(), Some("COPY 50"));

    // The same COPY on the test's own connection: the notices the server sends.
    let port = engine
        .connect()
        .unwrap()
        .query_i64("SELECT current_setting('port')::int")
        .unwrap() as u16;
    warned("warned2");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut own = postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("dbduel")
        .password(common::sandbox_password(port))
        .dbname("dbduel_warn")
        .notice_callback(move |n| {
            sink.lock().unwrap().push((
                n.severity().to_string(),
                n.code().code().to_string(),
                n.message().to_string(),
            ))
        })
        .connect(postgres::NoTls)
        .expect("connect");
    let mut writer = own.copy_in("COPY warned2 FROM STDIN").unwrap();
    std::io::Write::write_all(&mut writer, text.as_bytes()).unwrap();
    assert_eq!(writer.finish().unwrap(), 50);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len() as u64, w.count);
    let ours: Vec<(String, String, String)> = w
        .first
        .iter()
        .map(|x| (x.level.clone(), x.code.clone(), x.message.clone()))
        .collect();
    assert_eq!(ours, seen[..ours.len()].to_vec());
    assert_eq!(ours[0].2, "row 1");

    // COPY rejects a row that does not fit by failing whole, with the server's words.
    let mut s = engine.connect().unwrap();
    s.execute(&engine.dialect().create_table(&def("strict")))
        .unwrap();
    std::fs::write(&file, "1\ta\nx\tb\n").unwrap();
    let err = engine
        .bulk_load(&LoadRequest {
            table: &def("strict"),
            file: &file,
            batch_rows: 10,
        })
        .expect_err("a bad row fails COPY");
    assert!(
        err.message
            .contains("invalid input syntax for type integer"),
        "{}",
        err.message
    );
    assert_eq!(s.query_i64("SELECT COUNT(*) FROM strict").unwrap(), 0);
    drop(s);
    engine.finish(false).expect("finish");
}

#[test]
fn a_second_run_of_one_study_on_one_target_is_refused_and_the_first_keeps_its_tables() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut settings = BTreeMap::new();
    settings.insert("shared_buffers".to_string(), "16MB".to_string());
    let mut theirs = Sandbox::create(
        Box::new(PostgresRecipe {
            settings,
            ..Default::default()
        }),
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
            ("engine", "postgres"),
            (
                "target",
                &common::target_with_secret(&format!("postgres://dbduel@127.0.0.1:{port}"), port),
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
    let rows: i64 = client(port, "dbduel_lease")
        .query_one("SELECT count(*) FROM user_logs", &[])
        .expect("the first run's table")
        .get(0);
    assert_eq!(rows, 2000);
    theirs.finish(false).expect("removed");
}

/// A superuser's `ALTER SYSTEM` (a study's `sql` step can send one) cannot undo what keeps a
/// sandbox private: after a restart the server still listens on loopback only and still
/// reads dbduel's host-based authentication, not one it wrote itself that lets anyone in.
#[test]
fn alter_system_cannot_open_a_sandbox_at_its_restart() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let mut sb = started(root.path(), "altered");
    let mut c = client(sb.layout.port, "postgres");
    let evil = sb.layout.datadir.join("evil_hba.conf");
    for sql in [
        format!(
            "COPY (SELECT 'host all all 0.0.0.0/0 trust') TO '{}'",
            evil.display()
        ),
        "ALTER SYSTEM SET listen_addresses = '*'".to_string(),
        format!("ALTER SYSTEM SET hba_file = '{}'", evil.display()),
    ] {
        c.batch_execute(&sql).expect("a superuser may send these");
    }
    drop(c);
    sb.restart().expect("restart");
    let mut c = client(sb.layout.port, "postgres");
    assert_eq!(common::pg_show(&mut c, "listen_addresses"), "127.0.0.1");
    assert_eq!(
        common::pg_show(&mut c, "hba_file"),
        sb.layout
            .conf_dir()
            .join("pg_hba.conf")
            .display()
            .to_string()
    );
    drop(c);
    let no_password = postgres::Config::new()
        .host("127.0.0.1")
        .port(sb.layout.port)
        .user("dbduel")
        .dbname("postgres")
        .connect(postgres::NoTls);
    assert!(
        format!("{:?}", no_password.err().expect("refused")).contains("password missing"),
        "the server asks for a password still"
    );
    sb.destroy().expect("destroy");
}
