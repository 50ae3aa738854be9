//! `commit-wait`: the primary's write rate under each group-commit wait — MariaDB's
//! `binlog_commit_wait_count` × `binlog_commit_wait_usec`, the seed's second experiment — with
//! the replicas fetching only, so each figure is the primary's own. A wait count above the
//! number of writers can never fill a group: every commit then waits the full time, and the
//! step says so. The primary's own settings are put back afterwards.

use super::follow::Follower;
use super::{ReplicationParams, verify, writers};
use crate::engine::replication::Replicated;
use crate::metrics::Latency;
use crate::results::{Better, Metric, Unit};
use crate::workload::ctx::{StepCtx, StepError, StepOutput, summary};
use serde::Serialize;
use std::time::{Duration, Instant};

/// The primary's writes at one setting.
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    pub wait_count: u64,
    pub wait_usec: u64,
    pub tps: f64,
    pub latency_us: Option<Latency>,
    pub errors: u64,
    /// Set when the count is above the writers: in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalls: Option<String>,
}

pub fn run(
    p: &ReplicationParams,
    ctx: &StepCtx<'_>,
    repl: &dyn Replicated,
) -> Result<StepOutput, StepError> {
    if !repl.controls_replication() {
        return Err(StepError::Skipped(
            "commit-wait sets the primary's binlog_commit_wait_count and binlog_commit_wait_usec, and this server is not dbduel's to configure (set control_replication = true)".into(),
        ));
    }
    let timeout = Duration::from_secs(p.catch_up_timeout_s);
    let mut f = Follower::new(repl, Instant::now());
    writers::prepare(ctx, p)?;
    if !f.settle(timeout, ctx.stop)? {
        return Err(StepError::Skipped("interrupted before the writes".into()));
    }
    // Whatever happens from here (an error, a panic), the primary gets its own settings back
    // and the replicas apply.
    let mut restore = super::restore::Restore::new(repl, ctx);
    let original = match restore.set_commit_wait(0, 100_000) {
        Ok(o) => o,
        Err(e) if e.kind == "unsupported" => return Err(StepError::Skipped(e.message)),
        Err(e) => return Err(e.into()),
    };
    for i in f.all() {
        restore.pause(i)?;
    }
    let swept = sweep(p, ctx, repl);
    let restored = restore.now();
    let (settings, seconds, interrupted) = swept?;
    restored?;
    ctx.progress.status("replicas catching up");
    let settled = f.settle(timeout, ctx.stop)?;
    let checked = if settled {
        Some(verify::checksums_equal(repl)?)
    } else {
        None
    };
    let mut s = summary(ctx.title(&format!(
        "primary writes/s by binlog commit wait, {} writers",
        p.writers
    )));
    s.elapsed_s = Some(f.t());
    if let Some(best) = settings.iter().max_by(|a, b| a.tps.total_cmp(&b.tps)) {
        s.ops_per_s = Some(best.tps);
    }
    for st in &settings {
        s.metrics.push(Metric::new(
            &format!("tps_wait_{}_{}", st.wait_count, st.wait_usec),
            &format!(
                "writes/s, wait {} × {}",
                st.wait_count,
                crate::results::format::micros(st.wait_usec as f64)
            ),
            st.tps,
            Unit::PerSecond,
            Better::Higher,
        ));
    }
    let stalls: Vec<&str> = settings
        .iter()
        .filter_map(|s| s.stalls.as_deref())
        .collect();
    let mut note = format!(
        "each setting {} s with {} writers, the replicas fetching only; the primary's own values ({} × {} µs) restored",
        p.duration_s, p.writers, original.0, original.1
    );
    if let Some(first) = stalls.first() {
        note.push_str(&format!("; {first}"));
    }
    if let Some(c) = &checked {
        note.push_str(&format!("; {}", c.sentence(repl.replica_count())));
    }
    s.note = Some(note);
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "writes": format!("{:?}", p.writes).to_lowercase(),
            "writers": p.writers,
            "settings": settings,
            "original": { "binlog_commit_wait_count": original.0, "binlog_commit_wait_usec": original.1 },
            "checksums": checked,
            "timeline": f.seconds,
        }),
        seconds,
        interrupted: interrupted || !settled,
    })
}

type Swept = (Vec<Setting>, u64, bool);

/// Every setting in turn, `duration_s` each, their seconds numbered on one clock (and
/// counted).
fn sweep(
    p: &ReplicationParams,
    ctx: &StepCtx<'_>,
    repl: &dyn Replicated,
) -> Result<Swept, StepError> {
    let grid: Vec<(u64, u64)> = p
        .wait_counts()
        .into_iter()
        .flat_map(|count| p.wait_usecs().into_iter().map(move |usec| (count, usec)))
        .collect();
    let mut seconds = 0;
    let timing = (0, p.duration_s);
    let (settings, interrupted) = super::super::sweep::walk(
        ctx,
        &grid,
        timing,
        |_, (count, usec), tick_base| {
            repl.set_commit_wait(count, usec)?;
            let progress = ctx.progress;
            let out = writers::run(ctx, p, p.duration_s, tick_base, tick_base, |iv| {
                progress.status(&format!(
                    "commit wait {count} × {usec} µs: t={:.0}s {:.0} tx/s",
                    iv.t_s, iv.ops_per_s
                ));
            })?;
            let tps = out.ops as f64 / out.measured_s.max(1e-9);
            let stalls = (count > p.writers).then(|| {
                format!(
                    "at wait count {count}, above the {} writers, a commit group never fills: every commit waits the full {usec} µs ({tps:.0} writes/s)",
                    p.writers
                )
            });
            seconds += out.seconds.count;
            let setting = Setting {
                wait_count: count,
                wait_usec: usec,
                tps,
                latency_us: Latency::of(&out.all),
                errors: out.errors.iter().map(|e| e.count).sum(),
                stalls,
            };
            Ok((setting, out.interrupted))
        },
    )?;
    Ok((settings, seconds, interrupted))
}
