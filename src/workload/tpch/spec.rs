//! The TPC-H specification's numbers the power and throughput steps follow: the order each
//! query stream runs the 22 queries in (Appendix A), the fewest query streams a throughput
//! test has at a scale factor (clause 5.3.4), and the formulas of Power@Size,
//! Throughput@Size and QphH@Size (clause 5.4). Pure functions; every figure is TPC-H-like,
//! not audited.

/// Appendix A: the order stream `s` (row `s`; 0 is the power test's stream) runs the
/// queries in. The specification lists streams 0 to 40; later streams start again at 0.
const ORDERS: [[u8; 22]; 41] = [
    [
        14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12,
    ],
    [
        21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4,
    ],
    [
        6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21,
    ],
    [
        8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3,
    ],
    [
        5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20,
    ],
    [
        21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9,
    ],
    [
        10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21,
    ],
    [
        18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12,
    ],
    [
        19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11,
    ],
    [
        8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16,
    ],
    [
        6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5,
    ],
    [
        15, 14, 18, 17, 10, 20, 16, 11, 1, 8, 4, 22, 5, 12, 3, 9, 21, 2, 13, 6, 19, 7,
    ],
    [
        1, 7, 16, 17, 18, 22, 12, 6, 8, 9, 11, 4, 2, 5, 20, 21, 13, 10, 19, 3, 14, 15,
    ],
    [
        21, 17, 7, 3, 1, 10, 12, 22, 9, 16, 6, 11, 2, 4, 5, 14, 8, 20, 13, 18, 15, 19,
    ],
    [
        2, 9, 5, 4, 18, 1, 20, 15, 16, 17, 7, 21, 13, 14, 19, 8, 22, 11, 10, 3, 12, 6,
    ],
    [
        16, 9, 17, 8, 14, 11, 10, 12, 6, 21, 7, 3, 15, 5, 22, 20, 1, 13, 19, 2, 4, 18,
    ],
    [
        1, 3, 6, 5, 2, 16, 14, 22, 17, 20, 4, 9, 10, 11, 15, 8, 12, 19, 18, 13, 7, 21,
    ],
    [
        3, 16, 5, 11, 21, 9, 2, 15, 10, 18, 17, 7, 8, 19, 14, 13, 1, 4, 22, 20, 6, 12,
    ],
    [
        14, 4, 13, 5, 21, 11, 8, 6, 3, 17, 2, 20, 1, 19, 10, 9, 12, 18, 15, 7, 22, 16,
    ],
    [
        4, 12, 22, 14, 5, 15, 16, 2, 8, 10, 17, 9, 21, 7, 3, 6, 13, 18, 11, 20, 19, 1,
    ],
    [
        16, 15, 14, 13, 4, 22, 18, 19, 7, 1, 12, 17, 5, 10, 20, 3, 9, 21, 11, 2, 6, 8,
    ],
    [
        20, 14, 21, 12, 15, 17, 4, 19, 13, 10, 11, 1, 16, 5, 18, 7, 8, 22, 9, 6, 3, 2,
    ],
    [
        16, 14, 13, 2, 21, 10, 11, 4, 1, 22, 18, 12, 19, 5, 7, 8, 6, 3, 15, 20, 9, 17,
    ],
    [
        18, 15, 9, 14, 12, 2, 8, 11, 22, 21, 16, 1, 6, 17, 5, 10, 19, 4, 20, 13, 3, 7,
    ],
    [
        7, 3, 10, 14, 13, 21, 18, 6, 20, 4, 9, 8, 22, 15, 2, 1, 5, 12, 19, 17, 11, 16,
    ],
    [
        18, 1, 13, 7, 16, 10, 14, 2, 19, 5, 21, 11, 22, 15, 8, 17, 20, 3, 4, 12, 6, 9,
    ],
    [
        13, 2, 22, 5, 11, 21, 20, 14, 7, 10, 4, 9, 19, 18, 6, 3, 1, 8, 15, 12, 17, 16,
    ],
    [
        14, 17, 21, 8, 2, 9, 6, 4, 5, 13, 22, 7, 15, 3, 1, 18, 16, 11, 10, 12, 20, 19,
    ],
    [
        10, 22, 1, 12, 13, 18, 21, 20, 2, 14, 16, 7, 15, 3, 4, 17, 5, 19, 6, 8, 9, 11,
    ],
    [
        10, 8, 9, 18, 12, 6, 1, 5, 20, 11, 17, 22, 16, 3, 13, 2, 15, 21, 14, 19, 7, 4,
    ],
    [
        7, 17, 22, 5, 3, 10, 13, 18, 9, 1, 14, 15, 21, 19, 16, 12, 8, 6, 11, 20, 4, 2,
    ],
    [
        2, 9, 21, 3, 4, 7, 1, 11, 16, 5, 20, 19, 18, 8, 17, 13, 10, 12, 15, 6, 14, 22,
    ],
    [
        15, 12, 8, 4, 22, 13, 16, 17, 18, 3, 7, 5, 6, 1, 9, 11, 21, 10, 14, 20, 19, 2,
    ],
    [
        15, 16, 2, 11, 17, 7, 5, 14, 20, 4, 21, 3, 10, 9, 12, 8, 13, 6, 18, 19, 22, 1,
    ],
    [
        1, 13, 11, 3, 4, 21, 6, 14, 15, 22, 18, 9, 7, 5, 10, 20, 12, 16, 17, 8, 19, 2,
    ],
    [
        14, 17, 22, 20, 8, 16, 5, 10, 1, 13, 2, 21, 12, 9, 4, 18, 3, 7, 6, 19, 15, 11,
    ],
    [
        9, 17, 7, 4, 5, 13, 21, 18, 11, 3, 22, 1, 6, 16, 20, 14, 15, 10, 8, 2, 12, 19,
    ],
    [
        13, 14, 5, 22, 19, 11, 9, 6, 18, 15, 8, 10, 7, 4, 17, 16, 3, 1, 12, 2, 21, 20,
    ],
    [
        20, 5, 4, 14, 11, 1, 6, 16, 8, 22, 7, 3, 2, 12, 21, 19, 17, 13, 10, 15, 18, 9,
    ],
    [
        3, 7, 14, 15, 6, 5, 21, 20, 18, 10, 4, 16, 19, 1, 13, 9, 8, 17, 11, 12, 22, 2,
    ],
    [
        13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19,
    ],
];

/// The order query stream `stream` runs the 22 queries in (0: the power test's).
pub fn stream_order(stream: u32) -> [u8; 22] {
    ORDERS[stream as usize % ORDERS.len()]
}

/// The fewest query streams a throughput test has at scale factor `sf` (clause 5.3.4:
/// SF 1 → 2, 10 → 3, 30 → 4, 100 → 5, 300 → 6, 1000 → 7, ...); 2 below SF 1.
pub fn min_streams(sf: f64) -> u32 {
    const TABLE: [(f64, u32); 9] = [
        (100_000.0, 11),
        (30_000.0, 10),
        (10_000.0, 9),
        (3_000.0, 8),
        (1_000.0, 7),
        (300.0, 6),
        (100.0, 5),
        (30.0, 4),
        (10.0, 3),
    ];
    TABLE
        .iter()
        .find(|(at, _)| sf >= *at - 1e-9)
        .map_or(2, |(_, s)| *s)
}

/// Power@Size (clause 5.4.1): 3600 × SF over the geometric mean of the 22 queries' and the
/// two refresh functions' seconds (24 terms). A query's seconds below a thousandth of the
/// longest query's count as that (clause 5.4.1.4). `None` unless there are 22 queries.
pub fn power_at_size(sf: f64, queries_s: &[f64], rf1_s: f64, rf2_s: f64) -> Option<f64> {
    if queries_s.len() != 22 {
        return None;
    }
    let longest = queries_s.iter().copied().fold(0.0, f64::max);
    let floor = (longest / 1000.0).max(f64::MIN_POSITIVE);
    let mut logs: f64 = queries_s.iter().map(|s| s.max(floor).ln()).sum();
    logs += rf1_s.max(f64::MIN_POSITIVE).ln() + rf2_s.max(f64::MIN_POSITIVE).ln();
    Some(3600.0 * sf / (logs / 24.0).exp())
}

/// Throughput@Size (clause 5.4.2): S × 22 × 3600 / Ts × SF, Ts in seconds.
pub fn throughput_at_size(sf: f64, streams: u32, ts_s: f64) -> Option<f64> {
    (ts_s > 0.0).then(|| f64::from(streams) * 22.0 * 3600.0 / ts_s * sf)
}

/// QphH@Size (clause 5.4.3): the geometric mean of Power@Size and Throughput@Size.
pub fn qphh_at_size(power: f64, throughput: f64) -> f64 {
    (power * throughput).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of Appendix A as the specification prints them.
    #[test]
    fn streams_run_appendix_as_orders() {
        assert_eq!(
            stream_order(0),
            [
                14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12
            ]
        );
        assert_eq!(
            stream_order(1),
            [
                21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4
            ]
        );
        assert_eq!(
            stream_order(5),
            [
                21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9
            ]
        );
        assert_eq!(
            stream_order(40),
            [
                13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19
            ]
        );
        assert_eq!(stream_order(41), stream_order(0));
        for s in 0..41 {
            let mut q = stream_order(s).to_vec();
            q.sort_unstable();
            assert_eq!(q, (1..=22).collect::<Vec<u8>>(), "stream {s}");
        }
    }

    #[test]
    fn the_fewest_streams_follow_clause_5_3_4() {
        let got: Vec<u32> = [0.01, 0.1, 1.0, 10.0, 30.0, 100.0, 300.0, 1000.0]
            .iter()
            .map(|&sf| min_streams(sf))
            .collect();
        assert_eq!(got, [2, 2, 2, 3, 4, 5, 6, 7]);
    }

    /// By hand: 22 queries of 2 s and RF1 = RF2 = 2 s: geomean 2, Power = 3600 × 10 / 2;
    /// 2 streams of 22 queries in 3600 s at SF 10: 2 × 22 × 3600 / 3600 × 10 = 440;
    /// QphH = √(18000 × 440) = √7,920,000.
    #[test]
    fn the_metrics_are_the_specifications_formulas() {
        let p = power_at_size(10.0, &[2.0; 22], 2.0, 2.0).expect("22");
        assert!((p - 18_000.0).abs() < 1e-6, "{p}");
        // 21 queries of 1 s, one of 8 s, RF1 4 s, RF2 1 s: geomean = (8 × 4)^(1/24) = 2^(5/24)
        let mut q = [1.0; 22];
        q[3] = 8.0;
        let p = power_at_size(1.0, &q, 4.0, 1.0).expect("22");
        assert!((p - 3600.0 / 2f64.powf(5.0 / 24.0)).abs() < 1e-9, "{p}");
        // a query under a thousandth of the longest counts as that
        let mut q = [1.0; 22];
        q[0] = 1e-6;
        let floored = power_at_size(1.0, &q, 1.0, 1.0).expect("22");
        assert!((floored - 3600.0 / 0.001f64.powf(1.0 / 24.0)).abs() < 1e-6);
        assert_eq!(power_at_size(1.0, &[1.0; 21], 1.0, 1.0), None);
        let t = throughput_at_size(10.0, 2, 3600.0).expect("Ts > 0");
        assert!((t - 440.0).abs() < 1e-9, "{t}");
        assert_eq!(throughput_at_size(1.0, 2, 0.0), None);
        let qphh = qphh_at_size(18_000.0, 440.0);
        assert!((qphh - 7_920_000f64.sqrt()).abs() < 1e-9);
        assert!((qphh_at_size(100.0, 400.0) - 200.0).abs() < 1e-12);
    }
}
