//! Faults a benchmark tool must survive loudly and cleanly, on real servers: a server killed
//! mid-step, Ctrl-C, a server out of connections, one that refuses connections, a full disk.
//! Each would fail if dbduel hung, lied about the outcome, or left a server behind.

mod common;

use common::{read_json, run, run_dir, step};
use dbduel::sandbox;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// A study: load a little, then `clients` clients for 30 s, then a count.
fn study(dir: &Path, engine: &str, options: &str, clients: u32) -> PathBuf {
    let p = dir.join("fault.toml");
    let text = common::fill(
        include_str!("studies/fault_long_step.toml"),
        &[
            ("engine", engine),
            ("options", options),
            ("clients", &clients.to_string()),
        ],
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// Start dbduel in the background.
fn spawn(args: &[&str]) -> std::process::Child {
    common::bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dbduel starts")
}

/// Wait for a running sandbox under `out` and return its server pid.
fn sandbox_pid(out: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = sandbox::find(out)
            .iter()
            .find(|f| f.running)
            .and_then(|f| f.manifest.pid)
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no sandbox started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until the queries step is under way (its clients are connected and working).
fn wait_for_queries(out: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let started = dbduel::oscache::files_under(out)
            .iter()
            .any(|p| p.ends_with("victim/load.json"));
        if started {
            std::thread::sleep(Duration::from_secs(2));
            return;
        }
        assert!(Instant::now() < deadline, "the load step never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn finish(child: std::process::Child) -> (i32, String, String) {
    let o = child.wait_with_output().expect("dbduel ends");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn nothing_left(out: &Path) {
    assert!(sandbox::find(out).is_empty(), "a sandbox was left behind");
    let left = common::processes_mentioning(out.to_str().unwrap());
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn a_server_killed_mid_step_is_noticed_reported_and_cleaned_up() {
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "mariadb", "buffer_pool_mb = 32", 8);
    let child = spawn(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let pid = sandbox_pid(&out);
    wait_for_queries(&out);
    let killed = Instant::now();
    sandbox::signal(pid, libc::SIGKILL);
    let (code, stdout, stderr) = finish(child);
    let took = killed.elapsed();
    assert_eq!(code, 1, "{stderr}\n{stdout}");
    assert!(
        took < Duration::from_secs(8),
        "dbduel took {took:?} to finish after the kill"
    );
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["status"], "failed");
    assert_eq!(
        step(&summary, "victim", "load")["status"],
        "ok",
        "finished results are kept"
    );
    let q = step(&summary, "victim", "queries");
    assert_eq!(q["status"], "failed");
    let note = q["note"].as_str().unwrap();
    assert!(
        note.contains("server died") && note.contains("SIGKILL"),
        "{note}"
    );
    // noticed within 2 s of the kill: the note says when, relative to the step's start
    let noticed: f64 = note
        .split("noticed ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    let step_json = read_json(&dir.join("victim").join("queries.json"));
    assert!(
        step_json["details"]["server_log_tail"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{step_json:#}"
    );
    // The kill came 2 s after the load ended, so the step was about 2 s old: a notice by
    // 4 s into the step is within 2 s of the kill.
    assert!(noticed <= 4.0, "noticed {noticed} s into the step");
    assert_eq!(step(&summary, "victim", "count")["status"], "skipped");
    assert!(
        stderr.contains("FAILED victim · queries") && stderr.contains("server died"),
        "{stderr}"
    );
    nothing_left(&out);
}

#[test]
fn ctrl_c_stops_gracefully_keeps_partial_results_and_exits_130() {
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "mariadb", "buffer_pool_mb = 32", 4);
    let child = spawn(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let _ = sandbox_pid(&out);
    wait_for_queries(&out);
    let sent = Instant::now();
    sandbox::signal(child.id() as i32, libc::SIGINT);
    let (code, stdout, stderr) = finish(child);
    assert_eq!(code, 130, "{stderr}\n{stdout}");
    assert!(
        sent.elapsed() < Duration::from_secs(8),
        "took {:?}",
        sent.elapsed()
    );
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["status"], "interrupted");
    assert_eq!(step(&summary, "victim", "load")["status"], "ok");
    let q = step(&summary, "victim", "queries");
    assert_eq!(q["status"], "interrupted");
    assert!(
        q["ops_per_s"].as_f64().unwrap() > 0.0,
        "partial figures are kept: {q:#}"
    );
    assert!(
        dir.join("victim")
            .join("queries.intervals.ndjson")
            .is_file()
    );
    assert_eq!(step(&summary, "victim", "count")["status"], "interrupted");
    nothing_left(&out);
}

#[test]
fn a_server_out_of_connections_names_contender_step_and_server_message() {
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(
        tmp.path(),
        "mariadb",
        "buffer_pool_mb = 32, server = { max_connections = 5 }",
        20,
    );
    let (code, _, stderr) = run(&[
        "run",
        s.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("FAILED victim · queries") && stderr.contains("Too many connections"),
        "{stderr}"
    );
    nothing_left(&out);
}

#[test]
fn a_server_that_refuses_connections_is_a_clear_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = tmp.path().join("refused.toml");
    let text = std::fs::read_to_string(study(tmp.path(), "mariadb", "", 2))
        .unwrap()
        .replace(
            "engine = \"mariadb\"",
            &format!("engine = \"mariadb\"\ntarget = \"mysql://root@127.0.0.1:{port}\""),
        );
    std::fs::write(&p, text).unwrap();
    let (code, _, stderr) = run(&[
        "run",
        p.to_str().unwrap(),
        "-q",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("victim")
            && stderr.contains("cannot connect")
            && stderr.contains("refused"),
        "{stderr}"
    );
}

/// A small tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .ok()?
            .success();
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_a_clear_failure() {
    if !is_root() {
        eprintln!("skipping: mounting a small tmpfs needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small"), "24m") else {
        panic!("could not mount a tmpfs as root");
    };
    // SQLite: 30,000 rows (~25 MiB of table, plus the dataset file) cannot fit. dbduel sees
    // that before it starts (exit 2); told to go ahead, it fails cleanly when the disk fills.
    let s = study(tmp.path(), "sqlite", "", 2)
        .to_str()
        .unwrap()
        .to_string();
    let out = fs.0.to_str().unwrap();
    let (code, _, stderr) = run(&["run", &s, "-q", "--out", out, "--set", "dataset.rows=30000"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("need about") && stderr.contains("free"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&[
        "run",
        &s,
        "-q",
        "--out",
        out,
        "--set",
        "dataset.rows=30000",
        "--skip-resource-check",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("FAILED")
            && (stderr.contains("disk is full") || stderr.contains("No space left")),
        "{stderr}"
    );
    drop(fs);

    if !common::have_mariadb() {
        return;
    }
    // MariaDB: the data directory fills during the load.
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small2"), "260m") else {
        panic!("could not mount a tmpfs as root");
    };
    let s = study(
        tmp.path(),
        "mariadb",
        "buffer_pool_mb = 16, server = { innodb_log_file_size = \"8M\" }",
        2,
    )
    .to_str()
    .unwrap()
    .to_string();
    let (code, _, stderr) = run(&[
        "run",
        &s,
        "-q",
        "--out",
        fs.0.to_str().unwrap(),
        "--set",
        "dataset.rows=200000",
        "--skip-resource-check",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("FAILED victim · load")
            && (stderr.contains("full") || stderr.contains("space")),
        "{stderr}"
    );
    nothing_left(&fs.0);
}

/// A copy of a fixture run made into shard `index` of 2, with its first contender renamed.
fn forged_shard(tmp: &Path, index: u32, contender: &str) -> PathBuf {
    let from =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/shootout-20261122-034526");
    let dir = tmp.join(format!("shard-{index}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = read_json(&from.join("manifest.json"));
    manifest["shards"] = serde_json::json!([
        {"index": index, "count": 2, "group": "g", "hostname": "h"}
    ]);
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    let mut summary = read_json(&from.join("summary.json"));
    summary["contenders"][0]["name"] = serde_json::json!(contender);
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
    dir
}

#[test]
fn merge_refuses_a_shard_naming_a_path_outside_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    let a = forged_shard(tmp.path(), 0, "../escaped");
    let b = forged_shard(tmp.path(), 1, "../escaped");
    let out = tmp.path().join("merged").join("run");
    let (code, _, stderr) = run(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("summary.json") && stderr.contains("\"../escaped\""),
        "names the file and the name: {stderr}"
    );
    assert!(!tmp.path().join("merged").join("escaped").exists());
    assert!(!tmp.path().join("escaped").exists());
    assert!(!out.exists(), "nothing written");
}
