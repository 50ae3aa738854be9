//! A figure's trend across runs: each run's value with its own noise, and each change from
//! the run before judged as `dbduel compare` judges it — beyond the threshold and beyond the
//! noise band (two standard errors of the difference, from each run's per-second values), or
//! for figures repeated in both runs, with their intervals for the median apart.

use super::query::Point;
use crate::report::compare::judge::{Kind, change_band, judge_samples};
use crate::results::spread::Spread;

/// One run of a trend, judged against the run before it (of the same contender).
#[derive(Debug, Clone)]
pub struct Step {
    pub point: Point,
    /// This run's own band, relative: `SIGMAS` standard errors of its value, or the
    /// interval's half-width for a repeated figure.
    pub own_band: Option<f64>,
    /// Relative change from the run before (none for the first).
    pub change: Option<f64>,
    /// The change's noise band, relative.
    pub band: Option<f64>,
    pub verdict: Option<Kind>,
    pub why: String,
}

/// Judge each point against the one before it of the same contender (points as
/// [`super::Catalogue::trend`] orders them).
pub fn judge(points: Vec<Point>, threshold: f64) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::with_capacity(points.len());
    for p in points {
        let prev = out
            .last()
            .filter(|s| s.point.contender == p.contender)
            .map(|s| &s.point);
        let own_band = match spread(&p) {
            Some(s) => Some((s.hi - s.lo) / 2.0 / s.median.abs().max(f64::MIN_POSITIVE)),
            None => p.rse.map(|r| crate::report::compare::SIGMAS * r),
        };
        let mut step = Step {
            own_band,
            change: None,
            band: None,
            verdict: None,
            why: String::new(),
            point: p.clone(),
        };
        if let Some(a) = prev {
            judge_change(&mut step, a, &p, threshold);
        }
        out.push(step);
    }
    out
}

/// The spread of a repeated figure (its value is the median of `n` rounds).
fn spread(p: &Point) -> Option<Spread> {
    let (lo, hi) = (p.lo?, p.hi?);
    (p.n >= 2).then_some(Spread {
        n: p.n as usize,
        median: p.value,
        min: lo,
        max: hi,
        lo,
        hi,
        confidence: 0.0,
    })
}

fn judge_change(step: &mut Step, a: &Point, b: &Point, threshold: f64) {
    let change = (b.value - a.value) / a.value.abs();
    step.change = Some(change);
    let worse = match b.better.as_str() {
        "lower" => change > 0.0,
        "higher" => change < 0.0,
        _ => {
            (step.verdict, step.why) = (Some(Kind::NotJudged), "no better direction".into());
            return;
        }
    };
    if let (Some(sa), Some(sb)) = (spread(a), spread(b)) {
        let (k, why, band) = judge_samples(&sa, &sb, change, worse, threshold);
        (step.verdict, step.why, step.band) = (Some(k), why, band);
        return;
    }
    let beyond = if worse {
        Kind::Regressed
    } else {
        Kind::Improved
    };
    step.band = change_band(a.rse, b.rse);
    if b.unit == "micros" {
        // Latency histograms resolve 1 µs: a change of a microsecond is not a change.
        step.band = step.band.map(|x| x.max(1.0 / a.value.abs().max(1.0)));
    }
    let (k, why) = if !change.is_finite() {
        (Kind::NotJudged, "from zero".to_string())
    } else if change.abs() < threshold {
        (Kind::NoSignificantChange, "under threshold".into())
    } else if b.unit == "bytes" {
        // Sizes of the same data do not jitter: the threshold alone decides.
        (beyond, String::new())
    } else {
        match step.band {
            Some(band) if change.abs() <= band => {
                (Kind::NoSignificantChange, "within noise".into())
            }
            Some(_) => (beyond, String::new()),
            None => (Kind::NotJudged, "measured once: no per-second noise".into()),
        }
    };
    (step.verdict, step.why) = (Some(k), why);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(run: &str, value: f64, rse: Option<f64>) -> Point {
        Point {
            run: run.into(),
            started_at: run.into(),
            contender: "c".into(),
            version: "1".into(),
            status: "ok".into(),
            value,
            unit: "per_second".into(),
            better: "higher".into(),
            n: 1,
            lo: None,
            hi: None,
            rse,
        }
    }

    #[test]
    fn changes_are_judged_against_threshold_and_noise() {
        let steps = judge(
            vec![
                point("a", 100.0, Some(0.01)),
                point("b", 103.0, Some(0.01)),
                point("c", 80.0, Some(0.01)),
                point("d", 90.0, Some(0.2)),
            ],
            0.05,
        );
        let v: Vec<_> = steps.iter().map(|s| s.verdict).collect();
        assert_eq!(
            v,
            [
                None,
                Some(Kind::NoSignificantChange),
                Some(Kind::Regressed),
                Some(Kind::NoSignificantChange)
            ]
        );
        assert_eq!(steps[3].why, "within noise");
        let band = steps[2].band.expect("band");
        assert!((band - 2.0 * (0.0002f64).sqrt()).abs() < 1e-12, "{band}");
    }
}
