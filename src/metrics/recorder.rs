//! A client thread's latency recorder for one tick: exactly the buckets of [`Hist`] (1 µs to
//! 1 h, 3 significant digits), but its counts live in small blocks allocated only where
//! latencies fall, and each tick is handed on as a sparse list of (bucket, count).
//!
//! Why not a `Hist` per client: an HdrHistogram's counts array spans its whole range
//! (23,552 counters, 184 KiB at `u64`) and is resident once written. One per op kind per
//! client per tick made 1,000 clients hold 1.5 GiB; hdrhistogram has no sparse form. A
//! client's latencies in one second fall in a few dozen buckets, so blocks of 256 counters
//! (1 KiB) cover them in a few KiB, and merging the sparse list into a `Hist` on the
//! collector records every sample in the very bucket `Hist::record` would have: percentiles,
//! max and mean of the merged histograms are unchanged (tested against hdrhistogram).

use super::hist::{Hist, MAX_US};

/// hdrhistogram's layout for a lowest discernible value of 1 and 3 significant digits:
/// 2,048 sub-buckets a bucket, the lower half of every bucket after the first shared with
/// the one before.
const SUB_HALF_MAG: u32 = 10;
const SUB_HALF: u64 = 1 << SUB_HALF_MAG;
const SUB_MASK: u64 = 2 * SUB_HALF - 1;
/// `64 - unit_magnitude - sub_bucket_half_count_magnitude - 1`.
const LEADING_ZERO_BASE: u32 = 64 - SUB_HALF_MAG - 1;

/// Counters per block.
const BLOCK: usize = 256;

/// The bucket index hdrhistogram gives `v`.
fn index_of(v: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (v | SUB_MASK).leading_zeros();
    let sub = v >> bucket;
    (((bucket as u64 + 1) << SUB_HALF_MAG) + sub - SUB_HALF) as usize
}

/// The lowest value of bucket index `i` (hdrhistogram's `value_for`).
fn value_at(i: usize) -> u64 {
    let i = i as u64;
    let bucket = i >> SUB_HALF_MAG;
    let sub = (i & (SUB_HALF - 1)) + SUB_HALF;
    if bucket == 0 {
        sub - SUB_HALF
    } else {
        sub << (bucket - 1)
    }
}

/// Buckets of a histogram whose highest trackable value is `MAX_US` (its last bucket runs
/// on to the next power of two).
fn buckets() -> usize {
    (index_of(MAX_US) / (SUB_HALF as usize) + 1) * SUB_HALF as usize
}

/// One tick of one op kind's latencies, as (bucket index, count), in bucket order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TickCounts(Vec<(u32, u32)>);

impl TickCounts {
    /// Samples in the tick.
    pub fn samples(&self) -> u64 {
        self.0.iter().map(|&(_, c)| c as u64).sum()
    }

    /// Add these samples to `h`, each in the bucket it was recorded in.
    pub fn add_to(&self, h: &mut Hist) {
        for &(i, c) in &self.0 {
            h.saturating_record_n(value_at(i as usize), c as u64);
        }
    }
}

/// A client thread's recorder for one op kind. Recording costs an index computation and
/// one increment; memory is 1 KiB per block of buckets in use (a block left empty for a
/// whole tick is freed), so it does not grow with the length of the run.
pub struct Recorder {
    blocks: Vec<Option<Box<[u32; BLOCK]>>>,
    /// The last bucket; a value beyond it is counted where `MAX_US` is, as `Hist` clamps.
    last: usize,
    clamped: usize,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

impl Recorder {
    pub fn new() -> Self {
        let last = buckets() - 1;
        Recorder {
            blocks: vec![None; last / BLOCK + 1],
            last,
            clamped: index_of(MAX_US),
        }
    }

    /// Count one latency of `us` microseconds.
    #[inline]
    pub fn record(&mut self, us: u64) {
        let mut i = index_of(us);
        if i > self.last {
            i = self.clamped;
        }
        let block = self.blocks[i / BLOCK].get_or_insert_with(|| Box::new([0; BLOCK]));
        // A counter can reach u32::MAX only with 4 billion samples in one tick.
        block[i % BLOCK] = block[i % BLOCK].saturating_add(1);
    }

    /// Add counts another recorder took (a client's tick, merged into the second's on the
    /// collector), each to the bucket it was counted in.
    pub fn add(&mut self, counts: &TickCounts) {
        for &(i, c) in &counts.0 {
            let i = (i as usize).min(self.last);
            let block = self.blocks[i / BLOCK].get_or_insert_with(|| Box::new([0; BLOCK]));
            block[i % BLOCK] = block[i % BLOCK].saturating_add(c);
        }
    }

    /// The tick's counts; the recorder starts the next tick empty, keeping the blocks that
    /// were used (they are likely to be used again) and freeing those that were not.
    pub fn take(&mut self) -> TickCounts {
        let mut out = Vec::new();
        for (b, slot) in self.blocks.iter_mut().enumerate() {
            let Some(block) = slot else { continue };
            let before = out.len();
            for (k, c) in block.iter_mut().enumerate() {
                if *c != 0 {
                    out.push(((b * BLOCK + k) as u32, *c));
                    *c = 0;
                }
            }
            if out.len() == before {
                *slot = None;
            }
        }
        TickCounts(out)
    }

    /// Bytes of counters held now (blocks in use), for tests and estimates.
    pub fn held_bytes(&self) -> usize {
        self.blocks.iter().flatten().count() * std::mem::size_of::<[u32; BLOCK]>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::rng::SplitMix64;
    use crate::metrics::{Latency, new_hist};

    #[test]
    fn buckets_are_hdrhistograms() {
        let h = new_hist();
        assert_eq!(buckets(), h.distinct_values(), "counts length");
        let mut rng = SplitMix64::stream(7, 0);
        let every_small = 0..70_000u64;
        let spread = (0..200_000).map(|_| (rng.next_u64() % (MAX_US + 1)) >> (rng.next_u64() % 32));
        for v in every_small.chain(spread).chain([MAX_US]) {
            let i = index_of(v);
            assert_eq!(value_at(i), h.lowest_equivalent(v), "lowest of {v}");
            assert!(h.equivalent(v, value_at(i)), "{v} and {}", value_at(i));
        }
    }

    #[test]
    fn merged_counts_equal_direct_recording() {
        let mut direct = new_hist();
        let mut merged = new_hist();
        let mut r = Recorder::new();
        let mut rng = SplitMix64::stream(11, 0);
        for tick in 0..5 {
            for _ in 0..20_000 {
                // latencies from 1 µs to far beyond the highest trackable value
                let v = (rng.next_u64() >> (rng.next_u64() % 64)).max(tick);
                direct.saturating_record(v);
                r.record(v);
            }
            let counts = r.take();
            assert_eq!(counts.samples(), 20_000);
            counts.add_to(&mut merged);
        }
        // (Compared without Debug: a histogram prints 23,552 counters.)
        assert!(
            direct == merged,
            "merged counts differ from direct recording"
        );
        assert_eq!(Latency::of(&direct), Latency::of(&merged));
        assert_eq!(direct.max(), merged.max());
    }

    #[test]
    fn counts_added_to_another_recorder_are_taken_back_the_same() {
        let mut client = Recorder::new();
        let mut second = Recorder::new();
        let mut rng = SplitMix64::stream(5, 0);
        let mut direct = new_hist();
        for _ in 0..3 {
            for _ in 0..5_000 {
                let v = rng.next_u64() >> (rng.next_u64() % 64);
                client.record(v);
                direct.saturating_record(v);
            }
            second.add(&client.take());
        }
        let mut merged = new_hist();
        second.take().add_to(&mut merged);
        assert!(
            direct == merged,
            "counts moved through a second recorder differ"
        );
    }

    #[test]
    fn memory_is_bounded_whatever_the_run_length_and_spread() {
        let mut r = Recorder::new();
        let mut rng = SplitMix64::stream(3, 0);
        // A tick whose latencies cover the whole range touches every block once: the most a
        // recorder can ever hold.
        for i in 0..buckets() {
            r.record(value_at(i));
        }
        let worst = r.held_bytes();
        assert!(worst <= 96 * 1024, "{worst} bytes");
        r.take();
        // A long run of typical ticks (100 µs .. 20 ms) holds a few blocks, not a histogram.
        for _ in 0..1_000 {
            for _ in 0..500 {
                r.record(100 + rng.below_u64(20_000));
            }
            r.take();
            assert!(r.held_bytes() <= 40 * 1024, "{} bytes", r.held_bytes());
        }
        // Blocks that go unused for a tick are given back.
        r.record(5);
        r.take();
        r.take();
        assert_eq!(r.held_bytes(), 0);
    }
}
