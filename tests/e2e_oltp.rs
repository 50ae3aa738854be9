//! The oltp study end to end: thread sweeps on SQLite, sysbench's statement mix checked
//! against MariaDB's own counters, and open-loop queueing shown on a deliberately slow engine.

mod common;

use common::{read_json, run, run_dir, step};
use std::path::Path;

#[test]
fn a_sweep_on_sqlite_reports_every_level() {
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "oltp",
        "-q",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "dataset.tables=2",
        "--set",
        "dataset.rows=2000",
        "--set",
        "step.point-select.threads=[1,2]",
        "--set",
        "step.point-select.duration_s=2",
        "--set",
        "step.read-only.threads=1",
        "--set",
        "step.read-only.duration_s=2",
        "--set",
        "step.read-only.distribution=zipfian",
        "--set",
        "step.read-write.threads=[1,2]",
        "--set",
        "step.read-write.duration_s=2",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    // sysbench's zipfian keys drive a step like any other distribution.
    let ro = read_json(&run_dir(&stderr).join("sqlite-wal").join("read-only.json"));
    assert_eq!(ro["details"]["distribution"], "zipfian", "{ro:#}");
    assert!(ro["details"]["levels"][0]["events"].as_u64().unwrap() > 100);
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for c in ["sqlite-wal", "sqlite-rollback"] {
        assert_eq!(
            step(&summary, c, "load")["rows"],
            4000,
            "two tables of 2000 rows"
        );
        let d = read_json(&dir.join(c).join("read-write.json"))["details"].clone();
        let levels = d["levels"].as_array().unwrap();
        assert_eq!(
            levels
                .iter()
                .map(|l| l["threads"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
        for l in levels {
            assert!(l["tps"].as_f64().unwrap() > 0.0, "{l:#}");
            // a read_write event is 14 reads, 4 writes, BEGIN and COMMIT
            let per_event = l["qps"].as_f64().unwrap() / l["tps"].as_f64().unwrap();
            assert!((per_event - 20.0).abs() < 0.01, "{per_event}");
        }
        // one second of each two-second level is measured (the final quarter, at least 1 s)
        assert_eq!(d["measured_s_per_level"], 1);
        let iv = std::fs::read_to_string(dir.join(c).join("read-write.intervals.ndjson")).unwrap();
        let tagged: Vec<u64> = iv
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["level"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert!(tagged.contains(&1) && tagged.contains(&2), "{tagged:?}");
        let best = step(&summary, c, "read-write");
        assert!(
            best["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["key"] == "best_tps")
        );
    }
    assert!(
        stdout.contains("TPS @2") && stdout.contains("best TPS"),
        "{stdout}"
    );
}

#[test]
fn the_statement_mix_matches_sysbench_by_the_servers_count() {
    if !common::have_server(
        "mariadbd",
        Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists(),
    ) {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "oltp",
        "-q",
        "--contender",
        "innodb",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "dataset.tables=2",
        "--set",
        "dataset.rows=2000",
        "--set",
        "contender.innodb.buffer_pool_mb=64",
        "--set",
        "step.point-select.threads=1",
        "--set",
        "step.point-select.duration_s=1",
        "--set",
        "step.point-select.final_fraction=1.0",
        "--set",
        "step.read-only.threads=1",
        "--set",
        "step.read-only.duration_s=1",
        "--set",
        "step.read-only.final_fraction=1.0",
        "--set",
        "step.read-write.threads=2",
        "--set",
        "step.read-write.jobs=1",
        "--set",
        "step.read-write.duration_s=2",
        "--set",
        "step.read-write.final_fraction=1.0",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let per_event = [
        ("point-select", 1.0, 0.0, 0.0, 0.0),
        ("read-only", 14.0, 0.0, 0.0, 0.0),
        ("read-write", 14.0, 2.0, 1.0, 1.0),
    ];
    // What a client prepares: the statement kinds its event runs on each of the two tables,
    // and BEGIN and COMMIT when it has a transaction — what sysbench prepares. read-write
    // has two clients sharing one thread (`jobs`), each event's statements sent one after
    // another as the answers arrive: the same mix reaches the server.
    let prepares = [
        ("point-select", 2),
        ("read-only", 12),
        ("read-write", 2 * 20),
    ];
    for ((st, selects, updates, deletes, inserts), (_, prepared)) in
        per_event.into_iter().zip(prepares)
    {
        let j = read_json(&dir.join("innodb").join(format!("{st}.json")));
        let events = j["details"]["levels"][0]["events"].as_f64().unwrap();
        assert!(events > 10.0, "{st}: {events} events");
        let shared = (st == "read-write").then_some(1);
        assert_eq!(j["details"]["jobs"].as_u64(), shared, "{st}");
        let c = &j["server_counters"];
        assert_eq!(
            c["Com_stmt_prepare"].as_u64(),
            Some(prepared),
            "{st}: {c:#}"
        );
        for (name, want) in [
            ("Com_select", selects),
            ("Com_update", updates),
            ("Com_delete", deletes),
            ("Com_insert", inserts),
        ] {
            let got = c[name].as_f64().unwrap();
            let expect = want * events;
            assert!(
                (got - expect).abs() <= expect * 0.02 + 2.0,
                "{st}: {name} = {got}, sysbench's mix says {expect} for {events} events"
            );
        }
    }
}

#[test]
fn open_loop_latency_includes_the_queue_behind_a_slow_engine() {
    let dir = tempfile::tempdir().expect("tmp");
    let study = dir.path().join("slow.toml");
    std::fs::write(&study, include_str!("studies/open_loop_slow_engine.toml")).unwrap();
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "-q",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    let s = step(&summary, "slow", "paced");
    let note = s["note"].as_str().unwrap();
    assert!(note.contains("could not sustain 1000 events/s"), "{note}");
    // each event takes 2 ms, but waits behind the ones before it: latency counts the queue
    let p99 = s["latency_us"]["p99"].as_u64().unwrap();
    assert!(p99 > 100_000, "p99 {p99} µs hides the queue");
    assert!(stdout.contains("could not sustain"), "{stdout}");
}

/// The built-in study at `--scale full` carries seed 002's run (uniform keys, a cold start,
/// its InnoDB settings, its 10-second report interval) to the server, as the manifest reads
/// them back — sizes shrunk, settings untouched.
#[test]
fn the_full_scale_is_the_seeds_run_with_todays_engines() {
    if !common::have_server(
        "mariadbd",
        Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists(),
    ) {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "oltp",
        "--scale",
        "full",
        "-q",
        "--contender",
        "innodb",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "dataset.tables=2",
        "--set",
        "dataset.rows=1000",
        "--set",
        "step.point-select.threads=[1,2]",
        "--set",
        "step.point-select.duration_s=2",
        "--set",
        "step.read-only.threads=1",
        "--set",
        "step.read-only.duration_s=1",
        "--set",
        "step.read-write.threads=1",
        "--set",
        "step.read-write.duration_s=1",
        // Four seconds hold no two 10-second points: this step shows its timeline in 2 s.
        "--set",
        "step.point-select.report_interval_s=2",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let manifest = read_json(&dir.join("manifest.json"));
    let eff = &manifest["contenders"][0]["effective"];
    let get = |k: &str| {
        eff[k]
            .as_str()
            .unwrap_or_else(|| panic!("no {k} in {eff:#}"))
    };
    assert_eq!(get("innodb_flush_method"), "O_DIRECT");
    assert_eq!(get("innodb_file_per_table"), "ON");
    assert_eq!(get("innodb_flush_log_at_trx_commit"), "1");
    assert_eq!(get("innodb_log_buffer_size"), (16u64 << 20).to_string());
    assert_eq!(get("innodb_log_file_size"), (3800u64 << 20).to_string());
    assert_eq!(get("table_open_cache"), "2048");
    // 52 GB of 72: the same share of this machine, as the server sized it.
    let mem_total: f64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .expect("MemTotal")
        * 1024.0;
    let pool: f64 = get("innodb_buffer_pool_size").parse().unwrap();
    assert!(
        (pool / mem_total - 0.72).abs() < 0.01,
        "{pool} of {mem_total}"
    );
    for s in manifest["study"]["step"].as_array().unwrap().iter().skip(1) {
        assert_eq!(s["distribution"], "uniform", "{s:#}");
        assert_eq!(s["cold_start"], true, "{s:#}");
        let every = if s["name"] == "point-select" { 2 } else { 10 };
        assert_eq!(s["report_interval_s"], every, "{s:#}");
    }
    // The sweep started cold, and says so.
    let d = read_json(&dir.join("innodb").join("point-select.json"));
    assert_eq!(d["details"]["cold_start"]["restart"]["cold"], true, "{d:#}");
    assert_eq!(d["details"]["distribution"], "uniform");
    let summary = read_json(&dir.join("summary.json"));
    let note = step(&summary, "innodb", "point-select")["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.contains("before the first level: cold: restarted"),
        "{note}"
    );
    // Timelines at the report interval asked for.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("the mean of each 2 s"), "no 2 s timeline");
    assert!(html.contains("p99 of the worst second in each 2 s"));
}
