//! `load`: create the dataset's table and bulk-load the generated file into it, timed; then
//! check (untimed) that the table holds exactly the rows generated.

use super::{StepCtx, StepError, StepOutput, summary};
use crate::engine::LoadRequest;
use crate::results::{Better, Metric, Unit};
use crate::study::decode::{DecodeError, KeyPath};
use serde::Deserialize;
use std::time::Instant;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadParams {
    /// Rows per transaction for engines that load by batched inserts.
    #[serde(default = "default_batch")]
    pub batch_rows: u64,
}

fn default_batch() -> u64 {
    50_000
}

impl LoadParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        if !(1..=10_000_000).contains(&self.batch_rows) {
            return Err(DecodeError::at(
                KeyPath::root().key("batch_rows"),
                format!(
                    "batch_rows = {} is out of range; use 1 to 10000000",
                    self.batch_rows
                ),
            ));
        }
        Ok(())
    }
}

pub fn run(p: &LoadParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let engine = ctx.engine;
    let dialect = engine.dialect();
    let create = dialect.create_table(ctx.table);
    engine.connect()?.execute(&create)?;
    ctx.progress
        .status(&format!("loading {} rows", ctx.dataset_rows));
    let t = Instant::now();
    let outcome = engine.bulk_load(&LoadRequest {
        table: &ctx.table.name,
        file: ctx.dataset_file,
        batch_rows: p.batch_rows,
    })?;
    let elapsed = t.elapsed().as_secs_f64();
    let counted = if engine.kind() == "dry" {
        None
    } else {
        let n = engine
            .connect()?
            .query_i64(&dialect.count_rows(&ctx.table.name))?;
        if n < 0 || n as u64 != ctx.dataset_rows || outcome.rows != ctx.dataset_rows {
            return Err(StepError::Check(format!(
                "loaded {} rows ({} counted in the table) but {} were generated",
                outcome.rows, n, ctx.dataset_rows
            )));
        }
        Some(n as u64)
    };
    let rate = if elapsed > 0.0 {
        outcome.rows as f64 / elapsed
    } else {
        0.0
    };
    let mut s = summary(ctx.title("bulk load"));
    s.elapsed_s = Some(elapsed);
    s.rows = Some(outcome.rows);
    s.ops_per_s = Some(rate);
    s.note = Some(outcome.method.clone());
    s.metrics = vec![
        Metric::new(
            "rows",
            "rows",
            outcome.rows as f64,
            Unit::Count,
            Better::None,
        ),
        Metric::new(
            "elapsed_s",
            "seconds",
            elapsed,
            Unit::Seconds,
            Better::Lower,
        ),
        Metric::new(
            "rows_per_s",
            "rows/s",
            rate,
            Unit::PerSecond,
            Better::Higher,
        ),
    ];
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "create_table": create,
            "method": outcome.method,
            "rows_loaded": outcome.rows,
            "rows_counted": counted,
            "elapsed_s": elapsed,
        }),
        intervals: Vec::new(),
        interrupted: false,
    })
}
