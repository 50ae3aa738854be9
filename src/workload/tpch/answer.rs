//! A query's answer in a canonical form that engines can be compared by: rows of text cells,
//! numbers rounded to 4 decimals, dates without a time, CHAR padding trimmed; a digest of
//! the rows; and the comparison rule — same row count, rows in order, text cells equal,
//! numbers within 0.01 absolute or 1e-6 relative (a cent of money, or the relative error of
//! a sum kept in floating point on SQLite against an exact DECIMAL on the servers).

use crate::engine::Value;
use serde::{Deserialize, Serialize};

/// Rows kept in full in the results; beyond them only the count and the digest.
pub const KEPT_ROWS: usize = 200;

/// Numbers agree within this much absolutely…
pub const ABS_TOLERANCE: f64 = 0.01;
/// …or this much relatively.
pub const REL_TOLERANCE: f64 = 1e-6;

/// One query's answer, canonical.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub row_count: u64,
    pub columns: usize,
    /// FNV-1a 64 of the canonical rows (cells joined by tabs, rows by newlines), in hex.
    pub digest: String,
    /// The first [`KEPT_ROWS`] rows.
    pub rows: Vec<Vec<String>>,
}

/// One cell in its canonical text: NULL as `NULL`; a number as written with 4 decimals
/// (`-0.0000` as `0.0000`); a `YYYY-MM-DD 00:00:00` date as `YYYY-MM-DD`; text right-trimmed.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Int(n) => format!("{n}.0000"),
        Value::Text(t) => {
            let t = t.trim_end();
            if let Some(f) = number(t) {
                let s = format!("{f:.4}");
                if s == "-0.0000" {
                    "0.0000".to_string()
                } else {
                    s
                }
            } else if let Some(d) = t.strip_suffix(" 00:00:00") {
                d.to_string()
            } else {
                t.to_string()
            }
        }
    }
}

/// A cell's text as a number, when it is one: digits with a point and an exponent, a sign
/// only first or after the exponent's `e` (so neither a date nor a word such as `inf`).
fn number(t: &str) -> Option<f64> {
    let b = t.as_bytes();
    let shaped = b.iter().enumerate().all(|(i, c)| match c {
        b'0'..=b'9' | b'.' | b'e' | b'E' => true,
        b'-' | b'+' => i == 0 || matches!(b[i - 1], b'e' | b'E'),
        _ => false,
    });
    if !shaped || !b.iter().any(u8::is_ascii_digit) {
        return None;
    }
    t.parse().ok()
}

impl Answer {
    /// The canonical answer of `rows` rows whose cells are `values`, row after row.
    pub fn of(values: &[Value], rows: u64) -> Self {
        let columns = if rows == 0 {
            0
        } else {
            values.len() / rows as usize
        };
        let mut hash = 0xcbf2_9ce4_8422_2325_u64;
        let mut kept = Vec::new();
        for (i, row) in values.chunks(columns.max(1)).enumerate() {
            let cells: Vec<String> = row.iter().map(cell).collect();
            let line = cells.join("\t") + "\n";
            for b in line.bytes() {
                hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            if i < KEPT_ROWS {
                kept.push(cells);
            }
        }
        Answer {
            row_count: rows,
            columns,
            digest: format!("{hash:016x}"),
            rows: kept,
        }
    }

    /// Where `self` differs from `reference`, in words (`None`: they agree). Rows beyond
    /// those kept are compared by count only, and by digest when the kept rows all agree
    /// exactly.
    pub fn differs_from(&self, reference: &Answer) -> Option<String> {
        if self.row_count != reference.row_count {
            return Some(format!(
                "{} rows where the reference has {}",
                self.row_count, reference.row_count
            ));
        }
        for (i, (a, b)) in self.rows.iter().zip(&reference.rows).enumerate() {
            if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| !cells_agree(x, y)) {
                return Some(format!(
                    "row {}: [{}] where the reference has [{}]",
                    i + 1,
                    a.join(", "),
                    b.join(", ")
                ));
            }
        }
        None
    }
}

/// Two canonical cells agree: equal text, or numbers within the tolerance.
pub fn cells_agree(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => {
            let d = (x - y).abs();
            d <= ABS_TOLERANCE || d <= REL_TOLERANCE * x.abs().max(y.abs())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn cells_are_canonical_across_engines_forms() {
        assert_eq!(cell(&t("1995-03-15 00:00:00")), "1995-03-15");
        assert_eq!(cell(&t("1995-03-15")), "1995-03-15");
        assert_eq!(cell(&Value::Int(7)), "7.0000");
        assert_eq!(cell(&t("7")), "7.0000");
        assert_eq!(cell(&t("0.04999999999")), "0.0500");
        assert_eq!(cell(&t("Supplier#000000001   ")), "Supplier#000000001");
        assert_eq!(cell(&t("25-989-741-2988")), "25-989-741-2988");
        assert_eq!(cell(&t("inf")), "inf");
        assert_eq!(cell(&t("-12.5")), "-12.5000");
        assert_eq!(cell(&Value::Null), "NULL");
    }

    #[test]
    fn answers_agree_within_the_tolerance_and_name_the_first_differing_row() {
        let a = Answer::of(&[t("A"), t("100.004"), t("B"), t("2")], 2);
        let b = Answer::of(
            &[t("A"), Value::Text("100.0".into()), t("B"), Value::Int(2)],
            2,
        );
        assert_eq!(a.columns, 2);
        assert_eq!(a.differs_from(&b), None);
        let c = Answer::of(&[t("A"), t("100.0"), t("B"), t("3")], 2);
        let why = c.differs_from(&a).expect("differs");
        assert!(why.starts_with("row 2: [B, 3.0000]"), "{why}");
        let d = Answer::of(&[t("A"), t("100.0")], 1);
        assert!(d.differs_from(&a).expect("differs").contains("1 rows"));
        assert!(cells_agree("123456789.0000", "123456789.1000"));
        assert!(!cells_agree("1.0000", "1.0200"));
    }
}
