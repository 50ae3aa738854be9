//! The `lookups` step and the point-lookups study end to end: hits and misses as the table
//! holds them, lookups counted by the servers themselves (MariaDB's Com_stmt_execute,
//! PostgreSQL's pg_stat_statements), partitioned tables with their partitions, a server kept
//! under a memory limit, the findings in words, and the built-in study at a functional scale.

mod common;

use common::{figure, read_json, run, run_dir, step};
use std::path::Path;

fn study(dir: &Path, contenders: &str, steps: &str) -> std::path::PathBuf {
    let path = dir.join("lookups.toml");
    let text = common::fill(
        include_str!("studies/lookups_codes.toml"),
        &[("contenders", contenders), ("steps", steps)],
    );
    std::fs::write(&path, text).expect("write study");
    path
}

const LOOKUP_STEPS: &str = include_str!("studies/parts/lookups_hot_and_all.toml");

fn lookups_of(dir: &Path, contender: &str, st: &str) -> serde_json::Value {
    read_json(&dir.join(contender).join(format!("{st}.json")))
}

/// Lookups of every level of a step, as dbduel counted them.
fn total_lookups(step: &serde_json::Value) -> u64 {
    step["details"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lookups"].as_u64().unwrap())
        .sum()
}

/// Run a study file into `tmp`; (dbduel's pid, the run directory, its report).
fn run_study(path: &Path, tmp: &Path) -> (u32, std::path::PathBuf, String) {
    let out = tmp.join("out");
    let (pid, code, stdout, stderr) = common::run_with_pid(&[
        "run",
        path.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    (pid, run_dir(&stderr), stdout)
}

#[test]
fn missing_keys_are_misses_and_findings_are_in_words() {
    let tmp = tempfile::tempdir().expect("tmp");
    // half the codes move out of the key range, so half of all lookups miss
    let steps = format!(
        "{LOOKUP_STEPS}\n{}",
        include_str!("studies/parts/lookups_misses_steps.toml")
    );
    let path = study(
        tmp.path(),
        "[[contender]]\nname = \"lite\"\nengine = \"sqlite\"\n",
        &steps,
    );
    let (_, dir, stdout) = run_study(&path, tmp.path());
    let summary = read_json(&dir.join("summary.json"));
    for st in ["hot", "all"] {
        let s = step(&summary, "lite", st);
        assert_eq!(figure(s, "misses"), Some(0.0), "{st}: {s:#}");
        assert!(figure(s, "best_qps").unwrap() > 100.0, "{s:#}");
        // the lead figure says what it counts, for the findings' words
        let best = &s["metrics"][0];
        assert_eq!(best["key"], "best_qps", "{s:#}");
        assert_eq!(
            best["role"],
            serde_json::json!({ "is": "lead", "counts": "lookups" })
        );
    }
    let hot = lookups_of(&dir, "lite", "hot");
    let levels = hot["details"]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    for l in levels {
        assert_eq!(l["hits"], l["lookups"], "{l:#}");
        assert_eq!(l["errors"], 0);
    }
    // every second of every level has its device reading beside it
    assert!(
        !hot["details"]["disk_seconds"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let after = lookups_of(&dir, "lite", "after");
    let l = &after["details"]["levels"][0];
    let (n, hits, misses) = (
        l["lookups"].as_u64().unwrap(),
        l["hits"].as_u64().unwrap(),
        l["misses"].as_u64().unwrap(),
    );
    assert_eq!(hits + misses, n);
    assert_eq!(l["errors"], 0, "a missing key is a miss, not an error");
    let share = misses as f64 / n as f64;
    assert!((0.4..0.6).contains(&share), "misses {misses} of {n}");
    assert!(
        step(&summary, "lite", "after")["note"]
            .as_str()
            .unwrap()
            .contains("counted as misses")
    );
    let once = lookups_of(&dir, "lite", "once");
    let note = step(&summary, "lite", "once")["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.contains("each once, in a seeded order") || note.contains("then again"),
        "{note}"
    );
    assert_eq!(once["details"]["keys"], "permutation");

    // the fall from cache-held keys to all keys, in words, and the original's figure
    assert!(
        stdout.contains("Findings:")
            && stdout.contains("lite: ")
            && stdout
                .contains("from keys its cache holds (hot) to keys from the whole table (all)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the original: the original's figure"),
        "{stdout}"
    );
}

#[test]
fn mariadb_counts_the_lookups_and_partitions_the_table() {
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        include_str!("studies/parts/lookups_mariadb_contenders.toml"),
        LOOKUP_STEPS,
    );
    let (pid, dir, stdout) = run_study(&path, tmp.path());
    for c in ["plain", "split"] {
        for st in ["hot", "all"] {
            let j = lookups_of(&dir, c, st);
            let ours = total_lookups(&j);
            assert!(ours > 100, "{c}/{st}: {ours}");
            // every lookup is one execution of the prepared statement; the warm-up-free
            // levels count all of them, dropped in-flight ones excepted
            let server = j["server_counters"]["Com_stmt_execute"].as_u64().unwrap();
            assert!(
                server >= ours && server <= ours + 8,
                "{c}/{st}: dbduel {ours}, Com_stmt_execute {server}"
            );
        }
    }
    // the partitioned table is created in 4 partitions, one tablespace each
    let load = lookups_of(&dir, "split", "load");
    let creates = load["details"]["create_table"].to_string();
    assert!(
        creates.contains("PARTITION BY KEY(id) PARTITIONS 4"),
        "{creates}"
    );
    let fp = lookups_of(&dir, "split", "footprint");
    let files: Vec<String> = fp["details"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        files.iter().filter(|f| f.contains("#P#")).count(),
        4,
        "{files:?}"
    );
    assert!(
        stdout.contains("split against plain (the same but not partitioned), QPS: hot ×"),
        "{stdout}"
    );
    // the memory limit is a cgroup the server ran in, gone with the sandbox
    let manifest = read_json(&dir.join("manifest.json"));
    let opts = &manifest["study"]["contender"][0]["options"];
    assert_eq!(opts["memory_limit_mb"], 200);
    assert_eq!(leftover_cgroups(pid), Vec::<String>::new());
}

/// Memory cgroups a dbduel process `pid` made beside this test's own and left behind.
fn leftover_cgroups(pid: u32) -> Vec<String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let dirs = own.lines().filter_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
        let base = match ctl {
            "" => "/sys/fs/cgroup".to_string(),
            c if c.split(',').any(|x| x == "memory") => "/sys/fs/cgroup/memory".to_string(),
            _ => return None,
        };
        Some(format!("{base}{path}"))
    });
    dirs.flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("dbduel-{pid}-")))
        .collect()
}

#[test]
fn postgres_counts_the_lookups_and_partitions_the_table() {
    if !common::have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let path = study(
        tmp.path(),
        include_str!("studies/parts/lookups_postgres_contenders.toml"),
        LOOKUP_STEPS,
    );
    let (pid, dir, _) = run_study(&path, tmp.path());
    for st in ["hot", "all"] {
        let j = lookups_of(&dir, "split", st);
        let ours = total_lookups(&j);
        let server = j["server_counters"]["select_calls"].as_u64().unwrap();
        assert!(ours > 100, "{st}: {ours}");
        assert!(
            server >= ours && server <= ours + 8,
            "{st}: dbduel {ours}, pg_stat_statements {server}"
        );
    }
    let load = lookups_of(&dir, "split", "load");
    let creates = load["details"]["create_table"].to_string();
    assert!(creates.contains("PARTITION BY HASH (id)"), "{creates}");
    assert_eq!(
        creates.matches("PARTITION OF codes").count(),
        4,
        "{creates}"
    );
    // bytes on disk: every partition's files, equal to the server's own sum
    let fp = lookups_of(&dir, "split", "footprint");
    let files = fp["details"]["files_bytes"].as_u64().unwrap();
    assert_eq!(
        Some(files),
        fp["details"]["engine_bytes"].as_u64(),
        "{fp:#}"
    );
    assert!(files > 4000 * 60, "{files}");
    assert_eq!(leftover_cgroups(pid), Vec::<String>::new());
}

#[test]
fn the_built_in_study_runs_on_a_mongodb_wire_server() {
    if !common::have_server(
        "ferretdb",
        dbduel::engines::mongodb::ferretdb::binary().is_some(),
    ) {
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = run(&[
        "run",
        "point-lookups",
        "--scale",
        "functional",
        "--contender",
        "ferretdb",
        "--contender",
        "sqlite-wal",
        "-q",
        "--out",
        out.path().to_str().unwrap(),
        "--set",
        "dataset.rows=2000",
        "--set",
        "step.small-random.duration_s=1",
        "--set",
        "step.full-random.duration_s=1",
        "--set",
        "step.each-once.duration_s=1",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for st in ["small-random", "full-random", "each-once"] {
        let j = lookups_of(&dir, "ferretdb", st);
        let l = &j["details"]["levels"][0];
        let n = l["lookups"].as_u64().unwrap();
        assert!(n > 0, "{st}: {l:#}");
        assert_eq!(l["hits"], l["lookups"], "{st}");
        // each lookup is one `find` command, as the server counts them
        assert_eq!(
            j["server_counters"]["commands.find"].as_u64(),
            Some(n),
            "{st}"
        );
        assert!(figure(step(&summary, "sqlite-wal", st), "best_qps").unwrap() > 0.0);
    }
    assert!(stdout.contains("not MongoDB"), "{stdout}");
}
