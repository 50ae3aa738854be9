//! `catch-up`: with every replica's apply stopped — and, with `fetch = "after"`, its
//! receiving too, as the seed started replication only after its writes — writers run on the
//! primary for a while; then the replicas receive the rest and apply it — one at a time from
//! the same starting point, or together — and dbduel measures each one's apply rate, rows,
//! CPU and time to catch up. All replicas apply the identical stream.

use super::follow::{Follower, Until};
use super::{Apply, Fetch, ReplicationParams, verify, writers};
use crate::engine::replication::{Position, ReplicaState, Replicated};
use crate::results::{Better, Metric, Unit};
use crate::workload::ctx::{StepCtx, StepError, StepOutput, summary};
use serde::Serialize;
use std::time::{Duration, Instant};

/// One replica's catch-up.
#[derive(Debug, Clone, Serialize)]
pub struct CatchUp {
    pub replica: String,
    /// Its settings that make it this variant.
    pub settings: std::collections::BTreeMap<String, String>,
    /// Transactions it applied, and in how long, seconds.
    pub transactions: u64,
    pub catch_up_s: f64,
    pub applied_per_s: f64,
    /// Rows its storage engine changed meanwhile, by its own counters.
    pub rows: Option<u64>,
    pub rows_per_s: Option<f64>,
    /// Its server's mean CPU while applying, percent of one core.
    pub cpu_pct: Option<f64>,
    /// The host's mean idle CPU meanwhile, percent of all cores.
    pub host_idle_pct: Option<f64>,
}

pub fn run(
    p: &ReplicationParams,
    ctx: &StepCtx<'_>,
    repl: &dyn Replicated,
) -> Result<StepOutput, StepError> {
    can_run(p, repl)?;
    let timeout = Duration::from_secs(p.catch_up_timeout_s);
    let mut f = Follower::new(repl, Instant::now());
    writers::prepare(ctx, p)?;
    ctx.progress.status("replicas catching up before the step");
    if !f.settle(timeout, ctx.stop)? {
        return Err(StepError::Skipped("interrupted before the writes".into()));
    }
    let all = f.all();
    // Whatever happens from here (an error, a panic), the replicas apply again.
    let mut restore = super::restore::Restore::new(repl, ctx);
    let stopped = p.fetch == Some(Fetch::After) && repl.stops_fetching();
    stop(&mut restore, &all, stopped)?;
    let received_before = received(repl, &all)?;
    let wait = match p.catch_up_wait() {
        Some((count, usec)) => Some(hold_commits(&mut restore, repl, count, usec)?),
        None => None,
    };
    let start = f.note_primary()?;
    let progress = ctx.progress;
    let mut noted: Result<_, StepError> = Ok(());
    let out = writers::run(ctx, p, p.duration_s, 0, 0, |iv| {
        progress.status(&format!(
            "writers on the primary, replicas {}: t={:.0}s {:.0} tx/s",
            if stopped { "stopped" } else { "fetching only" },
            iv.t_s,
            iv.ops_per_s
        ));
        if noted.is_ok() {
            noted = f.note_primary().map(|_| ());
        }
    })?;
    noted?;
    let target = f.note_primary()?;
    let written = target.transactions.saturating_sub(start.transactions);
    let while_writing = WhileWriting::of(repl, &all, received_before, stopped)?;
    if stopped {
        receive_again(repl, &all)?;
    }
    ctx.progress
        .status("replicas fetching the rest of the primary's binary log");
    if f.wait(&all, &target, Until::Received, timeout, ctx.stop)?
        .is_none()
    {
        return interrupted(ctx, &mut f);
    }
    let Some(results) = apply(p, ctx, repl, &mut f, (&target, written), timeout)? else {
        return interrupted(ctx, &mut f);
    };
    ctx.progress.status("comparing checksums");
    let checked = verify::checksums_equal(repl)?;
    // The primary's own group-commit wait back (and every replica applying, as it is).
    restore.now()?;
    let title = ctx.title(&format!(
        "catch-up: {} writers {} s, then each replica applies",
        p.writers, p.duration_s
    ));
    let mut s = writers::summary(title, &out, written, f.t());
    for r in &results {
        push_replica_metrics(&mut s.metrics, r);
    }
    s.note = Some(note(
        p,
        (written, &while_writing),
        wait.as_ref(),
        &checked.sentence(results.len()),
    ));
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "writes": format!("{:?}", p.writes).to_lowercase(),
            "writers": p.writers,
            "commit_wait": wait,
            "gtid_domains": p.gtid_domains,
            "transactions_written": written,
            "primary_start": start,
            "primary_end": target,
            "apply": format!("{:?}", p.apply.unwrap_or_default()),
            "received_while_writing": while_writing,
            "replicas": results,
            "timeline": f.seconds,
            "checksums": checked,
            "writer_errors": out.errors,
        }),
        seconds: out.seconds.count,
        interrupted: false,
    })
}

/// The replicas apply what they fetched of the primary's `target` (`written` transactions),
/// one at a time or together as `apply` says: each one's catch-up, or `None` when the stop
/// flag cut it short.
fn apply(
    p: &ReplicationParams,
    ctx: &StepCtx<'_>,
    repl: &dyn Replicated,
    f: &mut Follower<'_>,
    (target, written): (&Position, u64),
    timeout: Duration,
) -> Result<Option<Vec<CatchUp>>, StepError> {
    let all = f.all();
    let groups: Vec<Vec<usize>> = match p.apply.unwrap_or_default() {
        Apply::OneAtATime => all.iter().map(|&i| vec![i]).collect(),
        Apply::Together => vec![all.clone()],
    };
    let mut results = Vec::new();
    for group in groups {
        let names: Vec<&str> = group.iter().map(|&i| f.name(i)).collect();
        ctx.progress.status(&format!(
            "{} applying {written} transactions",
            names.join(", ")
        ));
        let mut before = Vec::new();
        for &i in &group {
            before.push(f.baseline(i)?);
        }
        let t0 = f.t();
        for &i in &group {
            repl.resume_apply(i)?;
        }
        let Some(took) = f.wait(&group, target, Until::Applied, timeout, ctx.stop)? else {
            return Ok(None);
        };
        results.extend(caught_up(f, repl, &group, &before, &took, t0)?);
    }
    Ok(Some(results))
}

/// Skipped, saying why, where the topology cannot run this catch-up.
fn can_run(p: &ReplicationParams, repl: &dyn Replicated) -> Result<(), StepError> {
    if !repl.controls_replication() {
        return Err(StepError::Skipped(
            "catch-up stops and starts the replicas' apply, and this topology's replication is not dbduel's to control (set control_replication = true)".into(),
        ));
    }
    if p.gtid_domains.is_some() && !repl.gtid_domains() {
        return Err(StepError::Skipped(
            "gtid_domains spreads the writers over MariaDB GTID domains, and this primary has none"
                .into(),
        ));
    }
    Ok(())
}

/// Stop every replica's apply, and its receiving too when `fetching` is to stop (both put
/// back by `restore`).
fn stop(
    restore: &mut super::restore::Restore<'_>,
    all: &[usize],
    fetching: bool,
) -> Result<(), StepError> {
    for &i in all {
        if fetching {
            restore.pause_fetch(i)?;
        } else {
            restore.pause(i)?;
        }
    }
    Ok(())
}

/// Start every replica receiving again, and wait until each says it is: a started IO thread
/// is `Connecting` for a moment before it receives, which a wait for the primary's position
/// would take for a stopped one.
fn receive_again(repl: &dyn Replicated, all: &[usize]) -> Result<(), StepError> {
    for &i in all {
        repl.resume_fetch(i)?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for &i in all {
        while !repl.replica_state(i)?.receiving {
            if Instant::now() > deadline {
                return Err(StepError::Check(format!(
                    "replica {} did not start receiving within 30 s of START SLAVE IO_THREAD",
                    repl.replica_name(i)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(())
}

/// Each replica's received position now.
fn received(repl: &dyn Replicated, all: &[usize]) -> Result<Vec<Position>, StepError> {
    all.iter()
        .map(|&i| Ok(repl.replica_state(i)?.received))
        .collect()
}

/// What the replicas received while the writers wrote, read from each one's own status
/// (MariaDB's `Gtid_IO_Pos`, a MySQL replica's `Read_Master_Log_Pos`) when the writes began
/// and when they ended.
#[derive(Debug, Clone, Serialize)]
pub struct WhileWriting {
    /// Whether their receiving was stopped for the writes (`fetch = "after"`).
    pub stopped: bool,
    pub replicas: Vec<Received>,
}

/// One replica's received position when the writes began and ended.
#[derive(Debug, Clone, Serialize)]
pub struct Received {
    pub replica: String,
    pub at_start: String,
    pub at_end: String,
    /// The two are the same: it received nothing of the writes.
    pub nothing: bool,
}

impl WhileWriting {
    fn of(
        repl: &dyn Replicated,
        all: &[usize],
        before: Vec<Position>,
        stopped: bool,
    ) -> Result<Self, StepError> {
        let after = received(repl, all)?;
        let replicas = all
            .iter()
            .zip(before.into_iter().zip(after))
            .map(|(&i, (a, b))| Received {
                replica: repl.replica_name(i),
                nothing: a == b,
                at_start: a.text,
                at_end: b.text,
            })
            .collect();
        Ok(WhileWriting { stopped, replicas })
    }

    /// " with the replicas stopped (…)" or " with the replicas fetching only".
    fn sentence(&self) -> String {
        if !self.stopped {
            return " with the replicas fetching only".into();
        }
        let got: Vec<&str> = self
            .replicas
            .iter()
            .filter(|r| !r.nothing)
            .map(|r| r.replica.as_str())
            .collect();
        if got.is_empty() {
            " with the replicas stopped (each one's received position, read from it, the same when the writes ended as when they began)".into()
        } else {
            format!(
                " with the replicas stopped, yet {} received some of the writes",
                got.join(", ")
            )
        }
    }
}

/// The step's note: what was written, how, how the replicas applied it, and the checksums.
fn note(
    p: &ReplicationParams,
    (written, while_writing): (u64, &WhileWriting),
    wait: Option<&PrimaryWait>,
    checked: &str,
) -> String {
    let fetch = if p.fetch == Some(Fetch::After) && !while_writing.stopped {
        " (fetch = \"after\" asked, but this topology's replicas cannot stop receiving)"
    } else {
        ""
    };
    format!(
        "{written} transactions written{}{}{}{fetch}; {}; {checked}",
        p.gtid_domains
            .map(|n| format!(
                " in {n} GTID domains (writer c in domain c mod {n}, which parallel replicas may apply out of order)"
            ))
            .unwrap_or_default(),
        wait.map(PrimaryWait::sentence).unwrap_or_default(),
        while_writing.sentence(),
        match p.apply.unwrap_or_default() {
            Apply::OneAtATime =>
                "each replica then applied them alone, from the same starting point, while the others waited",
            Apply::Together => "all replicas then applied them at the same time",
        },
    )
}

/// The primary's group-commit wait during a catch-up's writes: as asked, and as its server
/// reports it once set (none where the server has no such wait).
#[derive(Debug, Clone, Serialize)]
pub struct PrimaryWait {
    /// `binlog_commit_wait_count` and `_usec` as the step asked.
    pub count: u64,
    pub usec: u64,
    /// The same two, read back from the primary after setting them (its flavor's names:
    /// MySQL's `binlog_group_commit_sync_no_delay_count` and `_sync_delay`).
    pub read_back: Option<(u64, u64)>,
    /// Why the writes ran without it, when they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
}

impl PrimaryWait {
    /// For the step's note: " (the primary's group commit waiting for 4 transactions or
    /// 10.0 ms, read back from the server)".
    fn sentence(&self) -> String {
        let usec = crate::results::format::micros(self.usec as f64);
        match (&self.read_back, &self.unsupported) {
            (Some((c, u)), _) => format!(
                " (the primary's group commit waiting for {c} transactions or {}, read back from the server)",
                crate::results::format::micros(*u as f64)
            ),
            (None, Some(why)) => format!(
                " (without the group-commit wait asked, {} × {usec}: {why})",
                self.count
            ),
            (None, None) => String::new(),
        }
    }
}

/// Set the primary's group-commit wait for the writes (put back when `restore` ends) and read
/// it back; a server without one writes without it, and the step says so.
fn hold_commits(
    restore: &mut super::restore::Restore<'_>,
    repl: &dyn Replicated,
    count: u64,
    usec: u64,
) -> Result<PrimaryWait, StepError> {
    let mut w = PrimaryWait {
        count,
        usec,
        read_back: None,
        unsupported: None,
    };
    match restore.set_commit_wait(count, usec) {
        Ok(_) => w.read_back = Some(repl.commit_wait()?),
        Err(e) if e.kind == "unsupported" => w.unsupported = Some(e.message),
        Err(e) => return Err(e.into()),
    }
    Ok(w)
}

/// What each replica of `group` did once its apply resumed at `t0`: from its state `before`
/// and the seconds it `took` to catch up (both in `group`'s order).
fn caught_up(
    f: &Follower<'_>,
    repl: &dyn Replicated,
    group: &[usize],
    before: &[ReplicaState],
    took: &[f64],
    t0: f64,
) -> Result<Vec<CatchUp>, StepError> {
    let mut results = Vec::new();
    for (k, &i) in group.iter().enumerate() {
        let after = f.state(i)?;
        let name = f.name(i).to_string();
        let secs: Vec<_> = f
            .seconds
            .iter()
            .filter(|s| s.replica == name && s.t_s > t0)
            .collect();
        let weighted = |v: &dyn Fn(&super::follow::ReplicaSecond) -> Option<f64>| {
            let mut prev = t0;
            let (mut sum, mut span) = (0.0, 0.0);
            for s in &secs {
                if let Some(x) = v(s) {
                    sum += x * (s.t_s - prev);
                    span += s.t_s - prev;
                }
                prev = s.t_s;
            }
            (span > 0.0).then(|| sum / span)
        };
        let transactions = after
            .applied
            .transactions
            .saturating_sub(before[k].applied.transactions);
        let rows = match (after.rows_changed, before[k].rows_changed) {
            (Some(a), Some(b)) => Some(a.saturating_sub(b)),
            _ => None,
        };
        let catch_up_s = took[k].max(1e-3);
        results.push(CatchUp {
            replica: name,
            settings: repl.replica_facts(i)?.settings,
            transactions,
            catch_up_s,
            applied_per_s: transactions as f64 / catch_up_s,
            rows,
            rows_per_s: rows.map(|r| r as f64 / catch_up_s),
            cpu_pct: weighted(&|s| s.cpu_pct),
            host_idle_pct: weighted(&|s| Some(s.host_idle_pct)),
        });
    }
    Ok(results)
}

fn push_replica_metrics(m: &mut Vec<Metric>, r: &CatchUp) {
    let n = &r.replica;
    m.push(Metric::new(
        &format!("apply_tps.{n}"),
        &format!("{n}: applied tx/s"),
        r.applied_per_s,
        Unit::PerSecond,
        Better::Higher,
    ));
    m.push(Metric::new(
        &format!("catch_up_s.{n}"),
        &format!("{n}: caught up in"),
        r.catch_up_s,
        Unit::Seconds,
        Better::Lower,
    ));
    if let Some(v) = r.rows_per_s {
        m.push(Metric::new(
            &format!("rows_per_s.{n}"),
            &format!("{n}: rows/s (its counters)"),
            v,
            Unit::PerSecond,
            Better::None,
        ));
    }
    if let Some(v) = r.cpu_pct {
        m.push(Metric::new(
            &format!("cpu_pct.{n}"),
            &format!("{n}: server CPU (of a core)"),
            v,
            Unit::Percent,
            Better::None,
        ));
    }
    if let Some(v) = r.host_idle_pct {
        m.push(Metric::new(
            &format!("host_idle_pct.{n}"),
            &format!("{n}: host CPU idle"),
            v,
            Unit::Percent,
            Better::None,
        ));
    }
}

/// The step was interrupted: leave the replicas applying, report what there is.
fn interrupted(ctx: &StepCtx<'_>, f: &mut Follower<'_>) -> Result<StepOutput, StepError> {
    for i in f.all() {
        let _ = f.repl.resume_apply(i);
    }
    let mut s = summary(ctx.title("catch-up"));
    s.note = Some("interrupted; the replicas were left applying".into());
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({ "timeline": f.seconds }),
        seconds: 0,
        interrupted: true,
    })
}
