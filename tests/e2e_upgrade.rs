//! The built-in upgrade check at a tiny scale: `upgrade` and `upgrade-tpcc` run all their
//! contenders (MariaDB 10.11, 11.4 and 11.8, MySQL 5.7 and 8.0, PostgreSQL 15, 17 and 18 — in
//! `upgrade` 18 twice, at sync and at asynchronous I/O) to the end, and the report sets each
//! newer version's figures beside its own older one's as ratios.

mod common;

use common::{figure, read_json, run, run_dir, step};
use dbduel::sandbox;
use std::path::Path;

/// (newer, older): each pair of the `upgrade` study, the newer judged against the older.
const PAIRS: [(&str, &str); 6] = [
    ("mariadb-11.4", "mariadb-10.11"),
    ("mariadb-11.8", "mariadb-11.4"),
    ("mysql-8.0", "mysql-5.7"),
    ("postgres-17", "postgres-15"),
    ("postgres-18-sync", "postgres-17"),
    ("postgres-18", "postgres-18-sync"),
];

/// The `upgrade-tpcc` study's pairs: PostgreSQL 18 at its default I/O only.
const TPCC_PAIRS: [(&str, &str); 5] = [
    ("mariadb-11.4", "mariadb-10.11"),
    ("mariadb-11.8", "mariadb-11.4"),
    ("mysql-8.0", "mysql-5.7"),
    ("postgres-17", "postgres-15"),
    ("postgres-18", "postgres-17"),
];

/// Every server the study runs: Debian's MariaDB and PostgreSQL and four from the cache.
fn have_all() -> bool {
    common::have_mariadb()
        & common::have_postgres()
        & [
            "mariadb-11.4.5",
            "mariadb-11.8.9",
            "mysql-5.7.22",
            "mysql-8.0.15",
            "postgres-17.5",
            "postgres-18.1",
        ]
        .iter()
        .all(|c| common::have_cached(c))
}

/// `dbduel run STUDY --out OUT` with `sets`: its run directory and stdout.
fn run_study(study: &str, out: &Path, sets: &[&str]) -> (std::path::PathBuf, String) {
    let mut args = vec!["run", study, "--out", out.to_str().unwrap()];
    for s in sets {
        args.extend(["--set", s]);
    }
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    (run_dir(&stderr), stdout)
}

/// Every step of each of the `contenders` ran to the end.
fn all_ok(dir: &Path, contenders: usize, steps: &[&str]) -> serde_json::Value {
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["status"], "ok", "{summary:#}");
    let listed = summary["contenders"].as_array().expect("contenders");
    assert_eq!(listed.len(), contenders, "{summary:#}");
    for c in listed {
        let name = c["name"].as_str().unwrap_or_default();
        for st in steps {
            assert_eq!(step(&summary, name, st)["status"], "ok", "{name} {st}");
        }
    }
    summary
}

/// The report names each of the `pairs` and gives each newer version's ratio to its own older
/// one.
fn ratios_shown(
    dir: &Path,
    text: &str,
    summary: &serde_json::Value,
    pairs: &[(&str, &str)],
    (st, key): (&str, &str),
) {
    let named: Vec<String> = pairs
        .iter()
        .map(|(new, old)| format!("{new} against {old}"))
        .collect();
    let line = format!("ratios: {};", named.join(", "));
    assert!(text.contains(&line), "{line} in\n{text}");
    let (code, json, err) = run(&["report", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let ratios = v["ratios"].as_array().expect("ratios");
    assert_eq!(ratios.len(), pairs.len(), "{json}");
    for &(new, old) in pairs {
        assert!(
            text.contains(&format!(") vs {old}")),
            "{new} vs {old}:\n{text}"
        );
        let r = ratios
            .iter()
            .find(|r| r["contender"] == new)
            .unwrap_or_else(|| panic!("{new} in {json}"));
        assert_eq!(r["against"], old, "{json}");
        let of = |c: &str| figure(step(summary, c, st), key).unwrap_or(f64::NAN);
        let want = of(new) / of(old);
        let got = r["figures"][format!("{st}.{key}")]
            .as_f64()
            .unwrap_or(f64::NAN);
        assert!(
            want.is_finite() && (got - want).abs() <= 1e-9 * want.abs(),
            "{new}/{old} {st}.{key}: {got} != {want}"
        );
        // and the cell says it: the newer's figure with `×` and its ratio to two places
        let cell = format!("×{want:.2}");
        assert!(want >= 10.0 || text.contains(&cell), "{cell} in\n{text}");
    }
}

/// Nothing of a study's run is left: no sandbox directory and no process under `out`.
fn nothing_left(out: &Path) {
    assert!(sandbox::find(out).is_empty(), "a sandbox was left behind");
    let left = common::processes_mentioning(out.to_str().unwrap());
    assert!(left.is_empty(), "processes left: {left:?}");
}

// The two studies are two tests, so the harness runs them side by side: each spends most of
// its time waiting for servers to initialise and start.
#[test]
fn upgrade_runs_all_nine_and_judges_each_newer_version_against_its_own() {
    if !have_all() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (dir, text) = run_study(
        "upgrade",
        &out,
        &[
            "dataset.tables=2",
            "dataset.rows=2000",
            "step.read-write.threads=[1]",
            "step.read-write.duration_s=2",
            "step.read-only.threads=[1]",
            "step.read-only.duration_s=2",
        ],
    );
    let summary = all_ok(
        &dir,
        9,
        &[
            "load",
            "footprint",
            "create-index",
            "drop-index",
            "add-column",
            "drop-column",
            "read-write",
            "read-only",
        ],
    );
    for c in summary["contenders"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        assert_eq!(step(&summary, name, "load")["rows"], 4000, "{name}");
    }
    ratios_shown(&dir, &text, &summary, &PAIRS, ("load", "elapsed_s"));
    // PostgreSQL 18 ran at the I/O each of its contenders asked for.
    let m = read_json(&dir.join("manifest.json"));
    for (name, io) in [("postgres-18-sync", "sync"), ("postgres-18", "worker")] {
        let c = m["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} in the manifest"));
        assert_eq!(c["effective"]["io_method"], io, "{c:#}");
    }
    nothing_left(&out);
}

#[test]
fn upgrade_tpcc_runs_all_eight_and_judges_each_newer_version_against_its_own() {
    if !have_all() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (dir, text) = run_study(
        "upgrade-tpcc",
        &out,
        &[
            "dataset.warehouses=1",
            "step.tpcc.threads=1",
            "step.tpcc.duration_s=3",
            "step.tpcc.warmup_s=0",
        ],
    );
    let summary = all_ok(&dir, 8, &["load", "tpcc", "consistency"]);
    ratios_shown(&dir, &text, &summary, &TPCC_PAIRS, ("load", "elapsed_s"));
    nothing_left(&out);
}
