//! The meeting point of a run's shards, kept in the target database itself (the one thing
//! every shard reaches): a table `dbduel_shards` in dbduel's own marked database where each
//! shard checks in at each point. Once all have, every shard starts at the same instant of the
//! database's clock, converted to its own; the offset of each shard's clock from the
//! database's is measured on the way and recorded.
//!
//! A shard that cannot go on (a failed step, Ctrl-C) leaves a `!gone` row, so the others fail
//! at once naming it instead of waiting out the timeout; shard 0, while it runs a step alone
//! (a load), keeps a `!busy` row fresh, so the others wait for it past the timeout. Both are
//! the contender's own (its points begin with the contender's name).

use super::Shard;
use crate::engine::{Dialect, Engine, EngineError, Session, Value};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// The table's name in the contender's database.
pub const TABLE: &str = "dbduel_shards";

/// How long after the last shard checked in they all start: time for each to see it.
const LEAD: Duration = Duration::from_millis(300);

/// How often a waiting shard looks again.
const POLL: Duration = Duration::from_millis(20);

/// How often shard 0 says it is busy with a step of its own, and how old that may be for the
/// others to go on waiting for it.
pub const BEAT: Duration = Duration::from_secs(5);
const BUSY_FRESH_US: i64 = 30_000_000;

/// The longest a shard waits at a meeting (a larger `--barrier-timeout-s` is this).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 86_400);

/// Why the shards could not meet.
#[derive(Debug, thiserror::Error)]
pub enum BarrierError {
    #[error(
        "shards did not meet at `{point}` within {timeout_s} s: shard(s) {missing} of {count} never arrived (are they running, with the same study and --run-group? a shard that could not open this contender cannot say so here: see its own output)"
    )]
    Timeout {
        point: String,
        timeout_s: u64,
        missing: String,
        count: u32,
    },
    #[error("shard {shard} of this run stopped: {why}")]
    Gone { shard: u32, why: String },
    #[error(
        "shard {shard} of run group `{group}` has already met at `{point}`: a new run needs a new --run-group (DBDUEL_RUN_GROUP), and each shard of a run its own index"
    )]
    Reused {
        group: String,
        point: String,
        shard: u32,
    },
    #[error("interrupted while waiting for the other shards")]
    Interrupted,
    #[error("the shards' meeting table: {0}")]
    Engine(#[from] EngineError),
}

/// One shard's end of the meeting table, on its own session.
pub struct Barrier {
    shard: Shard,
    group: String,
    /// The contender's name (and round), which begins its points.
    scope: String,
    timeout: Duration,
    dialect: Dialect,
    session: Mutex<Box<dyn Session>>,
    /// This host's clock minus the database's, ms, as first measured.
    offset_ms: Mutex<Option<f64>>,
    /// How late, at worst, this shard began after the agreed instant, ms.
    late_ms: Mutex<f64>,
    /// The others were told this shard stopped (once is enough: the row is its key's).
    abandoned: AtomicBool,
}

impl Barrier {
    /// Open the meeting table of `engine`'s database (creating it if no shard has yet), for
    /// the points of `scope` (the contender).
    pub fn open(
        engine: &dyn Engine,
        shard: Shard,
        group: &str,
        scope: &str,
        timeout: Duration,
    ) -> Result<Barrier, BarrierError> {
        super::check_group(group).map_err(|m| EngineError::new("usage", m))?;
        let dialect = engine.dialect();
        let Some(ddl) = dialect.shard_meeting_table(TABLE) else {
            return Err(EngineError::new(
                "unsupported",
                format!(
                    "{} cannot hold the shards' meeting table: sharded runs need MariaDB or PostgreSQL targets",
                    engine.kind()
                ),
            )
            .into());
        };
        let mut session = engine.connect()?;
        if let Some(utc) = dialect.utc_session_sql() {
            // UNIX_TIMESTAMP reads NOW() in the session's zone: one without summer time.
            session.execute(utc)?;
        }
        // Two shards creating it at once may collide in PostgreSQL's catalog: once more.
        if session.execute(&ddl).is_err() {
            std::thread::sleep(Duration::from_millis(200));
            session.execute(&ddl)?;
        }
        Ok(Barrier {
            shard,
            group: group.to_string(),
            scope: scope.to_string(),
            timeout: timeout.min(MAX_TIMEOUT),
            dialect,
            session: Mutex::new(session),
            offset_ms: Mutex::new(None),
            late_ms: Mutex::new(0.0),
            abandoned: AtomicBool::new(false),
        })
    }

    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// This host's clock minus the database's, ms (positive: this host is ahead), as measured
    /// at the first meeting; None before it.
    pub fn clock_offset_ms(&self) -> Option<f64> {
        *self.offset_ms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How late, at worst, this shard began a run after the instant the shards agreed on,
    /// ms: it saw the meeting complete only then (a slow link to the database).
    pub fn late_start_ms(&self) -> f64 {
        *self.late_ms.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_us_sql(&self) -> &'static str {
        self.dialect.server_clock_us()
    }

    fn where_point(&self, point: &str) -> String {
        format!(
            "FROM {TABLE} WHERE run_group = '{}' AND point = '{}'",
            self.group,
            quote(point)
        )
    }

    /// The database's clock (µs since the epoch) and this host's instant at the middle of
    /// the round trip that read it; the offset is recorded the first time.
    fn db_clock(&self, s: &mut dyn Session) -> Result<(i64, Instant), EngineError> {
        let t0 = Instant::now();
        let db_us = s.query_i64(&format!("SELECT {}", self.now_us_sql()))?;
        let t1 = Instant::now();
        let half = (t1 - t0) / 2;
        let host_us = SystemTime::now()
            .checked_sub(half)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_micros() as i64);
        let mut off = self.offset_ms.lock().unwrap_or_else(|e| e.into_inner());
        off.get_or_insert((host_us - db_us) as f64 / 1000.0);
        Ok((db_us, t0 + half))
    }

    /// Check in at `point` and wait for every shard; returns the instant (on this host's
    /// monotonic clock) they all start at.
    pub fn meet(&self, point: &str, stop: &AtomicBool) -> Result<Instant, BarrierError> {
        let mut guard = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let s = guard.as_mut();
        let inserted = s.execute(&format!(
            "INSERT INTO {TABLE} (run_group, point, shard, arrived_us) VALUES ('{}', '{}', {}, {})",
            self.group,
            quote(point),
            self.shard.index,
            self.now_us_sql()
        ));
        if let Err(e) = inserted {
            let mine = s.query_i64(&format!(
                "SELECT COUNT(*) {} AND shard = {}",
                self.where_point(point),
                self.shard.index
            ))?;
            return Err(if mine > 0 {
                BarrierError::Reused {
                    group: self.group.clone(),
                    point: point.to_string(),
                    shard: self.shard.index,
                }
            } else {
                e.into()
            });
        }
        let mut deadline = Instant::now() + self.timeout;
        // Arrivals and departures in one round trip, as many times a second as shards wait
        // on the server under test: each `!gone` row counts N + 1, each arrival 1, and there
        // are at most N arrivals.
        let n = self.shard.count as i64;
        let poll_sql = format!(
            "SELECT COALESCE(SUM(CASE WHEN point = '{gone}' THEN {} ELSE 1 END), 0) FROM {TABLE} WHERE run_group = '{}' AND point IN ('{}', '{gone}')",
            n + 1,
            self.group,
            quote(point),
            gone = quote(&self.gone_point()),
        );
        loop {
            let seen = s.query_i64(&poll_sql)?;
            if seen % (n + 1) == n {
                break;
            }
            if seen > n {
                return Err(self.gone(s));
            }
            if stop.load(Ordering::Relaxed) {
                return Err(BarrierError::Interrupted);
            }
            if Instant::now() >= deadline && self.busy_lately(s)? {
                // Shard 0 is still at a step of its own (a load): wait on.
                deadline = Instant::now() + self.timeout.min(Duration::from_secs(60));
            }
            if Instant::now() >= deadline {
                let count_sql = format!("SELECT COUNT(*) {}", self.where_point(point));
                let mut missing = Vec::new();
                for i in 0..self.shard.count {
                    let sql = format!("{count_sql} AND shard = {i}");
                    if s.query_i64(&sql)? == 0 {
                        missing.push(i.to_string());
                    }
                }
                return Err(BarrierError::Timeout {
                    point: point.to_string(),
                    timeout_s: self.timeout.as_secs(),
                    missing: missing.join(", "),
                    count: self.shard.count,
                });
            }
            std::thread::sleep(POLL);
        }
        let last = s.query_i64(&format!(
            "SELECT MAX(arrived_us) {}",
            self.where_point(point)
        ))?;
        let (db_now, here) = self.db_clock(s)?;
        let start_db = last + LEAD.as_micros() as i64;
        if db_now > start_db {
            let mut late = self.late_ms.lock().unwrap_or_else(|e| e.into_inner());
            *late = late.max((db_now - start_db) as f64 / 1000.0);
        }
        let ahead = Duration::from_micros(start_db.saturating_sub(db_now).max(0) as u64);
        let start = here + ahead;
        while Instant::now() < start {
            std::thread::sleep((start - Instant::now()).min(POLL));
        }
        Ok(start)
    }

    /// The first shard that left, and why.
    fn gone(&self, s: &mut dyn Session) -> BarrierError {
        let sql = format!(
            "SELECT shard, note {} ORDER BY arrived_us",
            self.where_point(&self.gone_point())
        );
        let mut row = Vec::new();
        let read = s.prepare(&sql).and_then(|st| s.run_rows(st, &[], &mut row));
        let shard = row.first().and_then(|v| v.as_i64().ok()).unwrap_or(-1);
        let why = match row.get(1) {
            Some(Value::Text(t)) => t.clone(),
            _ => match read {
                Err(e) => format!("(its reason could not be read: {e})"),
                Ok(_) => "it gave no reason".into(),
            },
        };
        BarrierError::Gone {
            shard: shard.max(0) as u32,
            why,
        }
    }

    fn gone_point(&self) -> String {
        format!("{}/!gone", self.scope)
    }

    fn busy_point(&self) -> String {
        format!("{}/!busy", self.scope)
    }

    /// Has shard 0 said lately that it is busy with a step of its own?
    fn busy_lately(&self, s: &mut dyn Session) -> Result<bool, EngineError> {
        let sql = format!(
            "SELECT COALESCE(MAX(arrived_us), 0) - {} {}",
            self.now_us_sql(),
            self.where_point(&self.busy_point())
        );
        Ok(s.query_i64(&sql)? > -BUSY_FRESH_US)
    }

    /// Say (as shard 0, every [`BEAT`]) that this shard is busy with a step of its own, so
    /// the others waiting at the next point do not give up on it.
    pub fn beat(&self) -> Result<(), EngineError> {
        let mut guard = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let values = format!(
            "('{}', '{}', {}, {})",
            self.group,
            quote(&self.busy_point()),
            self.shard.index,
            self.now_us_sql()
        );
        let cols = "(run_group, point, shard, arrived_us)";
        let sql = format!(
            "INSERT INTO {TABLE} {cols} VALUES {values} {}",
            self.dialect
                .upsert_clause("run_group, point, shard", "arrived_us")
        );
        guard.execute(&sql).map(drop)
    }

    /// Tell the other shards this one cannot go on, so they stop waiting for it. Said on
    /// stderr when even that fails (the connection lost is often why the shard stopped).
    pub fn abandon(&self, why: &str) {
        if self.abandoned.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut guard = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let told = guard.execute(&format!(
            "INSERT INTO {TABLE} (run_group, point, shard, arrived_us, note) VALUES ('{}', '{}', {}, {}, '{}')",
            self.group,
            quote(&self.gone_point()),
            self.shard.index,
            self.now_us_sql(),
            quote(&why.chars().take(400).collect::<String>())
        ));
        if let Err(e) = told {
            crate::errln!(
                "warning: could not tell the other shards that shard {} stopped ({e}); they will wait for it until --barrier-timeout-s",
                self.shard.index
            );
        }
    }
}

/// Text for a SQL string literal in either dialect: quotes doubled, backslashes left out
/// (MariaDB reads them as escapes; points and notes never need one), and ASCII only (a
/// column's character set may hold no more).
fn quote(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\\' => "/".to_string(),
            '\'' => "''".to_string(),
            c if c.is_ascii() && !c.is_ascii_control() => c.to_string(),
            _ => "?".to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn literals_cannot_end_early() {
        assert_eq!(super::quote("it's a\\b · ok"), "it''s a/b ? ok");
    }
}
