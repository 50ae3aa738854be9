//! End to end on real MySQL sandboxes of every version dbduel provisions (5.6, 5.7, 8.0, from
//! the servers' cache `scripts/install-servers` fills): each starts (timed), answers the lean
//! wire client, runs a tiny shoot-out, oltp, TPC-C and partitioned lookups with dbduel's
//! counts equal to the server's own, and stops with nothing left running; an unknown version
//! fails before anything runs, naming what is installed and how to install the rest. With
//! DBDUEL_REQUIRE_SERVERS=1 (CI) a missing server fails.

mod common;

use common::{figure, read_json, run, run_dir, step};
use dbduel::engines::mariadb::recipe::MariadbRecipe;
use dbduel::engines::mysql::{recipe::MysqlRecipe, versions};
use dbduel::engines::versions::BinaryChoice;
use dbduel::sandbox::binaries;
use dbduel::sandbox::{self, Sandbox};
use mysql::prelude::Queryable;
use std::path::{Path, PathBuf};

const CONTENDERS: [(&str, &str); 3] = [("mysql56", "5.6"), ("mysql57", "5.7"), ("mysql80", "8.0")];

/// Whether every MySQL version is installed in the servers' cache; fails instead when
/// DBDUEL_REQUIRE_SERVERS=1, and says no when DBDUEL_SKIP_SERVERS=1.
fn have_mysql() -> bool {
    if std::env::var(common::SKIP_SERVERS).as_deref() == Ok("1") {
        eprintln!("skipping: MySQL (DBDUEL_SKIP_SERVERS=1)");
        return false;
    }
    let missing: Vec<&str> = versions::VERSIONS
        .iter()
        .filter(|v| server_dir(v).is_none())
        .map(|v| v.version)
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "MySQL {} not installed in {}: run `scripts/install-servers`",
        missing.join(", "),
        binaries::root().display()
    );
    assert!(
        std::env::var("DBDUEL_REQUIRE_SERVERS").as_deref() != Ok("1"),
        "{why} (DBDUEL_REQUIRE_SERVERS=1)"
    );
    eprintln!("skipping: {why}");
    false
}

/// The server cache's directory of `v`, as a contender's `version` finds it.
fn server_dir(v: &versions::MysqlVersion) -> Option<PathBuf> {
    let choice = BinaryChoice {
        version: Some(v.version.into()),
        basedir: None,
    };
    versions::BINARIES.resolve(&choice).ok()?.dir
}

/// A built-in study with one contender of each MySQL version added, written into `dir`.
fn with_mysql(dir: &Path, study: &str) -> PathBuf {
    let (code, text, stderr) = run(&["studies", "show", study]);
    assert_eq!(code, 0, "{stderr}");
    let path = dir.join(format!("{study}-mysql.toml"));
    let parts = include_str!("studies/parts/mysql_contenders.toml");
    std::fs::write(&path, format!("{text}\n{parts}")).expect("write study");
    path
}

/// `dbduel run` of `study` on every MySQL contender into `out`, with `sets`; its run
/// directory.
fn run_all(study: &Path, out: &Path, sets: &[&str]) -> PathBuf {
    let mut args = vec![
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    for (c, _) in CONTENDERS {
        args.extend(["--contender", c]);
    }
    for s in sets {
        args.extend(["--set", s]);
    }
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    run_dir(&stderr)
}

#[test]
fn each_version_initializes_starts_fast_and_speaks_the_lean_client() {
    use dbduel::engines::wire::mysql::WireSession;
    if !have_mysql() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    for v in versions::VERSIONS {
        let base = MariadbRecipe {
            settings: [("innodb_buffer_pool_size".to_string(), "32M".to_string())].into(),
            server_dir: server_dir(v),
            ..MariadbRecipe::default()
        };
        let t = std::time::Instant::now();
        let mut sb = Sandbox::create(
            Box::new(MysqlRecipe::new(v, &base)),
            v.version,
            &root.path().join(v.version),
        )
        .unwrap_or_else(|e| panic!("create {}: {e}", v.version));
        let made = t.elapsed();
        sb.start()
            .unwrap_or_else(|e| panic!("start {}: {e}", v.version));
        let ready = t.elapsed();
        eprintln!(
            "MySQL {}: data directory made in {:.1} s, answering {:.1} s after the start of it",
            v.version,
            made.as_secs_f64(),
            ready.as_secs_f64()
        );
        // The goal is 15 s on 2 cores; a busy machine gets room, a hang does not.
        assert!(ready.as_secs() < 45, "{}: {ready:?}", v.version);
        let version = sb.manifest.server_version.clone().unwrap_or_default();
        assert!(version.starts_with(v.version), "{version}");
        let port = sb.layout.port;
        // Nobody gets in without the sandbox's secret: not root over TCP with no password.
        let no_secret = mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some("root"))
            .prefer_socket(false);
        match mysql::Conn::new(no_secret) {
            Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1045, "{}: {e}", v.version),
            Err(e) => panic!("{}: refused for another reason: {e}", v.version),
            Ok(_) => panic!("{}: root entered without the secret", v.version),
        }
        // Nor another local account over the socket, nor into its files.
        common::assert_closed_to_strangers(&sb.manifest);
        let mut admin = common::mysql_conn(port, None);
        let plugin: Option<String> = admin
            .query_first("SELECT plugin FROM mysql.user WHERE User = 'root' AND Host = '127.0.0.1'")
            .unwrap();
        assert_eq!(
            plugin.as_deref(),
            Some("mysql_native_password"),
            "{}",
            v.version
        );
        let anonymous: Option<i64> = admin
            .query_first("SELECT COUNT(*) FROM mysql.user WHERE User = ''")
            .unwrap();
        assert_eq!(anonymous, Some(0), "{}", v.version);
        let (bind, infile, files): (String, String, String) = admin
            .query_first("SELECT @@bind_address, @@local_infile, @@secure_file_priv")
            .unwrap()
            .unwrap();
        assert_eq!(bind, "127.0.0.1");
        assert_eq!(infile, "1");
        assert!(
            Path::new(&files).starts_with(sb.layout.server_dir()),
            "{}: secure_file_priv {files}",
            v.version
        );
        admin.query_drop("CREATE DATABASE w").unwrap();
        // The benchmark sessions' client authenticates (8.0's caching_sha2_password would
        // send it back to the `mysql` crate).
        let target = dbduel::engine::target::Target {
            scheme: "mysql".into(),
            user: "root".into(),
            host: "127.0.0.1".into(),
            port,
            database: None,
            password: Some(dbduel::engine::target::Secret::new(
                common::sandbox_password(port),
            )),
            restart_command: None,
            allow_cleartext: false,
            tls: Default::default(),
        };
        let Ok(mut s) = WireSession::connect(&target, "w", 30) else {
            panic!("{}: the lean client is refused", v.version)
        };
        use dbduel::engine::Session;
        assert_eq!(s.query_i64("SELECT 41 + 1").unwrap(), 42);
        drop(s);
        drop(admin);
        let pid = sb.pid().expect("pid");
        sb.destroy().expect("destroy");
        assert!(!sandbox::alive(pid), "{}", v.version);
    }
    assert!(sandbox::find(root.path()).is_empty());
}

#[test]
fn shootout_on_each_version_agrees_with_the_server() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let study = with_mysql(tmp.path(), "shootout");
    let out = tmp.path().join("out");
    let dir = run_all(
        &study,
        &out,
        &[
            "dataset.rows=20000",
            "step.range-queries.clients=10",
            "step.range-queries.per_client=10",
            "step.slap-count.clients=20",
            "step.slap-content.clients=20",
        ],
    );
    let summary = read_json(&dir.join("summary.json"));
    for (c, v) in CONTENDERS {
        common::assert_shootout_ok(&summary, c);
        assert_eq!(step(&summary, c, "load")["rows"], 20000, "{c}");
        let load = read_json(&dir.join(c).join("load.json"));
        assert_eq!(load["details"]["warnings"]["count"], 0, "{c}");
        assert_eq!(step(&summary, c, "count-cold")["rows"], 20000, "{c}");
        assert_eq!(step(&summary, c, "update")["rows"], 11100, "{c}");
        assert_eq!(
            figure(step(&summary, c, "update"), "rows_changed"),
            Some(11100.0),
            "{c}"
        );
        let fp = read_json(&dir.join(c).join("footprint.json"));
        let files = fp["details"]["files_bytes"].as_u64().unwrap();
        let engine_bytes = fp["details"]["engine_bytes"].as_u64().unwrap();
        assert!(files > 0 && engine_bytes > 0, "{c}: {fp:#}");
        // what dbduel counted is what the server executed
        let rq = read_json(&dir.join(c).join("range-queries.json"));
        assert_eq!(rq["details"]["ops"], 100, "{c}");
        assert_eq!(rq["server_counters"]["Com_stmt_execute"], 100, "{c}");
        for s in ["slap-count", "slap-content"] {
            let j = read_json(&dir.join(c).join(format!("{s}.json")));
            assert_eq!(j["server_counters"]["Com_select"], 20, "{c}/{s}");
            assert_eq!(j["server_counters"]["Connections"], 21, "{c}/{s}");
        }
        // the algorithm the server accepted: only 8.0 adds a column instantly, and no
        // MySQL is asked for MariaDB's NOCOPY
        let ddl = read_json(&dir.join(c).join("add-column.json"));
        let want = if v == "8.0" { "INSTANT" } else { "INPLACE" };
        assert_eq!(ddl["details"]["algorithm"], want, "{c}: {ddl:#}");
        let refused = ddl["details"]["algorithms_refused"].to_string();
        assert!(!refused.contains("NOCOPY"), "{c}: {refused}");
        // the manifest says which server ran
        let m = read_json(&dir.join("manifest.json"));
        let info = m["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == c)
            .unwrap_or_else(|| panic!("{c} in {m:#}"));
        assert!(
            info.to_string().contains(&format!("\"{v}.")),
            "{c}: {info:#}"
        );
    }
    let leftover = common::processes_mentioning(out.to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

#[test]
fn oltp_statements_and_commits_are_the_servers_own() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let study = with_mysql(tmp.path(), "oltp");
    let out = tmp.path().join("out");
    let mut sets = vec!["dataset.tables=2", "dataset.rows=2000"];
    for s in [
        "step.point-select.threads=1",
        "step.point-select.duration_s=1",
        "step.point-select.final_fraction=1.0",
        // two clients on one thread (`jobs`): BEGIN as text, the rest prepared, each sent
        // as the last one's answer arrives
        "step.read-only.threads=2",
        "step.read-only.jobs=1",
        "step.read-only.duration_s=1",
        "step.read-only.final_fraction=1.0",
        "step.read-write.threads=1",
        "step.read-write.duration_s=2",
        "step.read-write.final_fraction=1.0",
    ] {
        sets.push(s);
    }
    let dir = run_all(&study, &out, &sets);
    for (c, _) in CONTENDERS {
        // statements an event executes prepared (COMMIT too; MySQL will not prepare BEGIN,
        // so it goes as text, as sysbench sends it) and whether it commits
        for (st, per_event, commits) in [
            ("point-select", 1, false),
            ("read-only", 15, true),
            ("read-write", 19, true),
        ] {
            let j = read_json(&dir.join(c).join(format!("{st}.json")));
            let events = j["details"]["levels"][0]["events"].as_u64().unwrap();
            assert!(events > 10, "{c}/{st}: {events} events");
            let server = &j["server_counters"];
            assert_eq!(
                server["Com_stmt_execute"].as_u64(),
                Some(per_event * events),
                "{c}/{st}: {events} events"
            );
            if commits {
                assert_eq!(server["Com_commit"].as_u64(), Some(events), "{c}/{st}");
            }
        }
    }
    let leftover = common::processes_mentioning(out.to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// TPC-C on 5.6 and 8.0 with its schema changes under load (libtest starts tests in name
/// order: this long one starts early, beside the short ones).
#[test]
fn hot_schema_changes_under_tpcc_commit_as_the_server_counts() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let study = with_mysql(tmp.path(), "tpcc");
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--scale",
        "functional",
        "--out",
        out.to_str().unwrap(),
        "--contender",
        "mysql56",
        "--contender",
        "mysql80",
        "--set",
        "step.tpcc.threads=[2]",
        "--set",
        "step.tpcc.duration_s=4",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for c in ["mysql56", "mysql80"] {
        let j = read_json(&dir.join(c).join("tpcc.json"));
        let levels = j["details"]["levels"].as_array().unwrap();
        let commits: u64 = levels
            .iter()
            .map(|l| l["commits_all"].as_u64().unwrap())
            .sum();
        let rolled: u64 = levels
            .iter()
            .map(|l| l["rollbacks_all"].as_u64().unwrap())
            .sum();
        assert!(commits > 100, "{c}: {commits}");
        assert_eq!(
            j["server_counters"]["Com_commit"].as_u64(),
            Some(commits),
            "{c}"
        );
        assert_eq!(
            j["server_counters"]["Com_rollback"].as_u64(),
            Some(rolled),
            "{c}"
        );
        // every schema change ran under load; 5.6 renames by CHANGE COLUMN
        let hot = read_json(&dir.join(c).join("hot-ddl.json"));
        let runs = hot["details"]["ddl"].as_array().unwrap();
        assert_eq!(runs.len(), 5, "{c}");
        for r in runs {
            assert!(r["error"].is_null(), "{c}: {r:#}");
        }
        let renamed = runs[1]["ran"].as_str().unwrap_or_default();
        let want = if c == "mysql56" {
            "CHANGE COLUMN c_note c_remark varchar(20)"
        } else {
            "RENAME COLUMN c_note TO c_remark"
        };
        assert!(renamed.contains(want), "{c}: {renamed}");
        let check = step(&summary, c, "consistency");
        assert_eq!(check["status"], "ok", "{c}: {check:#}");
        assert_eq!(figure(check, "conditions_passed"), Some(11.0), "{c}");
    }
    let leftover = common::processes_mentioning(out.to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

#[test]
fn lookups_on_a_table_split_by_key_are_counted_by_the_server() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("out");
    // one tablespace a partition
    let lk = tmp.path().join("lookups.toml");
    let contenders = "[[contender]]\nname = \"split\"\nengine = \"mysql\"\nversion = \"5.6\"\noptions = { buffer_pool_mb = 32, partitions = 4 }\n";
    std::fs::write(
        &lk,
        common::fill(
            include_str!("studies/lookups_codes.toml"),
            &[
                ("contenders", contenders),
                (
                    "steps",
                    include_str!("studies/parts/lookups_hot_and_all.toml"),
                ),
            ],
        ),
    )
    .expect("write study");
    let (code, stdout, stderr) = run(&[
        "run",
        lk.to_str().unwrap(),
        "-q",
        "--all-contenders",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    for st in ["hot", "all"] {
        let j = read_json(&dir.join("split").join(format!("{st}.json")));
        let ours: u64 = j["details"]["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["lookups"].as_u64().unwrap())
            .sum();
        let server = j["server_counters"]["Com_stmt_execute"].as_u64().unwrap();
        assert!(
            ours > 100 && server >= ours && server <= ours + 8,
            "{st}: {ours} vs {server}"
        );
    }
    let load = read_json(&dir.join("split").join("load.json"));
    let creates = load["details"]["create_table"].to_string();
    assert!(
        creates.contains("PARTITION BY KEY(id) PARTITIONS 4"),
        "{creates}"
    );
    let fp = read_json(&dir.join("split").join("footprint.json"));
    let parts = fp["details"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap_or_default().contains("#P#"))
        .count();
    assert_eq!(parts, 4, "{fp:#}");
    let leftover = common::processes_mentioning(out.to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// Needs no server: a version dbduel does not provision, or one not installed, fails before
/// anything runs (exit 3), naming the versions, what is installed and the install script.
#[test]
fn an_unknown_version_lists_the_installed_ones_and_the_install_script() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("out");
    let study = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/studies/mysql_unknown_version.toml"
    );
    let (code, stdout, stderr) = run(&["run", study, "--out", out.to_str().unwrap()]);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(stderr.contains("MySQL 9.9"), "{stderr}");
    assert!(
        stderr.contains("dbduel runs MySQL 5.6, 5.7, 8.0"),
        "{stderr}"
    );
    assert!(stderr.contains("scripts/install-servers"), "{stderr}");
    // an empty cache: nothing installed, and it says so
    let empty = tmp.path().join("servers");
    std::fs::create_dir_all(&empty).unwrap();
    let o = common::bin()
        .args(["run", study, "--out", out.to_str().unwrap()])
        .env("DBDUEL_SERVERS_DIR", &empty)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("installed: none;") && stderr.contains(&empty.display().to_string()),
        "{stderr}"
    );
    assert!(!out.join("work").exists());
}

/// `dbduel run study --out out`: its exit code, stdout and stderr.
fn run_study(study: &Path, out: &Path) -> (i32, String, String) {
    run(&[
        "run",
        study.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// A one-contender study `m57` (its `version` or `basedir` line is `choice`) that loads 100
/// rows and runs `query` for a second, written into `dir`.
fn tiny_study(dir: &Path, choice: &str, query: &str) -> PathBuf {
    let study = dir.join("tiny.toml");
    let text = format!(
        r#"[study]
name = "mysql-tiny"
description = "one MySQL contender, one query"
[dataset]
generator = "user_logs"
rows = 100
[[contender]]
name = "m57"
engine = "mysql"
{choice}
options = {{ buffer_pool_mb = 32 }}
[[step]]
name = "load"
kind = "load"
[[step]]
name = "queries"
kind = "queries"
clients = 1
duration_s = 1
queries = ["{query}"]
"#
    );
    std::fs::write(&study, text).expect("write study");
    study
}

/// A MySQL server's error names MySQL, not MariaDB whose engine MySQL contenders share: the
/// benchmark session's (lean wire client) words as the report and the run's output give them.
#[test]
fn a_mysql_servers_error_names_mysql() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let study = tiny_study(
        tmp.path(),
        "version = \"5.7\"",
        "SELECT no_such_column FROM user_logs WHERE id = 1",
    );
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run_study(&study, &out);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let all = format!("{stdout}\n{stderr}");
    assert!(all.contains("mysql: ERROR 1054"), "{all}");
    assert!(!all.contains("mariadb:"), "{all}");
}

/// Clients sharing a thread (`threads`) on MySQL 8.0: each execution counted by the server,
/// every 49-row answer read whole; an error the server raises while executing on a shared
/// thread names MySQL too.
#[test]
fn clients_sharing_a_thread_are_counted_by_mysql_and_its_errors_name_it() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let study = tiny_study(
        tmp.path(),
        "version = \"8.0\"",
        "SELECT content FROM user_logs WHERE id < ?",
    );
    let text = std::fs::read_to_string(&study).unwrap().replace(
        "clients = 1\nduration_s = 1\n",
        "clients = 4\nthreads = 2\nper_client = 50\nparams = [{ min = 50, max = 50 }]\n",
    ) + r#"[[step]]
name = "bad"
kind = "queries"
clients = 2
threads = 1
per_client = 1
queries = ["SELECT id FROM user_logs WHERE id = (SELECT id FROM user_logs)"]
"#;
    std::fs::write(&study, text).unwrap();
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run_study(&study, &out);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let j = read_json(&dir.join("m57").join("queries.json"));
    assert_eq!(j["status"], "ok", "{j:#}");
    assert_eq!(j["details"]["threads"], 2, "{:#}", j["details"]);
    assert_eq!(j["details"]["ops"], 200);
    assert_eq!(j["server_counters"]["Com_stmt_execute"], 200);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(step(&summary, "m57", "queries")["rows"], 200 * 49);
    let said = format!("{stdout}\n{stderr}");
    assert!(said.contains("mysql: ERROR 1242"), "{said}");
    assert!(!said.contains("mariadb:"), "{said}");
}

/// `basedir` runs an unpacked MySQL server (here the cache's 5.7, named by its path): its
/// version is read from `mysqld --version`, the version's row chosen from it, and the
/// manifest says where it came from; a directory without `bin/mysqld` fails before anything
/// runs (exit 3) saying what it must hold.
#[test]
fn a_basedir_runs_mysql_with_its_version_read_from_the_binary() {
    if !have_mysql() {
        return;
    }
    let dir = versions::row("5.7")
        .and_then(server_dir)
        .expect("5.7 installed");
    let tmp = tempfile::tempdir().expect("tmp");
    let choice = format!("basedir = {:?}", dir.display().to_string());
    let study = tiny_study(
        tmp.path(),
        &choice,
        "SELECT content FROM user_logs WHERE id = 1",
    );
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run_study(&study, &out);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("m57 (mysql 5.7."), "{stdout}");
    assert!(
        stdout.contains(&format!("server_binary=basedir {}", dir.display())),
        "{stdout}"
    );
    let empty = tmp.path().join("not-a-server");
    std::fs::create_dir(&empty).expect("mkdir");
    let choice = format!("basedir = {:?}", empty.display().to_string());
    let study = tiny_study(tmp.path(), &choice, "SELECT 1");
    let (code, stdout, stderr) = run_study(&study, &out);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(stderr.contains("has no bin/mysqld"), "{stderr}");
    let leftover = common::processes_mentioning(out.to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// `dbduel run STUDY` of a built-in study on `contenders` (its own MySQL ones) into `out`,
/// with `args` after; (stdout, run directory).
fn run_builtin(study: &str, out: &Path, contenders: &[&str], args: &[&str]) -> (String, PathBuf) {
    let mut all = vec!["run", study, "--out", out.to_str().unwrap()];
    for c in contenders {
        all.extend(["--contender", c]);
    }
    all.extend(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "{study}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    (stdout, run_dir(&stderr))
}

/// A client step's measured events (a sum over its levels) of `key`.
fn level_sum(j: &serde_json::Value, key: &str) -> u64 {
    j["details"]["levels"]
        .as_array()
        .unwrap_or_else(|| panic!("levels in {j:#}"))
        .iter()
        .map(|l| l[key].as_u64().unwrap_or_else(|| panic!("{key} in {l:#}")))
        .sum()
}

// The built-in studies' own MySQL contenders (`mysql-5.6`, and `mysql-8.0` for lookups), each
// study at a tiny size and in a test of its own: every step runs to the end, and what dbduel
// counted is what the server executed.

/// A scratch directory for a built-in study's run on MySQL, or None where MySQL is missing.
fn builtin_out() -> Option<(tempfile::TempDir, PathBuf)> {
    if !have_mysql() {
        return None;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("out");
    Some((tmp, out))
}

/// No process mentions the run's directory any more: every server it started has ended.
fn nothing_left(out: &Path) {
    let leftover = common::processes_mentioning(out.to_str().unwrap());
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// The shoot-out at its `full` scale sets the original's Percona Server figures beside the run.
#[test]
fn builtin_shootout_on_mysql_sets_perconas_published_figures_beside_it() {
    let Some((_tmp, out)) = builtin_out() else {
        return;
    };
    let m56 = "mysql-5.6";
    let (report, dir) = run_builtin(
        "shootout",
        &out,
        &[m56],
        &[
            "--scale",
            "full",
            "--set",
            "dataset.rows=20000",
            "--set",
            "step.range-queries.clients=10",
            "--set",
            "step.range-queries.per_client=10",
            "--set",
            "step.slap-count.clients=20",
            "--set",
            "step.slap-content.clients=20",
        ],
    );
    let summary = read_json(&dir.join("summary.json"));
    common::assert_shootout_ok(&summary, m56);
    let rq = read_json(&dir.join(m56).join("range-queries.json"));
    assert_eq!(rq["server_counters"]["Com_stmt_execute"], 100, "{rq:#}");
    for s in ["slap-count", "slap-content"] {
        let j = read_json(&dir.join(m56).join(format!("{s}.json")));
        assert_eq!(j["server_counters"]["Com_select"], 20, "{s}");
    }
    assert_eq!(
        figure(step(&summary, m56, "update"), "rows_changed"),
        Some(11100.0)
    );
    // the server's own words, as MySQL sent them (length-encoded, read as such)
    let upd = read_json(&dir.join(m56).join("update.json"));
    assert_eq!(
        upd["details"]["info"], "Rows matched: 11100  Changed: 11100  Warnings: 0",
        "{upd:#}"
    );
    // the original's MySQL side, published: a column each, beside the run's
    for col in [
        "seed-percona-innodb (published)",
        "seed-percona-tokudb (published)",
    ] {
        assert!(report.contains(col), "{col} in:\n{report}");
    }
    // the load's seconds: MariaDB's InnoDB and TokuDB, then Percona Server's
    assert!(
        report.lines().any(|l| l.contains("seconds")
            && l.contains("78.0 s")
            && l.contains("36.8 s")
            && l.contains("70.8 s")
            && l.contains("33.4 s")),
        "the load's published seconds in:\n{report}"
    );
    assert!(
        report.contains("80,952"),
        "Percona's rows changed in:\n{report}"
    );
    nothing_left(&out);
}

/// The oltp study's three workloads: the prepared executions per event are sysbench's.
#[test]
fn builtin_oltp_on_mysql_executes_what_dbduel_counts() {
    let Some((_tmp, out)) = builtin_out() else {
        return;
    };
    let m56 = "mysql-5.6";
    let (_, dir) = run_builtin(
        "oltp",
        &out,
        &[m56],
        &[
            "-q",
            "--set",
            "dataset.tables=2",
            "--set",
            "dataset.rows=2000",
            "--set",
            "step.point-select.threads=1",
            "--set",
            "step.point-select.duration_s=1",
            "--set",
            "step.point-select.final_fraction=1.0",
            "--set",
            "step.read-only.threads=1",
            "--set",
            "step.read-only.duration_s=1",
            "--set",
            "step.read-only.final_fraction=1.0",
            "--set",
            "step.read-write.threads=1",
            "--set",
            "step.read-write.duration_s=1",
            "--set",
            "step.read-write.final_fraction=1.0",
        ],
    );
    for (st, per_event) in [("point-select", 1), ("read-only", 15), ("read-write", 19)] {
        let j = read_json(&dir.join(m56).join(format!("{st}.json")));
        let events = level_sum(&j, "events");
        assert!(events > 10, "{st}: {events} events");
        assert_eq!(
            j["server_counters"]["Com_stmt_execute"].as_u64(),
            Some(per_event * events),
            "{st}"
        );
    }
    nothing_left(&out);
}

/// TPC-C with its schema changes under load, consistent afterwards.
#[test]
fn builtin_tpcc_on_mysql_commits_as_counted_and_stays_consistent() {
    let Some((_tmp, out)) = builtin_out() else {
        return;
    };
    let m56 = "mysql-5.6";
    let (_, dir) = run_builtin(
        "tpcc",
        &out,
        &[m56],
        &[
            "-q",
            "--scale",
            "functional",
            "--set",
            "step.tpcc.threads=[2]",
            "--set",
            "step.tpcc.duration_s=3",
        ],
    );
    let summary = read_json(&dir.join("summary.json"));
    let j = read_json(&dir.join(m56).join("tpcc.json"));
    assert_eq!(
        j["server_counters"]["Com_commit"].as_u64(),
        Some(level_sum(&j, "commits_all"))
    );
    let hot = read_json(&dir.join(m56).join("hot-ddl.json"));
    for r in hot["details"]["ddl"].as_array().expect("ddl runs") {
        assert!(r["error"].is_null(), "{r:#}");
    }
    let check = step(&summary, m56, "consistency");
    assert_eq!(figure(check, "conditions_passed"), Some(11.0), "{check:#}");
    nothing_left(&out);
}

/// The storage tiers, each device with a small cache, committing as the original's MySQL.
#[test]
fn builtin_storage_tiers_on_mysql_commits_as_the_original() {
    let Some((_tmp, out)) = builtin_out() else {
        return;
    };
    // each device, its cache small (one override written as is, one quoted)
    let tiers = ["mysql-5.6-ssd", "mysql-5.6-hdd"];
    let (_, dir) = run_builtin(
        "storage-tiers",
        &out,
        &tiers,
        &[
            "-q",
            "--scale",
            "functional",
            "--set",
            "contender.mysql-5.6-ssd.buffer_pool_mb=64",
            "--set",
            "contender.\"mysql-5.6-hdd\".buffer_pool_mb=64",
        ],
    );
    let summary = read_json(&dir.join("summary.json"));
    for c in tiers {
        for s in [
            "load",
            "footprint",
            "cpu-bound",
            "io-bound",
            "insert-preload",
            "insert-full",
        ] {
            assert_eq!(step(&summary, c, s)["status"], "ok", "{c}/{s}");
        }
        // a transaction is three prepared SELECTs; an insert one INSERT
        for s in ["cpu-bound", "io-bound"] {
            let j = read_json(&dir.join(c).join(format!("{s}.json")));
            assert_eq!(
                j["server_counters"]["Com_stmt_execute"].as_u64(),
                Some(3 * level_sum(&j, "transactions")),
                "{c}/{s}"
            );
        }
        let j = read_json(&dir.join(c).join("insert-full.json"));
        assert_eq!(
            j["server_counters"]["Com_insert"].as_u64(),
            Some(level_sum(&j, "transactions")),
            "{c}"
        );
    }
    // each server commits as the original's MySQL did: no flush at commit, the binlog on
    let m = read_json(&dir.join("manifest.json"));
    for c in m["contenders"].as_array().expect("contenders") {
        let e = &c["effective"];
        assert_eq!(e["innodb_flush_log_at_trx_commit"], "0", "{e:#}");
        assert_eq!(e["log_bin"], "ON", "{e:#}");
        assert_eq!(e["sync_binlog"], "0", "{e:#}");
    }
    nothing_left(&out);
}

/// Point lookups on 5.6 and 8.0, each lookup an execution the server counts.
#[test]
fn builtin_point_lookups_on_mysql_are_counted_by_the_server() {
    let Some((_tmp, out)) = builtin_out() else {
        return;
    };
    let m56 = "mysql-5.6";
    let lookups = [m56, "mysql-8.0"];
    let mut sets = vec!["-q", "--set", "dataset.rows=20000"];
    for s in [
        "step.small-random.threads=[2]",
        "step.small-random.duration_s=2",
        "step.small-random.warmup_s=0",
        "step.full-random.threads=[2]",
        "step.full-random.duration_s=2",
        "step.full-random.warmup_s=0",
        "step.each-once.threads=[2]",
        "step.each-once.duration_s=2",
        "step.each-once.warmup_s=0",
    ] {
        sets.extend(["--set", s]);
    }
    let (_, dir) = run_builtin("point-lookups", &out, &lookups, &sets);
    for c in lookups {
        for s in ["small-random", "full-random", "each-once"] {
            let j = read_json(&dir.join(c).join(format!("{s}.json")));
            let ours = level_sum(&j, "lookups");
            let server = j["server_counters"]["Com_stmt_execute"].as_u64().unwrap();
            assert!(
                ours > 100 && server >= ours && server <= ours + 8,
                "{c}/{s}: {ours} vs {server}"
            );
        }
    }
    nothing_left(&out);
}

/// `dbduel sandbox up`'s target and password file from its standard output.
fn sandbox_up_target(stdout: &str) -> (u16, PathBuf) {
    let (target, file) = stdout
        .trim()
        .strip_prefix("target = \"")
        .and_then(|t| t.split_once("\"\npassword_file = \""))
        .and_then(|(t, f)| Some((t, f.strip_suffix('"')?)))
        .unwrap_or_else(|| panic!("{stdout}"));
    let port = target
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{target}"));
    (port, PathBuf::from(file))
}

/// `dbduel sandbox up mysql --version 5.7` starts MySQL 5.7 (not the newest installed, 8.0,
/// which `mysql` alone starts), whose root account takes the sandbox's password file over
/// `mysql_native_password`; `sandbox down` removes it.
#[test]
fn sandbox_up_starts_the_version_asked_for() {
    if !have_mysql() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("res");
    let out_s = out.to_str().unwrap();
    for (name, version, expect) in [("m57", Some("5.7"), "5.7."), ("newest", None, "8.0.")] {
        let mut args = vec!["sandbox", "up", "mysql", "--name", name, "--out", out_s];
        if let Some(v) = version {
            args.extend(["--version", v]);
        }
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert!(stderr.contains(&format!("mysql {expect}")), "{stderr}");
        let (port, file) = sandbox_up_target(&stdout);
        let password = std::fs::read_to_string(&file).expect("the password file");
        let opts = mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some("root"))
            .pass(Some(password.trim().to_string()))
            .prefer_socket(false);
        let mut c = mysql::Conn::new(opts).expect("root with the password file");
        let (v, plugin): (String, String) = c
            .query_first(
                "SELECT @@version, plugin FROM mysql.user \
                 WHERE User = 'root' AND Host = '127.0.0.1'",
            )
            .unwrap()
            .unwrap();
        assert!(v.starts_with(expect), "{name}: {v}");
        assert_eq!(plugin, "mysql_native_password", "{name}");
    }
    let (code, down, stderr) = run(&["sandbox", "down", "--all", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}");
    assert!(down.contains("removed mysql m57"), "{down}");
    assert!(sandbox::find(&out).is_empty());
    let leftover = common::processes_mentioning(out_s);
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// Needs no server: `sandbox up` of a version not installed (or not one dbduel runs) fails
/// before it makes anything (exit 3), naming what is installed and the install script, for
/// every family; a version that is not one (`abc`) is bad input (exit 2).
#[test]
fn sandbox_up_of_an_unknown_version_lists_the_installed_ones() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("res");
    let out_s = out.to_str().unwrap();
    for (family, title, version) in [
        ("mysql", "MySQL", "9.9"),
        ("mariadb", "MariaDB", "10.2"),
        ("postgres", "PostgreSQL", "9"),
    ] {
        let (code, stdout, stderr) = run(&[
            "sandbox",
            "up",
            family,
            "--version",
            version,
            "--out",
            out_s,
        ]);
        assert_eq!(code, 3, "{family}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!(
                "{title} {version} is not installed here; installed: "
            )),
            "{stderr}"
        );
        assert!(stderr.contains("scripts/install-servers"), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
    let (code, _, stderr) = run(&["sandbox", "up", "mysql", "--version", "abc", "--out", out_s]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("must be a server version"), "{stderr}");
    assert!(!out.exists(), "nothing made");
}

/// A basedir whose `mysqld` cannot start — a copy of 8.0's without the libssl it ships beside
/// it — fails before anything runs (exit 3, no run directory) with the loader's own words.
#[test]
fn a_basedir_whose_server_cannot_load_its_libraries_fails_before_anything_runs() {
    if !have_mysql() {
        return;
    }
    let cached = versions::row("8.0")
        .and_then(server_dir)
        .expect("8.0 installed");
    let tmp = tempfile::tempdir().expect("tmp");
    let basedir = tmp.path().join("mysql-8.0-no-libs");
    std::fs::create_dir_all(basedir.join("bin")).expect("mkdir");
    std::fs::copy(
        cached.join("bin").join("mysqld"),
        basedir.join("bin").join("mysqld"),
    )
    .expect("copy mysqld");
    let choice = format!("basedir = {:?}", basedir.display().to_string());
    let study = tiny_study(tmp.path(), &choice, "SELECT 1");
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run_study(&study, &out);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("cannot start")
            && stderr.contains("error while loading shared libraries: libssl.so.1.0.0"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran: {stdout}");
}

/// A basedir whose `mysqld` exits with a loader's message (a script standing in for a binary
/// whose library is missing) fails the same way, with those words.
#[test]
fn a_basedir_whose_server_exits_with_a_loader_message_fails_before_anything_runs() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let basedir = tmp.path().join("mysql-broken");
    std::fs::create_dir_all(basedir.join("bin")).expect("mkdir");
    let mysqld = basedir.join("bin").join("mysqld");
    std::fs::write(
        &mysqld,
        "#!/bin/sh\necho \"$0: error while loading shared libraries: libaio.so.1: \
         cannot open shared object file: No such file or directory\" >&2\nexit 127\n",
    )
    .expect("write mysqld");
    std::fs::set_permissions(&mysqld, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let choice = format!("basedir = {:?}", basedir.display().to_string());
    let study = tiny_study(tmp.path(), &choice, "SELECT 1");
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run_study(&study, &out);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("libaio.so.1: cannot open shared object file"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran: {stdout}");
}

/// Someone else's MySQL 8.0 (a sandbox this test starts, with a password account and a
/// database of its owner's) is attached as a MariaDB target is: `engine = "mysql"` with its
/// `target` runs the steps it can (the cold count, which needs a restart, is skipped), the
/// version is read from the server into the heading, the password is in no result file, a
/// database dbduel did not create is refused and left as it was, and a target takes neither
/// a `version` nor the options of a private server.
#[test]
fn an_external_mysql_target_is_used_but_never_harmed() {
    if !have_mysql() {
        return;
    }
    let v = versions::row("8.0").expect("8.0");
    let root = tempfile::tempdir().expect("tmp");
    let base = MariadbRecipe {
        settings: [("innodb_buffer_pool_size".to_string(), "32M".to_string())].into(),
        server_dir: server_dir(v),
        ..MariadbRecipe::default()
    };
    let mut theirs = Sandbox::create(
        Box::new(MysqlRecipe::new(v, &base)),
        "theirs",
        &root.path().join("theirs"),
    )
    .expect("create");
    theirs.start().expect("start");
    let port = theirs.layout.port;
    let mut admin = common::mysql_conn(port, None);
    for sql in [
        "CREATE USER bench@'127.0.0.1' IDENTIFIED WITH mysql_native_password BY 's3cret-pw'",
        "GRANT ALL ON *.* TO bench@'127.0.0.1'",
        "CREATE DATABASE precious",
        "CREATE TABLE precious.user_logs (id INT PRIMARY KEY)",
        "INSERT INTO precious.user_logs VALUES (1), (2), (3)",
    ] {
        admin.query_drop(sql).unwrap();
    }
    let out = root.path().join("out");
    let out_s = out.to_str().unwrap();
    let study = |target_line: &str, engine_line: &str| {
        let p = root.path().join("target.toml");
        let text = common::fill(
            include_str!("studies/mariadb_external_target.toml"),
            &[("target_line", target_line), ("engine_line", engine_line)],
        )
        .replace("engine = \"mariadb\"", "engine = \"mysql\"");
        std::fs::write(&p, text).unwrap();
        p
    };
    let path = study(
        &format!(
            "target = \"mysql://bench@127.0.0.1:{port}\"\npassword_env = \"DBDUEL_TEST_PW\"\nwide_account = true"
        ),
        "storage_engine = \"innodb\"",
    );
    let o = common::bin()
        .args(["run", path.to_str().unwrap(), "--out", out_s])
        .env("DBDUEL_TEST_PW", "s3cret-pw")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("theirs: mysql 8.0.15"), "{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(step(&summary, "theirs", "load")["rows"], 2000);
    assert_eq!(step(&summary, "theirs", "queries")["status"], "ok");
    let cold = step(&summary, "theirs", "count-cold");
    assert_eq!(cold["status"], "skipped", "{cold:#}");
    for f in dbduel::oscache::files_under(&dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_string();
        assert!(!text.contains("s3cret-pw"), "password in {}", f.display());
    }
    let marked: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM dbduel_ext.dbduel_marker")
        .unwrap();
    assert_eq!(marked, Some(1));

    // The lean wire client speaks the account's mysql_native_password, 8.0's default
    // caching_sha2_password (full authentication under the server's RSA key the first time,
    // fast authentication once the server has cached it) and sha256_password.
    use dbduel::engine::Session;
    use dbduel::engines::wire::mysql::{ConnectError, WireSession};
    for sql in [
        "CREATE USER sha@'127.0.0.1' IDENTIFIED WITH caching_sha2_password BY 'sha-pw'",
        "CREATE USER sha256@'127.0.0.1' IDENTIFIED WITH sha256_password BY 'sha256-pw'",
        "GRANT SELECT ON dbduel_ext.* TO sha@'127.0.0.1'",
        "GRANT SELECT ON dbduel_ext.* TO sha256@'127.0.0.1'",
    ] {
        admin.query_drop(sql).unwrap();
    }
    let wire = |user: &str, pw: &str| {
        let t = dbduel::engine::target::Target {
            scheme: "mysql".into(),
            user: user.into(),
            host: "127.0.0.1".into(),
            port,
            database: None,
            password: Some(dbduel::engine::target::Secret::new(pw)),
            restart_command: None,
            allow_cleartext: false,
            tls: Default::default(),
        };
        WireSession::connect(&t, "dbduel_ext", 30)
    };
    assert!(
        wire("bench", "s3cret-pw").is_ok(),
        "native: the lean client"
    );
    for (user, pw) in [
        ("sha", "sha-pw"),
        ("sha", "sha-pw"),
        ("sha256", "sha256-pw"),
    ] {
        let mut s = wire(user, pw).unwrap_or_else(|_| panic!("{user} logs in on the lean client"));
        assert_eq!(
            s.query_i64("SELECT COUNT(*) FROM dbduel_marker").unwrap(),
            1
        );
    }
    for user in ["sha", "sha256"] {
        match wire(user, "wrong") {
            Err(ConnectError::Failed(e)) => assert!(e.message.contains("1045"), "{}", e.message),
            _ => panic!("{user}: a wrong password must fail with access denied"),
        }
    }

    // A database dbduel did not create is refused and left exactly as it was.
    let path = study(
        &format!(
            "target = \"{}\"",
            common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}/precious"), port)
        ),
        "storage_engine = \"innodb\"",
    );
    let (code, _, stderr) = run(&[
        "run",
        path.to_str().unwrap(),
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

    // A target runs its own server: no version, no private server's options (exit 2).
    let target = format!("target = \"mysql://root@127.0.0.1:{port}\"");
    let path = study(&format!("{target}\nversion = \"8.0\""), "");
    let (code, _, stderr) = run(&["run", path.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("with a target the server runs its own"),
        "{stderr}"
    );
    let path = study(&target, "buffer_pool_mb = 64");
    let (code, _, stderr) = run(&["run", path.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("buffer_pool_mb configures a private server"),
        "{stderr}"
    );
    drop(admin);
    theirs.destroy().expect("destroy");
    let leftover = common::processes_mentioning(out_s);
    assert!(leftover.is_empty(), "{leftover:?}");
}
