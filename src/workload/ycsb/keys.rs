//! YCSB's key choosers and key names, as its `CoreWorkload` defines them, so a dbduel run
//! of workload A touches the keys YCSB's would: `uniform`; `zipfian` (Gray et al.'s
//! generator with YCSB's constant 0.99, scrambled over the key space by FNV-1a-64 as YCSB's
//! `ScrambledZipfianGenerator` does, so the hot keys are spread out and not the first
//! ones); `latest` (the newest keys hottest, following the inserts of the run); `hotspot`
//! (a share of the operations on a share of the keys); and the key names `user…` made from
//! hashed (or ordered) key numbers.
//!
//! Written here, not taken from a crate: no maintained Rust crate implements YCSB's
//! generators (the `zipf` crate draws a plain Zipf by rejection, not YCSB's sequence), and
//! what a run touches must be YCSB's to compare with its figures.

use crate::dataset::rng::SplitMix64;
pub use crate::dataset::ycsb::{fnv_hash64, key_name};

/// YCSB's zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item count YCSB's scrambled zipfian draws from before hashing into the key space
/// (`ScrambledZipfianGenerator.ITEM_COUNT`), and its zeta at [`ZIPFIAN_CONSTANT`], which
/// YCSB hard-codes rather than summing 10^10 terms (`ZETAN`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
/// YCSB's zipfian over `0..=SCRAMBLED_ITEMS` draws from one item more.
const SCRAMBLED_DRAWN: u64 = SCRAMBLED_ITEMS + 1;
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// ζ(n, θ) = Σ_{i=1..n} 1/i^θ, from `from` items already summed to `sum` (YCSB extends
/// its zeta this way when the item count grows).
fn zeta(from: u64, to: u64, theta: f64, sum: f64) -> f64 {
    (from..to).fold(sum, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

/// Gray et al.'s zipfian over `0..items` ("Quickly Generating Billion-Record Synthetic
/// Databases", SIGMOD 1994), as YCSB's `ZipfianGenerator`: item 0 is the most popular.
/// The item count may grow (`latest` follows the inserts); ζ is then extended, never
/// summed again from the start.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Over `0..items` (at least 1) with constant `theta` (0 < θ < 1).
    pub fn new(items: u64, theta: f64) -> Zipfian {
        let items = items.max(1);
        Zipfian::with_zeta(items, theta, zeta(0, items, theta, 0.0))
    }

    fn with_zeta(items: u64, theta: f64, zetan: f64) -> Zipfian {
        let zeta2 = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2,
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_now();
        z
    }

    fn eta_now(&self) -> f64 {
        (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Let the generator draw from `0..items` from now on (only growth: YCSB recomputes
    /// from scratch on shrinking, which no core workload does).
    pub fn grow_to(&mut self, items: u64) {
        if items > self.items {
            self.zetan = zeta(self.items, items, self.theta, self.zetan);
            self.items = items;
            self.eta = self.eta_now();
        }
    }

    /// The number of items drawn from.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// One draw in `0..items`.
    pub fn next(&self, rng: &mut SplitMix64) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let v = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.items - 1)
    }

    /// The probability of item `k` (0-based): 1/(k+1)^θ / ζ(n, θ), the theory the draws
    /// follow (for tests and the report's expectations).
    pub fn probability(&self, k: u64) -> f64 {
        1.0 / ((k + 1) as f64).powf(self.theta) / self.zetan
    }
}

/// How the operations of a run choose the record they touch (`requestdistribution`).
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// Every record alike.
    Uniform,
    /// Zipfian over 10^10 items, hashed into the records (`ScrambledZipfianGenerator`):
    /// popular records spread over the key space.
    Zipfian(Zipfian),
    /// The newest records hottest: record `last - z`, z zipfian over the records so far
    /// (`SkewedLatestGenerator`).
    Latest(Zipfian),
    /// `op_fraction` of the operations on the first `data_fraction` of the records, the
    /// rest on the others (`HotspotIntegerGenerator`).
    Hotspot {
        data_fraction: f64,
        op_fraction: f64,
    },
}

impl KeyChooser {
    /// A chooser over `records` loaded records: `latest` starts its zipfian there.
    pub fn new(distribution: RequestDistribution, records: u64) -> KeyChooser {
        match distribution {
            RequestDistribution::Uniform => KeyChooser::Uniform,
            RequestDistribution::Zipfian => KeyChooser::Zipfian(Zipfian::with_zeta(
                SCRAMBLED_DRAWN,
                ZIPFIAN_CONSTANT,
                SCRAMBLED_ZETAN,
            )),
            RequestDistribution::Latest => {
                KeyChooser::Latest(Zipfian::new(records.max(1), ZIPFIAN_CONSTANT))
            }
            RequestDistribution::Hotspot {
                data_fraction,
                op_fraction,
            } => KeyChooser::Hotspot {
                data_fraction,
                op_fraction,
            },
        }
    }

    /// The key number an operation touches, of `records` records that exist (numbers
    /// `0..records`: the loaded ones, then those the run's inserts acknowledged).
    /// YCSB's zipfian covers the records the run is expected to insert too and draws
    /// again past the last one; drawing modulo the records that exist is the same
    /// distribution over them.
    pub fn next(&mut self, rng: &mut SplitMix64, records: u64) -> u64 {
        let records = records.max(1);
        match self {
            KeyChooser::Uniform => rng.below_u64(records),
            KeyChooser::Zipfian(z) => fnv_hash64(z.next(rng)) % records,
            KeyChooser::Latest(z) => {
                z.grow_to(records);
                records - 1 - z.next(rng)
            }
            KeyChooser::Hotspot {
                data_fraction,
                op_fraction,
            } => {
                let hot = ((records as f64 * *data_fraction) as u64).clamp(1, records);
                let cold = records - hot;
                if cold == 0 || rng.unit() < *op_fraction {
                    rng.below_u64(hot)
                } else {
                    hot + rng.below_u64(cold)
                }
            }
        }
    }
}

/// `requestdistribution`, with `hotspot`'s two fractions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestDistribution {
    Uniform,
    Zipfian,
    Latest,
    Hotspot {
        data_fraction: f64,
        op_fraction: f64,
    },
}

/// How long a scan is (`scanlengthdistribution`, 1 to `maxscanlength`).
#[derive(Debug, Clone)]
pub enum ScanLength {
    Uniform {
        max: u64,
    },
    /// Zipfian over 1..=max: short scans most common (YCSB's `ZipfianGenerator(1, max)`).
    Zipfian(Zipfian),
}

impl ScanLength {
    pub fn next(&self, rng: &mut SplitMix64) -> u64 {
        match self {
            ScanLength::Uniform { max } => 1 + rng.below_u64((*max).max(1)),
            ScanLength::Zipfian(z) => 1 + z.next(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sampling error: a share p of n draws is within 4 standard deviations of p.
    fn within(seen: u64, n: u64, p: f64) -> bool {
        let share = seen as f64 / n as f64;
        (share - p).abs() <= 4.0 * (p * (1.0 - p) / n as f64).sqrt()
    }

    #[test]
    fn the_hottest_of_a_thousand_zipfian_items_takes_its_theoretical_share() {
        let z = Zipfian::new(1000, ZIPFIAN_CONSTANT);
        let mut rng = SplitMix64::stream(7, 1);
        let n = 200_000;
        let mut counts = vec![0u64; 1000];
        for _ in 0..n {
            counts[z.next(&mut rng) as usize] += 1;
        }
        // ζ(1000, 0.99) ≈ 7.73: item 0 takes about 12.9 %, item 1 about 6.5 %.
        let p0 = z.probability(0);
        assert!((0.125..0.135).contains(&p0), "{p0}");
        assert!(
            within(counts[0], n, p0),
            "{} of {n} against {p0}",
            counts[0]
        );
        assert!(within(counts[1], n, z.probability(1)), "{}", counts[1]);
        // and the tail: the last half of the items together, against the theory
        let tail: u64 = counts[500..].iter().sum();
        let p_tail: f64 = (500..1000).map(|k| z.probability(k)).sum();
        assert!(
            (tail as f64 / n as f64 - p_tail).abs() < 0.01,
            "{tail} {p_tail}"
        );
    }

    #[test]
    fn zeta_grown_step_by_step_equals_zeta_summed_at_once() {
        let mut z = Zipfian::new(10, ZIPFIAN_CONSTANT);
        z.grow_to(500);
        z.grow_to(1000);
        let fresh = Zipfian::new(1000, ZIPFIAN_CONSTANT);
        assert!((z.zetan - fresh.zetan).abs() < 1e-9);
        assert!((z.eta - fresh.eta).abs() < 1e-12);
        assert_eq!(z.items(), 1000);
    }

    #[test]
    fn ycsb_constants_agree_with_the_sum_they_stand_for() {
        // ζ(10^10, 0.99) is hard-coded by YCSB; the partial sum to 10^6 plus the integral
        // of the rest bounds it closely.
        let head = zeta(0, 1_000_000, ZIPFIAN_CONSTANT, 0.0);
        let a = 1.0 - ZIPFIAN_CONSTANT;
        let tail = ((SCRAMBLED_ITEMS as f64).powf(a) - 1e6f64.powf(a)) / a;
        assert!(
            (head + tail - SCRAMBLED_ZETAN).abs() < 0.01,
            "{}",
            head + tail
        );
    }

    #[test]
    fn scrambled_zipfian_keeps_its_skew_but_not_its_order() {
        let mut c = KeyChooser::new(RequestDistribution::Zipfian, 1000);
        let mut rng = SplitMix64::stream(3, 0);
        let mut counts = vec![0u64; 1000];
        for _ in 0..100_000 {
            counts[c.next(&mut rng, 1000) as usize] += 1;
        }
        let hottest = (0..1000).max_by_key(|&k| counts[k]).unwrap();
        // The most popular of 10^10 items (item 0) lands on key fnv(0) mod 1000.
        assert_eq!(hottest as u64, fnv_hash64(0) % 1000);
        // ζ over 10^10 items spreads more: item 0 alone has 1/ζ ≈ 3.8 %.
        // the other 10^10 items folded onto it add about 0.1 %.
        assert!(
            (3_600..4_300).contains(&counts[hottest]),
            "{}",
            counts[hottest]
        );
    }

    #[test]
    fn latest_follows_the_inserts() {
        let mut c = KeyChooser::new(RequestDistribution::Latest, 1000);
        let mut rng = SplitMix64::stream(5, 0);
        let mut records = 1000;
        for _ in 0..50 {
            records += 20;
            let mut newest = 0;
            for _ in 0..1000 {
                let k = c.next(&mut rng, records);
                assert!(k < records);
                if k == records - 1 {
                    newest += 1;
                }
            }
            // The newest record takes the zipfian's top share, about 13 % at this size.
            assert!(newest > 80, "{newest} of 1000 at {records} records");
        }
    }

    #[test]
    fn hotspot_sends_its_share_of_operations_to_its_share_of_records() {
        let mut c = KeyChooser::new(
            RequestDistribution::Hotspot {
                data_fraction: 0.2,
                op_fraction: 0.8,
            },
            10_000,
        );
        let mut rng = SplitMix64::stream(9, 0);
        let n = 100_000;
        let hot = (0..n).filter(|_| c.next(&mut rng, 10_000) < 2_000).count() as u64;
        assert!(within(hot, n, 0.8), "{hot}");
    }

    #[test]
    fn uniform_covers_every_record_alike() {
        let mut c = KeyChooser::new(RequestDistribution::Uniform, 100);
        let mut rng = SplitMix64::stream(1, 0);
        let mut counts = [0u64; 100];
        for _ in 0..100_000 {
            counts[c.next(&mut rng, 100) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&k| within(k, 100_000, 0.01)),
            "{counts:?}"
        );
    }

    #[test]
    fn key_names_are_ycsb_s() {
        // FNV-1a-64 of the eight bytes of 0, as YCSB's Utils.fnvhash64 computes it.
        // Key number 0 hashed: the first key a YCSB load of a hashed insert order writes.
        assert_eq!(key_name(0, true, 1), "user6284781860667377211");
        assert_eq!(key_name(7, false, 1), "user7");
        assert_eq!(key_name(7, false, 4), "user0007");
        assert!(key_name(7, true, 1).starts_with("user"));
        assert_ne!(key_name(7, true, 1), key_name(8, true, 1));
    }

    #[test]
    fn scan_lengths_stay_within_their_bounds() {
        let mut rng = SplitMix64::stream(2, 0);
        let u = ScanLength::Uniform { max: 100 };
        let z = ScanLength::Zipfian(Zipfian::new(100, ZIPFIAN_CONSTANT));
        for _ in 0..10_000 {
            assert!((1..=100).contains(&u.next(&mut rng)));
            assert!((1..=100).contains(&z.next(&mut rng)));
        }
    }
}
