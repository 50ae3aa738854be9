//! `replica-lag`: writers on the primary (as fast as they can, or at a rate) with the
//! replicas applying as they would in production; each second, each replica's lag in seconds
//! and in transactions behind, and its apply rate. Then the time each needs to drain what is
//! left, and the checksums.

use super::follow::{Follower, Until};
use super::{ReplicationParams, verify, writers};
use crate::engine::replication::Replicated;
use crate::results::{Better, Metric, Unit};
use crate::workload::ctx::{StepCtx, StepError, StepOutput, summary};
use serde::Serialize;
use std::time::{Duration, Instant};

/// One replica's lag over the writes.
#[derive(Debug, Clone, Serialize)]
pub struct Lag {
    pub replica: String,
    pub max_lag_s: f64,
    pub mean_lag_s: f64,
    pub max_behind_tx: u64,
    /// Its mean apply rate while the writers ran.
    pub applied_per_s: f64,
    /// Seconds after the writers stopped until it had applied everything.
    pub drained_s: f64,
}

pub fn run(
    p: &ReplicationParams,
    ctx: &StepCtx<'_>,
    repl: &dyn Replicated,
) -> Result<StepOutput, StepError> {
    let timeout = Duration::from_secs(p.catch_up_timeout_s);
    let mut f = Follower::new(repl, Instant::now());
    writers::prepare(ctx, p)?;
    if !f.settle(timeout, ctx.stop)? {
        return Err(StepError::Skipped("interrupted before the writes".into()));
    }
    let all = f.all();
    for &i in &all {
        f.baseline(i)?;
    }
    let start = f.note_primary()?;
    let t_writes = f.t();
    let progress = ctx.progress;
    let mut failed: Option<StepError> = None;
    let out = writers::run(ctx, p, p.duration_s, 0, 0, |iv| {
        if failed.is_some() {
            return;
        }
        let r = (|| -> Result<String, StepError> {
            f.note_primary()?;
            let mut worst = 0.0f64;
            for &i in &all {
                let s = f.state(i)?;
                f.record(i, &s);
                worst = worst.max(f.seconds.last().and_then(|s| s.lag_s).unwrap_or(0.0));
            }
            Ok(format!(
                "writers t={:.0}s {:.0} tx/s, worst replica lag {worst:.1} s",
                iv.t_s, iv.ops_per_s
            ))
        })();
        match r {
            Ok(line) => progress.status(&line),
            Err(e) => failed = Some(e),
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let t_end = f.t();
    let target = f.note_primary()?;
    ctx.progress.status("replicas applying what is left");
    let Some(drained) = f.wait(&all, &target, Until::Applied, timeout, ctx.stop)? else {
        let mut s = summary(ctx.title("replica lag"));
        s.note = Some("interrupted while the replicas drained".into());
        return Ok(StepOutput {
            summary: s,
            details: serde_json::json!({ "timeline": f.seconds }),
            seconds: out.seconds.count,
            interrupted: true,
        });
    };
    let checked = verify::checksums_equal(repl)?;
    let lags = lags(&f, &all, &drained, t_writes, t_end);
    let written = target.transactions.saturating_sub(start.transactions);
    let title = ctx.title(&format!(
        "replica lag under {} writers{}",
        p.writers,
        p.rate
            .map(|r| format!(" at {r:.0} tx/s"))
            .unwrap_or_default()
    ));
    let mut s = writers::summary(title, &out, written, f.t());
    s.metrics.extend(lag_metrics(&lags));
    let worst = lags
        .iter()
        .max_by(|a, b| a.max_lag_s.total_cmp(&b.max_lag_s));
    s.note = Some(format!(
        "{written} transactions; {}{}",
        worst
            .map(|w| format!(
                "the worst lag was replica {}'s, {:.1} s; ",
                w.replica, w.max_lag_s
            ))
            .unwrap_or_default(),
        checked.sentence(lags.len())
    ));
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "writes": format!("{:?}", p.writes).to_lowercase(),
            "writers": p.writers,
            "rate": p.rate,
            "transactions_written": written,
            "replicas": lags,
            "timeline": f.seconds,
            "checksums": checked,
            "writer_errors": out.errors,
        }),
        seconds: out.seconds.count,
        interrupted: false,
    })
}

/// Each replica's lag over the writes (from `t_writes` to `t_end`), and how long it took to
/// drain after them (`drained`, in `all`'s order).
fn lags(f: &Follower<'_>, all: &[usize], drained: &[f64], t_writes: f64, t_end: f64) -> Vec<Lag> {
    all.iter()
        .zip(drained)
        .map(|(&i, &d)| {
            let name = f.name(i).to_string();
            let during: Vec<_> = f
                .seconds
                .iter()
                .filter(|s| s.replica == name && s.t_s > t_writes && s.t_s <= t_end + 0.5)
                .collect();
            let lag = |s: &&super::follow::ReplicaSecond| s.lag_s.unwrap_or(0.0);
            let n = during.len().max(1) as f64;
            Lag {
                max_lag_s: during.iter().map(lag).fold(0.0, f64::max),
                mean_lag_s: during.iter().map(lag).sum::<f64>() / n,
                max_behind_tx: during.iter().map(|s| s.behind_tx).max().unwrap_or(0),
                applied_per_s: during.iter().map(|s| s.applied_per_s).sum::<f64>() / n,
                drained_s: d,
                replica: name,
            }
        })
        .collect()
}

/// Each replica's figures: worst and mean lag, most transactions behind, drain time.
fn lag_metrics(lags: &[Lag]) -> Vec<Metric> {
    let mut m = Vec::new();
    for l in lags {
        let n = &l.replica;
        m.push(Metric::new(
            &format!("max_lag_s.{n}"),
            &format!("{n}: worst lag"),
            l.max_lag_s,
            Unit::Seconds,
            Better::Lower,
        ));
        m.push(Metric::new(
            &format!("mean_lag_s.{n}"),
            &format!("{n}: mean lag"),
            l.mean_lag_s,
            Unit::Seconds,
            Better::Lower,
        ));
        m.push(Metric::new(
            &format!("max_behind_tx.{n}"),
            &format!("{n}: most tx behind"),
            l.max_behind_tx as f64,
            Unit::Count,
            Better::Lower,
        ));
        m.push(Metric::new(
            &format!("drained_s.{n}"),
            &format!("{n}: caught up after writes in"),
            l.drained_s,
            Unit::Seconds,
            Better::Lower,
        ));
    }
    m
}
