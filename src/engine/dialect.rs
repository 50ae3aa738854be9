//! SQL text that differs between engines: table definitions and DDL statements.

use crate::dataset::{ColumnType, TableDef};

/// The SQL flavor an engine speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    /// MySQL and MariaDB.
    Mysql,
    Postgres,
    /// Accepts anything; used by the `dry` engine.
    Dry,
}

impl Dialect {
    /// `CREATE TABLE` for a dataset's table.
    pub fn create_table(self, def: &TableDef) -> String {
        let cols: Vec<String> = def
            .columns
            .iter()
            .map(|c| {
                let ty = match (self, c.ty) {
                    (Dialect::Sqlite | Dialect::Dry, ColumnType::Integer) => "INTEGER",
                    (Dialect::Sqlite | Dialect::Dry, ColumnType::Text) => "TEXT",
                    (Dialect::Mysql | Dialect::Postgres, ColumnType::Integer) => "BIGINT",
                    (Dialect::Mysql | Dialect::Postgres, ColumnType::Text) => "TEXT",
                };
                let mut s = format!("{} {ty}", c.name);
                if c.primary_key && self == Dialect::Mysql {
                    s.push_str(" NOT NULL PRIMARY KEY");
                } else if c.primary_key {
                    s.push_str(" PRIMARY KEY");
                } else if !c.nullable {
                    s.push_str(" NOT NULL");
                }
                s
            })
            .collect();
        format!("CREATE TABLE {} ({})", def.name, cols.join(", "))
    }

    pub fn create_index(self, table: &str, index: &str, columns: &[String]) -> String {
        match self {
            // The ALTER TABLE form takes an ALGORITHM clause on every MariaDB version.
            Dialect::Mysql => format!(
                "ALTER TABLE {table} ADD INDEX {index} ({})",
                columns.join(", ")
            ),
            Dialect::Sqlite | Dialect::Postgres | Dialect::Dry => {
                format!("CREATE INDEX {index} ON {table} ({})", columns.join(", "))
            }
        }
    }

    pub fn drop_index(self, table: &str, index: &str) -> String {
        match self {
            Dialect::Mysql => format!("ALTER TABLE {table} DROP INDEX {index}"),
            Dialect::Sqlite | Dialect::Postgres | Dialect::Dry => format!("DROP INDEX {index}"),
        }
    }

    pub fn add_column(self, table: &str, column: &str, sql_type: &str) -> String {
        format!("ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
    }

    pub fn drop_column(self, table: &str, column: &str) -> String {
        format!("ALTER TABLE {table} DROP COLUMN {column}")
    }

    /// Ways to run a DDL statement, in order of preference, each with the algorithm it forces.
    ///
    /// MariaDB picks the cheapest algorithm a change allows (INSTANT, then NOCOPY, INPLACE,
    /// COPY) but does not say which it used; asking for each in that order, and taking the
    /// first the server accepts, runs the same algorithm and names it. A refused algorithm
    /// fails at once, before any work. Other dialects run the statement as it is.
    pub fn ddl_attempts(self, sql: &str) -> Vec<(String, Option<&'static str>)> {
        match self {
            Dialect::Mysql => {
                let sep = if sql.starts_with("ALTER TABLE") {
                    ","
                } else {
                    ""
                };
                ["INSTANT", "NOCOPY", "INPLACE", "COPY"]
                    .into_iter()
                    .map(|a| (format!("{sql}{sep} ALGORITHM={a}"), Some(a)))
                    .collect()
            }
            Dialect::Sqlite | Dialect::Postgres | Dialect::Dry => vec![(sql.to_string(), None)],
        }
    }

    pub fn count_rows(self, table: &str) -> String {
        format!("SELECT COUNT(*) FROM {table}")
    }
}
