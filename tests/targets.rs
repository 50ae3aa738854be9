//! What dbduel will not do to a server it does not own, without a server: run a
//! `restart_command` read from someone else's run without asking, or sign in with a TLS client
//! key it names, hand a replica's password variable to pods; `dbduel restore` with nothing to put back or a file that is not its own.

mod common;

use std::path::Path;

/// A copy of a recorded run whose manifest makes contender `innodb` a target with a
/// `restart_command` that would create `marker`.
fn run_with_restart_command(root: &Path, marker: &Path) -> std::path::PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/shootout-20261122-034526");
    let dir = root.join("theirs-20261122-034526");
    std::fs::create_dir_all(&dir).expect("dir");
    for e in std::fs::read_dir(&src).expect("fixture").flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).expect("copy");
        }
    }
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("manifest")).expect("json");
    let contenders = m["study"]["contender"].as_array_mut().expect("contenders");
    let innodb = contenders
        .iter_mut()
        .find(|c| c["name"] == "innodb")
        .expect("innodb");
    innodb["options"] = serde_json::json!({});
    innodb["target"] = "mysql://root@127.0.0.1:1/theirs".into();
    innodb["restart_command"] = format!("touch {}", marker.display()).into();
    std::fs::write(&path, serde_json::to_string_pretty(&m).expect("json")).expect("write");
    dir
}

/// `dbduel rerun DIR --out OUT`, with no terminal and no flag: (exit code, stdout, stderr).
fn rerun(dir: &Path, out: &Path) -> (i32, String, String) {
    common::run(&[
        "rerun",
        dir.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ])
}

#[test]
fn rerun_refuses_a_manifests_restart_command_without_a_terminal_or_the_flag() {
    let root = tempfile::tempdir().expect("tmp");
    let marker = root.path().join("ran");
    let dir = run_with_restart_command(root.path(), &marker);
    let out = root.path().join("out");
    let (code, stdout, stderr) = rerun(&dir, &out);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("restart_command"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "innodb: restart_command touch {}",
            marker.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-restart-command"), "{stderr}");
    assert!(!marker.exists(), "the command did not run");
    assert!(!out.exists(), "nothing ran");
}

/// A copy of the recorded run whose manifest's contender `innodb` is changed by `change`.
fn planted_run(root: &Path, change: impl FnOnce(&mut serde_json::Value)) -> std::path::PathBuf {
    let dir = run_with_restart_command(root, &root.join("unused"));
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("manifest")).expect("json");
    let innodb = m["study"]["contender"]
        .as_array_mut()
        .expect("contenders")
        .iter_mut()
        .find(|c| c["name"] == "innodb")
        .expect("innodb");
    innodb
        .as_object_mut()
        .expect("table")
        .remove("restart_command");
    innodb.as_object_mut().expect("table").remove("target");
    change(innodb);
    std::fs::write(&path, serde_json::to_string_pretty(&m).expect("json")).expect("write");
    dir
}

#[test]
fn rerun_checks_a_manifests_server_settings_as_a_study_files() {
    let root = tempfile::tempdir().expect("tmp");
    let dir = planted_run(root.path(), |c| {
        c["options"] = serde_json::json!({ "server": { "user": "root" } });
    });
    let out = root.path().join("out");
    let (code, stdout, stderr) = common::run(&[
        "rerun",
        dir.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--yes",
    ]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("server.user: user is a setting dbduel owns"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran");
}

#[test]
fn rerun_reads_no_password_file_a_manifest_names_unasked_nor_one_others_can_read() {
    let root = tempfile::tempdir().expect("tmp");
    // A file of this user's that others can read: not a password file.
    let open_file = root.path().join("readable");
    std::fs::write(&open_file, "first line\n").expect("file");
    let dir = planted_run(root.path(), |c| {
        c["options"] = serde_json::json!({});
        c["target"] = "mysql://root@127.0.0.1:1/theirs".into();
        c["password_file"] = open_file.display().to_string().into();
    });
    let out = root.path().join("out");
    let rerun = |extra: &[&str]| {
        let mut args = vec![
            "rerun",
            dir.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        common::run(&args)
    };
    let (code, stdout, stderr) = rerun(&[]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("innodb: password_file {}", open_file.display())),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-restart-command"), "{stderr}");
    // Allowed, the file is still refused: others may read it.
    let (code, stdout, stderr) = rerun(&["--yes"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("must be a file of yours that only you can read")
            && stderr.contains("chmod 600"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran");
}

#[test]
fn rerun_signs_in_with_no_tls_client_key_a_manifest_names_unasked() {
    let root = tempfile::tempdir().expect("tmp");
    let key = root.path().join("key.pem");
    let dir = planted_run(root.path(), |c| {
        c["options"] = serde_json::json!({});
        c["target"] = format!(
            "mysql://root@127.0.0.1:1/theirs?ssl-mode=REQUIRED&ssl-cert=c.pem&ssl-key={}",
            key.display()
        )
        .into();
    });
    let out = root.path().join("out");
    let (code, stdout, stderr) = rerun(&dir, &out);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "innodb: the TLS client key {} its target names",
            key.display()
        )),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran");
}

#[test]
fn k8s_gives_a_replicas_password_variable_to_the_pods_by_reference_only() {
    let root = tempfile::tempdir().expect("tmp");
    let study = root.path().join("theirs.toml");
    // The primary's password reaches the pods through --secret, the replica's through its
    // own variable: neither is read from a file here.
    let text = common::fill(
        &include_str!("studies/replication_external_topology.toml")
            .replace("password_file = \"{primary_secret}\"\n", "")
            .replace(
                "password_file = \"{replica_secret}\" }",
                "password_env = \"DBDUEL_TEST_REPLICA_PW\" }",
            ),
        &[("primary_port", "3306"), ("replica_port", "3307")],
    );
    std::fs::write(&study, text).expect("study");
    let k8s = |value: Option<&str>| {
        let mut c = common::bin();
        c.args([
            "k8s",
            study.to_str().expect("utf-8"),
            "--contender",
            "told",
            "--secret",
            "theirs-pw",
            "--shards",
            "1",
            "--image",
            "dbduel:test",
        ]);
        match value {
            Some(v) => c.env("DBDUEL_TEST_REPLICA_PW", v),
            None => c.env_remove("DBDUEL_TEST_REPLICA_PW"),
        };
        let out = c.output().expect("dbduel runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // This machine need not have the replica's password: the pods get it from the Secret.
    let (code, stdout, stderr) = k8s(None);
    assert_eq!(code, 0, "{stderr}");
    let list: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let mut refs = Vec::new();
    env_entries(&list, "DBDUEL_TEST_REPLICA_PW", &mut refs);
    assert_eq!(refs.len(), 1, "{stdout}");
    assert_eq!(
        refs[0]["valueFrom"]["secretKeyRef"]["name"], "theirs-pw",
        "{stdout}"
    );
    assert!(refs[0].get("value").is_none(), "{stdout}");
    // Set here, its value is still not printed.
    let (code, stdout, stderr) = k8s(Some("hunter2-replica"));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("hunter2-replica") && !stderr.contains("hunter2-replica"));
}

/// Every `{ "name": NAME, ... }` entry of an `env` list anywhere in `v`.
fn env_entries<'a>(v: &'a serde_json::Value, name: &str, out: &mut Vec<&'a serde_json::Value>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(env) = m.get("env").and_then(|e| e.as_array()) {
                out.extend(env.iter().filter(|e| e["name"] == name));
            }
            for x in m.values() {
                env_entries(x, name, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| env_entries(x, name, out)),
        _ => {}
    }
}

#[test]
fn restore_without_originals_does_nothing_and_refuses_a_file_that_is_not_them() {
    let root = tempfile::tempdir().expect("tmp");
    let dir = root.path().join("run");
    std::fs::create_dir_all(&dir).expect("dir");
    let (code, stdout, stderr) = common::run(&["restore", dir.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("nothing to restore"), "{stdout}");
    std::fs::write(dir.join("replication-originals.json"), "{ not json").expect("garbage");
    let (code, _, stderr) = common::run(&["restore", dir.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not dbduel's originals file"), "{stderr}");
    assert!(
        dir.join("replication-originals.json").exists(),
        "a file dbduel cannot read is left alone"
    );
}
