//! The tpcc study end to end on every contender: the mix dealt as the specification asks,
//! New-Order's planned rollbacks, commits counted alike by dbduel and by the servers, the
//! consistency conditions holding after the run, and a corrupted row caught.

mod common;

use common::{figure, read_json, run, run_dir, step};
use std::path::Path;

fn mariadb_installed() -> bool {
    Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists()
}

#[test]
fn every_contender_runs_the_mix_and_stays_consistent() {
    let servers = common::have_server("mariadbd", mariadb_installed()) && common::have_postgres();
    let out = tempfile::tempdir().expect("tmp");
    let mut args = vec![
        "run",
        "tpcc",
        "-q",
        "--scale",
        "functional",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "step.tpcc.threads=[2, 4]",
        // two levels of 6 s: two windows of the original's 10 s axis
        "--set",
        "step.tpcc.duration_s=6",
    ];
    let contenders: &[&str] = if servers {
        // the MariaDB and PostgreSQL ones (the study's MySQL is tests/e2e_mysql.rs's)
        let all = &["sqlite-wal", "innodb", "myrocks", "postgres"];
        for c in all {
            args.extend(["--contender", c]);
        }
        all
    } else {
        &["sqlite-wal"]
    };
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for c in contenders {
        // the load holds what TPC-C's population rules say, for one warehouse
        let load = step(&summary, c, "load");
        assert_eq!(
            figure(load, "rows").map(|r| r as u64),
            Some(
                read_json(&dir.join("manifest.json"))["dataset"]["rows"]
                    .as_u64()
                    .unwrap()
            ),
            "{c}"
        );
        // tpmC says it counts New-Orders, which the report draws per 10 s
        let tpmc = step(&summary, c, "tpcc")["metrics"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["key"] == "tpmc"))
            .expect("tpmC");
        assert_eq!(tpmc["role"]["op"], "new_order", "{c}: {tpmc:#}");
        let j = read_json(&dir.join(c).join("tpcc.json"));
        assert_eq!(j["status"], "ok", "{c}: {j:#}");
        let levels = j["details"]["levels"].as_array().unwrap();
        assert_eq!(levels.len(), 2, "{c}");
        let mut counts = [0u64; 5];
        let mut dealt = [0u64; 5];
        let (mut rollbacks, mut commits, mut rolled, mut prepared) = (0u64, 0u64, 0u64, 0u64);
        for l in levels {
            assert!(l["tpmc"].as_f64().unwrap() > 0.0, "{c}: {l:#}");
            for (i, t) in l["types"].as_array().unwrap().iter().enumerate() {
                counts[i] += t["count"].as_u64().unwrap();
                dealt[i] += t["dealt_all"].as_u64().unwrap();
                assert_eq!(t["errors"], 0, "{c}: {t:#}");
            }
            rollbacks += l["types"][0]["rollbacks"].as_u64().unwrap();
            commits += l["commits_all"].as_u64().unwrap();
            rolled += l["rollbacks_all"].as_u64().unwrap();
            prepared += l["prepares_all"].as_u64().unwrap();
        }
        // Each terminal's deck deals 45/43/4/4/4 of every 100: over a level a type strays
        // from its share only by what one unfinished deck a terminal can hold back (at most
        // 100·p·(1−p) cards), 2 + 4 terminals here.
        let total: u64 = dealt.iter().sum();
        assert!(total > 400, "{c}: {total} transactions");
        for (n, p) in dealt.iter().zip([0.45, 0.43, 0.04, 0.04, 0.04]) {
            let bound = 6.0 * 100.0 * p * (1.0 - p) + 1.0;
            assert!(
                (*n as f64 - p * total as f64).abs() <= bound,
                "{c}: dealt {dealt:?} of {total}"
            );
        }
        // and over a long enough run the share is within a point of the standard mix
        let measured: u64 = counts.iter().sum();
        if measured >= 4000 {
            for (n, want) in counts.iter().zip([45.0, 43.0, 4.0, 4.0, 4.0]) {
                let pct = *n as f64 * 100.0 / measured as f64;
                assert!((pct - want).abs() <= 1.0, "{c}: {counts:?}");
            }
        }
        // about 1 % of New-Orders roll back on their unused item (both over whole levels)
        let pct = rollbacks as f64 * 100.0 / dealt[0] as f64;
        assert!(
            (0.2..=3.0).contains(&pct),
            "{c}: {rollbacks} of {}",
            dealt[0]
        );
        // dbduel's COMMITs and ROLLBACKs are the server's
        let server = &j["server_counters"];
        match *c {
            "innodb" | "myrocks" => {
                assert_eq!(server["Com_commit"].as_u64(), Some(commits), "{c}");
                assert_eq!(server["Com_rollback"].as_u64(), Some(rolled), "{c}");
            }
            "postgres" => {
                assert_eq!(server["xact_rollback"].as_u64(), Some(rolled), "{c}");
                // PostgreSQL also commits the implicit transaction of each statement a
                // terminal prepares (Parse then Sync)
                let xc = server["xact_commit"].as_u64().unwrap();
                assert!(
                    xc >= commits + prepared && xc - commits - prepared <= 20,
                    "{c}: the server committed {xc}, dbduel {commits} and {prepared} prepares"
                );
            }
            _ => {}
        }
        // the schema changes ran under load: the column renamed (the later drop of the new
        // name found it), the workload going on through each change and after it
        let hot = read_json(&dir.join(c).join("hot-ddl.json"));
        assert_eq!(hot["status"], "ok", "{c}: {:#}", hot["summary"]);
        let runs = hot["details"]["ddl"].as_array().unwrap();
        let titles: Vec<&str> = runs.iter().map(|r| r["title"].as_str().unwrap()).collect();
        assert_eq!(
            titles,
            [
                "add column",
                "rename column",
                "create index",
                "drop index",
                "drop column"
            ],
            "{c}"
        );
        for r in runs {
            assert!(r["elapsed_s"].as_f64().is_some(), "{c}: {r:#}");
            assert!(
                r["during"]["ops_per_s"].as_f64().unwrap() > 0.0,
                "{c}: {r:#}"
            );
        }
        let rename = &runs[1];
        assert!(
            rename["sql"]
                .as_str()
                .unwrap()
                .contains("RENAME COLUMN c_note TO c_remark"),
            "{rename:#}"
        );
        assert_eq!(rename["during"]["errors"], 0, "{c}: {rename:#}");
        assert!(
            runs[4]["sql"]
                .as_str()
                .unwrap()
                .contains("DROP COLUMN c_remark")
        );
        let check = step(&summary, c, "consistency");
        assert_eq!(check["status"], "ok", "{c}: {check:#}");
        assert_eq!(figure(check, "conditions_passed"), Some(11.0), "{c}");
    }
    assert!(stdout.contains("tpmC"), "{stdout}");
    // the report draws the original's axis and marks each schema change on the timelines
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("New-Order transactions per 10 s"));
    assert!(
        html.contains("class=\"mark\"") && html.contains("2. rename column on customer"),
        "no marks for the schema changes"
    );
}

#[test]
fn a_corrupted_row_breaks_its_conditions_and_fails_the_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let study = dir.path().join("broken.toml");
    std::fs::write(&study, include_str!("studies/tpcc_corrupted_row.toml")).unwrap();
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}\n{stdout}");
    assert!(
        stderr.contains("condition 1 (W_YTD = sum(D_YTD)"),
        "{stderr}"
    );
    let run = run_dir(&stderr);
    let j = read_json(&run.join("lite").join("consistency.json"));
    assert_eq!(j["status"], "failed");
    // the figures are kept: condition 1 (warehouse) and 9 (district) broken by one row each
    let conditions = j["details"]["conditions"].as_array().unwrap();
    let broken: Vec<(u64, u64)> = conditions
        .iter()
        .filter(|c| c["broken"].as_u64() != Some(0))
        .map(|c| {
            (
                c["condition"].as_u64().unwrap(),
                c["broken"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(broken, vec![(1, 1), (9, 1)], "{conditions:#?}");
}

/// Transactions a level dealt on each warehouse, from a tpcc step's results.
fn by_warehouse(j: &serde_json::Value) -> Vec<u64> {
    let levels = j["details"]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 1, "{j:#}");
    levels[0]["transactions_by_warehouse"]
        .as_array()
        .unwrap_or_else(|| panic!("no counts per warehouse: {j:#}"))
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect()
}

/// A Delivery whose DELETE removes fewer new-order rows than it found (a PostgreSQL rule keeps
/// district 1's) is a `serialization` conflict, rolled back and retried: it never commits with
/// an order left undelivered or a customer credited for it anyway.
#[test]
fn a_change_that_misses_rows_it_read_is_a_conflict_never_a_commit() {
    if !common::have_postgres() {
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let study = dir.path().join("lost.toml");
    std::fs::write(&study, include_str!("studies/tpcc_lost_change.toml")).unwrap();
    std::fs::write(
        dir.path().join("keep_district_1.sql"),
        "CREATE RULE keep_district_1 AS ON DELETE TO new_order WHERE old.no_d_id = 1 DO INSTEAD NOTHING;\n",
    )
    .unwrap();
    let (_, stdout, stderr) = common::run_study(&study, &dir.path().join("out"));
    let run = run_dir(&stderr);
    let j = read_json(&run.join("pg").join("tpcc.json"));
    let delivery = j["details"]["levels"][0]["types"]
        .as_array()
        .unwrap_or_else(|| panic!("{stderr}\n{stdout}\n{j:#}"))
        .iter()
        .find(|t| t["name"] == "delivery")
        .unwrap_or_else(|| panic!("no delivery in {j:#}"))
        .clone();
    assert!(
        delivery["conflicts"]["serialization"].as_u64() > Some(0),
        "{delivery:#}"
    );
    assert_eq!(delivery["count"], 0, "{delivery:#}");
}

#[test]
fn a_random_home_warehouse_spreads_over_all_and_a_fixed_one_stays() {
    let dir = tempfile::tempdir().expect("tmp");
    let study = dir.path().join("home.toml");
    std::fs::write(&study, include_str!("studies/tpcc_home_warehouse.toml")).unwrap();
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let run = run_dir(&stderr);
    // the specification's rule: terminal 0's home is warehouse 1, for every transaction
    let fixed = read_json(&run.join("lite").join("fixed.json"));
    assert_eq!(fixed["details"]["home_warehouse"], "fixed");
    let counts = by_warehouse(&fixed);
    assert!(counts[0] > 0, "{counts:?}");
    assert_eq!(&counts[1..], &[0, 0], "{counts:?}");
    assert!(
        fixed["summary"]["note"]
            .as_str()
            .unwrap()
            .contains("fixed per terminal (the specification's rule): 1 of 3 warehouses"),
        "{fixed:#}"
    );
    // tpcc-mysql's rule: each transaction's warehouse uniform over all three; a
    // chi-square statistic on 2 degrees of freedom stays under 13.8 (p = 0.001)
    let random = read_json(&run.join("lite").join("random.json"));
    assert_eq!(random["details"]["home_warehouse"], "random");
    assert!(
        random["summary"]["note"]
            .as_str()
            .unwrap()
            .contains("(tpcc-mysql's rule): 3 of 3 warehouses"),
        "{random:#}"
    );
    let counts = by_warehouse(&random);
    let total: u64 = counts.iter().sum();
    assert!(total >= 60, "{counts:?}");
    let expected = total as f64 / counts.len() as f64;
    let chi2: f64 = counts
        .iter()
        .map(|n| (*n as f64 - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 13.8, "chi-square {chi2:.1} over {counts:?}");
}
