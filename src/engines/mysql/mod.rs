//! The MySQL engine: a private sandboxed `mysqld` of version 5.6, 5.7 or 8.0 per contender
//! (`engine = "mysql"` with the contender's `version = "..."`), from the server cache
//! `scripts/install-servers` fills, or any unpacked MySQL tarball (`basedir`), found and
//! checked by the shared [`crate::engines::versions`] like every family's server. It speaks the protocol MariaDB speaks, so it is the MariaDB engine with a
//! [`Flavor`]: the same sessions (the lean wire client), loads, footprints, counters and
//! database claim; what differs — the recipe, the schema-change algorithms, the storage
//! engines, replication's variables — is the version's row in [`versions`]. With a `target`
//! it attaches to a MySQL server someone else runs (and its replicas, each given by its own
//! target), as a MariaDB target does, the row chosen by the version the server reports.

pub mod recipe;
pub mod versions;

use crate::decode::{DecodeError, KeyPath};
use crate::engine::{Engine, OpenCtx, Result};
use crate::engines::mariadb::flavor::Flavor;
use crate::engines::mariadb::recipe::MariadbRecipe;
use crate::engines::mariadb::topology::MariadbReplica;
use crate::engines::mariadb::{MariadbEngine, MariadbOptions};
use crate::engines::versions::BinaryChoice;
use crate::sandbox::device_profile::DeviceProfile;
use recipe::MysqlRecipe;
use serde::{Deserialize, Serialize};
use versions::MysqlVersion;

/// Contender options for `engine = "mysql"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MysqlOptions {
    /// innodb or myisam: the server's default_storage_engine.
    #[serde(default = "default_engine")]
    pub storage_engine: String,
    /// innodb_buffer_pool_size, MiB (default 256).
    #[serde(default)]
    pub buffer_pool_mb: Option<u64>,
    /// innodb_buffer_pool_size as a share of the server's memory (0.05 to 0.9): this
    /// machine's, or its `memory_limit_mb` when that is less.
    #[serde(default)]
    pub buffer_pool_share: Option<f64>,
    /// innodb_flush_log_at_trx_commit: 0, 1 or 2 (default 1).
    #[serde(default)]
    pub flush_log_at_trx_commit: Option<u8>,
    /// A query with no answer for this long fails with a timeout error, seconds.
    #[serde(default = "default_timeout")]
    pub query_timeout_s: u64,
}

fn default_engine() -> String {
    "innodb".into()
}
fn default_timeout() -> u64 {
    3600
}

/// The `mysql` family in the engines registry.
pub const FAMILY: crate::engines::Family = crate::engines::Family {
    name: "mysql",
    decode,
    sql_variants: &["mysql", ""],
    url_schemes: &["mysql"],
    keeps_rows: true,
    shards_meet: false,
    sandbox: Some(crate::engines::SandboxFamily {
        name: "mysql",
        recipe: sandbox_recipe,
        target: crate::engines::mariadb::recipe::sandbox_target,
    }),
};

impl Flavor for MysqlVersion {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn ddl_algorithms(&self) -> &'static [&'static str] {
        self.ddl_algorithms
    }

    fn renames_columns(&self) -> bool {
        self.rename_column
    }

    fn recipe(&'static self, base: &MariadbRecipe) -> Box<dyn crate::sandbox::Recipe> {
        Box::new(MysqlRecipe::new(self, base))
    }

    fn binaries(&self) -> &'static crate::engines::versions::FamilyBinaries {
        &versions::BINARIES
    }

    fn replica_dialect(
        &'static self,
    ) -> Box<dyn crate::engines::mariadb::replica_dialect::ReplicaDialect> {
        Box::new(crate::engines::mariadb::replica_dialect::MysqlGtid { version: self })
    }

    fn primary_settings(&self) -> Vec<(&'static str, &'static str)> {
        let mut s = self.gtids.settings.to_vec();
        s.extend_from_slice(self.parallel_primary);
        s
    }

    fn executed_gtids(&self) -> &'static str {
        self.gtids.executed
    }

    fn commit_wait(&self) -> Option<(&'static str, &'static str)> {
        self.commit_wait
    }
}

/// `dbduel sandbox up mysql`: the version asked for (`--version`), else the newest one
/// installed; resolved as a contender's (installed, owned, starts, a version dbduel runs).
fn sandbox_recipe(
    choice: &BinaryChoice,
    tls: Option<crate::sandbox::certs::ServerCerts>,
) -> Result<Box<dyn crate::sandbox::Recipe>> {
    let choice = if choice.is_system() {
        newest_installed()
    } else {
        choice.clone()
    };
    let b = versions::BINARIES.resolve(&choice)?;
    let row = versions::row(&b.version).ok_or_else(|| {
        crate::engine::EngineError::new(
            "missing",
            format!(
                "{} is MySQL {}, not a version dbduel runs ({})",
                b.origin,
                b.version,
                series()
            ),
        )
    })?;
    let base = MariadbRecipe {
        server_dir: b.dir,
        tls,
        ..MariadbRecipe::default()
    };
    Ok(Box::new(MysqlRecipe::new(row, &base)))
}

/// The newest version installed, else the newest dbduel runs (whose resolution then says
/// what is installed and how to install the rest).
fn newest_installed() -> BinaryChoice {
    let choice = |v: &MysqlVersion| BinaryChoice {
        version: Some(v.version.into()),
        basedir: None,
    };
    versions::VERSIONS
        .iter()
        .rev()
        .map(choice)
        .find(|c| versions::BINARIES.resolve(c).is_ok())
        .unwrap_or_else(|| choice(&versions::VERSIONS[versions::VERSIONS.len() - 1]))
}

/// A MySQL contender: the engine's options, with the version's row once it is known (from
/// the contender's `version`, or a basedir's binary when it is resolved).
#[derive(Debug, Clone)]
pub struct MysqlKind {
    engine: MariadbOptions,
}

/// `engine = "mysql"`: decode and check the options. A version not installed (or not one
/// dbduel runs) is not bad input but a missing server: the prerequisites say so (exit 3).
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
    binary: &BinaryChoice,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
    if binary.is_system() && target.is_none() {
        return Err(DecodeError::at(
            KeyPath::root().key("version"),
            format!(
                "engine = \"mysql\" needs the contender's version ({}) or basedir = \"/path\" of an unpacked MySQL server: there is no system MySQL",
                series()
            ),
        ));
    }
    let (o, common): (MysqlOptions, _) = crate::engines::options::decode(options)?;
    let in_options = crate::engines::in_options;
    let row = binary.version.as_deref().and_then(versions::row);
    if let Some(v) = row {
        check_storage_engine(v, &o.storage_engine).map_err(in_options)?;
    }
    let mut common: crate::engines::options::ServerOptions<MariadbReplica> = common;
    check_replicas(&common.replicas).map_err(in_options)?;
    if let Some(t) = target {
        common.target = Some(crate::engine::target::parse(t, "mysql", 3306)?);
    }
    crate::engine::replication::set_replica_targets(
        &mut common.replicas,
        common.target.as_ref(),
        target.is_none_or(|t| t.read_password),
        common.control_replication,
        "mysql",
        3306,
    )
    .map_err(in_options)?;
    common.choose_binary(binary)?;
    let engine = MariadbOptions {
        storage_engine: o.storage_engine,
        buffer_pool_mb: o.buffer_pool_mb,
        buffer_pool_share: o.buffer_pool_share,
        block_cache_mb: None,
        block_cache_share: None,
        aria_pagecache_mb: None,
        compression: None,
        load_mode: "auto".into(),
        flush_log_at_trx_commit: o.flush_log_at_trx_commit,
        query_timeout_s: o.query_timeout_s,
        cluster: None,
        common,
        flavor: row.map(|v| v as &'static dyn Flavor),
    };
    engine.validate().map_err(in_options)?;
    if engine.target.is_some() {
        engine.check_external().map_err(in_options)?;
    }
    Ok(Box::new(MysqlKind { engine }))
}

/// A MySQL primary's replicas run its own server and version, by GTID: no `engine` or
/// `version` of their own, and no MariaDB `parallel_mode`. (A replica given by `target` is
/// checked with the contender's target.) (Placed relative to `options`.)
fn check_replicas(replicas: &[MariadbReplica]) -> std::result::Result<(), DecodeError> {
    for (i, r) in replicas.iter().enumerate() {
        let at = KeyPath::root().key("replicas").index(i);
        let own = [
            ("engine", r.engine.is_some()),
            ("version", r.version.is_some()),
        ];
        if let Some((k, _)) = own.iter().find(|(_, set)| *set) {
            return Err(DecodeError::at(
                at.key(k),
                format!(
                    "a replica of a MySQL sandbox runs the primary's server and version (no {k} of its own)"
                ),
            ));
        }
        if r.parallel_mode.is_some() {
            return Err(DecodeError::at(
                at.key("parallel_mode"),
                "parallel_mode is MariaDB's slave_parallel_mode; a MySQL replica applies in parallel by its version's rules with parallel_threads workers",
            ));
        }
    }
    Ok(())
}

/// The versions dbduel runs, for messages: `"5.6", "5.7" or "8.0"`.
fn series() -> String {
    let v: Vec<String> = versions::VERSIONS
        .iter()
        .map(|v| format!("{:?}", v.version))
        .collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => v.join(""),
    }
}

/// Is `storage_engine` one the version has? (Placed at the key, relative to `options`.)
fn check_storage_engine(
    v: &MysqlVersion,
    storage_engine: &str,
) -> std::result::Result<(), DecodeError> {
    let se = storage_engine.to_ascii_lowercase();
    if v.storage_engines.contains(&se.as_str()) {
        return Ok(());
    }
    Err(DecodeError::at(
        KeyPath::root().key("storage_engine"),
        format!(
            "storage_engine = {storage_engine:?} is not available on MySQL {}; use one of: {}",
            v.version,
            v.storage_engines.join(", ")
        ),
    ))
}

impl MysqlKind {
    /// The options with the server binary resolved on this machine (the shared cache and
    /// basedir rules: installed, owned, starts) and the row of the version it reports.
    fn resolved(&self) -> Result<MariadbOptions> {
        let mut o = self.engine.clone();
        if let Some(t) = &o.common.target {
            o.flavor = Some(target_row(t, o.query_timeout_s)?);
            return Ok(o);
        }
        o.common.resolve_binary(&versions::BINARIES)?;
        let found = o
            .common
            .resolved
            .as_ref()
            .map(|b| (b.version.clone(), b.origin.clone()));
        let (version, origin) = found.unwrap_or_default();
        let row = versions::row(&version).ok_or_else(|| {
            crate::engine::EngineError::new(
                "missing",
                format!(
                    "{origin} is MySQL {version}, not a version dbduel runs ({})",
                    series()
                ),
            )
        })?;
        check_storage_engine(row, &o.storage_engine)
            .map_err(|e| crate::engine::EngineError::new("missing", e.message))?;
        o.flavor = Some(row);
        Ok(o)
    }
}

/// The version row of a target's server, from its own `@@version`: a MySQL dbduel runs, not
/// a MariaDB (whose engine is `mariadb`) nor a version without a row.
fn target_row(t: &crate::engine::target::Target, timeout_s: u64) -> Result<&'static MysqlVersion> {
    use crate::engines::mariadb::{conn_opts, crate_conn};
    use mysql::prelude::Queryable;
    let cannot = |e: String| {
        crate::engine::EngineError::new(
            "connect",
            format!(
                "cannot connect to {}: {}",
                t.display(),
                e.trim_start_matches("mariadb: ")
            ),
        )
    };
    let mut c = crate_conn(conn_opts(t, None, timeout_s)).map_err(|e| cannot(e.message))?;
    let version: Option<String> = c
        .query_first("SELECT @@version")
        .map_err(|e| cannot(e.to_string()))?;
    let version = version.unwrap_or_default();
    let wrong = |why: String| {
        crate::engine::EngineError::new("missing", format!("{} is {why}", t.display()))
    };
    if version.to_ascii_lowercase().contains("mariadb") {
        return Err(wrong(format!(
            "MariaDB {version}, not MySQL: use engine = \"mariadb\" for it"
        )));
    }
    crate::sandbox::binaries::parse_version(&version)
        .and_then(|v| versions::row(&v))
        .ok_or_else(|| {
            wrong(format!(
                "MySQL {version}, not a version dbduel runs ({}): its schema changes and replication settings are not known",
                series()
            ))
        })
}

impl crate::engine::EngineKind for MysqlKind {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.engine.device_profile.as_ref()
    }

    fn data_dir(&self) -> Option<&std::path::Path> {
        self.engine.data_dir.as_deref()
    }

    /// Is the server installed, does it start, and is it a version dbduel runs (with its
    /// system tables)?
    fn preflight(&self) -> Result<()> {
        self.resolved()?.preflight()
    }

    fn account_reach(&self, database: &str) -> Result<Option<crate::engine::AccountReach>> {
        crate::engine::EngineKind::account_reach(&self.engine, database)
    }

    fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        crate::engine::EngineKind::memory_estimate(&self.engine, clients)
    }

    fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        let o = self.resolved()?;
        o.preflight()?;
        Ok(Box::new(MariadbEngine::open(o, ctx)?))
    }

    /// A target's replicas, attached as a MariaDB target's are, with the primary's version
    /// read from the server.
    fn attach_replication(
        &self,
        database: &str,
    ) -> Result<Option<Box<dyn crate::engine::replication::Replicated>>> {
        match &self.engine.common.target {
            Some(_) if !self.engine.common.replicas.is_empty() => {
                crate::engine::EngineKind::attach_replication(&self.resolved()?, database)
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode a contender of `version` (or of no version) with `options`.
    fn decoded(
        version: Option<&str>,
        options: &str,
    ) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
        let binary = BinaryChoice {
            version: version.map(String::from),
            basedir: None,
        };
        decode(&toml::from_str(options).expect("toml"), None, &binary)
    }

    #[test]
    fn a_version_is_required_and_its_storage_engines_are_checked() {
        let e = decoded(None, "storage_engine = \"innodb\"").expect_err("no version");
        assert_eq!(e.path.to_string(), "version", "{e:?}");
        assert!(e.message.contains("\"5.6\", \"5.7\" or \"8.0\""), "{e:?}");
        let e = decoded(Some("5.7"), "storage_engine = \"rocksdb\"").expect_err("rocksdb");
        assert!(format!("{e:?}").contains("innodb, myisam"), "{e:?}");
        let e = decoded(Some("8.0"), "compression = \"zstd\"").expect_err("mariadb's");
        assert!(format!("{e:?}").contains("compression"), "{e:?}");
        // The version is the contender's, not an option.
        assert!(decoded(Some("8.0"), "version = \"8.0\"").is_err());
        assert_eq!(decoded(Some("8.0"), "").expect("8.0").name(), "mysql");
        // An unknown version decodes: it is a server that is not installed (exit 3).
        assert!(decoded(Some("9.9"), "").is_ok());
    }

    #[test]
    fn an_unknown_version_names_the_versions_and_the_install_script() {
        let k = decoded(Some("9.9"), "").expect("decodes");
        let e = k.preflight().expect_err("not installed");
        assert_eq!(e.kind, "missing");
        assert!(e.message.contains("MySQL 5.6, 5.7, 8.0"), "{}", e.message);
        assert!(
            e.message.contains("scripts/install-servers"),
            "{}",
            e.message
        );
    }
}
