//! The tpch dataset end to end: its eight tables at scale factor 0.01 loaded through each
//! engine's bulk path and counted, with the dataset's secondary indexes, and its foreign
//! keys where the engine's tables take them; a study naming it passes `--check`.

mod common;

use common::{figure, read_json, run, run_dir, step};
use std::path::Path;

const STUDY: &str = "tests/studies/tpch_load.toml";

fn mariadb_installed() -> bool {
    Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists()
}

/// Foreign keys the dataset declares, and the secondary indexes it builds.
const FOREIGN_KEYS: usize = 8;
const INDEXES: usize = 9;

#[test]
fn every_table_loads_and_counts_on_every_engine() {
    let servers = common::have_server("mariadbd", mariadb_installed()) && common::have_postgres();
    let out = tempfile::tempdir().expect("tmp");
    let mut args = vec!["run", STUDY, "-q", "--out", out.path().to_str().unwrap()];
    let contenders: &[(&str, bool)] = if servers {
        &[
            ("sqlite", false),
            ("innodb", true),
            ("myrocks", false),
            ("postgres", true),
        ]
    } else {
        &[("sqlite", false)]
    };
    for (c, _) in contenders {
        args.extend(["--contender", c]);
    }
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let manifest = read_json(&dir.join("manifest.json"));
    // sf 0.01: 5 + 25 + 100 + 1,500 + 2,000 + 8,000 + 15,000 orders and their lines
    let all_rows = manifest["dataset"]["rows"].as_u64().unwrap();
    let lineitem = dbduel::dataset::tpch::Tpch { seed: 42, units: 1 }
        .rows(dbduel::dataset::tpch::Table::Lineitem);
    assert_eq!(all_rows, 26_630 + lineitem);
    assert_eq!(manifest["dataset"]["sf"].as_f64(), Some(0.01));
    for (c, takes_fks) in contenders {
        let load = step(&summary, c, "load");
        assert_eq!(
            figure(load, "rows").map(|r| r as u64),
            Some(all_rows),
            "{c}"
        );
        let j = read_json(&dir.join(c).join("load.json"));
        let d = &j["details"];
        // every table's COUNT(*) equals its generated rows (the load fails otherwise)
        assert_eq!(d["rows_counted"].as_u64(), Some(all_rows), "{c}");
        assert_eq!(d["tables"].as_u64(), Some(8), "{c}");
        assert_eq!(d["indexes"].as_array().map(Vec::len), Some(INDEXES), "{c}");
        let fks = d["foreign_keys"].as_array().unwrap();
        let added = fks
            .iter()
            .filter(|s| s.as_str().is_some_and(|s| s.contains("FOREIGN KEY")))
            .count();
        let note = load["note"].as_str().unwrap_or_default();
        if *takes_fks {
            assert_eq!(added, FOREIGN_KEYS, "{c}: {fks:?}");
            assert!(note.contains("8 foreign keys added"), "{c}: {note}");
        } else {
            assert_eq!(added, 0, "{c}: {fks:?}");
            assert!(note.contains("foreign keys not declared"), "{c}: {note}");
        }
    }
}

#[test]
fn a_tpch_study_passes_check_and_names_its_scale() {
    let (code, stdout, stderr) = run(&["run", STUDY, "--check"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("TPC-H's eight tables at scale factor 0.01"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(&["run", STUDY, "--check", "--set", "dataset.sf=0.1"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("scale factor 0.1 "), "{stdout}");
    let (code, _, stderr) = run(&["run", STUDY, "--check", "--set", "dataset.sf=0.015"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a multiple of 0.01"), "{stderr}");
}
