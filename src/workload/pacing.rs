//! The open-loop keys every client step takes alike — `rate` (one rate, or ramping stages),
//! `start_rate`, `arrival` and `slo` — decoded apart from a kind's own keys, checked with
//! located errors, turned into the runner's [`Pacing`], and the notes and details that say
//! how a level was paced and when the engine could not keep up.

use crate::decode::{DecodeError, KeyPath, by_name};
use crate::runner::{Pacing, RateProfile};
use serde::Deserialize;

/// The keys [`split`] takes out of a step's table.
pub const PACE_KEYS: &[&str] = &["rate", "start_rate", "arrival", "slo"];

/// Highest rate a step may ask for, operations a second.
pub const MAX_RATE: f64 = 10_000_000.0;

/// Open-loop arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Fixed,
    /// Exponential gaps (a Poisson process).
    Poisson,
}

/// One stage of a ramp: reach `rate` over `duration_s`, linearly from the rate before it.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    pub rate: f64,
    pub duration_s: u64,
}

/// What a step's `rate` says.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(
    untagged,
    expecting = "rate must be operations a second (a number) or a list of stages [{ rate = …, duration_s = … }, …]"
)]
pub enum Rate {
    Fixed(f64),
    Stages(Vec<Stage>),
}

/// A step's pacing as the study gives it. No `rate`: closed loop.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pace {
    #[serde(default)]
    pub rate: Option<Rate>,
    /// Where a ramp starts (k6's `startRate`); default 0.
    #[serde(default)]
    pub start_rate: Option<f64>,
    #[serde(default, deserialize_with = "by_name")]
    pub arrival: Arrival,
    /// Find the highest rate that meets this goal instead of running one.
    #[serde(default)]
    pub slo: Option<super::slo::Slo>,
}

/// Take [`PACE_KEYS`] out of a step's table into a [`Pace`]. A ramp without `duration_s`
/// gets its stages' sum, and an `slo` its probes' seconds; a `duration_s` that says
/// otherwise is an error.
pub fn split(v: toml::Value) -> Result<(toml::Value, Pace), DecodeError> {
    let toml::Value::Table(mut table) = v else {
        return Ok((v, Pace::default()));
    };
    let mut mine = toml::Table::new();
    for k in PACE_KEYS {
        if let Some(x) = table.remove(*k) {
            mine.insert((*k).to_string(), x);
        }
    }
    let pace: Pace = crate::decode::decode(toml::Value::Table(mine))?;
    let implied = match (&pace.rate, &pace.slo) {
        (Some(Rate::Stages(s)), _) => Some(("the sum of the rate's stages", stages_s(s))),
        (_, Some(slo)) => Some(("an slo's probe_s (each probe runs that long)", slo.probe_s)),
        _ => None,
    };
    if let Some((what, secs)) = implied {
        if table.contains_key("per_client") {
            return Err(DecodeError::at(
                KeyPath::root().key("per_client"),
                format!("the step's time is {what}: leave per_client out"),
            ));
        }
        match table.get("duration_s").map(toml::Value::as_integer) {
            None => {
                table.insert("duration_s".into(), toml::Value::Integer(secs as i64));
            }
            // Not a number: the kind's own decoding says so.
            Some(None) => {}
            Some(Some(d)) if d as u64 == secs => {}
            Some(Some(d)) => {
                return Err(DecodeError::at(
                    KeyPath::root().key("duration_s"),
                    format!("duration_s = {d} differs from {what}, {secs} s; leave duration_s out"),
                ));
            }
        }
    }
    Ok((toml::Value::Table(table), pace))
}

/// Decode a step's parameters with its pacing taken apart first: `rest` decodes the other
/// keys, `set` hands the kind its [`Pace`].
pub fn decode_with<P>(
    v: toml::Value,
    rest: impl FnOnce(toml::Value) -> Result<P, DecodeError>,
    set: impl FnOnce(&mut P, Pace),
) -> Result<P, DecodeError> {
    let (v, pace) = split(v)?;
    let mut p = rest(v)?;
    set(&mut p, pace);
    Ok(p)
}

fn stages_s(stages: &[Stage]) -> u64 {
    stages.iter().map(|s| s.duration_s).sum()
}

fn rate_ok(r: f64, zero_ok: bool) -> bool {
    r.is_finite() && (r > 0.0 || (zero_ok && r == 0.0)) && r <= MAX_RATE
}

impl Pace {
    /// `rate` above 0 (a stage's at least 0, lasting at least a second), `start_rate` only
    /// with stages, `slo` instead of a rate; paths relative to the step.
    pub fn validate(&self) -> Result<(), DecodeError> {
        let root = KeyPath::root();
        let range = format!("above 0 and at most {MAX_RATE} operations/s");
        match &self.rate {
            Some(Rate::Fixed(r)) if !rate_ok(*r, false) => {
                return Err(DecodeError::at(
                    root.key("rate"),
                    format!("rate must be {range}"),
                ));
            }
            Some(Rate::Stages(st)) => {
                if st.is_empty() {
                    return Err(DecodeError::at(
                        root.key("rate"),
                        "rate lists no stages; give at least one { rate = …, duration_s = … }",
                    ));
                }
                for (i, s) in st.iter().enumerate() {
                    if !rate_ok(s.rate, true) {
                        return Err(DecodeError::at(
                            root.key("rate").index(i).key("rate"),
                            format!("a stage's rate must be 0 to {MAX_RATE} operations/s"),
                        ));
                    }
                    if !(1..=7 * 86_400).contains(&s.duration_s) {
                        return Err(DecodeError::at(
                            root.key("rate").index(i).key("duration_s"),
                            "a stage's duration_s must be from 1 to 604800 (a week)",
                        ));
                    }
                }
                if st.iter().all(|s| s.rate == 0.0) && self.start_rate.unwrap_or(0.0) == 0.0 {
                    return Err(DecodeError::at(
                        root.key("rate"),
                        "every stage's rate is 0: nothing would run",
                    ));
                }
            }
            _ => {}
        }
        if let Some(s) = self.start_rate {
            if !matches!(self.rate, Some(Rate::Stages(_))) {
                return Err(DecodeError::at(
                    root.key("start_rate"),
                    "start_rate is where a ramp starts: give rate as a list of stages, or leave start_rate out",
                ));
            }
            if !rate_ok(s, true) {
                return Err(DecodeError::at(
                    root.key("start_rate"),
                    format!("start_rate must be 0 to {MAX_RATE} operations/s"),
                ));
            }
        }
        if let Some(slo) = &self.slo {
            if self.rate.is_some() {
                return Err(DecodeError::at(
                    root.key("slo"),
                    "slo searches for the highest rate that meets it: leave rate out (bound the search with slo's max_rate)",
                ));
            }
            slo.validate(MAX_RATE)?;
        }
        Ok(())
    }

    /// The runner's pacing, rates times `scale` (a kind whose `rate` counts something else
    /// than its operations, as tpcc's New-Orders a minute).
    pub fn pacing(&self, scale: f64) -> Pacing {
        let poisson = self.arrival == Arrival::Poisson;
        match &self.rate {
            None => Pacing::Closed,
            Some(Rate::Fixed(r)) => Pacing::Open {
                rate: RateProfile::constant(r * scale),
                poisson,
            },
            Some(Rate::Stages(st)) => {
                let stages: Vec<(f64, f64)> = st
                    .iter()
                    .map(|s| (s.rate * scale, s.duration_s as f64))
                    .collect();
                Pacing::Open {
                    rate: RateProfile::ramp(self.start_rate.unwrap_or(0.0) * scale, &stages),
                    poisson,
                }
            }
        }
    }

    /// The same pacing at one fixed rate (an SLO probe's), in the step's own units.
    pub fn at(&self, rate: Option<f64>) -> Pace {
        Pace {
            rate: rate.map(Rate::Fixed),
            start_rate: None,
            arrival: self.arrival,
            slo: None,
        }
    }

    pub fn is_open(&self) -> bool {
        self.rate.is_some()
    }

    /// The mean target over a level's measured seconds `[from_s, to_s)`, operations a
    /// second (None: closed loop).
    pub fn target_mean(&self, scale: f64, from_s: f64, to_s: f64) -> Option<f64> {
        match self.pacing(scale) {
            Pacing::Closed => None,
            Pacing::Open { rate, .. } => Some(rate.mean(from_s, to_s.max(from_s + 1e-9))),
        }
    }

    /// How the loop ran, for a step's note: "closed loop", or the rate (in `unit`, e.g.
    /// "events/s") and arrivals, latency from the schedule.
    pub fn loop_note(&self, unit: &str) -> String {
        let arrivals = match self.arrival {
            Arrival::Fixed => "fixed",
            Arrival::Poisson => "poisson",
        };
        match &self.rate {
            None => "closed loop".into(),
            Some(Rate::Fixed(r)) => {
                format!("open loop at {r} {unit} ({arrivals} arrivals), latency from the schedule")
            }
            Some(Rate::Stages(st)) => {
                let mut from = self.start_rate.unwrap_or(0.0);
                let legs: Vec<String> = st
                    .iter()
                    .map(|s| {
                        let leg = format!("{from}→{} over {} s", s.rate, s.duration_s);
                        from = s.rate;
                        leg
                    })
                    .collect();
                format!(
                    "open loop ramping {} ({unit}, linear within each stage; {arrivals} arrivals), latency from the schedule",
                    legs.join(", ")
                )
            }
        }
    }

    /// The loop and its target for a step's JSON details.
    pub fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "loop": if self.is_open() { "open" } else { "closed" },
            "rate": self.rate,
            "start_rate": self.start_rate,
            "arrival": self.arrival,
        })
    }
}

/// The note for a level of an open loop that fell short: done below 95 % of its target, or
/// with operations dropped. `level` names it ("at 4 threads"), `unit` the rate's; `unstarted`
/// (due before the end, not started by it) is said but does not make a shortfall, since a
/// client woken a little after the end leaves one.
pub fn shortfall(
    level: &str,
    target: Option<f64>,
    achieved: f64,
    late: u64,
    dropped: u64,
    unstarted: u64,
    unit: &str,
) -> Option<String> {
    let t = target?;
    (achieved < t * 0.95 || dropped > 0).then(|| {
        let queue = if unstarted > 0 {
            format!(", {unstarted} still waiting at the end")
        } else {
            String::new()
        };
        format!(
            "{level} the engine could not sustain {t:.0} {unit}: it did {achieved:.0}, {late} started late, {dropped} dropped{queue}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(text: &str) -> Result<(toml::Value, Pace), DecodeError> {
        let v: toml::Value = toml::from_str(text).expect("toml");
        let (rest, p) = split(v)?;
        p.validate()?;
        Ok((rest, p))
    }

    #[test]
    fn a_ramp_sets_the_duration_and_its_errors_are_located() {
        let (rest, p) = pace(
            "threads = 1\nrate = [{ rate = 100, duration_s = 10 }, { rate = 500, duration_s = 20 }]",
        )
        .expect("valid");
        assert_eq!(rest["duration_s"].as_integer(), Some(30));
        assert!(
            p.loop_note("events/s")
                .contains("0→100 over 10 s, 100→500 over 20 s")
        );
        let e = pace("duration_s = 5\nrate = [{ rate = 100, duration_s = 10 }]").unwrap_err();
        assert_eq!(e.path.to_string(), "duration_s");
        let e = pace("rate = [{ rate = 100, duration_s = 0 }]").unwrap_err();
        assert_eq!(e.path.to_string(), "rate[0].duration_s");
        let e = pace("rate = [{ rate = -1, duration_s = 3 }]").unwrap_err();
        assert_eq!(e.path.to_string(), "rate[0].rate");
        let e = pace("rate = 10\nstart_rate = 5").unwrap_err();
        assert_eq!(e.path.to_string(), "start_rate");
        let e = pace("rate = 0").unwrap_err();
        assert_eq!(e.path.to_string(), "rate");
        let e = pace("per_client = 5\nslo = { p99_ms = 3 }").unwrap_err();
        assert_eq!(e.path.to_string(), "per_client");
    }

    #[test]
    fn shortfall_speaks_only_when_the_rate_was_missed() {
        assert!(shortfall("at 2 threads", Some(100.0), 99.0, 0, 0, 1, "events/s").is_none());
        assert!(
            shortfall("at 2 threads", Some(100.0), 80.0, 3, 0, 40, "events/s").is_some_and(
                |n| n.ends_with("3 started late, 0 dropped, 40 still waiting at the end")
            )
        );
        assert!(shortfall("at 2 threads", Some(100.0), 100.0, 0, 1, 0, "events/s").is_some());
        assert!(shortfall("at 2 threads", None, 0.0, 0, 0, 0, "events/s").is_none());
    }
}
