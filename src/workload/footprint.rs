//! `footprint`: bytes the table takes on disk, from the files (as `ls -l` would show) and,
//! beside it, as the engine itself reports.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FootprintParams {}
impl super::kind::StepKind for FootprintParams {
    fn is_sql(&self) -> bool {
        false
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all("measures the bytes of", tables))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(_p: &FootprintParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let names: Vec<&str> = ctx.tables.iter().map(|t| t.name.as_str()).collect();
    // Bytes are the same on any device: read them at the host disk's full speed.
    let unthrottled = super::restart::Unthrottled::begin(ctx.engine)?;
    let f = ctx.engine.footprint(&names)?;
    if let Some(u) = unthrottled {
        u.finish()?;
    }
    let mut s = summary(ctx.title("bytes on disk"));
    // What the files hold when they can be read here, else what the engine says.
    s.bytes = f.files_bytes.or(f.engine_bytes);
    s.note = Some(f.files_rule.clone());
    if let Some(b) = f.files_bytes {
        s.metrics.push(Metric::new(
            "bytes",
            "files",
            b as f64,
            Unit::Bytes,
            Better::Lower,
        ));
    }
    if let Some(e) = f.engine_bytes {
        s.metrics.push(Metric::new(
            "engine_bytes",
            "engine says",
            e as f64,
            Unit::Bytes,
            Better::Lower,
        ));
    }
    let rows: u64 = ctx.tables.iter().map(|t| t.rows).sum();
    if let (Some(b), true) = (s.bytes, rows > 0) {
        s.metrics.push(Metric::new(
            "bytes_per_row",
            "bytes/row",
            b as f64 / rows as f64,
            Unit::Count,
            Better::Lower,
        ));
    }
    Ok(StepOutput {
        summary: s,
        details: serde_json::to_value(&f).unwrap_or_default(),
        seconds: 0,
        interrupted: false,
    })
}
