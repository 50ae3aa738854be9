//! The results catalogue and `dbduel history`: three real runs of one study on SQLite
//! recorded as they finished; the catalogue made again from their directories (`history
//! rebuild`, `history import`) holds exactly the same; `history` lists and filters them and
//! follows a figure across them with the noise band `compare` uses.

mod common;

use dbduel::history::Catalogue;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const STUDY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/studies/history_sqlite.toml"
);

/// A results root holding three runs of the study, made once for the tests of this file.
fn three_runs() -> &'static (PathBuf, Vec<PathBuf>) {
    static RUNS: OnceLock<(PathBuf, Vec<PathBuf>)> = OnceLock::new();
    RUNS.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("history-three-runs");
        let _ = std::fs::remove_dir_all(&root);
        let out = root.to_string_lossy().into_owned();
        let dirs = (0..3)
            .map(|_| {
                let (code, _, err) = common::run(&["run", STUDY, "--out", &out]);
                assert_eq!(code, 0, "{err}");
                common::run_dir(&err)
            })
            .collect();
        (root, dirs)
    })
}

fn dump(root: &Path) -> String {
    Catalogue::open(root)
        .expect("catalogue")
        .dump()
        .expect("dump")
}

fn history(args: &[&str]) -> String {
    let (code, out, err) = common::run(&[&["history"], args].concat());
    assert_eq!(code, 0, "history {args:?}: {err}");
    out
}

#[test]
fn the_catalogue_rebuilt_from_run_directories_is_the_one_built_as_runs_finished() {
    let (root, dirs) = three_runs();
    let built = dump(root);
    assert_eq!(
        built.lines().filter(|l| l.starts_with("runs: ")).count(),
        3,
        "{built}"
    );
    for d in dirs {
        let name = d.file_name().expect("name").to_string_lossy().into_owned();
        assert!(built.contains(&format!("figures: Text(\"{name}\") | Text(\"sqlite-wal\") | Text(\"point-select\") | Text(\"tps_t1\")")), "{built}");
    }
    // Rebuilt in place from nothing but the run directories.
    let scratch = tempfile::tempdir().expect("tempdir");
    let copy = scratch.path().join("results");
    std::fs::create_dir(&copy).expect("mkdir");
    for d in dirs {
        let (code, _, err) = common::run(&[
            "history",
            "import",
            &d.to_string_lossy(),
            "--out",
            &copy.to_string_lossy(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(dump(&copy), built, "imported one by one");
    std::fs::remove_file(copy.join(dbduel::history::FILE)).expect("rm");
    let out = history(&["rebuild", "--out", &copy.to_string_lossy()]);
    assert!(out.contains("3 runs recorded"), "{out}");
    assert_eq!(dump(&copy), built, "rebuilt from the run directories");
    // A directory of runs imported at once into an empty root.
    let other = scratch.path().join("other");
    history(&[
        "import",
        &root.to_string_lossy(),
        "--out",
        &other.to_string_lossy(),
    ]);
    assert_eq!(dump(&other), built, "imported as a directory of runs");
}

#[test]
fn history_lists_and_filters_runs() {
    let (root, dirs) = three_runs();
    let root = root.to_string_lossy();
    let all = history(&["--out", &root]);
    assert_eq!(all.lines().count(), 3, "{all}");
    for d in dirs {
        let name = d.file_name().expect("name").to_string_lossy().into_owned();
        assert!(all.contains(&name), "{all}");
    }
    assert!(all.contains("sqlite-wal (sqlite 3."), "{all}");
    let none = |args: &[&str]| {
        let out = history(&[&["--out", &root][..], args].concat());
        assert_eq!(out.trim(), "no recorded run matches", "{args:?}: {out}");
    };
    none(&["--study", "shootout"]);
    none(&["--contender", "innodb"]);
    none(&["--engine", "mariadb"]);
    none(&["--engine-version", "10.11"]);
    none(&["--host", "no-such-host"]);
    none(&["--until", "2000-01-01"]);
    none(&["--since", "2999-01-01"]);
    let host = common::read_json(&dirs[0].join("manifest.json"))["host"]["hostname"]
        .as_str()
        .expect("hostname")
        .to_string();
    let started = common::read_json(&dirs[1].join("summary.json"))["started_at"]
        .as_str()
        .expect("started")
        .to_string();
    let some = history(&[
        "--out",
        &root,
        "--study",
        "hist",
        "--contender",
        "sqlite-wal",
        "--engine",
        "sqlite",
        "--engine-version",
        "3.",
        "--host",
        &host,
        "--since",
        &started,
    ]);
    assert_eq!(
        some.lines().count(),
        2,
        "the second and third runs:\n{some}"
    );
}

/// `history --figure` of three runs: each run's value with its band, each change with the
/// band `compare` computes for the same two runs and the verdict that band gives.
#[test]
fn history_of_three_runs_shows_the_trend_with_its_band() {
    let (root, dirs) = three_runs();
    let out = history(&[
        "--out",
        &root.to_string_lossy(),
        "--figure",
        "point-select.tps_t1",
    ]);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (i, l) in lines.iter().enumerate() {
        let name = dirs[i]
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(l.contains(&name), "runs in time order: {out}");
        assert!(
            l.contains("/s") && l.contains(" ±"),
            "value and its own band: {l}"
        );
    }
    for i in 1..3 {
        let (code, cmp, err) = common::run(&[
            "compare",
            &dirs[i - 1].to_string_lossy(),
            &dirs[i].to_string_lossy(),
            "--format",
            "json",
        ]);
        assert!(code == 0 || code == 1, "{err}");
        let cmp: serde_json::Value = serde_json::from_str(&cmp).expect("json");
        let row = cmp["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["step"] == "point-select" && r["key"] == "tps_t1")
            .expect("compare's row");
        let (change, noise) = (
            row["change"].as_f64().expect("change") * 100.0,
            row["noise"].as_f64().expect("compare's noise band") * 100.0,
        );
        let l = lines[i];
        assert!(
            l.contains(&format!("{change:+.1}% (noise ±{noise:.1}%)")),
            "compare says {change:+.1}% within ±{noise:.1}%; history says:\n{l}"
        );
        let verdict = if change.abs() < 5.0 {
            "no significant change: under threshold"
        } else if change.abs() <= noise {
            "no significant change: within noise"
        } else if change < 0.0 {
            "REGRESSED"
        } else {
            "improved"
        };
        assert!(l.contains(verdict), "expected `{verdict}`: {l}");
    }
    let (code, _, err) = common::run(&[
        "history",
        "--out",
        &root.to_string_lossy(),
        "--figure",
        "point-select.nope",
    ]);
    assert_eq!(code, 2, "an unknown figure is bad input: {err}");
}
