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
        let k = interval_rank(n);
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

/// The rank k of the interval [`Spread::of`] gives for `n` samples, `[x(k), x(n+1-k)]`: the
/// largest (narrowest interval) whose coverage still reaches 95 %; k = 1 is min–max, as wide
/// as the samples allow. One pass over the binomial tail.
fn interval_rank(n: usize) -> usize {
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let (mut k, mut ln_c, mut tail) = (1, 0.0f64, 0.0f64);
    // coverage(k + 1) = 1 − 2·Σ_{j ≤ k} C(n, j)/2^n
    while k < n.div_ceil(2) {
        tail += (ln_c - ln2n).exp(); // adds C(n, k − 1)
        ln_c += ((n - (k - 1)) as f64).ln() - (k as f64).ln();
        if 1.0 - 2.0 * (tail + (ln_c - ln2n).exp()) < CONFIDENCE {
            break;
        }
        k += 1;
    }
    k
}

/// ln C(n, k).
fn ln_choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k)
        .map(|j| ((n - j) as f64).ln() - ((j + 1) as f64).ln())
        .sum()
}

/// How often two figures that did not change show their intervals (as [`Spread::of`] gives
/// them for `na` and `nb` samples) apart by chance alone, for exchangeable samples: one
/// side's upper end below the other's lower end, either way round. With ranks r = na + 1 − ka
/// and s = kb, A's interval lies below B's when at least r of the first r + s − 1 pooled
/// samples are A's — a hypergeometric tail. At 5 rounds a side (min–max) that is
/// 2 / C(10, 5), 1 in 126. Sample counts are capped at 100,000 (a run's file could claim more).
pub fn chance_apart(na: usize, nb: usize) -> f64 {
    let (na, nb) = (na.clamp(1, 100_000), nb.clamp(1, 100_000));
    let n = na + nb;
    let ln_all = ln_choose(n, na);
    // P(the upper end of side x lies below the lower end of side y)
    // Σ over i of C(first, i)·C(rest, nx − i) / C(n, nx), each term from the last one, so
    // the sum takes one pass whatever n is.
    let below = |nx: usize, kx: usize, ky: usize| -> f64 {
        let (r, s) = (nx + 1 - kx, ky);
        let first = r + s - 1;
        let rest = n - first;
        let lo = r.max(nx.saturating_sub(rest));
        let hi = nx.min(first);
        if lo > hi {
            return 0.0;
        }
        let mut ln_a = ln_choose(first, lo);
        let mut ln_b = ln_choose(rest, nx - lo);
        let mut sum = 0.0;
        for i in lo..=hi {
            sum += (ln_a + ln_b - ln_all).exp();
            if i < hi {
                // C(first, i+1) = C(first, i)·(first − i)/(i + 1);
                // C(rest, nx−i−1) = C(rest, nx−i)·(nx − i)/(rest − nx + i + 1), written so no
                // term goes below zero (i ≥ lo ≥ nx − rest) when the sides' counts differ.
                ln_a += ((first - i) as f64).ln() - ((i + 1) as f64).ln();
                ln_b += ((nx - i) as f64).ln() - ((rest + i + 1 - nx) as f64).ln();
            }
        }
        sum
    };
    let (ka, kb) = (interval_rank(na), interval_rank(nb));
    (below(na, ka, kb) + below(nb, kb, ka)).min(1.0)
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
        // Beyond 8 a side the interval narrows and apart-by-chance is likelier than min–max:
        // 10 + 10 (two pooled 5-round runs) by exhaustive enumeration, 0.0011.
        let p = chance_apart(10, 10);
        assert!(p > 0.0010 && p < 0.0012, "{p}");
        // The ranks agree with the intervals Spread::of gives.
        for n in [1usize, 5, 6, 8, 9, 20, 100] {
            let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let sp = Spread::of(&xs).unwrap();
            assert_eq!(sp.lo as usize, interval_rank(n) - 1, "n = {n}");
        }
        assert!(chance_apart(usize::MAX, usize::MAX) <= 1.0);
        // sides of different sizes (an auto run against its rerun): a probability, no panic
        for na in 1..=20 {
            for nb in 1..=20 {
                let p = chance_apart(na, nb);
                assert!((0.0..=1.0).contains(&p), "{na} {nb}: {p}");
                assert!((p - chance_apart(nb, na)).abs() < 1e-9, "{na} {nb}");
            }
        }
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
