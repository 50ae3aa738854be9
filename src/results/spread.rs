//! What repeated measurements of one figure say: their median, min–max, and a confidence
//! interval for the median that holds for any distribution and any number of samples.
//!
//! The interval is the order-statistic (binomial) interval for the median: with n samples
//! sorted, `[x(k), x(n+1-k)]` covers the true median with probability
//! `1 − 2·P(Binomial(n, ½) ≤ k − 1)`, whatever the figure's distribution. We take the
//! narrowest such interval that reaches 95 %; below six samples none does, and the interval is
//! min–max with the confidence it has (93.8 % at n = 5, 87.5 % at 4, 75 % at 3), stated beside
//! it. A bootstrap would print a 95 % label on an interval that at n = 5 is the same min–max
//! (the resampled median can only be one of the five values); the exact figure is the honest
//! one. No crate in our dependency set offers this, and it is a dozen lines.

use serde::{Deserialize, Serialize};

/// Confidence aimed for.
pub const CONFIDENCE: f64 = 0.95;

/// Samples a side needs before a difference between two contenders or two runs is judged:
/// the smallest n whose min–max interval for the median reaches 90 % confidence.
pub const MIN_SAMPLES: usize = 5;

/// The spread of one figure over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Samples.
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Confidence interval for the median (`confidence` below).
    pub lo: f64,
    pub hi: f64,
    /// Probability (0–1) that `lo..=hi` holds the true median; 0.95 or more from n = 6.
    pub confidence: f64,
}

impl Spread {
    /// The spread of `samples` (non-finite values are left out); `None` when none remain.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        let mut xs: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if xs.is_empty() {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        let n = xs.len();
        let median = if n % 2 == 1 {
            xs[n / 2]
        } else {
            (xs[n / 2 - 1] + xs[n / 2]) / 2.0
        };
        // The largest k (narrowest interval) whose coverage still reaches 95 %; k = 1 is
        // min–max, which is as wide as the samples allow.
        let mut k = 1;
        while k < n.div_ceil(2) && coverage(n, k + 1) >= CONFIDENCE {
            k += 1;
        }
        Some(Spread {
            n,
            median,
            min: xs[0],
            max: xs[n - 1],
            lo: xs[k - 1],
            hi: xs[n - k],
            confidence: coverage(n, k),
        })
    }

    /// Whether the two intervals share any value: then neither median is shown to differ.
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }

    /// Whether there are enough samples to judge a difference.
    pub fn judgeable(&self) -> bool {
        self.n >= MIN_SAMPLES
    }

    /// `93.8%`, `95%` — the interval's confidence for captions.
    pub fn confidence_text(&self) -> String {
        let p = self.confidence * 100.0;
        if (p - p.round()).abs() < 0.05 {
            format!("{p:.0}%")
        } else {
            format!("{p:.1}%")
        }
    }
}

/// How often two figures that did not change show min–max intervals apart by chance alone:
/// for exchangeable samples, all `na` of one side below all `nb` of the other or above them,
/// 2 / C(na + nb, na) — 1 in 126 at 5 rounds a side. Exact while [`Spread::of`] gives min–max
/// (up to 8 samples); beyond, where its interval is narrower, an underestimate.
pub fn chance_apart(na: usize, nb: usize) -> f64 {
    let n = na + nb;
    let ln_c: f64 = (0..na)
        .map(|j| ((n - j) as f64).ln() - ((j + 1) as f64).ln())
        .sum();
    (2.0 * (-ln_c).exp()).min(1.0)
}

/// The most of `m` unchanged figures, each shown as changed with probability `p`, that
/// chance alone sets apart at least 95 % of the time (Poisson approximation of the count).
pub fn by_chance_at_most(m: usize, p: f64) -> usize {
    let lambda = m as f64 * p;
    let (mut k, mut term) = (0usize, (-lambda).exp());
    let mut cdf = term;
    while cdf < 0.95 && k < m {
        k += 1;
        term *= lambda / k as f64;
        cdf += term;
    }
    k
}

/// The confidence of the interval [`Spread::of`] gives for `n` samples.
pub fn confidence_for(n: usize) -> f64 {
    let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
    Spread::of(&xs).map_or(0.0, |s| s.confidence)
}

/// Coverage of `[x(k), x(n+1-k)]`: 1 − 2·P(Binomial(n, ½) ≤ k − 1). Each term
/// C(n, j)/2^n is taken through logarithms, so no count of samples overflows it.
fn coverage(n: usize, k: usize) -> f64 {
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // ln C(n, 0)
    let mut tail = 0.0;
    for j in 0..k {
        tail += (ln_c - ln2n).exp();
        ln_c += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    (1.0 - 2.0 * tail).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_samples_give_min_max_at_93_8_percent() {
        let s = Spread::of(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (5, 3.0, 1.0, 5.0));
        assert_eq!((s.lo, s.hi), (1.0, 5.0));
        assert!((s.confidence - 0.9375).abs() < 1e-12);
        assert_eq!(s.confidence_text(), "93.8%");
        assert!(s.judgeable());
    }

    #[test]
    fn more_samples_narrow_the_interval_and_reach_95_percent() {
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let s = Spread::of(&xs).unwrap();
        assert_eq!(s.median, 10.5);
        // n = 20: k = 6 gives 95.9 %, k = 7 only 88.5 %.
        assert_eq!((s.lo, s.hi), (6.0, 15.0));
        assert!(s.confidence >= 0.95 && s.confidence < 0.97);
        let six = Spread::of(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!((six.lo, six.hi), (1.0, 6.0));
        assert!((six.confidence - 0.96875).abs() < 1e-12);
    }

    #[test]
    fn few_samples_say_how_little_they_know() {
        let one = Spread::of(&[7.0]).unwrap();
        assert_eq!((one.lo, one.hi, one.confidence), (7.0, 7.0, 0.0));
        assert!(!one.judgeable());
        let three = Spread::of(&[1.0, f64::NAN, 3.0, 2.0]).unwrap();
        assert_eq!(three.n, 3);
        assert!((three.confidence - 0.75).abs() < 1e-12);
        assert!(Spread::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn chance_of_unchanged_figures_looking_apart() {
        assert!((chance_apart(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((chance_apart(1, 1) - 1.0).abs() < 1e-12);
        assert!((chance_apart(3, 2) - 0.2).abs() < 1e-12);
        // 76 figures at 5 rounds a side: 0.6 expected, up to 2 at 95 %.
        assert_eq!(by_chance_at_most(76, chance_apart(5, 5)), 2);
        assert_eq!(by_chance_at_most(1, 0.001), 0);
        assert_eq!(by_chance_at_most(0, 0.5), 0);
    }

    #[test]
    fn overlap_is_inclusive() {
        let a = Spread::of(&[1.0, 2.0, 3.0]).unwrap();
        let b = Spread::of(&[3.0, 4.0, 5.0]).unwrap();
        let c = Spread::of(&[3.5, 4.0, 5.0]).unwrap();
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c));
    }

    #[test]
    fn coverage_matches_the_binomial() {
        // Simulated check of the formula for n = 9, k = 2: draw uniform samples, count how
        // often [x(2), x(8)] holds the true median 0.5.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let trials = 20_000;
        let mut hit = 0;
        for _ in 0..trials {
            let mut xs: Vec<f64> = (0..9).map(|_| next()).collect();
            xs.sort_by(f64::total_cmp);
            if xs[1] <= 0.5 && 0.5 <= xs[7] {
                hit += 1;
            }
        }
        let observed = f64::from(hit) / f64::from(trials);
        assert!((observed - coverage(9, 2)).abs() < 0.01, "{observed}");
        assert!((coverage(9, 2) - 0.9609375).abs() < 1e-12);
        // Thousands of pooled samples: no overflow, an interval near the middle.
        let xs: Vec<f64> = (0..5000).map(f64::from).collect();
        let s = Spread::of(&xs).unwrap();
        assert!(s.confidence >= 0.95 && s.confidence < 0.96, "{s:?}");
        assert!(s.lo > 2400.0 && s.hi < 2600.0, "{s:?}");
    }
}
