//! Deterministic benchmark datasets: the generators a study may name, and a portable
//! description of the tables they fill.

pub mod codes;
pub mod distribution;
pub mod permutation;
pub mod rng;
pub mod sbtest;
pub mod user_logs;

pub use user_logs::UserLogs;

/// Names accepted by [`Generator::parse`], for the study validator to list what is allowed.
pub const GENERATORS: &[&str] = &["user_logs", "sbtest", "codes"];

/// A dataset generator a study can ask for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generator {
    /// The log table of the 2015 blog post: see [`UserLogs`].
    UserLogs,
    /// sysbench's `sbtest` tables: see [`sbtest::Sbtest`].
    Sbtest,
    /// Activation codes looked up by key: see [`codes::Codes`].
    Codes,
}

impl Generator {
    /// The generator's name as written in a study file (one of [`GENERATORS`]).
    pub fn name(&self) -> &'static str {
        match self {
            Generator::UserLogs => "user_logs",
            Generator::Sbtest => "sbtest",
            Generator::Codes => "codes",
        }
    }

    /// Parses a generator name (exact, case-sensitive match against [`GENERATORS`]).
    pub fn parse(s: &str) -> Option<Generator> {
        match s {
            "user_logs" => Some(Generator::UserLogs),
            "sbtest" => Some(Generator::Sbtest),
            "codes" => Some(Generator::Codes),
            _ => None,
        }
    }

    /// The table this generator fills, for engines to build `CREATE TABLE` from.
    pub fn columns(&self) -> &'static [Column] {
        match self {
            Generator::UserLogs => user_logs::USER_LOGS_COLUMNS,
            Generator::Sbtest => sbtest::SBTEST_COLUMNS,
            Generator::Codes => codes::CODES_COLUMNS,
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
}

/// One column of a generated table, in file order (the TSV fields come in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    /// Column name, a plain lower-case SQL identifier that needs no quoting.
    pub name: &'static str,
    /// Portable type of the column.
    pub ty: ColumnType,
    /// Whether the column is the (single-column) primary key.
    pub primary_key: bool,
    /// Whether the column may hold NULL (never true for generated data so far).
    pub nullable: bool,
    /// Whether the engine assigns the value when an insert leaves it out.
    pub auto_increment: bool,
}

/// A generated table as engines create it: its name, columns in file order, and the
/// secondary indexes built after the load (where that is faster than during it).
#[derive(Debug, Clone)]
pub struct TableDef {
    pub name: String,
    pub columns: &'static [Column],
    /// (index name, columns) created after the rows are in.
    pub indexes: Vec<(String, Vec<String>)>,
}

impl Generator {
    /// The tables this generator fills for a dataset: `user_logs` and `codes` fill one table
    /// named `table`; `sbtest` fills `sbtest1..=sbtestN`, each with its secondary index `k_N`.
    pub fn tables(&self, table: &str, tables: u64) -> Vec<TableDef> {
        match self {
            Generator::UserLogs | Generator::Codes => vec![TableDef {
                name: table.to_string(),
                columns: self.columns(),
                indexes: Vec::new(),
            }],
            Generator::Sbtest => (1..=tables.max(1))
                .map(|n| TableDef {
                    name: format!("sbtest{n}"),
                    columns: self.columns(),
                    indexes: vec![(format!("k_{n}"), vec!["k".to_string()])],
                })
                .collect(),
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_names_round_trip() {
        for name in GENERATORS {
            let g = Generator::parse(name);
            assert_eq!(g.map(|g| g.name()), Some(*name));
        }
        assert_eq!(Generator::parse("User_Logs"), None);
        assert_eq!(Generator::parse(""), None);
        assert_eq!(Generator::UserLogs.columns().len(), 3);
    }
}
