//! The MySQL engine: a private sandboxed `mysqld` of version 5.6, 5.7 or 8.0 per contender
//! (`engine = "mysql"`, `version = "..."`), from the servers' cache `scripts/install-servers`
//! fills. It speaks the protocol MariaDB speaks, so it is the MariaDB engine with a
//! [`Flavor`]: the same sessions (the lean wire client), loads, footprints, counters and
//! database claim; what differs — the recipe, the schema-change algorithms, the storage
//! engines, replication's variables — is the version's row in [`versions`].

pub mod install;
pub mod recipe;
pub mod versions;

use crate::decode::{DecodeError, KeyPath};
use crate::engine::{Engine, OpenCtx, Result};
use crate::engines::mariadb::flavor::Flavor;
use crate::engines::mariadb::recipe::MariadbRecipe;
use crate::engines::mariadb::topology::MariadbReplica;
use crate::engines::mariadb::{MariadbEngine, MariadbOptions};
use crate::engines::server::sandbox_err;
use crate::sandbox::device_profile::DeviceProfile;
use recipe::MysqlRecipe;
use serde::{Deserialize, Serialize};
use versions::MysqlVersion;

/// Contender options for `engine = "mysql"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MysqlOptions {
    /// The MySQL version: `5.6`, `5.7` or `8.0` (installed by `scripts/install-servers`).
    pub version: String,
    /// innodb or myisam: the server's default_storage_engine.
    #[serde(default = "default_engine")]
    pub storage_engine: String,
    /// innodb_buffer_pool_size, MiB (default 256).
    #[serde(default)]
    pub buffer_pool_mb: Option<u64>,
    /// innodb_buffer_pool_size as a share of this machine's memory (0.05 to 0.9).
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
    keeps_rows: true,
    shards_meet: false,
    sandbox: Some(crate::engines::SandboxFamily {
        name: "mysql",
        // The newest version dbduel provisions.
        recipe: || {
            let v = &versions::VERSIONS[versions::VERSIONS.len() - 1];
            Box::new(MysqlRecipe::new(v, &MariadbRecipe::default()))
        },
        target: |port| format!("mysql://root@127.0.0.1:{port}"),
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
}

/// A MySQL contender: its version as the study names it and the engine's options.
#[derive(Debug, Clone)]
pub struct MysqlKind {
    version: String,
    /// The version's row, when dbduel provisions it (else the contender fails its
    /// prerequisites, naming what is installed).
    row: Option<&'static MysqlVersion>,
    engine: MariadbOptions,
}

/// `engine = "mysql"`: decode and check the options. An unknown version is not bad input
/// but a server that is not installed: the prerequisites say so (exit 3).
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
    if target.is_some() {
        return Err(DecodeError::at(
            KeyPath::root().key("target"),
            "engine = \"mysql\" runs a private MySQL sandbox; to measure a MySQL server you run, use engine = \"mariadb\" with its target (the protocol is the same)",
        ));
    }
    let (o, common): (MysqlOptions, _) = crate::engines::options::decode(options)?;
    let in_options = crate::engines::in_options;
    let row = versions::find(&o.version);
    if let Some(v) = row {
        let se = o.storage_engine.to_ascii_lowercase();
        if !v.storage_engines.contains(&se.as_str()) {
            return Err(in_options(DecodeError::at(
                KeyPath::root().key("storage_engine"),
                format!(
                    "storage_engine = {:?} is not available on MySQL {}; use one of: {}",
                    o.storage_engine,
                    v.version,
                    v.storage_engines.join(", ")
                ),
            )));
        }
    }
    let common: crate::engines::options::ServerOptions<MariadbReplica> = common;
    if !common.replicas.is_empty() {
        return Err(in_options(DecodeError::at(
            KeyPath::root().key("replicas"),
            "replicas of a MySQL sandbox are not provisioned yet; use engine = \"mariadb\" for a replication topology",
        )));
    }
    let engine = MariadbOptions {
        storage_engine: o.storage_engine,
        buffer_pool_mb: o.buffer_pool_mb,
        buffer_pool_share: o.buffer_pool_share,
        block_cache_mb: None,
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
    Ok(Box::new(MysqlKind {
        version: o.version,
        row,
        engine,
    }))
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

    /// Is the version one dbduel runs, and is it installed (with its system tables)?
    fn preflight(&self) -> Result<()> {
        match self.row {
            Some(_) => self.engine.preflight(),
            None => Err(sandbox_err(install::missing(&self.version))),
        }
    }

    fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        crate::engine::EngineKind::memory_estimate(&self.engine, clients)
    }

    fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        self.preflight()?;
        Ok(Box::new(MariadbEngine::open(self.engine.clone(), ctx)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
        decode(&toml::from_str(text).expect("toml"), None)
    }

    #[test]
    fn a_version_is_required_and_its_storage_engines_are_checked() {
        let e = decoded("storage_engine = \"innodb\"").expect_err("no version");
        assert!(format!("{e:?}").contains("version"), "{e:?}");
        let e = decoded("version = \"5.7\"\nstorage_engine = \"rocksdb\"").expect_err("rocksdb");
        assert!(format!("{e:?}").contains("innodb, myisam"), "{e:?}");
        let e = decoded("version = \"8.0\"\ncompression = \"zstd\"").expect_err("mariadb's");
        assert!(format!("{e:?}").contains("compression"), "{e:?}");
        assert_eq!(decoded("version = \"8.0\"").expect("8.0").name(), "mysql");
        // An unknown version decodes: it is a server that is not installed (exit 3).
        assert!(decoded("version = \"9.9\"").is_ok());
    }

    #[test]
    fn an_unknown_version_names_the_versions_and_the_install_script() {
        let k = decoded("version = \"9.9\"").expect("decodes");
        let e = k.preflight().expect_err("not installed");
        assert_eq!(e.kind, "missing");
        assert!(e.message.contains("5.6, 5.7, 8.0"), "{}", e.message);
        assert!(
            e.message.contains("scripts/install-servers"),
            "{}",
            e.message
        );
    }
}
