//! The 40-table schema of the 2010 CUBRID-vs-MySQL storage study: tables `tbl_200`…, each
//! with fifteen columns (`id`, `seq`, short codes, long nullable text, three timestamps),
//! `PRIMARY KEY (id, seq)`, `UNIQUE (id, col3, col4, col5)` and `INDEX (id, col9 DESC,
//! col14)`. Every row is a pure function of `(seed, table, n)`, so a client can rebuild the
//! keys of any row to look it up, and a trickle of inserts goes on where the load stopped.

use super::digits::{format_datetime, format_u64};
use super::rng::{SplitMix64, mix64};
use super::{Column, ColumnType, col};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::LazyLock;

/// Columns in file order, as the seed declared them.
pub const TIERS40_COLUMNS: &[Column] = &[
    col("id", ColumnType::Varchar(20), true, false),
    col("seq", ColumnType::Integer, true, false),
    col("col3", ColumnType::Varchar(16), false, false),
    col("col4", ColumnType::Varchar(5), false, false),
    col("col5", ColumnType::Varchar(50), false, false),
    col("col6", ColumnType::Varchar(1000), false, true),
    col("col7", ColumnType::Varchar(300), false, false),
    col("col8", ColumnType::Varchar(150), false, true),
    col("col9", ColumnType::Timestamp, false, false),
    col("col10", ColumnType::SmallInt, false, false),
    col("col11", ColumnType::Timestamp, false, false),
    col("col12", ColumnType::Varchar(15), false, false),
    col("col13", ColumnType::Char(1), false, false),
    col("col14", ColumnType::Char(1), false, false),
    col("col15", ColumnType::Timestamp, false, false),
];

/// The seed's unique key, created with the table.
pub const UNIQUE_KEY: &[&str] = &["id", "col3", "col4", "col5"];
/// The seed's non-unique index, built after the load.
pub const INDEX: &[&str] = &["id", "col9 DESC", "col14"];

/// Rows share an `id` in runs of this many (`seq` 1..=8): a user with a few records.
pub const ROWS_PER_ID: u64 = 8;
/// The first table's number: the seed's tables are `tbl_200` … `tbl_239`.
pub const FIRST_TABLE: u64 = 200;
/// `col9` of row 0: 2009-07-01 00:00:00 UTC; rows follow ~5 s apart.
const FIRST_TIME: u64 = 1_246_406_400;
/// `col15`, the seed's column default: 04:25:44 PM 07/30/2009.
const COL15: &[u8] = b"2009-07-30 16:25:44";
/// The TSV spelling of NULL (LOAD DATA's and COPY's).
pub const NULL: &[u8] = b"\\N";

const COUNTRIES: &[&[u8]] = &[
    b"KR", b"US", b"JP", b"CN", b"DE", b"FR", b"GB", b"BR", b"IN", b"KR-SE", b"US-CA", b"JP-TK",
];
const NAMES: &[&[u8]] = &[
    b"kim", b"lee", b"park", b"choi", b"jung", b"kang", b"cho", b"yoon", b"jang", b"lim", b"smith",
    b"garcia", b"mueller", b"tanaka", b"wang", b"dubois",
];
const DOMAINS: &[&[u8]] = &[
    b"@example.com",
    b"@mail.example.net",
    b"@corp.example.org",
    b"@naver.example.kr",
    b"@daum.example.kr",
];
const WORDS: &[&str] = &[
    "account", "order", "payment", "shipped", "pending", "review", "customer", "note", "the", "of",
    "and", "to", "in", "request", "service", "delivery", "address", "changed", "updated", "refund",
    "item", "quantity", "price", "discount", "member", "level", "gold", "silver", "event",
    "coupon", "mobile", "web", "login", "session", "expired", "renewed", "status", "active",
    "closed", "message", "reply", "board", "post", "comment", "photo", "album",
];

/// Text the variable-length columns take slices of: words from [`WORDS`] in a fixed order,
/// ASCII with no tab, newline or backslash (a test checks), long enough for any slice.
static FILLER: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut rng = SplitMix64(0x7469_6572_7334_3030); // "tiers400"
    let mut v = Vec::with_capacity(FILLER_LEN + 16);
    while v.len() < FILLER_LEN {
        v.extend_from_slice(rng.pick(WORDS).as_bytes());
        v.push(b' ');
    }
    v.truncate(FILLER_LEN);
    v
});
const FILLER_LEN: usize = 16 * 1024;

/// The dataset: `tables` tables of `rows` rows each.
#[derive(Debug, Clone, Copy)]
pub struct Tiers40 {
    pub seed: u64,
    pub rows: u64,
    pub tables: u64,
}

/// The name of table `i` (0-based): `tbl_200`, `tbl_201`, …
pub fn table_name(i: u64) -> String {
    format!("tbl_{}", FIRST_TABLE + i)
}

impl Tiers40 {
    /// Append row `n` (0-based; any `n`, also past `rows`, for inserts) of table `table`
    /// (0-based) to `out` as one TSV line without its newline; NULL is `\N`.
    pub fn row(&self, table: u64, n: u64, out: &mut Vec<u8>) {
        let mut rng = SplitMix64::stream(self.seed ^ table.wrapping_mul(0xA24B_AED4_963E_E407), n);
        let mut num = [0u8; 20];
        let filler = &FILLER[..];
        let text = |out: &mut Vec<u8>, rng: &mut SplitMix64, min: u32, max: u32| {
            let len = (min + rng.below(max - min + 1)) as usize;
            let at = rng.below((FILLER_LEN - len) as u32) as usize;
            out.extend_from_slice(&filler[at..at + len]);
        };
        // id: u + ten digits, 8 rows an id; seq 1..=8
        push_id(out, n / ROWS_PER_ID);
        out.push(b'\t');
        out.extend_from_slice(format_u64(n % ROWS_PER_ID + 1, &mut num));
        out.push(b'\t');
        // col3: 16 hex digits of a bijection of (table, n), so the unique key never collides
        push_hex16(out, self.col3(table, n));
        out.push(b'\t');
        out.extend_from_slice(rng.pick(COUNTRIES));
        out.push(b'\t');
        // col5: an address-like 14..=44 characters
        out.extend_from_slice(rng.pick(NAMES));
        out.push(b'.');
        out.extend_from_slice(format_u64(rng.below_u64(10_000_000_000), &mut num));
        out.extend_from_slice(rng.pick(DOMAINS));
        out.push(b'\t');
        // col6: a long note, NULL a third of the time
        if rng.chance(33) {
            out.extend_from_slice(NULL);
        } else {
            text(out, &mut rng, 20, 400);
        }
        out.push(b'\t');
        text(out, &mut rng, 20, 120);
        out.push(b'\t');
        // col8: NULL half the time
        if rng.chance(50) {
            out.extend_from_slice(NULL);
        } else {
            text(out, &mut rng, 10, 60);
        }
        out.push(b'\t');
        let t9 = FIRST_TIME + n * 5 + rng.below(5) as u64;
        out.extend_from_slice(&format_datetime(t9));
        out.push(b'\t');
        out.extend_from_slice(format_u64(rng.below(10) as u64, &mut num));
        out.push(b'\t');
        out.extend_from_slice(&format_datetime(t9 + rng.below(86_400) as u64));
        out.push(b'\t');
        let ip = rng.next_u64();
        for (i, b) in [10, (ip >> 8) as u8, (ip >> 16) as u8, (ip >> 24) as u8]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                out.push(b'.');
            }
            out.extend_from_slice(format_u64(b as u64, &mut num));
        }
        out.push(b'\t');
        out.push(if rng.chance(80) { b'Y' } else { b'N' });
        out.push(b'\t');
        out.push(b"ABCDE"[rng.below(5) as usize]);
        out.push(b'\t');
        out.extend_from_slice(COL15);
    }

    fn col3(&self, table: u64, n: u64) -> u64 {
        mix64(n ^ mix64(self.seed ^ table))
    }

    /// Write table `table` (0-based) as TSV to `out`; returns bytes written.
    pub fn write_tsv<W: Write>(&self, table: u64, mut out: W) -> io::Result<u64> {
        let mut chunk = Vec::with_capacity(256 * 1024 + 2048);
        let mut bytes = 0u64;
        for n in 0..self.rows {
            self.row(table, n, &mut chunk);
            chunk.push(b'\n');
            if chunk.len() >= 256 * 1024 {
                out.write_all(&chunk)?;
                bytes += chunk.len() as u64;
                chunk.clear();
            }
        }
        out.write_all(&chunk)?;
        bytes += chunk.len() as u64;
        Ok(bytes)
    }

    /// Write table `table` (0-based) to the file `path`, synced; returns bytes written.
    pub fn write_tsv_file(&self, table: u64, path: &Path) -> io::Result<u64> {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let bytes = self.write_tsv(table, &mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(bytes)
    }
}

/// Append the `id` column's text of id number `id` (`u` and ten digits).
pub fn push_id(out: &mut Vec<u8>, id: u64) {
    let mut num = [0u8; 20];
    let digits = format_u64(id, &mut num);
    out.push(b'u');
    out.extend(std::iter::repeat_n(
        b'0',
        10usize.saturating_sub(digits.len()),
    ));
    out.extend_from_slice(digits);
}

fn push_hex16(out: &mut Vec<u8>, v: u64) {
    use super::digits::HEX;
    for i in (0..16).rev() {
        out.push(HEX[((v >> (i * 4)) & 15) as usize]);
    }
}

/// The fields of one TSV line (as [`Tiers40::row`] writes it), `None` for NULL.
pub fn fields(line: &[u8]) -> impl Iterator<Item = Option<&str>> {
    line.split(|&b| b == b'\t')
        .map(|f| (f != NULL).then(|| std::str::from_utf8(f).expect("generated rows are ASCII")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn line(g: &Tiers40, t: u64, n: u64) -> Vec<u8> {
        let mut v = Vec::new();
        g.row(t, n, &mut v);
        v
    }

    #[test]
    fn rows_are_deterministic_well_formed_and_keyed_as_the_schema_says() {
        let g = Tiers40 {
            seed: 7,
            rows: 5_000,
            tables: 40,
        };
        let mut pk = HashSet::new();
        let mut uk = HashSet::new();
        let mut last = (String::new(), 0);
        for n in 0..5_000 {
            let l = line(&g, 3, n);
            assert_eq!(l, line(&g, 3, n), "deterministic");
            assert!(l.iter().all(|&b| b.is_ascii() && b != b'\n' && b != b'\r'));
            let f: Vec<Option<&str>> = fields(&l).collect();
            assert_eq!(f.len(), TIERS40_COLUMNS.len());
            for (c, v) in TIERS40_COLUMNS.iter().zip(&f) {
                match v {
                    None => assert!(c.nullable, "{} is NULL", c.name),
                    Some(v) => {
                        if let ColumnType::Varchar(max) | ColumnType::Char(max) = c.ty {
                            assert!(v.len() <= max as usize, "{} = {v:?}", c.name);
                        }
                        assert!(!v.contains('\\'), "{} = {v:?}", c.name);
                    }
                }
            }
            let (id, seq) = (
                f[0].unwrap().to_string(),
                f[1].unwrap().parse::<u64>().unwrap(),
            );
            // the load's order is the primary key's (MyRocks' bulk load needs it)
            assert!((id.clone(), seq) > last, "{id} {seq} after {last:?}");
            last = (id.clone(), seq);
            assert!(pk.insert((id.clone(), seq)));
            let key: Vec<String> = f[2..5].iter().map(|v| v.unwrap().to_string()).collect();
            assert!(uk.insert((id, key)));
        }
        assert_ne!(line(&g, 3, 10), line(&g, 4, 10), "tables differ");
        let other = Tiers40 { seed: 8, ..g };
        assert_ne!(line(&g, 3, 10), line(&other, 3, 10), "seeds differ");
        let l = line(&g, 0, 17);
        let f: Vec<Option<&str>> = fields(&l).collect();
        assert_eq!((f[0], f[1]), (Some("u0000000002"), Some("2")));
        assert_eq!(f[14], Some("2009-07-30 16:25:44"));
        assert_eq!(table_name(39), "tbl_239");
    }

    #[test]
    fn nulls_and_lengths_are_plausible() {
        let g = Tiers40 {
            seed: 1,
            rows: 20_000,
            tables: 1,
        };
        let mut buf = Vec::new();
        let bytes = g.write_tsv(0, &mut buf).unwrap();
        assert_eq!(bytes as usize, buf.len());
        let lines: Vec<&[u8]> = buf
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 20_000);
        let nulls6 = lines
            .iter()
            .filter(|l| fields(l).nth(5).unwrap().is_none())
            .count();
        assert!((6_000..7_200).contains(&nulls6), "{nulls6}");
        let mean = buf.len() / lines.len();
        assert!((250..450).contains(&mean), "{mean} bytes a row");
        assert!(FILLER.iter().all(|&b| b.is_ascii_lowercase() || b == b' '));
    }
}
