//! Several measurements of the same steps made into one result: the rounds of a repeated run,
//! or whole runs pooled for `compare A1 A2 -- B1 B2`. Each figure becomes the median of its
//! samples with the samples kept beside it — nothing is averaged away — so reports and
//! compare judge a merged result like any other, with its spread.
//!
//! A round during which the machine was busy with other work is left out of the figures when
//! undisturbed rounds remain, and the note says which and why; when every round was disturbed
//! the figures stand and carry the disturbance, so compare does not judge them.

use super::{ContenderSummary, Metric, Status, StepSummary, Summary, Unit};

/// One measurement of a step and what to call it in notes (`round 2`, a run's name).
pub struct Part<'a> {
    pub label: String,
    pub step: &'a StepSummary,
}

/// Merge measurements of one step. `parts` must not be empty; one part is returned as it is.
pub fn step(parts: &[Part]) -> StepSummary {
    if let [one] = parts {
        return one.step.clone();
    }
    let unfinished: Vec<&str> = parts
        .iter()
        .filter(|p| matches!(p.step.status, Status::Interrupted | Status::Skipped))
        .map(|p| p.label.as_str())
        .collect();
    let (kept, left_out) = kept_rounds(parts);
    let failed = parts.iter().find(|p| p.step.status == Status::Failed);
    let base = failed.or(kept.first().copied()).unwrap_or(&parts[0]);
    let mut out = base.step.clone();
    out.status = merged_status(parts);
    if kept.is_empty() {
        return out;
    }
    merge_figures(&mut out, &kept);
    if failed.is_none() {
        out.machine = kept[0].step.machine;
        out.note = kept[0].step.note.clone();
    }
    if !unfinished.is_empty() && failed.is_none() {
        let line = format!(
            "figures from {} round(s); not finished in {}",
            kept.len(),
            unfinished.join(", ")
        );
        add_note(&mut out, line);
    }
    if !left_out.is_empty() {
        add_note(&mut out, left_out_line(&left_out));
    }
    out
}

/// A round that failed fails the step (a crash in any round is a result); rounds that did
/// not finish (interrupted, or never run) only count when no round finished.
fn merged_status(parts: &[Part]) -> Status {
    let any = |st: Status| parts.iter().any(|p| p.step.status == st);
    if any(Status::Failed) {
        Status::Failed
    } else if any(Status::Ok) {
        Status::Ok
    } else if any(Status::Interrupted) {
        Status::Interrupted
    } else {
        Status::Skipped
    }
}

fn disturbed(p: &Part) -> bool {
    p.step
        .machine
        .as_ref()
        .is_some_and(|m| !m.disturbances().is_empty())
}

/// The finished rounds whose figures count, and those left out for a busy machine: the
/// undisturbed ones when there are any, else every finished round (none left out).
fn kept_rounds<'p, 'a>(parts: &'p [Part<'a>]) -> (Vec<&'p Part<'a>>, Vec<&'p Part<'a>>) {
    let ok: Vec<&Part> = parts
        .iter()
        .filter(|p| p.step.status == Status::Ok)
        .collect();
    let quiet: Vec<&Part> = ok.iter().copied().filter(|p| !disturbed(p)).collect();
    if quiet.is_empty() {
        (ok.clone(), Vec::new())
    } else {
        (quiet, ok.iter().copied().filter(|p| disturbed(p)).collect())
    }
}

/// The figures of `out` made the medians of the kept rounds' samples.
fn merge_figures(out: &mut StepSummary, kept: &[&Part]) {
    let median = |xs: Vec<f64>| super::spread::Spread::of(&xs).map(|s| s.median);
    out.metrics = metric_keys(kept)
        .into_iter()
        .map(|m| merged_metric(kept, m))
        .collect();
    out.elapsed_s = median(kept.iter().filter_map(|p| p.step.elapsed_s).collect());
    out.ops_per_s = median(kept.iter().filter_map(|p| p.step.ops_per_s).collect());
    // Like the errors figure, the median round's (summed, five rounds would look five times
    // as bad).
    out.errors = lower_median(
        &kept
            .iter()
            .map(|p| p.step.errors.unwrap_or(0) as f64)
            .collect::<Vec<_>>(),
    )
    .map(|e| e as u64)
    .filter(|_| kept.iter().any(|p| p.step.errors.is_some()));
    out.dbduel = kept
        .iter()
        .filter_map(|p| p.step.dbduel)
        .max_by_key(|o| o.peak_rss_bytes);
}

/// Metric `m` with every kept round's samples of it.
fn merged_metric(kept: &[&Part], m: &Metric) -> Metric {
    let samples: Vec<f64> = kept
        .iter()
        .flat_map(|p| match p.step.metrics.iter().find(|x| x.key == m.key) {
            Some(x) if x.samples.is_empty() => vec![x.value],
            Some(x) => x.samples.clone(),
            // Counters a step lists only when they are not zero.
            None if ZERO_WHEN_ABSENT.contains(&m.key.as_str()) => vec![0.0],
            None => Vec::new(),
        })
        .filter(|x| x.is_finite())
        .collect();
    let mut merged = Metric::new(&m.key, &m.label, m.value, m.unit, m.better).with_samples(samples);
    merged.role = m.role.clone();
    // A count (a client level, rows) is one of the values seen, never a mean of two.
    if m.unit == Unit::Count
        && let Some(sp) = &merged.spread
    {
        merged.value = lower_median(&merged.samples).unwrap_or(sp.median);
    }
    merged
}

/// `left out of the figures, the machine being busy: round 2 (…)`.
fn left_out_line(left_out: &[&Part]) -> String {
    let why: Vec<String> = left_out
        .iter()
        .map(|p| {
            let what = p
                .step
                .machine
                .iter()
                .flat_map(|m| m.disturbances())
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} ({what})", p.label)
        })
        .collect();
    format!(
        "left out of the figures, the machine being busy: {}",
        why.join("; ")
    )
}

/// Append `line` to the step's note.
fn add_note(out: &mut StepSummary, line: String) {
    out.note = Some(match out.note.take() {
        Some(n) => format!("{n}; {line}"),
        None => line,
    });
}

/// Figures a step lists only when they are not zero: a round without one counted none.
const ZERO_WHEN_ABSENT: &[&str] = &["errors", "warnings", "rows_rejected"];

/// The lower of the two middle values (the middle one for an odd count): a value that was
/// measured.
fn lower_median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied()
}

/// Every metric of the parts, in first-seen order.
fn metric_keys<'a>(parts: &[&Part<'a>]) -> Vec<&'a Metric> {
    let mut keys: Vec<&Metric> = Vec::new();
    for p in parts {
        for m in &p.step.metrics {
            if !keys.iter().any(|k| k.key == m.key) {
                keys.push(m);
            }
        }
    }
    keys
}

/// Merge several measurements of one contender (labelled like [`Part`]): its steps in the
/// order they first appear.
pub fn contender(parts: &[(String, &ContenderSummary)]) -> Option<ContenderSummary> {
    let (_, first) = parts.first()?;
    let mut names: Vec<&str> = Vec::new();
    for (_, c) in parts {
        for s in &c.steps {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
    }
    let steps = names
        .into_iter()
        .map(|name| {
            let of_step: Vec<Part> = parts
                .iter()
                .filter_map(|(label, c)| {
                    c.steps.iter().find(|s| s.name == name).map(|s| Part {
                        label: label.clone(),
                        step: s,
                    })
                })
                .collect();
            step(&of_step)
        })
        .collect();
    Some(ContenderSummary {
        name: first.name.clone(),
        engine: first.engine.clone(),
        steps,
    })
}

/// Pool whole runs of the same study (each labelled, e.g. by its directory name) into one
/// summary whose figures are the medians over all their samples. `runs` must not be empty.
pub fn runs(runs: &[(String, &Summary)]) -> Summary {
    let mut out = runs[0].1.clone();
    let mut names: Vec<&str> = Vec::new();
    for (_, s) in runs {
        for c in &s.contenders {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    out.contenders = names
        .into_iter()
        .filter_map(|name| {
            let parts: Vec<(String, &ContenderSummary)> = runs
                .iter()
                .filter_map(|(label, s)| {
                    s.contenders
                        .iter()
                        .find(|c| c.name == name)
                        .map(|c| (label.clone(), c))
                })
                .collect();
            contender(&parts)
        })
        .collect();
    if runs.iter().any(|(_, s)| s.status == Status::Failed) {
        out.status = Status::Failed;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Better, Unit};
    use crate::sysmon::machine::MachineShare;

    fn run_of(secs: f64, status: Status) -> StepSummary {
        let mut s = StepSummary::without_figures("load", "load", status, "n");
        s.note = None;
        if status == Status::Ok {
            s.metrics = vec![
                Metric::new("elapsed_s", "seconds", secs, Unit::Seconds, Better::Lower),
                Metric::new("rows", "rows", 100.0, Unit::Count, Better::None),
            ];
            s.elapsed_s = Some(secs);
        }
        s
    }

    fn parts(steps: &[StepSummary]) -> Vec<Part<'_>> {
        steps
            .iter()
            .enumerate()
            .map(|(i, s)| Part {
                label: format!("round {}", i + 1),
                step: s,
            })
            .collect()
    }

    #[test]
    fn figures_become_medians_with_their_samples() {
        let rounds: Vec<StepSummary> = [3.0, 1.0, 2.0, 5.0, 4.0]
            .iter()
            .map(|s| run_of(*s, Status::Ok))
            .collect();
        let m = step(&parts(&rounds));
        assert_eq!(m.status, Status::Ok);
        let secs = &m.metrics[0];
        assert_eq!(secs.value, 3.0);
        assert_eq!(secs.samples, [3.0, 1.0, 2.0, 5.0, 4.0]);
        let sp = secs.repeated().unwrap();
        assert_eq!((sp.min, sp.max, sp.n), (1.0, 5.0, 5));
        assert_eq!(m.elapsed_s, Some(3.0));
        assert_eq!(m.metrics[1].value, 100.0);
    }

    #[test]
    fn a_failed_round_fails_the_step_and_keeps_the_others_figures() {
        let mut bad = run_of(0.0, Status::Failed);
        bad.note = Some("the server died".into());
        let rounds = vec![run_of(1.0, Status::Ok), bad, run_of(3.0, Status::Ok)];
        let m = step(&parts(&rounds));
        assert_eq!(m.status, Status::Failed);
        assert_eq!(m.note.as_deref(), Some("the server died"));
        assert_eq!(m.metrics[0].samples, [1.0, 3.0]);
    }

    #[test]
    fn a_disturbed_round_is_left_out_while_quiet_ones_remain() {
        let busy = MachineShare {
            others_cpu_pct: 48.0,
            steal_pct: 0.0,
            min_available_mem_pct: 80.0,
            span_s: 10.0,
        };
        let mut r2 = run_of(9.0, Status::Ok);
        r2.machine = Some(busy);
        let rounds = vec![run_of(1.0, Status::Ok), r2, run_of(3.0, Status::Ok)];
        let m = step(&parts(&rounds));
        assert_eq!(m.metrics[0].samples, [1.0, 3.0]);
        let note = m.note.unwrap();
        assert!(note.contains("round 2 (other processes used 48%"), "{note}");
        // Every round disturbed: the figures stand, marked.
        let mut all = vec![run_of(1.0, Status::Ok), run_of(2.0, Status::Ok)];
        for r in &mut all {
            r.machine = Some(busy);
        }
        let m = step(&parts(&all));
        assert_eq!(m.metrics[0].samples, [1.0, 2.0]);
        assert!(m.machine.is_some_and(|x| !x.disturbances().is_empty()));
    }

    #[test]
    fn unfinished_rounds_leave_the_finished_ones_standing() {
        let rounds = vec![
            run_of(1.0, Status::Ok),
            run_of(2.0, Status::Ok),
            run_of(0.0, Status::Interrupted),
        ];
        let m = step(&parts(&rounds));
        assert_eq!(m.status, Status::Ok);
        assert_eq!(m.metrics[0].samples, [1.0, 2.0]);
        let note = m.note.unwrap();
        assert!(note.contains("not finished in round 3"), "{note}");
    }

    #[test]
    fn counters_absent_in_a_round_are_zero_and_counts_stay_values_seen() {
        let mut with_errors = run_of(1.0, Status::Ok);
        with_errors.metrics.push(Metric::new(
            "errors",
            "errors",
            3.0,
            Unit::Count,
            Better::Lower,
        ));
        with_errors.errors = Some(3);
        let rounds = vec![
            with_errors,
            run_of(2.0, Status::Ok),
            run_of(3.0, Status::Ok),
        ];
        let m = step(&parts(&rounds));
        let errors = m.metrics.iter().find(|x| x.key == "errors").unwrap();
        assert_eq!(errors.samples, [3.0, 0.0, 0.0]);
        assert_eq!(errors.value, 0.0);
        assert_eq!(m.errors, Some(0));
        let level = |v: f64| {
            let mut r = run_of(1.0, Status::Ok);
            r.metrics = vec![Metric::new(
                "best_threads",
                "at",
                v,
                Unit::Count,
                Better::None,
            )];
            r
        };
        let m = step(&parts(&[level(8.0), level(16.0)]));
        assert_eq!(m.metrics[0].value, 8.0, "a level that ran, not 12");
    }

    #[test]
    fn pooled_runs_keep_every_sample() {
        let mut repeated = run_of(0.0, Status::Ok);
        repeated.metrics[0] = repeated.metrics[0]
            .clone()
            .with_samples(vec![1.0, 2.0, 3.0]);
        let once = run_of(10.0, Status::Ok);
        let m = step(&parts(&[repeated, once]));
        assert_eq!(m.metrics[0].samples, [1.0, 2.0, 3.0, 10.0]);
        assert_eq!(m.metrics[0].value, 2.5);
    }
}
