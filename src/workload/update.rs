//! `update`: one bulk `UPDATE` statement, timed, with the rows it changed.

use super::{StepCtx, StepError, StepOutput, summary, timed_execute};
use crate::results::{Better, Metric, Unit};
use crate::study::decode::{DecodeError, KeyPath};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateParams {
    /// The statement, in SQL every contender accepts.
    pub sql: String,
}

impl UpdateParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let head = self.sql.trim_start().to_ascii_uppercase();
        if !head.starts_with("UPDATE ") {
            return Err(DecodeError::at(
                KeyPath::root().key("sql"),
                "sql must be one UPDATE statement (use kind = \"ddl\" for schema changes)",
            ));
        }
        Ok(())
    }
}

pub fn run(p: &UpdateParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let (elapsed, rows) = timed_execute(ctx.engine, &p.sql)?;
    let mut s = summary(ctx.title("bulk update"));
    s.elapsed_s = Some(elapsed);
    s.rows = Some(rows);
    s.metrics = vec![
        Metric::new("rows", "rows", rows as f64, Unit::Count, Better::None),
        Metric::new(
            "elapsed_s",
            "seconds",
            elapsed,
            Unit::Seconds,
            Better::Lower,
        ),
    ];
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({ "sql": p.sql, "rows_affected": rows, "elapsed_s": elapsed }),
        intervals: Vec::new(),
        interrupted: false,
    })
}
