//! End to end on the embedded default: the real binary runs studies at a tiny scale and its
//! result files are checked against the SQLite databases it left behind (`--keep`).

mod common;

use common::{figure, read_json, run, run_dir, step};
use rusqlite::Connection;
use std::path::Path;

const NEW_CONTENT: &str = "ddddddddddddddddddddsssssss";

#[test]
fn shootout_results_agree_with_the_database() {
    let out = tempfile::tempdir().expect("tmp");
    let out_s = out.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "run",
        "shootout",
        "--out",
        out_s,
        "--keep",
        "--set",
        "dataset.rows=10000",
        "--set",
        "step.range-queries.clients=20",
        "--set",
        "step.range-queries.per_client=10",
    ]);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["schema_version"], 1);
    assert_eq!(summary["status"], "ok");

    for contender in ["sqlite-wal", "sqlite-rollback"] {
        figures_agree(&dir, &summary, contender);
        database_agrees(&dir, &summary, contender);
        series_files_are_json(&dir, contender);
    }

    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["schema_version"], 1);
    assert!(manifest["host"]["cores"].as_u64().unwrap() >= 1);
    assert!(!manifest["host"]["kernel"].as_str().unwrap().is_empty());
    assert!(!manifest["dbduel"]["commit"].as_str().unwrap().is_empty());
    assert_eq!(manifest["dataset"]["rows"], 10000);
    assert_eq!(manifest["dataset"]["seed"], 42);
    assert_eq!(
        manifest["contenders"][0]["effective"]["journal_mode"],
        "wal"
    );
    assert_eq!(
        manifest["contenders"][1]["effective"]["journal_mode"],
        "delete"
    );
    assert_eq!(manifest["overrides"].as_array().unwrap().len(), 3);

    // The table printed at the end has a row per step and a column per contender.
    for label in [
        "bulk load",
        "bytes on disk",
        "COUNT(*) cold",
        "COUNT(*) warm",
        "range queries, 20 clients",
        "connect + COUNT(content), 1000 clients",
        "connect + SELECT content, 1000 clients",
        "connect all",
        "rows matched",
        "bulk update",
        "create index",
        "drop index",
        "add column",
        "drop column",
        "sqlite-rollback",
    ] {
        assert!(stdout.contains(label), "missing {label} in\n{stdout}");
    }

    // report re-renders from the files alone
    let d = dir.to_str().unwrap();
    let (code, json, _) = run(&["report", d, "--format", "json"]);
    assert_eq!(code, 0);
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    // the summary, and the original's findings checked: none comparable, as neither of the
    // original's engines ran (each names the one absent)
    let checks = v
        .as_object_mut()
        .and_then(|o| o.remove("findings_checked"))
        .expect("findings_checked");
    let checks = checks.as_array().expect("a list");
    assert_eq!(checks.len(), 11, "{checks:#?}");
    for c in checks {
        assert_eq!(c["verdict"], "not_comparable", "{c:#}");
        assert!(c["absent"][0].is_string(), "{c:#}");
    }
    assert_eq!(v, summary);
    let (code, md, _) = run(&["report", d, "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(md.contains("| step") && md.contains("sqlite-wal"), "{md}");
    let (code, text, _) = run(&["report", d]);
    assert_eq!(code, 0);
    assert_eq!(text, stdout);

    // list finds it
    let (code, listing, _) = run(&["list", "--out", out_s]);
    assert_eq!(code, 0);
    assert!(
        listing.contains(d) && listing.contains("shootout"),
        "{listing}"
    );
}

/// A contender's figures in the summary and its steps' files: every step ok (the forced-copy
/// column changes skipped), the rows loaded,
/// queried and updated, connects timed apart, no load warnings, the cold count's note.
fn figures_agree(dir: &Path, summary: &serde_json::Value, contender: &str) {
    for s in summary["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == contender)
        .unwrap()["steps"]
        .as_array()
        .unwrap()
    {
        // the forced-copy column changes: SQLite has no ALTER TABLE algorithm to force
        if s["name"].as_str().is_some_and(|n| n.ends_with("-copy")) {
            assert_eq!(s["status"], "skipped", "{contender}: {s:#}");
            assert!(s["note"].as_str().unwrap().contains("has none"), "{s:#}");
            continue;
        }
        assert_eq!(s["status"], "ok", "{contender}: {s:#}");
    }
    // rows after load equal rows generated
    assert_eq!(step(summary, contender, "load")["rows"], 10000);
    // the range-query step ran every query it was asked to
    let rq = step(summary, contender, "range-queries");
    assert!(rq["ops_per_s"].as_f64().unwrap() > 0.0);
    for q in ["p50", "p95", "p99", "max"] {
        assert!(rq["latency_us"][q].as_u64().unwrap() >= 1, "{rq:#}");
    }
    let detail = read_json(&dir.join(contender).join("range-queries.json"));
    assert_eq!(detail["details"]["ops"], 200);
    assert_eq!(detail["schema_version"], 1);
    // update: ids 8901..=10000, rows matched (SQLite does not count unchanged rows apart)
    let up = step(summary, contender, "update");
    assert_eq!(up["rows"], 1100);
    assert_eq!(up["metrics"][0]["label"], "rows matched");
    assert_eq!(figure(up, "rows_changed"), None);
    // SQLite reports no load warnings: none recorded, none shown
    let ld = read_json(&dir.join(contender).join("load.json"));
    assert!(ld["details"]["warnings"].is_null(), "{ld:#}");
    assert_eq!(figure(step(summary, contender, "load"), "warnings"), None);
    // connecting is timed apart: every client, and the figures made of them
    let rq = step(summary, contender, "range-queries");
    assert_eq!(detail["details"]["connect"]["connected"], 20);
    let all_s = figure(rq, "connect_s").expect("connect all");
    assert!(all_s > 0.0, "{rq:#}");
    assert!((figure(rq, "connects_per_s").unwrap() * all_s - 20.0).abs() < 1e-6);
    assert!(figure(rq, "connect_max_us").unwrap() <= all_s * 1e6 + 1.0);
    // cold count says what it did to the cache
    let note = step(summary, contender, "count-cold")["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.starts_with("cold: ") || note.starts_with("warm-restart: "),
        "{note}"
    );
    assert_eq!(step(summary, contender, "count-cold")["rows"], 10000);
}

/// The database the run kept (`--keep`) holds what the figures say, and SQLite's own counts
/// agree with them.
fn database_agrees(dir: &Path, summary: &serde_json::Value, contender: &str) {
    let db = Connection::open(dir.join("work").join(contender).join("db.sqlite")).expect("kept db");
    let count: i64 = db
        .query_row("SELECT COUNT(*) FROM user_logs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 10000);
    let changed: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM user_logs WHERE content = ?1",
            [NEW_CONTENT],
            |r| r.get(0),
        )
        .unwrap();
    let in_range: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM user_logs WHERE content = ?1 AND id > 8900 AND id < 90000",
            [NEW_CONTENT],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((changed, in_range), (1100, 1100));
    // SQLite's own count for the same UPDATE again: every matched row, none left out for
    // already holding the value
    db.execute(
        "UPDATE user_logs SET content = ?1 WHERE id > 8900 AND id < 90000",
        [NEW_CONTENT],
    )
    .unwrap();
    assert_eq!(db.changes(), 1100);
    // mysqlslap's shape at its own size: 1,000 connections, one query each, timed from
    // the first connect; rows as SQLite answers the queries
    let in_window: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM user_logs WHERE id > 9950 AND id < 9999",
            [],
            |r| r.get(0),
        )
        .unwrap();
    for (s, rows) in [
        ("slap-count", 1000),
        ("slap-content", 1000 * in_window as u64),
    ] {
        let st = step(summary, contender, s);
        let j = read_json(&dir.join(contender).join(format!("{s}.json")));
        assert_eq!(j["details"]["connect"]["connected"], 1000, "{s}");
        assert_eq!(j["details"]["ops"], 1000, "{s}");
        assert_eq!(st["rows"], rows, "{s}");
        assert_eq!(st["metrics"][0]["key"], "elapsed_s", "{s}");
        assert!(figure(st, "elapsed_s").unwrap() >= figure(st, "connect_s").unwrap());
    }
    // rows outside the range still hold the generated content
    let mut expected = String::new();
    dbduel::dataset::UserLogs::new(42, 10000).row(0, &mut expected);
    let first: String = db
        .query_row("SELECT content FROM user_logs WHERE id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(first, expected);
    // the DDL steps left the schema as they found it
    let cols: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('user_logs')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(cols, 3);
    let idx: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND name = 'idx_uid'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(idx, 0);
}

/// Every step wrote its files, and each line of each series is JSON.
fn series_files_are_json(dir: &Path, contender: &str) {
    // every step wrote its files, each line of each series is JSON
    for st in [
        "load",
        "footprint",
        "count-cold",
        "count-warm",
        "range-queries",
        "update",
        "create-index",
    ] {
        assert!(dir.join(contender).join(format!("{st}.json")).is_file());
        let sys = std::fs::read_to_string(dir.join(contender).join(format!("{st}.system.ndjson")))
            .unwrap();
        for line in sys.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                v["cpu"]["idle_pct"].is_number() && v["engine"]["cpu_pct"].is_number(),
                "{line}"
            );
        }
    }
    let iv = std::fs::read_to_string(dir.join(contender).join("range-queries.intervals.ndjson"))
        .unwrap();
    let ops: u64 = iv
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["ops"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(ops, 200);
}

#[test]
fn footprint_equals_the_database_files() {
    let out = tempfile::tempdir().expect("tmp");
    let (code, _, stderr) = run(&[
        "run",
        "tests/studies/load_footprint.toml",
        "--out",
        out.path().to_str().unwrap(),
        "--keep",
        "-q",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for c in ["wal", "rollback"] {
        let fp = step(&summary, c, "footprint");
        let data = dir.join("work").join(c);
        let on_disk: u64 = std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().ends_with("-shm"))
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert_eq!(fp["bytes"].as_u64().unwrap(), on_disk, "{c}: {fp:#}");
        let engine = fp["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["key"] == "engine_bytes")
            .unwrap()["value"]
            .as_f64()
            .unwrap() as u64;
        assert!(
            engine <= on_disk && engine * 10 >= on_disk * 9,
            "engine {engine} vs files {on_disk}"
        );
        // ~800 bytes of content a row
        assert!(on_disk > 5000 * 700, "{on_disk}");
    }
}

#[test]
fn a_failed_step_keeps_earlier_results_and_exits_1() {
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "tests/studies/failing.toml",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["status"], "failed");
    assert_eq!(step(&summary, "lite", "load")["status"], "ok");
    let failed = step(&summary, "lite", "drop-missing");
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["note"].as_str().unwrap().contains("no_such_index"),
        "{failed:#}"
    );
    assert_eq!(step(&summary, "lite", "count")["status"], "skipped");
    assert!(stderr.contains("FAILED lite · drop-missing"), "{stderr}");
    // data files are cleaned up without --keep
    assert!(!dir.join("work").exists());
}

#[test]
fn dry_engine_measures_the_harness() {
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "harness",
        "--out",
        out.path().to_str().unwrap(),
        "-q",
        "--set",
        "step.clients-1.duration_s=1",
        "--set",
        "step.clients-2.duration_s=1",
        "--set",
        "step.clients-8.duration_s=1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("queries, 8 clients"), "{stdout}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    let s = step(&summary, "dry", "clients-1");
    // Even a debug build drives well over 100k no-op operations a second on one client.
    assert!(s["ops_per_s"].as_f64().unwrap() > 100_000.0, "{s:#}");
}

#[test]
fn one_contender_can_be_chosen() {
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "shootout",
        "--contender",
        "sqlite-wal",
        "--out",
        out.path().to_str().unwrap(),
        "-q",
        "--set",
        "dataset.rows=2000",
        "--set",
        "step.range-queries.clients=2",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("sqlite-wal") && !stdout.contains("sqlite-rollback"),
        "{stdout}"
    );
}

#[test]
fn sqlite_loads_report_no_warnings_and_fail_on_a_row_that_does_not_fit() {
    use dbduel::engine::{LoadRequest, OpenCtx};
    use dbduel::engines::EngineConfig;
    let root = tempfile::tempdir().expect("tmp");
    let engine = EngineConfig::decode("sqlite", &toml::Table::new(), None, &Default::default())
        .expect("options")
        .open(&OpenCtx {
            contender: "lite",
            dir: root.path(),
            database: "unused",
            max_clients: 1,
        })
        .expect("open");
    let table = &dbduel::dataset::Generator::UserLogs.tables("user_logs", 1, 2, 42)[0];
    let mut s = engine.connect().unwrap();
    s.execute(&engine.dialect().create_table(table)).unwrap();
    let file = root.path().join("rows.tsv");
    std::fs::write(&file, "1\t7\tfirst\n2\t7\tsecond\n").unwrap();
    let load = || {
        engine.bulk_load(&LoadRequest {
            table,
            file: &file,
            batch_rows: 10,
        })
    };
    let out = load().expect("load");
    assert_eq!(out.rows, 2);
    assert!(out.warnings.is_none(), "SQLite has no warnings to report");
    assert_eq!(s.query_i64("SELECT COUNT(*) FROM user_logs").unwrap(), 2);
    // A row SQLite would silently store (text in an integer column) fails the load instead.
    std::fs::write(&file, "3\t7\tthird\nfour\t7\tfourth\n").unwrap();
    let err = load().expect_err("a bad id fails the load");
    assert_eq!(err.kind, "data");
    assert!(
        err.message.contains("dataset line 2: bad or missing `id`"),
        "{}",
        err.message
    );
}

/// The figure `key` of `contender`'s step `st` in a summary.
fn summary_figure(summary: &serde_json::Value, contender: &str, st: &str, key: &str) -> f64 {
    figure(step(summary, contender, st), key).unwrap_or_else(|| panic!("{contender} {st} {key}"))
}

#[test]
fn each_contender_with_its_own_baseline_is_judged_against_it_in_every_report() {
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "tests/studies/baseline_pairs.toml",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(
        manifest["baselines"],
        serde_json::json!({"p-new": "p-old", "q-new": "q-old"})
    );
    let d = dir.to_str().unwrap();
    for format in ["text", "markdown"] {
        let (code, text, err) = run(&["report", d, "--format", format]);
        assert_eq!(code, 0, "{err}");
        assert!(
            text.contains("p-new vs p-old") && text.contains("q-new vs q-old"),
            "{format}: {text}"
        );
        assert!(
            text.contains("ratios: p-new against p-old, q-new against q-old;"),
            "{format}: {text}"
        );
        assert!(!text.contains("(baseline)"), "{format}: {text}");
        // On the load's seconds row, only the two newer contenders carry a ratio (`×0.52`;
        // the best column's `1.30×` is no ratio to a baseline).
        // The table's rows only: a finding above the table names the step too, and says
        // "(seconds: …)" when two contenders tie.
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains('|') || l.contains('┆'))
            .collect();
        let load = lines
            .iter()
            .position(|l| l.contains("bulk load"))
            .unwrap_or_else(|| panic!("{format}: {text}"));
        let row = lines[load..]
            .iter()
            .find(|l| l.contains("seconds"))
            .unwrap_or_else(|| panic!("{format}: {text}"));
        let ratios = row
            .split('×')
            .skip(1)
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            .count();
        assert_eq!(ratios, 2, "{format}: {row}");
    }
    let (code, json, err) = run(&["report", d, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let summary = read_json(&dir.join("summary.json"));
    let ratios = v["ratios"].as_array().expect("ratios");
    assert_eq!(ratios.len(), 2, "{json}");
    for (new, old) in [("p-new", "p-old"), ("q-new", "q-old")] {
        let r = ratios
            .iter()
            .find(|r| r["contender"] == new)
            .unwrap_or_else(|| panic!("{new} in {json}"));
        assert_eq!(r["against"], old);
        let want = summary_figure(&summary, new, "load", "elapsed_s")
            / summary_figure(&summary, old, "load", "elapsed_s");
        let got = r["figures"]["load.elapsed_s"].as_f64().unwrap_or(f64::NAN);
        assert!((got - want).abs() < 1e-9 * want.abs(), "{got} != {want}");
    }
    let (code, html, err) = run(&["report", d, "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        html.contains("p-new vs p-old") && html.contains("p-new against p-old"),
        "{html}"
    );
    // One baseline asked for at report time replaces the pairs.
    let (code, text, err) = run(&["report", d, "--baseline", "q-old"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("q-old (baseline)") && !text.contains(" vs "),
        "{text}"
    );
    assert!(!text.contains("ratios:"), "{text}");
    // A pair whose baseline is not run: no ratio, no pairing.
    let (code, text, err) = run(&[
        "run",
        "tests/studies/baseline_pairs.toml",
        "--out",
        out.path().to_str().unwrap(),
        "--contender",
        "p-new",
        "--contender",
        "q-old",
    ]);
    assert_eq!(code, 0, "{err}");
    let ratio = text
        .split('×')
        .skip(1)
        .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    assert!(!text.contains(" vs ") && !ratio, "{text}");
}
