//! Deterministic benchmark datasets: the generators a study may name, and a portable
//! description of the tables they fill.

pub mod user_logs;

pub use user_logs::UserLogs;

/// Names accepted by [`Generator::parse`], for the study validator to list what is allowed.
pub const GENERATORS: &[&str] = &["user_logs"];

/// A dataset generator a study can ask for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generator {
    /// The log table of the 2015 blog post: see [`UserLogs`].
    UserLogs,
}

impl Generator {
    /// The generator's name as written in a study file (one of [`GENERATORS`]).
    pub fn name(&self) -> &'static str {
        match self {
            Generator::UserLogs => "user_logs",
        }
    }

    /// Parses a generator name (exact, case-sensitive match against [`GENERATORS`]).
    pub fn parse(s: &str) -> Option<Generator> {
        match s {
            "user_logs" => Some(Generator::UserLogs),
            _ => None,
        }
    }

    /// The table this generator fills, for engines to build `CREATE TABLE` from.
    pub fn columns(&self) -> &'static [Column] {
        match self {
            Generator::UserLogs => user_logs::USER_LOGS_COLUMNS,
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
}

/// A generated table as engines create it: its name and columns in file order.
#[derive(Debug, Clone)]
pub struct TableDef {
    pub name: String,
    pub columns: &'static [Column],
}

impl Generator {
    /// The table this generator fills, under the study's table name.
    pub fn table(&self, name: &str) -> TableDef {
        TableDef {
            name: name.to_string(),
            columns: self.columns(),
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
