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
        stderr.contains("not a built-in study (built-ins: shootout, oltp, harness)"),
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
    for name in ["shootout", "oltp", "harness"] {
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
        let (code, _, stderr) = common::run(&["run", name, "--check", "--all-contenders"]);
        assert_eq!(code, 0, "{name} quick must fit this machine: {stderr}");
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
