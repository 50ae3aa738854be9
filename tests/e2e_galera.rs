//! End to end on real MariaDB Galera clusters provisioned by dbduel: three nodes start,
//! reach Synced, take writes on every node, hold equal checksums and are removed with
//! nothing left running; conflicting writes over the nodes are counted exactly as the nodes'
//! own `wsrep_local_cert_failures` and `wsrep_local_bf_aborts` count them; a node killed on
//! purpose mid-step leaves a result that says how the others went on (exit 0), and one lost
//! unplanned fails the run with the figures kept (exit 1). With DBDUEL_REQUIRE_SERVERS=1 (CI)
//! a missing server fails.

mod common;

use common::{figure, have_server, read_json, run, run_dir, step};
use dbduel::engine::OpenCtx;
use dbduel::engine::cluster::{self, Clustered};
use dbduel::engines::EngineConfig;
use mysql::prelude::Queryable;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn have_galera() -> bool {
    have_server(
        "MariaDB with Galera (galera-4, rsync)",
        (Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists())
            && Path::new(dbduel::engines::mariadb::recipe::GALERA_PROVIDER).exists(),
    )
}

/// Running processes whose command line names a private sandbox directory of dbduel
/// process `pid` (a Galera node reads its configuration there).
fn nodes_of(pid: u32) -> Vec<String> {
    common::processes_mentioning(&format!("dbduel-sandboxes/{pid}-"))
}

/// Wait until the live nodes agree on their last transaction.
fn settle(c: &dyn Clustered) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s: Vec<_> = (0..c.node_count()).map(|i| c.node_status(i).ok()).collect();
        if cluster::settled(&s) {
            return;
        }
        assert!(Instant::now() < deadline, "never settled: {s:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_nodes_sync_take_writes_everywhere_agree_and_leave_nothing() {
    if !have_galera() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let options: toml::Table =
        toml::from_str("buffer_pool_mb = 64\ncluster = { nodes = 3, flow_control_limit = 32 }")
            .expect("options");
    let config = EngineConfig::decode("mariadb", &options, None, &Default::default())
        .expect("valid options");
    let engine = config
        .open(&OpenCtx {
            contender: "galera",
            dir: root.path(),
            database: "dbduel_galera",
            max_clients: 4,
        })
        .expect("the cluster starts");
    let c = engine.cluster().expect("a cluster");
    assert_eq!(c.node_count(), 3);
    for i in 0..3 {
        let s = c.node_status(i).expect("status");
        assert_eq!(
            (s.cluster_size, s.state.as_str(), s.ready),
            (3, "Synced", true)
        );
    }
    // The settings asked for are the ones the nodes run with, read back.
    let info = engine.info().expect("info");
    assert_eq!(
        info.settings["node-3.gcs.fc_limit"], "32",
        "{:?}",
        info.settings
    );
    assert_eq!(info.settings["node-2.binlog_format"], "ROW");
    // Every node takes writes; each sees the others' once the cluster settles.
    let mut s0 = c.node_session(0).expect("node 1");
    s0.execute("CREATE TABLE w (id INT PRIMARY KEY, node INT NOT NULL)")
        .expect("create");
    for i in 0..3 {
        let mut s = c.node_session(i).expect("session");
        let n = s
            .execute(&format!("INSERT INTO w VALUES ({i}, {i})"))
            .expect("a write on every node");
        assert_eq!(n, 1);
    }
    settle(c);
    for i in 0..3 {
        let mut s = c.node_session(i).expect("session");
        assert_eq!(s.query_i64("SELECT COUNT(*) FROM w").expect("count"), 3);
    }
    let sums: Vec<_> = (0..3).map(|i| c.checksums(i).expect("checksums")).collect();
    assert!(sums.iter().all(|s| s == &sums[0]), "{sums:?}");
    assert!(sums[0].iter().any(|t| t.table == "w"));
    // A write is certified everywhere but applied on each node in its own time: with node 3's
    // applier held (a global read lock there), a plain read on node 3 misses node 1's new
    // row, and a causal read (what the load step counts its rows with) waits for it.
    let mut lock = c.node_session(2).expect("node 3");
    lock.execute("FLUSH TABLES WITH READ LOCK")
        .expect("hold node 3's applier");
    s0.execute("INSERT INTO w VALUES (3, 0)")
        .expect("a write on node 1");
    let mut plain = c.node_session(2).expect("node 3");
    assert_eq!(plain.query_i64("SELECT COUNT(*) FROM w").expect("count"), 3);
    let mut causal = c.causal_session(2).expect("a causal session on node 3");
    let reader = std::thread::spawn(move || causal.query_i64("SELECT COUNT(*) FROM w"));
    // The read must be seen waiting on node 3 before the applier is let go: a read that only
    // reached the server afterwards would prove nothing.
    let waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                   WHERE INFO = 'SELECT COUNT(*) FROM w' AND ID <> CONNECTION_ID()";
    let seen = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        lock.query_i64(waiting).expect("node 3's process list") == 1
    });
    assert!(seen, "the causal read never reached node 3");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !reader.is_finished(),
        "the causal read answered while node 3's applier was held"
    );
    lock.execute("UNLOCK TABLES")
        .expect("release node 3's applier");
    assert_eq!(reader.join().expect("reader").expect("causal count"), 4);
    // Every node runs as an account of its own sandbox's (never root, never the host's
    // `mysql`, never another node's), from a private directory.
    let found = dbduel::sandbox::find(root.path());
    assert_eq!(found.len(), 3, "one sandbox a node");
    for f in &found {
        common::assert_closed_to_strangers(&f.manifest);
    }
    let private: Vec<PathBuf> = found
        .iter()
        .filter_map(|f| f.manifest.private_dir.clone())
        .collect();
    assert_eq!(private.len(), 3);
    let pids: Vec<i32> = (0..3).filter_map(|i| c.node_pid(i)).collect();
    assert_eq!(pids.len(), 3);
    let mut uids: Vec<u32> = pids
        .iter()
        .map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next())
                .and_then(|u| u.parse().ok())
                .expect("uid")
        })
        .collect();
    uids.sort_unstable();
    if dbduel::sandbox::user::is_root() {
        let mut accounts: Vec<u32> = found
            .iter()
            .map(|f| f.manifest.account.as_ref().expect("the node's account").uid)
            .collect();
        accounts.sort_unstable();
        accounts.dedup();
        assert_eq!(accounts.len(), 3, "an account a node");
        assert_eq!(uids, accounts, "each node runs as its sandbox's account");
    }
    // A node another account starts, on the cluster's name and node 1's address, joins
    // neither in clear nor with a certificate of its own CA: the cluster stays three.
    let config = &found[0].manifest.config;
    let gcomm = config
        .split("gmcast.listen_addr=tcp://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .expect("node 1's group-communication port");
    for own_ca in [false, true] {
        let rogue = RogueNode::start(root.path(), gcomm, own_ca);
        let deadline = Instant::now() + Duration::from_secs(12);
        while Instant::now() < deadline {
            let size = c.node_status(0).expect("node 1").cluster_size;
            assert_eq!(size, 3, "a rogue node joined the cluster: {}", rogue.log());
            std::thread::sleep(Duration::from_millis(500));
        }
        let log = rogue.log();
        assert!(
            log.contains("connecting to group 'dbduel-galera'")
                && !log.contains("Synchronized with group")
                && !log.contains("-> SYNCED"),
            "the rogue node never tried, or joined: {log}"
        );
    }
    engine.finish(false).expect("finish");
    for pid in pids {
        assert!(!dbduel::sandbox::alive(pid), "node {pid} still runs");
    }
    for d in private {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    assert!(dbduel::sandbox::find(root.path()).is_empty());
}

/// A MariaDB Galera node someone else starts by hand (as `nobody` when the test is root),
/// pointed at a cluster's group-communication port with its predictable name: in clear, or
/// with TLS under a CA of its own. Killed when dropped.
struct RogueNode {
    child: std::process::Child,
    dir: PathBuf,
}

impl RogueNode {
    fn start(root: &Path, gcomm: &str, own_ca: bool) -> RogueNode {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let dir = root.join(format!("rogue-{own_ca}"));
        std::fs::create_dir_all(dir.join("data")).expect("dir");
        let port = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a port")
                .port()
        };
        let mut provider = format!(
            "gmcast.listen_addr=tcp://127.0.0.1:{}; ist.recv_addr=127.0.0.1:{}",
            port(),
            port()
        );
        let nobody = dbduel::sandbox::user::is_root().then_some((65534u32, 65534u32));
        if own_ca {
            let tls = dbduel::sandbox::certs::make("rogue", 1).expect("tls");
            let f = dbduel::sandbox::certs::Files::in_dir(&dir, "galera");
            tls[0].write(&f, None).expect("its certificates");
            provider.push_str(&format!(
                "; socket.ssl=YES; socket.ssl_key={}; socket.ssl_cert={}; socket.ssl_ca={}",
                f.key.display(),
                f.cert.display(),
                f.ca.display()
            ));
        }
        let config = format!(
            "[mysqld]\ndatadir = {d}/data\nsocket = {d}/s.sock\npid-file = {d}/s.pid\nport = {}\nbind-address = 127.0.0.1\nwsrep_on = ON\nwsrep_provider = {}\nwsrep_cluster_name = dbduel-galera\nwsrep_cluster_address = gcomm://127.0.0.1:{gcomm}\nwsrep_node_address = 127.0.0.1\nwsrep_provider_options = \"{provider}\"\nwsrep_sst_method = rsync\nwsrep_sst_receive_address = 127.0.0.1:{}\nbinlog_format = ROW\ninnodb_autoinc_lock_mode = 2\n",
            port(),
            dbduel::engines::mariadb::recipe::GALERA_PROVIDER,
            port(),
            d = dir.display(),
        );
        std::fs::write(dir.join("rogue.cnf"), config).expect("config");
        if let Some((uid, gid)) = nobody {
            for e in walk(&dir) {
                std::os::unix::fs::chown(&e, Some(uid), Some(gid)).expect("chown");
            }
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o711)).expect("chmod");
        }
        let log = std::fs::File::create(dir.join("rogue.log")).expect("log");
        let mut cmd = std::process::Command::new("/usr/sbin/mariadbd");
        cmd.arg(format!(
            "--defaults-file={}",
            dir.join("rogue.cnf").display()
        ))
        .stdout(log.try_clone().expect("log"))
        .stderr(log);
        if let Some((uid, gid)) = nobody {
            cmd.uid(uid).gid(gid);
        }
        RogueNode {
            child: cmd.spawn().expect("the rogue node starts"),
            dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("rogue.log")).unwrap_or_default()
    }
}

impl Drop for RogueNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dir` and everything under it.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

/// A study of a 3-node cluster: load, then write_only with `writes` (its client count,
/// duration and the rest), then the checksums of every copy.
fn study(dir: &Path, writes: &str) -> PathBuf {
    let text = common::fill(
        include_str!("studies/galera_writes.toml"),
        &[("writes", writes)],
    );
    let path = dir.join("galera.toml");
    std::fs::write(&path, text).expect("study");
    path
}

/// The sum over every node of a `wsrep_*` status counter.
fn cluster_sum(ports: &[u16], counter: &str) -> u64 {
    ports
        .iter()
        .map(|&port| {
            let opts = mysql::OptsBuilder::new()
                .ip_or_hostname(Some("127.0.0.1"))
                .tcp_port(port)
                .user(Some("root"))
                .pass(Some(common::sandbox_password(port)))
                .prefer_socket(false);
            let mut c = mysql::Conn::new(opts).expect("connect to a kept node");
            let row: Option<(String, String)> = c
                .query_first(format!("SHOW GLOBAL STATUS LIKE '{counter}'"))
                .expect("status");
            row.and_then(|(_, v)| v.parse::<u64>().ok()).expect(counter)
        })
        .sum()
}

#[test]
fn conflicting_writes_are_counted_as_the_nodes_count_them() {
    if !have_galera() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    // Every client on two hot rows, over three nodes.
    let study = study(root.path(), "threads = 6\nduration_s = 4\nhot_rows = 2");
    let out = root.path().join("out");
    let out_s = out.to_str().expect("utf-8");
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out_s,
        "--keep",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let hot = step(&summary, "galera", "writes");
    assert_eq!(hot["status"], "ok", "{hot:#}");
    let cert = figure(hot, "cert_failures").expect("cert failures");
    let bf = figure(hot, "bf_aborts").expect("brute-force aborts");
    assert!(
        cert + bf > 0.0,
        "six clients on two rows over three nodes conflict: {hot:#}"
    );
    // The kept nodes' own counters since they started: only the hot step wrote concurrently,
    // so they count exactly what the step reported.
    let ports: Vec<u16> = dbduel::sandbox::find(&dir)
        .iter()
        .map(|f| f.manifest.port)
        .collect();
    assert_eq!(ports.len(), 3);
    assert_eq!(
        cluster_sum(&ports, "wsrep_local_cert_failures") as f64,
        cert
    );
    assert_eq!(cluster_sum(&ports, "wsrep_local_bf_aborts") as f64, bf);
    // Clients saw the losers as deadlocks, counted as failed events.
    let failed = figure(hot, "failed_events").expect("failed events");
    assert!(failed > 0.0, "{hot:#}");
    assert!(
        hot["note"].as_str().is_some_and(|n| n.contains("deadlock")),
        "{hot:#}"
    );
    // Per second in the step's JSON.
    let details = read_json(&dir.join("galera/writes.json"))["details"].clone();
    let seconds = details["cluster"]["seconds"].as_array().expect("seconds");
    assert!(seconds.len() >= 4, "{details:#}");
    // ... and drawn in the HTML report.
    let (code, html, stderr) = run(&["report", dir.to_str().expect("utf-8"), "--format", "html"]);
    assert_eq!(code, 0, "{stderr}");
    for caption in ["cluster write sets", "cluster conflicts", "flow control"] {
        assert!(html.contains(caption), "no chart {caption:?}");
    }
    // After the conflicts every node holds the same rows.
    let sums = step(&summary, "galera", "sums");
    assert_eq!(figure(sums, "copies_equal"), Some(3.0), "{sums:#}");
    let (code, down, stderr) = run(&["sandbox", "down", "--out", out_s]);
    assert_eq!(code, 0, "{down}\n{stderr}");
    assert!(dbduel::sandbox::find(&dir).is_empty());
}

#[test]
fn a_node_killed_on_purpose_is_survived_and_reported() {
    if !have_galera() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = study(
        root.path(),
        "threads = 3\nduration_s = 16\nkill_node = { node = 3, at_s = 3 }",
    );
    let out = root.path().join("out");
    let (pid, code, stdout, stderr) = common::run_with_pid(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        code, 0,
        "a planned loss is the experiment:\n{stdout}\n{stderr}"
    );
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let w = step(&summary, "galera", "writes");
    let note = w["note"].as_str().unwrap_or_default();
    assert!(note.contains("node-3 was lost"), "{w:#}");
    assert!(note.contains("SIGKILL"), "how it ended: {note}");
    assert!(note.contains("went on with 2 node(s)"), "{note}");
    let before = figure(w, "tps_before_loss").expect("before");
    let after = figure(w, "tps_after_loss").expect("after");
    assert!(before > 0.0 && after > 0.0, "{w:#}");
    let resized = figure(w, "resized_s").expect("the view change");
    assert!(resized < 14.0, "{w:#}");
    let sums = step(&summary, "galera", "sums");
    assert_eq!(figure(sums, "copies_equal"), Some(2.0), "{sums:#}");
    assert!(
        nodes_of(pid).is_empty(),
        "left running: {:?}",
        nodes_of(pid)
    );
}

#[test]
fn a_node_lost_unplanned_fails_the_run_with_the_figures_kept() {
    if !have_galera() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let study = study(root.path(), "threads = 3\nduration_s = 10");
    let out = root.path().join("out");
    let child = common::bin()
        .args([
            "run",
            study.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dbduel runs");
    let pid = child.id();
    // Once the load is done, the writes run: kill node-2 a few seconds in. (Three nodes
    // start first; beside the other cluster tests on 2 cores that once took over 120 s.)
    let deadline = Instant::now() + Duration::from_secs(300);
    let load_done = loop {
        let done = std::fs::read_dir(&out).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path().join("galera/load.json"))
                .find(|p| p.exists())
        });
        if let Some(p) = done {
            break p;
        }
        assert!(Instant::now() < deadline, "the load never finished");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(3));
    let run_dir = load_done.parent().and_then(Path::parent).expect("run dir");
    let node2 = dbduel::sandbox::find(run_dir)
        .into_iter()
        .find(|f| {
            f.manifest
                .role
                .as_deref()
                .is_some_and(|r| r.starts_with("node-2"))
        })
        .and_then(|f| f.manifest.pid);
    let Some(node2) = node2 else {
        let output = child.wait_with_output().expect("dbduel finishes");
        panic!(
            "node-2 is not running 3 s into the writes:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    dbduel::sandbox::signal(node2, 9);
    let output = child.wait_with_output().expect("dbduel finishes");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "an unplanned loss fails the run:\n{stderr}"
    );
    let summary = read_json(&run_dir.join("summary.json"));
    let w = step(&summary, "galera", "writes");
    assert_eq!(w["status"], "failed", "{w:#}");
    assert!(
        w["error"]
            .as_str()
            .unwrap_or_default()
            .contains("node-2 was lost")
            || w["note"]
                .as_str()
                .unwrap_or_default()
                .contains("node-2 was lost"),
        "{w:#}"
    );
    assert!(
        figure(w, "tps_before_loss").is_some(),
        "figures kept: {w:#}"
    );
    // A failed step ends the contender's run: the later steps say so.
    let sums = step(&summary, "galera", "sums");
    assert_eq!(sums["status"], "skipped", "{sums:#}");
    assert!(
        nodes_of(pid).is_empty(),
        "left running: {:?}",
        nodes_of(pid)
    );
}
