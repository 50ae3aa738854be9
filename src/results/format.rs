//! How figures are written for people: units chosen to fit the value, three significant
//! digits, thousands separators. Reports, progress lines and step notes all write them so.

use crate::results::{StepSummary, Unit};

/// A value in its unit, e.g. `1.23 s`, `568 MiB`, `12,345/s`, `850 µs`.
pub fn value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => count(v),
        Unit::Seconds => seconds(v),
        Unit::Bytes => bytes(v.max(0.0) as u64),
        Unit::PerSecond => format!("{}/s", count(v)),
        Unit::Micros => micros(v),
        Unit::Percent => format!("{}%", sig3(v)),
        Unit::BytesPerSecond => format!("{} MB/s", sig3(v / 1e6)),
    }
}

/// A figure as reports print it: its value, and over repeated rounds the median with its
/// interval for the median, `208 ms [201–215 ms]` (the unit written once when both ends share it).
pub fn figure(m: &crate::results::Metric) -> String {
    let v = value(m.value, m.unit);
    let Some(s) = m.repeated().filter(|s| s.lo != s.hi) else {
        return v;
    };
    format!("{v} [{}]", range(s.lo, s.hi, m.unit))
}

/// `201–215 ms`; `1.2 KiB–3.4 MiB` when the ends' units differ.
pub fn range(lo: f64, hi: f64, unit: Unit) -> String {
    let (a, b) = (value(lo, unit), value(hi, unit));
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((na, ua)), Some((_, ub))) if ua == ub => format!("{na}–{b}"),
        _ => match (a.strip_suffix("/s"), b.ends_with("/s")) {
            (Some(na), true) => format!("{na}–{b}"),
            _ => format!("{a}–{b}"),
        },
    }
}

/// Integer with thousands separators (fractions below 100 keep 3 significant digits).
pub fn count(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v.abs() < 100.0 && v.fract() != 0.0 {
        return sig3(v);
    }
    let n = v.round() as i64;
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// Three significant digits without exponent.
fn sig3(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

pub fn seconds(s: f64) -> String {
    if s < 0.001 {
        format!("{} µs", sig3(s * 1e6))
    } else if s < 1.0 {
        format!("{} ms", sig3(s * 1e3))
    } else {
        format!("{} s", sig3(s))
    }
}

pub fn micros(us: f64) -> String {
    seconds(us / 1e6)
}

/// Binary units, as `ls -h` prints them.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{} {}", sig3(v), UNITS[i])
    }
}

/// A ratio with three significant digits (×0.0153, ×0.33, ×1.12).
pub fn ratio(r: f64) -> String {
    if r >= 1.0 {
        format!("{r:.2}")
    } else {
        let digits = (-r.log10()).floor().max(0.0) as usize + 3;
        format!("{r:.digits$}")
    }
}

/// One line saying what a step measured, for progress output.
pub fn headline(s: &StepSummary) -> String {
    s.metrics
        .iter()
        .map(|m| format!("{} {}", m.label, value(m.value, m.unit)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(641098.0), "641,098");
        assert_eq!(count(-1234.0), "-1,234");
        assert_eq!(count(2.5), "2.50");
        assert_eq!(seconds(70.123), "70.1 s");
        assert_eq!(seconds(0.58), "580 ms");
        assert_eq!(seconds(0.0000123), "12.3 µs");
        assert_eq!(bytes(568 * 1024 * 1024), "568 MiB");
        assert_eq!(bytes(26 * 1024 * 1024 + 300_000), "26.3 MiB");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(value(1500.0, Unit::Micros), "1.50 ms");
        assert_eq!(value(12345.4, Unit::PerSecond), "12,345/s");
    }
}
