//! An open loop's target rate over the step's time: one constant rate, or stages that each
//! ramp linearly from the previous stage's rate to their own (k6's ramping arrival rate).
//! Owns the cumulative count of scheduled operations, N(t), and its inverse, so every
//! client's schedule is absolute (operation n is due at N⁻¹(n) after the start: no drift),
//! and the mean target of any stretch of time (each second's `target_rate`).

use std::sync::Arc;

/// One stage of a ramp, in absolute terms.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    /// Seconds after the start the stage begins.
    t0: f64,
    /// Operations scheduled before it.
    n0: f64,
    /// Rate at its start and at its end, operations a second.
    r0: f64,
    r1: f64,
    /// Seconds it lasts.
    d: f64,
}

impl Segment {
    fn count(&self) -> f64 {
        (self.r0 + self.r1) / 2.0 * self.d
    }

    /// Operations scheduled in its first `tau` seconds.
    fn count_in(&self, tau: f64) -> f64 {
        let tau = tau.clamp(0.0, self.d);
        self.r0 * tau + (self.r1 - self.r0) / (2.0 * self.d) * tau * tau
    }

    /// Seconds into the stage when its `m`-th operation is due (`m` within its count).
    fn time_in(&self, m: f64) -> f64 {
        let a = (self.r1 - self.r0) / (2.0 * self.d);
        // a·τ² + r0·τ = m, in the form that stays exact when a is near 0.
        let disc = (self.r0 * self.r0 + 4.0 * a * m).max(0.0);
        let den = self.r0 + disc.sqrt();
        if den > 0.0 { 2.0 * m / den } else { 0.0 }
    }
}

/// The rate an open loop is scheduled at, as a function of time. Cheap to clone (shared).
#[derive(Debug, Clone, PartialEq)]
pub struct RateProfile {
    /// Empty for a constant rate.
    stages: Arc<[Segment]>,
    /// The rate after the last stage (the constant rate when there are no stages).
    after: f64,
}

impl RateProfile {
    /// `rate` operations a second throughout.
    pub fn constant(rate: f64) -> Self {
        RateProfile {
            stages: Arc::from(Vec::new()),
            after: rate.max(0.0),
        }
    }

    /// From `start_rate`, each `(rate, seconds)` stage ramps linearly from the previous rate
    /// to its own over its seconds; after the last, nothing more is scheduled.
    pub fn ramp(start_rate: f64, stages: &[(f64, f64)]) -> Self {
        let mut out = Vec::with_capacity(stages.len());
        let (mut t, mut n, mut r) = (0.0, 0.0, start_rate.max(0.0));
        for &(rate, d) in stages {
            let s = Segment {
                t0: t,
                n0: n,
                r0: r,
                r1: rate.max(0.0),
                d: d.max(1e-9),
            };
            t += s.d;
            n += s.count();
            r = s.r1;
            out.push(s);
        }
        RateProfile {
            stages: Arc::from(out),
            after: 0.0,
        }
    }

    /// The same profile with every rate times `f` (a shard's share of the clients).
    pub fn scaled(&self, f: f64) -> Self {
        let stages: Vec<Segment> = self
            .stages
            .iter()
            .map(|s| Segment {
                n0: s.n0 * f,
                r0: s.r0 * f,
                r1: s.r1 * f,
                ..*s
            })
            .collect();
        RateProfile {
            stages: Arc::from(stages),
            after: self.after * f,
        }
    }

    /// Seconds the stages last (None for a constant rate).
    pub fn duration_s(&self) -> Option<f64> {
        self.stages.last().map(|s| s.t0 + s.d)
    }

    /// The highest rate it reaches.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.r0.max(s.r1))
            .fold(self.after, f64::max)
    }

    /// Operations scheduled in the first `t` seconds.
    pub fn count_at(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        match self.stages.iter().rev().find(|s| s.t0 <= t) {
            None => self.after * t,
            Some(s) if t <= s.t0 + s.d => s.n0 + s.count_in(t - s.t0),
            Some(s) => s.n0 + s.count() + self.after * (t - s.t0 - s.d),
        }
    }

    /// The mean rate over `[from_s, to_s)`.
    pub fn mean(&self, from_s: f64, to_s: f64) -> f64 {
        if to_s <= from_s {
            return 0.0;
        }
        (self.count_at(to_s) - self.count_at(from_s)) / (to_s - from_s)
    }

    /// Seconds after the start when operation `n` (counting from 0, fractional allowed) is
    /// due; None when it never is. `cursor` is the caller's stage index, only moving forward
    /// as `n` grows, so a schedule costs no search and no allocation per operation.
    pub fn time_of(&self, n: f64, cursor: &mut usize) -> Option<f64> {
        while let Some(s) = self.stages.get(*cursor) {
            let m = n - s.n0;
            if m < s.count() {
                return Some(s.t0 + s.time_in(m.max(0.0)));
            }
            *cursor += 1;
        }
        let (t_end, n_end) = self
            .stages
            .last()
            .map_or((0.0, 0.0), |s| (s.t0 + s.d, s.n0 + s.count()));
        (self.after > 0.0).then(|| t_end + (n - n_end).max(0.0) / self.after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let p = RateProfile::constant(100.0);
        let mut c = 0;
        assert_eq!(p.time_of(0.0, &mut c), Some(0.0));
        assert!((p.time_of(250.0, &mut c).unwrap() - 2.5).abs() < 1e-12);
        assert!((p.mean(3.0, 4.0) - 100.0).abs() < 1e-9);
        assert_eq!(p.duration_s(), None);
    }

    #[test]
    fn ramp_counts_and_inverts() {
        // 0 -> 100/s over 10 s (500 ops), then 100 -> 300/s over 10 s (2000 ops).
        let p = RateProfile::ramp(0.0, &[(100.0, 10.0), (300.0, 10.0)]);
        assert_eq!(p.duration_s(), Some(20.0));
        assert!((p.count_at(10.0) - 500.0).abs() < 1e-9);
        assert!((p.count_at(20.0) - 2500.0).abs() < 1e-9);
        // The mean over second 4..5 of the first stage is its midpoint rate, 45/s.
        assert!((p.mean(4.0, 5.0) - 45.0).abs() < 1e-9);
        assert!((p.mean(14.0, 15.0) - 190.0).abs() < 1e-9);
        let mut c = 0;
        for n in [0.0, 1.0, 10.0, 499.0, 500.0, 1200.0, 2499.0] {
            let t = p.time_of(n, &mut c).expect("due");
            assert!((p.count_at(t) - n).abs() < 1e-6, "n={n} t={t}");
        }
        // Past the last stage, nothing is due.
        assert_eq!(p.time_of(2500.5, &mut c), None);
        assert!((p.peak() - 300.0).abs() < 1e-12);
    }

    #[test]
    fn a_flat_stage_and_a_ramp_down() {
        let p = RateProfile::ramp(50.0, &[(50.0, 4.0), (0.0, 2.0)]);
        assert!((p.count_at(4.0) - 200.0).abs() < 1e-9);
        assert!((p.count_at(6.0) - 250.0).abs() < 1e-9);
        let mut c = 0;
        let t = p.time_of(249.0, &mut c).expect("due");
        assert!(t > 4.0 && t < 6.0);
        assert!((p.scaled(0.5).count_at(6.0) - 125.0).abs() < 1e-9);
    }
}
