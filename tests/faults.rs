//! Faults a benchmark tool must survive loudly and cleanly, on real servers: a server killed
//! mid-step, Ctrl-C, a server out of connections, one that refuses connections, a full disk.
//! Each would fail if dbduel hung, lied about the outcome, or left a server behind.

mod common;

use common::{read_json, run, run_dir, step};
use dbduel::sandbox;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
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
    // MariaDB: the data directory fills during the load. The server runs as dbduel's own
    // account, from a private directory under the temp directory unless `data_dir` puts its
    // data on a device: the small one, which that account must be able to reach.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small2"), "260m") else {
        panic!("could not mount a tmpfs as root");
    };
    let s = study(
        tmp.path(),
        "mariadb",
        &format!(
            "buffer_pool_mb = 16, data_dir = \"{}\", server = {{ innodb_log_file_size = \"8M\" }}",
            fs.0.display()
        ),
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

/// The fault study on `engine` with the contender's `key` (version or basedir) set, run
/// for real: (exit code, stderr), and the results root it was given.
fn run_with_binary(tmp: &Path, engine: &str, key: &str, value: &str) -> (i32, String, PathBuf) {
    let s = study(tmp, engine, "", 1);
    let out = tmp.join("out");
    let set = format!("contender.victim.{key}={value}");
    let (code, _, stderr) = run(&[
        "run",
        s.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--set",
        &set,
    ]);
    (code, stderr, out)
}

/// Nothing ran: no run directory, no sandbox, no server.
fn nothing_ran(out: &Path) {
    let entries = std::fs::read_dir(out).map(|d| d.count()).unwrap_or(0);
    assert_eq!(entries, 0, "something ran under {}", out.display());
    nothing_left(out);
}

#[test]
fn an_unknown_version_lists_what_is_installed_and_how_to_install_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stderr, out) = run_with_binary(tmp.path(), "mariadb", "version", "\"12.1\"");
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("MariaDB 12.1 is not installed here; installed: ")
            && stderr.contains("scripts/install-servers")
            && stderr.contains("basedir"),
        "{stderr}"
    );
    nothing_ran(&out);
    // an empty server cache: the message names what the script would install there
    let cache = tmp.path().join("empty-cache");
    std::fs::create_dir_all(&cache).unwrap();
    let s = study(tmp.path(), "postgres", "", 1);
    let o = common::bin()
        .env(dbduel::sandbox::binaries::ROOT_ENV, &cache)
        .args(["run", s.to_str().unwrap(), "-q", "--out"])
        .arg(tmp.path().join("out2"))
        .args(["--set", "contender.victim.version=17"])
        .output()
        .expect("dbduel runs");
    let (code, stderr) = (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("PostgreSQL 17 is not installed here")
            && stderr.contains("`scripts/install-servers` installs postgres-17.5")
            && stderr.contains(&format!(" into {}", cache.display())),
        "{stderr}"
    );
}

#[test]
fn a_basedir_without_a_server_fails_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("not-a-server");
    std::fs::create_dir_all(empty.join("bin")).unwrap();
    let value = format!("\"{}\"", empty.display());
    let (code, stderr, out) = run_with_binary(tmp.path(), "mariadb", "basedir", &value);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "basedir {} has no bin/mariadbd: it must be an unpacked MariaDB server",
            empty.display()
        )),
        "{stderr}"
    );
    nothing_ran(&out);
}

#[test]
fn a_server_binary_that_cannot_start_fails_with_the_loaders_words() {
    if !common::have_cached("postgres-17.5") {
        return;
    }
    // PostgreSQL 17's binary without the lib/ it was built against.
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("pg-without-lib");
    std::fs::create_dir_all(broken.join("bin")).unwrap();
    let cached = dbduel::sandbox::binaries::root().join("postgres-17.5/bin/postgres");
    std::fs::copy(&cached, broken.join("bin/postgres")).unwrap();
    let value = format!("\"{}\"", broken.display());
    let (code, stderr, out) = run_with_binary(tmp.path(), "postgres", "basedir", &value);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("cannot start: ")
            && stderr.contains("error while loading shared libraries")
            && stderr.contains("cannot open shared object file"),
        "{stderr}"
    );
    nothing_ran(&out);
}

#[test]
fn a_server_binary_others_could_replace_is_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared-server");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    // a "server" that would leave a mark if it ran
    let mark = tmp.path().join("it-ran");
    let bin = dir.join("bin/mariadbd");
    std::fs::write(&bin, format!("#!/bin/sh\ntouch {}\n", mark.display())).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o777)).unwrap();
    let value = format!("\"{}\"", dir.display());
    let (code, stderr, out) = run_with_binary(tmp.path(), "mariadb", "basedir", &value);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!("{} is writable by others", bin.display())),
        "{stderr}"
    );
    assert!(!mark.exists(), "the binary ran");
    nothing_ran(&out);
}

// ---------------------------------------------------------------------------------------
// Panics, a vanished reader, runs that never finished, and signals in every long phase.
// ---------------------------------------------------------------------------------------

/// Wait for `child` at most `limit`; kill it and fail when it takes longer (a hang).
fn finish_within(mut child: std::process::Child, limit: Duration) -> (i32, Duration) {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dbduel did not exit within {limit:?}: it hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// dbduel run in the background, its stderr gathered as it comes (for the test to watch).
fn spawn_watched(args: &[&str]) -> (std::process::Child, Arc<Mutex<String>>) {
    let mut child = common::bin()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dbduel starts");
    let text = Arc::new(Mutex::new(String::new()));
    let mut err = child.stderr.take().unwrap();
    let into = Arc::clone(&text);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut err, &mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (child, text)
}

/// Wait until `what` holds (at most 120 s).
fn wait_for(what: &str, mut holds: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !holds() {
        assert!(Instant::now() < deadline, "never saw: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The one run directory under `out`.
fn the_run(out: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// Send `sig` to a running dbduel; wait (at most `limit`) for it to exit 130 having
/// written an interrupted run and left nothing running.
fn interrupt(child: std::process::Child, sig: i32, out: &Path, limit: Duration) -> PathBuf {
    sandbox::signal(child.id() as i32, sig);
    let (code, took) = finish_within(child, Duration::from_secs(120));
    assert_eq!(code, 130, "exit code after signal {sig}");
    assert!(
        took < limit,
        "dbduel took {took:?} to stop after signal {sig}"
    );
    let dir = the_run(out);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["status"], "interrupted", "{summary:#}");
    nothing_left(out);
    dir
}

#[test]
fn a_closed_stderr_reader_neither_panics_nor_hangs_the_run() {
    // `dbduel run … 2>&1 | head -3`: the reader takes three lines and goes away.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "sqlite", "", 2);
    let (reader, writer) = std::io::pipe().unwrap();
    let child = common::bin()
        .args(["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(["--set", "step.queries.duration_s=2"])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .expect("dbduel starts");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(reader));
    for _ in 0..3 {
        lines.next().unwrap().unwrap();
    }
    drop(lines);
    let (code, _) = finish_within(child, Duration::from_secs(60));
    assert_eq!(
        code, 0,
        "the run panicked or failed once its reader went away"
    );
    let summary = read_json(&the_run(&out).join("summary.json"));
    assert_eq!(summary["status"], "ok", "{summary:#}");
    nothing_left(&out);
}

#[test]
fn sandbox_up_with_its_readers_gone_neither_panics_nor_loses_the_sandbox() {
    // `dbduel sandbox up mariadb 2>&1 | true`: nobody reads what it prints.
    if !common::have_mariadb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = common::bin()
        .args(["sandbox", "up", "mariadb", "--out", out.to_str().unwrap()])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .expect("dbduel starts");
    let (code, _) = finish_within(child, Duration::from_secs(120));
    assert_eq!(
        code, 0,
        "sandbox up panicked or failed with its readers gone"
    );
    let (code, said, _) = run(&["sandbox", "status", "--out", out.to_str().unwrap()]);
    assert!(code == 0 && said.contains("running"), "{said}");
    let (code, _, err) = run(&["sandbox", "down", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_panic_in_a_step_fails_it_keeps_earlier_steps_and_stops_the_server() {
    // A server contender when there is one, so that its server must be stopped too.
    let (engine, options) = if common::have_mariadb() {
        ("mariadb", "buffer_pool_mb = 32")
    } else {
        ("sqlite", "")
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), engine, options, 2);
    let child = common::bin()
        .args(["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("DBDUEL_TEST_PANIC_IN_STEP", "queries")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dbduel starts");
    let (code, _) = finish_within(child, Duration::from_secs(120));
    assert_eq!(code, 1, "a panicked step fails the run");
    let summary = read_json(&the_run(&out).join("summary.json"));
    assert_eq!(summary["status"], "failed");
    assert_eq!(step(&summary, "victim", "load")["status"], "ok");
    let q = step(&summary, "victim", "queries");
    assert_eq!(q["status"], "failed");
    assert!(q["note"].as_str().unwrap().contains("panicked"), "{q:#}");
    assert_eq!(step(&summary, "victim", "count")["status"], "skipped");
    nothing_left(&out);
}

#[test]
fn a_run_killed_mid_step_reads_as_unfinished_and_compare_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "sqlite", "", 2);
    let child = spawn(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    wait_for_queries(&out);
    sandbox::signal(child.id() as i32, libc::SIGKILL);
    let _ = finish(child);
    let dir = the_run(&out);
    assert_eq!(
        read_json(&dir.join("summary.json"))["status"],
        "running",
        "a run that never finished must not say it did"
    );
    let (code, stdout, stderr) = run(&["list", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("unfinished"), "{stdout}");
    let d = dir.to_str().unwrap();
    let (code, stdout, stderr) = run(&["compare", d, d]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("did not finish"), "{stderr}");
}

#[test]
fn ctrl_c_during_generation_exits_130_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "sqlite", "", 2);
    // A million rows: some 15 s of generating in a debug build.
    let (child, _) = spawn_watched(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "dataset.rows=1000000",
        "--skip-resource-check",
    ]);
    wait_for("the dataset's file", || {
        dbduel::oscache::files_under(&out)
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "tsv"))
    });
    let dir = interrupt(child, libc::SIGINT, &out, Duration::from_secs(4));
    assert!(!dir.join("work").exists(), "the partial dataset is removed");
}

#[test]
fn ctrl_c_during_the_load_exits_130_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "sqlite", "", 2);
    // A million rows: some 9 s of loading into SQLite in a debug build.
    let (child, stderr) = spawn_watched(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "dataset.rows=1000000",
        "--skip-resource-check",
    ]);
    wait_for("the load step", || {
        stderr.lock().unwrap().contains("victim · load ...")
    });
    std::thread::sleep(Duration::from_millis(500));
    let dir = interrupt(child, libc::SIGINT, &out, Duration::from_secs(4));
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(step(&summary, "victim", "load")["status"], "interrupted");
    assert_eq!(step(&summary, "victim", "count")["status"], "interrupted");
}

#[test]
fn ctrl_c_during_server_start_exits_130_with_no_server_left() {
    if !common::have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // A primary and two streaming replicas: some 11 s of starting.
    let s = study(
        tmp.path(),
        "postgres",
        "shared_buffers_mb = 32, replicas = [{ name = \"r1\" }, { name = \"r2\" }]",
        2,
    );
    let (child, _) = spawn_watched(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let pid = child.id();
    wait_for("the first sandbox", || !sandbox::find(&out).is_empty());
    let dir = interrupt(child, libc::SIGINT, &out, Duration::from_secs(6));
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(step(&summary, "victim", "load")["status"], "interrupted");
    // Nor a private directory (outside the run's, named after dbduel's pid) of a server that
    // never finished starting.
    let private = std::env::temp_dir().join("dbduel-sandboxes");
    let left: Vec<_> = std::fs::read_dir(&private)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{pid}-"))
        })
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "private directories left: {left:?}");
}

#[test]
fn sighup_stops_a_run_as_the_first_ctrl_c_does() {
    // An ssh session that drops sends SIGHUP: the run stops cleanly, it is not killed.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let s = study(tmp.path(), "sqlite", "", 2);
    let child = spawn(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    wait_for_queries(&out);
    let dir = interrupt(child, libc::SIGHUP, &out, Duration::from_secs(6));
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(step(&summary, "victim", "load")["status"], "ok");
    assert_eq!(step(&summary, "victim", "queries")["status"], "interrupted");
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

/// Write a `sandbox.json` in `dir` naming `pid`, with `extra` fields on top (paths outside).
fn forged_sandbox(dir: &Path, pid: i32, extra: serde_json::Value) {
    std::fs::create_dir_all(dir).unwrap();
    let mut m = serde_json::json!({
        "schema_version": 1,
        "flavor": "mariadb",
        "name": "forged",
        "dir": dir,
        "datadir": dir.join("data"),
        "port": 1,
        "socket": dir.join("server.sock"),
        "config_file": dir.join("server.cnf"),
        "log_file": dir.join("server.log"),
        "pid": pid,
        "owner_pid": 999_999_999,
        "server_version": null,
        "started_at": null,
        "config": "",
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    std::fs::write(dir.join("sandbox.json"), m.to_string()).unwrap();
}

/// The start time of `pid` in clock ticks after boot (`/proc/PID/stat` field 22).
fn start_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn sandbox_down_never_signals_a_stranger_nor_removes_what_is_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let boxes = out.join("sandboxes");
    // Outside paths a forged sandbox.json names: a private directory reached with `..`, a
    // data directory elsewhere, a file as its socket.
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("dbduel-data-1-x-0")).unwrap();
    std::fs::write(outside.join("keep"), "mine").unwrap();
    std::fs::create_dir_all(tmp.path().join("dbduel-sandboxes")).unwrap();
    // A process that took the pid of a server gone long ago (it started at another time).
    let mut stranger = Command::new("sleep").arg("60").spawn().unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    forged_sandbox(
        &boxes.join("reused"),
        stranger.id() as i32,
        serde_json::json!({
            "pid_stamp": {"start_ticks": start_ticks(stranger.id()) + 1, "boot_id": boot.trim()},
            "private_dir": tmp.path().join("dbduel-sandboxes").join("..").join("outside"),
            "data_home": outside.join("dbduel-data-1-x-0"),
            "socket": outside.join("keep"),
        }),
    );
    // A process whose command line names the sandbox's configuration, in a sandbox.json of
    // an older dbduel that recorded no start time: it cannot be told from the server.
    let old = boxes.join("old");
    let mut lookalike = Command::new("sh")
        .args(["-c", "sleep 60", "sh"])
        .arg(old.join("server.cnf"))
        .spawn()
        .unwrap();
    forged_sandbox(&old, lookalike.id() as i32, serde_json::json!({}));
    // Once it has called exec, its command line is its own.
    let cmdline = format!("/proc/{}/cmdline", lookalike.id());
    let named = old.join("server.cnf");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&cmdline).is_ok_and(|c| c.contains(named.to_str().unwrap())) {
        assert!(Instant::now() < deadline, "sh never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (code, stdout, stderr) = common::bin()
        .args(["sandbox", "down", "--out"])
        .arg(&out)
        .env("TMPDIR", tmp.path())
        .output()
        .map(|o| {
            (
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .unwrap();
    let said = format!("{stdout}\n{stderr}");
    let alive = |c: &mut std::process::Child| c.try_wait().unwrap().is_none();
    assert!(alive(&mut stranger), "the stranger was signalled: {said}");
    assert!(
        alive(&mut lookalike),
        "the unproven process was signalled: {said}"
    );
    let _ = stranger.kill();
    let _ = lookalike.kill();
    let _ = stranger.wait();
    let _ = lookalike.wait();
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains(&format!("pid {} is not", stranger.id())),
        "says the pid is a stranger's: {said}"
    );
    assert!(
        said.contains("no start time") && said.contains(&format!("kill {}", lookalike.id())),
        "says why the older sandbox is kept and what to do: {said}"
    );
    assert!(said.contains("refusing"), "{said}");
    assert_eq!(
        std::fs::read_to_string(outside.join("keep")).unwrap(),
        "mine"
    );
    assert!(outside.join("dbduel-data-1-x-0").is_dir());
    assert!(
        old.join("sandbox.json").is_file(),
        "the unproven sandbox is kept"
    );
}

/// Whether PostgreSQL's server is installed (a server dbduel runs as another user when root).
fn have_postgres() -> bool {
    common::have_server(
        "postgres",
        std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|mut d| d.next().is_some()),
    )
}

/// `dbduel sandbox up postgres` as root with TMPDIR at `tmp`: (exit code, stdout + stderr).
fn sandbox_up_in(tmp: &Path, name: &str) -> (i32, String) {
    let out = tmp.join("out");
    let o = common::bin()
        .args(["sandbox", "up", "postgres", "--name", name, "--out"])
        .arg(&out)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    // Whatever happened, nothing stays running.
    let _ = common::bin()
        .args(["sandbox", "down", "--all", "--out"])
        .arg(&out)
        .env("TMPDIR", tmp)
        .output();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn a_private_root_planted_by_someone_else_is_passed_over_and_left_untouched() {
    if !is_root() || !have_postgres() {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = tempfile::tempdir().unwrap();
    // The servers' account must reach its directories under this TMPDIR.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    // A symlink at the private root, to a directory of someone else's.
    let victim = tmp.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::chown(&victim, Some(65534), Some(65534)).unwrap();
    let root = tmp.path().join("dbduel-sandboxes");
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    let (code, said) = sandbox_up_in(tmp.path(), "link");
    assert_eq!(code, 0, "a planted root stops no sandbox: {said}");
    let m = std::fs::metadata(&victim).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o750, "the link's target keeps its mode");
    assert_eq!(m.uid(), 65534, "and its owner");
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing made in it"
    );

    // A root another account made first, and one anyone can write into.
    std::fs::remove_file(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
    let (code, said) = sandbox_up_in(tmp.path(), "owned");
    assert_eq!(code, 0, "{said}");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "{said}");
    assert_eq!(std::fs::metadata(&root).unwrap().uid(), 65534);
    std::os::unix::fs::chown(&root, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, said) = sandbox_up_in(tmp.path(), "writable");
    assert_eq!(code, 0, "{said}");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "{said}");
    let m = std::fs::metadata(&root).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o777, "left as it was");
}
