//! The MariaDB engine: a private sandboxed `mariadbd` per contender, driven over the MySQL
//! protocol with the synchronous `mysql` crate (one connection per session, server-side
//! prepared statements on hot paths). Storage engine, caches and load path are contender
//! options; their effective values are read back from the server.

pub mod flavor;
pub mod galera;
mod grants;
pub mod lease;
pub mod recipe;
pub mod replica_dialect;
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
use crate::engines::wire::mysql::{ConnectError, WireSession};
use crate::sandbox::device_profile::DeviceProfile;
use galera::{GaleraCluster, GaleraOptions};
use mysql::prelude::Queryable;
use recipe::MariadbRecipe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use topology::{MariadbReplica, MariadbTopology, primary_defaults};

/// Storage engines a MariaDB contender may use.
const STORAGE_ENGINES: &[&str] = &["innodb", "rocksdb", "aria", "myisam"];
/// MyRocks' compressions (`compression` with storage_engine = "rocksdb").
const COMPRESSIONS: &[&str] = &["none", "snappy", "zlib", "lz4", "zstd"];
/// InnoDB page compressions (`compression` with storage_engine = "innodb"): zlib is built
/// in, lzma and bzip2 come as provider plugins (`make install-servers` installs them).
const PAGE_COMPRESSIONS: &[&str] = &["none", "zlib", "lzma", "bzip2"];
/// TokuDB's row compressions (`compression` with storage_engine = "tokudb", on a target):
/// each the session's `tokudb_row_format` `tokudb_<name>` (none: `tokudb_uncompressed`).
const TOKUDB_COMPRESSIONS: &[&str] = &["none", "zlib", "quicklz", "lzma", "snappy"];
const LOAD_MODES: &[&str] = &["auto", "transaction", "bulk", "commit_in_the_middle"];

/// Contender options for `engine = "mariadb"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MariadbOptions {
    /// innodb, rocksdb (MyRocks), aria or myisam: the server's default_storage_engine.
    #[serde(default = "default_engine")]
    pub storage_engine: String,
    /// innodb_buffer_pool_size, MiB (default 256).
    #[serde(default)]
    pub buffer_pool_mb: Option<u64>,
    /// innodb_buffer_pool_size as a share of the server's memory (0.05 to 0.9) — this
    /// machine's, or its `memory_limit_mb` when that is less — for studies that state it the
    /// way their authors did ("52 GB of 72 GB"). When given it decides the size, over
    /// `buffer_pool_mb` (so a scale can restate a study's pool as a share); the size it gives
    /// here is read back into the manifest.
    #[serde(default)]
    pub buffer_pool_share: Option<f64>,
    /// rocksdb_block_cache_size, MiB (MyRocks only; default 256).
    #[serde(default)]
    pub block_cache_mb: Option<u64>,
    /// rocksdb_block_cache_size as a share of the server's memory, as `buffer_pool_share`
    /// (MyRocks only; decides over `block_cache_mb`).
    #[serde(default)]
    pub block_cache_share: Option<f64>,
    /// aria_pagecache_buffer_size, MiB (default 256).
    #[serde(default)]
    pub aria_pagecache_mb: Option<u64>,
    /// MyRocks compression for the default column family: none, snappy (RocksDB's default),
    /// zlib, lz4 or zstd. With InnoDB, page compression of every table (`PAGE_COMPRESSED`):
    /// none, zlib, or lzma and bzip2 (TokuDB's lzma, through MariaDB's provider plugins).
    #[serde(default)]
    pub compression: Option<String>,
    /// How `load` runs LOAD DATA: `transaction` (one statement, one transaction), `bulk`
    /// (MyRocks rocksdb_bulk_load: sorted SST files, bypassing the memtable),
    /// `commit_in_the_middle` (MyRocks commits every rocksdb_bulk_load_size rows), or `auto`
    /// (bulk for rocksdb, transaction otherwise). MyRocks refuses a large load in one
    /// transaction (rocksdb_max_row_locks), so `transaction` fails there by design.
    #[serde(default = "default_load_mode")]
    pub load_mode: String,
    /// Does a commit wait for its log on disk? innodb_flush_log_at_trx_commit, and with
    /// MyRocks also rocksdb_flush_log_at_trx_commit: 0 (written and synced about once a
    /// second, not at commit), 1 (synced at every commit: the default) or 2 (written at
    /// commit, synced about once a second).
    #[serde(default)]
    pub flush_log_at_trx_commit: Option<u8>,
    /// A query (or connection handshake) with no answer for this long fails with a timeout
    /// error instead of hanging the run, seconds.
    #[serde(default = "default_timeout")]
    pub query_timeout_s: u64,
    /// A Galera cluster of this many nodes instead of one server (each node gets every
    /// option above): `{ nodes = 3 }`, with its wsrep settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<GaleraOptions>,
    /// The options every server family takes (`memory_limit_mb`, `device_profile`,
    /// `data_dir`, `server`, `replicas`, `partitions`, `control_replication`, the target),
    /// read through `Deref`.
    #[serde(skip)]
    pub common: ServerOptions<MariadbReplica>,
    /// Another server of the MySQL protocol this engine runs instead of MariaDB (a family's
    /// version of MySQL, say); `None`: MariaDB.
    #[serde(skip)]
    pub flavor: Option<&'static dyn flavor::Flavor>,
}

impl std::ops::Deref for MariadbOptions {
    type Target = ServerOptions<MariadbReplica>;
    fn deref(&self) -> &Self::Target {
        &self.common
    }
}

impl std::ops::DerefMut for MariadbOptions {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.common
    }
}

fn default_engine() -> String {
    "innodb".into()
}
/// Cache sizes of a sandbox when the contender gives none, MiB.
const DEFAULT_CACHE_MB: u64 = 256;
fn default_load_mode() -> String {
    "auto".into()
}
fn default_timeout() -> u64 {
    3600
}

/// The `mariadb` family in the engines registry.
pub const FAMILY: crate::engines::Family = crate::engines::Family {
    name: "mariadb",
    decode,
    sql_variants: &["mariadb", "mysql", ""],
    url_schemes: &["mysql", "mariadb"],
    keeps_rows: true,
    shards_meet: true,
    sandbox: Some(crate::engines::SandboxFamily {
        name: "mariadb",
        recipe: |choice, tls| {
            let b = versions::BINARIES.resolve(choice)?;
            Ok(Box::new(recipe::MariadbRecipe {
                server_dir: b.dir,
                tls,
                ..recipe::MariadbRecipe::default()
            }))
        },
        target: recipe::sandbox_target,
    }),
};

/// `engine = "mariadb"`: decode and check the options, and the `target` of an external server.
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
    binary: &crate::engines::versions::BinaryChoice,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
    let mut o = MariadbOptions::from_table(options)?;
    if let Some(t) = target {
        o.target = Some(crate::engine::target::parse(t, "mysql", 3306)?);
    }
    o.validate().map_err(crate::engines::in_options)?;
    if o.target.is_some() {
        o.check_external().map_err(crate::engines::in_options)?;
    }
    o.common.choose_binary(binary)?;
    o.check_version()?;
    crate::engine::replication::set_replica_targets(
        &mut o.common.replicas,
        o.common.target.as_ref(),
        target.is_none_or(|t| t.read_password),
        o.common.control_replication,
        "mysql",
        3306,
    )
    .map_err(crate::engines::in_options)?;
    Ok(Box::new(o))
}

impl crate::engine::EngineKind for MariadbOptions {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.device_profile.as_ref()
    }

    fn data_dir(&self) -> Option<&std::path::Path> {
        self.data_dir.as_deref()
    }

    fn preflight(&self) -> Result<()> {
        MariadbOptions::preflight(self)
    }

    fn account_reach(&self, database: &str) -> Result<Option<crate::engine::AccountReach>> {
        let Some(t) = &self.target else {
            return Ok(None);
        };
        let database = t.database.as_deref().unwrap_or(database);
        let mut c = crate_conn(conn_opts(t, None, self.query_timeout_s))
            .map_err(|e| flavor::named(self.engine_name(), e))?;
        let grants: Vec<String> = c.query("SHOW GRANTS").map_err(my_err)?;
        Ok(Some(crate::engine::AccountReach {
            wide: grants::wide(&grants, database),
            // `_` and `%` are wildcards in a database grant: escaped, it names one.
            recipe: format!(
                "CREATE USER 'dbduel'@'%' IDENTIFIED BY 'a password of yours';\nGRANT ALL PRIVILEGES ON `{}`.* TO 'dbduel'@'%';",
                database.replace('_', "\\_").replace('%', "\\%")
            ),
        }))
    }

    fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        if self.target.is_some() {
            return (0, KeyPath::root());
        }
        let (bp, bc, aria) = self.cache_sizes_mb();
        // about 85 MiB of server overhead and about 1 MiB per connection thread, for the
        // primary and each replica (whose clients are the replication threads)
        // (A Galera node also maps its write-set cache, gcache, 128 MiB by default.)
        let (servers, gcache) = match &self.cluster {
            Some(c) => (u64::from(c.nodes), 128),
            None => (1 + self.replicas.len() as u64, 0),
        };
        let total = ((bp + bc + aria + 85 + gcache) * servers + clients) << 20;
        let key = if bc > bp && self.block_cache_share.is_some() {
            "block_cache_share"
        } else if bc > bp {
            "block_cache_mb"
        } else if self.buffer_pool_share.is_some() {
            "buffer_pool_share"
        } else {
            "buffer_pool_mb"
        };
        (total, KeyPath::root().key("options").key(key))
    }

    fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        let mut o = self.clone();
        o.common.resolve_binary(o.binaries())?;
        Ok(Box::new(MariadbEngine::open(o, ctx)?))
    }

    fn attach_replication(
        &self,
        database: &str,
    ) -> Result<Option<Box<dyn crate::engine::replication::Replicated>>> {
        match &self.target {
            Some(t) if !self.replicas.is_empty() => {
                Ok(Some(Box::new(MariadbTopology::attach(self, t, database)?)))
            }
            _ => Ok(None),
        }
    }
}

impl MariadbOptions {
    /// The options of an `options` table, decoded (errors under `options`) but not yet
    /// checked.
    pub fn from_table(options: &toml::Table) -> std::result::Result<Self, DecodeError> {
        let (mut o, common): (Self, _) = crate::engines::options::decode(options)?;
        o.common = common;
        Ok(o)
    }

    pub fn validate(&self) -> std::result::Result<(), DecodeError> {
        self.common.check_placement()?;
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        let se = self.storage_engine.to_ascii_lowercase();
        if se == "tokudb" && self.target.is_none() {
            return at(
                "storage_engine",
                "storage_engine = \"tokudb\" runs only on an external server that has TokuDB (give the contender a `target`): TokuDB no longer ships, so a private server has none; rocksdb is its write-optimized successor".into(),
            );
        }
        if se != "tokudb" && !STORAGE_ENGINES.contains(&se.as_str()) {
            return at(
                "storage_engine",
                format!(
                    "storage_engine = {:?} is not available; use one of: {} (TokuDB no longer ships; rocksdb is its write-optimized successor)",
                    self.storage_engine,
                    STORAGE_ENGINES.join(", ")
                ),
            );
        }
        self.check_memory()?;
        self.check_storage_options(&se)?;
        if !(1..=7 * 86_400).contains(&self.query_timeout_s) {
            return at(
                "query_timeout_s",
                "query_timeout_s must be from 1 to 604800 (a week)".into(),
            );
        }
        if self.flush_log_at_trx_commit.is_some_and(|f| f > 2) {
            return at(
                "flush_log_at_trx_commit",
                "flush_log_at_trx_commit must be 0, 1 or 2".into(),
            );
        }
        self.common.check_settings_and_replicas(&recipe::SETTINGS)?;
        self.check_topology(&se)
    }

    /// Cache sizes, their share of the machine, and the memory limit that must hold them.
    fn check_memory(&self) -> std::result::Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        for (k, v) in [
            ("buffer_pool_mb", self.buffer_pool_mb),
            ("block_cache_mb", self.block_cache_mb),
            ("aria_pagecache_mb", self.aria_pagecache_mb),
        ] {
            let Some(v) = v else { continue };
            if !(8..=1 << 20).contains(&v) {
                return at(
                    k,
                    format!("{k} = {v} is out of range; use 8 to 1048576 (MiB)"),
                );
            }
        }
        if let Some(limit) = self.memory_limit_mb {
            let (bp, bc, _) = self.cache_sizes_mb();
            let need = bp + bc + 85;
            if limit < need {
                return at(
                    "memory_limit_mb",
                    format!(
                        "memory_limit_mb = {limit} leaves the server too little: its caches take {} MiB and it needs about 85 MiB more; use at least {need}, or lower buffer_pool_mb / block_cache_mb",
                        bp + bc
                    ),
                );
            }
        }
        for (k, v) in [
            ("buffer_pool_share", self.buffer_pool_share),
            ("block_cache_share", self.block_cache_share),
        ] {
            if let Some(share) = v
                && !(0.05..=0.9).contains(&share)
            {
                return at(
                    k,
                    format!(
                        "{k} = {share} is out of range; use 0.05 to 0.9 of the server's memory (the machine's, or its memory_limit_mb when less)"
                    ),
                );
            }
        }
        if self.block_cache_share.is_some() && !self.is_rocksdb() {
            return at(
                "block_cache_share",
                "block_cache_share sizes MyRocks' block cache; use it with storage_engine = \"rocksdb\"".into(),
            );
        }
        Ok(())
    }

    /// MyRocks' compression and the load mode, each for the storage engine `se` it suits.
    fn check_storage_options(&self, se: &str) -> std::result::Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if let Some(c) = &self.compression {
            let (allowed, what) = match se {
                "rocksdb" => (COMPRESSIONS, "MyRocks"),
                "innodb" => (PAGE_COMPRESSIONS, "InnoDB page compression"),
                "tokudb" => (TOKUDB_COMPRESSIONS, "TokuDB"),
                _ => {
                    return at(
                        "compression",
                        format!(
                            "compression applies to storage_engine = \"rocksdb\" (MyRocks), \"innodb\" (page compression) or \"tokudb\", not {se:?}"
                        ),
                    );
                }
            };
            if !allowed.contains(&c.as_str()) {
                return at(
                    "compression",
                    format!(
                        "compression = {c:?}; {what} takes one of: {}",
                        allowed.join(", ")
                    ),
                );
            }
        }
        if !LOAD_MODES.contains(&self.load_mode.as_str()) {
            return at(
                "load_mode",
                format!(
                    "load_mode = {:?}; use one of: {}",
                    self.load_mode,
                    LOAD_MODES.join(", ")
                ),
            );
        }
        if se != "rocksdb" && matches!(self.load_mode.as_str(), "bulk" | "commit_in_the_middle") {
            return at(
                "load_mode",
                format!(
                    "load_mode = {:?} is a MyRocks option; use it with storage_engine = \"rocksdb\"",
                    self.load_mode
                ),
            );
        }
        Ok(())
    }

    /// Replicas (names and each one's options) or a Galera cluster (of InnoDB tables), not
    /// both.
    fn check_topology(&self, se: &str) -> std::result::Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if let Some(c) = &self.cluster {
            c.validate(&KeyPath::root().key("cluster"))?;
            if self.tls {
                return at(
                    "tls",
                    "tls = true serves a single sandbox so far; a Galera cluster's clients would still connect in clear: leave tls out".into(),
                );
            }
            if !self.replicas.is_empty() {
                return at(
                    "cluster",
                    "a contender is a Galera cluster or a primary with replicas, not both; make them two contenders".into(),
                );
            }
            if se != "innodb" {
                return at(
                    "cluster",
                    format!(
                        "Galera replicates InnoDB tables only; use storage_engine = \"innodb\" with a cluster (not {:?})",
                        self.storage_engine
                    ),
                );
            }
        }
        // A MySQL replica beside MariaDB has the contender's storage engine, or it is
        // refused where it is named.
        for (i, r) in self.replicas.iter().enumerate() {
            if let Some(v) = r.mysql_version()
                && !v.storage_engines.contains(&se)
            {
                return Err(DecodeError::at(
                    KeyPath::root().key("replicas").index(i).key("engine"),
                    format!(
                        "MySQL {} has no storage_engine = {:?} (the contender's, which its replicas share); use one of: {}",
                        v.version,
                        self.storage_engine,
                        v.storage_engines.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// With a target, the server's own configuration applies: options that configure a
    /// sandbox are refused rather than silently ignored.
    pub fn check_external(&self) -> std::result::Result<(), DecodeError> {
        let sandbox_only = [
            ("buffer_pool_mb", self.buffer_pool_mb.is_some()),
            ("buffer_pool_share", self.buffer_pool_share.is_some()),
            ("block_cache_mb", self.block_cache_mb.is_some()),
            ("block_cache_share", self.block_cache_share.is_some()),
            ("aria_pagecache_mb", self.aria_pagecache_mb.is_some()),
            ("memory_limit_mb", self.memory_limit_mb.is_some()),
            ("device_profile", self.device_profile.is_some()),
            ("data_dir", self.data_dir.is_some()),
            // TokuDB's compression is a session's row format: a target's sessions set it.
            (
                "compression",
                self.compression.is_some() && !self.is_tokudb(),
            ),
            (
                "flush_log_at_trx_commit",
                self.flush_log_at_trx_commit.is_some(),
            ),
            ("server", !self.server.is_empty()),
            ("cluster", self.cluster.is_some()),
        ];
        refuse_sandbox_options(&sandbox_only)
    }

    /// What the chosen version can do: a cached server has no Galera provider, and MyRocks
    /// only when made of Debian's packages (11.8); errors are placed at the contender's
    /// `version`.
    fn check_version(&self) -> std::result::Result<(), DecodeError> {
        let Some(caps) = versions::capabilities(&self.binary) else {
            return Ok(());
        };
        let v = self.binary.version.as_deref().unwrap_or_default();
        let refuse = |what: &str| {
            Err(DecodeError::at(
                KeyPath::root().key("version"),
                format!(
                    "MariaDB {v} from the server cache has no {what}: it comes with Debian's MariaDB; leave version out (or use one with it) for this contender"
                ),
            ))
        };
        if self.is_rocksdb() && !caps.myrocks {
            return refuse("MyRocks plugin (storage_engine = \"rocksdb\")");
        }
        if self.cluster.is_some() && !caps.galera {
            return refuse("Galera provider (cluster)");
        }
        Ok(())
    }

    /// Sandboxes: is the chosen server installed and does it start, and is the storage
    /// engine's plugin installed? Targets: does the server answer and have the storage
    /// engine?
    pub fn preflight(&self) -> Result<()> {
        match &self.target {
            None => {
                let mut o = self.clone();
                o.common.resolve_binary(o.binaries())?;
                o.sandbox_recipe(o.recipe(1))
                    .check_installed()
                    .map_err(sandbox_err)?;
                // Each replica's server too: a MySQL version beside MariaDB is installed.
                for plan in topology::plans(&o)? {
                    plan.recipe.check_installed().map_err(sandbox_err)?;
                }
                Ok(())
            }
            Some(t) => {
                // The benchmark sessions' client logs in first, before any other: it holds to
                // the target's TLS and password rules, and a method it does not speak is a
                // missing prerequisite.
                // Either client's failure to connect says where, keeping a TLS failure's kind.
                let cannot = |e: EngineError| {
                    let kind = if e.kind == "tls" { "tls" } else { "connect" };
                    EngineError::new(
                        kind,
                        format!(
                            "cannot connect to {}: {}",
                            t.display(),
                            e.message.trim_start_matches("mariadb: ")
                        ),
                    )
                };
                match WireSession::connect(t, "", self.query_timeout_s) {
                    Ok(_) => {}
                    Err(ConnectError::Failed(e)) => return Err(cannot(e)),
                    Err(ConnectError::Unsupported(u)) => {
                        return Err(EngineError::new(
                            "missing",
                            format!("{}: {}", t.display(), u.0),
                        ));
                    }
                }
                let mut c = crate_conn(conn_opts(t, None, self.query_timeout_s)).map_err(cannot)?;
                check_storage_engine(&mut c, &self.storage_engine, self.engine_name())
            }
        }
    }

    /// (buffer pool, block cache if MyRocks, Aria page cache) of a sandbox, MiB.
    pub fn cache_sizes_mb(&self) -> (u64, u64, u64) {
        let bc = if self.is_rocksdb() {
            self.cache_mb_here(self.block_cache_share, self.block_cache_mb)
        } else {
            0
        };
        (
            self.buffer_pool_mb_here(),
            bc,
            if self.has_aria() {
                self.aria_pagecache_mb.unwrap_or(DEFAULT_CACHE_MB)
            } else {
                0
            },
        )
    }

    /// The engine's name: `mariadb`, or its flavor's.
    pub fn engine_name(&self) -> &'static str {
        self.flavor.map_or("mariadb", |f| f.name())
    }

    /// The binaries of the server's family: MariaDB's, or its flavor's.
    pub fn binaries(&self) -> &'static crate::engines::versions::FamilyBinaries {
        self.flavor.map_or(&versions::BINARIES, |f| f.binaries())
    }

    /// Does the server have Aria (MariaDB's own storage engine)?
    fn has_aria(&self) -> bool {
        self.flavor.is_none_or(|f| f.has_aria())
    }

    /// The recipe that runs `r`'s settings: MariaDB's, or the flavor's server's.
    pub fn sandbox_recipe(&self, r: MariadbRecipe) -> Box<dyn crate::sandbox::Recipe> {
        match self.flavor {
            Some(f) => f.recipe(&r),
            None => Box::new(r),
        }
    }

    /// The buffer pool this machine's sandbox gets, MiB: `buffer_pool_mb`, or
    /// `buffer_pool_share` of the server's memory.
    fn buffer_pool_mb_here(&self) -> u64 {
        self.cache_mb_here(self.buffer_pool_share, self.buffer_pool_mb)
    }

    /// A cache's size here, MiB: its share of the server's memory (this machine's, or the
    /// memory limit when that is less), else its size in MiB, else the default.
    fn cache_mb_here(&self, share: Option<f64>, mb: Option<u64>) -> u64 {
        match (share, mb) {
            (Some(share), _) => {
                let mem = crate::sysmon::host_facts().mem_total_bytes;
                let mem = match self.memory_limit_mb {
                    Some(limit) => mem.min(limit << 20),
                    None => mem,
                };
                ((mem as f64 * share) as u64 >> 20).max(8)
            }
            (None, Some(mb)) => mb,
            (None, None) => DEFAULT_CACHE_MB,
        }
    }

    fn is_tokudb(&self) -> bool {
        self.storage_engine.eq_ignore_ascii_case("tokudb")
    }

    fn is_rocksdb(&self) -> bool {
        self.storage_engine.eq_ignore_ascii_case("rocksdb")
    }

    /// InnoDB page compression: its algorithm, when the contender asked for one.
    fn page_compression(&self) -> Option<&str> {
        self.compression
            .as_deref()
            .filter(|c| *c != "none" && self.storage_engine.eq_ignore_ascii_case("innodb"))
    }

    /// The load path this contender uses.
    fn load_mode(&self) -> &str {
        match self.load_mode.as_str() {
            "auto" if self.is_rocksdb() => "bulk",
            "auto" => "transaction",
            m => m,
        }
    }

    /// The sandbox's [mysqld] settings from these options.
    /// MyRocks' cache, its commit flush and its compression.
    fn rocksdb_settings(&self, s: &mut BTreeMap<String, String>) {
        s.insert(
            "rocksdb_block_cache_size".into(),
            format!("{}M", self.cache_sizes_mb().1),
        );
        s.insert(
            "rocksdb_flush_log_at_trx_commit".into(),
            self.flush_log_at_trx_commit.unwrap_or(1).to_string(),
        );
        if let Some(c) = &self.compression {
            let kind = match c.as_str() {
                "none" => "kNoCompression",
                "zlib" => "kZlibCompression",
                "lz4" => "kLZ4Compression",
                "zstd" => "kZSTD",
                _ => "kSnappyCompression",
            };
            s.insert(
                "rocksdb_default_cf_options".into(),
                format!("compression={kind};bottommost_compression={kind}"),
            );
        }
    }

    fn recipe(&self, max_clients: u64) -> MariadbRecipe {
        let mut s = BTreeMap::new();
        let se = self.storage_engine.to_ascii_lowercase();
        s.insert(
            "default_storage_engine".into(),
            if se == "rocksdb" {
                "ROCKSDB".into()
            } else {
                se.to_ascii_uppercase()
            },
        );
        s.insert(
            "innodb_buffer_pool_size".into(),
            format!("{}M", self.buffer_pool_mb_here()),
        );
        s.insert(
            "innodb_flush_log_at_trx_commit".into(),
            self.flush_log_at_trx_commit.unwrap_or(1).to_string(),
        );
        if self.has_aria() {
            s.insert(
                "aria_pagecache_buffer_size".into(),
                format!("{}M", self.aria_pagecache_mb.unwrap_or(DEFAULT_CACHE_MB)),
            );
        }
        // Room for every client of the study plus admin connections, unless the study's
        // `server` settings say otherwise (a kept sandbox may serve other clients); what
        // follows from the connection count is sized from the one that applies.
        let conns = self
            .server
            .get("max_connections")
            .and_then(toml::Value::as_integer)
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(max_clients + 50);
        s.insert("max_connections".into(), conns.to_string());
        // The listen queue must hold every client connecting at once: with the default
        // (80 + max_connections/5) a burst of a thousand connects overflows it and some
        // clients wait forever for the server's greeting.
        s.insert("back_log".into(), conns.min(4096).to_string());
        s.insert("open_files_limit".into(), (conns * 4 + 10_000).to_string());
        // Every client prepares its statements: the default (16,382 in all) stops a study
        // at about 8,000 clients of two queries, and a TPC-C terminal prepares about 70.
        // 1,048,576 is the server's maximum.
        s.insert(
            "max_prepared_stmt_count".into(),
            (conns * 128).clamp(16_382, 1_048_576).to_string(),
        );
        if self.is_rocksdb() {
            self.rocksdb_settings(&mut s);
        }
        page_compression(&mut s, self.page_compression());
        if !self.replicas.is_empty() {
            primary_defaults(&mut s, self);
        }
        // validated when the study was read
        for (k, v) in extra_settings(&self.server, &recipe::SETTINGS).unwrap_or_default() {
            s.insert(k, v);
        }
        // Throttled reads must reach the disk: InnoDB's own pages bypass the OS cache.
        if self.device_profile.is_some() {
            if self.storage_engine == "innodb" {
                s.entry("innodb_flush_method".into())
                    .or_insert_with(|| "O_DIRECT".into());
            }
            if self.is_rocksdb() {
                s.entry("rocksdb_use_direct_reads".into())
                    .or_insert_with(|| "ON".into());
            }
        }
        MariadbRecipe {
            settings: s,
            rocksdb: self.is_rocksdb(),
            memory_limit_mb: self.memory_limit_mb,
            device_profile: self.device_profile.clone(),
            data_dir: self.data_dir.clone(),
            galera: None,
            server_dir: self.server_dir(),
            secret: None,
            tls: None,
        }
    }
}

/// The statement a session on a target starts with: the contender's storage engine the
/// session's default, and for TokuDB its compression the row format of the tables it creates.
fn session_engine_sql(o: &MariadbOptions) -> String {
    let mut sql = format!("SET SESSION default_storage_engine = {}", o.storage_engine);
    if o.is_tokudb()
        && let Some(c) = &o.compression
    {
        let format = if c == "none" { "uncompressed" } else { c };
        sql.push_str(&format!(", SESSION tokudb_row_format = tokudb_{format}"));
    }
    sql
}

/// InnoDB page compression with `algorithm` for every table the server creates: the
/// algorithm's provider plugin (lzma, bzip2) loaded, and `PAGE_COMPRESSED` the default.
fn page_compression(s: &mut BTreeMap<String, String>, algorithm: Option<&str>) {
    let Some(a) = algorithm else {
        return;
    };
    if a != "zlib" {
        s.insert("plugin_load_add".into(), format!("provider_{a}"));
    }
    s.insert("innodb_compression_algorithm".into(), a.into());
    s.insert("innodb_compression_default".into(), "ON".into());
}

/// A connection through the `mysql` crate. Its ed25519 authentication fails 1 time in 256:
/// mysql_common (0.37) drops a trailing zero byte from the server's auth-switch data, which
/// for ed25519 is a random 32-byte nonce, so a nonce ending in 0 is signed short and the
/// server answers "Access denied" (1045). Another handshake draws a new nonce; up to three
/// make a spurious refusal a one-in-16-million event, and a password that is really wrong
/// is simply refused three times.
///
/// Under TLS `prefer`, a server whose TLS cannot be had (none offered, or a handshake that
/// fails) is asked again in clear, as the lean client and the mysql client do.
pub(crate) fn crate_conn(opts: AdminOpts) -> Result<mysql::Conn> {
    let AdminOpts {
        opts,
        mut clear_if_no_tls,
    } = opts;
    let mut opts: mysql::Opts = opts.into();
    let mut attempt = 1;
    loop {
        match mysql::Conn::new(opts.clone()) {
            Err(mysql::Error::MySqlError(e)) if e.code == 1045 && attempt < 3 => attempt += 1,
            // Any failure but the server's own answer (an error packet) may be the TLS.
            Err(e) if clear_if_no_tls && !matches!(e, mysql::Error::MySqlError(_)) => {
                clear_if_no_tls = false;
                opts = mysql::OptsBuilder::from_opts(opts).ssl_opts(None).into();
            }
            r => return r.map_err(my_err),
        }
    }
}

/// A `mysql` crate connection's options, and whether a server without TLS is then asked in
/// clear (the target's `ssl-mode=PREFERRED`).
pub(crate) struct AdminOpts {
    opts: mysql::OptsBuilder,
    clear_if_no_tls: bool,
}

impl AdminOpts {
    pub(crate) fn local_infile_handler(mut self, h: Option<mysql::LocalInfileHandler>) -> Self {
        self.opts = self.opts.local_infile_handler(h);
        self
    }
}

/// The `mysql` crate's TLS options for a target's settings: `None` for no TLS. The crate's
/// rustls trusts the well-known public CAs beside the one given, and its `REQUIRED` checks
/// neither the certificate nor the handshake's signatures; the lean client's checks are
/// the ones libpq and the mysql client make (see `wire::tls`).
fn crate_tls(tls: &crate::engine::target::TlsSettings) -> Option<mysql::SslOpts> {
    use crate::engine::target::{RootCert, TlsMode};
    if !tls.mode.tries_tls() {
        return None;
    }
    let mut ssl = mysql::SslOpts::default();
    if let Some(RootCert::File(ca)) = &tls.ca {
        ssl = ssl.with_root_cert_path(Some(ca.clone()));
    }
    if let (Some(cert), Some(key)) = (&tls.cert, &tls.key) {
        ssl = ssl.with_client_identity(Some(mysql::ClientIdentity::new(cert.clone(), key.clone())));
    }
    Some(match tls.mode {
        TlsMode::VerifyFull => ssl,
        TlsMode::VerifyCa => ssl.with_danger_skip_domain_validation(true),
        _ => ssl.with_danger_accept_invalid_certs(true),
    })
}

/// A `mysql` crate error of a MariaDB server as an engine error (`mariadb: …`).
pub(crate) fn my_err(e: mysql::Error) -> EngineError {
    family_err("mariadb")(e)
}

/// A `mysql` crate error as an engine error whose message names the engine family whose
/// server said it (`mysql: ERROR 1062 …`).
pub(crate) fn family_err(family: &'static str) -> impl Fn(mysql::Error) -> EngineError + Copy {
    move |e| {
        let kind = match &e {
            mysql::Error::MySqlError(me) => crate::engines::wire::mysql::kind_for_code(me.code),
            mysql::Error::IoError(_) | mysql::Error::DriverError(_) => "connection",
            _ => "client",
        };
        EngineError::new(kind, format!("{family}: {e}"))
    }
}

/// A MariaDB contender: its server and how to reach it.
pub struct MariadbEngine {
    opts: MariadbOptions,
    server: Server,
    /// Root, host, port and password of the server.
    reach: Target,
    database: String,
    /// The server's data directory when it is readable here.
    datadir: Option<PathBuf>,
    /// The replicas, when the contender is a replication topology.
    topology: Option<MariadbTopology>,
    /// The other nodes, when the contender is a Galera cluster (this server is node 1).
    cluster: Option<GaleraCluster>,
    /// The run's lease on the study's database, on a target (see [`Engine::lease`]).
    lease: std::sync::Mutex<Option<lease::Lease>>,
}

/// The server's activity counters set beside what dbduel counted.
const COUNTERS_SQL: &str = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_select', 'Com_insert', \
     'Com_update', 'Com_delete', 'Com_stmt_execute', 'Com_stmt_prepare', 'Bytes_sent', \
     'Bytes_received', 'Innodb_rows_read', 'Rocksdb_rows_read', 'Connections', \
     'Connection_errors_max_connections', 'Aborted_connects', 'Com_commit', 'Com_rollback')";

/// A benchmark session on the server at `reach`, in database `db`: always the lean wire
/// client, so every contender's sessions are served by the same client. A server that asks
/// for a method it does not speak is a missing prerequisite (exit 3), naming the method and
/// the account. Errors name the engine `family` (`mariadb`, or a flavor's).
pub(crate) fn session_at(
    reach: &Target,
    db: &str,
    timeout_s: u64,
    family: &'static str,
) -> Result<Box<dyn Session>> {
    match WireSession::connect(reach, db, timeout_s) {
        Ok(s) => Ok(flavor::named_session(family, Box::new(s))),
        Err(ConnectError::Failed(e)) => Err(flavor::named(family, e)),
        Err(ConnectError::Unsupported(u)) => Err(EngineError::new(
            "missing",
            format!("{family}: {}: {}", reach.display(), u.0),
        )),
    }
}

/// Connection options for a target: TCP only, known packet size (so connecting sends no
/// `SELECT @@max_allowed_packet` that would count in Com_select), bounded waits.
pub(crate) fn conn_opts(t: &Target, db: Option<&str>, timeout_s: u64) -> AdminOpts {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some(t.host.clone()))
        .tcp_port(t.port)
        .user(Some(t.user.clone()))
        .pass(t.password.as_ref().map(|p| p.expose().to_string()))
        .prefer_socket(false)
        .db_name(db)
        .stmt_cache_size(Some(64))
        .tcp_connect_timeout(Some(std::time::Duration::from_secs(10)))
        .read_timeout(Some(std::time::Duration::from_secs(timeout_s)))
        .write_timeout(Some(std::time::Duration::from_secs(timeout_s)))
        .max_allowed_packet(Some(crate::engines::mariadb::recipe::MAX_ALLOWED_PACKET))
        .ssl_opts(crate_tls(&t.tls));
    AdminOpts {
        opts,
        clear_if_no_tls: t.tls.mode == crate::engine::target::TlsMode::Prefer,
    }
}

/// The global values of the variables `names` the server has, keyed as asked. `SHOW GLOBAL
/// VARIABLES` answers on every MariaDB and MySQL (MySQL 5.7 refuses
/// `information_schema.GLOBAL_VARIABLES` by default, and 8.0 has none).
fn global_variables(
    c: &mut mysql::Conn,
    names: &[String],
    family: &'static str,
) -> Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    // Names are the engine's own or checked settings: letters, digits, `_` and `-`.
    let quoted: Vec<String> = names
        .iter()
        .filter(|n| {
            n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
        .map(|n| format!("'{n}'"))
        .collect();
    if quoted.is_empty() {
        return Ok(settings);
    }
    let rows: Vec<(String, String)> = c
        .query(format!(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})",
            quoted.join(", ")
        ))
        .map_err(family_err(family))?;
    for n in names {
        if let Some((_, v)) = rows.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)) {
            settings.insert(n.clone(), v.clone());
        }
    }
    Ok(settings)
}

/// Fail unless the server has `engine` enabled, naming what it does have.
fn check_storage_engine(c: &mut mysql::Conn, engine: &str, family: &'static str) -> Result<()> {
    let engines: Vec<(String, String)> = c
        .query("SELECT ENGINE, SUPPORT FROM information_schema.ENGINES")
        .map_err(family_err(family))?;
    let ok = engines
        .iter()
        .any(|(e, s)| e.eq_ignore_ascii_case(engine) && (s == "YES" || s == "DEFAULT"));
    if ok {
        return Ok(());
    }
    Err(EngineError::new(
        "missing",
        format!(
            "the server has no {} storage engine (it has: {})",
            engine.to_ascii_uppercase(),
            engines
                .iter()
                .filter(|(_, s)| s != "NO")
                .map(|(e, _)| e.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

impl MariadbEngine {
    /// `mysql` crate errors naming this engine's family.
    fn err(&self) -> impl Fn(mysql::Error) -> EngineError + Copy {
        family_err(self.opts.engine_name())
    }

    /// Start the contender's sandbox (or reach its target) and prepare the study's database.
    pub fn open(opts: MariadbOptions, ctx: &OpenCtx<'_>) -> Result<Self> {
        let mut recipe = opts.recipe(ctx.max_clients);
        recipe.tls = opts.common.server_certs(ctx.contender)?;
        let mut plan = match &opts.cluster {
            Some(c) => {
                recipe.settings.extend(c.server_settings());
                c.plan(ctx.contender)?
            }
            None => Vec::new(),
        };
        let first = MariadbRecipe {
            galera: (!plan.is_empty()).then(|| plan.remove(0)),
            ..recipe.clone()
        };
        let Provisioned {
            server,
            reach,
            datadir,
        } = Server::provision(
            opts.target.as_ref(),
            opts.sandbox_recipe(first),
            ctx.contender,
            ctx.dir,
            "mysql",
            "root",
        )?;
        let database = reach
            .database
            .clone()
            .unwrap_or_else(|| ctx.database.to_string());
        let mut engine = MariadbEngine {
            opts,
            server,
            reach,
            database,
            datadir,
            topology: None,
            cluster: None,
            lease: std::sync::Mutex::new(None),
        };
        // Whatever started, a failure from here on stops and removes it all: nothing is left
        // for `sandbox down` to find, whose manifests go with the run's work directory.
        match engine.start_members(&recipe, plan, ctx) {
            Ok(()) => Ok(engine),
            Err(e) => {
                let _ = Box::new(engine).finish(false);
                Err(e)
            }
        }
    }

    /// Start a cluster's other nodes or a topology's replicas (or attach a target's), then
    /// claim the study's database.
    fn start_members(
        &mut self,
        recipe: &MariadbRecipe,
        plan: Vec<crate::engines::mariadb::recipe::GaleraNode>,
        ctx: &OpenCtx<'_>,
    ) -> Result<()> {
        if let Some(c) = &self.opts.cluster {
            // Node 1 is up and bootstrapped; the rest of the plan joins it.
            self.cluster = Some(GaleraCluster::join(
                c,
                &self.server,
                &self.reach,
                recipe,
                plan,
                ctx,
                self.opts.query_timeout_s,
            )?);
        }
        if !self.opts.replicas.is_empty() && self.server.is_external() {
            self.topology = Some(MariadbTopology::attach(
                &self.opts,
                &self.reach,
                &self.database,
            )?);
        } else if !self.opts.replicas.is_empty() {
            let plans = topology::plans(&self.opts)?;
            self.topology = Some(MariadbTopology::provision(
                &self.opts,
                &self.server,
                &self.reach,
                ctx,
                &self.database,
                plans,
            )?);
        }
        let mut admin = self.admin()?;
        if self.server.is_external() {
            check_storage_engine(
                &mut admin,
                &self.opts.storage_engine,
                self.opts.engine_name(),
            )?;
            let dir: Option<String> = admin.query_first("SELECT @@datadir").map_err(self.err())?;
            self.datadir = dir
                .map(PathBuf::from)
                .filter(|d| self.reach.is_local() && d.is_dir());
        }
        crate::engines::server::claim_racing(|| self.claim_database(&mut admin))
    }

    /// Create the study's database with its marker, or reuse one that has dbduel's marker
    /// (the load step then replaces the study's tables in it). A database without the marker
    /// was not made by dbduel and is never touched.
    fn claim_database(&self, admin: &mut mysql::Conn) -> Result<()> {
        let db = &self.database;
        let exists: Option<String> = admin
            .exec_first(
                "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
                (db,),
            )
            .map_err(self.err())?;
        if exists.is_some() {
            let marked: Option<String> = admin
                .exec_first(
                    "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                    (db, MARKER),
                )
                .map_err(self.err())?;
            if marked.is_none() {
                return Err(Server::not_ours(db, &self.reach));
            }
            return Ok(());
        }
        admin
            .query_drop(format!("CREATE DATABASE `{db}`"))
            .map_err(self.err())?;
        admin
            .query_drop(format!(
                "CREATE TABLE `{db}`.`{MARKER}` (created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, note VARCHAR(200)) ENGINE=InnoDB"
            ))
            .map_err(self.err())?;
        admin
            .exec_drop(
                format!("INSERT INTO `{db}`.`{MARKER}` (note) VALUES (?)"),
                (MARKER_NOTE,),
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn opts(&self, db: Option<&str>) -> AdminOpts {
        conn_opts(&self.reach, db, self.opts.query_timeout_s)
    }

    /// An engine error of the protocol layer, naming this engine's family.
    fn named(&self, e: EngineError) -> EngineError {
        flavor::named(self.opts.engine_name(), e)
    }

    /// A connection to this engine's own server (node 1 of a cluster) that serves `file`,
    /// and nothing else, to `LOAD DATA LOCAL`. The file is read through the stop flag:
    /// Ctrl-C ends the stream and the connection closes with the LOAD unfinished, so the
    /// server rolls it back. On a Galera cluster it first waits until node 1 has applied
    /// everything the cluster had committed (`wsrep_sync_wait`): the tables were created over
    /// a round-robin session, perhaps on another node, and a LOAD racing that DDL's apply
    /// here is aborted as a deadlock.
    fn infile_conn(&self, file: &std::path::Path) -> Result<mysql::Conn> {
        let allowed = file.to_path_buf();
        let handler =
            mysql::LocalInfileHandler::new(move |name: &[u8], out: &mut mysql::LocalInfile<'_>| {
                // Serve only the file this load asked for, whatever the server requests.
                if name != allowed.as_os_str().as_encoded_bytes() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "dbduel serves only the file this load names",
                    ));
                }
                let mut f = crate::stop::Reader(std::fs::File::open(&allowed)?);
                std::io::copy(&mut f, out)?;
                Ok(())
            });
        let mut c = crate_conn(
            self.opts(Some(&self.database))
                .local_infile_handler(Some(handler)),
        )
        .map_err(|e| self.named(e))?;
        if self.cluster.is_some() {
            c.query_drop("SET SESSION wsrep_sync_wait = 1")
                .and_then(|()| c.query_drop("SELECT 1"))
                .and_then(|()| c.query_drop("SET SESSION wsrep_sync_wait = 0"))
                .map_err(self.err())?;
        }
        Ok(c)
    }

    fn admin(&self) -> Result<mysql::Conn> {
        crate_conn(self.opts(None)).map_err(|e| self.named(e))
    }

    fn conn(&self) -> Result<mysql::Conn> {
        let mut c = crate_conn(self.opts(Some(&self.database))).map_err(|e| self.named(e))?;
        if self.server.is_external() {
            c.query_drop(self.session_engine_sql())
                .map_err(self.err())?;
        }
        Ok(c)
    }

    /// A sandbox's default storage engine is set in its config; a target's is the owner's,
    /// so sessions on a target set it (and TokuDB's compression, the tables' row format).
    fn session_engine_sql(&self) -> String {
        session_engine_sql(&self.opts)
    }

    /// `column`'s definition (type, nullability, default, ...) as `SHOW CREATE TABLE` gives
    /// it, the name left out: what a `CHANGE COLUMN` must restate.
    fn column_definition(&self, table: &str, column: &str) -> Result<String> {
        let mut c = self.conn()?;
        let row: Option<(String, String)> = c
            .query_first(format!("SHOW CREATE TABLE `{table}`"))
            .map_err(self.err())?;
        let text = row.map(|(_, t)| t).unwrap_or_default();
        let name = format!("`{column}` ");
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name.as_str()))
            .map(|d| d.trim_end_matches(',').to_string())
            .ok_or_else(|| {
                EngineError::new("sql", format!("{table} has no column {column} to rename"))
            })
    }

    /// The files that hold `table` for this storage engine, and the rule used.
    fn table_files(&self, datadir: &std::path::Path, table: &str) -> (Vec<PathBuf>, String) {
        let db = datadir.join(&self.database);
        match self.opts.storage_engine.to_ascii_lowercase().as_str() {
            "rocksdb" => {
                let dir = datadir.join("#rocksdb");
                let ssts: Vec<PathBuf> = crate::oscache::files_under(&dir)
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "sst"))
                    .collect();
                let whose = if !self.server.is_external() {
                    "the sandbox holds only this table, so all of them are attributed to it"
                } else {
                    "on a shared server they hold every MyRocks table, so compare with the engine's figure"
                };
                (
                    ssts,
                    format!("every RocksDB SST file in #rocksdb after flushing the memtables: {whose} (the WAL and MANIFEST are logs, not counted)"),
                )
            }
            "aria" => (
                vec![db.join(format!("{table}.MAD")), db.join(format!("{table}.MAI"))],
                "the table's Aria data (.MAD) and index (.MAI) files".into(),
            ),
            "myisam" => (
                vec![db.join(format!("{table}.MYD")), db.join(format!("{table}.MYI"))],
                "the table's MyISAM data (.MYD) and index (.MYI) files".into(),
            ),
            _ if self.opts.partitions.is_some() => {
                // One tablespace a partition: `TABLE#P#p0.ibd`, ...
                let prefix = format!("{table}#P#").to_ascii_lowercase();
                let files = crate::oscache::files_under(&db)
                    .into_iter()
                    .filter(|p| {
                        p.file_name().is_some_and(|n| {
                            let n = n.to_string_lossy().to_ascii_lowercase();
                            n.starts_with(&prefix) && n.ends_with(".ibd")
                        })
                    })
                    .collect();
                (
                    files,
                    "each partition's own InnoDB tablespace (TABLE#P#pN.ibd: data and indexes); the system tablespace and redo log are not counted".into(),
                )
            }
            _ => (
                vec![db.join(format!("{table}.ibd"))],
                "the table's own InnoDB tablespace (.ibd: data and indexes); the system tablespace and redo log are not counted".into(),
            ),
        }
    }
}

impl Engine for MariadbEngine {
    fn lease(&self) -> Result<()> {
        if !self.server.is_external() {
            return Ok(());
        }
        let taken = lease::Lease::take(&self.reach, &self.database, self.opts.query_timeout_s)?;
        *self.lease.lock().unwrap_or_else(|p| p.into_inner()) = Some(taken);
        Ok(())
    }

    fn partitions(&self) -> Option<u32> {
        self.opts.partitions
    }

    fn descending_indexes(&self) -> bool {
        !self.opts.is_rocksdb()
    }

    fn foreign_keys(&self) -> bool {
        self.opts.storage_engine.eq_ignore_ascii_case("innodb") && self.opts.partitions.is_none()
    }

    fn kind(&self) -> &'static str {
        self.opts.engine_name()
    }

    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn ddl_algorithms(&self) -> Option<&'static [&'static str]> {
        self.opts.flavor.map(|f| f.ddl_algorithms())
    }

    fn ddl_statement(&self, sql: &str) -> Result<String> {
        if self.opts.flavor.is_none_or(|f| f.renames_columns()) {
            return Ok(sql.to_string());
        }
        // The dialect's rename, of checked identifiers (see Dialect::rename_column).
        let words: Vec<&str> = sql.split_whitespace().collect();
        match words.as_slice() {
            [
                "ALTER",
                "TABLE",
                table,
                "RENAME",
                "COLUMN",
                column,
                "TO",
                to,
            ] => {
                let def = self.column_definition(table, column)?;
                Ok(format!(
                    "ALTER TABLE {table} CHANGE COLUMN {column} {to} {def}"
                ))
            }
            _ => Ok(sql.to_string()),
        }
    }

    /// Benchmark sessions speak the lean wire client, always.
    /// A cluster's sessions go to its nodes as the contender places them.
    fn connect(&self) -> Result<Box<dyn Session>> {
        let reach = match &self.cluster {
            Some(c) => c.next_client_reach(),
            None => &self.reach,
        };
        let mut s = session_at(
            reach,
            &self.database,
            self.opts.query_timeout_s,
            self.opts.engine_name(),
        )?;
        if self.server.is_external() {
            s.execute(&self.session_engine_sql())?;
        }
        Ok(s)
    }

    fn info(&self) -> Result<EngineInfo> {
        let mut c = self.admin()?;
        let version: String = c
            .query_first("SELECT VERSION()")
            .map_err(self.err())?
            .unwrap_or_default();
        let mut names: Vec<String> = [
            "default_storage_engine",
            "innodb_buffer_pool_size",
            "innodb_flush_log_at_trx_commit",
            "innodb_buffer_pool_load_at_startup",
            "max_connections",
            "sync_binlog",
            "log_bin",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        match self.opts.storage_engine.to_ascii_lowercase().as_str() {
            "rocksdb" => names.extend(
                [
                    "rocksdb_block_cache_size",
                    "rocksdb_flush_log_at_trx_commit",
                    "rocksdb_default_cf_options",
                    "rocksdb_max_row_locks",
                    "rocksdb_bulk_load_size",
                ]
                .map(String::from),
            ),
            "aria" => names.push("aria_pagecache_buffer_size".into()),
            _ => {}
        }
        if self.opts.page_compression().is_some() {
            names.extend(
                ["innodb_compression_algorithm", "innodb_compression_default"].map(String::from),
            );
        }
        names.extend(self.opts.server.keys().cloned());
        let mut settings = global_variables(&mut c, &names, self.opts.engine_name())?;
        check_storage_engine(&mut c, &self.opts.storage_engine, self.opts.engine_name())?;
        if let Server::External(t) = &self.server {
            settings.insert("target".into(), t.display());
        }
        // Which client serves the benchmark sessions, and what TLS one of them negotiated.
        let probe = WireSession::connect(&self.reach, &self.database, self.opts.query_timeout_s)
            .map_err(|e| match e {
                ConnectError::Failed(e) => self.named(e),
                ConnectError::Unsupported(u) => EngineError::new("missing", u.0),
            })?;
        settings.insert("client".into(), crate::engines::wire::CLIENT.into());
        settings.insert(
            "tls".into(),
            crate::engines::wire::tls::setting(&self.reach.tls, &probe.tls()),
        );
        settings.insert("load_mode".into(), self.opts.load_mode().to_string());
        if let Some(b) = &self.opts.resolved {
            settings.insert("server_binary".into(), b.origin.clone());
        }
        if let Some(c) = &self.cluster {
            settings.extend(c.settings()?);
        }
        if let Some(t) = &self.topology {
            use crate::engine::replication::Replicated;
            for i in 0..t.replica_count() {
                let f = t.replica_facts(i)?;
                // Which server each replica runs (a MySQL replica beside MariaDB's).
                settings.insert(format!("replica.{}.version", f.name), f.version);
                for (k, v) in f.settings {
                    settings.insert(format!("replica.{}.{}", f.name, k.to_ascii_lowercase()), v);
                }
            }
        }
        Ok(EngineInfo {
            engine: self.opts.engine_name().into(),
            version,
            settings,
        })
    }

    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        let mut c = self.infile_conn(req.file)?;
        let mode = self.opts.load_mode();
        match mode {
            "bulk" => c
                .query_drop("SET SESSION rocksdb_bulk_load = 1")
                .map_err(self.err())?,
            "commit_in_the_middle" => c
                .query_drop("SET SESSION rocksdb_commit_in_the_middle = 1")
                .map_err(self.err())?,
            _ => {}
        }
        let path = req
            .file
            .display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('\'', "\\'");
        let sql = format!(
            "LOAD DATA LOCAL INFILE '{path}' INTO TABLE `{}` FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n'",
            req.table.name
        );
        c.query_drop(&sql).map_err(self.err())?;
        let rows = c.affected_rows();
        // Read before any other statement clears them.
        let warnings = load_warnings(&mut c, self.opts.engine_name())?;
        if mode == "bulk" {
            // Ending bulk-load mode writes the remaining sorted data into the table.
            c.query_drop("SET SESSION rocksdb_bulk_load = 0")
                .map_err(self.err())?;
        }
        let method = match mode {
            "bulk" => "LOAD DATA LOCAL INFILE with rocksdb_bulk_load=1 (sorted SST ingestion)",
            "commit_in_the_middle" => "LOAD DATA LOCAL INFILE with rocksdb_commit_in_the_middle=1",
            _ => "LOAD DATA LOCAL INFILE, one transaction",
        };
        Ok(LoadOutcome {
            rows,
            method: method.to_string(),
            warnings: Some(warnings),
        })
    }

    /// `LOAD DATA LOCAL INFILE` with the file's format: CSV quoting (`OPTIONALLY ENCLOSED BY
    /// '"'`, no backslash escapes), its line ends, `IGNORE 1 LINES` for a header, and each
    /// field through a variable so a field equal to the NULL marker is NULL
    /// (`SET col = NULLIF(@f1, '…')`).
    fn load_file(&self, req: &FileLoad<'_>) -> Result<LoadOutcome> {
        let mut c = self.infile_conn(req.file)?;
        let columns = req.columns_or(|| {
            c.exec(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
                (req.table,),
            )
            .map_err(self.err())
        })?;
        let sql = load_data_statement(req, &columns, crlf(req.file));
        c.query_drop(&sql).map_err(self.err())?;
        let rows = c.affected_rows();
        let warnings = load_warnings(&mut c, self.opts.engine_name())?;
        Ok(LoadOutcome {
            rows,
            method: "LOAD DATA LOCAL INFILE, one transaction".to_string(),
            warnings: Some(warnings),
        })
    }

    fn footprint(&self, tables: &[&str]) -> Result<Footprint> {
        let mut c = self.conn()?;
        if self.opts.is_rocksdb() {
            c.query_drop("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
                .map_err(self.err())?;
        }
        let mut engine_bytes: Option<u64> = None;
        let mut paths: Vec<PathBuf> = Vec::new();
        let mut rule = String::new();
        for table in tables {
            // A page-compressed table's pages take their place in the file only when
            // written: write them all before the file's blocks are counted.
            if self.opts.page_compression().is_some() {
                c.query_drop(format!("FLUSH TABLES `{table}` FOR EXPORT"))
                    .map_err(self.err())?;
                c.query_drop("UNLOCK TABLES").map_err(self.err())?;
            }
            // Statistics drive information_schema's sizes; refresh them first.
            c.query_drop(format!("ANALYZE TABLE `{table}`"))
                .map_err(self.err())?;
            let b: Option<u64> = c
                .exec_first(
                    "SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                    (&self.database, table),
                )
                .map_err(self.err())?;
            engine_bytes = Some(engine_bytes.unwrap_or(0) + b.unwrap_or(0));
            if let Some(dir) = &self.datadir {
                let (p, r) = self.table_files(dir, table);
                // MyRocks' SST files are shared by all tables: count each file once.
                for f in p {
                    if !paths.contains(&f) {
                        paths.push(f);
                    }
                }
                rule = r;
            }
        }
        let (files_bytes, allocated_bytes, files, files_rule) = match &self.datadir {
            // Page compression punches each page's unused end out of the file: its length
            // stays, its blocks shrink, and the blocks are what it holds on disk.
            Some(dir) if let Some(a) = self.opts.page_compression() => {
                let (bytes, allocated, files) = crate::engines::file_sizes(dir, &paths);
                let rule = format!(
                    "{rule}; page-compressed ({a}): the blocks the files hold (what du shows), not their length ({bytes} bytes)"
                );
                (Some(allocated), Some(allocated), files, rule)
            }
            Some(dir) => {
                let (bytes, allocated, files) = crate::engines::file_sizes(dir, &paths);
                (Some(bytes), Some(allocated), files, rule)
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
            engine_bytes,
            engine_rule: "information_schema.TABLES DATA_LENGTH + INDEX_LENGTH after ANALYZE TABLE"
                .into(),
        })
    }

    fn restart(&self, cold: bool) -> Result<RestartOutcome> {
        if self.cluster.is_some() {
            // Restarting node 1 alone would measure a rejoin, and all of them a new cluster's
            // bootstrap: neither is one server's restart.
            return Err(EngineError::new(
                "unsupported",
                "a Galera cluster is not restarted as one server (a node's restart is a rejoin with a state transfer); its steps run warm",
            ));
        }
        self.server.restart(
            cold,
            self.datadir.as_deref(),
            "buffer pool not reloaded",
            || self.admin().is_ok(),
        )
    }

    fn fail_over(&self) -> Result<crate::engine::FailoverOutcome> {
        if let Some(c) = self.cluster() {
            return crate::engine::cluster::lose_node(c);
        }
        self.server.fail_over(self.replication())
    }

    fn crash(&self, fault: crate::engine::Fault) -> Result<crate::engine::CrashOutcome> {
        if self.cluster.is_some() || self.topology.is_some() {
            // One node's or the primary's crash is a failover, not a server's recovery.
            return Err(EngineError::new(
                "unsupported",
                "a replicated or clustered contender does not crash as one server: its primary's death is a failover",
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
            .or_else(|| self.topology.as_ref().and_then(MariadbTopology::gone))
    }

    fn set_throttle(&self, on: bool) -> Result<bool> {
        self.server.set_throttle(on)
    }

    fn cluster(&self) -> Option<&dyn crate::engine::cluster::Clustered> {
        self.cluster
            .as_ref()
            .map(|c| c as &dyn crate::engine::cluster::Clustered)
    }

    fn replication(&self) -> Option<&dyn crate::engine::replication::Replicated> {
        self.topology
            .as_ref()
            .map(|t| t as &dyn crate::engine::replication::Replicated)
    }

    /// A cluster's are summed over its nodes: each counts its own clients' work (a write set
    /// a node applies for another is not a question it was asked); none once a node is lost.
    fn counters(&self) -> Result<Option<BTreeMap<String, u64>>> {
        let rows: Vec<(String, String)> = match &self.cluster {
            Some(c) => match c.status_sum(COUNTERS_SQL)? {
                Some(rows) => rows,
                None => return Ok(None),
            },
            None => self.admin()?.query(COUNTERS_SQL).map_err(self.err())?,
        };
        let mut out = BTreeMap::new();
        for (k, v) in rows {
            if let Ok(v) = v.parse::<u64>() {
                *out.entry(k).or_insert(0) += v;
            }
        }
        Ok(Some(out))
    }

    fn finish(self: Box<Self>, keep: bool) -> Result<()> {
        let this = *self;
        let replicas = this.topology.map_or(Ok(()), |t| t.finish(keep));
        let nodes = this.cluster.map_or(Ok(()), |c| c.finish(keep));
        let first = this.server.finish(keep);
        first.and(replicas).and(nodes)
    }

    fn server_log(&self) -> Option<PathBuf> {
        self.server.log()
    }
}

/// Warnings shown by `SHOW WARNINGS` for a load: the server keeps up to `max_error_count`
/// (64 by default) of them; the count is the whole.
const LISTED_WARNINGS: usize = 64;
/// Warnings kept in the results.
const KEPT_WARNINGS: usize = 5;

/// What the server said about the LOAD DATA just run on `c`: its info string (`Records: N
/// Deleted: D  Skipped: S  Warnings: W`, whose count is the server's whole one where the OK
/// packet's stops at 65,535) and the first warnings from `SHOW WARNINGS`.
/// A MySQL string literal of `s` (quotes and backslashes escaped, a tab as `\t`).
fn my_literal(s: &str) -> String {
    let mut out = String::from("'");
    for ch in s.chars() {
        match ch {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            _ => out.push(ch),
        }
    }
    out.push('\'');
    out
}

/// Does the file end its first line with `\r\n`?
fn crlf(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 65536];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n]
        .iter()
        .position(|b| *b == b'\n')
        .is_some_and(|i| i > 0 && head[i - 1] == b'\r')
}

/// The `LOAD DATA` statement of a user's file into `columns`.
fn load_data_statement(req: &FileLoad<'_>, columns: &[String], crlf: bool) -> String {
    let path = req.file.display().to_string();
    let delimiter = (req.format.delimiter as char).to_string();
    let vars: Vec<String> = (1..=columns.len()).map(|i| format!("@f{i}")).collect();
    let null = my_literal(&req.format.null);
    let sets: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, col)| format!("`{col}` = NULLIF(@f{}, {null})", i + 1))
        .collect();
    format!(
        "LOAD DATA LOCAL INFILE {} INTO TABLE `{}` CHARACTER SET utf8mb4 FIELDS TERMINATED BY {} OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' LINES TERMINATED BY {}{} ({}) SET {}",
        my_literal(&path),
        req.table,
        my_literal(&delimiter),
        if crlf { "'\\r\\n'" } else { "'\\n'" },
        if req.format.header {
            " IGNORE 1 LINES"
        } else {
            ""
        },
        vars.join(", "),
        sets.join(", ")
    )
}

fn load_warnings(c: &mut mysql::Conn, family: &'static str) -> Result<LoadWarnings> {
    let info = c.info_str().trim().to_string();
    let ok = crate::engines::wire::mysql::changes_from_ok(c.affected_rows(), c.warnings(), &info);
    let count = ok.warnings.unwrap_or(0);
    let skipped = crate::engines::wire::mysql::info_number(&info, "Skipped");
    let listed: Vec<(String, String, String)> = if count > 0 {
        c.query(format!("SHOW WARNINGS LIMIT {LISTED_WARNINGS}"))
            .map_err(family_err(family))?
    } else {
        Vec::new()
    };
    let serious = skipped.is_some_and(|n| n > 0)
        || listed.iter().any(|(level, _, _)| level != "Note")
        || (count > 0 && listed.is_empty());
    Ok(LoadWarnings {
        count,
        skipped,
        first: listed
            .into_iter()
            .take(KEPT_WARNINGS)
            .map(|(level, code, message)| EngineWarning {
                level,
                code,
                message,
            })
            .collect(),
        info: (!info.is_empty()).then_some(info),
        serious,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(text: &str) -> MariadbOptions {
        MariadbOptions::from_table(&toml::from_str(text).expect("toml")).expect("options")
    }

    /// A cache given as a share is a share of the memory limit when that is less than the
    /// machine's; the commit's log flush applies to MyRocks' WAL too.
    #[test]
    fn cache_shares_follow_the_memory_limit_and_myrocks_takes_the_flush_setting() {
        let mem_mb = crate::sysmon::host_facts().mem_total_bytes >> 20;
        let o = options("buffer_pool_share = 0.5\nmemory_limit_mb = 1024");
        assert_eq!(o.cache_sizes_mb().0, 512);
        // a limit above the machine's memory: a share of the machine's
        let o = options(&format!(
            "buffer_pool_share = 0.5\nmemory_limit_mb = {}",
            mem_mb * 4
        ));
        assert_eq!(o.cache_sizes_mb().0, ((mem_mb << 20) / 2) >> 20);
        let o = options(
            "storage_engine = \"rocksdb\"\nblock_cache_share = 0.25\nmemory_limit_mb = 2048\nflush_log_at_trx_commit = 0",
        );
        o.validate().expect("valid");
        let r = o.recipe(10);
        assert_eq!(r.settings["rocksdb_block_cache_size"], "512M");
        assert_eq!(r.settings["rocksdb_flush_log_at_trx_commit"], "0");
        assert_eq!(r.settings["innodb_flush_log_at_trx_commit"], "0");
        let r = options("storage_engine = \"rocksdb\"").recipe(10);
        assert_eq!(r.settings["rocksdb_flush_log_at_trx_commit"], "1");
        let e = options("block_cache_share = 0.95\nstorage_engine = \"rocksdb\"")
            .validate()
            .unwrap_err();
        assert_eq!(e.path.to_string(), "block_cache_share");
    }

    #[test]
    fn connection_limits_follow_the_clients_or_the_studys_own_max_connections() {
        let r = options("storage_engine = \"innodb\"").recipe(1000);
        assert_eq!(r.settings["max_connections"], "1050");
        assert_eq!(r.settings["back_log"], "1050");
        assert_eq!(r.settings["max_prepared_stmt_count"], "134400");
        // A sandbox kept for other clients: the listen queue and prepared statements follow
        // the connections it was given, not the one client of its own study.
        let r = options("server = { max_connections = 1200 }").recipe(1);
        assert_eq!(r.settings["max_connections"], "1200");
        assert_eq!(r.settings["back_log"], "1200");
        assert_eq!(r.settings["max_prepared_stmt_count"], "153600");
        let r = options("buffer_pool_mb = 1024\nbuffer_pool_share = 0.5").recipe(1);
        let mem_mib = crate::sysmon::host_facts().mem_total_bytes >> 20;
        let bp: u64 = r.settings["innodb_buffer_pool_size"]
            .trim_end_matches('M')
            .parse()
            .expect("MiB");
        assert!(bp.abs_diff(mem_mib / 2) <= 1, "{bp} MiB of {mem_mib}");
        let r = options("").recipe(10_000);
        assert_eq!(r.settings["back_log"], "4096");
        assert_eq!(r.settings["max_prepared_stmt_count"], "1048576");
    }

    fn decoded(text: &str, target: Option<&str>) -> std::result::Result<(), DecodeError> {
        let spec = target.map(|url| crate::engine::target::TargetSpec {
            url,
            password_env: None,
            password_file: None,
            restart_command: None,
            read_password: false,
        });
        decode(
            &toml::from_str(text).expect("toml"),
            spec.as_ref(),
            &crate::engines::versions::BinaryChoice::default(),
        )
        .map(drop)
    }

    #[test]
    fn tokudb_runs_on_a_target_that_has_it_with_its_compression() {
        let t = Some("mysql://bench@127.0.0.1:3306");
        let e = decoded("storage_engine = \"tokudb\"", None).expect_err("no sandbox TokuDB");
        assert_eq!(e.path.to_string(), "options.storage_engine", "{e:?}");
        assert!(
            e.message.contains("external server that has TokuDB"),
            "{e:?}"
        );
        decoded("storage_engine = \"tokudb\"\ncompression = \"lzma\"", t).expect("a target");
        let e = decoded("storage_engine = \"tokudb\"\ncompression = \"zstd\"", t)
            .expect_err("not TokuDB's");
        assert!(
            e.message.contains("none, zlib, quicklz, lzma, snappy"),
            "{e:?}"
        );
        // sandbox-only options stay refused on a target
        assert!(decoded("storage_engine = \"innodb\"\ncompression = \"lzma\"", t).is_err());
        let mut o = options("storage_engine = \"tokudb\"\ncompression = \"lzma\"");
        assert_eq!(
            session_engine_sql(&o),
            "SET SESSION default_storage_engine = tokudb, SESSION tokudb_row_format = tokudb_lzma"
        );
        o.compression = None;
        assert_eq!(
            session_engine_sql(&o),
            "SET SESSION default_storage_engine = tokudb"
        );
    }
}
