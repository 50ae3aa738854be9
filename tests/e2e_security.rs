//! Private servers nobody else can enter: every sandbox flavor (MariaDB, PostgreSQL, FerretDB)
//! refuses a local connection without the sandbox's secret, confines the server's own file
//! reads and writes, runs as an account of its own sandbox's (never root, never Debian's
//! `mysql` or `postgres`, never another sandbox's: one server reads nothing of another's, and
//! the account goes with the sandbox), starts with none of dbduel's environment, and never
//! writes the secret into what it prints or the run directory.

mod common;

use common::{read_json, run, run_dir};
use std::path::{Path, PathBuf};

/// A variable in dbduel's environment that no server may inherit (a target's `password_env`
/// is one such).
const MARKER: (&str, &str) = ("DBDUEL_TEST_LEAK", "leak-marker-7d41");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `dbduel ARGS` with the marker in its environment: (exit code, stdout, stderr).
fn dbduel_with_marker(args: &[&str]) -> (i32, String, String) {
    let out: std::process::Output = common::bin()
        .args(args)
        .env(MARKER.0, MARKER.1)
        .output()
        .expect("dbduel runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A sandbox `dbduel sandbox up` left running: its manifest, directory and secret.
struct Up {
    out: PathBuf,
    manifest: serde_json::Value,
    dir: PathBuf,
    secret: String,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = run(&[
            "sandbox",
            "down",
            "--all",
            "--out",
            self.out.to_str().unwrap(),
        ]);
    }
}

/// `dbduel sandbox up ENGINE` under `root`; checks what it prints names the secret's file
/// and never the secret.
fn sandbox_up(root: &Path, engine: &str) -> Up {
    let out = root.join("res");
    let (code, stdout, stderr) =
        dbduel_with_marker(&["sandbox", "up", engine, "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let dir = out.join("sandboxes/target");
    let secret_file = dir.join("secret");
    let up = Up {
        manifest: read_json(&dir.join("sandbox.json")),
        secret: dbduel::sandbox::secret::read(&dir)
            .expect("the secret")
            .expose()
            .to_string(),
        out,
        dir,
    };
    assert!(
        stdout.contains(&format!("password_file = \"{}\"", secret_file.display())),
        "{stdout}"
    );
    assert!(!stdout.contains(&up.secret) && !stderr.contains(&up.secret));
    let meta = std::fs::metadata(&secret_file).expect("the secret's file");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });
    let (_, status, _) = run(&["sandbox", "status", "--out", up.out.to_str().unwrap()]);
    assert!(
        status.contains("running") && !status.contains(&up.secret),
        "{status}"
    );
    up
}

/// dbduel's PostgreSQL superuser on the PostgreSQL sandbox `up`, signed in with its secret.
fn pg_superuser(up: &Up) -> postgres::Client {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(up.manifest["port"].as_u64().expect("port") as u16)
        .user("dbduel")
        .dbname("postgres")
        .password(&up.secret)
        .connect(postgres::NoTls)
        .expect("the secret lets dbduel in")
}

/// The sandbox's manifest, as dbduel reads it.
fn manifest_of(up: &Up) -> dbduel::sandbox::SandboxManifest {
    serde_json::from_value(up.manifest.clone()).expect("a sandbox manifest")
}

fn pid_of(manifest: &serde_json::Value) -> i32 {
    manifest["pid"].as_i64().expect("a running server") as i32
}

/// The server runs as dbduel's own account or (dbduel being root) its dedicated one: never
/// root, never the `mysql` or `postgres` accounts that own the host's own servers; and none
/// of dbduel's environment reached it.
fn assert_unprivileged_and_clean(pid: i32) {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(format!("/proc/{pid}"))
        .expect("the server's process")
        .uid();
    if is_root() {
        assert_ne!(uid, 0, "the server runs as root");
        for account in ["mysql", "postgres"] {
            if let Some(u) = dbduel::sandbox::user::lookup(account) {
                assert_ne!(uid, u.uid, "the server runs as the host's `{account}`");
            }
        }
    }
    let env = std::fs::read(format!("/proc/{pid}/environ")).expect("the server's environment");
    let env = String::from_utf8_lossy(&env);
    assert!(
        !env.contains(MARKER.0) && !env.contains(MARKER.1),
        "dbduel's environment reached the server: {env}"
    );
}

/// The server was started as its account, not as root told to drop to it: its
/// configuration names no `user` (which a setting could change to keep root).
fn assert_started_as_its_account(manifest: &serde_json::Value) {
    let config = manifest["config"].as_str().expect("the configuration");
    assert!(
        !config
            .lines()
            .any(|l| l.trim_start().starts_with("user ") || l.trim_start().starts_with("user=")),
        "the server is told to drop to its account: {config}"
    );
}

/// The inodes of the TCP sockets `pid` listens on.
fn tcp_listeners(pid: i32) -> Vec<String> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's descriptors")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_string)
        })
        .collect();
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // field 3 is the state (0A: LISTEN), field 9 the inode
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                found.push(format!("{} ({})", f[1], f[9]));
            }
        }
    }
    found
}

/// Every file under `dir` but the sandboxes' secret files, none holding `secret`.
fn assert_nowhere_in(dir: &Path, secret: &str) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let t = e.file_type().expect("a type");
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() && e.file_name() != "secret" {
                let bytes = std::fs::read(&p).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(secret),
                    "the secret is in {}",
                    p.display()
                );
            }
        }
    }
}

fn mariadb(port: u16, password: Option<&str>) -> mysql::Result<mysql::Conn> {
    mysql::Conn::new(
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some("root"))
            .pass(password)
            .prefer_socket(false),
    )
}

#[test]
fn a_mariadb_sandbox_lets_in_only_the_secret_and_writes_files_only_in_its_own_place() {
    if !common::have_mariadb() {
        return;
    }
    use mysql::prelude::Queryable;
    let root = tempfile::tempdir().expect("tmp");
    let up = sandbox_up(root.path(), "mariadb");
    let port = up.manifest["port"].as_u64().expect("port") as u16;
    // Root without a password (the old sandbox's superuser), and a wrong password: refused.
    for pw in [None, Some("wrong")] {
        match mariadb(port, pw) {
            Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1045, "{e}"),
            Err(e) => panic!("refused for the wrong reason: {e}"),
            Ok(_) => panic!("root entered with password {pw:?}"),
        }
    }
    let mut c = mariadb(port, Some(&up.secret)).expect("the secret lets root in");
    // The server's file reads and writes stay in its own directory.
    let outfile = root.path().join("x");
    let err = c
        .query_drop(format!("SELECT 1 INTO OUTFILE '{}'", outfile.display()))
        .expect_err("INTO OUTFILE outside the sandbox is refused");
    assert!(err.to_string().contains("secure-file-priv"), "{err}");
    assert!(!outfile.exists());
    let read: Option<Option<String>> = c.query_first("SELECT LOAD_FILE('/etc/passwd')").unwrap();
    assert_eq!(read, Some(None), "LOAD_FILE read a file of the host");
    // Only root, only from the private socket and 127.0.0.1, only with a password.
    let accounts: Vec<(String, String, String)> = c
        .query("SELECT User, Host, plugin FROM mysql.user WHERE User <> 'mariadb.sys'")
        .unwrap();
    for (user, host, plugin) in &accounts {
        assert_eq!(user, "root");
        assert!(host == "localhost" || host == "127.0.0.1", "{host}");
        assert_eq!(plugin, "mysql_native_password");
    }
    assert_unprivileged_and_clean(pid_of(&up.manifest));
    assert_started_as_its_account(&up.manifest);
    assert_nowhere_in(&up.dir, &up.secret);
    common::assert_closed_to_strangers(&manifest_of(&up));
}

#[test]
fn a_postgres_sandbox_lets_in_only_the_secret() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let up = sandbox_up(root.path(), "postgres");
    let port = up.manifest["port"].as_u64().expect("port") as u16;
    let connect = |user: &str, pw: Option<&str>| {
        let mut cfg = postgres::Config::new();
        cfg.host("127.0.0.1")
            .port(port)
            .user(user)
            .dbname("postgres");
        if let Some(p) = pw {
            cfg.password(p);
        }
        cfg.connect(postgres::NoTls)
    };
    // The superuser without a password or with a wrong one, `postgres` without one: refused.
    // The server's own refusal: a wrong password is its "password authentication failed"
    // (28P01); with none, the server asked for one (the client has none to give).
    for (user, pw) in [
        ("dbduel", None),
        ("dbduel", Some("wrong")),
        ("postgres", None),
        ("postgres", Some("wrong")),
    ] {
        let e = connect(user, pw)
            .err()
            .unwrap_or_else(|| panic!("{user} entered with password {pw:?}"));
        match pw {
            Some(_) => assert_eq!(
                e.code(),
                Some(&postgres::error::SqlState::INVALID_PASSWORD),
                "{user}: {e:?}"
            ),
            None => assert!(
                format!("{e:?}").contains("password missing"),
                "{user}: {e:?}"
            ),
        }
    }
    let mut c = connect("dbduel", Some(&up.secret)).expect("the secret lets dbduel in");
    let row = c.query_one("SHOW listen_addresses", &[]).unwrap();
    assert_eq!(row.get::<_, String>(0), "127.0.0.1");
    // Its socket sits in a directory no other account can enter.
    let row = c.query_one("SHOW unix_socket_directories", &[]).unwrap();
    let socket_dir = PathBuf::from(row.get::<_, String>(0));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket_dir).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "{} is open to others",
        socket_dir.display()
    );
    let methods: Vec<String> = c
        .query("SELECT DISTINCT auth_method FROM pg_hba_file_rules", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(methods, ["scram-sha-256"]);
    assert_unprivileged_and_clean(pid_of(&up.manifest));
    assert_nowhere_in(&up.dir, &up.secret);
    common::assert_closed_to_strangers(&manifest_of(&up));
}

/// Two sandboxes, two accounts: a PostgreSQL superuser of one (who can read any file its
/// server's OS account can, `pg_read_file`) is refused the other's data directory by the
/// kernel, and each account is removed with its sandbox. (Dbduel not being root, every server
/// runs as dbduel's own user and this does not apply: the README's safety section says so.)
#[test]
fn each_sandbox_has_an_account_of_its_own_that_reads_nothing_of_another() {
    if !common::have_postgres() || !is_root() {
        return;
    }
    let (ra, rb) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let a = sandbox_up(ra.path(), "postgres");
    let b = sandbox_up(rb.path(), "postgres");
    let account = |up: &Up| manifest_of(up).account.expect("the sandbox's account");
    let (ua, ub) = (account(&a), account(&b));
    assert_ne!(ua.uid, ub.uid, "{ua:?} {ub:?}");
    use std::os::unix::fs::MetadataExt;
    for (up, u) in [(&a, &ua), (&b, &ub)] {
        let uid = std::fs::metadata(format!("/proc/{}", pid_of(&up.manifest)))
            .unwrap()
            .uid();
        assert_eq!(uid, u.uid, "the server runs as its sandbox's account");
    }
    let mut c = pg_superuser(&b);
    // b's superuser reads b's own files ...
    let own = format!("{}/PG_VERSION", b.manifest["datadir"].as_str().unwrap());
    let v: String = c
        .query_one("SELECT pg_read_file($1)", &[&own])
        .expect("its own file")
        .get(0);
    assert!(v.trim().parse::<u32>().is_ok(), "{v}");
    // ... and not a's, which a's account alone may open.
    let theirs = format!("{}/PG_VERSION", a.manifest["datadir"].as_str().unwrap());
    let e = c
        .query_one("SELECT pg_read_file($1)", &[&theirs])
        .expect_err("another sandbox's file");
    assert!(
        e.as_db_error()
            .is_some_and(|d| d.message().contains("Permission denied")),
        "{e:?}"
    );
    drop(c);
    drop(a);
    drop(b);
    for u in [ua, ub] {
        assert!(
            dbduel::sandbox::user::lookup(&u.name).is_none(),
            "{} outlived its sandbox",
            u.name
        );
    }
}

/// What a server only reads — its configuration, its host-based authentication — is root's,
/// in a directory root owns that the server's account may only read: a PostgreSQL superuser
/// (who writes files as that account, `COPY … TO`) can change neither it nor anything beside
/// it, so no setting of dbduel's is undone before the next start. On a dbduel without this
/// the configuration sat in a directory of the account's.
#[test]
fn what_a_server_only_reads_is_roots_and_its_account_cannot_change_it() {
    if !common::have_postgres() || !is_root() {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let root = tempfile::tempdir().expect("tmp");
    let up = sandbox_up(root.path(), "postgres");
    let account = manifest_of(&up).account.expect("the sandbox's account");
    let config = PathBuf::from(up.manifest["config_file"].as_str().expect("config_file"));
    let conf_dir = config.parent().expect("its directory").to_path_buf();
    let m = std::fs::metadata(&conf_dir).expect("stat");
    assert_eq!(
        (m.uid(), m.gid(), m.mode() & 0o777),
        (0, account.gid, 0o750)
    );
    let m = std::fs::metadata(&config).expect("stat");
    assert_eq!(
        (m.uid(), m.mode() & 0o022),
        (0, 0),
        "root's, written by no one else"
    );
    let datadir = up.manifest["datadir"]
        .as_str()
        .expect("datadir")
        .to_string();
    let mut c = pg_superuser(&up);
    assert_eq!(
        common::pg_show(&mut c, "config_file"),
        config.display().to_string()
    );
    let hba = conf_dir.join("pg_hba.conf");
    assert_eq!(
        common::pg_show(&mut c, "hba_file"),
        hba.display().to_string()
    );
    let before = std::fs::read_to_string(&config).expect("the configuration");
    for target in [config.clone(), hba, conf_dir.join("planted.conf")] {
        let e = c
            .batch_execute(&format!(
                "COPY (SELECT 'listen_addresses = ''*''') TO '{}'",
                target.display()
            ))
            .expect_err("the account writes nothing there");
        assert!(
            e.as_db_error()
                .is_some_and(|d| d.message().contains("Permission denied")),
            "{}: {e:?}",
            target.display()
        );
    }
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    assert!(!conf_dir.join("planted.conf").exists());
    // The server's own directory is writable by it, as a server's must be.
    let own = format!("{datadir}/written-by-the-server");
    c.batch_execute(&format!("COPY (SELECT 1) TO '{own}'"))
        .expect("its own directory");
    assert_eq!(std::fs::metadata(&own).expect("written").uid(), account.uid);
}

/// A run kept running (`--keep`) of the one-step study on `engine`, with the marker in its
/// environment: the run directory and the kept sandbox's manifest.
fn kept_run(root: &Path, engine: &str) -> (PathBuf, serde_json::Value, PathBuf) {
    let study = root.join("s.toml");
    std::fs::write(
        &study,
        common::fill(
            include_str!("studies/security_kept.toml"),
            &[("engine", engine)],
        ),
    )
    .unwrap();
    let out = root.join("out");
    let (code, stdout, stderr) = dbduel_with_marker(&[
        "run",
        study.to_str().unwrap(),
        "--keep",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let dir = run_dir(&stderr);
    let sandbox = dir.join("work/srv/sandbox");
    let manifest = read_json(&sandbox.join("sandbox.json"));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    (dir, manifest, out)
}

#[test]
fn a_ferretdb_sandbox_listens_on_no_tcp_port_only_on_a_private_socket() {
    if !common::have_server(
        "ferretdb",
        dbduel::engines::mongodb::ferretdb::binary().is_some(),
    ) {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let (dir, manifest, out) = kept_run(root.path(), "mongodb");
    struct Down(PathBuf);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = run(&[
                "sandbox",
                "down",
                "--all",
                "--out",
                self.0.to_str().unwrap(),
            ]);
        }
    }
    let _down = Down(out);
    let pid = pid_of(&manifest);
    // FerretDB has no authentication on SQLite: a TCP port would let in anyone on the host.
    assert_eq!(tcp_listeners(pid), Vec::<String>::new(), "a TCP listener");
    let port = manifest["port"].as_u64().unwrap() as u16;
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    let socket = PathBuf::from(manifest["socket"].as_str().unwrap());
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    use std::os::unix::fs::PermissionsExt;
    let parent = socket.parent().unwrap();
    let mode = std::fs::metadata(parent).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{} is open to others", parent.display());
    assert_unprivileged_and_clean(pid);
    common::assert_closed_to_strangers(
        &serde_json::from_value(manifest.clone()).expect("a sandbox manifest"),
    );
    let secret = dbduel::sandbox::secret::read(&dir.join("work/srv/sandbox")).unwrap();
    assert_nowhere_in(&dir, secret.expose());
}

#[test]
fn a_mariadb_run_keeps_the_secret_out_of_its_results_and_its_servers_environment() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let (dir, manifest, out) = kept_run(root.path(), "mariadb");
    let down = || run(&["sandbox", "down", "--all", "--out", out.to_str().unwrap()]);
    let pid = pid_of(&manifest);
    let secret = dbduel::sandbox::secret::read(&dir.join("work/srv/sandbox")).unwrap();
    let port = manifest["port"].as_u64().unwrap() as u16;
    let refused = mariadb(port, None).is_err();
    let entered = mariadb(port, Some(secret.expose())).is_ok();
    let uid_env = std::panic::catch_unwind(|| assert_unprivileged_and_clean(pid));
    let nowhere = std::panic::catch_unwind(|| assert_nowhere_in(&dir, secret.expose()));
    down();
    assert!(
        refused && entered,
        "refused without: {refused}, in with: {entered}"
    );
    assert!(uid_env.is_ok() && nowhere.is_ok());
}

/// The second account's probe tells a refusal from a reach: a file anyone may read, and a
/// socket anyone may connect to, fail it.
#[test]
fn the_strangers_probe_fails_on_what_anyone_can_reach() {
    let Some(s) = common::Stranger::new() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let sock = tmp.path().join("open.sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    for (socks, paths) in [
        (vec![], vec![Path::new("/etc/passwd")]),
        (vec![sock.as_path()], vec![]),
    ] {
        let reached = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.assert_refused(&socks, &paths)
        }));
        assert!(reached.is_err(), "{socks:?} {paths:?} passed as refused");
    }
    // What only root may open is refused.
    s.assert_refused(&[], &[Path::new("/etc/shadow")]);
}
