//! `ddl`: one schema change (create/drop index, add/drop/rename column), timed, in each
//! engine's own syntax.

use super::{StepCtx, StepError, StepOutput, summary};
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::{Dialect, Session};
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DdlAction {
    CreateIndex,
    DropIndex,
    AddColumn,
    DropColumn,
    /// TokuDB's "Hot Column Rename": `column` becomes `to`.
    RenameColumn,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdlParams {
    #[serde(deserialize_with = "by_name")]
    pub action: DdlAction,
    /// Index name, for `create_index` and `drop_index`.
    #[serde(default)]
    pub index: Option<String>,
    /// Indexed columns, for `create_index`.
    #[serde(default)]
    pub columns: Vec<String>,
    /// Column name, for `add_column` and `drop_column`.
    #[serde(default)]
    pub column: Option<String>,
    /// SQL type of the new column, for `add_column`, e.g. `VARCHAR(20)`.
    #[serde(default)]
    pub column_type: Option<String>,
    /// The column's new name, for `rename_column`.
    #[serde(default)]
    pub to: Option<String>,
}

fn identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A required identifier parameter.
fn ident<'a>(key: &str, v: &'a Option<String>, action: &str) -> Result<&'a str, DecodeError> {
    match v {
        None => Err(DecodeError::at(
            KeyPath::root().key(key),
            format!("action = \"{action}\" needs {key} = \"...\""),
        )),
        Some(s) if !identifier(s) => Err(DecodeError::at(
            KeyPath::root().key(key),
            format!("{key} = {s:?} must be 1-64 letters, digits or _"),
        )),
        Some(s) => Ok(s),
    }
}

impl DdlParams {
    /// The statement's target names, checked: (index or column name, action label).
    fn target(&self) -> Result<&str, DecodeError> {
        match self.action {
            DdlAction::CreateIndex => ident("index", &self.index, "create_index"),
            DdlAction::DropIndex => ident("index", &self.index, "drop_index"),
            DdlAction::AddColumn => ident("column", &self.column, "add_column"),
            DdlAction::DropColumn => ident("column", &self.column, "drop_column"),
            DdlAction::RenameColumn => ident("column", &self.column, "rename_column"),
        }
    }

    /// The statement in `d`'s syntax on `table`, and a title for it.
    pub fn statement(
        &self,
        d: Dialect,
        table: &str,
    ) -> Result<(String, &'static str), DecodeError> {
        let target = self.target()?;
        Ok(match self.action {
            DdlAction::CreateIndex => {
                (d.create_index(table, target, &self.columns), "create index")
            }
            DdlAction::DropIndex => (d.drop_index(table, target), "drop index"),
            DdlAction::AddColumn => (
                d.add_column(table, target, self.column_type.as_deref().unwrap_or("TEXT")),
                "add column",
            ),
            DdlAction::DropColumn => (d.drop_column(table, target), "drop column"),
            DdlAction::RenameColumn => (
                d.rename_column(table, target, self.to.as_deref().unwrap_or("")),
                "rename column",
            ),
        })
    }

    pub fn validate(&self) -> Result<(), DecodeError> {
        self.target()?;
        match self.action {
            DdlAction::CreateIndex if self.columns.is_empty() => Err(DecodeError::at(
                KeyPath::root().key("columns"),
                "create_index needs columns = [\"...\"]",
            )),
            DdlAction::CreateIndex => match self.columns.iter().position(|c| !identifier(c)) {
                Some(i) => Err(DecodeError::at(
                    KeyPath::root().key("columns").index(i),
                    "column names must be 1-64 letters, digits or _",
                )),
                None => Ok(()),
            },
            DdlAction::AddColumn => match &self.column_type {
                None => Err(DecodeError::at(
                    KeyPath::root().key("column_type"),
                    "add_column needs column_type, e.g. \"VARCHAR(20)\"",
                )),
                Some(t)
                    if t.is_empty()
                        || !t
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "(), _".contains(c)) =>
                {
                    Err(DecodeError::at(
                        KeyPath::root().key("column_type"),
                        format!("column_type = {t:?} is not a plain SQL type"),
                    ))
                }
                Some(_) => Ok(()),
            },
            DdlAction::RenameColumn => ident("to", &self.to, "rename_column").map(drop),
            DdlAction::DropIndex | DdlAction::DropColumn => Ok(()),
        }
    }
}

/// A schema change as it ran.
pub struct Applied {
    pub elapsed_s: f64,
    /// The statement as sent (with the algorithm that was accepted).
    pub ran: String,
    pub algorithm: Option<&'static str>,
    /// The server's refusals of cheaper algorithms.
    pub refused: Vec<String>,
}

/// Run `sql` on `session` with the cheapest algorithm the server accepts (MariaDB), timed.
/// The algorithms tried are the engine's (its dialect's, unless the server has its own list).
pub fn apply(
    session: &mut dyn Session,
    engine: &dyn crate::engine::Engine,
    sql: &str,
) -> Result<Applied, StepError> {
    let mut refused = Vec::new();
    let sql = &engine.ddl_statement(sql)?;
    for (attempt, algorithm) in engine.dialect().ddl_attempts(sql, engine.ddl_algorithms()) {
        let t = Instant::now();
        match session.execute(&attempt) {
            Ok(_) => {
                return Ok(Applied {
                    elapsed_s: t.elapsed().as_secs_f64(),
                    ran: attempt,
                    algorithm,
                    refused,
                });
            }
            Err(e) if e.kind == "unsupported_algorithm" => refused.push(e.message),
            Err(e) => return Err(e.into()),
        }
    }
    Err(StepError::Check(format!(
        "the server refused every algorithm for `{sql}`: {}",
        refused.join("; ")
    )))
}

impl super::StepKind for DdlParams {
    fn validate(&self) -> Result<(), DecodeError> {
        DdlParams::validate(self)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::one(
            KeyPath::root().key("action"),
            format!("changes table {}", super::kind::first(tables)),
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(p: &DdlParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let d = ctx.engine.dialect();
    let table = &ctx.table().name;
    let (sql, title) = p
        .statement(d, table)
        .map_err(|e| StepError::Check(e.message))?;
    let mut session = ctx.engine.connect()?;
    let Applied {
        elapsed_s: elapsed,
        ran,
        algorithm,
        refused,
    } = apply(session.as_mut(), ctx.engine, &sql)?;
    let mut s = summary(ctx.title(title));
    s.elapsed_s = Some(elapsed);
    s.note = Some(match algorithm {
        Some(a) => format!("{sql} (ALGORITHM={a})"),
        None => sql.clone(),
    });
    s.metrics = vec![Metric::new(
        "elapsed_s",
        "seconds",
        elapsed,
        Unit::Seconds,
        Better::Lower,
    )];
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "sql": sql,
            "ran": ran,
            "algorithm": algorithm,
            "algorithms_refused": refused,
            "elapsed_s": elapsed,
        }),
        intervals: Vec::new(),
        interrupted: false,
    })
}
