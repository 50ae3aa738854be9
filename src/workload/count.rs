//! `count`: `SELECT COUNT(*)` on the table, timed — after a restart that drops the OS page
//! cache (`cold = true`, the original study's first query after a restart) or as it is.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::restart::{ColdRestart, cold_restart, restart_note};
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;
use std::time::Instant;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountParams {
    /// Restart the engine and drop its files from the OS page cache first.
    #[serde(default)]
    pub cold: bool,
}

impl super::kind::StepKind for CountParams {
    fn restarts(&self) -> Option<&'static str> {
        self.cold.then_some("cold")
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all("counts the rows of", tables))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(p: &CountParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let restart = match p.cold {
        false => None,
        true => match cold_restart(ctx) {
            Ok(r) => Some(r),
            Err(ColdRestart::Unsupported(why)) => {
                return Err(StepError::Skipped(format!(
                    "a cold count needs a restart: {why}"
                )));
            }
            Err(ColdRestart::Failed(e)) => return Err(e.into()),
        },
    };
    let sqls: Vec<String> = ctx
        .tables
        .iter()
        .map(|t| ctx.engine.dialect().count_rows(&t.name))
        .collect();
    let mut session = ctx.engine.connect()?;
    let t = Instant::now();
    let mut n = 0i64;
    for sql in &sqls {
        n += session.query_i64(sql)?;
    }
    let elapsed = t.elapsed().as_secs_f64();
    let sql = sqls.join("; ");
    let title = if p.cold {
        "COUNT(*) cold"
    } else {
        "COUNT(*) warm"
    };
    let mut s = summary(ctx.title(title));
    s.elapsed_s = Some(elapsed);
    s.rows = Some(n.max(0) as u64);
    s.metrics = vec![Metric::new(
        "elapsed_s",
        "seconds",
        elapsed,
        Unit::Seconds,
        Better::Lower,
    )];
    s.note = Some(match &restart {
        Some(r) => restart_note(r),
        None => "warm: no restart".to_string(),
    });
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({ "sql": sql, "count": n, "elapsed_s": elapsed, "restart": restart }),
        seconds: 0,
        interrupted: false,
    })
}
