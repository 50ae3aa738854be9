//! The PostgreSQL engine: a private sandboxed server per contender, driven with the `postgres`
//! crate (synchronous; each client owns its connection and the crate's small runtime, never
//! called from inside an async runtime). Loads with `COPY ... FROM STDIN`; the VACUUM/ANALYZE
//! policy after a load is an explicit option.

use super::{
    Dialect, Engine, EngineError, EngineInfo, Footprint, LoadOutcome, LoadRequest, OpenCtx,
    RestartOutcome, Result, Session, StmtId, Value,
};
use crate::sandbox::postgres::{PostgresRecipe, SUPERUSER};
use crate::sandbox::{Recipe, Sandbox, SandboxError};
use crate::study::decode::{DecodeError, KeyPath};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

const SYNC_COMMIT: &[&str] = &["on", "off", "local", "remote_write", "remote_apply"];
const WAL_LEVELS: &[&str] = &["minimal", "replica", "logical"];
const AFTER_LOAD: &[&str] = &["none", "analyze", "vacuum_analyze"];

/// Contender options for `engine = "postgres"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresOptions {
    /// shared_buffers, MiB.
    #[serde(default = "default_shared_buffers")]
    pub shared_buffers_mb: u64,
    /// synchronous_commit: on, off, local, remote_write or remote_apply.
    #[serde(default = "default_sync")]
    pub synchronous_commit: String,
    /// wal_level: minimal, replica or logical.
    #[serde(default = "default_wal_level")]
    pub wal_level: String,
    /// max_wal_size, MiB.
    #[serde(default = "default_max_wal")]
    pub max_wal_size_mb: u64,
    /// What runs after a bulk load, timed apart from it: none, analyze or vacuum_analyze
    /// (sets hint bits and the visibility map, so later steps do not pay for it; autovacuum
    /// would otherwise do it at an unknown moment during them).
    #[serde(default = "default_after_load")]
    pub after_load: String,
    /// Load pg_stat_statements, so statement counts can be checked against the server's.
    #[serde(default = "default_true")]
    pub stat_statements: bool,
    /// Any other server settings, appended to the sandbox's postgresql.conf as given.
    #[serde(default)]
    pub server: toml::Table,
}

fn default_shared_buffers() -> u64 {
    256
}
fn default_sync() -> String {
    "on".into()
}
fn default_wal_level() -> String {
    "replica".into()
}
fn default_max_wal() -> u64 {
    1024
}
fn default_after_load() -> String {
    "vacuum_analyze".into()
}
fn default_true() -> bool {
    true
}

fn one_of(key: &str, v: &str, allowed: &[&str]) -> std::result::Result<(), DecodeError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(DecodeError::at(
            KeyPath::root().key(key),
            format!(
                "{key} = {v:?} is not allowed; use one of: {}",
                allowed.join(", ")
            ),
        ))
    }
}

/// A TOML scalar as a postgresql.conf value.
fn setting_value(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "on" } else { "off" }.to_string()),
        _ => None,
    }
}

impl PostgresOptions {
    pub fn validate(&self) -> std::result::Result<(), DecodeError> {
        one_of("synchronous_commit", &self.synchronous_commit, SYNC_COMMIT)?;
        one_of("wal_level", &self.wal_level, WAL_LEVELS)?;
        one_of("after_load", &self.after_load, AFTER_LOAD)?;
        if !(1..=1 << 20).contains(&self.shared_buffers_mb) {
            return Err(DecodeError::at(
                KeyPath::root().key("shared_buffers_mb"),
                "shared_buffers_mb must be from 1 to 1048576",
            ));
        }
        if !(32..=1 << 24).contains(&self.max_wal_size_mb) {
            return Err(DecodeError::at(
                KeyPath::root().key("max_wal_size_mb"),
                "max_wal_size_mb must be from 32 to 16777216",
            ));
        }
        for (k, v) in &self.server {
            let ok = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !ok || setting_value(v).is_none_or(|t| t.contains('\n')) {
                return Err(DecodeError::at(
                    KeyPath::root().key("server").key(k),
                    "server settings are names (letters, digits, _ and .) with a one-line string, number or boolean",
                ));
            }
        }
        Ok(())
    }

    /// Are the server binaries installed?
    pub fn preflight(&self) -> Result<()> {
        self.recipe(1).check_installed().map_err(sandbox_err)
    }

    fn recipe(&self, max_clients: u64) -> PostgresRecipe {
        let mut s = BTreeMap::new();
        s.insert(
            "shared_buffers".into(),
            format!("{}MB", self.shared_buffers_mb),
        );
        s.insert("synchronous_commit".into(), self.synchronous_commit.clone());
        s.insert("wal_level".into(), self.wal_level.clone());
        if self.wal_level == "minimal" {
            s.insert("max_wal_senders".into(), "0".into());
        }
        s.insert("max_wal_size".into(), format!("{}MB", self.max_wal_size_mb));
        s.insert("max_connections".into(), (max_clients + 20).to_string());
        if self.stat_statements {
            s.insert(
                "shared_preload_libraries".into(),
                "pg_stat_statements".into(),
            );
            s.insert("pg_stat_statements.max".into(), "10000".into());
        }
        for (k, v) in &self.server {
            if let Some(t) = setting_value(v) {
                s.insert(k.clone(), t);
            }
        }
        PostgresRecipe { settings: s }
    }
}

fn sandbox_err(e: SandboxError) -> EngineError {
    let kind = match e {
        SandboxError::Missing { .. } => "missing",
        _ => "sandbox",
    };
    EngineError::new(kind, e.to_string())
}

fn pg_err(e: postgres::Error) -> EngineError {
    let kind = match e.code().map(|c| c.code()) {
        Some("53300") => "too_many_connections",
        Some("40001") | Some("40P01") | Some("55P03") => "lock",
        Some(c) if c.starts_with("23") => "constraint",
        Some("53100") => "disk_full",
        Some("57014") => "timeout",
        Some(c) if c.starts_with("42") => "sql",
        Some(_) => "server",
        None if e.is_closed() => "connection",
        None => "connection",
    };
    // The crate's Display says only "db error"; the server's own message is in the source.
    let detail = e
        .as_db_error()
        .map(|d| format!("{}: {}", d.severity(), d.message()))
        .unwrap_or_else(|| e.to_string());
    EngineError::new(kind, format!("postgres: {detail}"))
}

/// A PostgreSQL contender: its sandbox and how to reach it.
pub struct PostgresEngine {
    opts: PostgresOptions,
    sandbox: Mutex<Sandbox>,
    port: u16,
    database: String,
    datadir: PathBuf,
}

impl PostgresEngine {
    /// Create and start the contender's sandbox and create the study's database in it.
    pub fn open(opts: PostgresOptions, ctx: &OpenCtx<'_>) -> Result<Self> {
        let recipe = opts.recipe(ctx.max_clients);
        let mut sandbox =
            Sandbox::create(Box::new(recipe), ctx.contender, &ctx.dir.join("sandbox"))
                .map_err(sandbox_err)?;
        sandbox.start().map_err(sandbox_err)?;
        let engine = PostgresEngine {
            port: sandbox.layout.port,
            datadir: sandbox.layout.datadir.clone(),
            sandbox: Mutex::new(sandbox),
            opts,
            database: ctx.database.to_string(),
        };
        engine
            .client("postgres")?
            .batch_execute(&format!("CREATE DATABASE {}", engine.database))
            .map_err(pg_err)?;
        if engine.opts.stat_statements {
            engine
                .client(&engine.database)?
                .batch_execute("CREATE EXTENSION pg_stat_statements")
                .map_err(pg_err)?;
        }
        Ok(engine)
    }

    fn client(&self, db: &str) -> Result<postgres::Client> {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user(SUPERUSER)
            .dbname(db)
            .application_name("dbduel")
            .connect_timeout(std::time::Duration::from_secs(10))
            .connect(postgres::NoTls)
            .map_err(pg_err)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sandbox> {
        self.sandbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Relation files of `table`: heap, TOAST table and its index, every index; each with all
    /// 1 GiB segments and its free-space-map and visibility-map forks.
    fn relation_files(&self, c: &mut postgres::Client, table: &str) -> Result<Vec<PathBuf>> {
        let rows = c
            .query(
                "WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE oid = $1::text::regclass) \
                 SELECT pg_relation_filepath(c.oid) FROM pg_class c, t \
                 WHERE c.oid = t.oid OR c.oid = t.reltoastrelid \
                    OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (t.oid, t.reltoastrelid))",
                &[&table],
            )
            .map_err(pg_err)?;
        let mut files = Vec::new();
        for r in rows {
            let rel: Option<String> = r.get(0);
            let Some(rel) = rel else { continue };
            let base = self.datadir.join(&rel);
            for fork in ["", "_fsm", "_vm", "_init"] {
                let first = PathBuf::from(format!("{}{fork}", base.display()));
                if !first.exists() {
                    continue;
                }
                files.push(first.clone());
                for seg in 1.. {
                    let p = PathBuf::from(format!("{}.{seg}", first.display()));
                    if !p.exists() {
                        break;
                    }
                    files.push(p);
                }
            }
        }
        Ok(files)
    }
}

impl Engine for PostgresEngine {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn connect(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(PgSession {
            client: self.client(&self.database)?,
            stmts: Vec::new(),
        }))
    }

    fn info(&self) -> Result<EngineInfo> {
        let mut c = self.client(&self.database)?;
        let version: String = c
            .query_one("SHOW server_version", &[])
            .map_err(pg_err)?
            .get(0);
        let mut names: Vec<String> = [
            "shared_buffers",
            "synchronous_commit",
            "wal_level",
            "max_wal_size",
            "max_connections",
            "fsync",
            "full_page_writes",
            "checkpoint_timeout",
            "autovacuum",
            "shared_preload_libraries",
            "effective_cache_size",
            "work_mem",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        names.extend(self.opts.server.keys().cloned());
        let mut settings = BTreeMap::new();
        for r in c
            .query(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1)",
                &[&names],
            )
            .map_err(pg_err)?
        {
            settings.insert(r.get::<_, String>(0), r.get::<_, String>(1));
        }
        settings.insert("after_load".into(), self.opts.after_load.clone());
        Ok(EngineInfo {
            engine: "postgres".into(),
            version,
            settings,
        })
    }

    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        let mut c = self.client(&self.database)?;
        let mut file = std::fs::File::open(req.file)
            .map_err(|e| EngineError::new("io", format!("open dataset file: {e}")))?;
        let mut writer = c
            .copy_in(&format!("COPY {} FROM STDIN", req.table))
            .map_err(pg_err)?;
        std::io::copy(&mut file, &mut writer)
            .map_err(|e| EngineError::new("io", format!("streaming the dataset into COPY: {e}")))?;
        let rows = writer.finish().map_err(pg_err)?;
        let after = match self.opts.after_load.as_str() {
            "analyze" => Some(format!("ANALYZE {}", req.table)),
            "vacuum_analyze" => Some(format!("VACUUM ANALYZE {}", req.table)),
            _ => None,
        };
        let method = match after {
            Some(sql) => {
                let t = Instant::now();
                c.batch_execute(&sql).map_err(pg_err)?;
                format!(
                    "COPY FROM STDIN, one transaction; then {sql} ({:.2} s, not in the load time)",
                    t.elapsed().as_secs_f64()
                )
            }
            None => "COPY FROM STDIN, one transaction; no VACUUM/ANALYZE after (autovacuum may run later)".into(),
        };
        Ok(LoadOutcome { rows, method })
    }

    fn footprint(&self, table: &str) -> Result<Footprint> {
        let mut c = self.client(&self.database)?;
        // Write dirty pages out so the files hold what the buffers hold.
        c.batch_execute("CHECKPOINT").map_err(pg_err)?;
        let engine_bytes: i64 = c
            .query_one(
                "SELECT pg_total_relation_size($1::text::regclass)",
                &[&table],
            )
            .map_err(pg_err)?
            .get(0);
        let files = self.relation_files(&mut c, table)?;
        let (files_bytes, allocated_bytes, files) = super::file_sizes(&self.datadir, &files);
        Ok(Footprint {
            files_bytes,
            allocated_bytes,
            files,
            files_rule: "the table's heap, its TOAST table and TOAST index, and every index: all segments with their free-space-map and visibility-map forks, after a CHECKPOINT".into(),
            engine_bytes: Some(engine_bytes.max(0) as u64),
            engine_rule: "pg_total_relation_size (the same relations and forks)".into(),
        })
    }

    fn restart(&self, cold: bool) -> Result<RestartOutcome> {
        let start = Instant::now();
        let mut sb = self.lock();
        sb.stop().map_err(sandbox_err)?;
        let (cold_ok, cache, resident) = if cold {
            let ev = crate::oscache::evict(&crate::oscache::files_under(&self.datadir));
            let ok = ev.is_cold();
            let cache = if ok {
                ev.method
            } else {
                format!("warm-restart: page cache not emptied ({})", ev.method)
            };
            (ok, cache, ev.resident_bytes)
        } else {
            (false, "warm: page cache left as is".to_string(), None)
        };
        sb.start().map_err(sandbox_err)?;
        Ok(RestartOutcome {
            cold: cold_ok,
            cache: format!("server restarted (shared_buffers empty); {cache}"),
            resident_bytes: resident,
            elapsed_s: start.elapsed().as_secs_f64(),
        })
    }

    fn server_pid(&self) -> Option<i32> {
        self.lock().pid()
    }

    fn counters(&self) -> Result<Option<BTreeMap<String, u64>>> {
        let mut c = self.client(&self.database)?;
        let mut out = BTreeMap::new();
        let r = c
            .query_one(
                "SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, \
                        tup_updated, tup_deleted, blks_read, blks_hit \
                 FROM pg_stat_database WHERE datname = current_database()",
                &[],
            )
            .map_err(pg_err)?;
        for (i, name) in [
            "xact_commit",
            "xact_rollback",
            "tup_returned",
            "tup_fetched",
            "tup_inserted",
            "tup_updated",
            "tup_deleted",
            "blks_read",
            "blks_hit",
        ]
        .iter()
        .enumerate()
        {
            out.insert(name.to_string(), r.get::<_, i64>(i).max(0) as u64);
        }
        if self.opts.stat_statements {
            let r = c
                .query_one(
                    "SELECT COALESCE(SUM(calls), 0)::bigint FROM pg_stat_statements \
                     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                       AND query ILIKE 'select%' AND query NOT ILIKE '%pg_stat%'",
                    &[],
                )
                .map_err(pg_err)?;
            out.insert("select_calls".into(), r.get::<_, i64>(0).max(0) as u64);
        }
        Ok(Some(out))
    }

    fn server_log(&self) -> Option<PathBuf> {
        Some(self.lock().layout.log_file.clone())
    }

    fn finish(self: Box<Self>, keep: bool) -> Result<()> {
        let sb = self.sandbox.into_inner().unwrap_or_else(|p| p.into_inner());
        sb.finish(keep).map_err(sandbox_err)
    }
}

/// One PostgreSQL connection with its prepared statements.
pub struct PgSession {
    client: postgres::Client,
    stmts: Vec<postgres::Statement>,
}

impl Session for PgSession {
    fn execute(&mut self, sql: &str) -> Result<u64> {
        let msgs = self.client.simple_query(sql).map_err(pg_err)?;
        let mut rows = 0u64;
        let mut had_rows = false;
        let mut affected = 0u64;
        for m in msgs {
            match m {
                postgres::SimpleQueryMessage::Row(_) => {
                    had_rows = true;
                    rows += 1;
                }
                postgres::SimpleQueryMessage::CommandComplete(n) => affected += n,
                _ => {}
            }
        }
        Ok(if had_rows { rows } else { affected })
    }

    fn query_i64(&mut self, sql: &str) -> Result<i64> {
        self.client
            .query_one(sql, &[])
            .map_err(pg_err)?
            .try_get::<_, i64>(0)
            .map_err(pg_err)
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId> {
        let st = self.client.prepare(sql).map_err(pg_err)?;
        self.stmts.push(st);
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn run(&mut self, stmt: StmtId, params: &[Value]) -> Result<u64> {
        let PgSession { client, stmts } = self;
        let st = stmts
            .get(stmt.0)
            .ok_or_else(|| EngineError::new("usage", "unknown prepared statement"))?;
        let args: Vec<&(dyn postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| match p {
                Value::Int(i) => i as &(dyn postgres::types::ToSql + Sync),
                Value::Text(s) => s as &(dyn postgres::types::ToSql + Sync),
            })
            .collect();
        if st.columns().is_empty() {
            client.execute(st, &args).map_err(pg_err)
        } else {
            use postgres::fallible_iterator::FallibleIterator;
            let mut it = client.query_raw(st, args).map_err(pg_err)?;
            let mut n = 0u64;
            while it.next().map_err(pg_err)?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
}
