//! A seeded permutation of `1..=n` computed one position at a time, in constant memory: the
//! order in which a workload visits every key exactly once (activation codes are each looked
//! up about once), without a table of 10^9 keys.
//!
//! A four-round Feistel network on the smallest even number of bits that covers `n` is a
//! bijection of `0..2^bits`; positions it maps outside `0..n` are fed back in ("cycle
//! walking") until they land inside, which keeps it a bijection of `0..n`. Hand-written
//! because no maintained crate offers a seeded, stateless permutation of a range this size.

use super::rng::mix64;

/// A permutation of `1..=n` for one seed.
#[derive(Debug, Clone, Copy)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(seed: u64, n: u64) -> Self {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut keys = [0u64; 4];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = mix64(seed ^ mix64(i as u64 + 1));
        }
        Permutation { n, half_bits, keys }
    }

    /// Keys in the permutation.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The key at `position` (positions past `n` wrap around): each key of `1..=n` exactly
    /// once for positions `0..n`.
    pub fn key(&self, position: u64) -> u64 {
        let mut x = position % self.n;
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x + 1;
            }
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_every_key_once() {
        for n in [1u64, 2, 3, 7, 10, 1000, 4096, 65_537, 100_000] {
            let p = Permutation::new(9, n);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let k = p.key(i);
                assert!((1..=n).contains(&k), "n={n}: {k}");
                assert!(!seen[(k - 1) as usize], "n={n}: {k} twice");
                seen[(k - 1) as usize] = true;
            }
            assert_eq!(p.key(n), p.key(0), "positions wrap");
        }
    }

    #[test]
    fn is_shuffled_and_seeded() {
        let n = 10_000;
        let (a, b) = (Permutation::new(1, n), Permutation::new(2, n));
        let in_place = (0..n).filter(|&i| a.key(i) == i + 1).count();
        assert!(in_place < 20, "{in_place} keys stay in place");
        let same = (0..n).filter(|&i| a.key(i) == b.key(i)).count();
        assert!(same < 20, "{same} positions agree between seeds");
        // consecutive positions land far apart: not a sweep in disguise
        let near = (0..n - 1)
            .filter(|&i| a.key(i).abs_diff(a.key(i + 1)) < 10)
            .count();
        assert!(near < 50, "{near}");
    }
}
