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
fn a_private_root_planted_by_someone_else_is_refused_and_left_untouched() {
    if !is_root() || !have_postgres() {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = tempfile::tempdir().unwrap();
    // A symlink at the private root, to a directory of someone else's.
    let victim = tmp.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::chown(&victim, Some(65534), Some(65534)).unwrap();
    let root = tmp.path().join("dbduel-sandboxes");
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    let (code, said) = sandbox_up_in(tmp.path(), "link");
    assert_ne!(code, 0, "{said}");
    assert!(
        said.contains("symbolic link") && said.contains("TMPDIR"),
        "{said}"
    );
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
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("uid 65534"), "{said}");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "{said}");
    std::os::unix::fs::chown(&root, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, said) = sandbox_up_in(tmp.path(), "writable");
    assert_ne!(code, 0, "{said}");
    assert!(said.contains("other accounts can write"), "{said}");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "{said}");
}
