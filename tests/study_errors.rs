//! Every malformed study in `tests/bad_studies/` is rejected before anything runs: exit 2, one
//! line on stderr naming file:line:col (where the file has a place for it) and what is wrong.
//! The expected message is the file's first line (`# expect: ...`) or `<name>.expect`.

mod common;

use std::path::Path;

fn expectation(path: &Path) -> String {
    let side = path.with_extension("expect");
    if side.exists() {
        return std::fs::read_to_string(side)
            .expect("expect file")
            .trim()
            .to_string();
    }
    let text = std::fs::read_to_string(path).expect("study text");
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_else(|| panic!("{} has no `# expect:` line", path.display()))
        .trim()
        .to_string()
}

#[test]
fn bad_studies_fail_with_located_errors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_studies");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("bad_studies dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "only {} bad studies", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let rel = format!(
            "tests/bad_studies/{}",
            f.file_name().unwrap().to_string_lossy()
        );
        let (code, stdout, stderr) =
            common::run(&["run", &rel, "--check", "--out", "/nonexistent-dbduel-out"]);
        let want = format!("error: tests/bad_studies/{}", expectation(f));
        let lines: Vec<&str> = stderr.lines().collect();
        if code != 2 || lines.len() != 1 || !lines[0].starts_with(&want) || !stdout.is_empty() {
            failures.push(format!(
                "{rel}: exit {code}\n  want: {want}\n  got:  {stderr}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_overrides_name_the_override() {
    let (code, _, stderr) =
        common::run(&["run", "shootout", "--check", "--set", "dataset.rows=-5"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: --set dataset.rows=-5: dataset.rows: invalid value"),
        "{stderr}"
    );
    let (code, _, stderr) =
        common::run(&["run", "shootout", "--check", "--set", "contender.nope.x=1"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no contender named `nope`; contenders are: sqlite-wal, sqlite-rollback"),
        "{stderr}"
    );
    // An override cannot give a sandbox a setting dbduel owns either.
    let (code, _, stderr) = common::run(&[
        "run",
        "shootout",
        "--check",
        "--contender",
        "innodb",
        "--set",
        "contender.innodb.server.bind-address=0.0.0.0",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error: --set contender.innodb.server.bind-address=0.0.0.0: ")
            && stderr.contains("bind-address is a setting dbduel owns"),
        "{stderr}"
    );
    let (code, _, stderr) = common::run(&["run", "shootout", "--check", "--scale", "huge"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("has no scale `huge`; its scales are: full, quick"),
        "{stderr}"
    );
    let (code, _, stderr) = common::run(&["run", "shootout", "--check", "--contender", "oracle"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no contender named `oracle`"), "{stderr}");
    let (code, _, stderr) = common::run(&["run", "no-such-study", "--check"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(
            "not a built-in study (built-ins: shootout, oltp, replication, point-lookups, storage-tiers, tpcc, tpch, tpch-validation, ycsb, durability, upgrade, upgrade-tpcc, cluster, harness)"
        ),
        "{stderr}"
    );
}

#[test]
fn options_that_depend_on_each_other_are_checked_once_all_overrides_are_in() {
    // memory_limit_mb is checked against the cache: set the smaller cache after the limit
    let (code, _, stderr) = common::run(&[
        "run",
        "point-lookups",
        "--check",
        "--contender",
        "postgres",
        "--set",
        "contender.postgres.memory_limit_mb=150",
        "--set",
        "contender.postgres.shared_buffers_mb=64",
    ]);
    assert_eq!(code, 0, "{stderr}");
    // and a limit too small for its cache names the override that set it
    let (code, _, stderr) = common::run(&[
        "run",
        "point-lookups",
        "--check",
        "--contender",
        "postgres",
        "--set",
        "contender.postgres.memory_limit_mb=150",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: --set contender.postgres.memory_limit_mb=150: ")
            && stderr.contains("use at least 192, or lower shared_buffers_mb"),
        "{stderr}"
    );
}

#[test]
fn builtin_studies_are_valid_and_printable() {
    let (code, stdout, _) = common::run(&["studies"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("shootout") && stdout.contains("harness"),
        "{stdout}"
    );
    for name in [
        "shootout",
        "oltp",
        "point-lookups",
        "upgrade",
        "upgrade-tpcc",
        "tpch",
        "tpch-validation",
        "ycsb",
        "harness",
    ] {
        let (code, text, _) = common::run(&["studies", "show", name]);
        assert_eq!(code, 0);
        assert!(text.contains(&format!("name = \"{name}\"")));
        for scale in ["quick", "full"] {
            if name == "harness" {
                continue;
            }
            // The full scales are the original studies' sizes, beyond this machine's disk.
            let (code, _, stderr) = common::run(&[
                "run",
                name,
                "--check",
                "--all-contenders",
                "--scale",
                scale,
                "--skip-resource-check",
            ]);
            assert_eq!(code, 0, "{name} {scale}: {stderr}");
        }
        let (code, plan, stderr) = common::run(&["run", name, "--check", "--all-contenders"]);
        assert_eq!(code, 0, "{name} quick must fit this machine: {stderr}");
        // The plan is in the study's own terms, not Rust's.
        for internal in ["Integer(", "String(", "Params {", "Some("] {
            assert!(!plan.contains(internal), "{name}: {internal} in\n{plan}");
        }
    }
    // A copy of a built-in is an ordinary study file.
    let dir = tempfile::tempdir().expect("tmp");
    let copy = dir.path().join("mine.toml");
    let (_, text, _) = common::run(&["studies", "show", "shootout"]);
    std::fs::write(&copy, text).expect("write");
    let (code, stdout, stderr) = common::run(&[
        "run",
        copy.to_str().unwrap(),
        "--check",
        "--set",
        "dataset.rows=20000",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("dataset: 20000 rows"), "{stdout}");
}

#[test]
fn every_builtin_study_ships_a_quick_and_a_full_scale() {
    let (code, list, _) = common::run(&["studies"]);
    assert_eq!(code, 0);
    for name in [
        "shootout",
        "oltp",
        "point-lookups",
        "storage-tiers",
        "tpcc",
        "tpch",
        "tpch-validation",
        "upgrade",
        "upgrade-tpcc",
        "cluster",
        "harness",
        "replication",
        "ycsb",
    ] {
        assert!(list.contains(name), "{name} in\n{list}");
        for scale in ["quick", "full"] {
            // The full scales are the original studies' sizes, beyond this machine's disk.
            let (code, _, stderr) = common::run(&[
                "run",
                name,
                "--check",
                "--all-contenders",
                "--scale",
                scale,
                "--skip-resource-check",
            ]);
            assert_eq!(code, 0, "{name} {scale}: {stderr}");
        }
    }
}

/// `run NAME --check --all-contenders --scale SCALE` (beyond this machine allowed): the plan.
fn plan_of(name: &str, scale: &str) -> String {
    let (code, plan, stderr) = common::run(&[
        "run",
        name,
        "--check",
        "--all-contenders",
        "--scale",
        scale,
        "--skip-resource-check",
    ]);
    assert_eq!(code, 0, "{name} {scale}: {stderr}");
    plan
}

/// The plan's line for `what` (`step catch-up:`, `contender innodb:`).
fn line<'a>(plan: &'a str, what: &str) -> &'a str {
    plan.lines()
        .find(|l| l.starts_with(what))
        .unwrap_or_else(|| panic!("no {what} in\n{plan}"))
}

#[test]
fn the_replication_study_writes_small_inserts_with_the_replicas_stopped_under_its_commit_wait() {
    for scale in ["quick", "full"] {
        let plan = plan_of("replication", scale);
        // the original's method: ten tasks insert, replication started only afterwards
        let catch_up = line(&plan, "step catch-up:");
        for want in [
            "writes = \"insert\"",
            "writers = 10",
            "fetch = \"after\"",
            "wait_count = 4",
            "wait_usec = 10000",
        ] {
            assert!(catch_up.contains(want), "{scale}: {want} in {catch_up}");
        }
        // dbduel's own measurement of the domains: its bitmap rows, fetched meanwhile
        let domains = line(&plan, "step catch-up-domains:");
        for want in [
            "writes = \"bitmaps\"",
            "bitmap_min_bytes = 4096",
            "bitmap_max_bytes = 4194304",
            "gtid_domains = 10",
        ] {
            assert!(domains.contains(want), "{scale}: {want} in {domains}");
        }
        assert!(!domains.contains("fetch"), "{domains}");
        if scale == "full" {
            // an hour of writes, 10 GB buffer pools, as the original
            assert!(catch_up.contains("duration_s = 3600"), "{catch_up}");
            let m = line(&plan, "contender mariadb:");
            assert!(m.contains("buffer_pool_mb = 10240"), "{m}");
            let pg = line(&plan, "contender postgres:");
            assert!(pg.contains("shared_buffers_mb = 10240"), "{pg}");
        }
    }
}

#[test]
fn point_lookups_at_full_holds_the_originals_24_gb_and_its_1e8_table() {
    let plan = plan_of("point-lookups", "full");
    assert!(plan.contains("dataset: 1000000000 rows"), "{plan}");
    for name in ["innodb-24g", "innodb-partitioned-24g", "postgres-24g"] {
        let c = line(&plan, &format!("contender {name}:"));
        assert!(c.contains("memory_limit_mb = 24576"), "{c}");
    }
    // a cache below the limit, so the limit is reached by the page cache, not the pool
    let c = line(&plan, "contender innodb-24g:");
    assert!(c.contains("buffer_pool_mb = 20480"), "{c}");
    // the 24 GB contenders run by default at full, and not at quick, where every contender
    // is limited already
    let (code, plan, stderr) = common::run(&[
        "run",
        "point-lookups",
        "--check",
        "--scale",
        "full",
        "--skip-resource-check",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(plan.contains("contender innodb-24g:"), "{plan}");
    let (code, plan, stderr) = common::run(&["run", "point-lookups", "--check"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!plan.contains("-24g"), "{plan}");
    // the original's test 5: a plain table of 10^8 codes
    let plan = plan_of("point-lookups", "full-1e8");
    assert!(plan.contains("dataset: 100000000 rows"), "{plan}");
}

#[test]
fn oltp_quick_keeps_the_originals_sixteen_tables() {
    let (code, plan, stderr) = common::run(&["run", "oltp", "--check"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(plan.contains("16 tables × 25000 rows"), "{plan}");
}

#[test]
fn the_tpcc_study_draws_warehouses_as_tpcc_mysql_did_at_every_scale() {
    for scale in ["functional", "quick", "full"] {
        let (code, plan, stderr) = common::run(&[
            "run",
            "tpcc",
            "--check",
            "--scale",
            scale,
            "--skip-resource-check",
        ]);
        assert_eq!(code, 0, "{scale}: {stderr}");
        let step = plan
            .lines()
            .find(|l| l.starts_with("step tpcc:"))
            .unwrap_or_else(|| panic!("{plan}"));
        assert!(
            step.contains("home_warehouse = \"random\""),
            "{scale}: {step}"
        );
        assert!(step.contains("report_interval_s = 10"), "{scale}: {step}");
        // the hot-ddl step keeps the specification's fixed rule (the default)
        let hot = plan
            .lines()
            .find(|l| l.starts_with("step hot-ddl:"))
            .unwrap();
        assert!(!hot.contains("home_warehouse"), "{scale}: {hot}");
    }
}

#[test]
fn a_bad_scale_is_refused_whichever_scale_is_chosen() {
    let study = "tests/bad_studies/unselected_scale_unknown_step.toml";
    for args in [&["--scale", "quick"][..], &[][..]] {
        let mut all = vec!["run", study, "--check"];
        all.extend_from_slice(args);
        let (code, stdout, stderr) = common::run(&all);
        assert_eq!(code, 2, "{stdout}");
        assert!(
            stderr.contains(":23:11: in [scale.full] `step.nope.clients`: "),
            "{stderr}"
        );
    }
}

#[test]
fn overrides_get_the_same_messages() {
    let (code, _, stderr) = common::run(&[
        "run",
        "oltp",
        "--check",
        "--set",
        "step.point-select.threads=[4,-1]",
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        "error: --set step.point-select.threads=[4,-1]: step[1].threads: threads must be a positive client count or a list of them"
    );
    let (code, _, stderr) = common::run(&[
        "run",
        "shootout",
        "--check",
        "--set",
        "step.range-queries.queries=[\"SELECT 1\", 2]",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("step[4].queries[1]: invalid type: integer `2`, expected a string"),
        "{stderr}"
    );
    // An override can take away the load a later step needs.
    let (code, _, stderr) =
        common::run(&["run", "oltp", "--check", "--set", "step.load.kind=count"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        "error: --set step.load.kind=count: step[0].kind: step \"load\" counts the rows of tables sbtest1 to sbtest16, but no step before it creates them: contender `sqlite-wal` starts empty (it has no target); add a step with kind = \"load\" before it"
    );
}

#[test]
fn steps_without_a_load_pass_where_the_tables_may_already_be() {
    let dir = tempfile::tempdir().expect("tmp");
    let head = "[study]\nname = \"t\"\ndescription = \"t\"\n[dataset]\ngenerator = \"sbtest\"\nrows = 1000\n";
    let oltp = "[[step]]\nname = \"ps\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = [1, 2]\nduration_s = 3\n";
    let cases = [
        // an external server may hold the sbtest tables already
        "[[contender]]\nname = \"theirs\"\nengine = \"mariadb\"\ntarget = \"mysql://bench@db7:3306\"\n",
        // the dry engine holds nothing and needs nothing
        "[[contender]]\nname = \"dry\"\nengine = \"dry\"\n",
    ];
    for (i, contender) in cases.iter().enumerate() {
        let path = dir.path().join(format!("s{i}.toml"));
        std::fs::write(&path, format!("{head}{contender}{oltp}")).expect("write");
        let (code, _, stderr) = common::run(&["run", path.to_str().unwrap(), "--check"]);
        assert_eq!(code, 0, "{contender}: {stderr}");
    }
    // A query that names no table of the dataset needs no load.
    let path = dir.path().join("select1.toml");
    std::fs::write(
        &path,
        format!(
            "{head}[[contender]]\nname = \"a\"\nengine = \"sqlite\"\n[[step]]\nname = \"q\"\n\
             kind = \"queries\"\nclients = 1\nper_client = 1\nqueries = [\"SELECT 1\"]\n"
        ),
    )
    .expect("write");
    let (code, _, stderr) = common::run(&["run", path.to_str().unwrap(), "--check"]);
    assert_eq!(code, 0, "{stderr}");
}

/// The built-in studies name their MySQL contenders (`mysql-5.6`, `mysql-8.0`): without the
/// server cache, the default run still needs nothing, and asking for MySQL fails before
/// anything runs (exit 3) with every missing version, the install script, and the
/// `--contender` choice that runs the contenders this machine has.
#[test]
fn a_study_without_its_mysql_says_which_versions_and_how_to_go_on() {
    let tmp = tempfile::tempdir().expect("tmp");
    let empty = tmp.path().join("servers");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let out = tmp.path().join("out");
    let run = |args: &[&str]| {
        let o = common::bin()
            .args(args)
            .args(["--out", out.to_str().unwrap()])
            .env("DBDUEL_SERVERS_DIR", &empty)
            .output()
            .expect("runs");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // `make demo` and the README's first command: the embedded default, no cache needed
    for study in ["shootout", "oltp", "tpcc", "storage-tiers", "point-lookups"] {
        let (code, stderr) = run(&["run", study, "--check"]);
        assert_eq!(code, Some(0), "{study}: {stderr}");
    }
    let (code, stderr) = run(&[
        "run",
        "point-lookups",
        "--contender",
        "mysql-5.6",
        "--contender",
        "mysql-8.0",
        "--contender",
        "sqlite-wal",
    ]);
    assert_eq!(code, Some(3), "{stderr}");
    for want in [
        "contender `mysql-5.6` cannot run here: MySQL 5.6 is not installed here",
        "contender `mysql-8.0` cannot run here: MySQL 8.0 is not installed here",
        "scripts/install-servers",
        "the others can run here: choose them with --contender sqlite-wal",
    ] {
        assert!(stderr.contains(want), "{want:?} in:\n{stderr}");
    }
    assert!(!out.exists(), "nothing ran: {}", out.display());
}

#[test]
fn the_builtin_scripts_pass_a_targets_statement_checks() {
    // What a target refuses in a user's script (tests/bad_studies/script_outside_target.toml)
    // leaves the built-in pgbench scripts alone.
    let (code, _, stderr) = common::run(&[
        "run",
        "tests/studies/builtin_scripts_on_target.toml",
        "--check",
    ]);
    assert_eq!(code, 0, "{stderr}");
}
