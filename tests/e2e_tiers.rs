//! Device profiles and the storage-tiers study end to end: the kernel's throttle holds a cold
//! read to a profile's bandwidth and point selects to its IOPS, as dbduel's own device meter
//! measures them; a profile that cannot apply stops the run before it starts; no cgroup is
//! left after a run, an interrupted run, or `sandbox down` after dbduel was killed; and the
//! built-in study runs on every contender with its findings.

mod common;

use common::{figure, read_json, run, run_dir, step};
use dbduel::sandbox::device_profile::DeviceProfile;
use dbduel::sandbox::limits::Limits;
use dbduel::sysmon::disk_meter::DiskMeter;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// The device meter sees the whole disk: the tests that judge its figures run alone, so that
/// no other test's reads are counted in them; the others only need the disk to themselves
/// against those, and run beside one another.
static DISK: RwLock<()> = RwLock::new(());

/// For a test whose assertions are the device meter's figures.
fn alone() -> RwLockWriteGuard<'static, ()> {
    DISK.write().unwrap_or_else(|e| e.into_inner())
}

/// For a test that uses the disk but judges no figure of the whole device.
fn beside_others() -> RwLockReadGuard<'static, ()> {
    DISK.read().unwrap_or_else(|e| e.into_inner())
}

/// Can this machine throttle I/O under `dir` (root, a blkio or io controller, a disk)?
/// Fails instead when servers are required (CI), where it must.
fn can_throttle(dir: &Path) -> bool {
    let p = DeviceProfile::named("hdd").unwrap();
    match Limits::check_io(&p, dir) {
        Ok(()) => true,
        Err(e) => {
            assert!(
                std::env::var("DBDUEL_REQUIRE_SERVERS").as_deref() != Ok("1"),
                "cannot throttle here and DBDUEL_REQUIRE_SERVERS=1: {e}"
            );
            eprintln!("skipping: {e}");
            false
        }
    }
}

/// Directories of cgroups made by dbduel process `pid` that still exist.
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let prefix = format!("dbduel-{pid}-");
    let mut stack = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                out.push(e.path());
            } else if d.components().count() < 8 {
                stack.push(e.path());
            }
        }
    }
    out
}

/// A cold sequential read in a 50 MiB/s cgroup reads at most about 55 MiB/s, as dbduel's
/// device meter sees the disk — and does read the disk (it is not the page cache answering).
#[test]
fn a_cold_sequential_read_is_held_to_the_profile_bandwidth() {
    let _disk = alone();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    if !can_throttle(dir.path()) {
        return;
    }
    let file = dir.path().join("cold.bin");
    let st = std::process::Command::new("dd")
        .args(["if=/dev/urandom", "bs=1M", "count=160", "conv=fsync"])
        .arg(format!("of={}", file.display()))
        .stderr(std::process::Stdio::null())
        .status()
        .expect("dd writes");
    assert!(st.success());
    let ev = dbduel::oscache::evict(std::slice::from_ref(&file));
    assert!(ev.is_cold(), "{}", ev.method);
    let profile = DeviceProfile {
        name: "test-50MiB".into(),
        read_mb_s: 52, // 50 MiB/s
        write_mb_s: 52,
        read_iops: 100_000,
        write_iops: 100_000,
    };
    let limits = Limits::for_sandbox("seq-read", None, Some(&profile), dir.path())
        .expect("a cgroup")
        .expect("a profile makes one");
    let disk = limits.io().unwrap().1.name.clone();
    let mut cmd = std::process::Command::new("dd");
    cmd.arg(format!("if={}", file.display()))
        .args(["of=/dev/null", "bs=1M"])
        .stderr(std::process::Stdio::null());
    limits.apply(&mut cmd);
    let mut meter = DiskMeter::start(Some(&format!("/dev/{disk}")));
    let t = Instant::now();
    let mut child = cmd.spawn().expect("dd reads");
    let mut seconds = Vec::new();
    while child.try_wait().expect("wait").is_none() {
        std::thread::sleep(Duration::from_secs(1));
        seconds.extend(meter.tick());
    }
    let took = t.elapsed().as_secs_f64();
    // 160 MiB at 50 MiB/s: about 3.2 s; unthrottled it takes a fraction of a second
    assert!(took > 2.8, "the read took {took:.2} s: not throttled");
    let full: Vec<f64> = seconds
        .iter()
        .take(seconds.len().saturating_sub(1)) // the last second is partly idle
        .map(|s| s.read_bytes_per_s / (1 << 20) as f64)
        .collect();
    assert!(!full.is_empty(), "{seconds:?}");
    let top = full.iter().copied().fold(0.0, f64::max);
    let mean = full.iter().sum::<f64>() / full.len() as f64;
    assert!(top <= 55.0, "reads reached {top:.1} MiB/s: {full:?}");
    assert!(
        mean >= 35.0,
        "reads {mean:.1} MiB/s: not from the disk? {full:?}"
    );
    let dirs = limits.paths();
    drop(limits);
    assert!(dirs.iter().all(|d| !d.exists()), "{dirs:?} removed");
}

/// Point selects on a server whose reads are limited to 200 IOPS: the disk's reads stay
/// about there, and the selects fall far below the same server's unthrottled ones.
#[test]
fn an_iops_profile_holds_point_selects_to_its_reads() {
    let _disk = alone();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    if !common::have_mariadb() || !can_throttle(tmp.path()) {
        return;
    }
    let path = tmp.path().join("iops.toml");
    std::fs::write(&path, include_str!("studies/tiers_iops_profile.toml")).unwrap();
    let out = tmp.path().join("out");
    let (pid, code, stdout, stderr) = common::run_with_pid(&[
        "run",
        path.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let qps = |c: &str| figure(step(&summary, c, "lookups"), "best_qps").unwrap();
    let iops = |c: &str| figure(step(&summary, c, "lookups"), "read_iops_t8").unwrap();
    let (free, held) = (qps("free"), qps("held"));
    let seconds =
        read_json(&dir.join("held").join("lookups.json"))["details"]["disk_seconds"].clone();
    assert!(
        iops("held") <= 250.0,
        "the disk read {:.0} IOPS under a 200 IOPS profile; each second: {seconds}",
        iops("held")
    );
    assert!(
        iops("held") >= 100.0,
        "reads came from the disk: {:.0}",
        iops("held")
    );
    assert!(
        held * 4.0 < free,
        "throttled {held:.0} lookups/s against {free:.0} unthrottled"
    );
    // the load ran unthrottled and said so; the manifest states the profile's numbers
    let note = step(&summary, "held", "load")["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note.contains("unthrottled = true"), "{note}");
    let manifest = read_json(&dir.join("manifest.json"));
    let held_facts = manifest["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "held")
        .unwrap();
    let p = held_facts["effective"]["device_profile"].as_str().unwrap();
    assert!(
        p.contains("100 MB/s, 200 IOPS; writes 100 MB/s, 5000 IOPS"),
        "{p}"
    );
    assert!(cgroups_of(pid).is_empty(), "{:?}", cgroups_of(pid));
}

/// A profile on data that no disk holds (tmpfs) cannot be throttled: the run stops before
/// it starts, with exit 3 and the reason.
#[test]
fn a_profile_that_cannot_apply_stops_the_run_before_it_starts() {
    let _disk = beside_others();
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipping: no /dev/shm");
        return;
    }
    let out = tempfile::tempdir_in(shm).expect("tmp");
    let (code, _, stderr) = run(&[
        "run",
        "storage-tiers",
        "--scale",
        "functional",
        "--contender",
        "sqlite-hdd",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("contender `sqlite-hdd` asks for device_profile raid10-hdd (reads 375 MB/s, 900 IOPS; writes 375 MB/s, 450 IOPS)")
            && stderr.contains("cannot be applied here"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "nothing ran"
    );
}

// The storage-tiers study on each of its default contenders and one of the durable InnoDB
// twins, in two runs that go side by side, each with whole pairs of fast and slow twins (the
// findings compare a pair within its run).

#[test]
fn the_storage_tiers_study_runs_on_innodb_and_sqlite() {
    storage_tiers_on(
        &[
            "innodb-ssd",
            "innodb-hdd",
            "sqlite-ssd",
            "sqlite-hdd",
            "innodb-durable-hdd",
        ],
        &[
            ("innodb-ssd", "innodb-hdd", "innodb"),
            ("sqlite-ssd", "sqlite-hdd", "sqlite"),
        ],
    );
}

#[test]
fn the_storage_tiers_study_runs_on_myrocks_and_postgres() {
    storage_tiers_on(
        &["myrocks-ssd", "myrocks-hdd", "postgres-ssd", "postgres-hdd"],
        &[("postgres-ssd", "postgres-hdd", "postgres")],
    );
}

/// The built-in study at its functional scale on `contenders`: each step runs, the device
/// figures are there, the findings set each of `twins` (fast, slow, name) against each other on
/// their profiles, each server commits as the study asked, and no cgroup is left.
fn storage_tiers_on(contenders: &[&str], twins: &[(&str, &str, &str)]) {
    let _disk = beside_others();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    if !common::have_mariadb() || !common::have_postgres() || !can_throttle(tmp.path()) {
        return;
    }
    let out = tmp.path().join("out");
    let mut args = vec!["run", "storage-tiers", "--scale", "functional"];
    for &c in contenders {
        args.extend(["--contender", c]);
    }
    args.extend(["--out", out.to_str().unwrap(), "-q", "--format", "markdown"]);
    let (pid, code, stdout, stderr) = common::run_with_pid(&args);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    for &c in contenders {
        for st in [
            "load",
            "footprint",
            "cpu-bound",
            "io-bound",
            "insert-preload",
            "insert-full",
        ] {
            assert_eq!(step(&summary, c, st)["status"], "ok", "{c}/{st}");
        }
        let io = step(&summary, c, "io-bound");
        assert!(figure(io, "tps").unwrap() > 0.0, "{c}");
        assert!(figure(io, "busy_pct_t4").is_some(), "{c}: {io:#}");
        // every transaction found its row, and every insert went in (counted in the table)
        let details = read_json(&dir.join(c).join("io-bound.json"));
        assert_eq!(details["details"]["misses"], 0, "{c}");
        // the inserts went on from the fresh preload's 78 rows a table, not the 200 the
        // selects read
        assert_eq!(
            figure(step(&summary, c, "insert-preload"), "rows"),
            Some(40.0 * 78.0)
        );
        let ins = read_json(&dir.join(c).join("insert-full.json"));
        assert_eq!(ins["details"]["rows_before"][0], 78, "{c}: {ins:#}");
        assert!(
            ins["details"]["levels"][0]["transactions"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
    commits_as_the_original(&read_json(&dir.join("manifest.json")));
    // the original's five findings on MySQL are on InnoDB's twins: judged where they ran
    let judged = common::assert_findings_judged(&dir);
    let innodb = contenders.contains(&"innodb-ssd");
    assert_eq!(judged, if innodb { 5 } else { 0 });
    if innodb {
        assert!(stdout.contains("### What the original found"), "{stdout}");
    }
    for &(fast, slow, name) in twins {
        let line = format!(
            "{fast} on raid10-ssd (reads 750 MB/s, 40000 IOPS; writes 500 MB/s, 10000 IOPS) against {slow} on raid10-hdd (reads 375 MB/s, 900 IOPS; writes 375 MB/s, 450 IOPS): cpu-bound ×"
        );
        assert!(stdout.contains(&line), "{name}: no «{line}» in\n{stdout}");
    }
    assert!(
        stdout.contains("the original: 40 tables, 40 threads"),
        "{stdout}"
    );
    assert!(cgroups_of(pid).is_empty(), "{:?}", cgroups_of(pid));
    // the HTML report draws the profiles' limits
    let (code, html, _) = run(&["report", dir.to_str().unwrap(), "--format", "html"]);
    assert_eq!(code, 0);
    assert!(html.contains("raid10-hdd limit"), "no reference line");
}

/// Each server said it commits as the study asked: without a log flush (as the original's
/// MySQL and CUBRID), or, for the durable twins, with one at every commit.
fn commits_as_the_original(manifest: &serde_json::Value) {
    for c in manifest["contenders"].as_array().unwrap() {
        let (name, e) = (c["name"].as_str().unwrap(), &c["effective"]);
        let expected: &[(&str, &str)] = match name.split('-').next() {
            _ if name == "innodb-durable-hdd" => {
                &[("innodb_flush_log_at_trx_commit", "1"), ("log_bin", "OFF")]
            }
            Some("innodb") => &[
                ("innodb_flush_log_at_trx_commit", "0"),
                ("log_bin", "ON"),
                ("sync_binlog", "0"),
            ],
            Some("myrocks") => &[("rocksdb_flush_log_at_trx_commit", "0")],
            Some("postgres") => &[("synchronous_commit", "off")],
            // PRAGMA synchronous reads NORMAL back as 1: synced at checkpoints, not at commit
            Some("sqlite") => &[("journal_mode", "wal"), ("synchronous", "1")],
            _ => panic!("no rule for contender {name}"),
        };
        for (key, value) in expected {
            assert_eq!(e[*key], *value, "{name}: {e:#}");
        }
    }
}

/// A cache given as a share of the server's memory is a share of its memory limit when that
/// is less than the machine's (the oltp and tpcc studies' `full` regime, here in small), as
/// each server reads its size back.
#[test]
fn cache_shares_are_shares_of_the_memory_limit() {
    let _disk = beside_others();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    if !common::have_mariadb() || !can_throttle(tmp.path()) {
        return;
    }
    let study = r#"
[study]
name = "shares"
description = "cache shares of a memory limit"

[dataset]
generator = "sbtest"
tables = 1
rows = 100

[[contender]]
name = "innodb"
engine = "mariadb"
options = { buffer_pool_share = 0.25, memory_limit_mb = 1024, device_profile = "raid10-hdd" }

[[contender]]
name = "myrocks"
engine = "mariadb"
options = { storage_engine = "rocksdb", buffer_pool_mb = 16, block_cache_share = 0.125, memory_limit_mb = 1024, device_profile = "raid10-hdd" }

[[step]]
name = "load"
kind = "load"
"#;
    let (dir, _) = common::run_study_ok(&tmp.path().join("s.toml"), study, &tmp.path().join("out"));
    let manifest = read_json(&dir.join("manifest.json"));
    let e = |i: usize| manifest["contenders"][i]["effective"].clone();
    // a quarter and an eighth of 1024 MiB (multiples of InnoDB's 128 MiB chunks, so the
    // server keeps them as asked)
    assert_eq!(
        e(0)["innodb_buffer_pool_size"],
        (256u64 << 20).to_string(),
        "{:#}",
        e(0)
    );
    assert_eq!(
        e(1)["rocksdb_block_cache_size"],
        (128u64 << 20).to_string(),
        "{:#}",
        e(1)
    );
}

/// Killed with SIGKILL mid-run, dbduel leaves a server in its cgroups: `sandbox down` stops
/// the server and removes them; an interrupted run removes its own.
#[test]
fn no_cgroup_is_left_after_an_interrupt_or_a_kill() {
    let _disk = beside_others();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    if !common::have_mariadb() || !can_throttle(tmp.path()) {
        return;
    }
    let start = |out: &Path| {
        common::bin()
            .args([
                "run",
                "storage-tiers",
                "--scale",
                "functional",
                "--contender",
                "innodb-hdd",
                "--set",
                "step.cpu-bound.duration_s=60",
                "-q",
                "--out",
                out.to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("dbduel runs")
    };
    // wait until the cpu-bound step runs (its sandbox is up, in its cgroups)
    let wait_running = |out: &Path, pid: u32| {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let busy = std::fs::read_dir(out)
                .into_iter()
                .flatten()
                .flatten()
                .any(|d| d.path().join("innodb-hdd").join("footprint.json").exists());
            if busy && !cgroups_of(pid).is_empty() {
                std::thread::sleep(Duration::from_secs(2));
                return;
            }
            assert!(Instant::now() < deadline, "the step never started");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    for how in [libc::SIGINT, libc::SIGKILL] {
        let out = tmp.path().join(format!("out-{how}"));
        let mut child = start(&out);
        let pid = child.id();
        wait_running(&out, pid);
        dbduel::sandbox::signal(pid as i32, how);
        let status = child.wait().expect("dbduel ends");
        if how == libc::SIGINT {
            assert_eq!(status.code(), Some(130));
            assert!(cgroups_of(pid).is_empty(), "{:?}", cgroups_of(pid));
        } else {
            let left = cgroups_of(pid);
            assert!(!left.is_empty(), "the killed run left its server's cgroups");
            let (code, said, err) = run(&["sandbox", "down", "--out", out.to_str().unwrap()]);
            assert_eq!(code, 0, "{said}{err}");
            assert!(
                cgroups_of(pid).is_empty(),
                "{:?} after: {said}",
                cgroups_of(pid)
            );
            assert!(dbduel::sandbox::find(&out).is_empty(), "{said}");
        }
    }
}

/// A contender's `data_dir` puts its server's data on the device the user names: the data
/// directory is made there (owned by the server's account), measured there, and removed after
/// the run, leaving the user's directory as it was.
#[test]
fn data_dir_puts_the_data_where_the_user_says() {
    let _disk = beside_others();
    if !common::have_mariadb() || !common::have_postgres() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    let disk = tmp.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    // the PostgreSQL account must reach it, as it must any directory a user names
    for d in [tmp.path(), disk.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = tmp.path().join("dd.toml");
    let study =
        |dir: &str| common::fill(include_str!("studies/tiers_data_dir.toml"), &[("dir", dir)]);
    std::fs::write(&path, study(disk.to_str().unwrap())).unwrap();
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run(&[
        "run",
        path.to_str().unwrap(),
        "-q",
        "--keep",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let dir = run_dir(&stderr);
    // kept: each sandbox's data lives under data_dir, in a directory of dbduel's own
    let found = dbduel::sandbox::find(&out);
    assert_eq!(found.len(), 2, "{found:?}");
    for f in &found {
        let home = f.manifest.data_home.clone().expect("a data home");
        assert!(home.starts_with(&disk), "{home:?}");
        assert!(
            f.manifest.datadir.starts_with(&home),
            "{:?}",
            f.manifest.datadir
        );
    }
    let manifest = read_json(&dir.join("manifest.json"));
    for c in manifest["contenders"].as_array().unwrap() {
        let said = c["effective"]["data_dir"].as_str().unwrap();
        assert!(said.starts_with(disk.to_str().unwrap()), "{said}");
        assert!(c["effective"]["data_device"].is_string());
    }
    let (code, said, err) = run(&["sandbox", "down", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{said}{err}");
    assert_eq!(
        std::fs::read_dir(&disk).unwrap().count(),
        0,
        "data_dir is left as it was"
    );

    // a data_dir that is not there is refused with its place in the file
    std::fs::write(&path, study("/no/such/dir")).unwrap();
    let (code, _, stderr) = run(&["run", path.to_str().unwrap(), "--check"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("data_dir = \"/no/such/dir\" is not a directory on this machine"),
        "{stderr}"
    );
}
