//! The `queries` step's random parameters end to end on SQLite: every placeholder gets a
//! fresh integer from its range, so a point lookup over existing ids finds one row each time
//! and one over ids past the table finds none.

mod common;

use common::{read_json, run, run_dir, step};

fn study(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("lookups.toml");
    std::fs::write(&p, include_str!("studies/queries_random_params.toml")).unwrap();
    p
}

#[test]
fn placeholders_take_random_integers_from_their_ranges() {
    let dir = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        study(dir.path()).to_str().unwrap(),
        "-q",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    let hits = step(&summary, "sqlite", "hits");
    assert_eq!(hits["errors"], 0, "{hits:#}");
    // 300 lookups of one row each, and 300 ranges [a, b + 1] that hold b + 2 - a rows when
    // a <= b + 1: between 300 and 300 * 2000 rows, never one row per query for both.
    let rows = hits["rows"].as_u64().unwrap();
    assert!(rows > 600 && rows < 300 + 300 * 2000, "{rows}");
    assert!(
        hits["note"]
            .as_str()
            .unwrap()
            .contains("uniform in [1, 1999]"),
        "{hits:#}"
    );
    let misses = step(&summary, "sqlite", "misses");
    assert_eq!(misses["errors"], 0, "{misses:#}");
    assert_eq!(misses["rows"], 0, "ids past the table find nothing");
}

#[test]
fn a_placeholder_without_a_range_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = study(dir.path());
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("params = [{ min = 2001, max = 3000 }]\n", "");
    std::fs::write(&p, text).unwrap();
    let (code, _, stderr) = run(&["run", p.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("queries[0]") && stderr.contains("1 placeholder(s)"),
        "{stderr}"
    );
}
