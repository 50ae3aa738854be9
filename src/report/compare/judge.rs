//! Judging two runs figure by figure: the rows of a [`Comparison`], each with its change,
//! its noise band and its verdict, and what differs in the runs' context.

use super::super::format;
use super::super::series::{self, Interval, RunData};
use super::super::study;
use super::super::verdict;
use crate::results::spread::{MIN_SAMPLES, Spread};
use crate::results::{Better, Metric, Status, StepSummary, Unit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Standard errors a change must exceed to count (two: about 95 % confidence).
pub const SIGMAS: f64 = 2.0;

/// Per-second intervals needed before noise is estimated from them.
pub const MIN_SECONDS: usize = 3;

/// What a row concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Worse beyond the threshold and the noise (or the step stopped working).
    Regressed,
    /// Better beyond the threshold and the noise (or the step started working).
    Improved,
    /// Under the threshold or within the noise.
    NoSignificantChange,
    /// No way to tell change from noise (measured once).
    NotJudged,
    /// A figure without a better direction that differs: the runs did different work.
    Differs,
    /// The contender or step is in only one of the runs.
    OnlyInOne,
    /// Not judged: the machine was busy with other work during the step in A or B.
    Disturbed,
}

impl Kind {
    /// The verdict in words.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Regressed => "REGRESSED",
            Kind::Improved => "improved",
            Kind::NoSignificantChange => "no significant change",
            Kind::NotJudged => "not judged",
            Kind::Differs => "differs",
            Kind::OnlyInOne => "only in one run",
            Kind::Disturbed => "disturbed",
        }
    }
}

/// One figure of one step of one contender, in both runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub contender: String,
    pub step: String,
    pub title: String,
    /// The figure's label (`seconds`, `queries/s`, `p99`); `status` for a step-level row.
    pub figure: String,
    pub key: String,
    pub unit: Option<Unit>,
    pub better: Option<Better>,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (B − A) / A.
    pub change: Option<f64>,
    /// Half-width of the noise band of the change, relative (`SIGMAS` standard errors).
    pub noise: Option<f64>,
    pub verdict: Kind,
    /// Why, in words.
    pub why: String,
    /// Judged from repeated samples: how often an unchanged figure would show as changed by
    /// chance alone ([`crate::results::spread::chance_apart`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chance: Option<f64>,
}

/// Two runs side by side.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub a_started: String,
    pub b_started: String,
    pub study: String,
    /// Relative, e.g. 0.05.
    pub threshold: f64,
    /// What differs between the runs' context (`key: A → B`).
    pub differences: Vec<String>,
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Rows that count as regressions (what `--fail-on-regression` fails on).
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.verdict == Kind::Regressed)
    }

    /// Figures judged from repeated samples: how many, and the most of them that chance
    /// alone would show as changed at least 95 % of the time — so that one figure apart among
    /// 76 is read as what it likely is.
    pub fn by_chance(&self) -> Option<(usize, usize)> {
        let ps: Vec<f64> = self.rows.iter().filter_map(|r| r.chance).collect();
        if ps.is_empty() {
            return None;
        }
        let mean = ps.iter().sum::<f64>() / ps.len() as f64;
        Some((
            ps.len(),
            crate::results::spread::by_chance_at_most(ps.len(), mean),
        ))
    }

    /// Whether B reproduced A, as a sentence: `Ok` when figures were judged and none differs
    /// beyond what chance explains — no per-second-judged figure beyond the noise, no more
    /// sample-judged figures apart than chance alone would set apart, none differing in the
    /// work done or in one run only; otherwise `Err` with why.
    pub fn reproduction(&self) -> Result<String, String> {
        let beyond = |r: &&Row| matches!(r.verdict, Kind::Regressed | Kind::Improved);
        let judged = self.count(Kind::Regressed)
            + self.count(Kind::Improved)
            + self.count(Kind::NoSignificantChange);
        let by_noise = self
            .rows
            .iter()
            .filter(beyond)
            .filter(|r| r.chance.is_none())
            .count();
        let by_samples = self
            .rows
            .iter()
            .filter(beyond)
            .filter(|r| r.chance.is_some())
            .count();
        let allowed = self.by_chance().map_or(0, |(_, k)| k);
        let other = self.count(Kind::Differs) + self.count(Kind::OnlyInOne);
        if judged == 0 {
            Err("no figure could be judged (run the original with --repeat 5)".into())
        } else if by_noise > 0 || by_samples > allowed || other > 0 {
            Err(format!(
                "{} of the {judged} judged figures differ beyond the threshold and the noise (chance alone explains up to {allowed}); {other} differ in the work done or are in one run only",
                by_noise + by_samples
            ))
        } else if by_samples > 0 {
            Ok(format!(
                "{by_samples} of the {judged} judged figures differs, no more than chance alone explains (up to {allowed})"
            ))
        } else {
            Ok(format!(
                "none of the {judged} judged figures differs beyond the threshold and the noise"
            ))
        }
    }

    fn count(&self, k: Kind) -> usize {
        self.rows.iter().filter(|r| r.verdict == k).count()
    }

    /// One line: how many of each verdict.
    pub fn tally(&self) -> String {
        let mut parts = vec![
            plural(
                self.count(Kind::Regressed),
                "significant regression",
                "significant regressions",
            ),
            plural(
                self.count(Kind::Improved),
                "significant improvement",
                "significant improvements",
            ),
            format!(
                "{} with no significant change",
                self.count(Kind::NoSignificantChange)
            ),
            format!(
                "{} not judged (too few measurements)",
                self.count(Kind::NotJudged)
            ),
        ];
        let d = self.count(Kind::Differs);
        if d > 0 {
            parts.push(format!("{d} differing amounts of work"));
        }
        let o = self.count(Kind::OnlyInOne);
        if o > 0 {
            parts.push(format!("{o} in one run only"));
        }
        let b = self.count(Kind::Disturbed);
        if b > 0 {
            parts.push(format!("{b} not judged (the machine was busy)"));
        }
        parts.join(", ")
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `5%`, `5` (percent) or `2.5 %` → 0.05, 0.05, 0.025.
pub fn parse_threshold(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v / 100.0),
        _ => Err(format!(
            "--threshold {s}: expected a percentage of 0 or more, like 5% or 2.5"
        )),
    }
}

/// Compare run B against run A.
pub fn compare(a: &RunData, b: &RunData, threshold: f64) -> Comparison {
    let mut rows = Vec::new();
    let mut names: Vec<&str> = a
        .summary
        .contenders
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    for c in &b.summary.contenders {
        if !names.contains(&c.name.as_str()) {
            names.push(&c.name);
        }
    }
    for name in names {
        let ca = a.summary.contenders.iter().find(|c| c.name == name);
        let cb = b.summary.contenders.iter().find(|c| c.name == name);
        let mut steps: Vec<&str> = Vec::new();
        for c in [ca, cb].into_iter().flatten() {
            for s in &c.steps {
                if !steps.contains(&s.name.as_str()) {
                    steps.push(&s.name);
                }
            }
        }
        for step in steps {
            let sa = ca.and_then(|c| c.steps.iter().find(|s| s.name == step));
            let sb = cb.and_then(|c| c.steps.iter().find(|s| s.name == step));
            rows.extend(step_rows(name, step, (a, sa), (b, sb), threshold));
        }
    }
    Comparison {
        a: a.name.clone(),
        b: b.name.clone(),
        a_started: a.summary.started_at.clone(),
        b_started: b.summary.started_at.clone(),
        study: if a.summary.study == b.summary.study {
            a.summary.study.clone()
        } else {
            format!("{} vs {}", a.summary.study, b.summary.study)
        },
        threshold,
        differences: differences(a, b),
        rows,
    }
}

fn status_row(contender: &str, step: &str, title: &str, verdict: Kind, why: String) -> Row {
    Row {
        contender: contender.into(),
        step: step.into(),
        title: title.into(),
        figure: "status".into(),
        key: "status".into(),
        unit: None,
        better: None,
        a: None,
        b: None,
        change: None,
        noise: None,
        verdict,
        why,
        chance: None,
    }
}

/// The rows of one step of one contender: one per figure, or one status row when the step
/// is in one run only or did not run through in both.
fn step_rows(
    contender: &str,
    step: &str,
    (ra, sa): (&RunData, Option<&StepSummary>),
    (rb, sb): (&RunData, Option<&StepSummary>),
    threshold: f64,
) -> Vec<Row> {
    let title = verdict::title_of(&[sa, sb], step);
    let (sa, sb) = match status_rows(contender, step, &title, sa, sb) {
        Ok(both) => both,
        Err(rows) => return rows,
    };
    let ia = ra
        .step(contender, step)
        .map(|s| s.intervals.as_slice())
        .unwrap_or_default();
    let ib = rb
        .step(contender, step)
        .map(|s| s.intervals.as_slice())
        .unwrap_or_default();
    // A step during which the machine was busy with other work is shown, not judged.
    let disturbed: Vec<String> = [("A", sa), ("B", sb)]
        .iter()
        .flat_map(|(run, s)| {
            s.machine
                .iter()
                .flat_map(|m| m.disturbances())
                .map(move |w| format!("{run}: {w}"))
        })
        .collect();
    let keys = verdict::metric_keys(&[Some(sa), Some(sb)]);
    let mut rows = Vec::new();
    for k in keys {
        let ma = sa.metrics.iter().find(|m| m.key == k.key);
        let mb = sb.metrics.iter().find(|m| m.key == k.key);
        let row = Row {
            contender: contender.into(),
            step: step.into(),
            title: title.clone(),
            figure: k.label.clone(),
            key: k.key.clone(),
            unit: Some(k.unit),
            better: Some(k.better),
            a: ma.map(|m| m.value),
            b: mb.map(|m| m.value),
            change: None,
            noise: None,
            verdict: Kind::NoSignificantChange,
            why: String::new(),
            chance: None,
        };
        let figure = Figure {
            k,
            ma,
            mb,
            ia,
            ib,
            disturbed: &disturbed,
            threshold,
        };
        rows.extend(figure.judge(row));
    }
    rows
}

/// Both sides' summaries of a step when both ran through; else the status row (none when
/// neither run has the step).
fn status_rows<'s>(
    contender: &str,
    step: &str,
    title: &str,
    sa: Option<&'s StepSummary>,
    sb: Option<&'s StepSummary>,
) -> Result<(&'s StepSummary, &'s StepSummary), Vec<Row>> {
    let (sa, sb) = match (sa, sb) {
        (Some(x), Some(y)) => (x, y),
        (Some(_), None) => {
            let why = "only in A".into();
            return Err(vec![status_row(
                contender,
                step,
                title,
                Kind::OnlyInOne,
                why,
            )]);
        }
        (None, Some(_)) => {
            let why = "only in B".into();
            return Err(vec![status_row(
                contender,
                step,
                title,
                Kind::OnlyInOne,
                why,
            )]);
        }
        (None, None) => return Err(Vec::new()),
    };
    let (kind, why) = match (sa.status, sb.status) {
        (Status::Ok, Status::Ok) => return Ok((sa, sb)),
        (Status::Ok, other) => (
            Kind::Regressed,
            format!(
                "ran in A, {} in B{}",
                other.as_str(),
                sb.note
                    .as_deref()
                    .map(|n| format!(": {}", verdict::shorten(n, 160)))
                    .unwrap_or_default()
            ),
        ),
        (other, Status::Ok) => (Kind::Improved, format!("{} in A, ran in B", other.as_str())),
        (x, y) => (
            Kind::NoSignificantChange,
            format!("{} in A, {} in B", x.as_str(), y.as_str()),
        ),
    };
    Err(vec![status_row(contender, step, title, kind, why)])
}

/// One figure of a step in both runs, with what judging it needs.
struct Figure<'a> {
    k: &'a Metric,
    ma: Option<&'a Metric>,
    mb: Option<&'a Metric>,
    /// Each run's per-second intervals of the step.
    ia: &'a [Interval],
    ib: &'a [Interval],
    /// Why the machine was busy during the step, per run (empty: it was not).
    disturbed: &'a [String],
    threshold: f64,
}

impl Figure<'_> {
    /// The figure's row with its change and verdict; none for an unchanged figure without a
    /// better direction.
    fn judge(&self, mut row: Row) -> Option<Row> {
        let k = self.k;
        let (va, vb) = (row.a, row.b);
        let (Some(x), Some(y)) = (va.filter(|v| v.is_finite()), vb.filter(|v| v.is_finite()))
        else {
            row.verdict = Kind::OnlyInOne;
            row.why = format!("figure only in {}", if va.is_some() { "A" } else { "B" });
            return Some(row);
        };
        let change = if x != 0.0 {
            (y - x) / x.abs()
        } else if y == 0.0 {
            0.0
        } else {
            f64::INFINITY * y.signum()
        };
        row.change = Some(change);
        let (ra, rb) = (
            self.ma.and_then(|m| m.repeated()),
            self.mb.and_then(|m| m.repeated()),
        );
        if k.better == Better::None {
            // Repeated figures whose intervals overlap did not change.
            let same = match (ra, rb) {
                (Some(x), Some(y)) => x.overlaps(y),
                _ => false,
            };
            if change.abs() > 0.005 && !same {
                row.verdict = Kind::Differs;
                row.why = "a different amount of work".into();
                return Some(row);
            }
            return None;
        }
        // Repeated on both sides: the samples speak, for every kind of figure. Repeated on
        // one side only: a median against one measurement is no like-for-like judgment.
        if ra.is_some() != rb.is_some() {
            (row.verdict, row.why) = (
                Kind::NotJudged,
                "repeated in one run only: compare runs made alike".into(),
            );
            return Some(row);
        }
        let worse = match k.better {
            Better::Lower => change > 0.0,
            _ => change < 0.0,
        };
        if let (Some(spa), Some(spb)) = (ra, rb) {
            self.by_samples(&mut row, spa, spb, change, worse);
        } else {
            self.by_noise(&mut row, x, change, worse);
        }
        Some(row)
    }

    /// Judge a figure repeated on both sides from its samples.
    fn by_samples(&self, row: &mut Row, spa: &Spread, spb: &Spread, change: f64, worse: bool) {
        (row.verdict, row.why, row.noise) = judge_samples(spa, spb, change, worse, self.threshold);
        // Latency histograms resolve 1 µs: a change of a microsecond is not a change.
        if self.k.unit == Unit::Micros
            && (spb.median - spa.median).abs() <= 1.0
            && matches!(row.verdict, Kind::Regressed | Kind::Improved)
        {
            (row.verdict, row.why) = (Kind::NoSignificantChange, "within 1 µs".into());
        }
        if !self.disturbed.is_empty() && row.verdict != Kind::NotJudged {
            (row.verdict, row.why) = (Kind::Disturbed, self.disturbed.join("; "));
        }
        if matches!(
            row.verdict,
            Kind::Regressed | Kind::Improved | Kind::NoSignificantChange
        ) {
            row.chance = Some(crate::results::spread::chance_apart(spa.n, spb.n));
        }
    }

    /// Judge a figure measured once a side against the noise of its per-second series.
    fn by_noise(&self, row: &mut Row, x: f64, change: f64, worse: bool) {
        let k = self.k;
        let mut noise = noise_of(k, self.ia, self.ib);
        if k.unit == Unit::Micros {
            // Latency histograms resolve 1 µs: a change of a microsecond is not a change.
            noise.band = noise.band.map(|b| b.max(1.0 / x.abs().max(1.0)));
        }
        row.noise = noise.band;
        let beyond = if worse {
            Kind::Regressed
        } else {
            Kind::Improved
        };
        (row.verdict, row.why) = if !change.is_finite() {
            (Kind::NotJudged, "from zero".into())
        } else if change.abs() < self.threshold {
            // Under the threshold nothing counts, noisy or not.
            (Kind::NoSignificantChange, "under threshold".into())
        } else if k.unit == Unit::Bytes {
            // Sizes of the same data do not jitter: the threshold alone decides.
            (beyond, String::new())
        } else if let Some(band) = noise.band {
            if change.abs() <= band {
                (Kind::NoSignificantChange, "within noise".into())
            } else {
                (beyond, String::new())
            }
        } else {
            (Kind::NotJudged, noise.why)
        };
        if !self.disturbed.is_empty()
            && matches!(
                row.verdict,
                Kind::Regressed | Kind::Improved | Kind::NoSignificantChange
            )
        {
            (row.verdict, row.why) = (Kind::Disturbed, self.disturbed.join("; "));
        }
    }
}

/// A change judged from repeated samples on both sides: beyond the threshold, and with the
/// two intervals for the median apart. Returns the verdict, why, and the relative noise band
/// shown (the two intervals' relative half-widths added).
pub fn judge_samples(
    a: &Spread,
    b: &Spread,
    change: f64,
    worse: bool,
    threshold: f64,
) -> (Kind, String, Option<f64>) {
    let half = |s: &Spread| (s.hi - s.lo) / 2.0 / s.median.abs().max(f64::MIN_POSITIVE);
    let band = Some(half(a) + half(b));
    let rounds = if a.n == b.n {
        format!("{} rounds a side", a.n)
    } else {
        format!("{} and {} rounds", a.n, b.n)
    };
    let short = MIN_SAMPLES.saturating_sub(a.n.min(b.n));
    let beyond = if worse {
        Kind::Regressed
    } else {
        Kind::Improved
    };
    if short > 0 {
        let more = if short == 1 { "round" } else { "rounds" };
        return (
            Kind::NotJudged,
            format!("{rounds}: needs {short} more {more} a side ({MIN_SAMPLES} judge)"),
            band,
        );
    }
    if !change.is_finite() {
        (Kind::NotJudged, "from zero".into(), band)
    } else if change.abs() < threshold {
        (Kind::NoSignificantChange, "under threshold".into(), band)
    } else if a.overlaps(b) {
        (
            Kind::NoSignificantChange,
            format!("intervals overlap, {rounds}"),
            band,
        )
    } else {
        (
            beyond,
            format!(
                "intervals apart, {rounds}, {} each",
                if a.confidence <= b.confidence {
                    a.confidence_text()
                } else {
                    b.confidence_text()
                }
            ),
            band,
        )
    }
}

struct Noise {
    band: Option<f64>,
    why: String,
}

/// The per-second values behind a figure, grouped by sweep level: throughput for rates and
/// durations, the matching quantile for latency; nothing for other units.
fn per_second(m: &Metric, ivs: &[Interval]) -> Vec<Vec<f64>> {
    let rate = match m.unit {
        Unit::PerSecond | Unit::Seconds => true,
        Unit::Micros => false,
        _ => return Vec::new(),
    };
    let mut groups: BTreeMap<Option<u64>, Vec<f64>> = BTreeMap::new();
    for i in ivs.iter().filter(|i| !i.warmup && i.duration_s() >= 0.5) {
        let v = if rate {
            Some(i.ops_per_s)
        } else {
            i.latency_us.map(|l| l.by_key(&m.key))
        };
        if let Some(v) = v.filter(|v| v.is_finite()) {
            groups.entry(i.level).or_default().push(v);
        }
    }
    groups.into_values().collect()
}

/// The relative standard error of one run's figure: the worst of its levels.
fn run_se(m: &Metric, ivs: &[Interval]) -> (Option<f64>, usize) {
    let groups = per_second(m, ivs);
    let seconds = groups.iter().map(Vec::len).max().unwrap_or(0);
    let se = groups
        .iter()
        .filter_map(|g| series::relative_standard_error(g))
        .fold(None, |acc: Option<f64>, x| {
            Some(acc.map_or(x, |a| a.max(x)))
        });
    (se, seconds)
}

/// One run's noise of a figure measured once: the relative standard error of the step's
/// per-second values behind it (the worst sweep level's); `None` without a usable series.
/// `dbduel history` keeps it per figure, so a trend judges changes as this comparison does.
pub fn figure_noise(m: &Metric, ivs: &[Interval]) -> Option<f64> {
    run_se(m, ivs).0
}

/// The relative noise band of a change between two runs whose figures have relative
/// standard errors `a` and `b`: `SIGMAS` standard errors of the difference (one run's noise
/// stands for both when the other has none).
pub fn change_band(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(SIGMAS * (x * x + y * y).sqrt()),
        (Some(x), None) | (None, Some(x)) => Some(SIGMAS * x * std::f64::consts::SQRT_2),
        (None, None) => None,
    }
}

fn noise_of(m: &Metric, a: &[Interval], b: &[Interval]) -> Noise {
    let (sa, na) = run_se(m, a);
    let (sb, nb) = run_se(m, b);
    let band = change_band(sa, sb);
    let n = na.max(nb);
    let why = if matches!(m.unit, Unit::PerSecond | Unit::Seconds | Unit::Micros) && n > 0 {
        format!("{n} s of data")
    } else {
        "measured once: --repeat 5 would judge it".into()
    };
    Noise { band, why }
}

/// `key: A → B` for each context value that differs: dbduel, host, the study as run (after
/// scale and overrides), and each contender's engine version and effective settings.
fn differences(a: &RunData, b: &RunData) -> Vec<String> {
    let mut out = Vec::new();
    let (ma, mb) = (&a.manifest, &b.manifest);
    let mut diff = |key: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{key}: {x} → {y}"));
        }
    };
    diff("dbduel", ma.dbduel.to_string(), mb.dbduel.to_string());
    diff("host", ma.host.hostname.clone(), mb.host.hostname.clone());
    diff(
        "host CPU",
        ma.host.cpu_model.clone(),
        mb.host.cpu_model.clone(),
    );
    diff(
        "host cores",
        ma.host.cores.to_string(),
        mb.host.cores.to_string(),
    );
    diff(
        "host memory",
        format::bytes(ma.host.mem_total_bytes),
        format::bytes(mb.host.mem_total_bytes),
    );
    diff("kernel", ma.host.kernel.clone(), mb.host.kernel.clone());
    diff(
        "data filesystem",
        ma.host.data_fs.clone().unwrap_or_default(),
        mb.host.data_fs.clone().unwrap_or_default(),
    );
    let (fa, fb) = (study::flatten(&ma.study), study::flatten(&mb.study));
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let none = || "(absent)".to_string();
        diff(
            &format!("study {k}"),
            fa.get(k).cloned().unwrap_or_else(none),
            fb.get(k).cloned().unwrap_or_else(none),
        );
    }
    for ca in &ma.contenders {
        let Some(cb) = mb.contenders.iter().find(|c| c.name == ca.name) else {
            continue;
        };
        diff(
            &format!("{} version", ca.name),
            format!("{} {}", ca.engine, ca.version),
            format!("{} {}", cb.engine, cb.version),
        );
        let mut keys: Vec<&String> = ca.effective.keys().chain(cb.effective.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let none = || "(absent)".to_string();
            diff(
                &format!("{} {k}", ca.name),
                ca.effective.get(k).cloned().unwrap_or_else(none),
                cb.effective.get(k).cloned().unwrap_or_else(none),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(parse_threshold("5%"), Ok(0.05));
        assert_eq!(parse_threshold(" 2.5 % "), Ok(0.025));
        assert_eq!(parse_threshold("10"), Ok(0.1));
        assert!(parse_threshold("-1").is_err());
        assert!(parse_threshold("five").is_err());
    }

    fn iv(t: u64, ops: f64) -> Interval {
        serde_json::from_value(serde_json::json!({
            "tick": t, "t_s": (t + 1) as f64, "ops_per_s": ops,
            "latency_us": {"p99": ops / 100.0}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn noise_covers_a_small_change_but_not_a_large_one() {
        let m = Metric::new(
            "ops_per_s",
            "queries/s",
            0.0,
            Unit::PerSecond,
            Better::Higher,
        );
        // ±10 % jitter around 1000/s over 10 seconds.
        let a: Vec<Interval> = (0..10)
            .map(|t| iv(t, if t % 2 == 0 { 1100.0 } else { 900.0 }))
            .collect();
        let b: Vec<Interval> = (0..10)
            .map(|t| iv(t, if t % 2 == 0 { 1120.0 } else { 920.0 }))
            .collect();
        let n = noise_of(&m, &a, &b);
        let band = n.band.unwrap_or_default();
        assert!(band > 0.05 && band < 0.15, "band {band}");
        // Too few seconds: not judged.
        let short = noise_of(&m, &a[..2], &b[..2]);
        assert!(short.band.is_none());
        assert_eq!(short.why, "2 s of data");
        // Sizes have no series.
        let bytes = Metric::new("bytes", "files", 0.0, Unit::Bytes, Better::Lower);
        assert!(noise_of(&bytes, &a, &b).band.is_none());
    }
}
