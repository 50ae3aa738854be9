//! Repeated, interleaved rounds (`--repeat`, `repeat = N`): contenders with the same settings
//! come out "tie", a contender slowed on purpose is judged slower with its interval apart,
//! the interleaving is recorded and follows from the seed, and compare judges repeated runs.
//! Real SQLite runs; the tests run one at a time so that none disturbs another's figures.

mod common;

use common::{read_json, run, run_dir, step};
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const STUDY: &str = "tests/studies/repeat_twins.toml";

/// Run the study with `args` into a fresh results root and check it succeeded. Returns the
/// root (keep it alive), the run directory and stdout.
fn run_study(args: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let out = tempfile::tempdir().unwrap();
    let root = out.path().to_str().unwrap().to_string();
    let mut all = vec!["run", STUDY];
    all.extend_from_slice(args);
    all.extend(["--out", root.as_str()]);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "{stdout}{stderr}");
    (out, run_dir(&stderr), stdout)
}

fn metric<'a>(s: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    s["metrics"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["key"] == key))
        .unwrap_or_else(|| panic!("no {key} in {s:#}"))
}

fn interval(m: &serde_json::Value) -> (f64, f64) {
    let sp = &m["spread"];
    (sp["lo"].as_f64().unwrap(), sp["hi"].as_f64().unwrap())
}

/// The Markdown table's rows: (step title, figure, best column).
fn best_column(md: &str) -> Vec<(String, String, String)> {
    let mut title = String::new();
    md.lines()
        .skip_while(|l| !l.starts_with("| step | figure"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            if !cells[0].is_empty() {
                title = cells[0].clone();
            }
            (
                title.clone(),
                cells[1].clone(),
                cells.last().cloned().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn twins_tie_and_the_slow_contender_loses_beyond_the_noise() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_out, dir, stdout) = run_study(&["--all-contenders", "--format", "markdown"]);
    let summary = read_json(&dir.join("summary.json"));
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["rounds"].as_array().unwrap().len(), 5);
    // Every round of every contender wrote its own files.
    for c in ["twin-a", "twin-b", "slow"] {
        assert!(dir.join(c).join("load.json").is_file());
        for r in 2..=5 {
            assert!(
                dir.join(c)
                    .join(format!("round-{r}"))
                    .join("load.json")
                    .is_file(),
                "{c} round {r}"
            );
        }
        let load = step(&summary, c, "load");
        let secs = metric(load, "elapsed_s");
        assert_eq!(secs["samples"].as_array().unwrap().len(), 5, "{secs:#}");
        assert_eq!(secs["spread"]["n"], 5);
        // The figure is the median of its samples.
        let mut xs: Vec<f64> = secs["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        xs.sort_by(f64::total_cmp);
        assert_eq!(secs["value"].as_f64().unwrap(), xs[2]);
    }

    // The twins: every figure with a direction is a tie, in the data and in the report.
    for key in ["elapsed_s", "rows_per_s"] {
        let a = interval(metric(step(&summary, "twin-a", "load"), key));
        let b = interval(metric(step(&summary, "twin-b", "load"), key));
        assert!(
            a.0 <= b.1 && b.0 <= a.1,
            "twins' {key} intervals apart: {a:?} {b:?}"
        );
    }
    // The slow one: its load interval lies wholly beyond both twins'.
    let slow = interval(metric(step(&summary, "slow", "load"), "elapsed_s"));
    for twin in ["twin-a", "twin-b"] {
        let t = interval(metric(step(&summary, twin, "load"), "elapsed_s"));
        assert!(slow.0 > t.1, "slow {slow:?} not apart from {twin} {t:?}");
    }
    // Markdown: the best column says "tie" for every directional figure (the two twins lead
    // each), and the context says how to read the intervals.
    let rows = best_column(&stdout);
    assert!(!rows.is_empty(), "{stdout}");
    for (title, figure, best) in &rows {
        assert!(
            best.is_empty() || best == "tie",
            "{title} / {figure}: best = {best:?}\n{stdout}"
        );
    }
    assert!(
        stdout.contains("rounds: 5, contenders interleaved"),
        "{stdout}"
    );
    assert!(stdout.contains("93.8% confidence"), "{stdout}");
    assert!(
        // "…, their intervals overlapping" or, when the medians are within 0.5 %, "(seconds: …)".
        stdout.contains("twin-a and twin-b tied for fastest")
            || stdout.contains("twin-b and twin-a tied for fastest"),
        "{stdout}"
    );
    assert!(stdout.contains("slow slowest"), "{stdout}");
    // The study's published figures stand in their own column, never ranked.
    assert!(stdout.contains("| paper (published) | best |"), "{stdout}");
    assert!(stdout.contains("| 500 ms | tie |"), "{stdout}");
    assert!(
        stdout.contains("paper (published): published, not measured here — SQLite 3.7 on a laptop; an imagined post"),
        "{stdout}"
    );
}

#[test]
fn a_slower_contender_is_judged_slower_with_its_interval_apart() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_out, dir, _) = run_study(&["--contender", "twin-a", "--contender", "slow"]);
    let (code, md, err) = run(&["report", dir.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    let load = best_column(&md)
        .into_iter()
        .find(|(t, f, _)| t == "bulk load" && f == "seconds")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(load.2.starts_with("twin-a "), "{md}");
    // Beside a baseline every directed figure is also its ratio to the baseline's.
    let (code, md, err) = run(&[
        "report",
        dir.to_str().unwrap(),
        "--format",
        "markdown",
        "--baseline",
        "slow",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("| slow (baseline) |"), "{md}");
    let seconds = md
        .lines()
        .find(|l| l.starts_with("|  | seconds |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        seconds.contains(" ×0."),
        "twin-a's load time as a share of slow's: {seconds}"
    );
    let (code, _, err) = run(&["report", dir.to_str().unwrap(), "--baseline", "nobody"]);
    assert_eq!(code, 2);
    assert!(err.contains("no contender `nobody` in this run"), "{err}");
    assert!(
        md.contains("twin-a was")
            && md.contains("apart beyond their 93.8% intervals over 5 rounds"),
        "{md}"
    );
}

#[test]
fn the_interleaving_follows_from_the_seed_and_is_recorded() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let plan = |seed: &str| {
        let (code, out, err) = run(&[
            "run",
            STUDY,
            "--all-contenders",
            "--set",
            &format!("dataset.seed={seed}"),
            "--check",
        ]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .find_map(|l| l.strip_prefix("rounds: 5, contenders interleaved: "))
            .unwrap_or_else(|| panic!("{out}"))
            .to_string()
    };
    let p42 = plan("42");
    assert_eq!(p42, plan("42"), "same seed, same plan");
    let orders: Vec<Vec<&str>> = p42.split(" | ").map(|o| o.split(' ').collect()).collect();
    assert_eq!(orders.len(), 5);
    // Each round runs every contender once, and the lead rotates.
    for o in &orders {
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["slow", "twin-a", "twin-b"]);
    }
    let leads: std::collections::BTreeSet<&str> = orders.iter().map(|o| o[0]).collect();
    assert_eq!(leads.len(), 3, "{p42}");
    // Some other seed shuffles differently (six orders of three contenders).
    assert!(
        (1..=20).any(|s| plan(&s.to_string()) != p42),
        "every seed gave {p42}"
    );
    // --repeat overrides the study's rounds; 0 is refused with the range.
    let (code, _, err) = run(&["run", STUDY, "--repeat", "0", "--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("repeat = 0 is out of range"), "{err}");
}

#[test]
fn compare_judges_repeated_runs_and_pools_several_runs_a_side() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_out, dir, _) = run_study(&["--contender", "twin-a", "--contender", "twin-b"]);
    let d = dir.to_str().unwrap();
    // A repeated run against itself: every figure judged, none changed.
    let (code, json, err) = run(&["compare", d, d, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let c: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = c["rows"].as_array().unwrap();
    let judged: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["better"] != "none" && r["better"].is_string())
        .collect();
    assert!(!judged.is_empty());
    for r in &judged {
        // A round left out on a busy machine leaves 4 samples: then "needs 1 more".
        if r["verdict"] == "not_judged" {
            assert!(r["why"].as_str().unwrap().contains("needs"), "{r:#}");
            continue;
        }
        assert_eq!(r["verdict"], "no_significant_change", "{r:#}");
        // How often an unchanged figure looks changed: 2 / C(10, 5) at 5 rounds a side.
        let chance = r["chance"].as_f64().unwrap_or_else(|| panic!("{r:#}"));
        assert!((2.0 / 252.0 - 1e-9..0.1).contains(&chance), "{r:#}");
    }
    let (_, text, _) = run(&["compare", d, d]);
    assert!(text.contains("judged from repeated rounds: "), "{text}");
    // Runs measured once, pooled two a side: too few samples, and the row says how many more.
    let fixtures = "tests/fixtures/runs";
    let f1 = format!("{fixtures}/shootout-20261122-034526");
    let f2 = format!("{fixtures}/shootout-20261122-035729");
    let (code, text, err) = run(&["compare", &f1, &f2, "--", &f1, &f2]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("2 rounds a side: needs 3 more rounds a side"),
        "{text}"
    );
    // Three runs and no separator is a usage error that shows the form.
    let (code, _, err) = run(&["compare", &f1, &f2, &f1]);
    assert_eq!(code, 2);
    assert!(err.contains("A1 A2 -- B1 B2"), "{err}");
    // Pooled runs must be one experiment, each counted once.
    let f3 = format!("{fixtures}/shootout-20261122-035745");
    let (code, _, err) = run(&["compare", &f1, &f3, "--", &f1, &f2]);
    assert_eq!(code, 2);
    assert!(
        err.contains("ran different studies (they differ at `step"),
        "{err}"
    );
    let (code, _, err) = run(&["compare", &f1, &f1, "--", &f1, &f2]);
    assert_eq!(code, 2);
    assert!(err.contains("is given twice on one side"), "{err}");
}

/// Busy loops that stop when dropped, whatever the test does.
struct Hogs(Vec<std::process::Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_cpu_hog_beside_the_run_is_reported_as_a_disturbance() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("hogged.toml");
    std::fs::write(&study, include_str!("studies/cpu_hog_paced_step.toml")).unwrap();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs = Hogs(
        (0..cores)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .expect("sh starts")
            })
            .collect(),
    );
    let (code, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    drop(hogs);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let summary = read_json(&run_dir(&stderr).join("summary.json"));
    let s = step(&summary, "lite", "paced");
    let others = s["machine"]["others_cpu_pct"].as_f64().unwrap();
    assert!(
        others > 30.0,
        "the hogs used {others}% of the machine: {s:#}"
    );
    let note = s["note"].as_str().unwrap();
    assert!(
        note.contains("other processes used") && note.contains("compare will not judge them"),
        "{note}"
    );
    assert!(stdout.contains("other processes used"), "{stdout}");
}

#[test]
fn a_past_run_is_rerun_exactly_and_judged_against_the_original() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (out, first, _) = run_study(&[
        "--contender",
        "twin-a",
        "--contender",
        "slow",
        "--set",
        "dataset.rows=3000",
    ]);
    let o = out.path().to_str().unwrap();
    let (code, stdout, stderr) = run(&["rerun", first.to_str().unwrap(), "--out", o]);
    let second = run_dir(&stderr);
    assert_ne!(first, second);
    let (m1, m2) = (
        read_json(&first.join("manifest.json")),
        read_json(&second.join("manifest.json")),
    );
    // The same study as it ran, overrides, contenders and interleaving.
    for key in ["study", "overrides", "source", "rounds", "dataset"] {
        let (a, b) = (&m1[key], &m2[key]);
        if key == "dataset" {
            assert_eq!(a["rows"], b["rows"]);
            assert_eq!(a["seed"], b["seed"]);
        } else {
            assert_eq!(a, b, "{key}");
        }
    }
    let names = |m: &serde_json::Value| -> Vec<String> {
        m["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&m1), names(&m2));
    assert_eq!(m2["dataset"]["rows"], 3000);
    // It says whether this machine reproduced the run, and the exit code agrees.
    assert!(stdout.contains("dbduel compare"), "{stdout}");
    if stderr.lines().any(|l| l.starts_with("reproduced ")) {
        assert_eq!(code, 0, "{stderr}");
    } else {
        assert!(stderr.contains("NOT reproduced ("), "{stderr}");
        assert_eq!(code, 1, "{stderr}");
    }
    // Something that is not a run directory is refused.
    let (code, _, err) = run(&["rerun", o]);
    assert_eq!(code, 2, "{err}");
}
