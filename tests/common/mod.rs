//! Helpers shared by the end-to-end tests: run the real binary, read its result files, fill
//! in the study texts of `tests/studies/`, and say whether a server is there to test against.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The dbduel binary cargo built for these tests.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dbduel"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Run dbduel with `args`; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out: Output = bin().args(args).output().expect("dbduel runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The run directory a `dbduel run` printed on stderr (`results: PATH`).
pub fn run_dir(stderr: &str) -> PathBuf {
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap_or_else(|| panic!("no results line in:\n{stderr}"));
    PathBuf::from(line.trim())
}

/// `dbduel run STUDY --out OUT`: exit code, stdout, stderr.
pub fn run_study(study: &Path, out: &Path) -> (i32, String, String) {
    run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ])
}

/// `dbduel run` of the study `text`, written to `study`, with its results under `out`; the
/// run must succeed. Its run directory and `summary.json`.
pub fn run_study_ok(study: &Path, text: &str, out: &Path) -> (PathBuf, serde_json::Value) {
    std::fs::write(study, text).expect("study");
    let (code, stdout, stderr) = run_study(study, out);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    (dir, summary)
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The summary entry of `step` for `contender`.
pub fn step<'a>(
    summary: &'a serde_json::Value,
    contender: &str,
    step: &str,
) -> &'a serde_json::Value {
    summary["contenders"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == contender))
        .and_then(|c| c["steps"].as_array())
        .and_then(|ss| ss.iter().find(|s| s["name"] == step))
        .unwrap_or_else(|| panic!("no step {contender}/{step} in {summary:#}"))
}

/// The value of figure `key` in a step's summary.
pub fn figure(step: &serde_json::Value, key: &str) -> Option<f64> {
    step["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["key"] == key)?["value"]
        .as_f64()
}

/// Every step of the built-in shoot-out finished `ok` for `contender`.
pub fn assert_shootout_ok(summary: &serde_json::Value, contender: &str) {
    for st in [
        "load",
        "footprint",
        "count-cold",
        "count-warm",
        "range-queries",
        "slap-count",
        "slap-content",
        "update",
        "create-index",
        "drop-index",
        "add-column",
        "drop-column",
    ] {
        let s = step(summary, contender, st);
        assert_eq!(s["status"], "ok", "{contender}/{st}: {s:#}");
    }
}

/// The original's findings as the JSON report checks them against run `dir`: every finding
/// whose contenders all ran has its figures in the run (a verdict, not `not comparable`),
/// unless the run's scale is outside the finding's regime. Returns how many were judged.
pub fn assert_findings_judged(dir: &Path) -> usize {
    let (code, json, stderr) = run(&["report", dir.to_str().expect("utf-8"), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&json).expect("report json");
    let checks = report["findings_checked"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut judged = 0;
    for c in checks.iter().filter(|c| c["absent"].is_null()) {
        let why = c["why"].as_str().unwrap_or_default();
        if c["verdict"] == "not_comparable" {
            assert!(
                why.contains("regime is kept at"),
                "a finding found no figure: {c:#}"
            );
        } else {
            assert!(c["here"].as_f64().is_some_and(|r| r > 0.0), "{c:#}");
            judged += 1;
        }
    }
    judged
}

/// Run dbduel with `args`; returns (pid, exit code, stdout, stderr).
pub fn run_with_pid(args: &[&str]) -> (u32, i32, String, String) {
    let child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dbduel runs");
    let pid = child.id();
    let out = child.wait_with_output().expect("dbduel finishes");
    (
        pid,
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Command lines of running processes that contain `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .filter(|c| c.contains(needle))
                .collect()
        })
        .unwrap_or_default()
}

/// A study text with its markers filled in: each `(marker, value)` replaces every `{marker}`
/// in `text`, in one pass (a value is never searched for markers, and braces that are no
/// marker, as in TOML's inline tables, stay). The study files under `tests/studies/` hold such
/// markers where a test supplies a port, a path or a part at run time. A marker missing from
/// the text is a mistake in the test, so it panics.
pub fn fill(text: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut used = vec![false; values.len()];
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = values.iter().position(|(marker, _)| {
            after
                .strip_prefix(marker)
                .is_some_and(|r| r.starts_with('}'))
        });
        match hit {
            Some(i) => {
                out.push_str(values[i].1);
                used[i] = true;
                rest = &after[values[i].0.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    for ((marker, _), used) in values.iter().zip(used) {
        assert!(used, "the study text has no {{{marker}}}:\n{text}");
    }
    out
}

/// Set to 1, [`have_server`] says no to every server: the fast tier (`make test-fast`) starts
/// none even where they are installed.
pub const SKIP_SERVERS: &str = "DBDUEL_SKIP_SERVERS";

/// Whether a server is installed; fails instead when DBDUEL_REQUIRE_SERVERS=1 (CI), and says
/// no when DBDUEL_SKIP_SERVERS=1 (the fast tier).
pub fn have_server(name: &str, installed: bool) -> bool {
    if std::env::var(SKIP_SERVERS).as_deref() == Ok("1") {
        eprintln!("skipping: {name} (DBDUEL_SKIP_SERVERS=1)");
        return false;
    }
    if !installed {
        assert!(
            std::env::var("DBDUEL_REQUIRE_SERVERS").as_deref() != Ok("1"),
            "{name} is not installed and DBDUEL_REQUIRE_SERVERS=1: run `make install-servers`"
        );
        eprintln!("skipping: {name} not installed (run `make install-servers`)");
    }
    installed
}

/// Whether the server cache holds `name` (`mariadb-11.4.5`), complete: fails instead when
/// DBDUEL_REQUIRE_SERVERS=1 (naming the script that installs it), and says no when
/// DBDUEL_SKIP_SERVERS=1.
pub fn have_cached(name: &str) -> bool {
    if std::env::var(SKIP_SERVERS).as_deref() == Ok("1") {
        eprintln!("skipping: {name} (DBDUEL_SKIP_SERVERS=1)");
        return false;
    }
    let root = dbduel::sandbox::binaries::root();
    let installed = dbduel::sandbox::binaries::read_record(&root.join(name)).is_some();
    if !installed {
        assert!(
            std::env::var("DBDUEL_REQUIRE_SERVERS").as_deref() != Ok("1"),
            "{name} is not in the server cache ({}) and DBDUEL_REQUIRE_SERVERS=1: run `scripts/install-servers`",
            root.display()
        );
        eprintln!(
            "skipping: {name} not in the server cache {} (run `scripts/install-servers`)",
            root.display()
        );
    }
    installed
}

/// Whether MariaDB is installed (see [`have_server`]).
pub fn have_mariadb() -> bool {
    have_server(
        "mariadbd",
        Path::new("/usr/sbin/mariadbd").exists() || Path::new("/usr/bin/mariadbd").exists(),
    )
}

/// Is Debian's PostgreSQL installed (see [`have_server`])?
pub fn have_postgres() -> bool {
    have_server(
        "PostgreSQL",
        dbduel::engines::postgres::recipe::bin_dir().is_some(),
    )
}

/// A MariaDB sandbox's recipe with this InnoDB buffer pool (`"32M"`) and nothing else.
pub fn mariadb_recipe(buffer_pool: &str) -> Box<dbduel::engines::mariadb::recipe::MariadbRecipe> {
    Box::new(dbduel::engines::mariadb::recipe::MariadbRecipe {
        settings: std::collections::BTreeMap::from([(
            "innodb_buffer_pool_size".to_string(),
            buffer_pool.to_string(),
        )]),
        rocksdb: false,
        memory_limit_mb: None,
        device_profile: None,
        data_dir: None,
        galera: None,
        server_dir: None,
        secret: None,
        tls: None,
    })
}

/// A `mysql` crate connection as root over TCP to a local server, in `db` when given.
pub fn mysql_conn(port: u16, db: Option<&str>) -> mysql::Conn {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(sandbox_password(port)))
        .prefer_socket(false)
        .db_name(db);
    mysql::Conn::new(opts).expect("connect to the sandbox")
}

/// The secret of the running sandbox listening on `port` (see [`sandbox_secret_file`]).
pub fn sandbox_password(port: u16) -> String {
    let dir = sandbox_secret_file(port);
    let dir = dir.parent().expect("the sandbox's directory");
    let s = dbduel::sandbox::secret::read(dir).expect("the sandbox's secret");
    s.expose().to_string()
}

/// The secret's file of the running sandbox listening on `port`, found among the sandboxes
/// under the temporary directories tests make (a test knows a server's port, not always its
/// sandbox's directory).
pub fn sandbox_secret_file(port: u16) -> PathBuf {
    let tmp = std::env::temp_dir();
    let roots = std::fs::read_dir(&tmp).expect("the temporary directory");
    for root in roots.flatten() {
        if !root.file_name().to_string_lossy().starts_with(".tmp") {
            continue;
        }
        for f in dbduel::sandbox::find(&root.path()) {
            if f.manifest.port == port && f.running {
                return dbduel::sandbox::secret::path(&f.path);
            }
        }
    }
    panic!("no running sandbox on port {port} under {}", tmp.display())
}

/// A study's `target = "…"` value for `url`, a sandbox on `port`, that also gives the
/// sandbox's password file: `{url}"` and a `password_file = "…` line, for a study text whose
/// `{target}` marker sits between quotes.
pub fn target_with_secret(url: &str, port: u16) -> String {
    format!(
        "{url}\"\npassword_file = \"{}",
        sandbox_secret_file(port).display()
    )
}

/// Run `study` (one contender on a target, a load then a `queries` step) in `out`, and once
/// its `queries` step is under way run it a second time: (the second run's exit code and
/// stderr, the first run's exit code and stderr).
pub fn two_runs_at_once(study: &Path, out: &Path) -> ((i32, String), (i32, String)) {
    use std::time::{Duration, Instant};
    let first = bin()
        .args(["run", study.to_str().expect("utf-8"), "--out"])
        .arg(out.join("first"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dbduel starts");
    let started = |root: &Path| {
        std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| run.path().join("theirs/queries.intervals.ndjson").exists())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !started(&out.join("first")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        started(&out.join("first")),
        "the first run never reached its queries"
    );
    let (code, _, stderr) = run(&[
        "run",
        study.to_str().expect("utf-8"),
        "--out",
        out.join("second").to_str().expect("utf-8"),
    ]);
    let mut first = first;
    // Only a second run that met the first one still running says anything about the lease.
    assert!(
        matches!(first.try_wait(), Ok(None)),
        "the first run ended before the second had opened its contender: lengthen its step"
    );
    let done = first.wait_with_output().expect("the first run ends");
    (
        (code, stderr),
        (
            done.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&done.stderr).into_owned(),
        ),
    )
}

/// Another local account, made by the test (dbduel being root) and removed when dropped: the
/// "second OS account" the security tests act as.
pub struct Stranger {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl Stranger {
    /// A new account, or None when the test is not root (it cannot make one; an ordinary
    /// user's servers run as that user, and the README says what that means).
    pub fn new() -> Option<Stranger> {
        if !dbduel::sandbox::user::is_root() {
            return None;
        }
        let name = format!("dbduel-t{:06x}", std::process::id() ^ rand_u32());
        let ok = Command::new("useradd")
            .args([
                "--system",
                "--user-group",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(&name)
            .status()
            .expect("useradd runs")
            .success();
        assert!(ok, "useradd {name}");
        let u = dbduel::sandbox::user::lookup(&name).expect("the account just made");
        Some(Stranger {
            name,
            uid: u.uid,
            gid: u.gid,
        })
    }

    /// What the account gets when it connects to each Unix socket of `sockets` and opens each
    /// of `paths`: every one must be refused by the kernel (EACCES: it cannot even reach
    /// them), else the test fails naming what it reached.
    pub fn assert_refused(&self, sockets: &[&Path], paths: &[&Path]) {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let socks: Vec<libc::sockaddr_un> = sockets
            .iter()
            .map(|p| {
                // SAFETY: sockaddr_un is plain data; all zero is a valid value.
                let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
                a.sun_family = libc::AF_UNIX as libc::sa_family_t;
                let b = p.as_os_str().as_bytes();
                assert!(b.len() < a.sun_path.len(), "{}", p.display());
                for (d, s) in a.sun_path.iter_mut().zip(b) {
                    *d = *s as libc::c_char;
                }
                a
            })
            .collect();
        let files: Vec<std::ffi::CString> = paths
            .iter()
            .map(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).expect("a path"))
            .collect();
        let mut cmd = Command::new("/bin/true");
        cmd.uid(self.uid).gid(self.gid);
        // SAFETY: the closure runs in the child after fork, as the stranger (std sets the ids
        // first), and calls only async-signal-safe functions (socket, connect, open, _exit)
        // on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let refused =
                    || std::io::Error::last_os_error().raw_os_error() == Some(libc::EACCES);
                for (i, a) in socks.iter().enumerate() {
                    let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                    let r = libc::connect(
                        fd,
                        (a as *const libc::sockaddr_un).cast(),
                        std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
                    );
                    if r == 0 || !refused() {
                        libc::_exit(10 + i as i32);
                    }
                }
                for (i, f) in files.iter().enumerate() {
                    let fd = libc::open(f.as_ptr(), libc::O_RDONLY);
                    if fd >= 0 || !refused() {
                        libc::_exit(50 + i as i32);
                    }
                }
                libc::_exit(0)
            });
        }
        let code = cmd.status().expect("the stranger's probe runs").code();
        match code {
            Some(0) => {}
            Some(c @ 10..=49) => panic!(
                "{} reached the socket {} (or was refused for another reason than permission)",
                self.name,
                sockets[c as usize - 10].display()
            ),
            Some(c @ 50..=99) => panic!(
                "{} opened {} (or was refused for another reason than permission)",
                self.name,
                paths[c as usize - 50].display()
            ),
            other => panic!("the stranger's probe ended with {other:?}"),
        }
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
    }
}

/// A few random bits (for names), from the kernel.
fn rand_u32() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: the pointer and length name `b`; getrandom writes at most that much.
    unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    u32::from_le_bytes(b) & 0xff_ffff
}

/// A sandbox's manifest's socket, data directory and configuration: what another account must
/// reach none of.
pub fn sandbox_paths(m: &dbduel::sandbox::SandboxManifest) -> (PathBuf, Vec<PathBuf>) {
    (
        m.socket.clone(),
        vec![m.datadir.clone(), m.config_file.clone()],
    )
}

/// [`Stranger::assert_refused`] on a sandbox's socket, data directory and configuration, as
/// root (as anyone else nothing is checked).
pub fn assert_closed_to_strangers(m: &dbduel::sandbox::SandboxManifest) {
    let Some(s) = Stranger::new() else { return };
    let (sock, paths) = sandbox_paths(m);
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    s.assert_refused(&[&sock], &paths);
}

/// A PostgreSQL setting as the server shows it (`SHOW what`).
pub fn pg_show(c: &mut postgres::Client, what: &str) -> String {
    c.query_one(&format!("SHOW {what}"), &[])
        .expect(what)
        .get(0)
}
