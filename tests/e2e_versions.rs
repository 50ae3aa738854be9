//! Server versions beside the system's: MariaDB 11.4 and PostgreSQL 17 and 18 from the server
//! cache (`scripts/install-servers`) run the shootout and oltp as contenders, the run says which
//! server ran and where it came from, and `compare` names a version change.

mod common;

use common::{read_json, run, run_dir, step};
use dbduel::sandbox;
use std::path::Path;

/// Both cached servers, or fail (DBDUEL_REQUIRE_SERVERS=1) / skip.
fn have_both() -> bool {
    common::have_cached("mariadb-11.4.5") & common::have_cached("postgres-17.5")
}

/// `dbduel run STUDY` on `contenders` with each `(contender, version)` set and `sets` more.
fn run_study(
    study: &str,
    out: &Path,
    contenders: &[&str],
    versions: &[(&str, &str)],
    sets: &[&str],
) -> (i32, String, String) {
    let out = out.to_str().unwrap().to_string();
    let mut args: Vec<String> = vec!["run".into(), study.into(), "--out".into(), out];
    for c in contenders {
        args.extend(["--contender".into(), (*c).into()]);
    }
    for (c, v) in versions {
        args.extend(["--set".into(), format!("contender.{c}.version=\"{v}\"")]);
    }
    for s in sets {
        args.extend(["--set".into(), (*s).into()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args)
}

/// The shootout at a tiny scale.
const TINY_SHOOTOUT: &[&str] = &[
    "dataset.rows=3000",
    "step.range-queries.clients=5",
    "step.slap-count.clients=5",
    "step.slap-content.clients=5",
];

/// The oltp study at a tiny scale: one thread, one or two seconds a step.
const TINY_OLTP: &[&str] = &[
    "dataset.tables=2",
    "dataset.rows=2000",
    "step.point-select.threads=1",
    "step.point-select.duration_s=1",
    "step.read-only.threads=1",
    "step.read-only.duration_s=1",
    "step.read-write.threads=1",
    "step.read-write.duration_s=2",
];

/// Each oltp step's figures over its whole level, so its events are every statement the
/// server counted.
const WHOLE_LEVELS: &[&str] = &[
    "step.point-select.final_fraction=1.0",
    "step.read-only.final_fraction=1.0",
    "step.read-write.final_fraction=1.0",
];

/// The contender's facts in the run's manifest.
fn facts(dir: &Path, name: &str) -> serde_json::Value {
    let m = read_json(&dir.join("manifest.json"));
    m["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name} in the manifest"))
        .clone()
}

/// The cached servers' contenders: each picks its version from the cache.
const CACHED: [&str; 2] = ["innodb", "postgres"];
const CACHED_VERSIONS: [(&str, &str); 2] = [("innodb", "11.4"), ("postgres", "17")];

/// Nothing of a run in `out` is left: no sandbox, no process.
fn nothing_left(out: &Path) {
    assert!(sandbox::find(out).is_empty(), "a sandbox was left behind");
    let left = common::processes_mentioning(out.to_str().unwrap());
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn cached_mariadb_and_postgres_run_the_shootout_and_leave_nothing() {
    if !have_both() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (code, stdout, stderr) =
        run_study("shootout", &out, &CACHED, &CACHED_VERSIONS, TINY_SHOOTOUT);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for (c, version, entry) in [
        ("innodb", "11.4.5-MariaDB", "mariadb-11.4.5"),
        ("postgres", "17.5", "postgres-17.5"),
    ] {
        common::assert_shootout_ok(&summary, c);
        assert_eq!(step(&summary, c, "load")["rows"], 3000);
        let f = facts(&dir, c);
        assert_eq!(f["version"], version, "{f:#}");
        let origin = f["effective"]["server_binary"].as_str().unwrap_or_default();
        assert!(
            origin.starts_with(&format!("cache {entry} from maven ")),
            "{f:#}"
        );
        // the report's context says which server ran, and from where
        assert!(
            stdout.contains(&format!("{c}: ")) && stdout.contains(version),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("server_binary=cache {entry}")),
            "{stdout}"
        );
        // and its column heading names the server it chose
        let heading = format!("{c} ({} {version})", f["engine"].as_str().unwrap());
        assert!(stdout.contains(&heading), "{heading} in\n{stdout}");
    }
    nothing_left(&out);
}

#[test]
fn cached_mariadb_and_postgres_run_oltp_and_leave_nothing() {
    if !have_both() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run_study("oltp", &out, &CACHED, &CACHED_VERSIONS, TINY_OLTP);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    for c in CACHED {
        for st in ["point-select", "read-only", "read-write"] {
            let j = read_json(&dir.join(c).join(format!("{st}.json")));
            let events = j["details"]["levels"][0]["events"].as_f64().unwrap_or(0.0);
            assert!(events > 10.0, "{c} {st}: {events} events");
        }
        assert_eq!(
            facts(&dir, c)["effective"]["server_binary"]
                .as_str()
                .map(|s| s.starts_with("cache ")),
            Some(true)
        );
    }
    nothing_left(&out);
}

#[test]
fn a_version_change_shows_in_compare() {
    if !common::have_mariadb() || !common::have_cached("mariadb-11.4.5") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (code, _, stderr) = run_study("shootout", &a, &["innodb"], &[], TINY_SHOOTOUT);
    assert_eq!(code, 0, "{stderr}");
    let run_a = run_dir(&stderr);
    let (code, _, stderr) = run_study(
        "shootout",
        &b,
        &["innodb"],
        &[("innodb", "11.4")],
        TINY_SHOOTOUT,
    );
    assert_eq!(code, 0, "{stderr}");
    let run_b = run_dir(&stderr);
    let (code, text, stderr) = run(&["compare", run_a.to_str().unwrap(), run_b.to_str().unwrap()]);
    assert!(code == 0 || code == 1, "{stderr}");
    let system = facts(&run_a, "innodb")["version"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains(&format!(
            "innodb version: mariadb {system} → mariadb 11.4.5-MariaDB"
        )),
        "{text}"
    );
    assert!(
        text.contains("innodb server_binary: system ")
            && text.contains("→ cache mariadb-11.4.5 from maven"),
        "{text}"
    );
    assert!(
        text.contains("study contender.innodb.version: (absent) → 11.4"),
        "{text}"
    );
}

/// `dbduel sandbox up mariadb --version 11.4` and `postgres --version 17` start the server
/// cache's versions (not the system's), each reachable with its password file; `sandbox
/// down` removes them and nothing is left running.
#[test]
fn sandbox_up_starts_the_cached_versions() {
    if !have_both() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("res");
    let out_s = out.to_str().unwrap();
    for (family, version, says) in [
        ("mariadb", "11.4", "mariadb 11.4.5"),
        ("postgres", "17", "postgres PostgreSQL 17.5"),
    ] {
        let (code, stdout, stderr) = run(&[
            "sandbox",
            "up",
            family,
            "--version",
            version,
            "--name",
            family,
            "--out",
            out_s,
        ]);
        assert_eq!(code, 0, "{family}: {stdout}\n{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stdout.contains("password_file = \""), "{stdout}");
    }
    let found = sandbox::find(&out);
    assert_eq!(found.len(), 2);
    for f in &found {
        assert!(f.running, "{}", f.path.display());
        let v = f.manifest.server_version.clone().unwrap_or_default();
        assert!(v.starts_with("11.4.5") || v.contains("17.5"), "{v}");
    }
    let (code, down, stderr) = run(&["sandbox", "down", "--all", "--out", out_s]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        down.contains("removed mariadb") && down.contains("removed postgres"),
        "{down}"
    );
    assert!(sandbox::find(&out).is_empty());
    let leftover = common::processes_mentioning(out_s);
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// PostgreSQL 18 from the server cache: the shootout runs; oltp runs at `io_method = "sync"`
/// (what 17 did), which the manifest records with 18's other defaults, and each step's
/// statements are the ones the server counted (pg_stat_statements, across its cold restart).
#[test]
fn postgres_18_runs_the_shootout_and_oltp_as_its_server_counts() {
    if !common::have_cached("postgres-18.1") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pg18 = [("postgres", "18")];
    let out = tmp.path().join("shootout");
    let (code, stdout, stderr) = run_study("shootout", &out, &["postgres"], &pg18, TINY_SHOOTOUT);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    common::assert_shootout_ok(&read_json(&dir.join("summary.json")), "postgres");
    let f = facts(&dir, "postgres");
    assert_eq!(f["version"], "18.1", "{f:#}");
    assert_eq!(f["effective"]["io_method"], "worker", "18's default: {f:#}");
    assert_eq!(
        f["effective"]["data_checksums"], "on",
        "18's default: {f:#}"
    );
    nothing_left(&out);

    let out = tmp.path().join("oltp");
    let mut sets = TINY_OLTP.to_vec();
    sets.extend(WHOLE_LEVELS);
    sets.push("contender.postgres.options.io_method=\"sync\"");
    let (code, stdout, stderr) = run_study("oltp", &out, &["postgres"], &pg18, &sets);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    assert_eq!(facts(&dir, "postgres")["effective"]["io_method"], "sync");
    // sysbench's selects an event: one point select; 10 and 4 ranges; the same and writes.
    for (st, selects) in [("point-select", 1), ("read-only", 14), ("read-write", 14)] {
        let j = read_json(&dir.join("postgres").join(format!("{st}.json")));
        let events = j["details"]["levels"][0]["events"].as_u64().unwrap();
        assert!(events > 10, "{st}: {events} events");
        let calls = j["server_counters"]["select_calls"].as_u64().unwrap();
        let want = selects * events;
        assert!(
            calls.abs_diff(want) <= want / 50 + 2,
            "{st}: the server ran {calls} SELECTs, dbduel {want} in {events} events"
        );
    }
    nothing_left(&out);
}

/// MariaDB 11.8 from the server cache (Debian trixie's packages, relinked to their own C
/// runtime): InnoDB and MyRocks (its plugin is in the package) run the shootout, and oltp's
/// statements on InnoDB are the ones the server counted.
#[test]
fn mariadb_11_8_runs_innodb_and_myrocks_as_its_server_counts() {
    if !common::have_cached("mariadb-11.8.9") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let both = [("innodb", "11.8"), ("myrocks", "11.8")];
    let out = tmp.path().join("shootout");
    let (code, stdout, stderr) = run_study(
        "shootout",
        &out,
        &["innodb", "myrocks"],
        &both,
        TINY_SHOOTOUT,
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for c in ["innodb", "myrocks"] {
        common::assert_shootout_ok(&summary, c);
        let f = facts(&dir, c);
        assert_eq!(
            f["version"], "11.8.9-MariaDB-0+deb13u1 from Debian",
            "{f:#}"
        );
        let origin = f["effective"]["server_binary"].as_str().unwrap_or_default();
        assert!(
            origin.starts_with("cache mariadb-11.8.9 from debian trixie "),
            "{f:#}"
        );
    }
    nothing_left(&out);

    let out = tmp.path().join("oltp");
    let mut sets = TINY_OLTP.to_vec();
    sets.extend(WHOLE_LEVELS);
    let (code, stdout, stderr) = run_study("oltp", &out, &["innodb"], &both[..1], &sets);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    // sysbench's statements an event: selects, then updates, deletes and inserts.
    for (st, per_event) in [
        ("point-select", [1, 0, 0, 0]),
        ("read-only", [14, 0, 0, 0]),
        ("read-write", [14, 2, 1, 1]),
    ] {
        let j = read_json(&dir.join("innodb").join(format!("{st}.json")));
        let events = j["details"]["levels"][0]["events"].as_u64().unwrap();
        assert!(events > 10, "{st}: {events} events");
        let c = &j["server_counters"];
        for (name, n) in ["Com_select", "Com_update", "Com_delete", "Com_insert"]
            .into_iter()
            .zip(per_event)
        {
            let (got, want) = (c[name].as_u64().unwrap_or(0), n * events);
            assert!(
                got.abs_diff(want) <= want / 50 + 2,
                "{st}: the server counted {name} = {got}, dbduel {want} in {events} events"
            );
        }
    }
    nothing_left(&out);
}
