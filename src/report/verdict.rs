//! Each step's result in one sentence ("sqlite-rollback was 2.17× faster than sqlite-wal"),
//! made only from the step's `Metric`s — their units and better-direction — so a new step
//! kind gets its sentence without a change here.
//!
//! Contract with step kinds: a step lists its most telling figure first. The sentence names
//! the first speed figure (seconds or a rate), the first size figure (bytes) and the step's
//! tail latency (a microsecond figure keyed `p99…`, else the first one); only when none of
//! those exists does it use the first other figure with a better-direction.

use super::format;
use crate::results::{Better, Metric, Status, StepSummary, Summary, Unit};

/// One step's verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The step's name (its key in the run directory).
    pub step: String,
    /// How reports title it.
    pub title: String,
    /// The sentence, or a note that there is nothing to compare.
    pub sentence: String,
}

/// Step names in run order across all contenders.
pub fn step_names(s: &Summary) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in &s.contenders {
        for st in &c.steps {
            if !names.contains(&st.name) {
                names.push(st.name.clone());
            }
        }
    }
    names
}

/// Each contender's summary of `step` (in contender order; `None` where it has none).
pub fn per_contender<'a>(s: &'a Summary, step: &str) -> Vec<Option<&'a StepSummary>> {
    s.contenders
        .iter()
        .map(|c| c.steps.iter().find(|x| x.name == step))
        .collect()
}

/// A step's title: from a contender that ran it, else any, else its name.
pub fn title_of(per: &[Option<&StepSummary>], step: &str) -> String {
    per.iter()
        .flatten()
        .find(|x| x.status == Status::Ok)
        .or(per.iter().flatten().next())
        .map(|x| {
            if x.title.is_empty() {
                x.name.clone()
            } else {
                x.title.clone()
            }
        })
        .unwrap_or_else(|| step.to_string())
}

/// Every metric key of a step, in first-seen order, from contenders that ran it.
pub fn metric_keys<'a>(per: &[Option<&'a StepSummary>]) -> Vec<&'a Metric> {
    let mut keys: Vec<&Metric> = Vec::new();
    for st in per.iter().flatten() {
        for m in &st.metrics {
            if !keys.iter().any(|k| k.key == m.key) {
                keys.push(m);
            }
        }
    }
    keys
}

/// The figure `key` for each contender that ran the step (with a finite value).
pub fn metrics<'a>(per: &[Option<&'a StepSummary>], key: &str) -> Vec<Option<&'a Metric>> {
    per.iter()
        .map(|p| {
            p.filter(|x| x.status == Status::Ok)
                .and_then(|x| x.metrics.iter().find(|m| m.key == key))
                .filter(|m| m.value.is_finite())
        })
        .collect()
}

/// Whether two contenders' figures are a tie by their repeated samples: both measured more
/// than once and their intervals for the median overlap. `None` when either was measured
/// once (then only the values can speak).
pub fn tied_by_spread(a: Option<&Metric>, b: Option<&Metric>) -> Option<bool> {
    let (a, b) = (a?.repeated()?, b?.repeated()?);
    Some(a.overlaps(b))
}

/// The figures a step's sentence is about (see the module's contract).
pub fn headline_metrics<'a>(keys: &[&'a Metric]) -> Vec<&'a Metric> {
    let directional: Vec<&Metric> = keys
        .iter()
        .copied()
        .filter(|m| m.better != Better::None)
        .collect();
    let mut out = Vec::new();
    if let Some(m) = directional
        .iter()
        .find(|m| matches!(m.unit, Unit::Seconds | Unit::PerSecond))
    {
        out.push(*m);
    }
    if let Some(m) = directional.iter().find(|m| m.unit == Unit::Bytes) {
        out.push(*m);
    }
    let micros: Vec<&Metric> = directional
        .iter()
        .copied()
        .filter(|m| m.unit == Unit::Micros)
        .collect();
    if let Some(m) = micros
        .iter()
        .find(|m| m.key.starts_with("p99") && !m.key.starts_with("p999"))
        .or(micros.first())
    {
        out.push(*m);
    }
    if out.is_empty()
        && let Some(m) = directional.first()
    {
        out.push(*m);
    }
    out
}

/// `2.17×`, `22.1×`, `284×`.
pub fn ratio(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.2}×")
    } else if r < 100.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.0}×")
    }
}

/// Words for one figure: comparative, superlative of the best and of the worst, verb.
fn words(m: &Metric) -> (String, String, String, &'static str) {
    match (m.unit, m.better) {
        (Unit::Seconds, Better::Lower) | (Unit::PerSecond, Better::Higher) => {
            ("faster".into(), "fastest".into(), "slowest".into(), "was")
        }
        (Unit::Bytes, Better::Lower) => {
            ("smaller".into(), "smallest".into(), "largest".into(), "is")
        }
        (_, Better::Lower) => (
            format!("lower {}", m.label),
            format!("the lowest {}", m.label),
            "highest".into(),
            "had",
        ),
        _ => (
            format!("higher {}", m.label),
            format!("the highest {}", m.label),
            "lowest".into(),
            "had",
        ),
    }
}

/// The clause about one figure: its text, and for a plain two-way win the winner, the loser
/// and the text after the winner's name without "than <loser>" (to chain clauses).
struct Clause {
    text: String,
    pair: Option<(usize, usize, String)>,
}

/// `(50.3 ms vs 109 ms)`, `(209,089 vs 136,373 queries/s)`, `(p99: 6.00 µs vs 10.0 µs)`.
fn figures(m: &Metric, a: f64, b: f64) -> String {
    match m.unit {
        Unit::Seconds | Unit::Micros => format!(
            "({} vs {})",
            format::value(a, m.unit),
            format::value(b, m.unit)
        ),
        Unit::PerSecond if m.label.ends_with("/s") => {
            format!("({} vs {} {})", format::count(a), format::count(b), m.label)
        }
        _ => format!(
            "({}: {} vs {})",
            m.label,
            format::value(a, m.unit),
            format::value(b, m.unit)
        ),
    }
}

/// The clause about one figure, or `None` when fewer than two contenders have it.
fn clause(s: &Summary, m: &Metric, figs: &[Option<&Metric>]) -> Option<Clause> {
    let vals: Vec<Option<f64>> = figs.iter().map(|f| f.map(|f| f.value)).collect();
    let mut ranked: Vec<(usize, f64)> = vals
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .collect();
    if ranked.len() < 2 {
        return None;
    }
    match m.better {
        Better::Lower => ranked.sort_by(|a, b| a.1.total_cmp(&b.1)),
        _ => ranked.sort_by(|a, b| b.1.total_cmp(&a.1)),
    }
    let name = |i: usize| s.contenders.get(i).map(|c| c.name.as_str()).unwrap_or("?");
    let v = |x: f64| format::value(x, m.unit);
    let (best_i, best) = ranked[0];
    let (next_i, next) = ranked[1];
    let r = match m.better {
        Better::Lower if best > 0.0 => next / best,
        _ if next > 0.0 => best / next,
        _ => f64::NAN,
    };
    let (cmp, sup, worst_word, verb) = words(m);
    let spread_tie = tied_by_spread(figs[best_i], figs[next_i]);
    // Close medians tie unless repeated rounds set them apart (then the intervals decide,
    // as in the table's best column).
    let close = (r.is_finite() && r < 1.005 || best == next) && spread_tie != Some(false);
    if spread_tie == Some(true) && !close {
        return Some(spread_tie_clause(s, m, figs, &ranked));
    }
    let sure = sure_text(figs[best_i], figs[next_i], close);
    let mut pair = None;
    let mut text = if close {
        close_text(s, m, &ranked)
    } else {
        let times = if r.is_finite() {
            format!("{} ", ratio(r))
        } else {
            String::new()
        };
        if ranked.len() == 2 {
            let rest = format!("{verb} {times}{cmp} {}", figures(m, best, next));
            pair = Some((best_i, next_i, rest));
            format!(
                "{} {verb} {times}{cmp} than {} {}",
                name(best_i),
                name(next_i),
                figures(m, best, next)
            )
        } else {
            let (worst_i, worst) = ranked[ranked.len() - 1];
            format!(
                "{} {verb} {sup}, {times}{cmp} than {} {}; {} {worst_word} ({})",
                name(best_i),
                name(next_i),
                figures(m, best, next),
                name(worst_i),
                v(worst)
            )
        }
    };
    if !sure.is_empty() {
        text.push_str(&sure);
        if let Some(p) = pair.as_mut() {
            p.2.push_str(&sure);
        }
    } else if m.unit == Unit::Seconds && ranked.iter().all(|(_, x)| *x < 0.010) {
        let caveat = " (each under 10 ms: one short statement, within run-to-run noise)";
        text.push_str(caveat);
        if let Some(p) = pair.as_mut() {
            p.2.push_str(caveat);
        }
    }
    Some(Clause { text, pair })
}

/// The clause when repeated rounds tie the best with others: who tied, each one's figure,
/// and the worst when it is not among them.
fn spread_tie_clause(
    s: &Summary,
    m: &Metric,
    figs: &[Option<&Metric>],
    ranked: &[(usize, f64)],
) -> Clause {
    let name = |i: usize| s.contenders.get(i).map(|c| c.name.as_str()).unwrap_or("?");
    let (_, sup, worst_word, _) = words(m);
    let label = &m.label;
    let best_i = ranked[0].0;
    let tied: Vec<usize> = ranked
        .iter()
        .map(|(i, _)| *i)
        .filter(|i| tied_by_spread(figs[best_i], figs[*i]) == Some(true))
        .collect();
    let each: Vec<String> = tied
        .iter()
        .filter_map(|i| figs[*i].map(|f| format!("{} {}", name(*i), format::figure(f))))
        .collect();
    let names: Vec<&str> = tied.iter().map(|i| name(*i)).collect();
    let who = if tied.len() == ranked.len() && tied.len() > 2 {
        format!("all {}", tied.len())
    } else {
        names.join(" and ")
    };
    let on = if tied.len() == ranked.len() {
        format!("on {label}")
    } else {
        format!("for {sup}")
    };
    let mut text = format!(
        "{who} tied {on}, their intervals overlapping ({})",
        each.join("; ")
    );
    let (worst_i, _) = ranked[ranked.len() - 1];
    if !tied.contains(&worst_i)
        && let Some(f) = figs[worst_i]
    {
        text.push_str(&format!(
            "; {} {worst_word} ({})",
            name(worst_i),
            format::figure(f)
        ));
    }
    Clause { text, pair: None }
}

/// ` — apart beyond their 93.8% intervals over 5 rounds` when the best and the next best
/// were both repeated and are not close; else empty.
fn sure_text(best: Option<&Metric>, next: Option<&Metric>, close: bool) -> String {
    match (
        best.and_then(Metric::repeated),
        next.and_then(Metric::repeated),
    ) {
        (Some(a), Some(b)) if !close => format!(
            " — apart beyond their {} intervals over {} rounds",
            if a.confidence <= b.confidence {
                a.confidence_text()
            } else {
                b.confidence_text()
            },
            a.n.min(b.n)
        ),
        _ => String::new(),
    }
}

/// The clause when the best values are within 0.5 % of each other: who tied, and the worst
/// when not all did.
fn close_text(s: &Summary, m: &Metric, ranked: &[(usize, f64)]) -> String {
    let name = |i: usize| s.contenders.get(i).map(|c| c.name.as_str()).unwrap_or("?");
    let v = |x: f64| format::value(x, m.unit);
    let (_, sup, worst_word, _) = words(m);
    let label = &m.label;
    let best = ranked[0].1;
    let tied: Vec<&str> = ranked
        .iter()
        .filter(|(_, x)| (x - best).abs() <= best.abs() * 0.005)
        .map(|(i, _)| name(*i))
        .collect();
    if tied.len() == ranked.len() {
        let all = if tied.len() == 2 {
            format!("{} and {}", tied[0], tied[1])
        } else {
            format!("all {}", tied.len())
        };
        if m.unit == Unit::Bytes {
            format!("{all} are the same size ({label}: {})", v(best))
        } else {
            format!("{all} tied on {label} ({})", v(best))
        }
    } else {
        let (worst_i, worst) = ranked[ranked.len() - 1];
        format!(
            "{} tied for {sup} ({label}: {}); {} {worst_word} ({})",
            tied.join(" and "),
            v(best),
            name(worst_i),
            v(worst)
        )
    }
}

/// The sentence for one step.
pub fn step_verdict(s: &Summary, step: &str) -> Verdict {
    let per = per_contender(s, step);
    let title = title_of(&per, step);
    let keys = metric_keys(&per);
    let mut clauses: Vec<String> = Vec::new();
    let mut last_pair: Option<(usize, usize)> = None;
    for m in headline_metrics(&keys) {
        let Some(c) = clause(s, m, &metrics(&per, &m.key)) else {
            continue;
        };
        // "x was 2× faster than y; x had 3× lower p99 than y" → "…; and had 3× lower p99".
        match (&c.pair, last_pair) {
            (Some((w, l, rest)), Some((pw, pl))) if *w == pw && *l == pl => {
                if let Some(prev) = clauses.last_mut() {
                    prev.push_str(&format!(" and {rest}"));
                }
            }
            _ => clauses.push(c.text),
        }
        last_pair = c.pair.map(|(w, l, _)| (w, l));
    }
    let ran: Vec<usize> = per
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_some_and(|x| x.status == Status::Ok))
        .map(|(i, _)| i)
        .collect();
    if clauses.is_empty() && ran.len() == 1 {
        // One contender: say what it measured.
        let i = ran[0];
        if let Some(Some(st)) = per.get(i) {
            let figs: Vec<String> = headline_metrics(&keys)
                .iter()
                .filter_map(|m| {
                    st.metrics
                        .iter()
                        .find(|x| x.key == m.key)
                        .map(|x| format!("{} {}", x.label, format::value(x.value, x.unit)))
                })
                .collect();
            if !figs.is_empty() {
                clauses.push(format!("{}: {}", s.contenders[i].name, figs.join(", ")));
            }
        }
    }
    for (i, p) in per.iter().enumerate() {
        let name = &s.contenders[i].name;
        match p {
            Some(x) if x.status != Status::Ok => {
                let why = x
                    .note
                    .as_deref()
                    .map(|n| format!(" ({})", shorten(n, 140)))
                    .unwrap_or_default();
                clauses.push(format!("{name} {}{why}", x.status.as_str()));
            }
            None => clauses.push(format!("{name} did not run it")),
            _ => {}
        }
    }
    let sentence = if clauses.is_empty() {
        "nothing to compare".to_string()
    } else {
        // Contender names are identifiers: the sentence keeps their case.
        clauses.join("; ") + "."
    };
    Verdict {
        step: step.to_string(),
        title,
        sentence,
    }
}

/// Every step's verdict, in run order.
pub fn verdicts(s: &Summary) -> Vec<Verdict> {
    step_names(s).iter().map(|n| step_verdict(s, n)).collect()
}

/// At most `max` characters, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ContenderSummary;

    fn step(name: &str, metrics: Vec<Metric>) -> StepSummary {
        let mut s = StepSummary::without_figures(name, "k", Status::Ok, "");
        s.note = None;
        s.metrics = metrics;
        s
    }

    fn run(steps: Vec<Vec<StepSummary>>) -> Summary {
        Summary {
            schema_version: 1,
            study: "s".into(),
            scale: None,
            started_at: String::new(),
            finished_at: None,
            status: Status::Ok,
            contenders: steps
                .into_iter()
                .enumerate()
                .map(|(i, st)| ContenderSummary {
                    name: ["wal", "rollback", "third"][i].into(),
                    engine: "sqlite".into(),
                    steps: st,
                })
                .collect(),
        }
    }

    fn secs(v: f64) -> Metric {
        Metric::new("elapsed_s", "seconds", v, Unit::Seconds, Better::Lower)
    }

    #[test]
    fn two_contenders_in_words() {
        let s = run(vec![
            vec![step(
                "load",
                vec![
                    Metric::new("rows", "rows", 5.0, Unit::Count, Better::None),
                    secs(0.2),
                ],
            )],
            vec![step("load", vec![secs(0.1)])],
        ]);
        let v = step_verdict(&s, "load");
        assert_eq!(
            v.sentence,
            "rollback was 2.00× faster than wal (100 ms vs 200 ms)."
        );
    }

    #[test]
    fn sizes_ties_latency_and_failures() {
        let bytes = |v| Metric::new("bytes", "files", v, Unit::Bytes, Better::Lower);
        let p50 = |v| Metric::new("p50_us", "p50", v, Unit::Micros, Better::Lower);
        let p99 = |v| Metric::new("p99_us", "p99", v, Unit::Micros, Better::Lower);
        let mut failed = StepSummary::without_figures("q", "k", Status::Failed, "boom");
        failed.metrics.clear();
        let s = run(vec![
            vec![
                step("fp", vec![bytes(1024.0)]),
                step("q", vec![p50(1.0), p99(10.0)]),
            ],
            vec![
                step("fp", vec![bytes(1024.0)]),
                step("q", vec![p50(2.0), p99(30.0)]),
            ],
            vec![step("fp", vec![bytes(4096.0)]), failed],
        ]);
        assert_eq!(
            step_verdict(&s, "fp").sentence,
            "wal and rollback tied for smallest (files: 1.00 KiB); third largest (4.00 KiB)."
        );
        assert_eq!(
            step_verdict(&s, "q").sentence,
            "wal had 3.00× lower p99 than rollback (10.0 µs vs 30.0 µs); third failed (boom)."
        );
    }

    #[test]
    fn one_winner_of_two_figures_is_said_once() {
        let rate = |v| Metric::new("ops_per_s", "queries/s", v, Unit::PerSecond, Better::Higher);
        let p99 = |v| Metric::new("p99_us", "p99", v, Unit::Micros, Better::Lower);
        let s = run(vec![
            vec![step("q", vec![rate(200.0), p99(5.0)])],
            vec![step("q", vec![rate(100.0), p99(10.0)])],
        ]);
        assert_eq!(
            step_verdict(&s, "q").sentence,
            "wal was 2.00× faster than rollback (200 vs 100 queries/s) and had 2.00× lower p99 (5.00 µs vs 10.0 µs)."
        );
    }

    #[test]
    fn three_contenders_and_short_timings() {
        let s = run(vec![
            vec![step("d", vec![secs(0.002)])],
            vec![step("d", vec![secs(0.001)])],
            vec![step("d", vec![secs(0.004)])],
        ]);
        let v = step_verdict(&s, "d").sentence;
        assert!(
            v.starts_with("rollback was fastest, 2.00× faster than wal (1.00 ms vs 2.00 ms); third slowest (4.00 ms)"),
            "{v}"
        );
        assert!(v.contains("under 10 ms"), "{v}");
    }
}
