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

/// On PostgreSQL (`$1` placeholders, the blocking client connection): every lookup finds its
/// row, the server executed exactly the SELECTs dbduel counted, and every session said
/// goodbye properly (nothing about broken connections in the server's log).
#[test]
fn postgres_lookups_match_the_servers_count() {
    if !common::have_server(
        "PostgreSQL",
        dbduel::engines::postgres::recipe::bin_dir().is_some(),
    ) {
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
    let hits = step(&summary, "postgres", "hits");
    assert_eq!(hits["errors"], 0, "{hits:#}");
    assert_eq!(hits["rows"], 2000, "each of 2000 lookups finds its one row");
    let j = read_json(&run_path.join("postgres").join("hits.json"));
    let log = log.expect("the kept sandbox's server log");
    let calls = j["server_counters"]["select_calls"]
        .as_u64()
        .expect("pg_stat_statements counts");
    assert!(
        (2000..=2010).contains(&calls),
        "server ran {calls} SELECTs: {:#}",
        j["server_counters"]
    );
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
