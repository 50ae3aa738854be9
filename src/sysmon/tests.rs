//! Tests against the real `/proc` of the machine running them.

use super::facts::unescape_mount;
use super::host::{self, keep_device};
use super::procs::{ProcTable, TreeTracker, parse_stat};
use super::*;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;

/// The tests measure this process's CPU, so they must not overlap.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn me() -> i32 {
    i32::try_from(std::process::id()).unwrap()
}

/// A child process that is killed and reaped when dropped, so a failing
/// assertion cannot leave a busy loop spinning.
struct Reaped(Child);

impl Reaped {
    fn spawn(script: &str) -> Reaped {
        Reaped(Command::new("sh").args(["-c", script]).spawn().unwrap())
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.0.id()).unwrap()
    }

    /// Kills (if still running) and reaps the child.
    fn finish(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        self.finish();
    }
}

fn busy_child() -> Reaped {
    Reaped::spawn("while :; do :; done")
}

fn secs(ticks: u64) -> f64 {
    ticks as f64 / clock_ticks_per_second() as f64
}

#[test]
fn sampler_ticks_cpu_burn_and_prompt_stop() {
    let _g = serial();
    let start = Instant::now();
    let sampler = Sampler::start(
        start,
        Targets {
            engine_pids: vec![me()],
            self_pid: me(),
        },
    );
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                x
            })
        })
        .collect();
    sleep((start + Duration::from_millis(2500)).saturating_duration_since(Instant::now()));
    let t0 = Instant::now();
    let samples = sampler.stop();
    let stop_took = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        b.join().unwrap();
    }

    assert!(
        stop_took < Duration::from_millis(300),
        "stop took {stop_took:?}"
    );
    let ticks: Vec<u64> = samples.iter().map(|s| s.tick).collect();
    assert_eq!(ticks, vec![1, 2, 3], "{samples:#?}");
    for s in &samples[..2] {
        assert!(
            s.t_s >= s.tick as f64 && s.t_s < s.tick as f64 + 0.2,
            "tick {} at {}",
            s.tick,
            s.t_s
        );
    }
    let last = &samples[2];
    assert!(last.t_s > 2.4 && last.t_s < 2.8, "partial at {}", last.t_s);

    let max_self = samples.iter().map(|s| s.dbduel.cpu_pct).fold(0.0, f64::max);
    assert!(max_self >= 50.0, "dbduel cpu {max_self}: {samples:#?}");
    for s in &samples {
        let c = &s.cpu;
        let sum = c.user_pct + c.sys_pct + c.idle_pct + c.iowait_pct + c.steal_pct;
        assert!((sum - 100.0).abs() < 0.5, "cpu sum {sum}");
        assert!(s.mem.total_bytes > 0 && s.mem.available_bytes <= s.mem.total_bytes);
        assert_eq!(s.mem.used_bytes, s.mem.total_bytes - s.mem.available_bytes);
        assert!(s.devices.iter().all(|d| keep_device(&d.name)));
        assert!(
            s.devices
                .iter()
                .all(|d| (0.0..=100.0).contains(&d.busy_pct))
        );
        assert_eq!(s.dbduel.pids, 1);
        assert!(s.dbduel.rss_bytes > 0);
        assert!(s.dbduel.write_bytes_per_s.is_some(), "own io readable");
        let engine = s.engine.as_ref().unwrap();
        assert!(engine.pids >= 1);
        // The tree is us plus children: never less than us alone.
        assert!(engine.cpu_pct + 1e-6 >= s.dbduel.cpu_pct);
    }

    let json = serde_json::to_value(&samples[0]).unwrap();
    for key in ["t_s", "tick", "cpu", "mem", "devices", "engine", "dbduel"] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert!(json["cpu"].get("iowait_pct").is_some());
    assert!(json["mem"].get("cached_bytes").is_some());
    assert!(json["dbduel"].get("rss_bytes").is_some());
}

#[test]
fn missing_engine_is_none_and_short_runs() {
    let _g = serial();
    let targets = Targets {
        engine_pids: vec![0x3fff_fff0], // above any possible pid_max
        self_pid: me(),
    };
    // Stopped before 0.2 s: baseline only, no sample.
    let s = Sampler::start(Instant::now(), targets.clone());
    assert!(s.stop().is_empty());

    let start = Instant::now();
    let s = Sampler::start(start, targets.clone());
    sleep(Duration::from_millis(350));
    let t0 = Instant::now();
    let samples = s.stop();
    assert!(t0.elapsed() < Duration::from_millis(300));
    assert_eq!(samples.len(), 1, "{samples:#?}");
    let p = &samples[0];
    assert_eq!(p.tick, 1);
    assert!(p.t_s > 0.3 && p.t_s < 0.6, "partial at {}", p.t_s);
    assert!(p.engine.is_none());
    assert_eq!(p.dbduel.pids, 1);

    // Dropping without stop does not hang.
    let t0 = Instant::now();
    drop(Sampler::start(Instant::now(), targets));
    assert!(t0.elapsed() < Duration::from_millis(300));
}

#[test]
fn tree_includes_spawned_child() {
    let _g = serial();
    let mut child = busy_child();
    let cpid = child.pid();
    let mut tracker = TreeTracker::default();
    let t0 = ProcTable::scan();
    tracker.update(me(), &ProcTable::default(), &t0, true);
    sleep(Duration::from_millis(500));
    let t1 = ProcTable::scan();
    let d = tracker.update(me(), &t0, &t1, true).unwrap();
    child.finish();

    assert_eq!(d.pids[0], me());
    assert!(d.pids.contains(&cpid), "{:?} lacks {cpid}", d.pids);
    assert!(secs(d.cpu_ticks) >= 0.1, "tree cpu {}s", secs(d.cpu_ticks));
    assert!(d.rss_pages > 0);

    // A single-process tracker sees just us.
    let mut alone = TreeTracker::default();
    let d = alone.update(me(), &t0, &t1, false).unwrap();
    assert_eq!(d.pids, vec![me()]);
}

#[test]
fn reaped_child_counted_once() {
    let _g = serial();
    let mut child = busy_child();
    let cpid = child.pid();
    sleep(Duration::from_millis(400)); // CPU before the baseline must not count
    let mut tracker = TreeTracker::default();
    let t0 = ProcTable::scan();
    let at0 = Instant::now();
    tracker.update(me(), &ProcTable::default(), &t0, true);
    assert!(t0.stats.contains_key(&cpid));
    sleep(Duration::from_millis(400));
    child.finish(); // reaped: its times fold into our cutime
    let t1 = ProcTable::scan();
    let interval = at0.elapsed().as_secs_f64();
    let d = tracker.update(me(), &t0, &t1, true).unwrap();
    assert!(!d.pids.contains(&cpid));
    // The tree's CPU less this process's own threads' (other tests run in them at the same
    // time): what the child added.
    let own = |t: &ProcTable| t.stats.get(&me()).map_or(0, |s| s.own_ticks);
    let cpu = secs(d.cpu_ticks) - secs(own(&t1).saturating_sub(own(&t0)));
    // At most one core for the child; without the debt the child's pre-baseline 0.4 s
    // would be counted again.
    assert!(cpu <= interval + 0.15, "child cpu {cpu}s over {interval}s");
    assert!(cpu >= 0.05, "reaped child's last interval lost: {cpu}s");
}

#[test]
fn short_lived_child_counted_via_cutime() {
    let _g = serial();
    let mut tracker = TreeTracker::default();
    let t0 = ProcTable::scan();
    tracker.update(me(), &ProcTable::default(), &t0, true);
    let mut child = busy_child();
    sleep(Duration::from_millis(300));
    child.finish();
    let t1 = ProcTable::scan();
    let d = tracker.update(me(), &t0, &t1, true).unwrap();
    assert!(secs(d.cpu_ticks) >= 0.05, "cpu {}s", secs(d.cpu_ticks));
}

#[test]
fn nonexistent_pid_tracks_as_none() {
    let mut tracker = TreeTracker::default();
    let t = ProcTable::scan();
    assert!(tracker.update(0x3fff_fff0, &t, &t, true).is_none());
    assert!(t.tree(0x3fff_fff0).is_empty());
}

#[test]
fn fsync_write_shows_up() {
    use std::io::Write;
    let _g = serial();
    let dir = std::env::temp_dir();
    let path = dir.join(format!("dd-sysmon-test-{}.bin", me()));
    let table0 = ProcTable::scan();
    let mut tracker = TreeTracker::default();
    tracker.update(me(), &ProcTable::default(), &table0, false);
    let before = host::read_disks();
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0x5au8; 1 << 20];
    for _ in 0..4 {
        f.write_all(&block).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);
    let after = host::read_disks();
    let table1 = ProcTable::scan();
    let d = tracker.update(me(), &table0, &table1, false).unwrap();
    std::fs::remove_file(&path).unwrap();

    let rates = host::disk_rates(&before, &after, 1.0);
    let written: f64 = rates.iter().map(|r| r.write_bytes_per_s).sum();
    let fs = filesystem_of(&dir).unwrap();
    eprintln!("fs {fs:?}, devices written {written} B, own io {:?}", d.io);
    if fs.source.starts_with("/dev/") && !rates.is_empty() {
        assert!(
            written >= (4 << 20) as f64,
            "only {written} B reached devices"
        );
    }
    if let Some(io) = d.io
        && fs.fs_type != "tmpfs"
    {
        assert!(io.write >= 4 << 20, "own write_bytes {}", io.write);
    }
}

#[test]
fn host_facts_and_filesystems() {
    let f = host_facts();
    assert!(!f.cpu_model.is_empty() && f.cpu_model != "unknown", "{f:?}");
    assert!(f.cores >= 1);
    assert!(f.mem_total_bytes > 0);
    assert!(!f.kernel.is_empty() && f.kernel != "unknown");
    assert!(!f.hostname.is_empty());
    assert!(clock_ticks_per_second() > 0 && page_size() >= 4096);

    let root = filesystem_of(Path::new("/")).unwrap();
    assert_eq!(root.mount_point, "/");
    assert!(!root.fs_type.is_empty() && !root.source.is_empty());
    // A path that does not exist yet resolves through its ancestors.
    let missing = filesystem_of(Path::new("/definitely/not/here/pgdata")).unwrap();
    assert_eq!(missing.mount_point, "/");
    // Longest match wins.
    let proc_fs = filesystem_of(Path::new("/proc/self/stat")).unwrap();
    assert_eq!(
        (proc_fs.fs_type.as_str(), proc_fs.mount_point.as_str()),
        ("proc", "/proc")
    );
    assert!(filesystem_of(Path::new("relative/dir")).is_some());
}

#[test]
fn parsing_helpers() {
    let line = b"123 (we)ird) (name) R 45 1 1 0 -1 4194560 10 0 0 0 7 3 2 1 20 0 1 0 999 1000 250 18446744073709551615";
    let st = parse_stat(line).unwrap();
    assert_eq!(
        (
            st.ppid,
            st.own_ticks,
            st.child_ticks,
            st.starttime,
            st.rss_pages
        ),
        (45, 10, 3, 999, 250)
    );
    assert!(parse_stat(b"123 (x) R 1 2").is_none());
    assert!(parse_stat(b"garbage").is_none());

    let own = std::fs::read("/proc/self/stat").unwrap();
    let st = parse_stat(&own).unwrap();
    assert_eq!(
        u32::try_from(st.ppid).unwrap(),
        std::os::unix::process::parent_id()
    );

    assert_eq!(unescape_mount(br"/mnt/my\040disk\134x"), b"/mnt/my disk\\x");
    assert_eq!(unescape_mount(br"/a\04"), br"/a\04");

    assert!(keep_device("nvme0n1") && keep_device("dm-0") && keep_device("sda"));
    assert!(!keep_device("loop3") && !keep_device("zram0") && !keep_device("ram1"));
}

#[test]
fn churning_tree_sums_to_reaped_total() {
    let _g = serial();
    // Nested chains that burn and exit together: grandchildren are reaped
    // by children that then exit and are reaped by us in the same interval.
    let script = r#"for i in 1 2; do sh -c 'timeout 0.6 sh -c "while :; do :; done" & timeout 0.8 sh -c "while :; do :; done"; wait'; done"#;
    let own_total = |t: &ProcTable| {
        let s = t.stats[&me()];
        s.own_ticks + s.child_ticks
    };
    let mut tracker = TreeTracker::default();
    let mut prev = ProcTable::scan();
    let truth0 = own_total(&prev);
    tracker.update(me(), &ProcTable::default(), &prev, true);
    let mut child = Reaped::spawn(script);
    let mut sum = 0u64;
    let mut done = false;
    while !done {
        sleep(Duration::from_millis(200));
        done = child.0.try_wait().unwrap().is_some();
        let cur = ProcTable::scan();
        sum += tracker.update(me(), &prev, &cur, true).unwrap().cpu_ticks;
        prev = cur;
    }
    let truth = own_total(&prev) - truth0;
    let slack = 5 + truth / 20;
    assert!(truth >= 50, "workload too small: {truth} ticks");
    assert!(
        sum.abs_diff(truth) <= slack,
        "tracked {sum} ticks, reaped total {truth}"
    );
}

/// A restarted server runs under a new pid: after `retarget`, its work is the engine's,
/// from its birth (the restart came back only once the new server was up). The engine root
/// first given sleeps; the busy process, born before tick 1 and told at 2.5 s, shows at
/// tick 3 with all its CPU since its birth.
#[test]
fn a_retargeted_engine_counts_its_new_process_from_its_birth() {
    let _g = serial();
    let idle = Reaped::spawn("sleep 30");
    let start = Instant::now();
    let sampler = Sampler::start(
        start,
        Targets {
            engine_pids: vec![idle.pid()],
            self_pid: me(),
        },
    );
    sleep(Duration::from_millis(300));
    let busy = busy_child();
    sleep((start + Duration::from_millis(2500)).saturating_duration_since(Instant::now()));
    sampler.retarget(vec![busy.pid()]);
    sleep((start + Duration::from_millis(3400)).saturating_duration_since(Instant::now()));
    let samples = sampler.stop();
    drop((idle, busy));
    let at = |tick: u64| {
        samples
            .iter()
            .find(|s| s.tick == tick)
            .and_then(|s| s.engine.as_ref())
            .map(|e| e.cpu_pct)
            .unwrap_or_else(|| panic!("tick {tick}: {samples:#?}"))
    };
    assert!(at(1) < 20.0, "the sleeping root: {}", at(1));
    assert!(at(2) < 20.0, "the sleeping root: {}", at(2));
    // 2.7 s of a busy process's life in a 1 s interval: above what one thread can use in
    // one second even if the machine's other work took half of it
    assert!(at(3) > 120.0, "the busy process since its birth: {}", at(3));
}
