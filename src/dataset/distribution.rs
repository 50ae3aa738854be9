//! Key distributions, drawn the way sysbench 1.0 draws them (`--rand-type`), so figures line
//! up with published sysbench results: uniform, special (its default), gaussian, pareto,
//! zipfian.

use super::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// How keys are drawn from `1..=n`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    Uniform,
    /// sysbench's default: with `res`% probability (in steps of 1/(100/(100-res))) a key
    /// from the `pct`% of keys around the middle, else a gaussian key.
    Special,
    /// Mean of 12 uniform draws (sysbench's `rand-iter`).
    Gaussian,
    /// `n * u^power` with power = log(h)/log(1-h), h = 0.2 (sysbench's `rand-pareto-h`).
    Pareto,
    /// Key k with probability ∝ 1/k^0.8 (sysbench's `--rand-zipfian-exp` default), drawn by
    /// rejection-inversion (Hörmann & Derflinger) as sysbench draws it — `rand_distr`'s
    /// `Zipf`, pinned by the lockfile. Key 1 is the hottest, as in sysbench.
    Zipfian,
}

/// sysbench 1.0 defaults.
const RAND_ITER: u64 = 12;
const SPECIAL_PCT: u64 = 1;
const SPECIAL_RES: u64 = 75;
const PARETO_H: f64 = 0.2;
const ZIPFIAN_EXP: f64 = 0.8;

impl Distribution {
    pub const NAMES: &'static [&'static str] =
        &["uniform", "special", "gaussian", "pareto", "zipfian"];

    /// A key in `1..=n` (n ≥ 1).
    pub fn sample(self, rng: &mut SplitMix64, n: u64) -> u64 {
        let n = n.max(1);
        match self {
            Distribution::Uniform => 1 + rng.below_u64(n),
            Distribution::Gaussian => 1 + gaussian(rng, n),
            Distribution::Special => {
                if n == 1 {
                    return 1;
                }
                // Integer arithmetic exactly as sysbench: the range is widened 100/(100-res)
                // times; draws in the first part are gaussian, the rest map onto pct% of
                // the keys around the middle.
                let range = n * (100 / (100 - SPECIAL_RES));
                let res = rng.below_u64(range);
                if res < n {
                    return 1 + gaussian(rng, n);
                }
                let d = (n * SPECIAL_PCT / 100).max(1);
                1 + res % d + (n / 2 - n * SPECIAL_PCT / 200)
            }
            Distribution::Pareto => {
                let power = PARETO_H.ln() / (1.0 - PARETO_H).ln();
                let v = (n as f64 * rng.unit().powf(power)) as u64;
                1 + v.min(n - 1)
            }
            // Setting up the sampler is a few logarithms: cheap beside a query, and it keeps
            // a distribution a plain value (a hot loop keeps a [`Zipfian`] instead).
            Distribution::Zipfian => Zipfian::new(n).sample(rng),
        }
    }
}

/// sysbench's zipfian over `1..=n`, set up once for many draws.
#[derive(Debug, Clone, Copy)]
pub struct Zipfian {
    z: Option<rand_distr::Zipf<f64>>,
    n: u64,
}

impl Zipfian {
    pub fn new(n: u64) -> Self {
        let n = n.max(1);
        Zipfian {
            z: rand_distr::Zipf::new(n as f64, ZIPFIAN_EXP).ok(),
            n,
        }
    }

    /// A key in `1..=n`.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        match &self.z {
            Some(z) => (rand_distr::Distribution::sample(z, rng) as u64).clamp(1, self.n),
            None => 1,
        }
    }
}

fn gaussian(rng: &mut SplitMix64, n: u64) -> u64 {
    let sum: u64 = (0..RAND_ITER).map(|_| rng.below_u64(n)).sum();
    sum / RAND_ITER
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(d: Distribution, n: u64, draws: usize) -> Vec<u64> {
        let mut rng = SplitMix64::stream(7, 1);
        let mut h = vec![0u64; n as usize];
        for _ in 0..draws {
            let k = d.sample(&mut rng, n);
            assert!((1..=n).contains(&k), "{d:?} drew {k}");
            h[(k - 1) as usize] += 1;
        }
        h
    }

    #[test]
    fn special_puts_three_quarters_on_one_percent_in_the_middle() {
        let n = 10_000;
        let h = histogram(Distribution::Special, n, 200_000);
        // keys n/2 - n/200 .. n/2 + n/200 (1% of them) get res=75% of the draws
        let lo = (n / 2 - n / 200) as usize;
        let hot: u64 = h[lo..lo + (n / 100) as usize].iter().sum();
        let share = hot as f64 / 200_000.0;
        assert!((0.74..0.80).contains(&share), "{share}");
    }

    #[test]
    fn uniform_and_pareto_shapes() {
        let h = histogram(Distribution::Uniform, 10, 100_000);
        assert!(h.iter().all(|c| (9_000..11_000).contains(c)), "{h:?}");
        let h = histogram(Distribution::Pareto, 100, 100_000);
        let first20: u64 = h[..20].iter().sum();
        assert!(
            first20 > 70_000,
            "pareto puts most draws on the first keys: {first20}"
        );
        let h = histogram(Distribution::Gaussian, 100, 100_000);
        assert!(h[49] > h[5] * 5, "gaussian peaks in the middle");
    }

    #[test]
    fn zipfian_follows_its_power_law() {
        let (n, draws) = (1_000u64, 400_000usize);
        let h = histogram(Distribution::Zipfian, n, draws);
        // P(k) = k^-0.8 / H(n, 0.8).
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-0.8)).sum();
        for k in [1u64, 2, 10, 100] {
            let expected = (k as f64).powf(-0.8) / norm * draws as f64;
            let got = h[(k - 1) as usize] as f64;
            assert!(
                (got - expected).abs() < 5.0 * expected.sqrt() + 0.02 * expected,
                "key {k}: {got} draws, expected {expected:.0}"
            );
        }
        assert!(h[0] > h[1] && h[1] > h[9] && h[9] > h[99]);
        // Same seed, same keys.
        let mut a = SplitMix64::stream(3, 4);
        let mut b = SplitMix64::stream(3, 4);
        let xs: Vec<u64> = (0..50)
            .map(|_| Distribution::Zipfian.sample(&mut a, n))
            .collect();
        let ys: Vec<u64> = (0..50)
            .map(|_| Distribution::Zipfian.sample(&mut b, n))
            .collect();
        assert_eq!(xs, ys);
    }
}
