//! dbduel's shards under a real scheduler: a private one-node Slurm cluster on loopback
//! (`scripts/slurm-local`) runs the script `dbduel slurm` prints, as a user would submit it:
//! an array job of 4 tasks, each a shard of an oltp step against a real MariaDB, and the merge
//! as a job that starts after them. The merged counts equal the shards' sum and the server's
//! own count; its percentiles are those of the shards' histograms added up; each shard's host
//! is recorded. A task cancelled with `scancel` stops the others at their next meeting, and
//! the merge says which shard stopped. Each task serves its live metrics where Prometheus's
//! file discovery finds it, labelled with its shard.

mod common;

use common::{read_json, step};
use dbduel::sandbox::Sandbox;
use mysql::prelude::Queryable;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SHARDS: u64 = 4;
const CLIENTS: u64 = 8;

/// A private Slurm cluster, stopped when dropped.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-local")
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new(script())
            .arg("start")
            .arg(dir)
            .output()
            .expect("slurm-local runs");
        let c = Cluster {
            dir: dir.to_path_buf(),
            conf: dir.join("slurm.conf"),
        };
        assert!(
            out.status.success(),
            "slurm-local start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        c
    }

    /// The host name a job sees: this machine's, unless slurm-local ran the daemons in a UTS
    /// namespace named `localhost` (when the machine's name does not resolve to loopback).
    fn job_host(&self) -> String {
        let conf = std::fs::read_to_string(&self.conf).unwrap();
        if conf.contains("NodeHostname=localhost ") {
            return "localhost".into();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
            .to_string()
    }

    /// A Slurm command of this cluster.
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `prog args…`'s stdout; panics when it fails.
    fn run(&self, prog: &str, args: &[&str]) -> String {
        let out = self.cmd(prog).args(args).output().expect(prog);
        assert!(
            out.status.success(),
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Each job record of `job` (an array's tasks, or one job): its fields.
    fn states(&self, job: &str) -> Vec<std::collections::BTreeMap<String, String>> {
        let text = self.run("scontrol", &["show", "job", "--oneliner", job]);
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect()
    }

    /// Wait until every record of `job` has ended (at most `secs`); their records.
    fn wait(&self, job: &str, secs: u64) -> Vec<std::collections::BTreeMap<String, String>> {
        let began = Instant::now();
        loop {
            let s = self.states(job);
            let running = s.iter().any(|r| {
                matches!(
                    r.get("JobState").map(String::as_str),
                    Some("PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED")
                )
            });
            if !running && !s.is_empty() {
                return s;
            }
            assert!(
                began.elapsed().as_secs() < secs,
                "job {job} still running after {secs} s: {s:?}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).status();
    }
}

/// The cluster's processes still running: daemons and job steps with a file under `dir` open.
fn left_running(dir: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        let comm = comm.trim();
        if !["slurmctld", "slurmd", "slurmstepd", "munged", "dbduel"].contains(&comm) {
            continue;
        }
        let opened = std::fs::read_dir(p.join("fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|f| std::fs::read_link(f.path()).ok())
            .chain(std::fs::read_link(p.join("cwd")).ok())
            .any(|t| t.starts_with(dir));
        if opened {
            left.push(format!("{comm} {}", e.file_name().to_string_lossy()));
        }
    }
    left
}

fn have_slurm() -> bool {
    common::have_server(
        "Slurm (slurm-wlm and munge; scripts/slurm-local install)",
        ["slurmctld", "slurmd", "munged", "sbatch"].iter().all(|p| {
            ["/usr/sbin", "/usr/bin"]
                .iter()
                .any(|d| Path::new(d).join(p).exists())
        }),
    )
}

/// The first of `SHARDS` consecutive loopback ports free now, below the ephemeral range.
fn free_ports() -> u16 {
    let first = 20_000 + (std::process::id() % 5_000) as u16 * 2;
    (first..30_000)
        .step_by(SHARDS as usize)
        .find(|&p| {
            (p..p + SHARDS as u16).all(|q| std::net::TcpListener::bind(("127.0.0.1", q)).is_ok())
        })
        .expect("free ports")
}

/// The printed script for `study`: `dbduel slurm STUDY --shards 4 --results RESULTS
/// --metrics-listen PORT` (each task on loopback, at PORT and its index).
fn print_script(study: &Path, results: &Path, dir: &Path) -> PathBuf {
    let (code, stdout, stderr) = common::run(&[
        "slurm",
        study.to_str().unwrap(),
        "--shards",
        &SHARDS.to_string(),
        "--results",
        results.to_str().unwrap(),
        "--dbduel",
        env!("CARGO_BIN_EXE_dbduel"),
        "--barrier-timeout-s",
        "60",
        "--metrics-listen",
        &free_ports().to_string(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("#SBATCH --array=0-3"), "{stdout}");
    let path = dir.join(format!(
        "{}.sbatch",
        study.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&path, stdout).unwrap();
    path
}

/// Submit the script from `dir`: the array's job id.
fn submit(c: &Cluster, script: &Path, dir: &Path) -> String {
    let out = c
        .cmd("sbatch")
        .arg("--parsable")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("sbatch");
    assert!(
        out.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

/// While array `job` runs: each task's target in Prometheus's file discovery
/// (`prometheus/shard-I.json`) scraped until its endpoint shows the step labelled with that
/// shard. The shards seen, in order.
fn scrape_tasks(results: &Path, job: &str) -> Vec<u64> {
    let dir = results.join(job).join("prometheus");
    let mut seen = Vec::new();
    let began = Instant::now();
    while seen.len() < SHARDS as usize && began.elapsed().as_secs() < 60 {
        for i in 0..SHARDS {
            if seen.contains(&i) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(dir.join(format!("shard-{i}.json"))) else {
                continue;
            };
            let found: serde_json::Value = serde_json::from_str(&text).expect("file_sd JSON");
            assert_eq!(
                found[0]["labels"]["dbduel_run"],
                format!("slurm-{job}"),
                "{text}"
            );
            let target = found[0]["targets"][0]
                .as_str()
                .expect("a target")
                .to_string();
            let port = target
                .rsplit(':')
                .next()
                .and_then(|p| p.parse::<u16>().ok());
            let Some(body) = port.and_then(|p| http_get(p, "/metrics")) else {
                continue;
            };
            if body.contains(&format!("shard=\"{i}/{SHARDS}\"")) && body.contains("step=\"s\"") {
                seen.push(i);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    seen.sort();
    seen
}

/// A plain HTTP GET on loopback: the body.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text.split_once("\r\n\r\n")?.1.to_string())
}

/// The merge job task 0 submitted for array `job`, waited for: its record.
fn merge_job(c: &Cluster, results: &Path, job: &str) -> std::collections::BTreeMap<String, String> {
    let file = results.join(job).join("merge.jobid");
    let began = Instant::now();
    while !file.is_file() || std::fs::read_to_string(&file).unwrap().trim().is_empty() {
        assert!(began.elapsed().as_secs() < 60, "no merge job submitted");
        std::thread::sleep(Duration::from_millis(200));
    }
    let id = std::fs::read_to_string(&file).unwrap().trim().to_string();
    c.wait(&id, 90).remove(0)
}

/// The shards' run directories of array `job`, in shard order.
fn shard_dirs(results: &Path, job: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(results.join(job)) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.to_string_lossy().contains("-shard-"))
        .collect();
    dirs.sort();
    dirs
}

fn slurm_log(results: &Path) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(results).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "out") {
            all.push_str(&format!("== {}\n", e.path().display()));
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}

#[test]
fn a_slurm_array_runs_the_shards_and_merges_them() {
    if !common::have_mariadb() || !have_slurm() {
        return;
    }
    let began = Instant::now();
    let root = tempfile::tempdir().expect("tmp");
    let mut server = Sandbox::create(
        common::mariadb_recipe("64M"),
        "target",
        &root.path().join("target"),
    )
    .expect("create");
    server.start().expect("start");
    let port = server.layout.port;
    let target = common::target_with_secret(&format!("mysql://root@127.0.0.1:{port}"), port);
    let mut admin = common::mysql_conn(port, None);
    // the server's own count of rows read through sbtest1's primary key: one a point select
    admin.query_drop("SET GLOBAL userstat = 1").unwrap();
    let mut rows_read = || -> u64 {
        admin
            .query_first::<Option<u64>, _>(
                "SELECT ROWS_READ FROM information_schema.INDEX_STATISTICS WHERE TABLE_NAME = 'sbtest1' AND INDEX_NAME = 'PRIMARY'",
            )
            .unwrap()
            .flatten()
            .unwrap_or(0)
    };
    let cluster = Cluster::start(&root.path().join("slurm"));
    let results = root.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let write = |name: &str, steps: &str| -> PathBuf {
        let p = root.path().join(name);
        let text = common::fill(
            include_str!("studies/slurm_oltp.toml"),
            &[("target", &target), ("steps", steps)],
        );
        std::fs::write(&p, text).unwrap();
        p
    };
    // the table, loaded once by an unsharded run; every second of the step is counted
    // (final_fraction = 1), so that the server's count is comparable
    let load = write("load.toml", "[[step]]\nname = \"load\"\nkind = \"load\"\n");
    let (code, _, stderr) = common::run(&[
        "run",
        load.to_str().unwrap(),
        "-q",
        "--out",
        results.join("load").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let oltp = write(
        "oltp.toml",
        &format!(
            "[[step]]\nname = \"s\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = {CLIENTS}\nduration_s = 4\nfinal_fraction = 1.0\n"
        ),
    );
    let sbatch = print_script(&oltp, &results, root.path());
    let before = rows_read();
    let job = submit(&cluster, &sbatch, root.path());
    let scraped = scrape_tasks(&results, &job);
    let tasks = cluster.wait(&job, 90);
    let merge = merge_job(&cluster, &results, &job);
    let after = rows_read();
    let log = slurm_log(&results);
    assert_eq!(tasks.len() as u64, SHARDS, "{tasks:?}");
    for t in &tasks {
        assert_eq!(t["JobState"], "COMPLETED", "{t:?}\n{log}");
    }
    assert_eq!(merge["JobState"], "COMPLETED", "{merge:?}\n{log}");
    assert_eq!(
        scraped,
        (0..SHARDS).collect::<Vec<_>>(),
        "shards scraped\n{log}"
    );
    check_merged(&results, &job, after - before, &cluster.job_host());
    eprintln!("slurm run: {:.0} s", began.elapsed().as_secs_f64());
    cancelled_task_stops_the_others(&cluster, &results, &write, root.path());
    let slurm_dir = cluster.dir.clone();
    drop(cluster);
    assert_eq!(
        left_running(&slurm_dir),
        Vec::<String>::new(),
        "left running"
    );
    server.destroy().expect("destroy");
    assert!(
        began.elapsed().as_secs() < 180,
        "the Slurm test took {} s",
        began.elapsed().as_secs()
    );
}

/// The merged run of array `job`: counts are the shards' sum and the server's count (`server`
/// rows read through the primary key, in-flight statements at the end aside), percentiles
/// are the union histogram's, and each shard's host is recorded (`host`, the one jobs see).
fn check_merged(results: &Path, job: &str, server: u64, host: &str) {
    let dirs = shard_dirs(results, job);
    assert_eq!(dirs.len() as u64, SHARDS, "{dirs:?}");
    let merged = results.join(job).join("merged");
    let summary = read_json(&merged.join("summary.json"));
    let s = step(&summary, "db", "s");
    let mut sum = 0;
    let mut union = dbduel::metrics::new_hist();
    for (i, d) in dirs.iter().enumerate() {
        let own = read_json(&d.join("summary.json"));
        let events = step(&own, "db", "s")["rows"].as_u64().unwrap();
        assert!(events > 0, "shard {i}");
        sum += events;
        let ivs = std::fs::read_to_string(d.join("db/s.intervals.ndjson")).unwrap();
        for line in ivs.lines() {
            let iv: serde_json::Value = serde_json::from_str(line).unwrap();
            if iv["warmup"] == true {
                continue;
            }
            for op in iv["per_op"].as_array().unwrap() {
                if let Some(h) = op["hist"].as_str() {
                    dbduel::metrics::merge(&mut union, &dbduel::metrics::decode(h).unwrap());
                }
            }
        }
        eprintln!(
            "shard {i}: {events} events, {:.0} TPS, p99 {} us",
            step(&own, "db", "s")["ops_per_s"].as_f64().unwrap(),
            step(&own, "db", "s")["latency_us"]["p99"]
        );
    }
    let merged_events = s["rows"].as_u64().unwrap();
    assert_eq!(merged_events, sum);
    assert_eq!(union.len(), sum, "every event in a histogram");
    // statements in flight when the step's time ran out reached the server, uncounted
    assert!(
        server >= sum && server <= sum + CLIENTS,
        "the server read {server} rows by primary key, the merged run counts {sum} events"
    );
    assert_eq!(
        s["latency_us"]["p99"].as_u64().unwrap(),
        dbduel::metrics::quantile(&union, 0.99)
    );
    assert_eq!(
        s["latency_us"]["p50"].as_u64().unwrap(),
        dbduel::metrics::quantile(&union, 0.5)
    );
    assert_eq!(
        common::figure(s, "p95_us").unwrap() as u64,
        dbduel::metrics::quantile(&union, 0.95)
    );
    let record = read_json(&merged.join("db/s.json"));
    assert_eq!(
        record["details"]["levels"][0]["events"].as_u64().unwrap(),
        sum
    );
    let m = read_json(&merged.join("manifest.json"));
    let shards = m["shards"].as_array().unwrap();
    assert_eq!(shards.len() as u64, SHARDS);
    for (i, f) in shards.iter().enumerate() {
        assert_eq!(f["index"], i as u64);
        assert_eq!(f["group"], format!("slurm-{job}"));
        assert_eq!(f["hostname"], host, "{f}");
        // how late the shard began the step after the agreed instant, when it was
        if let Some(late) = f["late_start_ms"].get("db") {
            let ms = late.as_f64().unwrap();
            assert!((0.0..5000.0).contains(&ms), "shard {i} late by {ms} ms");
        }
        eprintln!(
            "shard {i}: host {}, late start {}",
            f["hostname"], f["late_start_ms"]
        );
    }
    eprintln!(
        "merged: {sum} events, {:.0} TPS, p50 {} us, p99 {} us; server {server}",
        s["ops_per_s"].as_f64().unwrap(),
        s["latency_us"]["p50"],
        s["latency_us"]["p99"]
    );
}

/// `scancel` of one array task mid-step: it ends as interrupted, the others fail at their
/// next meeting naming it (without waiting out their meeting's timeout), and the merge, which
/// runs once they have all ended, says shard 1 stopped.
fn cancelled_task_stops_the_others(
    cluster: &Cluster,
    results: &Path,
    write: &dyn Fn(&str, &str) -> PathBuf,
    dir: &Path,
) {
    let study = write(
        "cancel.toml",
        "[[step]]\nname = \"long\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = 4\nduration_s = 10\n\
         [[step]]\nname = \"after\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = 4\nduration_s = 2\n",
    );
    let sbatch = print_script(&study, results, dir);
    let job = submit(cluster, &sbatch, dir);
    // wait until every shard is under way in the long step
    let began = Instant::now();
    loop {
        let dirs = shard_dirs(results, &job);
        let started = dirs
            .iter()
            .filter(|d| {
                d.join("db/s.intervals.ndjson").exists()
                    || d.join("db/long.intervals.ndjson").exists()
            })
            .count();
        if started as u64 == SHARDS {
            break;
        }
        assert!(
            began.elapsed().as_secs() < 60,
            "the shards never began: {}",
            slurm_log(results)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    cluster.run("scancel", &[&format!("{job}_1")]);
    let cancelled_at = Instant::now();
    let tasks = cluster.wait(&job, 60);
    let merge = merge_job(cluster, results, &job);
    let log = slurm_log(results);
    for t in &tasks {
        let state = t["JobState"].as_str();
        match t["ArrayTaskId"].as_str() {
            "1" => assert_eq!(state, "CANCELLED", "{t:?}\n{log}"),
            _ => assert_eq!(state, "FAILED", "{t:?}\n{log}"),
        }
    }
    assert!(
        cancelled_at.elapsed().as_secs() < 40,
        "the others waited out their meeting's timeout"
    );
    // the merge ran after them all, and says which shard stopped
    let merged = results.join(&job).join("merged");
    let merge_out =
        std::fs::read_to_string(results.join(&job).join("merge.out")).unwrap_or_default();
    assert_ne!(merge["ExitCode"], "0:0", "{merge:?}\n{merge_out}");
    let summary = read_json(&merged.join("summary.json"));
    let after = step(&summary, "db", "after");
    let note = after["note"].as_str().unwrap_or_default().to_string();
    let long = step(&summary, "db", "long");
    let long_note = long["note"].as_str().unwrap_or_default().to_string();
    assert!(
        note.contains("shard 1") || long_note.contains("shard 1"),
        "{note}\n{long_note}\n{merge_out}"
    );
    eprintln!("cancelled: long: {long_note}\nafter: {note}");
}

/// The printed script names the variables and files passwords come from, never a value, and
/// a study whose contenders start their own servers cannot run as shards. Needs no Slurm.
#[test]
fn the_script_holds_no_password() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("s.toml");
    let text = common::fill(
        include_str!("studies/slurm_oltp.toml"),
        &[
            (
                "target",
                "mysql://bench@db7.internal:3306\"\npassword_env = \"BENCH_PW",
            ),
            (
                "steps",
                "[[step]]\nname = \"s\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = 8\nduration_s = 5\n",
            ),
        ],
    );
    std::fs::write(&path, text).unwrap();
    let out = common::bin()
        .args(["slurm", path.to_str().unwrap(), "--shards", "3"])
        .args(["--results", "/shared/results", "--partition", "bench"])
        .env("BENCH_PW", "s3cret-value")
        .output()
        .unwrap();
    let script = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!script.contains("s3cret-value"));
    assert!(script.contains("#SBATCH --array=0-2"), "{script}");
    assert!(script.contains("${BENCH_PW+set}"), "{script}");
    assert!(
        script.contains("--dependency=afterany:\"$job\""),
        "{script}"
    );
    assert!(
        script.contains("--shards 3 --run-group \"slurm-$job\""),
        "{script}"
    );
    let (code, _, stderr) = common::run(&["slurm", "shootout", "--shards", "2"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("sharded runs need MariaDB or PostgreSQL"),
        "{stderr}"
    );
    let (code, _, stderr) = common::run(&["slurm", path.to_str().unwrap(), "--shards", "0"]);
    assert_eq!(code, 2, "{stderr}");
}
