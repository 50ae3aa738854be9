//! sysbench's `sbtest` tables: `id` (1..=rows), `k` drawn from sysbench's default
//! distribution, `c` (10 groups of 11 random digits) and `pad` (5 groups), deterministic
//! for a seed.

use super::distribution::Distribution;
use super::rng::SplitMix64;
use super::{Column, ColumnType};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Columns of every sbtest table, in file order.
pub const SBTEST_COLUMNS: &[Column] = &[
    Column {
        name: "id",
        ty: ColumnType::Integer,
        primary_key: true,
        nullable: false,
        auto_increment: true,
    },
    Column {
        name: "k",
        ty: ColumnType::Integer,
        primary_key: false,
        nullable: false,
        auto_increment: false,
    },
    Column {
        name: "c",
        ty: ColumnType::Char(120),
        primary_key: false,
        nullable: false,
        auto_increment: false,
    },
    Column {
        name: "pad",
        ty: ColumnType::Char(60),
        primary_key: false,
        nullable: false,
        auto_increment: false,
    },
];

/// Digit groups of `c` and `pad`.
pub const C_GROUPS: usize = 10;
pub const PAD_GROUPS: usize = 5;

/// Write `groups` groups of 11 random digits separated by `-` (sysbench's
/// `###########-###########…` templates).
pub fn digit_groups(rng: &mut SplitMix64, groups: usize, out: &mut String) {
    out.clear();
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        for _ in 0..11 {
            out.push((b'0' + rng.below(10) as u8) as char);
        }
    }
}

/// The sbtest dataset: `tables` tables of `rows` rows each.
#[derive(Debug, Clone, Copy)]
pub struct Sbtest {
    pub seed: u64,
    pub rows: u64,
    pub tables: u64,
}

impl Sbtest {
    /// Row `i` (0-based) of table `table` (1-based): (id, k), with `c` and `pad` filled.
    pub fn row(&self, table: u64, i: u64, c: &mut String, pad: &mut String) -> (u64, u64) {
        let mut rng = SplitMix64::stream(self.seed ^ (table << 40), i);
        let k = Distribution::Special.sample(&mut rng, self.rows);
        digit_groups(&mut rng, C_GROUPS, c);
        digit_groups(&mut rng, PAD_GROUPS, pad);
        (i + 1, k)
    }

    /// Write table `table` as `id\tk\tc\tpad` lines to `out`; returns bytes written.
    pub fn write_tsv<W: Write>(&self, table: u64, mut out: W) -> io::Result<u64> {
        let (mut c, mut pad) = (String::with_capacity(120), String::with_capacity(60));
        let mut bytes = 0u64;
        let mut line = String::with_capacity(256);
        for i in 0..self.rows {
            let (id, k) = self.row(table, i, &mut c, &mut pad);
            line.clear();
            use std::fmt::Write as _;
            let _ = writeln!(line, "{id}\t{k}\t{c}\t{pad}");
            out.write_all(line.as_bytes())?;
            bytes += line.len() as u64;
        }
        out.flush()?;
        Ok(bytes)
    }

    /// Write table `table` to a file at `path` (created or truncated), synced; returns
    /// bytes written.
    pub fn write_tsv_file(&self, table: u64, path: &Path) -> io::Result<u64> {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let bytes = self.write_tsv(table, &mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_sysbench_shape_and_are_deterministic() {
        let s = Sbtest {
            seed: 1,
            rows: 1000,
            tables: 2,
        };
        let (mut c, mut pad) = (String::new(), String::new());
        let (id, k) = s.row(1, 41, &mut c, &mut pad);
        assert_eq!(id, 42);
        assert!((1..=1000).contains(&k));
        assert_eq!(c.len(), 119);
        assert_eq!(pad.len(), 59);
        assert!(
            c.split('-')
                .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit()))
        );
        let (mut c2, mut pad2) = (String::new(), String::new());
        assert_eq!(s.row(1, 41, &mut c2, &mut pad2), (id, k));
        assert_eq!((c, pad), (c2.clone(), pad2));
        s.row(2, 41, &mut c2, &mut String::new());
        assert_ne!(c2.len(), 0);
    }
}
