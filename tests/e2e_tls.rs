//! TLS on real servers: MariaDB and PostgreSQL sandboxes that serve their clients over TLS
//! (`tls = true`, a CA made for each), every session of a run checking the certificate in
//! full; targets at those servers at each level a user can ask for (`REQUIRED`/`require`,
//! `VERIFY_IDENTITY`/`verify-full`, `VERIFY_CA`/`verify-ca`), and each way it must fail
//! before anything runs, exit 3, in the TLS library's words: a CA that did not sign the
//! server's certificate, a certificate for another name, a server without TLS.

mod common;

use common::{read_json, run_dir};
use std::path::{Path, PathBuf};

const STUDY: &str = include_str!("studies/tls.toml");

/// Run the TLS study on `engine` with the contender lines `contender`, keeping sandboxes:
/// exit code, stderr.
fn run_tls(root: &Path, engine: &str, contender: &str, keep: bool) -> (i32, String) {
    let study = root.join("tls.toml");
    std::fs::write(
        &study,
        common::fill(STUDY, &[("engine", engine), ("contender", contender)]),
    )
    .expect("study");
    let out = root.join("out");
    let mut args = vec![
        "run",
        study.to_str().expect("utf-8"),
        "-q",
        "--out",
        out.to_str().expect("utf-8"),
    ];
    if keep {
        args.push("--keep");
    }
    let (code, stdout, stderr) = common::run(&args);
    (code, format!("{stdout}\n{stderr}"))
}

/// The `tls` setting the run's manifest recorded for its one contender, after checking
/// that the lean client served it.
fn recorded_tls(stderr: &str) -> String {
    let m = read_json(&run_dir(stderr).join("manifest.json"));
    let settings = &m["contenders"][0]["effective"];
    assert_eq!(settings["client"], "dbduel wire client", "{settings:#}");
    settings["tls"].as_str().expect("a tls setting").to_string()
}

/// The kept sandbox of the run: its port and the CA its clients verify it with.
fn kept(stderr: &str) -> (u16, PathBuf) {
    let sb = read_json(&run_dir(stderr).join("work/c/sandbox/sandbox.json"));
    let port = sb["port"].as_u64().expect("port") as u16;
    let dir = sb["private_dir"]
        .as_str()
        .or(sb["dir"].as_str())
        .map(PathBuf::from)
        .unwrap_or_else(|| run_dir(stderr).join("work/c/sandbox"));
    (port, dir.join("tls-ca.pem"))
}

/// A CA file of another CA, which signed nothing the servers hold.
fn stranger_ca(root: &Path) -> PathBuf {
    let other = dbduel::sandbox::certs::make("stranger", 1).expect("certs");
    let f = dbduel::sandbox::certs::Files::in_dir(root, "stranger");
    other[0].write(&f, None).expect("written");
    f.ca
}

/// The contender lines of a target `url` at the sandbox on `port`.
fn target(url: &str, port: u16) -> String {
    format!(
        "target = \"{}\"\nwide_account = true",
        common::target_with_secret(url, port)
    )
}

/// Run the study on `engine` against `base?query` (the sandbox on `port`) for each
/// (query, level): each runs, and the manifest's `tls` ends with the level.
fn runs_at_levels(root: &Path, engine: &str, base: &str, port: u16, levels: &[(String, &str)]) {
    for (query, level) in levels {
        let url = format!("{base}?{query}");
        let (code, out) = run_tls(root, engine, &target(&url, port), false);
        assert_eq!(code, 0, "{url}: {out}");
        let tls = recorded_tls(&out);
        assert!(tls.ends_with(level), "{url}: {tls}");
        assert!(
            tls.starts_with("TLSv1_") || tls.starts_with("off"),
            "{url}: {tls}"
        );
    }
}

/// A target at the sandbox on `port` whose CA is not the one that signed its certificate:
/// nothing runs, exit 3, in rustls's words.
fn refused_with_a_strangers_ca(root: &Path, engine: &str, url_with_ca: &str, port: u16) {
    let url = format!("{url_with_ca}{}", stranger_ca(root).display());
    let (code, out) = run_tls(root, engine, &target(&url, port), false);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("TLS") && out.contains("UnknownIssuer"),
        "{out}"
    );
}

/// Stop and remove the sandboxes the runs under `root` kept.
fn stop_kept(root: &Path) {
    let out = root.join("out");
    let (code, down, stderr) =
        common::run(&["sandbox", "down", "--out", out.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{down}\n{stderr}");
}

#[test]
fn mariadb_over_tls_in_a_sandbox_and_as_a_target_at_each_level() {
    if !common::have_mariadb() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let (code, out) = run_tls(
        root.path(),
        "mariadb",
        "options = { tls = true, buffer_pool_mb = 64 }",
        true,
    );
    assert_eq!(code, 0, "{out}");
    let tls = recorded_tls(&out);
    assert!(
        tls.starts_with("TLSv1_") && tls.ends_with("(verify-full)"),
        "{tls}"
    );
    let (port, ca) = kept(&out);
    // The server's own count: every session of the run came over TLS (the 4 clients, the
    // load's, the administration connections).
    let mut c = common::mysql_conn(port, None);
    use mysql::prelude::Queryable;
    let (_, accepts): (String, u64) = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'")
        .expect("status")
        .expect("Ssl_accepts");
    assert!(accepts >= 6, "{accepts}");

    let base = format!("mysql://root@127.0.0.1:{port}");
    let ca = ca.display();
    runs_at_levels(
        root.path(),
        "mariadb",
        &base,
        port,
        &[
            (
                format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
                "(verify-full)",
            ),
            (format!("ssl-mode=VERIFY_CA&ssl-ca={ca}"), "(verify-ca)"),
            ("ssl-mode=REQUIRED".into(), "(require)"),
            // Nothing said: TLS when the server offers it, as the mysql client does.
            (String::new(), "(prefer)"),
        ],
    );
    refused_with_a_strangers_ca(
        root.path(),
        "mariadb",
        &format!("{base}?ssl-mode=VERIFY_IDENTITY&ssl-ca="),
        port,
    );
    stop_kept(root.path());
}

#[test]
fn postgres_over_tls_in_a_sandbox_and_as_a_target_at_each_level() {
    if !common::have_postgres() {
        return;
    }
    let root = tempfile::tempdir().expect("tmp");
    let (code, out) = run_tls(root.path(), "postgres", "options = { tls = true }", true);
    assert_eq!(code, 0, "{out}");
    let tls = recorded_tls(&out);
    assert!(
        tls.starts_with("TLSv1_3") && tls.ends_with("(verify-full)"),
        "{tls}"
    );
    let (port, ca) = kept(&out);

    let base = format!("postgres://dbduel@127.0.0.1:{port}");
    let ca = ca.display();
    runs_at_levels(
        root.path(),
        "postgres",
        &base,
        port,
        &[
            (
                format!("sslmode=verify-full&sslrootcert={ca}"),
                "(verify-full)",
            ),
            // libpq's require with a CA checks the chain.
            (format!("sslmode=require&sslrootcert={ca}"), "(verify-ca)"),
            ("sslmode=require".into(), "(require)"),
            ("sslmode=disable".into(), "off (disable)"),
        ],
    );
    refused_with_a_strangers_ca(
        root.path(),
        "postgres",
        &format!("{base}?sslmode=verify-full&sslrootcert="),
        port,
    );
    stop_kept(root.path());

    // A server without TLS, asked for it: refused, exit 3, before anything runs.
    let (code, plain) = run_tls(root.path(), "postgres", "", true);
    assert_eq!(code, 0, "{plain}");
    assert_eq!(recorded_tls(&plain), "off (disable)");
    let (port, _) = kept(&plain);
    let url = format!("postgres://dbduel@127.0.0.1:{port}?sslmode=require");
    let (code, out2) = run_tls(root.path(), "postgres", &target(&url, port), false);
    assert_eq!(code, 3, "{out2}");
    assert!(out2.contains("does not accept TLS"), "{out2}");
    stop_kept(root.path());

    // `dbduel sandbox up --tls` prints the target that checks its certificate in full.
    let out = root.path().join("out");
    let (code, stdout, stderr) = common::run(&[
        "sandbox",
        "up",
        "postgres",
        "--tls",
        "-q",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("?sslmode=verify-full&sslrootcert="),
        "{stdout}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let (code, up) = run_tls(
        root.path(),
        "postgres",
        &format!("{}\nwide_account = true", lines.join("\n")),
        false,
    );
    assert_eq!(code, 0, "{up}");
    assert!(recorded_tls(&up).ends_with("(verify-full)"), "{up}");
    stop_kept(root.path());
}
