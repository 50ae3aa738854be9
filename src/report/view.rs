//! The report's view model, built once from a run: its steps in run order, each with its
//! verdict, its rows of figures (a cell per contender: the value, its ratio to the baseline,
//! its interval when repeated), which contender did best and whether it is a tie, the
//! published references, and the step's series. Text, Markdown, JSON and HTML renderers only
//! lay it out; nothing here decides how it looks beyond the words of a cell.

use super::format;
use super::reference;
use super::series::{RunData, StepSeries};
use super::verdict::{self, Verdict};
use super::{finding_checks, findings};
use crate::results::ReferenceSpec;
use crate::results::{Better, Manifest, Metric, Status, StepSummary, Summary};

/// A whole run, ready to lay out.
pub struct ReportView<'a> {
    /// What the run measured.
    pub summary: &'a Summary,
    /// How the run was made (host, contenders, study as run).
    pub manifest: &'a Manifest,
    /// The index of the baseline contender, when it has one that ran.
    pub baseline: Option<usize>,
    /// Per contender: the index of the contender its figures are a ratio to (its own
    /// `baseline`, else the run's), never itself.
    pub bases: Vec<Option<usize>>,
    /// Each contender's column heading (its name, marked when it is the baseline, with the
    /// contender it is judged against when it has its own).
    pub columns: Vec<String>,
    /// Which contender is judged against which, in a sentence, when contenders have their
    /// own baseline.
    pub ratios: Option<String>,
    /// Published figures shown beside the measured ones.
    pub refs: Vec<ReferenceSpec>,
    /// How a repeated run was made and how to read its figures; `None` for one round.
    pub rounds: Option<String>,
    /// Every step, in run order.
    pub steps: Vec<StepView<'a>>,
    /// Findings across steps and contenders, one sentence each.
    pub findings: Vec<String>,
    /// The originals' findings checked against this run, each with its verdict.
    pub checks: Vec<finding_checks::Check>,
}

/// One step of the run.
pub struct StepView<'a> {
    /// The step's name (its key in the run directory).
    pub name: String,
    /// The step's kind, as its first contender recorded it (shown, never matched).
    pub kind: String,
    /// The step's title and its sentence.
    pub verdict: Verdict,
    /// Per contender (in the run's order): its summary of the step, if it has one.
    pub per: Vec<Option<&'a StepSummary>>,
    /// Per contender: the step's series (`None` when it has none or none were read).
    pub series: Vec<Option<&'a StepSeries>>,
    /// Every metric of the step, first-seen order.
    pub keys: Vec<&'a Metric>,
    /// One row per metric, in the order of `keys`.
    pub rows: Vec<FigureRow<'a>>,
}

/// One figure of a step across contenders.
pub struct FigureRow<'a> {
    /// The figure as first seen (key, label, unit, better direction).
    pub metric: &'a Metric,
    /// Per contender: its figure, when it ran the step and has a finite one.
    pub figs: Vec<Option<&'a Metric>>,
    /// Per contender: the cell.
    pub cells: Vec<Cell>,
    /// Per reference: its published value, formatted (empty when it has none).
    pub refs: Vec<String>,
    /// Which contender did best on the figure.
    pub best: Best,
}

/// One contender's cell of a row.
pub struct Cell {
    /// The value (with its interval when repeated) and its ratio to the baseline's.
    pub figure: Option<String>,
    /// Why there is no figure, when the contender's step did not run through.
    pub status: Option<Status>,
}

/// Which contender did best on a figure.
pub struct Best {
    /// `name ×ratio` of the best value against the next best, `tie`, or empty.
    pub text: String,
    /// The contender the text names with a ratio (marked in Markdown).
    pub winner: Option<usize>,
    /// The contender with a clear best value: apart from every other (marked in HTML).
    pub clear: Option<usize>,
}

impl<'a> ReportView<'a> {
    /// The view of a run from its summary and manifest; `run` adds its series.
    pub fn build(summary: &'a Summary, manifest: &'a Manifest, run: Option<&'a RunData>) -> Self {
        let baseline = baseline_of(summary, manifest);
        let bases = bases_of(summary, manifest, baseline);
        let refs = reference::of(manifest);
        let columns = summary
            .contenders
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let own = manifest
                    .baselines
                    .get(&c.name)
                    .filter(|b| bases[i].is_some_and(|j| &summary.contenders[j].name == *b));
                column_name(
                    &c.name,
                    chosen_server(manifest, &c.name),
                    baseline == Some(i),
                    own.map(String::as_str),
                )
            })
            .collect();
        let steps = verdict::step_names(summary)
            .iter()
            .map(|st| step_view(summary, run, &bases, &refs, st))
            .collect();
        ReportView {
            summary,
            manifest,
            baseline,
            ratios: ratios_line(summary, &bases, baseline),
            bases,
            columns,
            rounds: rounds_line(manifest),
            findings: findings::findings(summary, manifest),
            checks: finding_checks::checks(summary, manifest),
            refs,
            steps,
        }
    }
}

fn step_view<'a>(
    s: &'a Summary,
    run: Option<&'a RunData>,
    bases: &[Option<usize>],
    refs: &[ReferenceSpec],
    step: &str,
) -> StepView<'a> {
    let per = verdict::per_contender(s, step);
    let keys = verdict::metric_keys(&per);
    let series = s
        .contenders
        .iter()
        .map(|c| run.and_then(|r| r.step(&c.name, step)))
        .collect();
    let rows = keys
        .iter()
        .map(|k| {
            let figs = verdict::metrics(&per, &k.key);
            let cells = per
                .iter()
                .zip(&figs)
                .zip(bases)
                .map(|((p, f), base)| Cell {
                    figure: f.map(|f| cell(f, base.and_then(|i| figs[i]))),
                    status: p
                        .filter(|x| f.is_none() && x.status != Status::Ok)
                        .map(|x| x.status),
                })
                .collect();
            let refs = refs
                .iter()
                .map(|r| {
                    reference::value(r, step, &k.key)
                        .map(|v| format::value(v, k.unit))
                        .unwrap_or_default()
                })
                .collect();
            FigureRow {
                metric: k,
                best: best(s, &figs, k.better),
                figs,
                cells,
                refs,
            }
        })
        .collect();
    StepView {
        name: step.to_string(),
        kind: per
            .iter()
            .flatten()
            .next()
            .map(|p| p.kind.clone())
            .unwrap_or_default(),
        verdict: verdict::step_verdict(s, step),
        per,
        series,
        keys,
        rows,
    }
}

/// The index of the run's baseline contender, when it has one that ran.
fn baseline_of(s: &Summary, m: &Manifest) -> Option<usize> {
    let b = m.baseline.as_ref()?;
    s.contenders.iter().position(|c| &c.name == b)
}

/// Per contender: the contender its figures are a ratio to — its own `baseline` when that
/// one ran, else the run's — and none for the contender itself.
fn bases_of(s: &Summary, m: &Manifest, run: Option<usize>) -> Vec<Option<usize>> {
    let index = |n: &String| s.contenders.iter().position(|c| &c.name == n);
    s.contenders
        .iter()
        .enumerate()
        .map(|(i, c)| {
            m.baselines
                .get(&c.name)
                .and_then(index)
                .or(run)
                .filter(|b| *b != i)
        })
        .collect()
}

/// `ratios: B against A, D against C; ×N is …` when contenders have their own baseline;
/// `None` when every ratio is to the run's baseline (its column says so) or there is none.
fn ratios_line(s: &Summary, bases: &[Option<usize>], run: Option<usize>) -> Option<String> {
    let pairs: Vec<String> = bases
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let b = b.filter(|b| Some(*b) != run)?;
            Some(format!(
                "{} against {}",
                s.contenders[i].name, s.contenders[b].name
            ))
        })
        .collect();
    (!pairs.is_empty()).then(|| {
        format!(
            "ratios: {}; ×N beside a figure is that figure over the same figure of the contender it is judged against",
            pairs.join(", ")
        )
    })
}

/// The engine and version of a contender that chose its server (`version` or `basedir`:
/// its `server_binary` read back is not the system's), for its heading.
fn chosen_server(m: &Manifest, name: &str) -> Option<String> {
    let c = m.contenders.iter().find(|c| c.name == name)?;
    let origin = c.effective.get("server_binary")?;
    (!origin.starts_with("system")).then(|| format!("{} {}", c.engine, c.version))
}

/// A contender's column heading: its name, with the server it chose (`innodb (mariadb
/// 11.4.5-MariaDB)`), marked when it is the baseline, and `vs OTHER` when it is judged
/// against a contender of its own.
fn column_name(name: &str, server: Option<String>, baseline: bool, own: Option<&str>) -> String {
    let mut name = match server {
        Some(s) => format!("{name} ({s})"),
        None => name.to_string(),
    };
    if let Some(o) = own {
        name = format!("{name} vs {o}");
    }
    if baseline {
        format!("{name} (baseline)")
    } else {
        name
    }
}

/// A figure's cell: its value (with its interval when repeated) and, beside a baseline's
/// figure, the ratio to it (`×0.52`: 0.52 times the baseline's). Figures without a better
/// direction (amounts of work, dbduel's own use) get no ratio.
fn cell(f: &Metric, base: Option<&Metric>) -> String {
    let v = format::figure(f);
    match base {
        Some(b)
            if !std::ptr::eq(f, b)
                && f.better != Better::None
                && b.value != 0.0
                && b.value.is_finite() =>
        {
            let r = f.value / b.value;
            let r = if r < 10.0 {
                format!("{r:.2}")
            } else if r < 100.0 {
                format!("{r:.1}")
            } else {
                format!("{r:.0}")
            };
            format!("{v} ×{r}")
        }
        _ => v,
    }
}

/// How a repeated run was made and how to read its figures; `None` for a single round
/// whose rounds nothing decided.
fn rounds_line(m: &Manifest) -> Option<String> {
    let n = m.rounds.len();
    let decided = m.auto_rounds.as_ref().map(decided_text);
    if n < 2 {
        return decided.map(|d| format!("rounds: {}; {d}", n.max(1)));
    }
    let orders: Vec<String> = m.rounds.iter().map(|o| o.join(" ")).collect();
    let conf = crate::results::spread::confidence_for(n) * 100.0;
    let mut line = format!(
        "rounds: {n}, contenders interleaved ({}); each figure is the median of its rounds, [lo–hi] the interval holding the true median with {conf:.1}% confidence (order statistics, any distribution); \"tie\" where intervals overlap; timelines are round 1's",
        orders.join(" | ")
    );
    if let Some(d) = decided {
        line.push_str("; ");
        line.push_str(&d);
    }
    Some(line)
}

/// What decided an auto run's rounds, and the rounds each judged figure needed (the most
/// any contender needed; `undecided` where one never got there).
fn decided_text(a: &crate::results::AutoRoundsFacts) -> String {
    let pct = format!("{}%", a.threshold * 100.0);
    let why = match a.stopped_by.as_str() {
        "precision" => format!(
            "--repeat auto stopped after {} of at most {}: every judged figure's interval within ±{pct} of its median",
            a.rounds_run, a.max
        ),
        "budget" => format!(
            "the budget of {} stopped it after {} of at most {} rounds",
            format::seconds(a.budget_s.unwrap_or(0.0)),
            a.rounds_run,
            a.max
        ),
        "interrupted" => format!("interrupted after {} round(s)", a.rounds_run),
        _ if a.auto => format!(
            "--repeat auto ran its most, {} rounds: not every judged figure got within ±{pct} of its median",
            a.max
        ),
        _ => format!("{} round(s), the plan's", a.rounds_run),
    };
    if !a.auto {
        return why;
    }
    let mut order: Vec<(String, String)> = Vec::new();
    for f in &a.figures {
        let k = (f.step.clone(), f.label.clone());
        if !order.contains(&k) {
            order.push(k);
        }
    }
    let needs: Vec<String> = order
        .iter()
        .map(|(step, label)| {
            let of: Vec<&crate::results::FigureRounds> = a
                .figures
                .iter()
                .filter(|f| &f.step == step && &f.label == label)
                .collect();
            let undecided: Vec<&str> = of
                .iter()
                .filter(|f| f.needed.is_none())
                .map(|f| f.contender.as_str())
                .collect();
            let most = of.iter().filter_map(|f| f.needed).max();
            match (undecided.is_empty(), most) {
                (true, Some(r)) => format!("{step} {label} {r}"),
                (false, _) => format!("{step} {label} undecided ({})", undecided.join(", ")),
                (true, None) => format!("{step} {label} -"),
            }
        })
        .collect();
    format!("{why}; rounds each figure needed: {}", needs.join(", "))
}

/// Which contender did best on one figure, from one ranking of the contenders' values.
///
/// The text compares the best value with the next best: `name ×ratio`, `tie` when they
/// cannot be told apart, or empty when there is nothing to rank. Figures measured over
/// repeated rounds are a tie when their intervals for the median overlap; figures measured
/// once when within 0.5 %. The clear best is the best value apart from every other (by
/// intervals when repeated, else by more than 0.5 %).
fn best(s: &Summary, figs: &[Option<&Metric>], better: Better) -> Best {
    let none = Best {
        text: String::new(),
        winner: None,
        clear: None,
    };
    let mut ranked: Vec<(usize, f64)> = figs
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.map(|m| m.value).filter(|v| v.is_finite()).map(|v| (i, v)))
        .collect();
    if ranked.len() < 2 || better == Better::None {
        return none;
    }
    match better {
        Better::Lower => ranked.sort_by(|a, b| a.1.total_cmp(&b.1)),
        _ => ranked.sort_by(|a, b| b.1.total_cmp(&a.1)),
    }
    let clear = clear_best(figs, &ranked, better);
    let (bi, bv) = ranked[0];
    let (ni, nv) = ranked[1];
    let tied = verdict::tied_by_spread(figs[bi], figs[ni]);
    let name = &s.contenders[bi].name;
    let ratio = match better {
        Better::Lower if bv > 0.0 => nv / bv,
        Better::Higher if nv > 0.0 => bv / nv,
        _ => f64::NAN,
    };
    let (text, winner) = if tied == Some(true) {
        ("tie".into(), None)
    } else if !ratio.is_finite() {
        if bv == nv {
            ("tie".into(), None)
        } else {
            (name.clone(), None)
        }
    } else if ratio < 1.005 && tied.is_none() {
        ("tie".into(), None)
    } else {
        (format!("{name} {ratio:.2}×"), Some(bi))
    };
    Best {
        text,
        winner,
        clear,
    }
}

/// The best of `ranked` (best first) when it is apart from every other value: by intervals
/// when both are repeated, else by more than 0.5 %. Of equal best values, the first
/// contender's is taken when lower is better, the last's when higher is.
fn clear_best(figs: &[Option<&Metric>], ranked: &[(usize, f64)], better: Better) -> Option<usize> {
    let equal = ranked.iter().copied().filter(|(_, v)| *v == ranked[0].1);
    let (pi, pv) = match better {
        Better::Lower => equal.min_by_key(|(i, _)| *i),
        _ => equal.max_by_key(|(i, _)| *i),
    }?;
    let ties = ranked
        .iter()
        .filter(|(i, x)| match verdict::tied_by_spread(figs[pi], figs[*i]) {
            Some(tied) => tied,
            None => (x - pv).abs() <= pv.abs() * 0.005,
        })
        .count();
    (ties == 1).then_some(pi)
}
