//! Several measurements of the same steps made into one result: the rounds of a repeated run,
//! or whole runs pooled for `compare A1 A2 -- B1 B2`. Each figure becomes the median of its
//! samples with the samples kept beside it — nothing is averaged away — so reports and
//! compare judge a merged result like any other, with its spread.
//!
//! A round during which the machine was busy with other work is left out of the figures when
//! undisturbed rounds remain, and the note says which and why; when every round was disturbed
//! the figures stand and carry the disturbance, so compare does not judge them.

use super::{ContenderSummary, Metric, Status, StepSummary, Summary};

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
    let status = if parts.iter().any(|p| p.step.status == Status::Failed) {
        Status::Failed
    } else if parts.iter().any(|p| p.step.status == Status::Interrupted) {
        Status::Interrupted
    } else if parts.iter().all(|p| p.step.status == Status::Skipped) {
        Status::Skipped
    } else {
        Status::Ok
    };
    let ok: Vec<&Part> = parts
        .iter()
        .filter(|p| p.step.status == Status::Ok)
        .collect();
    let disturbed = |p: &Part| {
        p.step
            .machine
            .as_ref()
            .is_some_and(|m| !m.disturbances().is_empty())
    };
    let quiet: Vec<&Part> = ok.iter().copied().filter(|p| !disturbed(p)).collect();
    let (kept, left_out): (Vec<&Part>, Vec<&Part>) = if quiet.is_empty() {
        (ok.clone(), Vec::new())
    } else {
        (quiet, ok.iter().copied().filter(|p| disturbed(p)).collect())
    };
    let failed = parts.iter().find(|p| p.step.status == Status::Failed);
    let base = failed.or(kept.first().copied()).unwrap_or(&parts[0]);
    let mut out = base.step.clone();
    out.status = status;
    if kept.is_empty() {
        return out;
    }
    let median = |xs: Vec<f64>| super::spread::Spread::of(&xs).map(|s| s.median);
    out.metrics = metric_keys(&kept)
        .into_iter()
        .map(|m| {
            let samples: Vec<f64> = kept
                .iter()
                .filter_map(|p| p.step.metrics.iter().find(|x| x.key == m.key))
                .flat_map(|x| {
                    if x.samples.is_empty() {
                        vec![x.value]
                    } else {
                        x.samples.clone()
                    }
                })
                .collect();
            Metric::new(&m.key, &m.label, m.value, m.unit, m.better).with_samples(samples)
        })
        .collect();
    out.elapsed_s = median(kept.iter().filter_map(|p| p.step.elapsed_s).collect());
    out.ops_per_s = median(kept.iter().filter_map(|p| p.step.ops_per_s).collect());
    out.errors = kept
        .iter()
        .filter_map(|p| p.step.errors)
        .reduce(|a, b| a + b);
    out.dbduel = kept
        .iter()
        .filter_map(|p| p.step.dbduel)
        .max_by_key(|o| o.peak_rss_bytes);
    if failed.is_none() {
        out.machine = kept[0].step.machine;
        out.note = kept[0].step.note.clone();
    }
    if !left_out.is_empty() {
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
        let line = format!(
            "left out of the figures, the machine being busy: {}",
            why.join("; ")
        );
        out.note = Some(match out.note.take() {
            Some(n) => format!("{n}; {line}"),
            None => line,
        });
    }
    out
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
