//! `queries`: N concurrent clients each running a list of read queries in turn, closed loop —
//! the original study's `mysqlslap --concurrency=N` run, with latency percentiles per query.

use super::{StepCtx, StepError, StepOutput, summary};
use crate::engine::{self, Session, StmtId};
use crate::metrics::Latency;
use crate::results::{Better, Metric, Unit};
use crate::runner::{self, Bound, RunSpec, Worker};
use crate::study::decode::{DecodeError, KeyPath};
use serde::Deserialize;
use std::time::Duration;

/// Most clients one step may open.
pub const MAX_CLIENTS: u64 = 10_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueriesParams {
    /// Concurrent clients: one thread and one connection each.
    pub clients: u64,
    /// Read-only statements; client k runs them in turn, starting with query k mod len.
    pub queries: Vec<String>,
    /// Operations per client (give this or `duration_s`).
    #[serde(default)]
    pub per_client: Option<u64>,
    /// Seconds to run (give this or `per_client`).
    #[serde(default)]
    pub duration_s: Option<u64>,
    /// Seconds at the start not counted in the results.
    #[serde(default)]
    pub warmup_s: u64,
}

impl QueriesParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return at(
                "clients",
                format!(
                    "clients = {} is out of range; use 1 to {MAX_CLIENTS}",
                    self.clients
                ),
            );
        }
        if self.queries.is_empty() {
            return at(
                "queries",
                "queries must list at least one SELECT statement".into(),
            );
        }
        for (i, q) in self.queries.iter().enumerate() {
            let head = q.trim_start().to_ascii_uppercase();
            if !head.starts_with("SELECT ") {
                return Err(DecodeError::at(
                    KeyPath::root().key("queries").index(i),
                    "each query must be a SELECT (this step only reads)",
                ));
            }
        }
        match (self.per_client, self.duration_s) {
            (Some(_), Some(_)) | (None, None) => at(
                "per_client",
                "give exactly one of per_client (operations per client) or duration_s (seconds)"
                    .into(),
            ),
            (Some(n), None) if n == 0 || n > 1_000_000_000 => at(
                "per_client",
                format!("per_client = {n} is out of range; use 1 to 1000000000"),
            ),
            (None, Some(d)) if d == 0 || d > 7 * 86_400 => at(
                "duration_s",
                format!("duration_s = {d} is out of range; use 1 to 604800 (a week)"),
            ),
            (None, Some(d)) if self.warmup_s >= d => at(
                "warmup_s",
                format!(
                    "warmup_s = {} leaves nothing to measure in duration_s = {d}",
                    self.warmup_s
                ),
            ),
            _ => Ok(()),
        }
    }
}

struct QueryWorker {
    session: Box<dyn Session>,
    stmts: Vec<StmtId>,
    offset: usize,
}

impl Worker for QueryWorker {
    fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>) {
        let i = (self.offset + seq as usize) % self.stmts.len();
        (i, self.session.run(self.stmts[i], &[]))
    }
}

pub fn run(p: &QueriesParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let names: Vec<String> = (1..=p.queries.len()).map(|i| format!("q{i}")).collect();
    let spec = RunSpec {
        clients: p.clients as usize,
        bound: match (p.per_client, p.duration_s) {
            (Some(n), _) => Bound::PerClient(n),
            (None, Some(d)) => Bound::Duration(Duration::from_secs(d)),
            (None, None) => Bound::PerClient(1),
        },
        warmup_s: p.warmup_s,
        pacing: runner::Pacing::Closed,
        seed: 0,
    };
    ctx.progress
        .status(&format!("{} clients connecting", p.clients));
    let engine = ctx.engine;
    let queries = &p.queries;
    let make = |client: usize| -> engine::Result<Box<dyn Worker>> {
        let mut session = engine.connect()?;
        let stmts = queries
            .iter()
            .map(|q| session.prepare(q))
            .collect::<engine::Result<Vec<_>>>()?;
        Ok(Box::new(QueryWorker {
            session,
            stmts,
            offset: client,
        }))
    };
    let progress = ctx.progress;
    let out = runner::run_closed(&spec, &names, make, ctx.stop, |iv| {
        progress.status(&format!("t={:.0}s {:.0} queries/s", iv.t_s, iv.ops_per_s));
    })?;
    let qps = if out.measured_s > 0.0 {
        out.ops as f64 / out.measured_s
    } else {
        0.0
    };
    let lat = Latency::of(&out.all);
    let errors: u64 = out.errors.iter().map(|e| e.count).sum();
    if out.ops == 0 && errors > 0 {
        let first = &out.errors[0];
        return Err(StepError::Check(format!(
            "every query failed ({errors} errors); first: {}",
            first.first_message
        )));
    }
    let mut s = summary(format!("{}, {} clients", ctx.title("queries"), p.clients));
    s.elapsed_s = Some(out.measured_s);
    s.rows = Some(out.rows);
    s.ops_per_s = Some(qps);
    s.latency_us = lat;
    s.errors = Some(errors);
    s.metrics = vec![
        Metric::new("ops", "queries", out.ops as f64, Unit::Count, Better::None),
        Metric::new(
            "ops_per_s",
            "queries/s",
            qps,
            Unit::PerSecond,
            Better::Higher,
        ),
    ];
    if let Some(l) = lat {
        for (key, label, v) in [
            ("p50_us", "p50", l.p50),
            ("p95_us", "p95", l.p95),
            ("p99_us", "p99", l.p99),
            ("max_us", "max", l.max),
        ] {
            s.metrics.push(Metric::new(
                key,
                label,
                v as f64,
                Unit::Micros,
                Better::Lower,
            ));
        }
    }
    if errors > 0 {
        s.metrics.push(Metric::new(
            "errors",
            "errors",
            errors as f64,
            Unit::Count,
            Better::Lower,
        ));
        s.note = Some(format!(
            "{errors} queries failed; see the step's JSON for kinds"
        ));
    } else {
        s.note = Some("closed loop: latency from each query's actual start".into());
    }
    let cpu_us_per_op = if out.ops > 0 {
        out.process_cpu_s * 1e6 / out.ops as f64
    } else {
        0.0
    };
    let per_query: Vec<_> = out
        .op_names
        .iter()
        .zip(queries)
        .zip(&out.per_op)
        .map(|((name, sql), h)| {
            serde_json::json!({ "op": name, "sql": sql, "ops": h.len(), "latency_us": Latency::of(h) })
        })
        .collect();
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "clients": p.clients,
            "loop": "closed",
            "per_client": p.per_client,
            "duration_s": p.duration_s,
            "warmup_s": p.warmup_s,
            "measured_s": out.measured_s,
            "ops": out.ops,
            "rows": out.rows,
            "ops_per_s": qps,
            "latency_us": lat,
            "per_query": per_query,
            "errors": out.errors,
            "dbduel_cpu_s": out.process_cpu_s,
            "dbduel_cpu_us_per_op": cpu_us_per_op,
        }),
        intervals: out.intervals,
        interrupted: out.interrupted,
    })
}
