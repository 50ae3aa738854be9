//! The originals' findings (`[[finding]]` tables of the study as run) checked against the
//! run's own figures: each one's ratio here beside the original's, and a verdict computed
//! from the two — `held`, `reversed`, `within noise` (a tie reported: `held` or `apart`), or
//! `not comparable` with the reason. Nothing here is prose written ahead of the run.

use super::format;
use crate::results::{FindingSpec, Manifest, Metric, Original, Status, Summary};
use crate::run::auto_rounds::DEFAULT_THRESHOLD;
use serde::Serialize;

/// What a run says of one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The ratio lies on the original's side of 1, beyond noise (a tie: within it).
    Held,
    /// The ratio lies on the other side of 1, beyond noise.
    Reversed,
    /// The two figures are within noise of each other, where the original found a difference.
    WithinNoise,
    /// The original reported a tie, and the two figures are apart beyond noise.
    Apart,
    /// A figure is missing, or the run is at a scale outside the original's regime.
    NotComparable,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Held => "held",
            Verdict::Reversed => "reversed",
            Verdict::WithinNoise => "within noise",
            Verdict::Apart => "apart",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// One finding, checked.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub says: String,
    pub source: String,
    /// What the original found of the ratio.
    pub original: Original,
    /// This run's ratio of the same two figures, when it has both.
    pub here: Option<f64>,
    pub verdict: Verdict,
    /// Why: the noise rule that decided, or what made it not comparable; with the size
    /// against the original's where it held or reversed.
    pub why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differs: Option<String>,
    /// The finding's contenders that were not in this run (then it is `not comparable`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
}

impl Check {
    /// One line: the finding, the two ratios, the verdict and why.
    pub fn line(&self) -> String {
        let here = self
            .here
            .map_or("—".to_string(), |r| format!("×{}", format::ratio(r)));
        let differs = self
            .differs
            .as_ref()
            .map(|d| format!("; differs: {d}"))
            .unwrap_or_default();
        format!(
            "{} ({}) — original {}, here {here}: {} ({}){differs}",
            self.says,
            self.source,
            self.original.text(),
            self.verdict.words(),
            self.why
        )
    }
}

/// Every finding of the study as run, checked against its summary.
pub fn checks(s: &Summary, m: &Manifest) -> Vec<Check> {
    let specs: Vec<FindingSpec> =
        serde_json::from_value(m.study["finding"].clone()).unwrap_or_default();
    specs
        .iter()
        .map(|f| check(s, m.scale.as_deref(), f))
        .collect()
}

fn check(s: &Summary, scale: Option<&str>, f: &FindingSpec) -> Check {
    let (here, verdict, why) = match judge(s, scale, f) {
        Ok((r, v, why)) => (Some(r), v, why),
        Err(why) => (None, Verdict::NotComparable, why),
    };
    let absent = [Some(&f.of), f.over.as_ref()]
        .into_iter()
        .flatten()
        .filter(|n| !s.contenders.iter().any(|c| &c.name == *n))
        .cloned()
        .collect();
    Check {
        says: f.says.clone(),
        source: f.source.clone(),
        original: f.original,
        here,
        verdict,
        why,
        differs: f.differs.clone(),
        absent,
    }
}

/// The lines a report ends with: each check whose contenders ran, then one line for those
/// whose contenders did not, naming them and how to run them.
pub fn lines(checks: &[Check]) -> Vec<String> {
    let mut out: Vec<String> = checks
        .iter()
        .filter(|c| c.absent.is_empty())
        .map(Check::line)
        .collect();
    out.extend(absent_line(checks, !out.is_empty()));
    out
}

/// The one line for the checks whose contenders did not run (`more` when lines of checks
/// that ran come before it); `None` when every check's contenders ran.
pub fn absent_line(checks: &[Check], more: bool) -> Option<String> {
    let n = checks.iter().filter(|c| !c.absent.is_empty()).count();
    if n == 0 {
        return None;
    }
    let mut absent: Vec<&str> = checks
        .iter()
        .flat_map(|c| c.absent.iter().map(String::as_str))
        .collect();
    absent.sort_unstable();
    absent.dedup();
    let more = if more { " more" } else { "" };
    let add: Vec<String> = absent.iter().map(|a| format!("--contender {a}")).collect();
    Some(format!(
        "{n}{more} not comparable: the original's engines' contenders did not run ({}); run them with {}",
        absent.join(", "),
        add.join(" ")
    ))
}

/// The ratio here, the verdict and why; or why there is none.
fn judge(
    s: &Summary,
    scale: Option<&str>,
    f: &FindingSpec,
) -> Result<(f64, Verdict, String), String> {
    if !f.scales.is_empty() && !f.scales.iter().any(|x| Some(x.as_str()) == scale) {
        return Err(format!(
            "the original's regime is kept at --scale {}; this run is at {}",
            f.scales.join(" or "),
            scale.unwrap_or("the study as written")
        ));
    }
    let a = figure(s, &f.of, &f.figure)?;
    let over = f.over.as_deref().unwrap_or(&f.of);
    let b = figure(s, over, f.over_figure.as_deref().unwrap_or(&f.figure))?;
    let r = a.value / b.value;
    if !r.is_finite() || r <= 0.0 {
        return Err(format!(
            "{over}'s figure is {}: no ratio",
            format::value(b.value, b.unit)
        ));
    }
    let (within, noise) = within_noise(a, b, r);
    let tie = f.original.tie();
    let verdict = match (tie, within) {
        (true, true) => Verdict::Held,
        (true, false) => Verdict::Apart,
        (false, true) => Verdict::WithinNoise,
        (false, false) if (r > 1.0) == f.original.above() => Verdict::Held,
        (false, false) => Verdict::Reversed,
    };
    let why = match (verdict, f.original.bounds()) {
        (Verdict::Held, Some(b)) if !tie => format!("{}; {noise}", size(r, b)),
        (Verdict::Reversed, Some(b)) => format!("{}; {noise}", size(1.0 / r, b)),
        _ => noise,
    };
    Ok((r, verdict, why))
}

/// `contender`'s figure `"STEP.KEY"` in the run, or why it has none.
fn figure<'a>(s: &'a Summary, contender: &str, key: &str) -> Result<&'a Metric, String> {
    let (step, k) = key.split_once('.').unwrap_or((key, ""));
    let c = s
        .contenders
        .iter()
        .find(|c| c.name == contender)
        .ok_or_else(|| format!("{contender} did not run"))?;
    let st = c
        .steps
        .iter()
        .find(|x| x.name == step)
        .ok_or_else(|| format!("{contender} did not run {step}"))?;
    if st.status != Status::Ok {
        return Err(format!("{contender}'s {step} {}", st.status.as_str()));
    }
    st.metrics
        .iter()
        .find(|m| m.key == k && m.value.is_finite())
        .ok_or_else(|| format!("{contender}'s {step} has no figure {k}"))
}

/// Whether two figures are within noise of each other, and the rule that said so: their
/// intervals for the median where both have enough rounds, else the default threshold.
fn within_noise(a: &Metric, b: &Metric, r: f64) -> (bool, String) {
    if let (Some(x), Some(y)) = (&a.spread, &b.spread)
        && x.judgeable()
        && y.judgeable()
    {
        let rounds = x.n.min(y.n);
        return if x.overlaps(y) {
            (true, format!("intervals overlap over {rounds} rounds"))
        } else {
            (false, format!("intervals apart over {rounds} rounds"))
        };
    }
    let pct = DEFAULT_THRESHOLD * 100.0;
    if r.ln().abs() < DEFAULT_THRESHOLD.ln_1p() {
        (true, format!("one round, within ±{pct:.0} %"))
    } else {
        (
            false,
            format!("one round, beyond ±{pct:.0} %; --repeat 5 judges its noise"),
        )
    }
}

/// How this run's difference compares in size with the original's (`r` on the original's
/// side of 1, the original `lo..=hi`), as distances from 1 on a log scale (×4 is as far above
/// 1 as ×0.25 below): less than two thirds of its smallest, more than 1.5 times its largest,
/// or in between.
fn size(r: f64, (lo, hi): (f64, f64)) -> &'static str {
    let d = r.ln().abs();
    let (small, large) = {
        let (a, b) = (lo.ln().abs(), hi.ln().abs());
        (a.min(b), a.max(b))
    };
    if d < small / 1.5 {
        "smaller than the original's"
    } else if d > large * 1.5 {
        "larger than the original's"
    } else {
        "about the original's size"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::spread::Spread;
    use crate::results::{Better, ContenderSummary, StepSummary, Unit};

    fn metric(v: f64, samples: &[f64]) -> Metric {
        let mut m = Metric::new("elapsed_s", "seconds", v, Unit::Seconds, Better::Lower);
        if !samples.is_empty() {
            m.samples = samples.to_vec();
            m.spread = Spread::of(samples);
        }
        m
    }

    fn run(a: Metric, b: Metric) -> Summary {
        let c = |name: &str, m: Metric| {
            let mut st = StepSummary::without_figures("load", "load", Status::Ok, "");
            st.metrics.push(m);
            ContenderSummary {
                name: name.into(),
                engine: "mariadb".into(),
                steps: vec![st],
            }
        };
        Summary {
            schema_version: 1,
            study: "shootout".into(),
            scale: None,
            started_at: String::new(),
            finished_at: None,
            status: Status::Ok,
            contenders: vec![c("innodb", a), c("myrocks", b)],
        }
    }

    fn finding(original: f64) -> FindingSpec {
        finding_of(Original::Ratio(original))
    }

    fn finding_of(original: Original) -> FindingSpec {
        FindingSpec {
            says: "TokuDB loaded faster".into(),
            source: "seed 000".into(),
            figure: "load.elapsed_s".into(),
            of: "innodb".into(),
            over: Some("myrocks".into()),
            over_figure: None,
            original,
            differs: None,
            scales: Vec::new(),
        }
    }

    fn verdict(s: &Summary, f: &FindingSpec) -> Verdict {
        check(s, Some("quick"), f).verdict
    }

    #[test]
    fn a_finding_flips_when_its_figure_moves_past_it() {
        let f = finding(2.12);
        // one round each: the default threshold decides
        assert_eq!(
            verdict(&run(metric(78.0, &[]), metric(37.0, &[])), &f),
            Verdict::Held
        );
        assert_eq!(
            verdict(&run(metric(37.0, &[]), metric(78.0, &[])), &f),
            Verdict::Reversed
        );
        assert_eq!(
            verdict(&run(metric(50.0, &[]), metric(49.0, &[])), &f),
            Verdict::WithinNoise
        );
        // five rounds each: the intervals decide, even under the threshold
        let apart = run(
            metric(10.3, &[10.3, 10.31, 10.29, 10.3, 10.32]),
            metric(10.0, &[10.0, 10.01, 9.99, 10.0, 10.02]),
        );
        assert_eq!(verdict(&apart, &f), Verdict::Held);
        let c = check(&apart, Some("quick"), &f);
        assert!(c.why.contains("intervals apart over 5 rounds"), "{}", c.why);
        assert!(c.why.contains("smaller than the original's"), "{}", c.why);
        let overlap = run(
            metric(12.0, &[8.0, 12.0, 11.0, 13.0, 15.0]),
            metric(10.0, &[9.0, 10.0, 14.0, 7.0, 11.0]),
        );
        assert_eq!(verdict(&overlap, &f), Verdict::WithinNoise);
    }

    #[test]
    fn a_tie_holds_within_noise_and_breaks_apart() {
        let f = finding(1.0);
        assert_eq!(
            verdict(&run(metric(50.0, &[]), metric(49.0, &[])), &f),
            Verdict::Held
        );
        assert_eq!(
            verdict(&run(metric(60.0, &[]), metric(49.0, &[])), &f),
            Verdict::Apart
        );
        assert_eq!(
            verdict(&run(metric(40.0, &[]), metric(49.0, &[])), &f),
            Verdict::Apart
        );
    }

    #[test]
    fn missing_figures_and_other_regimes_are_not_comparable_with_the_reason() {
        let s = run(metric(78.0, &[]), metric(37.0, &[]));
        let mut f = finding(2.12);
        f.over = Some("aria".into());
        let c = check(&s, Some("quick"), &f);
        assert_eq!(c.verdict, Verdict::NotComparable);
        assert_eq!(c.why, "aria did not run");
        let mut f = finding(2.12);
        f.figure = "load.rows".into();
        assert_eq!(
            check(&s, Some("quick"), &f).why,
            "innodb's load has no figure rows"
        );
        let mut f = finding(2.12);
        f.scales = vec!["model".into()];
        let c = check(&s, Some("quick"), &f);
        assert_eq!(c.verdict, Verdict::NotComparable);
        assert!(
            c.why
                .contains("kept at --scale model; this run is at quick"),
            "{}",
            c.why
        );
        assert_eq!(check(&s, Some("model"), &f).verdict, Verdict::Held);
        let line = check(&s, Some("model"), &f).line();
        assert!(
            line.starts_with("TokuDB loaded faster (seed 000) — original ×2.12, here ×2.11: held"),
            "{line}"
        );
    }

    #[test]
    fn findings_whose_contenders_did_not_run_are_one_line() {
        let s = run(metric(78.0, &[]), metric(37.0, &[]));
        let mut other = finding(2.12);
        other.of = "aria".into();
        let mut third = finding(2.12);
        third.over = Some("tokudb".into());
        let checks: Vec<Check> = [finding(2.12), other.clone(), third, other]
            .iter()
            .map(|f| check(&s, None, f))
            .collect();
        let l = lines(&checks);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(l[0].contains(": held"), "{l:?}");
        assert_eq!(
            l[1],
            "3 more not comparable: the original's engines' contenders did not run (aria, tokudb); run them with --contender aria --contender tokudb"
        );
        assert!(lines(&checks[1..]).concat().starts_with("3 not comparable"));
    }

    #[test]
    fn ranges_and_directions_hold_by_their_side_and_ranges_judge_size() {
        let s = run(metric(13.0, &[]), metric(10.0, &[]));
        let range = finding_of(Original::Range([1.1, 1.6]));
        let c = check(&s, None, &range);
        assert_eq!(c.verdict, Verdict::Held);
        assert!(c.why.starts_with("about the original's size"), "{}", c.why);
        assert!(
            c.line().contains("original ×1.10–1.60, here ×1.30"),
            "{}",
            c.line()
        );
        let big = run(metric(40.0, &[]), metric(10.0, &[]));
        assert!(check(&big, None, &range).why.starts_with("larger"));
        let up = finding_of(Original::Side(crate::results::Side::Above));
        assert_eq!(check(&s, None, &up).verdict, Verdict::Held);
        assert_eq!(
            check(&s, None, &up).why,
            "one round, beyond ±5 %; --repeat 5 judges its noise"
        );
        let down = finding_of(Original::Side(crate::results::Side::Below));
        assert_eq!(check(&s, None, &down).verdict, Verdict::Reversed);
        assert_eq!(check(&big, None, &finding(0.5)).verdict, Verdict::Reversed);
        assert!(check(&big, None, &finding(0.5)).why.starts_with("larger"));
        let twice = run(metric(20.0, &[]), metric(10.0, &[]));
        assert!(
            check(&twice, None, &finding(0.5))
                .why
                .starts_with("about the original's size")
        );
        // ×4.62 where the original found ×2.5 is larger, not about its size
        let more = run(metric(46.2, &[]), metric(10.0, &[]));
        assert!(check(&more, None, &finding(2.5)).why.starts_with("larger"));
    }
}
