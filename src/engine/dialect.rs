//! SQL text that differs between engines: table definitions and DDL statements.

use crate::dataset::{ColumnType, TableDef};

/// The SQL flavor an engine speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
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
                };
                let mut s = format!("{} {ty}", c.name);
                if c.primary_key {
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
        format!("CREATE INDEX {index} ON {table} ({})", columns.join(", "))
    }

    pub fn drop_index(self, _table: &str, index: &str) -> String {
        format!("DROP INDEX {index}")
    }

    pub fn add_column(self, table: &str, column: &str, sql_type: &str) -> String {
        format!("ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
    }

    pub fn drop_column(self, table: &str, column: &str) -> String {
        format!("ALTER TABLE {table} DROP COLUMN {column}")
    }

    pub fn count_rows(self, table: &str) -> String {
        format!("SELECT COUNT(*) FROM {table}")
    }
}
