//! YCSB's `usertable`, as its JDBC binding creates it and its load fills it: a `ycsb_key`
//! (`user` and the record's number hashed, as YCSB's default `insertorder = hashed` names
//! it) and `field0` … `field9` of 100 random printable characters each, deterministic for a
//! seed. Records are numbered from 0 as YCSB's load numbers them, and written in key order
//! — the table YCSB's load makes, in the order the database keeps it — so every engine's
//! bulk path takes them (MyRocks' bulk load wants sorted keys; YCSB's load inserts them in
//! record order, which only its own load phase would time).

use super::rng::SplitMix64;
use super::{Column, ColumnType, col};
use std::io::{self, Write};

/// The table's name, YCSB's default (`table`).
pub const TABLE: &str = "usertable";
/// YCSB's defaults the dataset's records have: `fieldcount`, `fieldlength`, hashed keys
/// padded to `zeropadding` 1.
pub const FIELDS: usize = 10;
pub const FIELD_LENGTH: usize = 100;
pub const HASHED: bool = true;
pub const ZERO_PADDING: usize = 1;

/// YCSB's 64-bit FNV-1a over the eight bytes of `v`, lowest first, made non-negative as
/// Java's `Math.abs` makes it (`Utils.fnvhash64`).
pub fn fnv_hash64(v: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET_BASIS;
    let mut v = v;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    // Java's Math.abs(Long.MIN_VALUE) is Long.MIN_VALUE; as an unsigned value, 2^63.
    (h as i64).unsigned_abs()
}

/// The name of key number `n` as YCSB builds it (`CoreWorkload.buildKeyName`): `user` and
/// the number, hashed unless the inserts are ordered, left-padded with zeros to
/// `zero_padding` digits.
pub fn key_name(n: u64, hashed: bool, zero_padding: usize) -> String {
    let n = if hashed { fnv_hash64(n) } else { n };
    format!("user{n:0zero_padding$}")
}

/// The key and ten fields. Fields are TEXT, as YCSB's JDBC binding makes them.
pub const YCSB_COLUMNS: &[Column] = &[
    col("ycsb_key", ColumnType::Varchar(255), true, false),
    col("field0", ColumnType::Text, false, true),
    col("field1", ColumnType::Text, false, true),
    col("field2", ColumnType::Text, false, true),
    col("field3", ColumnType::Text, false, true),
    col("field4", ColumnType::Text, false, true),
    col("field5", ColumnType::Text, false, true),
    col("field6", ColumnType::Text, false, true),
    col("field7", ColumnType::Text, false, true),
    col("field8", ColumnType::Text, false, true),
    col("field9", ColumnType::Text, false, true),
];

/// What a field's characters are drawn from: 64 printable ASCII characters that need no
/// escaping in a TSV file, a SQL literal or JSON.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `len` random field characters from `rng` (ten characters a draw), each to `push`.
fn field_chars(rng: &mut SplitMix64, len: usize, mut push: impl FnMut(u8)) {
    let mut left = len;
    while left > 0 {
        let mut bits = rng.next_u64();
        for _ in 0..left.min(10) {
            push(ALPHABET[(bits & 63) as usize]);
            bits >>= 6;
        }
        left -= left.min(10);
    }
}

/// Append `len` random field characters to `out`.
pub fn fill_field(rng: &mut SplitMix64, len: usize, out: &mut Vec<u8>) {
    field_chars(rng, len, |b| out.push(b));
}

/// Append `len` random field characters to `out` (a run's updates and inserts).
pub fn fill_field_text(rng: &mut SplitMix64, len: usize, out: &mut String) {
    field_chars(rng, len, |b| out.push(char::from(b)));
}

/// A number whose order is that of `v`'s decimal digits as text (`\"12\" < \"123\" < \"13\"`),
/// so key names sort by it: each digit d is d + 1 in base 11, left-aligned in 20 places, and a
/// shorter number's empty places (0) sort first.
fn text_order(v: u64) -> u128 {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(v).as_bytes();
    (0..20).fold(0u128, |acc, i| {
        acc * 11 + text.get(i).map_or(0, |d| u128::from(d - b'0') + 1)
    })
}

/// The dataset: `rows` records.
#[derive(Debug, Clone, Copy)]
pub struct Ycsb {
    pub seed: u64,
    pub rows: u64,
}

impl Ycsb {
    /// Write the records as `ycsb_key\tfield0\t…\tfield9` lines, in key order, to `out` (a
    /// buffered writer: a line a write); returns bytes written. Holds each record's number
    /// and sort key (32 bytes a record) to order them.
    pub fn write_tsv<W: Write>(&self, mut out: W) -> io::Result<u64> {
        let mut order: Vec<(u128, u64)> = (0..self.rows)
            .map(|n| (text_order(if HASHED { fnv_hash64(n) } else { n }), n))
            .collect();
        order.sort_unstable();
        let mut row: Vec<u8> = Vec::with_capacity(2048);
        let mut bytes = 0u64;
        for (_, n) in order {
            let mut rng = SplitMix64::stream(self.seed, n);
            row.clear();
            row.extend_from_slice(key_name(n, HASHED, ZERO_PADDING).as_bytes());
            for _ in 0..FIELDS {
                row.push(b'\t');
                fill_field(&mut rng, FIELD_LENGTH, &mut row);
            }
            row.push(b'\n');
            out.write_all(&row)?;
            bytes += row.len() as u64;
        }
        out.flush()?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_ycsb_s_shape_and_deterministic() {
        let y = Ycsb { seed: 7, rows: 50 };
        let mut a = Vec::new();
        let mut b = Vec::new();
        y.write_tsv(&mut a).unwrap();
        y.write_tsv(&mut b).unwrap();
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 50);
        let first: Vec<&str> = lines[0].split('\t').collect();
        assert_eq!(first.len(), 1 + FIELDS);
        assert!(first[1..].iter().all(|f| f.len() == FIELD_LENGTH));
        assert_ne!(first[1], first[2]);
        let keys: Vec<&str> = lines
            .iter()
            .map(|l| l.split('\t').next().unwrap())
            .collect();
        // record 0 is among them, by its YCSB name; the keys are distinct and in order
        assert!(keys.contains(&"user6284781860667377211"));
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let mut numbers = [12u64, 123, 13, 9, 90, 1, u64::MAX];
        numbers.sort_by_key(|&v| text_order(v));
        let texts: Vec<String> = numbers.iter().map(|v| v.to_string()).collect();
        let mut sorted = texts.clone();
        sorted.sort();
        assert_eq!(texts, sorted);
    }
}
