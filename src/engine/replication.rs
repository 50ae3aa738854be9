//! The replication capability: a contender that is a topology — a primary and replicas, each
//! its own server — answers `Engine::replication()` with this, and the replication steps
//! drive it. Sessions from `Engine::connect` go to the primary; replicas are reached only
//! through here. Positions are in each engine's own terms (MariaDB GTID sequence numbers,
//! binary-log file and offset, PostgreSQL WAL bytes and transaction ids) brought to one shape.

use super::{EngineError, Result, Session};
use crate::decode::{DecodeError, KeyPath};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a server's replication stream stands.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Position {
    /// Transactions committed (primary) or applied (replica), counted the same way on
    /// both, so a difference is transactions behind: MariaDB's GTID sequence numbers summed
    /// over replication domains; PostgreSQL's next transaction id.
    pub transactions: u64,
    /// The stream's byte position where the engine has one (PostgreSQL's LSN; MariaDB: none,
    /// its binlog offsets are per file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The primary's binary-log coordinates, (file number, offset): the primary's own
    /// (`SHOW MASTER STATUS`), or what a replica that replicates by file and position has
    /// applied or received of them; `None` where neither is read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binlog: Option<(u64, u64)>,
    /// The position in the engine's own words (`0-1-1234`, `0/3A2F1C8`).
    pub text: String,
}

impl Position {
    /// Has this position reached `target`? By bytes where both have them (a PostgreSQL
    /// standby's LSN against the primary's), else by binary-log coordinates where both have
    /// them (a file/position replica against its primary), else by transactions.
    pub fn reached(&self, target: &Position) -> bool {
        match (self.bytes, target.bytes, self.binlog, target.binlog) {
            (Some(a), Some(b), _, _) => a >= b,
            (_, _, Some(a), Some(b)) => a >= b,
            _ => self.transactions >= target.transactions,
        }
    }
}

/// One replica's state, read from the replica.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicaState {
    /// What it has applied.
    pub applied: Position,
    /// What it has received from the primary (applied or not).
    pub received: Position,
    /// Is it applying (MariaDB and MySQL: SQL thread running; PostgreSQL: replay not paused)?
    pub applying: bool,
    /// Is it receiving (MariaDB: IO thread running; PostgreSQL: WAL receiver streaming)?
    pub receiving: bool,
    /// Rows the replica wrote, updated and deleted since it started, by its own counters
    /// (MariaDB `Handler_write + Handler_update + Handler_delete`, less the insert and later
    /// delete of each applied transaction's GTID in `mysql.gtid_slave_pos`, so exact over a
    /// catch-up and within a few rows at any instant); `None` where the engine does not count
    /// replayed rows (a PostgreSQL standby).
    pub rows_changed: Option<u64>,
    /// Received but not yet applied, bytes (MariaDB `Relay_Log_Space`; PostgreSQL receive
    /// LSN − replay LSN).
    pub backlog_bytes: Option<u64>,
    /// The server's own lag figure, seconds (MariaDB `Seconds_Behind_Master`; PostgreSQL
    /// now − `pg_last_xact_replay_timestamp()`), where it gives one.
    pub server_lag_s: Option<f64>,
    /// Why replication stopped, in the server's words (MariaDB `Last_SQL_Error` or
    /// `Last_IO_Error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A replica as the contender configured it.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaFacts {
    pub name: String,
    /// Its settings that make it this variant, read back from the server.
    pub settings: BTreeMap<String, String>,
    pub version: String,
}

/// A table's checksum on one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableSum {
    pub table: String,
    /// The checksum in the engine's words; equal content gives an equal text.
    pub sum: String,
}

/// A topology's replication, as the replication steps use it.
pub trait Replicated: Send + Sync {
    /// How many replicas; they are addressed by index in the order configured.
    fn replica_count(&self) -> usize;
    /// A replica's name, as the contender gave it.
    fn replica_name(&self, replica: usize) -> String;
    /// A replica's name and effective settings.
    fn replica_facts(&self, replica: usize) -> Result<ReplicaFacts>;
    /// The replica's server process, for CPU sampling.
    fn replica_pid(&self, replica: usize) -> Option<i32>;
    /// If the replica's server process ended, how.
    fn replica_gone(&self, replica: usize) -> Option<String>;
    /// May dbduel stop and start applying? (Always for sandboxes; for targets only when the
    /// contender says `control_replication = true`.)
    fn controls_replication(&self) -> bool;
    /// Stop applying while still receiving (MariaDB: `STOP SLAVE SQL_THREAD`; PostgreSQL:
    /// `pg_wal_replay_pause()`), so that a later resume measures apply alone.
    fn pause_apply(&self, replica: usize) -> Result<()>;
    /// Start applying again.
    fn resume_apply(&self, replica: usize) -> Result<()>;
    /// Whether a replica can stop receiving too ([`Replicated::pause_fetch`]).
    fn stops_fetching(&self) -> bool {
        false
    }
    /// Stop receiving as well (MariaDB and MySQL: `STOP SLAVE IO_THREAD`): the replica
    /// fetches nothing until [`Replicated::resume_fetch`].
    fn pause_fetch(&self, _replica: usize) -> Result<()> {
        Err(super::EngineError::new(
            "unsupported",
            "this topology's replicas always receive",
        ))
    }
    /// Start receiving again, still not applying.
    fn resume_fetch(&self, _replica: usize) -> Result<()> {
        Err(super::EngineError::new(
            "unsupported",
            "this topology's replicas always receive",
        ))
    }
    /// The primary's position now.
    fn primary_position(&self) -> Result<Position>;
    /// The replica's state now (one round trip or two; cheap enough to poll often).
    fn replica_state(&self, replica: usize) -> Result<ReplicaState>;
    /// Checksums of every table in the study's database, on the primary (`None`) or a
    /// replica, sorted by table.
    fn checksums(&self, member: Option<usize>) -> Result<Vec<TableSum>>;
    /// How checksums are computed, in words for the report.
    fn checksum_rule(&self) -> &'static str;
    /// A client session on a replica: a split client's reads, tests and diagnosis.
    fn replica_session(&self, replica: usize) -> Result<Box<dyn Session>>;
    /// Make replica `replica` a primary that takes writes, as a DBA would after its primary
    /// died (MariaDB `STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF`, PostgreSQL
    /// `pg_promote()`); the commands, as typed.
    fn promote(&self, replica: usize) -> Result<Vec<String>> {
        let _ = replica;
        Err(EngineError::new(
            "unsupported",
            "this topology's replicas are not promoted by dbduel",
        ))
    }
    /// Set the primary's group-commit wait (MariaDB `binlog_commit_wait_count` and
    /// `binlog_commit_wait_usec`) and return the values it had; `unsupported` on engines
    /// without it.
    fn set_commit_wait(&self, count: u64, usec: u64) -> Result<(u64, u64)>;
    /// Put the primary's group-commit wait back to values [`Replicated::commit_wait`] read,
    /// exactly as they were (where `set_commit_wait` gives a setting the sweep's meaning, as
    /// MySQL's count of 0 also clearing its delay).
    fn put_commit_wait(&self, count: u64, usec: u64) -> Result<()> {
        self.set_commit_wait(count, usec).map(drop)
    }
    /// The primary's group-commit wait as it is now, changing nothing (read before
    /// [`Replicated::set_commit_wait`], so the originals are on disk before any change);
    /// `unsupported` on engines without it.
    fn commit_wait(&self) -> Result<(u64, u64)> {
        Err(EngineError::new(
            "unsupported",
            "this engine has no group-commit wait",
        ))
    }
    /// Whether a writer's session may choose its GTID domain (MariaDB's
    /// `SET SESSION gtid_domain_id`), whose transactions parallel replicas may then apply out
    /// of order with another domain's.
    fn gtid_domains(&self) -> bool {
        false
    }
    /// Where a member is (the primary for `None`), as results show a target: no password.
    fn member_display(&self, member: Option<usize>) -> String;
}

/// The replicas' names, in order: each names its sandbox directory (letters, digits, `-`
/// and `_`) and no two are the same. Errors are placed at `replicas[i].name`.
/// After the primary of `r` died at `killed`: the replica that had received the most, once
/// it has applied all of it (within 300 s), promoted.
pub fn fail_over(
    r: &dyn Replicated,
    killed: std::time::Instant,
) -> Result<crate::engine::FailoverOutcome> {
    let states = (0..r.replica_count())
        .map(|i| r.replica_state(i))
        .collect::<Result<Vec<_>>>()?;
    let best = (0..states.len())
        .reduce(
            |a, b| match states[a].received.reached(&states[b].received) {
                true => a,
                false => b,
            },
        )
        .ok_or_else(|| EngineError::new("replication", "the contender has no replica"))?;
    let name = r.replica_name(best);
    let deadline = killed + std::time::Duration::from_secs(300);
    loop {
        let s = r.replica_state(best)?;
        if s.applied.reached(&s.received) {
            break;
        }
        if let Some(e) = s.error.filter(|_| !s.applying) {
            return Err(EngineError::new(
                "replication",
                format!("replica {name} stopped applying: {e}"),
            ));
        }
        if std::time::Instant::now() > deadline {
            return Err(EngineError::new(
                "replication",
                format!(
                    "replica {name} had not applied what it received 300 s after the primary died"
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let caught_up_s = killed.elapsed().as_secs_f64();
    let commands = r.promote(best)?;
    Ok(crate::engine::FailoverOutcome {
        promoted: best,
        promoted_name: name,
        received: states
            .iter()
            .enumerate()
            .map(|(i, s)| (r.replica_name(i), s.received.text.clone()))
            .collect(),
        caught_up_s,
        promoted_s: killed.elapsed().as_secs_f64(),
        commands,
    })
}

pub fn check_replica_names(names: &[&str]) -> std::result::Result<(), DecodeError> {
    for (i, name) in names.iter().enumerate() {
        let at = KeyPath::root().key("replicas").index(i).key("name");
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(DecodeError::at(
                at,
                "a replica's name is letters, digits, - and _ (it names a directory)".to_string(),
            ));
        }
        if names[..i].contains(name) {
            return Err(DecodeError::at(
                at,
                format!("two replicas are named {name:?}; give each its own name"),
            ));
        }
    }
    Ok(())
}

/// A replica's own `target`, `password_env` and `password_file` as its table in a study
/// writes them (an external topology's replica).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReplicaTargetSpec<'a> {
    pub url: Option<&'a str>,
    pub password_env: Option<&'a str>,
    pub password_file: Option<&'a std::path::PathBuf>,
}

/// Check and parse replica `i`'s target against the contender's: a primary given by target
/// has replicas given by target (dbduel provisions replicas only for a primary it provisions,
/// and wires nothing it did not start), and such a replica is configured by its owner, so
/// `configured` (an option of the replica that configures a sandbox, if one was given) is
/// refused. A replica that names no password uses the primary's; its password is read only
/// when `read_password` (as the primary's). Errors are placed under
/// `replicas[i]`.
fn replica_target(
    i: usize,
    spec: ReplicaTargetSpec<'_>,
    configured: Option<&str>,
    primary: Option<&super::target::Target>,
    read_password: bool,
    scheme: &str,
    default_port: u16,
) -> std::result::Result<Option<super::target::Target>, DecodeError> {
    let at = KeyPath::root().key("replicas").index(i);
    let example = format!("{scheme}://USER@HOST:PORT");
    let (url, primary) = match (spec.url, primary) {
        (None, None) => {
            return match (spec.password_env, spec.password_file) {
                (None, None) => Ok(None),
                _ => Err(DecodeError::at(
                    at.key(if spec.password_env.is_some() {
                        "password_env"
                    } else {
                        "password_file"
                    }),
                    "a password is for a replica given by target; a replica dbduel provisions needs none",
                )),
            };
        }
        (None, Some(_)) => {
            return Err(DecodeError::at(
                at.key("target"),
                format!(
                    "the primary is the contender's target, so each replica is a server of yours too: give its target = \"{example}\""
                ),
            ));
        }
        (Some(_), None) => {
            return Err(DecodeError::at(
                at.key("target"),
                "a replica given by target needs a primary given by target (the contender's target); dbduel provisions replicas only for a primary it provisions",
            ));
        }
        (Some(url), Some(p)) => (url, p),
    };
    if let Some(k) = configured {
        return Err(DecodeError::at(
            at.key(k),
            format!(
                "{k} configures a replica dbduel provisions; a replica given by target keeps its owner's configuration (dbduel reads its settings back into the results)"
            ),
        ));
    }
    let mut t = super::target::parse(
        &super::target::TargetSpec {
            url,
            password_env: spec.password_env,
            password_file: spec.password_file,
            restart_command: None,
            // Read where the primary's is: `dbduel k8s` leaves both to the pods, which get
            // them from a Secret, so no replica's password is needed (or printed) here.
            read_password,
        },
        scheme,
        default_port,
    )
    .map_err(|e| e.under(&at))?;
    if t.database.is_some() {
        return Err(DecodeError::at(
            at.key("target"),
            format!(
                "a replica's database is the primary's, which it replicates: leave the database out ({example})"
            ),
        ));
    }
    if spec.password_env.is_none() && spec.password_file.is_none() {
        t.password = primary.password.clone();
    }
    Ok(Some(t))
}

/// What a replica's table in a study says about where the replica is: each engine's replica
/// options implement this, and [`set_replica_targets`] checks and parses them all alike.
pub(crate) trait ReplicaOptions {
    /// Its `target`, `password_env` and `password_file`.
    fn target_spec(&self) -> ReplicaTargetSpec<'_>;
    /// The first option given that configures a replica dbduel provisions.
    fn configured(&self) -> Option<&'static str>;
    /// Keep the parsed target.
    fn set_reach(&mut self, reach: Option<super::target::Target>);
}

/// Check and parse every replica's target, in order (see [`replica_target`]), and
/// `control_replication` against them.
pub(crate) fn set_replica_targets<R: ReplicaOptions>(
    replicas: &mut [R],
    primary: Option<&super::target::Target>,
    read_password: bool,
    control_replication: bool,
    scheme: &str,
    default_port: u16,
) -> std::result::Result<(), DecodeError> {
    check_control_replication(control_replication, primary.is_some(), replicas.len())?;
    for (i, r) in replicas.iter_mut().enumerate() {
        let reach = replica_target(
            i,
            r.target_spec(),
            r.configured(),
            primary,
            read_password,
            scheme,
            default_port,
        )?;
        r.set_reach(reach);
    }
    Ok(())
}

/// `control_replication` is for a topology of someone else's servers: dbduel always controls
/// the replication of a topology it provisions, and never stops or starts another's unless
/// told.
fn check_control_replication(
    control: bool,
    external: bool,
    replicas: usize,
) -> std::result::Result<(), DecodeError> {
    if control && (!external || replicas == 0) {
        return Err(DecodeError::at(
            KeyPath::root().key("control_replication"),
            "control_replication lets dbduel stop and start the apply of replicas given by target; a topology dbduel provisions is always its to control",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(transactions: u64, binlog: Option<(u64, u64)>) -> Position {
        Position {
            transactions,
            binlog,
            ..Position::default()
        }
    }

    #[test]
    fn a_file_position_replica_reaches_its_primary_by_file_then_offset() {
        let primary = at(25, Some((2, 400)));
        // Its transactions count differently (the replica's own counters): coordinates decide.
        assert!(at(3, Some((2, 400))).reached(&primary));
        assert!(at(3, Some((3, 4))).reached(&primary));
        assert!(!at(99, Some((1, 9_000))).reached(&primary));
        assert!(!at(99, Some((2, 399))).reached(&primary));
        // A GTID replica has no coordinates: transactions decide.
        assert!(at(25, None).reached(&primary));
        assert!(!at(24, None).reached(&primary));
    }
}
