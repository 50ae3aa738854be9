//! `checksums`: after the writes, does every copy hold the same data? A cluster's live nodes
//! are compared once they have all committed the same last transaction; a topology's replicas
//! once they have applied everything the primary wrote. A contender of one server has no
//! copies: the step is skipped on it, saying so.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::replication::follow::Follower;
use super::replication::verify;
use crate::engine::cluster::{self, Clustered};
use crate::results::{Better, Metric, Unit};
use serde::Deserialize;
use std::time::{Duration, Instant};

fn d_timeout() -> u64 {
    300
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecksumsParams {
    /// How long the copies may take to catch up before the step fails, seconds.
    #[serde(default = "d_timeout")]
    pub timeout_s: u64,
}

impl ChecksumsParams {
    pub fn validate(&self) -> Result<(), crate::decode::DecodeError> {
        if !(1..=86_400).contains(&self.timeout_s) {
            return Err(crate::decode::DecodeError::at(
                crate::decode::KeyPath::root().key("timeout_s"),
                "timeout_s must be from 1 to 86400",
            ));
        }
        Ok(())
    }
}

/// What was compared, for the step's figures.
struct Compared {
    copies: usize,
    tables: usize,
    wait_s: f64,
    check_s: f64,
    rule: &'static str,
    what: String,
}

impl super::kind::StepKind for ChecksumsParams {
    fn validate(&self) -> Result<(), crate::decode::DecodeError> {
        ChecksumsParams::validate(self)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all(
            "compares every copy of",
            tables,
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

pub fn run(p: &ChecksumsParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let timeout = Duration::from_secs(p.timeout_s);
    let c = if let Some(c) = ctx.engine.cluster() {
        nodes_equal(c, timeout, ctx.stop)?
    } else if let Some(r) = ctx.engine.replication() {
        let t0 = Instant::now();
        if !Follower::new(r, t0).settle(timeout, ctx.stop)? {
            return Err(StepError::Skipped(
                "interrupted before the replicas caught up".into(),
            ));
        }
        let wait_s = t0.elapsed().as_secs_f64();
        let checked = verify::checksums_equal(r)?;
        Compared {
            copies: r.replica_count() + 1,
            tables: study_tables(&checked.sums),
            wait_s,
            check_s: checked.elapsed_s,
            rule: checked.rule,
            what: format!(
                "the primary and {} replica(s), after each applied all the primary wrote",
                r.replica_count()
            ),
        }
    } else {
        return Err(StepError::Skipped(
            "one server: it holds the only copy, there is nothing to compare".into(),
        ));
    };
    let mut s = summary(ctx.title("checksums of every copy"));
    s.elapsed_s = Some(c.wait_s + c.check_s);
    s.metrics = vec![
        Metric::new(
            "copies_equal",
            "copies equal",
            c.copies as f64,
            Unit::Count,
            Better::None,
        ),
        Metric::new(
            "tables",
            "tables compared",
            c.tables as f64,
            Unit::Count,
            Better::None,
        ),
        Metric::new(
            "catch_up_s",
            "caught up in",
            c.wait_s,
            Unit::Seconds,
            Better::Lower,
        ),
    ];
    s.note = Some(format!(
        "{} copies equal: {} ({}; compared in {:.1} s)",
        c.copies, c.what, c.rule, c.check_s
    ));
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "copies": c.copies,
            "tables": c.tables,
            "wait_s": c.wait_s,
            "check_s": c.check_s,
            "rule": c.rule,
        }),
        seconds: 0,
        interrupted: false,
    })
}

/// Tables compared, dbduel's own marker table not counted.
fn study_tables(sums: &[crate::engine::replication::TableSum]) -> usize {
    sums.iter()
        .filter(|t| t.table != crate::engine::MARKER)
        .count()
}

/// Wait until the live nodes agree on their last transaction, then compare each one's
/// checksums with the first live node's.
fn nodes_equal(
    c: &dyn Clustered,
    timeout: Duration,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Compared, StepError> {
    let t0 = Instant::now();
    // A node that runs but is cut off from the cluster's majority (not `ready`) serves no
    // queries and holds no agreed state: it is left out, and the note says so.
    let (live, cut_off): (Vec<usize>, Vec<usize>) = (0..c.node_count())
        .filter(|&i| c.node_gone(i).is_none())
        .partition(|&i| c.node_status(i).is_ok_and(|s| s.ready));
    loop {
        let statuses: Vec<_> = live.iter().map(|&i| c.node_status(i).ok()).collect();
        if statuses.iter().all(Option::is_some) && cluster::settled(&statuses) {
            break;
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(StepError::Skipped(
                "interrupted before the nodes settled".into(),
            ));
        }
        if t0.elapsed() > timeout {
            let seen: Vec<String> = live
                .iter()
                .zip(&statuses)
                .map(|(&i, s)| match s {
                    Some(s) => format!(
                        "{}: last committed {}, {} queued",
                        c.node_name(i),
                        s.last_committed,
                        s.recv_queue
                    ),
                    None => format!("{}: no answer", c.node_name(i)),
                })
                .collect();
            return Err(StepError::Check(format!(
                "the nodes did not settle within {} s ({}): {}",
                timeout.as_secs(),
                c.settled_rule(),
                seen.join("; ")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let wait_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let Some((&first, rest)) = live.split_first() else {
        return Err(StepError::Check("no node of the cluster is left".into()));
    };
    let reference = c.checksums(first)?;
    let first_name = c.node_name(first);
    for &i in rest {
        let sums = c.checksums(i)?;
        let name = c.node_name(i);
        if let Some(problem) = verify::difference((&first_name, &reference), (&name, &sums)) {
            return Err(StepError::Check(format!(
                "{name} does not hold what {first_name} holds: {problem} ({})",
                c.checksum_rule()
            )));
        }
    }
    let lost = c.node_count() - live.len() - cut_off.len();
    let cut_off_note = if cut_off.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = cut_off.iter().map(|&i| c.node_name(i)).collect();
        format!(
            "; {} running but cut off from the majority, left out",
            names.join(", ")
        )
    };
    Ok(Compared {
        copies: live.len(),
        tables: study_tables(&reference),
        wait_s,
        check_s: t1.elapsed().as_secs_f64(),
        rule: c.checksum_rule(),
        what: if lost == 0 && cut_off.is_empty() {
            format!("every node of the {}-node cluster", c.node_count())
        } else {
            format!(
                "the {} nodes left of {} ({lost} lost{cut_off_note})",
                live.len(),
                c.node_count()
            )
        },
    })
}
