//! PostgreSQL replication topologies: a contender's `replicas = [...]` become physical
//! streaming standbys, each a sandbox made from a base backup of the contender's primary
//! (base_backup.rs), and the `Replicated` capability over them — positions as WAL bytes
//! (LSN) and transaction ids, apply paused with `pg_wal_replay_pause()`, checksums as
//! per-table row hashes.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::replication::{Position, ReplicaFacts, ReplicaState, Replicated, TableSum};
use crate::engine::target::Target;
use crate::engine::{EngineError, OpenCtx, Result, Session};
use crate::engines::members::Members;
use crate::engines::postgres::pg_err;
use crate::engines::postgres::recipe::{PostgresRecipe, SUPERUSER};
use crate::engines::server::sandbox_err;
use crate::engines::server::{Server, extra_settings};
use crate::engines::wire::pg::PgWire;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One standby of a PostgreSQL contender, as a study writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresReplica {
    /// Names the replica in reports.
    pub name: String,
    /// Any other settings for this standby's postgresql.conf.
    #[serde(default)]
    pub server: toml::Table,
    /// An existing standby of the contender's target (`postgres://USER@HOST:PORT`),
    /// already streaming from it; then `server` does not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Where that standby's password is (the primary's password when neither is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<std::path::PathBuf>,
    /// The primary waits at each commit until this standby has flushed it: named in the
    /// primary's `synchronous_standby_names` once the standby streams (named there before,
    /// the primary's first commits would wait for a standby not yet made).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synchronous: bool,
    /// The parsed `target`.
    #[serde(skip)]
    pub reach: Option<Target>,
}

impl crate::engines::options::ReplicaOptions for PostgresReplica {
    fn name(&self) -> &str {
        &self.name
    }

    fn validate(&self, at: &KeyPath) -> std::result::Result<(), DecodeError> {
        PostgresReplica::validate(self, at)
    }
}

impl PostgresReplica {
    pub fn validate(&self, at: &KeyPath) -> std::result::Result<(), DecodeError> {
        extra_settings(&self.server, &super::recipe::SETTINGS).map_err(|e| e.under(at))?;
        if self.synchronous && self.target.is_some() {
            return Err(DecodeError::at(
                at.key("synchronous"),
                "a standby given by target is synchronous when its primary says so (synchronous_standby_names there): dbduel sets it only on a primary it provisions; leave synchronous out",
            ));
        }
        Ok(())
    }
}

impl crate::engine::replication::ReplicaOptions for PostgresReplica {
    fn target_spec(&self) -> crate::engine::replication::ReplicaTargetSpec<'_> {
        crate::engine::replication::ReplicaTargetSpec {
            url: self.target.as_deref(),
            password_env: self.password_env.as_deref(),
            password_file: self.password_file.as_ref(),
        }
    }

    fn configured(&self) -> Option<&'static str> {
        (!self.server.is_empty()).then_some("server")
    }

    fn set_reach(&mut self, reach: Option<Target>) {
        self.reach = reach;
    }
}

/// Name the standbys `names` in the primary's `synchronous_standby_names` (each commit waits
/// for all of them) and wait until the primary reports each as `sync` in
/// `pg_stat_replication`.
fn make_synchronous(primary: &Target, names: &[&str]) -> Result<()> {
    let mut c = crate::engines::postgres::admin_connect(
        &crate::engines::postgres::config_for(primary, "postgres"),
        primary,
    )
    .map_err(|e| {
        EngineError::new(
            "connect",
            format!(
                "cannot connect to the primary at {}: {e}",
                primary.display()
            ),
        )
    })?;
    // Standby names are safe names (letters, digits, `_`, `-`): quoted as identifiers.
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let setting = format!("FIRST {} ({})", names.len(), list.join(", "));
    // ALTER SYSTEM runs alone, never in a multi-statement (implicit) transaction.
    c.batch_execute(&format!(
        "ALTER SYSTEM SET synchronous_standby_names = '{setting}'"
    ))
    .map_err(pg_err)?;
    c.batch_execute("SELECT pg_reload_conf()").map_err(pg_err)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let rows = c
            .query(
                "SELECT application_name FROM pg_stat_replication WHERE sync_state = 'sync'",
                &[],
            )
            .map_err(pg_err)?;
        let synced: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        if names.iter().all(|n| synced.iter().any(|s| s == n)) {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(EngineError::new(
                "replication",
                format!(
                    "standby(s) {} did not become synchronous within 60 s (the primary reports {} as sync)",
                    names.join(", "),
                    if synced.is_empty() {
                        "none".to_string()
                    } else {
                        synced.join(", ")
                    }
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A primary and its standbys.
pub struct PostgresTopology {
    database: String,
    members: Members<postgres::Client>,
    /// May dbduel pause and resume the standbys' replay?
    controls: bool,
}

/// The primary's settings when it has standbys: WAL kept for a standby that falls behind.
pub fn primary_defaults(s: &mut BTreeMap<String, String>, user: &toml::Table) {
    if !user.contains_key("wal_keep_size") {
        s.insert("wal_keep_size".into(), "4GB".into());
    }
    if !user.contains_key("hot_standby_feedback") {
        s.insert("hot_standby_feedback".into(), "on".into());
    }
}

impl PostgresTopology {
    /// Make each standby from a base backup of the running primary and start it streaming.
    pub fn provision(
        primary: &Server,
        primary_reach: &Target,
        ctx: &OpenCtx<'_>,
        database: &str,
        replicas: &[PostgresReplica],
        primary_recipe: &PostgresRecipe,
    ) -> Result<PostgresTopology> {
        if let Some(mut sb) = primary.sandbox() {
            sb.set_role(&format!("primary of {} standbys", replicas.len()))
                .map_err(sandbox_err)?;
        }
        // A standby's accounts are a copy of the primary's: so is its secret.
        let secret = match primary.sandbox().map(|sb| sb.secret()) {
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => return Err(sandbox_err(e)),
            None => None,
        };
        let layout = match primary.sandbox() {
            Some(sb) => sb.layout.clone(),
            None => {
                return Err(EngineError::new(
                    "usage",
                    "standbys are provisioned only for a sandbox primary",
                ));
            }
        };
        let source = super::base_backup::Source {
            port: primary_reach.port,
            layout,
            standby: String::new(),
        };
        let mut members = Vec::with_capacity(replicas.len());
        for r in replicas {
            let mut settings = primary_recipe.settings.clone();
            settings.insert("hot_standby".into(), "on".into());
            // validated when the study was read
            for (k, v) in extra_settings(&r.server, &super::recipe::SETTINGS).unwrap_or_default() {
                settings.insert(k, v);
            }
            let recipe = PostgresRecipe {
                settings,
                base_backup_of: Some(super::base_backup::Source {
                    standby: r.name.clone(),
                    ..source.clone()
                }),
                memory_limit_mb: None,
                device_profile: None,
                data_dir: None,
                // The primary's server: a standby's data is of its version.
                server_dir: primary_recipe.server_dir.clone(),
                secret: secret.clone(),
                tls: None,
            };
            let p = Server::provision(
                None,
                Box::new(recipe),
                &format!("{}/{}", ctx.contender, r.name),
                &ctx.dir.join("replicas").join(&r.name),
                "postgres",
                SUPERUSER,
            )?;
            if let Some(mut sb) = p.server.sandbox() {
                sb.set_role(&format!("standby of 127.0.0.1:{}", primary_reach.port))
                    .map_err(sandbox_err)?;
            }
            members.push(crate::engines::members::Member {
                name: r.name.clone(),
                server: p.server,
                reach: p.reach,
            });
        }
        let sync: Vec<&str> = replicas
            .iter()
            .filter(|r| r.synchronous)
            .map(|r| r.name.as_str())
            .collect();
        if !sync.is_empty() {
            make_synchronous(primary_reach, &sync)?;
        }
        Ok(PostgresTopology {
            database: database.to_string(),
            members: Members::new(primary_reach.clone(), members),
            controls: true,
        })
    }

    /// Take the standbys given by target as they are: each must be in recovery
    /// (`pg_is_in_recovery()`); dbduel pauses or resumes their replay only when
    /// `control_replication` says so.
    pub fn attach(
        primary_reach: &Target,
        database: &str,
        replicas: &[PostgresReplica],
        control: bool,
    ) -> Result<PostgresTopology> {
        let mut list = Vec::with_capacity(replicas.len());
        for r in replicas {
            let Some(t) = &r.reach else {
                return Err(EngineError::new(
                    "usage",
                    format!("standby {} of a target needs a target of its own", r.name),
                ));
            };
            // The study's database may not have reached the standby yet.
            let mut c = crate::engines::postgres::admin_connect(
                &crate::engines::postgres::config_for(t, "postgres"),
                t,
            )
            .map_err(|e| {
                EngineError::new(
                    "connect",
                    format!(
                        "cannot connect to standby {} at {}: {e}",
                        r.name,
                        t.display()
                    ),
                )
            })?;
            let standby: bool = c
                .query_one("SELECT pg_is_in_recovery()", &[])
                .map_err(pg_err)?
                .get(0);
            if !standby {
                return Err(EngineError::new(
                    "replication",
                    format!(
                        "replica {} at {} is not a standby (pg_is_in_recovery() is false): make it a streaming standby of the primary {} first; dbduel wires only servers it provisions",
                        r.name,
                        t.display(),
                        primary_reach.display()
                    ),
                ));
            }
            list.push(crate::engines::members::external_member(&r.name, t));
        }
        Ok(PostgresTopology {
            database: database.to_string(),
            members: Members::new(primary_reach.clone(), list),
            controls: control,
        })
    }

    /// Run `f` on a member's connection to the study's database (the primary's for `None`).
    fn admin<T>(
        &self,
        member: Option<usize>,
        f: impl FnOnce(&mut postgres::Client) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        let db = &self.database;
        self.members.admin(
            member,
            |reach| {
                crate::engines::postgres::admin_connect(
                    &crate::engines::postgres::config_for(reach, db),
                    reach,
                )
            },
            f,
            pg_err,
        )
    }

    pub fn gone(&self) -> Option<String> {
        self.members.gone()
    }

    pub fn finish(self, keep: bool) -> Result<()> {
        self.members.finish(keep)
    }
}

/// A position from an LSN's text, its byte offset and a transaction id horizon.
fn position(lsn: Option<String>, bytes: Option<i64>, next_xid: i64) -> Position {
    Position {
        transactions: u64::try_from(next_xid).unwrap_or(0),
        bytes: bytes.and_then(|b| u64::try_from(b).ok()),
        binlog: None,
        text: lsn.unwrap_or_default(),
    }
}

impl Replicated for PostgresTopology {
    fn replica_count(&self) -> usize {
        self.members.list.len()
    }

    fn replica_name(&self, replica: usize) -> String {
        self.members.name(replica)
    }

    fn replica_facts(&self, replica: usize) -> Result<ReplicaFacts> {
        let (rows, version) = self.admin(Some(replica), |c| {
            let rows = c.query(
                "SELECT name, setting FROM pg_settings WHERE name IN ('hot_standby', 'shared_buffers', \
                 'synchronous_commit', 'recovery_prefetch', 'max_standby_streaming_delay', 'fsync')",
                &[],
            )?;
            let v = c.query_one("SHOW server_version", &[])?;
            Ok((rows, v.get::<_, String>(0)))
        })?;
        self.members.facts(
            replica,
            rows.iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
                .collect(),
            format!("PostgreSQL {version}"),
        )
    }

    fn replica_pid(&self, replica: usize) -> Option<i32> {
        self.members.pid(replica)
    }

    fn replica_gone(&self, replica: usize) -> Option<String> {
        self.members.gone_of(replica)
    }

    fn member_display(&self, member: Option<usize>) -> String {
        self.members.display(member)
    }

    fn controls_replication(&self) -> bool {
        self.controls
    }

    fn pause_apply(&self, replica: usize) -> Result<()> {
        self.admin(Some(replica), |c| {
            c.batch_execute("SELECT pg_wal_replay_pause()")
        })
    }

    fn resume_apply(&self, replica: usize) -> Result<()> {
        self.admin(Some(replica), |c| {
            c.batch_execute("SELECT pg_wal_replay_resume()")
        })
    }

    fn primary_position(&self) -> Result<Position> {
        let r = self.admin(None, |c| {
            c.query_one(
                "SELECT pg_current_wal_lsn()::text, (pg_current_wal_lsn() - '0/0')::bigint, \
                 txid_snapshot_xmax(txid_current_snapshot())",
                &[],
            )
        })?;
        Ok(position(r.get(0), r.get(1), r.get(2)))
    }

    fn replica_state(&self, replica: usize) -> Result<ReplicaState> {
        let r = self.admin(Some(replica), |c| {
            c.query_one(
                "SELECT pg_last_wal_replay_lsn()::text, (pg_last_wal_replay_lsn() - '0/0')::bigint, \
                 pg_last_wal_receive_lsn()::text, (pg_last_wal_receive_lsn() - '0/0')::bigint, \
                 txid_snapshot_xmax(txid_current_snapshot()), pg_is_wal_replay_paused(), \
                 (SELECT status FROM pg_stat_wal_receiver), \
                 EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8",
                &[],
            )
        })?;
        let applied = position(r.get(0), r.get(1), r.get(4));
        let mut received = position(r.get(2), r.get(3), 0);
        received.transactions = applied.transactions;
        let backlog = match (received.bytes, applied.bytes) {
            (Some(a), Some(b)) => Some(a.saturating_sub(b)),
            _ => None,
        };
        let paused: bool = r.get(5);
        let status: Option<String> = r.get(6);
        Ok(ReplicaState {
            applied,
            received,
            applying: !paused,
            receiving: status.as_deref() == Some("streaming"),
            rows_changed: None,
            backlog_bytes: backlog,
            server_lag_s: r.get(7),
            error: None,
        })
    }

    fn checksums(&self, member: Option<usize>) -> Result<Vec<TableSum>> {
        self.admin(member, |c| {
            let tables: Vec<String> = c
                .query(
                    "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
                    &[],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let mut out = Vec::with_capacity(tables.len());
            for t in tables {
                let r = c.query_one(
                    &format!(
                        "SELECT count(*)::text || ':' || coalesce(sum(hashtextextended(x::text, 0)::numeric), 0)::text FROM \"{t}\" x"
                    ),
                    &[],
                )?;
                out.push(TableSum {
                    table: t,
                    sum: r.get(0),
                });
            }
            Ok(out)
        })
    }

    fn checksum_rule(&self) -> &'static str {
        "rows and the sum of every row's 64-bit hash (hashtextextended of the row's text), per table"
    }

    fn promote(&self, replica: usize) -> Result<Vec<String>> {
        // Waits (up to 60 s) until the standby is a primary that takes writes.
        const PROMOTE: &str = "SELECT pg_promote(true, 60)";
        let done: bool = self.admin(Some(replica), |c| c.query_one(PROMOTE, &[])?.try_get(0))?;
        if !done {
            return Err(EngineError::new(
                "replication",
                format!(
                    "{PROMOTE} on {} did not finish within 60 s",
                    self.replica_name(replica)
                ),
            ));
        }
        Ok(vec![PROMOTE.to_string()])
    }

    fn replica_session(&self, replica: usize) -> Result<Box<dyn Session>> {
        let m = self.members.get(replica)?;
        Ok(Box::new(PgWire::connect(&m.reach, &self.database)?))
    }

    fn set_commit_wait(&self, _count: u64, _usec: u64) -> Result<(u64, u64)> {
        Err(EngineError::new(
            "unsupported",
            "binlog_commit_wait_count and _usec are MariaDB's group-commit waits; PostgreSQL's commit_delay is another mechanism, not swept here",
        ))
    }
}
