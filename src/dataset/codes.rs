//! Activation codes, the table of the MySQL-vs-MongoDB study (seed 004): an integer key `1..=rows`,
//! a 16-symbol code, its batch, a status and two Unix timestamps, deterministic for a seed
//! and cheap enough to generate at several million rows a second on one core.

use super::rng::mix64;
use super::{Column, ColumnType};
use std::io::{self, BufWriter, Write};
use std::path::Path;

const fn col(name: &'static str, ty: ColumnType, primary_key: bool) -> Column {
    Column {
        name,
        ty,
        primary_key,
        nullable: false,
        auto_increment: false,
    }
}

/// Columns of the codes table, in file order. Timestamps are Unix seconds, so every engine
/// stores them the same way (an integer) and no engine's date parsing sits in the load.
pub const CODES_COLUMNS: &[Column] = &[
    col("id", ColumnType::Integer, true),
    col("code", ColumnType::Char(CODE_LEN as u16), false),
    col("batch", ColumnType::Integer, false),
    col("status", ColumnType::Integer, false),
    col("created_at", ColumnType::Integer, false),
    col("expires_at", ColumnType::Integer, false),
];

/// Symbols of a code: Crockford's base 32 (no I, L, O, U: nothing to misread).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// `XXXX-XXXX-XXXX-XXXX`.
pub const CODE_LEN: usize = 19;
/// Codes are issued in batches of this many consecutive ids.
pub const BATCH_ROWS: u64 = 100_000;
/// The first code is created at 2020-01-01T00:00:00Z; the rest over the next five years.
const FIRST_CREATED: u64 = 1_577_836_800;
const CREATION_SPAN_S: u64 = 5 * 365 * 86_400;
/// Statuses: 0 issued (70 %), 1 redeemed (25 %), 2 void (5 %).
pub const STATUSES: u64 = 3;

/// The codes dataset: one table of `rows` codes.
#[derive(Debug, Clone, Copy)]
pub struct Codes {
    pub seed: u64,
    pub rows: u64,
}

/// One row's values (the code is written straight into the output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub id: u64,
    pub batch: u64,
    pub status: u64,
    pub created_at: u64,
    pub expires_at: u64,
}

impl Codes {
    /// Row `id` (1-based): its fields, with the code's 19 bytes in `code`.
    pub fn row(&self, id: u64, code: &mut [u8; CODE_LEN]) -> Row {
        let a = mix64(self.seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let b = mix64(a ^ self.seed.rotate_left(17));
        // 80 bits: 60 from `a`, 20 from `b`; the rest of `b` picks the status and validity.
        let mut k = 0;
        for (s, slot) in code.iter_mut().enumerate() {
            if s % 5 == 4 {
                *slot = b'-';
                continue;
            }
            let v = if k < 12 {
                a >> (k * 5)
            } else {
                b >> ((k - 12) * 5)
            };
            *slot = ALPHABET[(v & 31) as usize];
            k += 1;
        }
        let r = (b >> 20) % 100;
        let status = match r {
            0..70 => 0,
            70..95 => 1,
            _ => 2,
        };
        let created_at = FIRST_CREATED
            + ((u128::from(id - 1) * u128::from(CREATION_SPAN_S)) / u128::from(self.rows.max(1)))
                as u64;
        let valid_days = 365 * (1 + (b >> 40) % 2);
        Row {
            id,
            batch: (id - 1) / BATCH_ROWS + 1,
            status,
            created_at,
            expires_at: created_at + valid_days * 86_400,
        }
    }

    /// Write the table as `id\tcode\tbatch\tstatus\tcreated_at\texpires_at` lines to `out`;
    /// returns bytes written.
    pub fn write_tsv<W: Write>(&self, mut out: W) -> io::Result<u64> {
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        let mut ints = itoa::Buffer::new();
        let mut code = [0u8; CODE_LEN];
        let mut bytes = 0u64;
        for id in 1..=self.rows {
            let r = self.row(id, &mut code);
            buf.extend_from_slice(ints.format(r.id).as_bytes());
            buf.push(b'\t');
            buf.extend_from_slice(&code);
            for v in [r.batch, r.status, r.created_at, r.expires_at] {
                buf.push(b'\t');
                buf.extend_from_slice(ints.format(v).as_bytes());
            }
            buf.push(b'\n');
            if buf.len() > (1 << 16) - 128 {
                out.write_all(&buf)?;
                bytes += buf.len() as u64;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        bytes += buf.len() as u64;
        out.flush()?;
        Ok(bytes)
    }

    /// Write the table to a file at `path` (created or truncated), synced; returns bytes.
    pub fn write_tsv_file(&self, path: &Path) -> io::Result<u64> {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let bytes = self.write_tsv(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_deterministic_and_well_formed() {
        let c = Codes {
            seed: 42,
            rows: 1_000_000,
        };
        let mut code = [0u8; CODE_LEN];
        let mut again = [0u8; CODE_LEN];
        let mut statuses = [0u64; STATUSES as usize];
        let mut last_created = 0;
        for id in 1..=20_000 {
            let r = c.row(id, &mut code);
            assert_eq!(c.row(id, &mut again), r);
            assert_eq!(code, again);
            assert_eq!(r.id, id);
            let s = std::str::from_utf8(&code).expect("ascii");
            let groups: Vec<&str> = s.split('-').collect();
            assert_eq!(groups.len(), 4, "{s}");
            assert!(
                groups
                    .iter()
                    .all(|g| g.len() == 4 && g.bytes().all(|b| ALPHABET.contains(&b)))
            );
            assert!(r.created_at >= last_created, "created_at grows with id");
            last_created = r.created_at;
            assert!(r.expires_at > r.created_at);
            statuses[r.status as usize] += 1;
        }
        // 70 / 25 / 5 %
        assert!((13_500..14_500).contains(&statuses[0]), "{statuses:?}");
        assert!((4_500..5_500).contains(&statuses[1]), "{statuses:?}");
        // another seed, other codes
        let other = Codes { seed: 43, ..c };
        other.row(1, &mut again);
        c.row(1, &mut code);
        assert_ne!(code, again);
        assert_eq!(c.row(BATCH_ROWS + 1, &mut code).batch, 2);
    }

    #[test]
    fn tsv_has_six_fields_a_row_of_about_fifty_bytes() {
        let c = Codes {
            seed: 1,
            rows: 1000,
        };
        let mut out = Vec::new();
        let bytes = c.write_tsv(&mut out).expect("write");
        assert_eq!(bytes as usize, out.len());
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert!(
            lines
                .iter()
                .all(|l| l.split('\t').count() == CODES_COLUMNS.len())
        );
        assert!(lines[999].starts_with("1000\t"));
        assert!((45..65).contains(&(bytes / 1000)), "{bytes}");
    }
}
