//! MariaDB replication topologies: a contender's `replicas = [...]` become one sandbox each
//! — the primary's MariaDB, or a MySQL version beside it (`engine = "mysql"`) — wired to the
//! contender's primary as each replica's [`ReplicaDialect`] says (MariaDB by GTID, MySQL by
//! binary-log file and position), and the `Replicated` capability over them: positions and
//! rows as each replica's dialect reads them, state from `SHOW SLAVE STATUS`, `CHECKSUM
//! TABLE`.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::replication::{Position, ReplicaFacts, ReplicaState, Replicated, TableSum};
use crate::engine::target::Target;
use crate::engine::{EngineError, OpenCtx, Result, Session};
use crate::engines::mariadb::flavor::Flavor;
use crate::engines::mariadb::replica_dialect::{
    FilePosition, MariadbGtid, MysqlGtid, ReplicaDialect, SlaveStatus, Wiring, gtid_position,
    gtid_set_position,
};
use crate::engines::mariadb::{MariadbOptions, conn_opts, crate_conn, my_err};
use crate::engines::members::Members;
use crate::engines::mysql::versions::MysqlVersion;
use crate::engines::server::sandbox_err;
use crate::engines::server::{Server, extra_settings};
use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `slave_parallel_mode` values MariaDB 10.11 knows.
const PARALLEL_MODES: &[&str] = &[
    "none",
    "minimal",
    "conservative",
    "optimistic",
    "aggressive",
];

/// The account replicas use to read the primary's binary log.
const REPL_USER: &str = "dbduel_repl";

/// The longest `MASTER_PASSWORD` MySQL keeps.
const REPL_PASSWORD_LEN: usize = 32;

/// One replica of a MariaDB contender, as a study writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MariadbReplica {
    /// Names the replica in reports (`serial`, `optimistic-4`).
    pub name: String,
    /// The replica's server: `mariadb` (the default: the primary's own server) or `mysql`
    /// (a MySQL server of `version`, replicating by binary-log file and position).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// With `engine = "mysql"`: its version (`"5.6"`, `"5.7"` or `"8.0"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Parallel apply's workers: MariaDB `slave_parallel_threads`, MySQL
    /// `slave_parallel_workers` (with its version's parallel settings); 0 (the default)
    /// applies in one SQL thread, in order.
    #[serde(default)]
    pub parallel_threads: Option<u64>,
    /// `slave_parallel_mode`: none, minimal, conservative, optimistic or aggressive (the
    /// server's default, optimistic, when not given).
    #[serde(default)]
    pub parallel_mode: Option<String>,
    /// The replica's `innodb_flush_log_at_trx_commit` (default 2, as the seed's servers).
    #[serde(default)]
    pub flush_log_at_trx_commit: Option<u8>,
    /// Any other server variables for this replica's [mysqld] section.
    #[serde(default)]
    pub server: toml::Table,
    /// An existing replica of the contender's target (`mysql://USER@HOST:PORT`), already
    /// replicating from it; then none of the options above apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Where that replica's password is (the primary's password when neither is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<std::path::PathBuf>,
    /// The parsed `target`.
    #[serde(skip)]
    pub reach: Option<Target>,
}

impl crate::engines::options::ReplicaOptions for MariadbReplica {
    fn name(&self) -> &str {
        &self.name
    }

    fn validate(&self, at: &KeyPath) -> std::result::Result<(), DecodeError> {
        MariadbReplica::validate(self, at)
    }
}

impl MariadbReplica {
    /// Check one replica's options; `at` is its place in the contender.
    pub fn validate(&self, at: &KeyPath) -> std::result::Result<(), DecodeError> {
        let err = |k: &str, m: String| Err(DecodeError::at(at.clone().key(k), m));
        self.check_server(at)?;
        if let Some(m) = &self.parallel_mode
            && !PARALLEL_MODES.contains(&m.as_str())
        {
            return err(
                "parallel_mode",
                format!(
                    "parallel_mode = {m:?}; use one of: {}",
                    PARALLEL_MODES.join(", ")
                ),
            );
        }
        if self.parallel_threads.is_some_and(|t| t > 16_383) {
            return err(
                "parallel_threads",
                "parallel_threads is slave_parallel_threads: 0 (serial) to 16383".into(),
            );
        }
        if self.flush_log_at_trx_commit.is_some_and(|f| f > 2) {
            return err(
                "flush_log_at_trx_commit",
                "flush_log_at_trx_commit must be 0, 1 or 2".into(),
            );
        }
        extra_settings(&self.server, &super::recipe::SETTINGS).map_err(|e| e.under(at))?;
        Ok(())
    }

    /// Is `engine` (and `version`) a server a replica can run? Errors are placed under `at`.
    fn check_server(&self, at: &KeyPath) -> std::result::Result<(), DecodeError> {
        let err = |k: &str, m: String| Err(DecodeError::at(at.clone().key(k), m));
        match self.engine.as_deref() {
            None | Some("mariadb") => {
                if self.version.is_some() {
                    return err(
                        "version",
                        "a MariaDB replica runs the primary's server; version is for a replica with engine = \"mysql\"".into(),
                    );
                }
                Ok(())
            }
            Some("mysql") => {
                if self.parallel_mode.is_some() {
                    return err(
                        "parallel_mode",
                        "parallel_mode is MariaDB's slave_parallel_mode; a MySQL replica applies in parallel by its version's rules with parallel_threads workers".into(),
                    );
                }
                if self.parallel_threads.is_some_and(|t| t > 1024) {
                    return err(
                        "parallel_threads",
                        "parallel_threads is MySQL's slave_parallel_workers: 0 (serial) to 1024"
                            .into(),
                    );
                }
                let series = || {
                    crate::engines::mysql::versions::VERSIONS
                        .iter()
                        .map(|v| format!("{:?}", v.version))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                match self.version.as_deref() {
                    None if self.target.is_some() => Ok(()),
                    None => err(
                        "version",
                        format!("a MySQL replica needs its version: one of {}", series()),
                    ),
                    Some(_) if self.mysql_version().is_none() => err(
                        "version",
                        format!(
                            "version = {:?} is not a MySQL version dbduel runs; use one of {}",
                            self.version.as_deref().unwrap_or_default(),
                            series()
                        ),
                    ),
                    Some(_) => Ok(()),
                }
            }
            Some(other) => err(
                "engine",
                format!(
                    "engine = {other:?}: a replica of a MariaDB primary is \"mariadb\" (the primary's server, the default) or \"mysql\" with its version"
                ),
            ),
        }
    }

    /// Is this replica a MySQL server (`engine = "mysql"`)?
    pub fn is_mysql(&self) -> bool {
        self.engine.as_deref() == Some("mysql")
    }

    /// The MySQL version this replica runs, if it is a MySQL server of a version dbduel runs.
    pub fn mysql_version(&self) -> Option<&'static MysqlVersion> {
        if !self.is_mysql() {
            return None;
        }
        self.version
            .as_deref()
            .and_then(crate::engines::mysql::versions::row)
    }

    /// How it replicates from a primary of `primary` (MariaDB for `None`): a replica of a
    /// MySQL primary as that server says (by its GTIDs); of a MariaDB primary, a MariaDB
    /// replica by GTID, a MySQL one by file and position.
    pub fn dialect(&self, primary: Option<&'static dyn Flavor>) -> Box<dyn ReplicaDialect> {
        match primary {
            Some(f) => f.replica_dialect(),
            None if self.is_mysql() => Box::new(FilePosition {
                version: self.mysql_version(),
            }),
            None => Box::new(MariadbGtid),
        }
    }

    /// The engine family its errors name, with a primary of `primary`.
    pub fn family(&self, primary: Option<&'static dyn Flavor>) -> &'static str {
        match primary {
            Some(f) => f.name(),
            None if self.is_mysql() => "mysql",
            None => "mariadb",
        }
    }

    /// This replica's [mysqld] settings over the contender's `base` (its caches and storage
    /// engine), numbered `server_id`, replicating from a primary of `primary`.
    pub fn settings(
        &self,
        mut base: BTreeMap<String, String>,
        server_id: u64,
        primary: Option<&'static dyn Flavor>,
    ) -> BTreeMap<String, String> {
        let dialect = self.dialect(primary);
        for k in ["log_bin", "binlog_format", "sync_binlog"] {
            base.remove(k);
        }
        let mut put = |k: &str, v: String| {
            base.insert(k.into(), v);
        };
        put("server_id", server_id.to_string());
        put("log_slave_updates", "OFF".into());
        put("skip_slave_start", "ON".into());
        put("relay_log", "relay".into());
        let parallel = dialect.parallel_settings(
            self.parallel_threads.unwrap_or(0),
            self.parallel_mode.as_deref(),
        );
        for (k, v) in parallel.into_iter().chain(dialect.replica_settings()) {
            put(&k, v);
        }
        put(
            "innodb_flush_log_at_trx_commit",
            self.flush_log_at_trx_commit.unwrap_or(2).to_string(),
        );
        // validated when the study was read
        for (k, v) in extra_settings(&self.server, &super::recipe::SETTINGS).unwrap_or_default() {
            base.insert(k, v);
        }
        // A replica that logs what it applies (MySQL 5.6's GTIDs, 5.7's preserved commit
        // order) needs a binary log of rows to log it in.
        if base.get("log_slave_updates").is_some_and(|v| v == "ON") {
            base.entry("log_bin".into())
                .or_insert_with(|| "binlog".into());
            base.entry("binlog_format".into())
                .or_insert_with(|| "ROW".into());
        }
        base
    }
}

impl crate::engine::replication::ReplicaOptions for MariadbReplica {
    fn target_spec(&self) -> crate::engine::replication::ReplicaTargetSpec<'_> {
        crate::engine::replication::ReplicaTargetSpec {
            url: self.target.as_deref(),
            password_env: self.password_env.as_deref(),
            password_file: self.password_file.as_ref(),
        }
    }

    fn configured(&self) -> Option<&'static str> {
        [
            ("version", self.version.is_some()),
            ("parallel_threads", self.parallel_threads.is_some()),
            ("parallel_mode", self.parallel_mode.is_some()),
            (
                "flush_log_at_trx_commit",
                self.flush_log_at_trx_commit.is_some(),
            ),
            ("server", !self.server.is_empty()),
        ]
        .into_iter()
        .find_map(|(k, set)| set.then_some(k))
    }

    fn set_reach(&mut self, reach: Option<Target>) {
        self.reach = reach;
    }
}

/// The primary's settings when it has replicas, unless the contender's own say otherwise: a
/// binary log with row events, GTIDs (always on in MariaDB), and the seed's durability
/// (`sync_binlog=0`, `innodb_flush_log_at_trx_commit=2`).
pub fn primary_defaults(s: &mut BTreeMap<String, String>, opts: &MariadbOptions) {
    let user_set = |k: &str| opts.server.contains_key(k);
    for (k, v) in [
        ("log_bin", "binlog"),
        ("server_id", "1"),
        ("binlog_format", "ROW"),
        ("sync_binlog", "0"),
    ]
    .into_iter()
    .chain(
        opts.flavor
            .map(|f| f.primary_settings())
            .unwrap_or_default(),
    ) {
        if !user_set(k) {
            s.insert(k.into(), v.into());
        }
    }
    if opts.flush_log_at_trx_commit.is_none() && !user_set("innodb_flush_log_at_trx_commit") {
        s.insert("innodb_flush_log_at_trx_commit".into(), "2".into());
    }
}

/// A replica to start: its name, its server's recipe, and how it replicates.
pub struct ReplicaPlan {
    pub name: String,
    pub recipe: Box<dyn crate::sandbox::Recipe>,
    pub way: ReplicaWay,
}

/// How a replica replicates, and the engine family its errors name.
pub struct ReplicaWay {
    dialect: Box<dyn ReplicaDialect>,
    family: &'static str,
}

impl ReplicaWay {
    fn of(r: &MariadbReplica, primary: Option<&'static dyn Flavor>) -> Self {
        ReplicaWay {
            dialect: r.dialect(primary),
            family: r.family(primary),
        }
    }
}

/// The replicas of `opts` to start: each one's server (the primary's MariaDB, or the MySQL
/// version it names, resolved on this machine: a version not installed is missing, with the
/// command that installs it) with its settings over the contender's storage engine and
/// caches (not the contender's own server settings: those are the primary's).
pub fn plans(opts: &MariadbOptions) -> Result<Vec<ReplicaPlan>> {
    let mut base = opts.clone();
    base.server = toml::Table::new();
    base.flush_log_at_trx_commit = None;
    // Nor the primary's replication settings (a MySQL primary's GTIDs would be a MySQL
    // replica's of a MariaDB primary): each replica's dialect says its own.
    base.common.replicas = Vec::new();
    let mut out = Vec::with_capacity(opts.replicas.len());
    for (i, r) in opts.replicas.iter().enumerate() {
        let mut own = base.clone();
        let mut server_dir = opts.server_dir();
        if let Some(v) = r.mysql_version() {
            let choice = crate::engines::versions::BinaryChoice {
                version: r.version.clone(),
                basedir: None,
            };
            server_dir = crate::engines::mysql::versions::BINARIES
                .resolve(&choice)?
                .dir;
            own.flavor = Some(v as &'static dyn Flavor);
        }
        let recipe = crate::engines::mariadb::recipe::MariadbRecipe {
            settings: r.settings(own.recipe(0).settings, i as u64 + 2, opts.flavor),
            rocksdb: opts.is_rocksdb(),
            memory_limit_mb: None,
            device_profile: None,
            data_dir: None,
            galera: None,
            server_dir,
            secret: None,
            tls: None,
        };
        out.push(ReplicaPlan {
            name: r.name.clone(),
            recipe: own.sandbox_recipe(recipe),
            way: ReplicaWay::of(r, opts.flavor),
        });
    }
    Ok(out)
}

/// The first file of the primary's binary log (where a file/position replica starts).
fn first_binlog_file(c: &mut mysql::Conn) -> Result<String> {
    let row: Option<mysql::Row> = c.query_first("SHOW BINARY LOGS").map_err(my_err)?;
    row.and_then(|r| r.get_opt::<String, _>(0).and_then(|v| v.ok()))
        .ok_or_else(|| {
            EngineError::new(
                "replication",
                "the primary has no binary log (SHOW BINARY LOGS is empty)",
            )
        })
}

/// How an attached replica replicates. Of a MySQL primary, as the replica itself does: its
/// version read from its `@@version` (a MySQL version dbduel runs), by MySQL GTID when
/// `SHOW SLAVE STATUS` says `Auto_Position` 1, else by binary-log file and position. Of a
/// MariaDB primary, as its options say.
fn attached_way(
    c: &mut mysql::Conn,
    r: &MariadbReplica,
    status: &SlaveStatus,
    primary: Option<&'static dyn Flavor>,
) -> Result<ReplicaWay> {
    let Some(f) = primary else {
        return Ok(ReplicaWay::of(r, None));
    };
    let version: Option<String> = c.query_first("SELECT @@version").map_err(my_err)?;
    let version = version.unwrap_or_default();
    let row = crate::sandbox::binaries::parse_version(&version)
        .and_then(|v| crate::engines::mysql::versions::row(&v))
        .filter(|_| !version.to_ascii_lowercase().contains("mariadb"))
        .ok_or_else(|| {
            EngineError::new(
                "missing",
                format!(
                    "replica {} runs {version}, not a MySQL version dbduel runs: how it replicates is not known",
                    r.name
                ),
            )
        })?;
    let dialect: Box<dyn ReplicaDialect> = match status.number("Auto_Position") {
        Some(1) => Box::new(MysqlGtid { version: row }),
        _ => Box::new(FilePosition { version: Some(row) }),
    };
    Ok(ReplicaWay {
        dialect,
        family: f.name(),
    })
}

/// A primary and its replicas: what `Replicated` works on.
pub struct MariadbTopology {
    database: String,
    timeout_s: u64,
    members: Members<mysql::Conn>,
    /// How each replica replicates, in order.
    ways: Vec<ReplicaWay>,
    /// The primary's server, when it is not MariaDB.
    flavor: Option<&'static dyn Flavor>,
    /// May dbduel stop and start the replicas' apply (and set the primary's commit wait)?
    controls: bool,
}

impl MariadbTopology {
    /// Start a sandbox for each replica of `plans`, create the replication account on the
    /// primary (outside its binary log) and point every replica at it from the start of its
    /// binary log, as the replica's dialect wires it, so each one replays everything the
    /// primary ever wrote, the study's database included.
    pub fn provision(
        opts: &MariadbOptions,
        primary: &Server,
        primary_reach: &Target,
        ctx: &OpenCtx<'_>,
        database: &str,
        plans: Vec<ReplicaPlan>,
    ) -> Result<MariadbTopology> {
        // A random password of its own (hex digits: nothing to quote), from the kernel's
        // generator: the account reads every row the primary writes. 32 of its digits (128
        // bits): MySQL keeps no more of a MASTER_PASSWORD, and a MySQL replica given the
        // whole secret logs in with a cut one and is refused.
        let secret = crate::sandbox::secret::generate().map_err(sandbox_err)?;
        let password = &secret.expose()[..REPL_PASSWORD_LEN.min(secret.expose().len())];
        let mut admin = crate_conn(conn_opts(primary_reach, None, opts.query_timeout_s))?;
        for sql in [
            "SET SESSION sql_log_bin = 0".to_string(),
            format!("CREATE USER '{REPL_USER}'@'127.0.0.1' IDENTIFIED BY '{password}'"),
            format!("GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'127.0.0.1'"),
        ] {
            admin.query_drop(sql).map_err(my_err)?;
        }
        let first_file = first_binlog_file(&mut admin)?;
        if let Some(mut sb) = primary.sandbox() {
            sb.set_role(&format!("primary of {} replicas", plans.len()))
                .map_err(sandbox_err)?;
        }
        let mut replicas = Vec::with_capacity(plans.len());
        let mut ways = Vec::with_capacity(plans.len());
        for ReplicaPlan { name, recipe, way } in plans {
            let dir = ctx.dir.join("replicas").join(&name);
            let p = Server::provision(
                None,
                recipe,
                &format!("{}/{name}", ctx.contender),
                &dir,
                "mysql",
                "root",
            )?;
            if let Some(mut sb) = p.server.sandbox() {
                sb.set_role(&format!("replica of 127.0.0.1:{}", primary_reach.port))
                    .map_err(sandbox_err)?;
            }
            let member = crate::engines::members::Member {
                name,
                server: p.server,
                reach: p.reach,
            };
            replicas.push(member);
            let member = replicas.last().map(|m| &m.reach).unwrap_or(primary_reach);
            let err = crate::engines::mariadb::family_err(way.family);
            let mut c = crate_conn(conn_opts(member, None, opts.query_timeout_s))
                .map_err(|e| crate::engines::mariadb::flavor::named(way.family, e))?;
            let wiring = Wiring {
                port: primary_reach.port,
                user: REPL_USER,
                password,
                first_file: &first_file,
            };
            c.query_drop(way.dialect.wire(&wiring)).map_err(err)?;
            c.query_drop("START SLAVE").map_err(err)?;
            ways.push(way);
        }
        Ok(MariadbTopology {
            database: database.to_string(),
            timeout_s: opts.query_timeout_s,
            members: Members::new(primary_reach.clone(), replicas),
            ways,
            flavor: opts.flavor,
            controls: true,
        })
    }

    /// Take the replicas given by target as they are: each must already be a replica
    /// (`SHOW SLAVE STATUS` has a row); dbduel wires nothing on servers it did not start,
    /// and stops or starts their apply only when `control_replication` says so.
    pub fn attach(
        opts: &MariadbOptions,
        primary_reach: &Target,
        database: &str,
    ) -> Result<MariadbTopology> {
        let mut list = Vec::with_capacity(opts.replicas.len());
        let mut ways = Vec::with_capacity(opts.replicas.len());
        for r in &opts.replicas {
            let Some(t) = &r.reach else {
                return Err(EngineError::new(
                    "usage",
                    format!("replica {} of a target needs a target of its own", r.name),
                ));
            };
            let mut c = crate_conn(conn_opts(t, None, opts.query_timeout_s)).map_err(|e| {
                EngineError::new(
                    "connect",
                    format!(
                        "cannot connect to replica {} at {}: {}",
                        r.name,
                        t.display(),
                        e.message
                    ),
                )
            })?;
            let status: Option<mysql::Row> = c.query_first("SHOW SLAVE STATUS").map_err(my_err)?;
            let Some(status) = status.map(SlaveStatus) else {
                return Err(EngineError::new(
                    "replication",
                    format!(
                        "replica {} at {} is not a replica (SHOW SLAVE STATUS is empty): point it at the primary {} first; dbduel wires only servers it provisions",
                        r.name,
                        t.display(),
                        primary_reach.display()
                    ),
                ));
            };
            ways.push(attached_way(&mut c, r, &status, opts.flavor)?);
            list.push(crate::engines::members::external_member(&r.name, t));
        }
        Ok(MariadbTopology {
            database: database.to_string(),
            timeout_s: opts.query_timeout_s,
            members: Members::new(primary_reach.clone(), list),
            ways,
            flavor: opts.flavor,
            controls: opts.control_replication,
        })
    }

    /// Run `f` on the member's administrative connection (the primary's for `None`).
    fn admin<T>(
        &self,
        member: Option<usize>,
        f: impl FnOnce(&mut mysql::Conn) -> mysql::Result<T>,
    ) -> Result<T> {
        let timeout_s = self.timeout_s;
        self.members.admin(
            member,
            |reach| crate_conn(conn_opts(reach, None, timeout_s)),
            f,
            my_err,
        )
    }

    /// The first replica whose server has died, and how.
    pub fn gone(&self) -> Option<String> {
        self.members.gone()
    }

    /// Stop every replica's server and remove its sandbox (or keep them with `keep`).
    pub fn finish(self, keep: bool) -> Result<()> {
        self.members.finish(keep)
    }
}

/// How [`checksum_tables`] sums, in words for reports.
pub const CHECKSUM_RULE: &str = "CHECKSUM TABLE of every table in the study's database";

/// `CHECKSUM TABLE` of every base table in `db` on one server, sorted by table.
pub(crate) fn checksum_tables(c: &mut mysql::Conn, db: &str) -> mysql::Result<Vec<TableSum>> {
    let tables: Vec<String> = c.exec(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
        (db,),
    )?;
    let mut out = Vec::with_capacity(tables.len());
    for t in tables {
        let row: Option<(String, Option<u64>)> =
            c.query_first(format!("CHECKSUM TABLE `{db}`.`{t}`"))?;
        let sum = row
            .and_then(|(_, s)| s)
            .map_or_else(|| "NULL".into(), |s| s.to_string());
        out.push(TableSum { table: t, sum });
    }
    Ok(out)
}

impl MariadbTopology {
    /// The primary's group-commit wait variables, (count, microseconds): MariaDB's
    /// `binlog_commit_wait_count`/`_usec`, or its flavor's counterpart; `unsupported` where
    /// the server has none (MySQL 5.6).
    fn commit_wait_variables(&self) -> Result<(&'static str, &'static str)> {
        match self.flavor {
            None => Ok(("binlog_commit_wait_count", "binlog_commit_wait_usec")),
            Some(f) => f.commit_wait().ok_or_else(|| {
                EngineError::new(
                    "unsupported",
                    format!(
                        "this {} server has no group-commit wait (MySQL's binlog_group_commit_sync_delay came in 5.7)",
                        f.name()
                    ),
                )
            }),
        }
    }

    /// How replica `replica` replicates.
    fn way(&self, replica: usize) -> Result<&ReplicaWay> {
        self.ways
            .get(replica)
            .ok_or_else(|| EngineError::new("usage", format!("no replica number {replica}")))
    }
}

impl Replicated for MariadbTopology {
    fn replica_count(&self) -> usize {
        self.members.list.len()
    }

    fn replica_name(&self, replica: usize) -> String {
        self.members.name(replica)
    }

    fn replica_facts(&self, replica: usize) -> Result<ReplicaFacts> {
        let dialect = &self.way(replica)?.dialect;
        let names = dialect
            .facts_variables()
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let (rows, version) = self.admin(Some(replica), |c| {
            let rows: Vec<(String, String)> = c.query(format!(
                "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})"
            ))?;
            let version: Option<String> = c.query_first("SELECT VERSION()")?;
            Ok((rows, version))
        })?;
        let mut settings: BTreeMap<String, String> = rows.into_iter().collect();
        settings.insert("replication".into(), dialect.method().into());
        self.members
            .facts(replica, settings, version.unwrap_or_default())
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
        self.admin(Some(replica), |c| c.query_drop("STOP SLAVE SQL_THREAD"))
    }

    fn resume_apply(&self, replica: usize) -> Result<()> {
        self.admin(Some(replica), |c| c.query_drop("START SLAVE SQL_THREAD"))
    }

    fn stops_fetching(&self) -> bool {
        true
    }

    fn pause_fetch(&self, replica: usize) -> Result<()> {
        self.admin(Some(replica), |c| c.query_drop("STOP SLAVE IO_THREAD"))
    }

    fn resume_fetch(&self, replica: usize) -> Result<()> {
        self.admin(Some(replica), |c| c.query_drop("START SLAVE IO_THREAD"))
    }

    /// Its GTID position, with its binary log's coordinates (`SHOW MASTER STATUS`) that a
    /// file/position replica is compared with.
    fn primary_position(&self) -> Result<Position> {
        let executed = self
            .flavor
            .map_or("@@gtid_binlog_pos", |f| f.executed_gtids());
        let (pos, status) = self.admin(None, |c| {
            let pos: Option<String> = c.query_first(format!("SELECT {executed}"))?;
            let status: Option<mysql::Row> = c.query_first("SHOW MASTER STATUS")?;
            Ok((pos, status))
        })?;
        let pos = pos.unwrap_or_default();
        let mut p = match self.flavor {
            None => gtid_position(pos),
            Some(_) => gtid_set_position(pos),
        };
        if let Some(row) = status.map(SlaveStatus) {
            let file = row.text("File");
            p.binlog = file
                .rsplit('.')
                .next()
                .and_then(|n| n.parse().ok())
                .zip(row.number("Position"));
        }
        Ok(p)
    }

    fn replica_state(&self, replica: usize) -> Result<ReplicaState> {
        let dialect = &self.way(replica)?.dialect;
        let read = self.admin(Some(replica), |c| {
            let row: Option<mysql::Row> = c.query_first("SHOW SLAVE STATUS")?;
            match row.map(SlaveStatus) {
                None => Ok(None),
                Some(status) => dialect.read(c, &status).map(|r| Some((status, r))),
            }
        })?;
        let Some((status, reading)) = read else {
            return Err(EngineError::new(
                "replication",
                format!(
                    "replica {} is not configured to replicate",
                    self.members.get(replica)?.name
                ),
            ));
        };
        let error = [status.text("Last_SQL_Error"), status.text("Last_IO_Error")]
            .into_iter()
            .find(|e| !e.is_empty());
        Ok(ReplicaState {
            applied: reading.applied,
            received: reading.received,
            applying: status.text("Slave_SQL_Running") == "Yes",
            receiving: status.text("Slave_IO_Running") == "Yes",
            rows_changed: reading.rows_changed,
            backlog_bytes: status.number("Relay_Log_Space"),
            server_lag_s: status.number("Seconds_Behind_Master").map(|s| s as f64),
            error,
        })
    }

    fn checksums(&self, member: Option<usize>) -> Result<Vec<TableSum>> {
        self.admin(member, |c| checksum_tables(c, &self.database))
    }

    fn checksum_rule(&self) -> &'static str {
        CHECKSUM_RULE
    }

    fn promote(&self, replica: usize) -> Result<Vec<String>> {
        const PROMOTE: [&str; 3] = [
            "STOP SLAVE",
            "RESET SLAVE ALL",
            "SET GLOBAL read_only = OFF",
        ];
        self.admin(Some(replica), |c| {
            PROMOTE.iter().try_for_each(|q| c.query_drop(*q))
        })?;
        Ok(PROMOTE.iter().map(|q| q.to_string()).collect())
    }

    fn replica_session(&self, replica: usize) -> Result<Box<dyn Session>> {
        let m = self.members.get(replica)?;
        crate::engines::mariadb::session_at(
            &m.reach,
            &self.database,
            self.timeout_s,
            self.way(replica)?.family,
        )
    }

    fn commit_wait(&self) -> Result<(u64, u64)> {
        let (count, usec) = self.commit_wait_variables()?;
        let now: Option<(u64, u64)> = self.admin(None, |c| {
            c.query_first(format!("SELECT @@{count}, @@{usec}"))
        })?;
        Ok(now.unwrap_or((0, 0)))
    }

    /// On MySQL a count of 0 does not turn the wait off (the delay alone then holds every
    /// group), while on MariaDB it does: so a count of 0 sets MySQL's delay to 0 too, and the
    /// same sweep means the same on both. (Putting the originals back is exact: see
    /// [`Replicated::put_commit_wait`].)
    fn set_commit_wait(&self, count: u64, usec: u64) -> Result<(u64, u64)> {
        let usec = match self.flavor {
            Some(_) if count == 0 => 0,
            _ => usec,
        };
        self.write_commit_wait(count, usec)
    }

    /// Exactly the values read before (a MySQL primary's own delay with a count of 0 is
    /// someone else's setting, kept).
    fn put_commit_wait(&self, count: u64, usec: u64) -> Result<()> {
        self.write_commit_wait(count, usec).map(drop)
    }

    /// A MariaDB primary's sessions choose their domain; MySQL has none.
    fn gtid_domains(&self) -> bool {
        self.flavor.is_none()
    }
}

impl MariadbTopology {
    /// Set the primary's commit-wait variables to `count` and `usec` as given; the values
    /// they had.
    fn write_commit_wait(&self, count: u64, usec: u64) -> Result<(u64, u64)> {
        let (count_var, usec_var) = self.commit_wait_variables()?;
        self.admin(None, |c| {
            let before: Option<(u64, u64)> =
                c.query_first(format!("SELECT @@{count_var}, @@{usec_var}"))?;
            c.query_drop(format!(
                "SET GLOBAL {count_var} = {count}, {usec_var} = {usec}"
            ))?;
            Ok(before.unwrap_or((0, 0)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_get_their_own_id_and_apply_settings_over_the_primarys_caches() {
        let r: MariadbReplica = toml::from_str(
            "name = \"opt-4\"\nparallel_threads = 4\nparallel_mode = \"optimistic\"\nserver = { slave_parallel_max_queued = 1048576 }",
        )
        .expect("replica");
        let mut base = BTreeMap::new();
        base.insert("innodb_buffer_pool_size".into(), "256M".into());
        base.insert("log_bin".into(), "binlog".into());
        base.insert("server_id".into(), "1".into());
        let s = r.settings(base, 3, None);
        assert_eq!(s["server_id"], "3");
        assert_eq!(s["slave_parallel_threads"], "4");
        assert_eq!(s["slave_parallel_mode"], "optimistic");
        assert_eq!(s["log_slave_updates"], "OFF");
        assert_eq!(s["innodb_flush_log_at_trx_commit"], "2");
        assert_eq!(s["innodb_buffer_pool_size"], "256M");
        assert_eq!(s["slave_parallel_max_queued"], "1048576");
        assert!(!s.contains_key("log_bin"), "replicas write no binary log");
    }
}
