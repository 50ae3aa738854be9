//! Deterministic benchmark datasets: the generators a study may name, and a portable
//! description of the tables they fill.

pub(crate) mod chunks;
pub mod codes;
pub(crate) mod digits;
pub mod distribution;
pub mod permutation;
pub mod rng;
pub mod sbtest;
pub mod tiers40;
pub mod tpcc;
pub mod tpch;
pub mod tpch_text;
pub mod user_logs;
pub mod ycsb;

pub use user_logs::UserLogs;

/// How a generator's dataset is sized in a study's `[dataset]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// `rows` per table (1 to `max_rows`) and `tables` (1 to `max_tables`).
    Rows { max_tables: u64, max_rows: u64 },
    /// TPC-C's `warehouses`.
    Warehouses,
    /// TPC-H's scale factor `sf`.
    ScaleFactor,
}

/// A generator as a study names it: the name, what sizes it, and the generator itself. The
/// study checks a `[dataset]` against this, once, and keeps the [`Generator`] it names.
#[derive(Debug)]
pub struct Descriptor {
    pub name: &'static str,
    pub sizing: Sizing,
    pub generator: Generator,
}

/// Most rows a table may have: ids are 4-byte integers on every engine (as in sysbench).
pub const MAX_ROWS: u64 = 2_000_000_000;

/// Every generator a study may name, in the order the study validator lists them.
pub const GENERATORS: &[Descriptor] = &[
    Descriptor {
        name: "user_logs",
        sizing: Sizing::Rows {
            max_tables: 1,
            max_rows: MAX_ROWS,
        },
        generator: Generator::UserLogs,
    },
    Descriptor {
        name: "sbtest",
        sizing: Sizing::Rows {
            max_tables: 1000,
            max_rows: MAX_ROWS,
        },
        generator: Generator::Sbtest,
    },
    Descriptor {
        name: "codes",
        sizing: Sizing::Rows {
            max_tables: 1,
            max_rows: MAX_ROWS,
        },
        generator: Generator::Codes,
    },
    Descriptor {
        name: "tiers40",
        // col9 (a TIMESTAMP, 5 s a row) must stay below 2038 in every engine.
        sizing: Sizing::Rows {
            max_tables: 1000,
            max_rows: 100_000_000,
        },
        generator: Generator::Tiers40,
    },
    Descriptor {
        name: "ycsb",
        sizing: Sizing::Rows {
            max_tables: 1,
            max_rows: MAX_ROWS,
        },
        generator: Generator::Ycsb,
    },
    Descriptor {
        name: "tpcc",
        sizing: Sizing::Warehouses,
        generator: Generator::Tpcc,
    },
    Descriptor {
        name: "tpch",
        sizing: Sizing::ScaleFactor,
        generator: Generator::Tpch,
    },
];

/// A dataset generator a study can ask for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generator {
    /// The log table of the shoot-out's original blog post: see [`UserLogs`].
    UserLogs,
    /// sysbench's `sbtest` tables: see [`sbtest::Sbtest`].
    Sbtest,
    /// Activation codes looked up by key: see [`codes::Codes`].
    Codes,
    /// The storage study's 40 tables: see [`tiers40::Tiers40`].
    Tiers40,
    /// YCSB's `usertable` of records: see [`ycsb::Ycsb`].
    Ycsb,
    /// TPC-C's nine tables for a number of warehouses: see [`tpcc::Tpcc`].
    Tpcc,
    /// TPC-H's eight tables at a scale factor: see [`tpch::Tpch`].
    Tpch,
}

impl Generator {
    /// Its entry in [`GENERATORS`].
    pub fn descriptor(self) -> &'static Descriptor {
        GENERATORS
            .iter()
            .find(|d| d.generator == self)
            .unwrap_or(&GENERATORS[0])
    }

    /// The generator's name as written in a study file.
    pub fn name(&self) -> &'static str {
        self.descriptor().name
    }

    /// Parses a generator name (exact, case-sensitive match against [`GENERATORS`]).
    pub fn parse(s: &str) -> Option<Generator> {
        GENERATORS.iter().find(|d| d.name == s).map(|d| d.generator)
    }

    /// The table this generator fills, for engines to build `CREATE TABLE` from (TPC-C's
    /// nine tables each have their own: see [`tables`](Self::tables)).
    pub fn columns(&self) -> &'static [Column] {
        match self {
            Generator::UserLogs => user_logs::USER_LOGS_COLUMNS,
            Generator::Sbtest => sbtest::SBTEST_COLUMNS,
            Generator::Codes => codes::CODES_COLUMNS,
            Generator::Tiers40 => tiers40::TIERS40_COLUMNS,
            Generator::Ycsb => ycsb::YCSB_COLUMNS,
            Generator::Tpcc | Generator::Tpch => &[],
        }
    }
}

/// Portable column type; each engine maps it to its own SQL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// Signed integer. Values always fit in `i64`; for datasets under 2^31 rows they also
    /// fit in a 32-bit `INT`.
    Integer,
    /// Variable-length text of any length (ASCII here), e.g. `TEXT`.
    Text,
    /// Fixed-length text of this many characters, `CHAR(n)`.
    Char(u16),
    /// Text of at most this many characters, `VARCHAR(n)`.
    Varchar(u16),
    /// A 2-byte integer, `SMALLINT`.
    SmallInt,
    /// A date and time without zone, written `YYYY-MM-DD HH:MM:SS`.
    Timestamp,
    /// A calendar date, written `YYYY-MM-DD` (`DATE`; on SQLite, text in that form, which
    /// compares and sorts as the dates do).
    Date,
    /// An exact decimal of this many digits, this many after the point, `DECIMAL(p,s)`.
    Decimal(u8, u8),
}

impl ColumnType {
    /// Is a value of it written as a whole number?
    pub fn is_integer(self) -> bool {
        matches!(self, ColumnType::Integer | ColumnType::SmallInt)
    }
}

/// One column of a generated table, in file order (the TSV fields come in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    /// Column name, a plain lower-case SQL identifier that needs no quoting.
    pub name: &'static str,
    /// Portable type of the column.
    pub ty: ColumnType,
    /// Whether the column is (part of) the primary key; several columns make a composite
    /// key in column order.
    pub primary_key: bool,
    /// Whether the column may hold NULL (written `\N` in the dataset file).
    pub nullable: bool,
    /// Whether the engine assigns the value when an insert leaves it out.
    pub auto_increment: bool,
}

/// A column that the engine does not assign, for the generators' column tables.
pub(crate) const fn col(
    name: &'static str,
    ty: ColumnType,
    primary_key: bool,
    nullable: bool,
) -> Column {
    Column {
        name,
        ty,
        primary_key,
        nullable,
        auto_increment: false,
    }
}

/// A generated table as engines create it: its name, columns in file order, and the
/// secondary indexes built after the load (where that is faster than during it).
#[derive(Debug, Clone)]
pub struct TableDef {
    pub name: String,
    pub columns: &'static [Column],
    /// (constraint name, columns) of UNIQUE keys created with the table.
    pub unique: Vec<(String, Vec<String>)>,
    /// (index name, columns) created after the rows are in; a column may say `DESC`.
    pub indexes: Vec<(String, Vec<String>)>,
    /// Rows the dataset puts in it.
    pub rows: u64,
    /// Foreign keys added after the rows (and indexes) are in, on engines that have them.
    pub foreign_keys: Vec<ForeignKeyDef>,
}

/// A foreign key of a generated table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKeyDef {
    /// Constraint name, unique in the database.
    pub name: String,
    /// The referencing columns, in this table.
    pub columns: Vec<String>,
    /// The referenced table.
    pub references: String,
    /// Its referenced columns (its primary key), in the order of `columns`.
    pub referenced: Vec<String>,
}

impl Generator {
    /// The tables this generator fills for a dataset: `user_logs` and `codes` fill one table
    /// named `table`; `sbtest` fills `sbtest1..=sbtestN`, each with its secondary index `k_N`;
    /// `tiers40` fills `tbl_200…` with the seed's unique key and index; `ycsb` fills YCSB's
    /// `usertable`; `tpcc` fills TPC-C's
    /// nine tables for `rows` warehouses; `tpch` fills TPC-H's eight tables at `rows`
    /// hundredths of a scale factor. `rows` is each table's count otherwise.
    pub fn tables(&self, table: &str, tables: u64, rows: u64, seed: u64) -> Vec<TableDef> {
        match self {
            Generator::Tpcc => tpcc::tables(seed, rows),
            Generator::Tpch => tpch::tables(seed, rows),
            Generator::Ycsb => vec![TableDef {
                name: ycsb::TABLE.to_string(),
                columns: self.columns(),
                unique: Vec::new(),
                indexes: Vec::new(),
                rows,
                foreign_keys: Vec::new(),
            }],
            Generator::UserLogs | Generator::Codes => vec![TableDef {
                name: table.to_string(),
                columns: self.columns(),
                unique: Vec::new(),
                indexes: Vec::new(),
                rows,
                foreign_keys: Vec::new(),
            }],
            Generator::Sbtest => (1..=tables.max(1))
                .map(|n| TableDef {
                    name: format!("sbtest{n}"),
                    columns: self.columns(),
                    unique: Vec::new(),
                    indexes: vec![(format!("k_{n}"), vec!["k".to_string()])],
                    rows,
                    foreign_keys: Vec::new(),
                })
                .collect(),
            Generator::Tiers40 => {
                let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
                (0..tables.max(1))
                    .map(|i| {
                        let name = tiers40::table_name(i);
                        TableDef {
                            unique: vec![(format!("iuk_{name}"), cols(tiers40::UNIQUE_KEY))],
                            indexes: vec![(format!("ink1_{name}"), cols(tiers40::INDEX))],
                            name,
                            columns: self.columns(),
                            rows,
                            foreign_keys: Vec::new(),
                        }
                    })
                    .collect()
            }
        }
    }

    /// About how many bytes of its dataset files this generator writes for each unit of
    /// scale (a row; a warehouse for `tpcc`), and how much more one engine's copy of the
    /// tables takes on disk, as a factor of the files. The files' sizes are checked against
    /// the generators in this module's tests; the factors allow for page and row overhead
    /// of uncompressed engines (InnoDB took ~1.25× user_logs' file; short rows such as
    /// codes' carry relatively more header and index per byte).
    pub fn disk_per_unit(&self) -> (u64, f64) {
        match self {
            Generator::UserLogs => (810, 1.5),
            Generator::Sbtest => (190, 1.5),
            Generator::Codes => (52, 3.0),
            Generator::Tiers40 => (380, 1.5),
            Generator::Ycsb => (1_034, 1.5),
            Generator::Tpcc => (78_400_000, 1.5),
            // a hundredth of a scale factor
            Generator::Tpch => (TPCH_BYTES_PER_UNIT, 1.5),
        }
    }

    /// Write table number `n` (0-based, in `tables()` order) as tab-separated rows to
    /// `path`; returns bytes written.
    pub fn write_tsv(
        &self,
        seed: u64,
        rows: u64,
        tables: u64,
        n: u64,
        path: &std::path::Path,
    ) -> std::io::Result<u64> {
        match self {
            Generator::UserLogs => UserLogs::new(seed, rows).write_tsv_file(path),
            Generator::Sbtest => sbtest::Sbtest { seed, rows, tables }.write_tsv_file(n + 1, path),
            Generator::Codes => codes::Codes { seed, rows }.write_tsv_file(path),
            Generator::Tiers40 => tiers40::Tiers40 { seed, rows, tables }.write_tsv_file(n, path),
            Generator::Tpcc => tpcc::Tpcc {
                seed,
                warehouses: rows,
            }
            .write_tsv_file(n, path),
            Generator::Tpch | Generator::Ycsb => {
                let file = std::fs::File::create(path)?;
                let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
                let bytes = self.write_tsv_to(seed, rows, tables, n, &mut out)?;
                out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
                Ok(bytes)
            }
        }
    }
}

/// Bytes of TSV a hundredth of a TPC-H scale factor makes (checked by a test below).
const TPCH_BYTES_PER_UNIT: u64 = 10_900_000;

impl Generator {
    /// Write table number `n` (0-based, in `tables()` order) as tab-separated rows to `out`;
    /// returns bytes written. The caller makes, wraps and syncs the file.
    pub fn write_tsv_to<W: std::io::Write>(
        &self,
        seed: u64,
        rows: u64,
        tables: u64,
        n: u64,
        mut out: W,
    ) -> std::io::Result<u64> {
        match self {
            Generator::UserLogs => UserLogs::new(seed, rows).write_tsv(0, rows, out),
            Generator::Sbtest => sbtest::Sbtest { seed, rows, tables }.write_tsv(n + 1, out),
            Generator::Codes => codes::Codes { seed, rows }.write_tsv(out),
            Generator::Tiers40 => tiers40::Tiers40 { seed, rows, tables }.write_tsv(n, out),
            Generator::Ycsb => ycsb::Ycsb { seed, rows }.write_tsv(out),
            Generator::Tpcc => {
                let t = tpcc::TABLES.get(n as usize).copied().ok_or_else(|| {
                    std::io::Error::other(format!("tpcc has no table number {n}"))
                })?;
                tpcc::Tpcc {
                    seed,
                    warehouses: rows,
                }
                .write_tsv(t, &mut out)
            }
            Generator::Tpch => {
                let t = tpch::TABLES.get(n as usize).copied().ok_or_else(|| {
                    std::io::Error::other(format!("tpch has no table number {n}"))
                })?;
                tpch::Tpch { seed, units: rows }.write_tsv(t, &mut out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_names_round_trip() {
        for d in GENERATORS {
            let g = Generator::parse(d.name);
            assert_eq!(g.map(|g| g.name()), Some(d.name));
            assert_eq!(g.map(|g| g.descriptor().sizing), Some(d.sizing));
        }
        assert_eq!(Generator::parse("User_Logs"), None);
        assert_eq!(Generator::parse(""), None);
        assert_eq!(Generator::UserLogs.columns().len(), 3);
    }

    #[test]
    fn disk_estimates_follow_what_the_generators_write() {
        let dir = tempfile::tempdir().expect("tmp");
        for d in GENERATORS {
            let (name, g) = (d.name, d.generator);
            // one warehouse of tpcc (all nine tables), 20,000 rows of the others
            let (units, tables) = match g {
                Generator::Tpcc => (1, 9),
                // sf 0.01, all eight tables
                Generator::Tpch => (1, 8),
                _ => (20_000, 1),
            };
            let written: u64 = (0..tables)
                .map(|n| {
                    let path = dir.path().join(format!("{name}-{n}"));
                    g.write_tsv(42, units, 1, n, &path).expect("write")
                })
                .sum();
            let (per_unit, _) = g.disk_per_unit();
            let estimate = per_unit * units;
            let off = estimate.abs_diff(written) as f64 / written as f64;
            assert!(
                off < 0.1,
                "{name}: estimated {estimate} bytes, wrote {written}"
            );
        }
    }
}
