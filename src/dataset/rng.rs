//! The deterministic random numbers every generator and workload draws from.

/// SplitMix64 (Steele, Lea & Flood 2014), hand-written rather than taken from the `rand`
/// crate on purpose: each row seeds its own stream from `(seed, i)` in a couple of
/// nanoseconds with no allocation, which gives per-row random access; and the algorithm is
/// frozen here, so a seed names the same dataset forever, whatever crate versions change.
#[derive(Debug, Clone, Copy)]
pub struct SplitMix64(pub u64);

pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijective 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix64(self.0)
    }

    /// Uniform in `0..n` (multiply-shift, no division; bias below 2^-32 is irrelevant).
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }

    /// Uniform in `0..n` for 64-bit `n`.
    pub fn below_u64(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// One element of a non-empty static table.
    pub fn pick<T: Copy>(&mut self, table: &[T]) -> T {
        table[self.below(table.len() as u32) as usize]
    }

    /// True with probability `percent / 100`.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }
}

/// So samplers from `rand_distr` (sysbench's zipfian) can draw from our streams.
impl rand_core::RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        (SplitMix64::next_u64(self) >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        SplitMix64::next_u64(self)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        rand_core::impls::fill_bytes_via_next(self, dst)
    }
}

impl SplitMix64 {
    /// A stream for `(seed, stream)`: independent streams from one seed, e.g. one per
    /// row, table or client.
    pub fn stream(seed: u64, stream: u64) -> Self {
        SplitMix64(mix64(seed ^ mix64(stream.wrapping_add(GOLDEN_GAMMA))))
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
