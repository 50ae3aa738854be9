//! Latency histograms and their summaries: each client records into its own sparse
//! [`Recorder`], whose counts are merged once per tick into HDR histograms; quantiles only
//! through `quantile`.

use serde::{Deserialize, Serialize};

mod hist;
mod recorder;
pub use hist::{Hist, MAX_US, new_hist};
pub use recorder::{Recorder, TickCounts};

/// The value at quantile `q` (0 ≤ q ≤ 1) in µs; 0 for an empty histogram.
pub fn quantile(h: &Hist, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q.clamp(0.0, 1.0))
    }
}

/// Add `from` into `into`. Both come from `new_hist`, so bounds always match.
pub fn merge(into: &mut Hist, from: &Hist) {
    // Histograms from new_hist share bounds; add only fails on mismatched bounds.
    let _ = into.add(from);
}

/// `h` in HdrHistogram's V2 compressed ("deflate") encoding, in base64: the form of the
/// HdrHistogram interval log, which other HdrHistogram tools read. Histograms written this
/// way by separate processes (a study's shards) add up exactly; a summary would not.
pub fn encode(h: &Hist) -> String {
    use base64::Engine as _;
    use hdrhistogram::serialization::Serializer as _;
    let mut bytes = Vec::new();
    // Serializing into a Vec fails only on a histogram too large to encode (more than
    // i32::MAX counts), which 1 µs–1 h at 3 digits is not.
    match hdrhistogram::serialization::V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        Err(e) => unreachable!("a latency histogram did not serialize: {e:?}"),
    }
}

/// A histogram from [`encode`]'s text, as a histogram of [`new_hist`]'s bounds (so it adds
/// to any other). The error says what was wrong with the text.
pub fn decode(text: &str) -> Result<Hist, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    let h: Hist = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e:?}"))?;
    let mut out = new_hist();
    out.add(&h)
        .map_err(|e| format!("a histogram beyond 1 µs–1 h: {e:?}"))?;
    Ok(out)
}

/// Latency summary of a histogram, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl Latency {
    /// Summary of `h`, or `None` when it holds no samples.
    pub fn of(h: &Hist) -> Option<Latency> {
        if h.is_empty() {
            return None;
        }
        Some(Latency {
            p50: quantile(h, 0.50),
            p95: quantile(h, 0.95),
            p99: quantile(h, 0.99),
            p999: quantile(h, 0.999),
            max: h.max(),
            mean: h.mean(),
        })
    }
}

/// Microseconds in a duration, at least 1 (the histogram's lowest value).
pub fn micros(d: std::time::Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn encoded_histograms_decode_to_the_same_counts_and_bad_text_says_why() {
        let mut h = new_hist();
        for v in [1, 7, 250, 9_999, 1_234_567, MAX_US] {
            h.record(v).expect("in range");
        }
        let text = encode(&h);
        assert!(
            text.is_ascii() && !text.contains('\n'),
            "one NDJSON field: {text}"
        );
        assert_eq!(decode(&text).expect("decodes"), h);
        assert!(
            decode("not base64!")
                .expect_err("bad")
                .contains("not base64")
        );
        assert!(decode("AAAA").expect_err("bad").contains("V2 encoding"));
    }

    use super::*;

    #[test]
    fn quantiles_of_known_values() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            h.saturating_record(v);
        }
        let l = Latency::of(&h).expect("non-empty");
        assert!((495..=505).contains(&l.p50), "{l:?}");
        assert!((985..=995).contains(&l.p99), "{l:?}");
        assert_eq!(l.max, 1000);
        assert_eq!(quantile(&new_hist(), 0.5), 0);
        assert!(Latency::of(&new_hist()).is_none());
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = new_hist();
        let mut b = new_hist();
        a.saturating_record(10);
        b.saturating_record(MAX_US * 2);
        merge(&mut a, &b);
        assert_eq!(a.len(), 2);
        assert!(a.max() >= MAX_US / 2);
    }
}
