//! The latency histogram's shape: microseconds, 1 µs to 1 hour, 3 significant digits; every
//! histogram of a run is made here so any two add up.

/// Latency histogram in microseconds, 1 µs to 1 hour, 3 significant digits.
pub type Hist = hdrhistogram::Histogram<u64>;

/// Highest trackable latency, µs (larger values saturate to it).
pub const MAX_US: u64 = 3_600_000_000;

/// A new, empty latency histogram.
pub fn new_hist() -> Hist {
    match Hist::new_with_bounds(1, MAX_US, 3) {
        Ok(h) => h,
        // The bounds are constants that hdrhistogram accepts; this arm is unreachable.
        Err(e) => unreachable!("constant histogram bounds rejected: {e}"),
    }
}
