//! Capacity under a latency goal: a step's `slo` runs one closed-loop probe (its throughput
//! bounds the search from above; with `max_rate`, that does instead and no closed probe
//! runs), then open-loop probes at fixed
//! rates, bisecting between the highest rate that met the goal and the lowest that did not
//! until they are within `precision` of each other or `max_probes` have run. Each probe is
//! one paced level of the step (its own warm-up, `probe_s` seconds); this module owns the
//! goal, the judging of a probe, the search, and the step's figures of it.

use super::ctx::{StepError, StepOutput, summary};
use crate::decode::{DecodeError, KeyPath};
use crate::metrics::Latency;
use crate::results::{Better, Metric, Unit};
use crate::runner::{RunOutcome, Seconds};
use serde::{Deserialize, Serialize};

/// The goal and how to search for it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Bounds on the probe's latency percentiles (from the schedule), milliseconds.
    #[serde(default)]
    pub p99_ms: Option<f64>,
    #[serde(default)]
    pub p95_ms: Option<f64>,
    /// Bound on the failed share of a probe's operations, 0 to 1.
    #[serde(default)]
    pub error_rate: Option<f64>,
    /// Seconds each probe runs, its warm-up (the step's `warmup_s`) included.
    #[serde(default = "d_probe_s")]
    pub probe_s: u64,
    /// The search's upper bound, in the step's rate unit; absent: the closed loop's throughput.
    #[serde(default)]
    pub max_rate: Option<f64>,
    /// Stop when the highest pass and lowest fail are within this share of the latter.
    #[serde(default = "d_precision")]
    pub precision: f64,
    /// Most open-loop probes (the closed-loop one not counted).
    #[serde(default = "d_max_probes")]
    pub max_probes: u32,
}

fn d_probe_s() -> u64 {
    10
}
fn d_precision() -> f64 {
    0.05
}
fn d_max_probes() -> u32 {
    8
}

impl Slo {
    /// At least one goal; each in range; paths relative to the step.
    pub fn validate(&self, max_rate: f64) -> Result<(), DecodeError> {
        let at = |k: &str, m: &str| Err(DecodeError::at(KeyPath::root().key("slo").key(k), m));
        if self.p99_ms.is_none() && self.p95_ms.is_none() && self.error_rate.is_none() {
            return Err(DecodeError::at(
                KeyPath::root().key("slo"),
                "slo needs a goal: p99_ms, p95_ms or error_rate (or several)",
            ));
        }
        for (k, v) in [("p99_ms", self.p99_ms), ("p95_ms", self.p95_ms)] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0 && v <= 3_600_000.0)) {
                return at(k, "a latency goal must be above 0 and at most 3600000 ms");
            }
        }
        if self
            .error_rate
            .is_some_and(|e| !(e.is_finite() && (0.0..=1.0).contains(&e)))
        {
            return at(
                "error_rate",
                "error_rate is the failed share allowed: 0 to 1",
            );
        }
        if !(2..=3600).contains(&self.probe_s) {
            return at("probe_s", "probe_s must be from 2 to 3600 seconds");
        }
        if self
            .max_rate
            .is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= max_rate))
        {
            return at(
                "max_rate",
                &format!("max_rate must be above 0 and at most {max_rate}"),
            );
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return at(
                "precision",
                "precision must be above 0 and below 1 (0.05 is 5 %)",
            );
        }
        if !(1..=50).contains(&self.max_probes) {
            return at("max_probes", "max_probes must be from 1 to 50");
        }
        Ok(())
    }
}

/// What one probe did, for judging and the report.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// The rate asked, in the step's unit; None for the closed-loop probe.
    pub rate: Option<f64>,
    /// Operations a second started and ended (failed ones included), in the same unit.
    pub achieved: f64,
    pub p95_us: Option<u64>,
    pub p99_us: Option<u64>,
    pub error_share: f64,
    pub late: u64,
    pub dropped: u64,
    /// Met the goal (the closed-loop probe is not judged: None).
    pub pass: Option<bool>,
    /// Why it failed.
    pub why: Option<String>,
    /// Its first second in the step's per-second file.
    pub first_tick: u64,
}

/// A probe's measured part: what the judge reads.
pub struct Measured {
    pub achieved: f64,
    pub latency: Option<Latency>,
    pub ops: u64,
    pub errors: u64,
    pub late: u64,
    pub dropped: u64,
    /// Its seconds, ticks through the step.
    pub seconds: Seconds,
    pub interrupted: bool,
}

impl Measured {
    /// A level's outcome (its seconds from `tick_base` in the step), its rate (operations started a second, failed ones included)
    /// divided by `per_unit`.
    pub fn of(out: RunOutcome, per_unit: f64, tick_base: u64) -> Self {
        let achieved = if out.measured_s > 0.0 {
            (out.ops + out.error_count()) as f64 / out.measured_s / per_unit
        } else {
            0.0
        };
        Measured {
            achieved,
            latency: Latency::of(&out.all),
            ops: out.ops,
            errors: out.error_count(),
            late: out.late,
            dropped: out.dropped,
            seconds: out.seconds.shifted(tick_base),
            interrupted: out.interrupted,
        }
    }
}

/// Judge a probe at `asked`: it fails when it did under 95 % of the rate, dropped any
/// operation, or missed a goal.
pub fn judge(slo: &Slo, asked: f64, m: &Measured) -> Result<(), String> {
    if m.achieved < asked * 0.95 {
        return Err(format!("did {:.0}/s of {asked:.0}", m.achieved));
    }
    if m.dropped > 0 {
        return Err(format!("{} dropped", m.dropped));
    }
    let share = m.errors as f64 / (m.ops + m.errors).max(1) as f64;
    if let Some(bound) = slo.error_rate
        && share > bound
    {
        return Err(format!("{:.2}% failed", share * 100.0));
    }
    for (name, goal, got) in [
        ("p99", slo.p99_ms, m.latency.map(|l| l.p99)),
        ("p95", slo.p95_ms, m.latency.map(|l| l.p95)),
    ] {
        let Some(goal) = goal else { continue };
        match got {
            None => return Err("no operation succeeded".into()),
            Some(us) if us as f64 > goal * 1000.0 => {
                return Err(format!("{name} {:.1} ms > {goal} ms", us as f64 / 1000.0));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A search runs on one machine: a sharded run's shards would each judge their own share of
/// the rate and choose their next probe apart.
pub fn unsharded(ctx: &super::ctx::StepCtx<'_>) -> Result<(), StepError> {
    match ctx.team {
        Some(_) => Err(StepError::Check(
            "slo is not yet supported on a sharded run (each shard would judge only its share); run the search without --shard".into(),
        )),
        None => Ok(()),
    }
}

/// Where the search ended: the highest rate that passed and the lowest that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Bracket {
    pub pass: Option<f64>,
    pub fail: Option<f64>,
}

/// The search alone: first `upper`, then bisection between the best pass (0 before any)
/// and the lowest fail, until they are within `precision` of the fail or `max_probes` ran.
/// `passes(rate)` runs and judges one probe; an error stops the search.
pub fn bisect<E>(
    upper: f64,
    precision: f64,
    max_probes: u32,
    mut passes: impl FnMut(f64) -> Result<bool, E>,
) -> Result<Bracket, E> {
    let mut b = Bracket::default();
    let mut rate = upper;
    for _ in 0..max_probes {
        if passes(rate)? {
            b.pass = Some(b.pass.map_or(rate, |p: f64| p.max(rate)));
        } else {
            b.fail = Some(b.fail.map_or(rate, |f: f64| f.min(rate)));
        }
        let Some(fail) = b.fail else { break }; // the upper bound met the goal
        let lo = b.pass.unwrap_or(0.0);
        if b.pass.is_some() && fail - lo <= precision * fail {
            break;
        }
        rate = (lo + fail) / 2.0;
        if rate < 0.5 {
            break; // not even one operation every two seconds meets it
        }
    }
    Ok(b)
}

/// What the search found.
pub struct Found {
    pub probes: Vec<Probe>,
    pub bracket: Bracket,
    /// The closed-loop probe's throughput, or `max_rate`: where the search started.
    pub upper: f64,
    /// The probes' seconds, ticks through the step.
    pub seconds: Seconds,
    pub interrupted: bool,
}

/// Run the search: `probe(rate, first_tick)` runs one level (None: closed loop) whose
/// seconds go to the step's file from `first_tick`, and measures it.
pub fn search(
    slo: &Slo,
    mut probe: impl FnMut(Option<f64>, u64) -> Result<Measured, StepError>,
) -> Result<Found, StepError> {
    let mut f = Found {
        probes: Vec::new(),
        bracket: Bracket::default(),
        upper: 0.0,
        seconds: Seconds::default(),
        interrupted: false,
    };
    let keep =
        |f: &mut Found, rate: Option<f64>, m: Measured, verdict: Option<Result<(), String>>| {
            f.probes.push(Probe {
                rate,
                achieved: m.achieved,
                p95_us: m.latency.map(|l| l.p95),
                p99_us: m.latency.map(|l| l.p99),
                error_share: m.errors as f64 / (m.ops + m.errors).max(1) as f64,
                late: m.late,
                dropped: m.dropped,
                pass: verdict.as_ref().map(Result::is_ok),
                why: verdict.and_then(Result::err),
                first_tick: m.seconds.first.unwrap_or(next_tick(f)),
            });
            f.seconds = f.seconds.then(m.seconds);
            f.interrupted |= m.interrupted;
        };
    // The closed loop's throughput bounds the search, unless max_rate does.
    if let Some(max) = slo.max_rate {
        f.upper = max;
    } else {
        let closed = probe(None, 0)?;
        f.upper = closed.achieved;
        let stopped = closed.interrupted;
        keep(&mut f, None, closed, None);
        if stopped {
            return Ok(f);
        }
    }
    if f.upper < 0.5 {
        return Err(StepError::Check(format!(
            "the closed-loop probe did {:.2} operations a second: nothing to search below",
            f.upper
        )));
    }
    let upper = f.upper;
    f.bracket = bisect(upper, slo.precision, slo.max_probes, |rate| {
        if f.interrupted {
            return Err(None);
        }
        let tick = next_tick(&f);
        let m = probe(Some(rate), tick).map_err(Some)?;
        let verdict = judge(slo, rate, &m);
        let pass = verdict.is_ok() && !m.interrupted;
        keep(&mut f, Some(rate), m, Some(verdict));
        Ok(pass)
    })
    .or_else(|e: Option<StepError>| e.map_or(Ok(Bracket::default()), Err))?;
    if f.interrupted {
        f.bracket = bracket_of(&f.probes);
    }
    Ok(f)
}

/// The first second a next probe's records take: after the last one kept (a probe's last
/// second is often a short one past its `probe_s`).
fn next_tick(f: &Found) -> u64 {
    f.seconds.last.map_or(0, |t| t + 1)
}

/// The bracket of the probes judged so far.
fn bracket_of(probes: &[Probe]) -> Bracket {
    let mut b = Bracket::default();
    for p in probes {
        match (p.rate, p.pass) {
            (Some(r), Some(true)) => b.pass = Some(b.pass.map_or(r, |x: f64| x.max(r))),
            (Some(r), Some(false)) => b.fail = Some(b.fail.map_or(r, |x: f64| x.min(r))),
            _ => {}
        }
    }
    b
}

/// The goal in words: "p99 ≤ 20 ms, errors ≤ 1%".
pub fn goal_words(slo: &Slo) -> String {
    let mut g = Vec::new();
    if let Some(v) = slo.p99_ms {
        g.push(format!("p99 ≤ {v} ms"));
    }
    if let Some(v) = slo.p95_ms {
        g.push(format!("p95 ≤ {v} ms"));
    }
    if let Some(v) = slo.error_rate {
        g.push(format!("errors ≤ {}%", v * 100.0));
    }
    g.join(", ")
}

/// One probe in a few words: "400/s ✓ did 400, p99 3.1 ms".
fn probe_words(p: &Probe) -> String {
    let p99 = p
        .p99_us
        .map_or("-".into(), |us| format!("{:.1} ms", us as f64 / 1000.0));
    match (p.rate, p.pass) {
        (None, _) => format!("closed loop did {:.0}/s, p99 {p99}", p.achieved),
        (Some(r), pass) => format!(
            "{r:.0}/s {} did {:.0}, p99 {p99}{}",
            if pass == Some(true) { "pass" } else { "fail" },
            p.achieved,
            p.why.as_ref().map_or(String::new(), |w| format!(" ({w})"))
        ),
    }
}

/// The step's figures of a search: the capacity, its interval and the probes, in `unit`.
pub fn output(
    title: String,
    slo: &Slo,
    unit: &str,
    pace_details: serde_json::Value,
    f: Found,
) -> StepOutput {
    let mut s = summary(title);
    let b = f.bracket;
    s.ops_per_s = b.pass;
    let mut m = vec![Metric::new(
        "capacity_per_s",
        &format!("capacity ({unit})"),
        b.pass.unwrap_or(0.0),
        Unit::PerSecond,
        Better::Higher,
    )];
    if let Some(fail) = b.fail {
        m.push(Metric::new(
            "broke_at_per_s",
            "broke at",
            fail,
            Unit::PerSecond,
            Better::None,
        ));
    }
    m.push(Metric::new(
        "probes",
        "probes",
        f.probes.len() as f64,
        Unit::Count,
        Better::None,
    ));
    s.metrics = m;
    let verdict = match (b.pass, b.fail) {
        (Some(p), Some(x)) => format!(
            "capacity under {}: {p:.0} {unit} (met at {p:.0}, missed at {x:.0})",
            goal_words(slo)
        ),
        (Some(p), None) if slo.max_rate.is_some() => format!(
            "capacity under {}: at least {p:.0} {unit}, the search's upper bound (max_rate); raise max_rate to look higher",
            goal_words(slo),
        ),
        (Some(p), None) => format!(
            "capacity under {}: {p:.0} {unit}, the closed loop's own throughput, met the goal when paced (more clients may do more)",
            goal_words(slo),
        ),
        (None, Some(x)) => format!(
            "no rate tried met {}: the lowest, {x:.0} {unit}, missed it",
            goal_words(slo)
        ),
        (None, None) => "interrupted before the first open-loop probe".into(),
    };
    let words: Vec<String> = f.probes.iter().map(probe_words).collect();
    s.note = Some(format!(
        "{verdict}; each probe {} s open loop, latency from the schedule; probes: {}",
        slo.probe_s,
        words.join(" | ")
    ));
    StepOutput {
        summary: s,
        details: serde_json::json!({
            "slo": {
                "p99_ms": slo.p99_ms, "p95_ms": slo.p95_ms, "error_rate": slo.error_rate,
                "probe_s": slo.probe_s, "max_rate": slo.max_rate, "precision": slo.precision,
                "max_probes": slo.max_probes,
            },
            "pacing": pace_details,
            "unit": unit,
            "upper_bound": f.upper,
            "capacity": b.pass,
            "interval": [b.pass, b.fail],
            "broke_at": b.fail,
            "probes": f.probes,
        }),
        seconds: f.seconds.count,
        interrupted: f.interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_finds_a_synthetic_knee_within_precision() {
        let knee = 737.0;
        let mut asked = Vec::new();
        let b = bisect(2000.0, 0.05, 20, |r| {
            asked.push(r);
            Ok::<_, ()>(r <= knee)
        })
        .expect("search");
        let (pass, fail) = (b.pass.expect("a pass"), b.fail.expect("a fail"));
        assert!(pass <= knee && fail > knee, "{b:?}");
        assert!(fail - pass <= 0.05 * fail, "{b:?}");
        assert_eq!(asked[0], 2000.0);
        assert!(asked.len() <= 7, "{asked:?}");
    }

    #[test]
    fn the_search_stops_at_max_probes_and_when_the_bound_passes() {
        let mut n = 0;
        let b = bisect(1000.0, 0.001, 3, |r| {
            n += 1;
            Ok::<_, ()>(r <= 100.0)
        })
        .expect("search");
        assert_eq!(n, 3);
        assert_eq!(b.fail, Some(250.0));
        assert_eq!(b.pass, None);
        let b = bisect(1000.0, 0.05, 8, |_| Ok::<_, ()>(true)).expect("search");
        assert_eq!(
            b,
            Bracket {
                pass: Some(1000.0),
                fail: None
            }
        );
    }

    #[test]
    fn a_probe_that_misses_its_rate_or_goal_fails() {
        let slo: Slo = toml::from_str("p99_ms = 20\nerror_rate = 0.01").expect("slo");
        let lat = |p99| Latency {
            p50: 1,
            p95: 1,
            p99,
            p999: p99,
            max: p99,
            mean: 1.0,
        };
        let m = |achieved, p99, errors, dropped| Measured {
            achieved,
            latency: Some(lat(p99)),
            ops: 1000,
            errors,
            late: 0,
            dropped,
            seconds: Seconds::default(),
            interrupted: false,
        };
        assert!(judge(&slo, 100.0, &m(99.0, 19_000, 0, 0)).is_ok());
        assert!(judge(&slo, 100.0, &m(90.0, 1_000, 0, 0)).is_err());
        assert!(judge(&slo, 100.0, &m(100.0, 21_000, 0, 0)).is_err());
        assert!(judge(&slo, 100.0, &m(100.0, 1_000, 20, 0)).is_err());
        assert!(judge(&slo, 100.0, &m(100.0, 1_000, 0, 1)).is_err());
    }
}
