//! End to end on the MongoDB engine against a real MongoDB-wire server: a FerretDB sandbox
//! (built by scripts/install-ferretdb) that dbduel provisions, loads, counts, measures and
//! removes; SQL steps skipped on it with the reason; the server's own counters agree with
//! what dbduel did; an unreachable server and a database dbduel did not make are refused with
//! clear errors. With DBDUEL_REQUIRE_SERVERS=1 (CI) a missing FerretDB fails.

mod common;

use common::{have_server, processes_mentioning, read_json, run, run_dir, step};
use dbduel::engine::{LoadRequest, OpenCtx};
use dbduel::engines::EngineConfig;
use std::path::Path;

fn have_ferretdb() -> bool {
    have_server(
        "ferretdb",
        dbduel::engines::mongodb::ferretdb::binary().is_some(),
    )
}

/// Documents through every step kind that can take them; the tests below change its contender.
const STUDY: &str = include_str!("studies/mongodb_documents.toml");

#[test]
fn documents_are_loaded_counted_and_measured_and_sql_steps_are_skipped() {
    if !have_ferretdb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("mongo.toml");
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
    let load = step(&summary, "ferret", "load");
    assert_eq!(load["status"], "ok", "{load:#}");
    assert_eq!(load["rows"].as_u64(), Some(6000), "{load:#}");
    let details = read_json(&dir.join("ferret/load.json"))["details"].clone();
    assert_eq!(details["rows_counted"].as_u64(), Some(6000), "{details:#}");
    assert!(
        details["method"]
            .as_str()
            .is_some_and(|m| m.contains("insert_many, unordered, 1000")),
        "{details:#}"
    );
    let fp = step(&summary, "ferret", "footprint");
    assert_eq!(fp["status"], "ok", "{fp:#}");
    let scan = step(&summary, "ferret", "scan");
    assert_eq!(scan["status"], "skipped", "{scan:#}");
    assert!(
        scan["note"]
            .as_str()
            .is_some_and(|n| n.contains("speaks no SQL")),
        "{scan:#}"
    );
    // Whatever answered is named for what it is, never as MongoDB.
    let manifest = read_json(&dir.join("manifest.json")).to_string();
    assert!(manifest.contains("not MongoDB"), "{manifest}");
    assert!(processes_mentioning(dir.to_str().expect("utf-8")).is_empty());
}

fn open(dir: &Path, target: Option<&str>) -> Result<Box<dyn dbduel::engine::Engine>, String> {
    let spec = target.map(|url| dbduel::engine::target::TargetSpec {
        url,
        password_env: None,
        password_file: None,
        restart_command: None,
        read_password: true,
    });
    let config = EngineConfig::decode(
        "mongodb",
        &toml::Table::new(),
        spec.as_ref(),
        &Default::default(),
    )
    .map_err(|e| format!("{e:?}"))?;
    config.preflight().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).expect("dir");
    config
        .open(&OpenCtx {
            contender: "docs",
            dir,
            database: "dbduel_docs",
            max_clients: 4,
        })
        .map_err(|e| e.to_string())
}

#[test]
fn lookups_hit_and_miss_and_the_servers_counters_agree() {
    if !have_ferretdb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let engine = open(&root.path().join("a"), None).expect("a FerretDB sandbox");
    let docs = engine.documents().expect("a document engine");
    let table = dbduel::dataset::Generator::Sbtest
        .tables("sbtest", 1, 500, 42)
        .remove(0);
    let file = root.path().join("rows.tsv");
    let mut text = String::new();
    for id in 1..=500 {
        text.push_str(&format!("{id}\t{}\tc{id}\tpad\n", id * 7));
    }
    std::fs::write(&file, text).expect("rows");
    docs.recreate(&table.name).expect("collection");
    let before = engine.counters().expect("counters").expect("opcounters");
    let loaded = docs
        .bulk_load(&LoadRequest {
            table: &table,
            file: &file,
            batch_rows: 100,
        })
        .expect("load");
    assert_eq!(loaded.rows, 500);
    assert_eq!(docs.count(&table.name).expect("count"), 500);
    let mut s = docs.session().expect("session");
    assert_eq!(s.find_by_id(&table.name, 42).expect("hit"), 1);
    assert_eq!(
        s.find_by_id(&table.name, 501)
            .expect("a miss is not an error"),
        0
    );
    let after = engine.counters().expect("counters").expect("opcounters");
    let delta = |k: &str| after[k] - before.get(k).copied().unwrap_or(0);
    // The server counted one insert command (500 documents in one batch) and two finds.
    assert_eq!(delta("commands.insert"), 1, "{before:?} → {after:?}");
    assert_eq!(delta("commands.find"), 2, "{before:?} → {after:?}");
    drop(s);

    // A second contender on the same server, given as a target: its database is claimed
    // with a marker; a database without one is refused.
    // It listens on its private socket only, named in a target as MongoDB's URLs do.
    let socket = dbduel::sandbox::find(root.path())
        .first()
        .map(|f| f.manifest.socket.display().to_string().replace('/', "%2F"))
        .expect("the sandbox");
    let other = open(
        &root.path().join("b"),
        Some(&format!("mongodb://{socket}/dbduel_docs")),
    )
    .expect("a marked database is dbduel's");
    other.finish(false).expect("let go");
    let theirs = mongodb::sync::Client::with_uri_str(format!("mongodb://{socket}"))
        .expect("a client of their own");
    theirs
        .database("theirs")
        .collection::<mongodb::bson::Document>("orders")
        .insert_one(mongodb::bson::doc! { "_id": 1 })
        .run()
        .expect("their data");
    let err = open(
        &root.path().join("c"),
        Some(&format!("mongodb://{socket}/theirs")),
    )
    .err()
    .expect("theirs is not dbduel's");
    assert!(err.contains("was not created by dbduel"), "{err}");
    let count = theirs
        .database("theirs")
        .collection::<mongodb::bson::Document>("orders")
        .count_documents(mongodb::bson::doc! {})
        .run()
        .expect("still there");
    assert_eq!(count, 1);
    let err = open(
        &root.path().join("d"),
        Some(&format!("mongodb://{socket}/admin")),
    )
    .err()
    .expect("admin is the server's");
    assert!(err.contains("is the server's own"), "{err}");
    engine.finish(false).expect("removed");
    assert!(processes_mentioning(root.path().to_str().expect("utf-8")).is_empty());
    assert!(dbduel::sandbox::find(root.path()).is_empty());
}

#[test]
fn an_unreachable_server_is_a_clear_failure() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("gone.toml");
    std::fs::write(
        &study,
        STUDY.replace(
            "engine = \"mongodb\"\noptions = { batch_docs = 1000 }",
            &format!(
                "engine = \"mongodb\"\ntarget = \"mongodb://127.0.0.1:{port}\"\noptions = {{ connect_timeout_s = 1 }}"
            ),
        ),
    )
    .expect("study");
    let (code, _, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "-q",
        "--out",
        root.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("ferret") && stderr.contains("cannot connect"),
        "{stderr}"
    );
    // A target that is not a MongoDB URI names the fix.
    std::fs::write(
        &study,
        STUDY.replace(
            "engine = \"mongodb\"",
            "engine = \"mongodb\"\ntarget = \"mysql://root@127.0.0.1:3306\"",
        ),
    )
    .expect("study");
    let (code, _, stderr) = run(&["run", study.to_str().expect("utf-8"), "-q"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("target must look like mongodb://[USER@]HOST"),
        "{stderr}"
    );
}

/// A MongoDB-wire server that wants a password (FerretDB with its own SCRAM authentication
/// and one user): a wrong password stops the run before anything runs, exit 1, with the
/// server's refusal in words and what to check.
///
/// FerretDB 1.24's authentication is experimental: the Rust driver's SCRAM conversation with
/// it does not complete even with the right password ("expected SCRAM authentication to have
/// completed"), so only the refusal is tested here.
#[test]
fn a_wrong_password_is_refused_with_the_servers_words() {
    if !have_ferretdb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let data = root.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    let server =
        std::process::Command::new(dbduel::engines::mongodb::ferretdb::binary().expect("ferretdb"))
            .args([
                format!("--listen-addr=127.0.0.1:{port}"),
                "--handler=sqlite".into(),
                format!("--sqlite-url=file:{}/", data.display()),
                format!("--state-dir={}", root.path().display()),
                "--telemetry=disable".into(),
                "--debug-addr=-".into(),
                "--log-level=warn".into(),
                "--test-enable-new-auth".into(),
                "--setup-database=admin".into(),
                "--setup-username=bench".into(),
                "--setup-password=the-right-one".into(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("ferretdb starts");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Kill(server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "ferretdb never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let study = root.path().join("auth.toml");
    let secret = root.path().join("password");
    std::fs::write(&secret, "not-the-one\n").expect("password file");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    std::fs::write(
        &study,
        STUDY.replace(
            "engine = \"mongodb\"\noptions = { batch_docs = 1000 }",
            &format!(
                "engine = \"mongodb\"\ntarget = \"mongodb://bench@127.0.0.1:{port}\"\npassword_file = \"{}\"",
                secret.display()
            ),
        ),
    )
    .expect("study");
    let out = root.path().join("out");
    let (code, _, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "-q",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("contender `ferret` cannot run here")
            && stderr.contains(
                "the server refused the credentials (SCRAM failure: Authentication failed.)"
            )
            && stderr.contains("password_env or password_file"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran: {stderr}");
}
