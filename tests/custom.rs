//! "Your own schema and data": a study of the user's own tables — a `sql` step for the schema,
//! a `load` of the user's CSV, a user script of writes and a `queries` step that writes — run
//! on SQLite, MariaDB and PostgreSQL (and MySQL 8.0 when the server cache has it) leaves the
//! same table contents on each; and `dbduel init`
//! writes a study that checks and runs on SQLite.

mod common;

use common::{read_json, run, run_dir};
use std::path::{Path, PathBuf};

const SCHEMA: &str = "-- the user's own tables, in SQL every engine takes
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY,
  owner VARCHAR(20) NOT NULL,
  balance INTEGER NOT NULL,
  note VARCHAR(40)
);
CREATE TABLE history (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL, delta INTEGER NOT NULL);
INSERT INTO history VALUES (1000, 1, 0);
CREATE TABLE a_notes (account_id INTEGER NOT NULL, note VARCHAR(20),
  FOREIGN KEY (account_id) REFERENCES accounts (id));
";

/// Rows of a table whose name sorts before its parent's: loaded first, a server checking
/// the foreign key would refuse them.
const NOTES: &str = "account_id,note\n1,x\n5,y\n";

/// A header, a quoted field with the delimiter in it, a doubled quote, and empty fields
/// (NULL by the default marker).
const ACCOUNTS: &str = "id,owner,balance,note\n1,ada,100,\"first, with a comma\"\n2,linus,250,\n3,grace,0,\"say \"\"hi\"\"\"\n4,edsger,75,\n5,barbara,310,plain\n";

/// Writes with `\set` random values: deterministic with one client and a fixed seed.
const TRANSFER: &str = "\\set n :n + 1
\\set aid random(1, 5)
\\set delta random(-50, 50)
BEGIN;
UPDATE accounts SET balance = balance + :delta WHERE id = :aid;
INSERT INTO history (id, account_id, delta) VALUES (:n, :aid, :delta);
COMMIT;
";

const STUDY: &str = r#"[study]
name = "custom-same"
description = "the same user script on every engine"

{contenders}

[[step]]
name = "schema"
kind = "sql"
file = "schema.sql"

[[step]]
name = "data"
kind = "load"
files = { accounts = "data/accounts.csv", a_notes = "data/a_notes.csv" }
header = true
parallel = 1

[[step]]
name = "transfers"
kind = "script"
scripts = ["transfer.sql"]
clients = 1
per_client = 40
seed = 7
vars = { n = 0 }

[[step]]
name = "writes"
kind = "queries"
clients = 1
per_client = 2
queries = ["UPDATE accounts SET note = 'touched' WHERE id = 3", "DELETE FROM history WHERE id = 1000"]
"#;

/// The study's files in `dir`.
fn write_files(dir: &Path, contenders: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("data")).expect("dir");
    std::fs::write(dir.join("schema.sql"), SCHEMA).expect("schema");
    std::fs::write(dir.join("data/accounts.csv"), ACCOUNTS).expect("csv");
    std::fs::write(dir.join("data/a_notes.csv"), NOTES).expect("csv");
    std::fs::write(dir.join("transfer.sql"), TRANSFER).expect("script");
    let study = dir.join("study.toml");
    std::fs::write(&study, STUDY.replace("{contenders}", contenders)).expect("study");
    study
}

/// Each table's rows, ordered, each row its columns joined by `|` with NULL as `NULL`.
const READ_BACK: [&str; 2] = [
    "SELECT concat_ws('|', id, owner, balance, COALESCE(note, 'NULL')) FROM accounts ORDER BY id",
    "SELECT concat_ws('|', id, account_id, delta) FROM history ORDER BY id",
];

/// `dbduel sandbox up ENGINE --name ENGINE [--version V]` under `out`: the target's URL and
/// its password file.
fn sandbox_up(out: &Path, engine: &str, version: Option<&str>) -> (String, PathBuf) {
    let mut args = vec![
        "sandbox",
        "up",
        engine,
        "--name",
        engine,
        "--out",
        out.to_str().expect("utf-8"),
    ];
    if let Some(v) = version {
        args.extend(["--version", v]);
    }
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (target, file) = stdout
        .trim()
        .strip_prefix("target = \"")
        .and_then(|t| t.split_once("\"\npassword_file = \""))
        .and_then(|(t, f)| Some((t.to_string(), PathBuf::from(f.strip_suffix('"')?))))
        .unwrap_or_else(|| panic!("{stdout}"));
    (target, file)
}

/// Stops every sandbox under its directory however the test ends.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = run(&[
            "sandbox",
            "down",
            "--all",
            "--out",
            self.0.to_str().unwrap_or(""),
        ]);
    }
}

fn port_of(target: &str) -> u16 {
    target
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("{target}"))
}

fn password(file: &Path) -> String {
    std::fs::read_to_string(file)
        .expect("password file")
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

fn sqlite_rows(db: &Path) -> Vec<Vec<String>> {
    let c = rusqlite::Connection::open(db).expect("kept database");
    READ_BACK
        .iter()
        .map(|sql| {
            let mut st = c.prepare(sql).expect("prepare");
            st.query_map([], |r| r.get::<_, String>(0))
                .expect("query")
                .map(|r| r.expect("row"))
                .collect()
        })
        .collect()
}

fn mariadb_rows(target: &str, file: &Path, db: &str) -> Vec<Vec<String>> {
    use mysql::prelude::Queryable;
    let user = target
        .strip_prefix("mysql://")
        .and_then(|t| t.split_once('@'))
        .map_or("root", |(u, _)| u);
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port_of(target))
        .user(Some(user))
        .pass(Some(password(file)))
        .prefer_socket(false)
        .db_name(Some(db));
    let mut c = mysql::Conn::new(opts).expect("connect to MariaDB");
    READ_BACK
        .iter()
        .map(|sql| c.query::<String, _>(*sql).expect("read back"))
        .collect()
}

fn postgres_rows(target: &str, file: &Path, db: &str) -> Vec<Vec<String>> {
    let user = target
        .strip_prefix("postgres://")
        .and_then(|t| t.split_once('@'))
        .map_or("dbduel", |(u, _)| u);
    let mut c = postgres::Config::new()
        .host("127.0.0.1")
        .port(port_of(target))
        .user(user)
        .password(password(file))
        .dbname(db)
        .connect(postgres::NoTls)
        .expect("connect to PostgreSQL");
    READ_BACK
        .iter()
        .map(|sql| {
            c.query(*sql, &[])
                .expect("read back")
                .iter()
                .map(|r| r.get::<_, String>(0))
                .collect()
        })
        .collect()
}

#[test]
fn the_same_user_script_leaves_the_same_tables_on_every_engine() {
    let mariadb = common::have_mariadb();
    let postgres = common::have_postgres();
    let root = tempfile::tempdir().expect("tmp");
    let boxes = root.path().join("boxes");
    let _down = Down(boxes.clone());
    let mut contenders = String::from("[[contender]]\nname = \"lite\"\nengine = \"sqlite\"\n");
    // MySQL 8.0 too when the server cache has it (it is cheap: one more sandbox).
    let mysql80 = {
        let choice = dbduel::engines::versions::BinaryChoice {
            version: Some("8.0".into()),
            basedir: None,
        };
        std::env::var(common::SKIP_SERVERS).as_deref() != Ok("1")
            && dbduel::engines::mysql::versions::BINARIES
                .resolve(&choice)
                .is_ok_and(|r| r.dir.is_some())
    };
    let mut servers = Vec::new();
    for (on, engine, version) in [
        (mariadb, "mariadb", None),
        (postgres, "postgres", None),
        (mysql80, "mysql", Some("8.0")),
    ] {
        if !on {
            continue;
        }
        let (target, file) = sandbox_up(&boxes, engine, version);
        contenders.push_str(&format!(
            // The sandboxes' superusers: wide accounts, used by choice.
            "[[contender]]\nname = \"{engine}\"\nengine = \"{engine}\"\ntarget = \"{target}\"\npassword_file = \"{}\"\nwide_account = true\n",
            file.display()
        ));
        servers.push((engine, target, file));
    }
    let study = write_files(&root.path().join("mine"), &contenders);
    let out = root.path().join("res");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--keep",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["dataset"]["generator"], "none");
    let files = manifest["dataset"]["files"].as_array().expect("files");
    let accounts = files
        .iter()
        .find(|f| f["table"] == "accounts")
        .expect("accounts");
    assert_eq!(accounts["rows"], 5);
    assert_eq!(accounts["bytes"], ACCOUNTS.len() as u64);
    // Every engine loaded the parent before the child its foreign key names.
    let names = std::iter::once("lite").chain(servers.iter().map(|(e, _, _)| *e));
    for name in names {
        let load = read_json(&dir.join(name).join("data.json"));
        assert_eq!(
            load["details"]["order"],
            serde_json::json!([["accounts"], ["a_notes"]]),
            "{name}: {load:#}"
        );
    }

    let want = sqlite_rows(&dir.join("work/lite/db.sqlite"));
    // The load kept the quoted comma and the NULLs; the queries step's writes ran once
    // each (row 3's note, history row 1000 gone); the script's 40 runs each wrote a history
    // row, and the balances moved by the deltas it recorded.
    let notes: Vec<&str> = want[0]
        .iter()
        .map(|r| r.rsplit('|').next().unwrap_or(""))
        .collect();
    assert_eq!(
        notes,
        ["first, with a comma", "NULL", "touched", "NULL", "plain"],
        "{want:?}"
    );
    assert_eq!(want[1].len(), 40, "{:?}", want[1]);
    assert!(want[1][0].starts_with("1|"), "{:?}", want[1]);
    let field = |r: &String, i: usize| -> i64 {
        r.split('|')
            .nth(i)
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("{r}"))
    };
    let total: i64 = want[0].iter().map(|r| field(r, 2)).sum();
    let deltas: i64 = want[1].iter().map(|r| field(r, 2)).sum();
    assert_eq!(total, 735 + deltas, "{want:?}");
    assert!(want[1].iter().any(|r| field(r, 2) != 0), "{want:?}");

    let db = dbduel::engine::database_name("custom-same");
    for (engine, target, file) in &servers {
        let got = match *engine {
            "mariadb" | "mysql" => mariadb_rows(target, file, &db),
            _ => postgres_rows(target, file, &db),
        };
        assert_eq!(got, want, "{engine} differs from SQLite");
    }
    eprintln!(
        "same contents on sqlite and {} server(s): {} accounts, {} history rows",
        servers.len(),
        want[0].len(),
        want[1].len()
    );
}

/// `dbduel init DIR` writes the `custom` template and its files; the study checks and runs
/// on SQLite as written (its sweep's levels shortened); a second init refuses, leaving the
/// files as they were; `dbduel studies show custom` prints the same study.
#[test]
fn init_writes_a_study_that_checks_and_runs_on_sqlite() {
    let root = tempfile::tempdir().expect("tmp");
    let dir = root.path().join("mine");
    let dir_s = dir.to_str().expect("utf-8");
    let (code, stdout, stderr) = run(&["init", dir_s]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let study = dir.join("study.toml");
    for f in [
        "study.toml",
        "schema.sql",
        "schema.mysql.sql",
        "schema.postgres.sql",
        "data/accounts.csv",
        "scripts/transfer.sql",
        "scripts/balance.sql",
    ] {
        assert!(dir.join(f).is_file(), "{f} not written");
    }
    let (code, shown, _) = run(&["studies", "show", "custom"]);
    assert_eq!(code, 0);
    assert_eq!(shown, std::fs::read_to_string(&study).expect("study"));

    std::fs::write(dir.join("schema.sql"), "-- mine\n").expect("edit");
    let (code, _, stderr) = run(&["init", dir_s]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("never overwrites"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("schema.sql")).expect("kept"),
        "-- mine\n"
    );
    let (code, _, stderr) = run(&[
        "init",
        root.path().join("t").to_str().unwrap(),
        "--target",
        "http://x",
    ]);
    assert_eq!(code, 2, "{stderr}");
    std::fs::remove_dir_all(&dir).expect("clean");
    assert_eq!(run(&["init", dir_s]).0, 0);

    let study_s = study.to_str().expect("utf-8");
    let (code, stdout, stderr) = run(&["run", study_s, "--check"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let out = root.path().join("res");
    let (code, stdout, stderr) = run(&[
        "run",
        study_s,
        "--out",
        out.to_str().expect("utf-8"),
        "--set",
        "step.transactions.duration_s=1",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let load = common::step(&summary, "sqlite", "data");
    assert_eq!(common::figure(load, "rows"), Some(200.0), "{load}");
    let script = common::step(&summary, "sqlite", "transactions");
    assert_eq!(script["status"], "ok", "{script}");
    let writes = common::step(&summary, "sqlite", "point-writes");
    assert_eq!(common::figure(writes, "ops"), Some(400.0), "{writes}");
}

/// A load of the user's own file into a table no step made fails with the table, the file
/// and what to do, in the step's note, and the run exits 1.
#[test]
fn a_file_for_a_table_that_does_not_exist_says_to_make_it_first() {
    let root = tempfile::tempdir().expect("tmp");
    std::fs::write(root.path().join("ghosts.csv"), "1,a\n2,b\n").expect("csv");
    let study = root.path().join("study.toml");
    std::fs::write(
        &study,
        "[study]\nname = \"no-table\"\ndescription = \"a file for a table never made\"\n\n\
         [[contender]]\nname = \"sqlite\"\nengine = \"sqlite\"\n\n\
         [[step]]\nname = \"data\"\nkind = \"load\"\nfiles = { ghosts = \"ghosts.csv\" }\n",
    )
    .expect("study");
    let (code, stdout, stderr) = common::run_study(&study, &root.path().join("out"));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let all = format!("{stdout}\n{stderr}");
    assert!(
        all.contains("table ghosts (for ")
            && all.contains("ghosts.csv) cannot be read on this contender")
            && all.contains("no such table")
            && all.contains("make it in a `sql` step before this one"),
        "{all}"
    );
}
