//! `--repeat auto[:MAX]` and `--budget` on the dry engine: steady contenders 30 % apart stop
//! as soon as their figures are precise, their speed at the fewest rounds that judge; contenders 2 % apart on a drifting machine run to MAX
//! and are reported undecided; a budget stops between rounds, never inside a step. The
//! statistics of the rule (no more false verdicts than fixed rounds) are tested in
//! `src/run/auto_rounds.rs`.

mod common;

use common::{read_json, run, run_dir};
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const STUDY: &str = "tests/studies/repeat_auto_dry.toml";

/// Run the study's `contenders` with `args`; the run directory, stdout and stderr.
fn run_auto(
    contenders: &[&str],
    args: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf, String, String) {
    let out = tempfile::tempdir().unwrap();
    let root = out.path().to_str().unwrap().to_string();
    let mut all = vec!["run", STUDY, "--out", root.as_str()];
    for c in contenders {
        all.extend(["--contender", c]);
    }
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let dir = run_dir(&stderr);
    (out, dir, stdout, stderr)
}

#[test]
fn steady_contenders_far_apart_stop_at_the_fewest_rounds_that_judge() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_out, dir, stdout, stderr) = run_auto(&["steady", "steady-slower"], &["--repeat", "auto"]);
    let m = read_json(&dir.join("manifest.json"));
    let a = &m["auto_rounds"];
    assert_eq!(a["max"], 15);
    // TPS is steady: the fewest rounds that judge. The tail (p99 of some 50 statements a
    // round) may need more on a busy machine — on a clean-clone CI run it once stayed
    // undecided to MAX —; the run stops as soon as every figure is precise.
    let run = a["rounds_run"].as_u64().unwrap();
    assert_eq!(
        m["rounds"].as_array().unwrap().len() as u64,
        run,
        "the rounds that ran"
    );
    for f in a["figures"].as_array().unwrap() {
        if f["figure"] == "tps_t1" {
            assert_eq!(f["needed"], 5, "{f:#}");
        }
        if let Some(needed) = f["needed"].as_u64() {
            assert!(needed <= run, "{f:#}");
        }
    }
    assert!(
        stdout.contains("rounds each figure needed: lookups TPS 5, lookups p99 "),
        "{stdout}"
    );
    if a["stopped_by"] == "precision" {
        assert!((5..15).contains(&run), "{a:#}");
        assert!(
            stdout.contains(&format!("--repeat auto stopped after {run} of at most 15: every judged figure's interval within ±5% of its median")),
            "{stdout}"
        );
        assert!(
            stderr.contains(&format!(
                "rounds: {run} of at most 15, stopped by precision"
            )),
            "{stderr}"
        );
    } else {
        // only a tail left undecided
        assert_eq!(a["stopped_by"], "max", "{a:#}");
        assert_eq!(run, 15, "{a:#}");
        for f in a["figures"].as_array().unwrap() {
            if f["needed"].is_null() {
                assert_ne!(f["figure"], "tps_t1", "{f:#}");
            }
        }
    }
    // The slower one is judged slower, its interval apart.
    assert!(
        stdout.contains("steady 1.29×") || stdout.contains("steady 1.30×"),
        "{stdout}"
    );
}

#[test]
fn a_rerun_of_an_auto_run_follows_its_rule_again_not_max_fixed_rounds() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (out, dir, _, _) = run_auto(&["steady", "steady-slower"], &["--repeat", "auto"]);
    let root = out.path().join("again");
    let (code, stdout, stderr) = run(&[
        "rerun",
        dir.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    let again = run_dir(&stderr);
    // Fixed rounds would record no rule at all; the rule records each judged figure and the
    // rounds it needed (the steady TPS the fewest that judge; a tail may stay undecided on a
    // busy machine and run the rerun to MAX, as it could the first run).
    let a = read_json(&again.join("manifest.json"))["auto_rounds"].clone();
    assert_eq!(a["auto"], true, "{a:#}");
    assert_eq!(a["max"], 15, "{a:#}");
    assert!(
        a["stopped_by"] == "precision" || a["stopped_by"] == "max",
        "{a:#}"
    );
    let tps = a["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == "tps_t1" && f["contender"] == "steady")
        .cloned();
    assert_eq!(tps.map(|f| f["needed"].clone()), Some(5.into()), "{a:#}");
}

#[test]
fn close_contenders_on_a_drifting_machine_run_to_max_undecided() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_out, dir, stdout, _) =
        run_auto(&["drifting", "drifting-slower"], &["--repeat", "auto:6"]);
    let a = read_json(&dir.join("manifest.json"))["auto_rounds"].clone();
    assert_eq!(a["stopped_by"], "max", "{a:#}");
    assert_eq!(a["rounds_run"], 6);
    assert!(
        a["figures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["needed"].is_null()),
        "{a:#}"
    );
    assert!(
        stdout.contains("--repeat auto ran its most, 6 rounds: not every judged figure got within ±5% of its median")
            && stdout.contains("undecided ("),
        "{stdout}"
    );
    // and the verdict does not call a 2 % difference on ±25 % drift
    assert!(stdout.contains("tie"), "{stdout}");
}

#[test]
fn a_budget_stops_between_rounds_and_every_step_of_a_round_run_is_whole() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Each round takes a little over 2 s: after the first, a second would end past 3 s.
    let (_out, dir, stdout, _) = run_auto(
        &["steady", "steady-slower"],
        &["--repeat", "10", "--budget", "3s"],
    );
    let m = read_json(&dir.join("manifest.json"));
    let a = &m["auto_rounds"];
    assert_eq!(a["stopped_by"], "budget", "{a:#}");
    assert_eq!(a["rounds_run"], 1, "{a:#}");
    assert_eq!(a["auto"], false);
    let s = read_json(&dir.join("summary.json"));
    assert_eq!(s["status"], "ok", "{s:#}");
    for c in s["contenders"].as_array().unwrap() {
        for st in c["steps"].as_array().unwrap() {
            assert_eq!(st["status"], "ok", "{st:#}");
        }
    }
    assert!(!dir.join("steady/round-2").exists());
    assert!(
        stdout.contains("the budget of 3.00 s stopped it after 1 of at most 10 rounds"),
        "{stdout}"
    );
    // A budget that is no duration is refused before anything runs.
    let (code, _, err) = run(&["run", STUDY, "--budget", "soon", "--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a duration"), "{err}");
}
