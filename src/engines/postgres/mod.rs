//! The PostgreSQL engine: a private sandboxed server per contender, driven with the `postgres`
//! crate for administration and loads (synchronous; each connection owns the crate's small
//! runtime, never called from inside an async runtime) and, for the sessions clients run,
//! with the lean wire client of `engines::wire::pg`, which costs the client far less CPU a statement. Loads with `COPY ... FROM STDIN`; the VACUUM/ANALYZE policy after a
//! load is an explicit option.

pub mod base_backup;
pub mod lease;
pub mod recipe;
pub mod topology;
pub mod versions;

use crate::decode::{DecodeError, KeyPath};
use crate::engine::target::Target;
use crate::engine::{
    Dialect, Engine, EngineError, EngineInfo, EngineWarning, FileLoad, Footprint, LoadOutcome,
    LoadRequest, LoadWarnings, OpenCtx, RestartOutcome, Result, Session,
};
use crate::engines::options::ServerOptions;
use crate::engines::server::sandbox_err;
use crate::engines::server::{
    MARKER, MARKER_NOTE, Provisioned, Server, extra_settings, refuse_sandbox_options,
};
use crate::engines::wire::pg::{PgWire, kind_for_sqlstate};
use crate::sandbox::Recipe;
use crate::sandbox::device_profile::DeviceProfile;
use recipe::{PostgresRecipe, SUPERUSER};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use topology::{PostgresReplica, PostgresTopology, primary_defaults};

const SYNC_COMMIT: &[&str] = &["on", "off", "local", "remote_write", "remote_apply"];
const WAL_LEVELS: &[&str] = &["minimal", "replica", "logical"];
const IO_METHODS: &[&str] = &["worker", "sync", "io_uring"];
/// The first version with `io_method` (asynchronous I/O).
const IO_METHOD_SINCE: u32 = 18;
const AFTER_LOAD: &[&str] = &["none", "analyze", "vacuum_analyze"];

/// Contender options for `engine = "postgres"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresOptions {
    /// shared_buffers, MiB (default 256).
    #[serde(default)]
    pub shared_buffers_mb: Option<u64>,
    /// synchronous_commit: on (default), off, local, remote_write or remote_apply.
    #[serde(default)]
    pub synchronous_commit: Option<String>,
    /// wal_level: minimal, replica (default) or logical.
    #[serde(default)]
    pub wal_level: Option<String>,
    /// io_method (PostgreSQL 18 and later): worker (18's default), sync (what 17 did) or
    /// io_uring (when the server was built with it).
    #[serde(default)]
    pub io_method: Option<String>,
    /// max_wal_size, MiB (default 1024).
    #[serde(default)]
    pub max_wal_size_mb: Option<u64>,
    /// What runs after a bulk load, timed apart from it: none, analyze or vacuum_analyze
    /// (sets hint bits and the visibility map, so later steps do not pay for it; autovacuum
    /// would otherwise do it at an unknown moment during them).
    #[serde(default = "default_after_load")]
    pub after_load: String,
    /// Load pg_stat_statements, so statement counts can be checked against the server's.
    #[serde(default = "default_true")]
    pub stat_statements: bool,
    /// The options every server family takes (`memory_limit_mb`, `device_profile`,
    /// `data_dir`, `server`, `replicas`, `partitions`, `control_replication`, the target),
    /// read through `Deref`.
    #[serde(skip)]
    pub common: ServerOptions<PostgresReplica>,
}

impl std::ops::Deref for PostgresOptions {
    type Target = ServerOptions<PostgresReplica>;
    fn deref(&self) -> &Self::Target {
        &self.common
    }
}

impl std::ops::DerefMut for PostgresOptions {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.common
    }
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

/// The `postgres` family in the engines registry.
pub const FAMILY: crate::engines::Family = crate::engines::Family {
    name: "postgres",
    decode,
    sql_variants: &["postgres", ""],
    url_schemes: &["postgres", "postgresql"],
    keeps_rows: true,
    shards_meet: true,
    sandbox: Some(crate::engines::SandboxFamily {
        name: "postgres",
        recipe: |choice, tls| {
            let b = versions::BINARIES.resolve(choice)?;
            Ok(Box::new(recipe::PostgresRecipe {
                server_dir: b.dir,
                tls,
                ..recipe::PostgresRecipe::default()
            }))
        },
        target: |port, ca| {
            let tls = ca.map_or(String::new(), |ca| {
                format!("?sslmode=verify-full&sslrootcert={}", ca.display())
            });
            format!("postgres://{}@127.0.0.1:{port}{tls}", recipe::SUPERUSER)
        },
    }),
};

/// `engine = "postgres"`: decode and check the options, and the `target` of an external
/// server.
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
    binary: &crate::engines::versions::BinaryChoice,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
    let mut o = PostgresOptions::from_table(options)?;
    o.validate().map_err(crate::engines::in_options)?;
    if let Some(t) = target {
        o.target = Some(crate::engine::target::parse(t, "postgres", 5432)?);
        o.check_external().map_err(crate::engines::in_options)?;
    }
    o.common.choose_binary(binary)?;
    o.check_version()?;
    crate::engine::replication::set_replica_targets(
        &mut o.common.replicas,
        o.common.target.as_ref(),
        target.is_none_or(|t| t.read_password),
        o.common.control_replication,
        "postgres",
        5432,
    )
    .map_err(crate::engines::in_options)?;
    Ok(Box::new(o))
}

impl crate::engine::EngineKind for PostgresOptions {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.device_profile.as_ref()
    }

    fn data_dir(&self) -> Option<&std::path::Path> {
        self.data_dir.as_deref()
    }

    fn preflight(&self) -> Result<()> {
        PostgresOptions::preflight(self)
    }

    /// A target role's reach: its attributes (`SUPERUSER`, `CREATEROLE`, `REPLICATION`,
    /// `BYPASSRLS`), the predefined roles that read or write the server's files or every
    /// table or signal other sessions, and the other databases it owns or may create schemas in. (`CREATEDB` is what
    /// dbduel needs to make its own database, so it is not counted.)
    fn account_reach(&self, database: &str) -> Result<Option<crate::engine::AccountReach>> {
        let Some(t) = &self.target else {
            return Ok(None);
        };
        let database = t.database.as_deref().unwrap_or(database);
        let mut c = client_for(t, "postgres")?;
        let mut wide = Vec::new();
        let row = c
            .query_one(
                "SELECT rolsuper, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user",
                &[],
            )
            .map_err(pg_err)?;
        for (i, what) in ["SUPERUSER", "CREATEROLE", "REPLICATION", "BYPASSRLS"]
            .iter()
            .enumerate()
        {
            if row.get::<_, bool>(i) {
                wide.push(format!("the role is {what}"));
            }
        }
        let predefined: Vec<&str> = vec![
            "pg_read_server_files",
            "pg_write_server_files",
            "pg_execute_server_program",
            "pg_read_all_data",
            "pg_write_all_data",
            "pg_signal_backend",
        ];
        for r in c
            .query(
                "SELECT rolname FROM pg_roles WHERE rolname = ANY($1) AND pg_has_role(current_user, oid, 'MEMBER') ORDER BY rolname",
                &[&predefined],
            )
            .map_err(pg_err)?
        {
            wide.push(format!("a member of {}", r.get::<_, String>(0)));
        }
        let others: Vec<String> = c
            .query(
                "SELECT datname FROM pg_database WHERE datname <> $1 AND datallowconn                  AND (pg_get_userbyid(datdba) = current_user OR has_database_privilege(datname, 'CREATE'))                  ORDER BY datname",
                &[&database],
            )
            .map_err(pg_err)?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect();
        if !others.is_empty() {
            wide.push(format!(
                "owns or may create schemas in database {}",
                others.join(", ")
            ));
        }
        Ok(Some(crate::engine::AccountReach {
            wide,
            // pg_checkpoint (PostgreSQL 15 and later): the footprint step's CHECKPOINT.
            recipe: "CREATE ROLE dbduel LOGIN CREATEDB PASSWORD 'a password of yours';\nGRANT pg_checkpoint TO dbduel;".into(),
        }))
    }

    fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        if self.target.is_some() {
            return (0, KeyPath::root());
        }
        // shared memory, plus about 8 MiB per backend process; each standby has its own
        let servers = 1 + self.replicas.len() as u64;
        let total = ((self.shared_buffers_mb.unwrap_or(256) + 64) * servers + 8 * clients) << 20;
        (
            total,
            KeyPath::root().key("options").key("shared_buffers_mb"),
        )
    }

    fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        let mut o = self.clone();
        o.common.resolve_binary(&versions::BINARIES)?;
        Ok(Box::new(PostgresEngine::open(o, ctx)?))
    }

    fn attach_replication(
        &self,
        database: &str,
    ) -> Result<Option<Box<dyn crate::engine::replication::Replicated>>> {
        match &self.target {
            Some(t) if !self.replicas.is_empty() => Ok(Some(Box::new(PostgresTopology::attach(
                t,
                database,
                &self.replicas,
                self.control_replication,
            )?))),
            _ => Ok(None),
        }
    }
}

impl PostgresOptions {
    /// The options of an `options` table, decoded (errors under `options`) but not yet
    /// checked.
    pub fn from_table(options: &toml::Table) -> std::result::Result<Self, DecodeError> {
        let (mut o, common): (Self, _) = crate::engines::options::decode(options)?;
        o.common = common;
        Ok(o)
    }

    pub fn validate(&self) -> std::result::Result<(), DecodeError> {
        self.common.check_placement()?;
        if let Some(limit) = self.memory_limit_mb {
            let need = self.shared_buffers_mb.unwrap_or(256) + 64;
            if limit < need {
                return Err(DecodeError::at(
                    KeyPath::root().key("memory_limit_mb"),
                    format!(
                        "memory_limit_mb = {limit} leaves the server too little: shared_buffers takes {} MiB and it needs about 64 MiB more; use at least {need}, or lower shared_buffers_mb",
                        need - 64
                    ),
                ));
            }
        }
        if let Some(v) = &self.synchronous_commit {
            one_of("synchronous_commit", v, SYNC_COMMIT)?;
        }
        if let Some(v) = &self.wal_level {
            one_of("wal_level", v, WAL_LEVELS)?;
        }
        if let Some(v) = &self.io_method {
            one_of("io_method", v, IO_METHODS)?;
        }
        one_of("after_load", &self.after_load, AFTER_LOAD)?;
        if self
            .shared_buffers_mb
            .is_some_and(|v| !(1..=1 << 20).contains(&v))
        {
            return Err(DecodeError::at(
                KeyPath::root().key("shared_buffers_mb"),
                "shared_buffers_mb must be from 1 to 1048576",
            ));
        }
        if self
            .max_wal_size_mb
            .is_some_and(|v| !(32..=1 << 24).contains(&v))
        {
            return Err(DecodeError::at(
                KeyPath::root().key("max_wal_size_mb"),
                "max_wal_size_mb must be from 32 to 16777216",
            ));
        }
        self.common.check_settings_and_replicas(&recipe::SETTINGS)?;
        if !self.replicas.is_empty() && self.wal_level.as_deref() == Some("minimal") {
            return Err(DecodeError::at(
                KeyPath::root().key("wal_level"),
                "wal_level = \"minimal\" writes too little WAL for a standby; use \"replica\" with replicas",
            ));
        }
        Ok(())
    }

    /// With a target, the server's own configuration applies: options that configure a
    /// sandbox are refused rather than silently ignored.
    pub fn check_external(&self) -> std::result::Result<(), DecodeError> {
        let sandbox_only = [
            ("shared_buffers_mb", self.shared_buffers_mb.is_some()),
            ("memory_limit_mb", self.memory_limit_mb.is_some()),
            ("device_profile", self.device_profile.is_some()),
            ("data_dir", self.data_dir.is_some()),
            ("synchronous_commit", self.synchronous_commit.is_some()),
            ("wal_level", self.wal_level.is_some()),
            ("io_method", self.io_method.is_some()),
            ("max_wal_size_mb", self.max_wal_size_mb.is_some()),
            ("server", !self.server.is_empty()),
        ];
        refuse_sandbox_options(&sandbox_only)
    }

    /// `io_method` needs PostgreSQL 18: refused, at the option, for a version or the
    /// system's server before it (a basedir's version is known once resolved: [`Self::preflight`]).
    fn check_version(&self) -> std::result::Result<(), DecodeError> {
        let Some(m) = &self.io_method else {
            return Ok(());
        };
        let (what, version) = match (&self.binary.version, &self.binary.basedir) {
            (Some(v), _) => (format!("version = {v:?}"), v.clone()),
            (None, Some(_)) => return Ok(()),
            (None, None) => {
                let system = versions::BINARIES
                    .series
                    .iter()
                    .find(|(_, o)| *o == crate::engines::versions::Origin::System)
                    .map_or("", |(s, _)| s);
                ("the system's server".to_string(), system.to_string())
            }
        };
        match io_method_refused(m, &version, &what) {
            Some(msg) => Err(crate::engines::in_options(DecodeError::at(
                KeyPath::root().key("io_method"),
                msg,
            ))),
            None => Ok(()),
        }
    }

    /// Sandboxes: is the chosen server installed and does it start? Targets: does the
    /// server answer? The benchmark sessions' client logs in first, before any other: it
    /// holds to the target's TLS and password rules (kind `tls` when TLS cannot be had).
    pub fn preflight(&self) -> Result<()> {
        match &self.target {
            None => {
                let mut o = self.clone();
                o.common.resolve_binary(&versions::BINARIES)?;
                if let (Some(m), Some(b)) = (&o.io_method, &o.common.resolved) {
                    let what = format!("the server in {}", b.origin);
                    if let Some(msg) = io_method_refused(m, &b.version, &what) {
                        return Err(EngineError::new("usage", format!("io_method: {msg}")));
                    }
                }
                o.recipe(1).check_installed().map_err(sandbox_err)
            }
            Some(t) => PgWire::connect(t, "postgres")
                .map(drop)
                .and_then(|()| client_for(t, "postgres").map(drop))
                .map_err(|e| {
                    let kind = if e.kind == "tls" { "tls" } else { "connect" };
                    EngineError::new(kind, format!("cannot connect to {}: {e}", t.display()))
                }),
        }
    }

    fn recipe(&self, max_clients: u64) -> PostgresRecipe {
        let mut s = BTreeMap::new();
        s.insert(
            "shared_buffers".into(),
            format!("{}MB", self.shared_buffers_mb.unwrap_or(256)),
        );
        let sync = self.synchronous_commit.as_deref().unwrap_or("on");
        s.insert("synchronous_commit".into(), sync.to_string());
        if let Some(m) = &self.io_method {
            s.insert("io_method".into(), m.clone());
        }
        let wal_level = self.wal_level.as_deref().unwrap_or("replica");
        s.insert("wal_level".into(), wal_level.to_string());
        if wal_level == "minimal" {
            s.insert("max_wal_senders".into(), "0".into());
        }
        s.insert(
            "max_wal_size".into(),
            format!("{}MB", self.max_wal_size_mb.unwrap_or(1024)),
        );
        s.insert("max_connections".into(), (max_clients + 20).to_string());
        if self.stat_statements {
            s.insert(
                "shared_preload_libraries".into(),
                "pg_stat_statements".into(),
            );
            s.insert("pg_stat_statements.max".into(), "10000".into());
        }
        // validated when the study was read
        for (k, v) in extra_settings(&self.server, &recipe::SETTINGS).unwrap_or_default() {
            s.insert(k, v);
        }
        if !self.replicas.is_empty() {
            primary_defaults(&mut s, &self.server);
        }
        PostgresRecipe {
            settings: s,
            base_backup_of: None,
            memory_limit_mb: self.memory_limit_mb,
            device_profile: self.device_profile.clone(),
            data_dir: self.data_dir.clone(),
            server_dir: self.server_dir(),
            secret: None,
            tls: None,
        }
    }
}

/// Why `io_method = m` cannot be set on `version` (`what` names the server), if it cannot.
fn io_method_refused(m: &str, version: &str, what: &str) -> Option<String> {
    let major: u32 = version.split('.').next()?.parse().ok()?;
    (major < IO_METHOD_SINCE).then(|| {
        format!(
            "io_method = {m:?} needs PostgreSQL {IO_METHOD_SINCE} or later, and {what} is PostgreSQL {major}: choose version = \"{IO_METHOD_SINCE}\", or leave io_method out"
        )
    })
}

pub(super) fn pg_err(e: postgres::Error) -> EngineError {
    let kind = match e.code() {
        Some(c) => kind_for_sqlstate(c.code()),
        None => "connection",
    };
    // The crate's Display says only "db error"; the server's own message is in the source.
    let detail = e
        .as_db_error()
        .map(|d| format!("{}: {}", d.severity(), d.message()))
        .unwrap_or_else(|| e.to_string());
    EngineError::new(kind, format!("postgres: {detail}"))
}

/// A client connection to a target.
fn client_for(t: &Target, db: &str) -> Result<postgres::Client> {
    admin_connect(&config_for(t, db), t)
}

/// Open a `postgres` crate connection with `cfg` (from [`config_for`]) under the TLS the
/// target asks for: the same rustls configuration, so the same checks, as the lean client.
pub(super) fn admin_connect(cfg: &postgres::Config, t: &Target) -> Result<postgres::Client> {
    use crate::engines::wire::tls;
    match tls::client_config(&t.tls).map_err(|m| tls::tls_error("postgres", m))? {
        None => cfg.connect(postgres::NoTls),
        Some(c) => cfg.connect(tokio_postgres_rustls::MakeRustlsConnect::new((*c).clone())),
    }
    .map_err(pg_err)
}

/// Notices a connection received while `on` (the load's COPY): WARNING ones counted, the
/// first few kept.
#[derive(Default)]
struct Notices {
    on: bool,
    warnings: u64,
    first: Vec<EngineWarning>,
}

/// Warnings kept in the results.
const KEPT_WARNINGS: usize = 5;

/// A client connection whose notices go into `sink`.
fn client_with_notices(
    t: &Target,
    db: &str,
    sink: Arc<Mutex<Notices>>,
) -> Result<postgres::Client> {
    let mut cfg = config_for(t, db);
    cfg.notice_callback(move |n| {
        let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
        if !s.on || n.parsed_severity() != Some(postgres::error::Severity::Warning) {
            return;
        }
        s.warnings += 1;
        if s.first.len() < KEPT_WARNINGS {
            s.first.push(EngineWarning {
                level: n.severity().to_string(),
                code: n.code().code().to_string(),
                message: n.message().to_string(),
            });
        }
    });
    admin_connect(&cfg, t)
}

/// The `postgres` crate's settings for reaching `db` on a target.
pub(super) fn config_for(t: &Target, db: &str) -> postgres::Config {
    let mut cfg = postgres::Config::new();
    cfg.host(&t.host)
        .port(t.port)
        .user(&t.user)
        .dbname(db)
        .application_name("dbduel")
        .connect_timeout(std::time::Duration::from_secs(10))
        .ssl_mode(match t.tls.mode {
            m if m.requires_tls() => postgres::config::SslMode::Require,
            m if m.tries_tls() => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Disable,
        });
    if let Some(p) = &t.password {
        cfg.password(p.expose());
    }
    cfg
}

/// A PostgreSQL contender: its server and how to reach it.
pub struct PostgresEngine {
    opts: PostgresOptions,
    server: Server,
    reach: Target,
    database: String,
    /// The server's data directory when it is readable here.
    datadir: Option<PathBuf>,
    /// pg_stat_statements is loaded and installed in the study's database.
    stat_statements: bool,
    /// The standbys, when the contender is a replication topology.
    topology: Option<PostgresTopology>,
    /// The run's lease on the study's database, on a target (see [`Engine::lease`]).
    lease: Mutex<Option<lease::Lease>>,
}

impl PostgresEngine {
    /// Start the contender's sandbox (or reach its target) and prepare the study's database.
    pub fn open(opts: PostgresOptions, ctx: &OpenCtx<'_>) -> Result<Self> {
        let recipe = PostgresRecipe {
            tls: opts.common.server_certs(ctx.contender)?,
            ..opts.recipe(ctx.max_clients)
        };
        let Provisioned {
            server,
            reach,
            datadir,
        } = Server::provision(
            opts.target.as_ref(),
            Box::new(recipe),
            ctx.contender,
            ctx.dir,
            "postgres",
            SUPERUSER,
        )?;
        let database = reach
            .database
            .clone()
            .unwrap_or_else(|| ctx.database.to_string());
        let mut engine = PostgresEngine {
            opts,
            server,
            reach,
            database,
            datadir,
            stat_statements: false,
            topology: None,
            lease: Mutex::new(None),
        };
        let mut admin = engine.client("postgres")?;
        if engine.server.is_external() {
            // Readable only by superusers and pg_read_all_settings; absent otherwise.
            let dir = admin
                .query_one("SHOW data_directory", &[])
                .ok()
                .map(|r| PathBuf::from(r.get::<_, String>(0)));
            engine.datadir = dir.filter(|d| engine.reach.is_local() && d.is_dir());
        }
        crate::engines::server::claim_racing(|| engine.claim_database(&mut admin))?;
        if engine.opts.stat_statements {
            let mut c = engine.client(&engine.database)?;
            let ok = c
                .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                .and_then(|_| c.batch_execute("SELECT 1 FROM pg_stat_statements LIMIT 1"));
            match (ok, &engine.server) {
                (Ok(()), _) => engine.stat_statements = true,
                // A target without the library preloaded: counts come from pg_stat_database.
                (Err(_), Server::External(_)) => {}
                (Err(e), Server::Sandbox(_)) => return Err(pg_err(e)),
            }
        }
        if !engine.opts.replicas.is_empty() && engine.server.is_external() {
            engine.topology = Some(PostgresTopology::attach(
                &engine.reach,
                &engine.database,
                &engine.opts.replicas,
                engine.opts.control_replication,
            )?);
        } else if !engine.opts.replicas.is_empty() {
            // Standbys copy the primary as it now is (the study's database included) and
            // stream the rest; their settings are the primary's, as a base backup copies.
            let primary_recipe = engine.opts.recipe(ctx.max_clients);
            engine.topology = Some(PostgresTopology::provision(
                &engine.server,
                &engine.reach,
                ctx,
                &engine.database,
                &engine.opts.replicas,
                &primary_recipe,
            )?);
        }
        Ok(engine)
    }

    /// Create the study's database with its marker, or reuse one that has dbduel's marker
    /// (the load step then replaces the study's tables in it). A database without the marker
    /// was not made by dbduel and is never touched.
    fn claim_database(&self, admin: &mut postgres::Client) -> Result<()> {
        let db = &self.database;
        let exists = admin
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[db])
            .map_err(pg_err)?
            .is_some();
        if exists {
            let mut c = self.client(db)?;
            let marked = c
                .query_opt(
                    "SELECT 1 FROM pg_tables WHERE schemaname = 'public' AND tablename = $1",
                    &[&MARKER],
                )
                .map_err(pg_err)?
                .is_some();
            if !marked {
                return Err(Server::not_ours(db, &self.reach));
            }
            return Ok(());
        }
        admin
            .batch_execute(&format!("CREATE DATABASE \"{}\"", db.replace('"', "\"\"")))
            .map_err(pg_err)?;
        let mut c = self.client(db)?;
        c.batch_execute(&format!(
            "CREATE TABLE {MARKER} (created_at timestamptz NOT NULL DEFAULT now(), note text)"
        ))
        .map_err(pg_err)?;
        c.execute(
            &format!("INSERT INTO {MARKER} (note) VALUES ($1)"),
            &[&MARKER_NOTE],
        )
        .map_err(pg_err)?;
        Ok(())
    }

    fn client(&self, db: &str) -> Result<postgres::Client> {
        client_for(&self.reach, db)
    }

    /// Relation files of `table`: heap, TOAST table and its index, every index; each with all
    /// 1 GiB segments and its free-space-map and visibility-map forks.
    fn relation_files(
        &self,
        c: &mut postgres::Client,
        datadir: &std::path::Path,
        table: &str,
    ) -> Result<Vec<PathBuf>> {
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
            let base = datadir.join(&rel);
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
    fn lease(&self) -> Result<()> {
        if !self.server.is_external() {
            return Ok(());
        }
        let taken = lease::Lease::take(&self.reach, &self.database)?;
        *self.lease.lock().unwrap_or_else(|p| p.into_inner()) = Some(taken);
        Ok(())
    }

    fn partitions(&self) -> Option<u32> {
        self.opts.partitions
    }

    fn foreign_keys(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn connect(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(PgWire::connect(&self.reach, &self.database)?))
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
            "io_method",
            "data_checksums",
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
        if self.topology.is_some() {
            // Which standbys a commit waits for (set once they stream).
            names.push("synchronous_standby_names".into());
        }
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
        if let Some(t) = &self.topology {
            use crate::engine::replication::Replicated;
            for i in 0..t.replica_count() {
                let f = t.replica_facts(i)?;
                for (k, v) in f.settings {
                    settings.insert(format!("replica.{}.{k}", f.name), v);
                }
                settings.insert(format!("replica.{}.server", f.name), f.version);
            }
        }
        if let Server::External(t) = &self.server {
            settings.insert("target".into(), t.display());
        }
        // Which client serves the benchmark sessions, and what TLS one of them negotiated.
        let probe = PgWire::connect(&self.reach, &self.database)?;
        settings.insert("client".into(), crate::engines::wire::CLIENT.into());
        settings.insert(
            "tls".into(),
            crate::engines::wire::tls::setting(&self.reach.tls, &probe.tls()),
        );
        if let Some(b) = &self.opts.resolved {
            settings.insert("server_binary".into(), b.origin.clone());
        }
        Ok(EngineInfo {
            engine: "postgres".into(),
            version,
            settings,
        })
    }

    /// COPY is all or nothing: a row that does not fit fails it with the server's error.
    /// WARNING notices sent during the COPY (a trigger's, say) are counted.
    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        let notices = Arc::new(Mutex::new(Notices::default()));
        let mut c = client_with_notices(&self.reach, &self.database, notices.clone())?;
        // Read through the stop flag: Ctrl-C ends the COPY (dropped unfinished, it fails).
        let mut file = crate::stop::Reader(
            std::fs::File::open(req.file)
                .map_err(|e| EngineError::new("io", format!("open dataset file: {e}")))?,
        );
        let listen = |on: bool| notices.lock().unwrap_or_else(|p| p.into_inner()).on = on;
        listen(true);
        let mut writer = c
            .copy_in(&format!("COPY {} FROM STDIN", req.table.name))
            .map_err(pg_err)?;
        std::io::copy(&mut file, &mut writer)
            .map_err(|e| EngineError::new("io", format!("streaming the dataset into COPY: {e}")))?;
        let rows = writer.finish().map_err(pg_err)?;
        listen(false);
        let warnings = {
            let n = notices.lock().unwrap_or_else(|p| p.into_inner());
            LoadWarnings {
                count: n.warnings,
                skipped: None,
                first: n.first.clone(),
                info: Some(format!("COPY {rows}")),
                serious: n.warnings > 0,
            }
        };
        // Rows came with their ids: move an identity column's sequence past them, so inserts
        // that leave the id out (sysbench's insert workload) do not collide.
        if let Some(col) = req.table.columns.iter().find(|c| c.auto_increment) {
            let t = &req.table.name;
            c.batch_execute(&format!(
                "SELECT setval(pg_get_serial_sequence('{t}', '{0}'), COALESCE(MAX({0}), 1)) FROM {t}",
                col.name
            ))
            .map_err(pg_err)?;
        }
        let after = match self.opts.after_load.as_str() {
            "analyze" => Some(format!("ANALYZE {}", req.table.name)),
            "vacuum_analyze" => Some(format!("VACUUM ANALYZE {}", req.table.name)),
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
        Ok(LoadOutcome {
            rows,
            method,
            warnings: Some(warnings),
        })
    }

    /// `COPY … FROM STDIN` in CSV format with the file's delimiter, header and NULL marker;
    /// `FORCE_NULL` on every column, so a quoted field equal to the marker is NULL too, as
    /// on the other engines. Then the `after_load` policy, as for the generated load.
    fn load_file(&self, req: &FileLoad<'_>) -> Result<LoadOutcome> {
        let notices = Arc::new(Mutex::new(Notices::default()));
        let mut c = client_with_notices(&self.reach, &self.database, notices.clone())?;
        let columns = req.columns_or(|| {
            Ok(c.query(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = lower($1) ORDER BY ordinal_position",
                &[&req.table],
            )
            .map_err(pg_err)?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect())
        })?;
        let lit = |s: &str| format!("'{}'", s.replace('\'', "''"));
        let delimiter = match req.format.delimiter {
            b'\t' => "E'\\t'".to_string(),
            d => lit(&(d as char).to_string()),
        };
        let cols = columns.join(", ");
        let sql = format!(
            "COPY {} ({cols}) FROM STDIN WITH (FORMAT csv, DELIMITER {delimiter}, HEADER {}, NULL {}, FORCE_NULL ({cols}))",
            req.table,
            req.format.header,
            lit(&req.format.null)
        );
        let mut file =
            crate::stop::Reader(std::fs::File::open(req.file).map_err(|e| {
                EngineError::new("io", format!("open {}: {e}", req.file.display()))
            })?);
        let listen = |on: bool| notices.lock().unwrap_or_else(|p| p.into_inner()).on = on;
        listen(true);
        let mut writer = c.copy_in(&sql).map_err(pg_err)?;
        std::io::copy(&mut file, &mut writer).map_err(|e| {
            EngineError::new(
                "io",
                format!("streaming {} into COPY: {e}", req.file.display()),
            )
        })?;
        let rows = writer.finish().map_err(pg_err)?;
        listen(false);
        let warnings = {
            let n = notices.lock().unwrap_or_else(|p| p.into_inner());
            LoadWarnings {
                count: n.warnings,
                skipped: None,
                first: n.first.clone(),
                info: Some(format!("COPY {rows}")),
                serious: n.warnings > 0,
            }
        };
        let method = match self.opts.after_load.as_str() {
            "analyze" | "vacuum_analyze" => {
                let sql = if self.opts.after_load == "analyze" {
                    format!("ANALYZE {}", req.table)
                } else {
                    format!("VACUUM ANALYZE {}", req.table)
                };
                let t = Instant::now();
                c.batch_execute(&sql).map_err(pg_err)?;
                format!(
                    "COPY FROM STDIN (CSV), one transaction; then {sql} ({:.2} s, in the load's time)",
                    t.elapsed().as_secs_f64()
                )
            }
            _ => "COPY FROM STDIN (CSV), one transaction; no VACUUM/ANALYZE after".into(),
        };
        Ok(LoadOutcome {
            rows,
            method,
            warnings: Some(warnings),
        })
    }

    fn footprint(&self, tables: &[&str]) -> Result<Footprint> {
        let mut c = self.client(&self.database)?;
        // Write dirty pages out so the files hold what the buffers hold.
        c.batch_execute("CHECKPOINT").map_err(pg_err)?;
        let mut engine_bytes = 0i64;
        for table in tables {
            engine_bytes += c
                // A partitioned table's own size is 0: count its partitions (a plain table
                // has no partition tree, and counts itself).
                .query_one(
                    "SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) \
                     FROM pg_partition_tree($1::text::regclass)), \
                     pg_total_relation_size($1::text::regclass))::bigint",
                    &[table],
                )
                .map_err(pg_err)?
                .get::<_, i64>(0);
        }
        let (files_bytes, allocated_bytes, files, files_rule) = match &self.datadir {
            Some(dir) => {
                let mut paths = Vec::new();
                for table in tables {
                    let leaves: Vec<String> = c
                        .query(
                            "SELECT relid::regclass::text FROM pg_partition_tree($1::text::regclass) WHERE isleaf",
                            &[table],
                        )
                        .map_err(pg_err)?
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    // A plain table has no partition tree: it is its own leaf.
                    let leaves = if leaves.is_empty() {
                        vec![table.to_string()]
                    } else {
                        leaves
                    };
                    for leaf in leaves {
                        paths.extend(self.relation_files(&mut c, dir, &leaf)?);
                    }
                }
                let (bytes, allocated, files) = crate::engines::file_sizes(dir, &paths);
                (
                    Some(bytes),
                    Some(allocated),
                    files,
                    "the table's heap (each partition's, when partitioned), its TOAST table and TOAST index, and every index: all segments with their free-space-map and visibility-map forks, after a CHECKPOINT".to_string(),
                )
            }
            None => (
                None,
                None,
                Vec::new(),
                "not measured: the server's data directory is not readable from here".to_string(),
            ),
        };
        Ok(Footprint {
            files_bytes,
            allocated_bytes,
            files,
            files_rule,
            engine_bytes: Some(engine_bytes.max(0) as u64),
            engine_rule: "pg_total_relation_size (the same relations and forks)".into(),
        })
    }

    fn restart(&self, cold: bool) -> Result<RestartOutcome> {
        self.server.restart(
            cold,
            self.datadir.as_deref(),
            "shared_buffers empty",
            || self.client("postgres").is_ok(),
        )
    }

    fn fail_over(&self) -> Result<crate::engine::FailoverOutcome> {
        self.server.fail_over(self.replication())
    }

    fn crash(&self, fault: crate::engine::Fault) -> Result<crate::engine::CrashOutcome> {
        if self.topology.is_some() {
            // The primary's death is a failover, not a server's recovery.
            return Err(EngineError::new(
                "unsupported",
                "a contender with standbys does not crash as one server: its primary's death is a failover",
            ));
        }
        self.server.crash(fault)
    }

    fn power_layer(&self, on: Option<crate::engine::Fault>) -> Result<()> {
        self.server.power_layer(on)
    }

    fn server_pid(&self) -> Option<i32> {
        self.server.pid()
    }

    fn server_gone(&self) -> Option<String> {
        self.server
            .gone()
            .or_else(|| self.topology.as_ref().and_then(PostgresTopology::gone))
    }

    fn set_throttle(&self, on: bool) -> Result<bool> {
        self.server.set_throttle(on)
    }

    fn replication(&self) -> Option<&dyn crate::engine::replication::Replicated> {
        self.topology
            .as_ref()
            .map(|t| t as &dyn crate::engine::replication::Replicated)
    }

    fn counters_survive_restart(&self) -> bool {
        // pg_stat_database (15 and later) and pg_stat_statements are written out at a clean
        // shutdown and read back at the start.
        true
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
        // Sessions established to the database (PostgreSQL 14 and later; absent before).
        if let Ok(r) = c.query_one(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()",
            &[],
        ) {
            out.insert("sessions".into(), r.get::<_, i64>(0).max(0) as u64);
        }
        if self.stat_statements {
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
        self.server.log()
    }

    fn finish(self: Box<Self>, keep: bool) -> Result<()> {
        let this = *self;
        let replicas = this.topology.map(|t| t.finish(keep));
        this.server.finish(keep)?;
        replicas.unwrap_or(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_method_needs_18_whatever_names_the_version() {
        assert_eq!(io_method_refused("sync", "18", "v"), None);
        assert_eq!(io_method_refused("worker", "18.1", "v"), None);
        assert_eq!(io_method_refused("worker", "19beta1", "v"), None);
        let e = io_method_refused("sync", "17.5", "the server in basedir /opt/pg").unwrap();
        assert!(
            e.contains("needs PostgreSQL 18") && e.contains("basedir /opt/pg is PostgreSQL 17"),
            "{e}"
        );
        assert!(io_method_refused("sync", "15", "v").is_some());
    }
}
