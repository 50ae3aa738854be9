//! The options every server family takes — where its server runs and on what (memory limit,
//! device profile, data directory), extra server settings, replicas, partitions, control of
//! someone else's replication, and the target — declared, decoded and checked once.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::target::Target;
use crate::engines::server::extra_settings;
use crate::engines::versions::{BinaryChoice, FamilyBinaries, ServerBinary};
use crate::sandbox::device_profile::DeviceProfile;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A replica as a server family's options describe it.
pub trait ReplicaOptions {
    /// Its name (its sandbox directory's, unique in the contender).
    fn name(&self) -> &str;
    /// Check its options; errors are placed under `at`.
    fn validate(&self, at: &KeyPath) -> Result<(), DecodeError>;
}

/// The options every server family shares, with its replicas' options `R`. A family's
/// options type holds them (and reads them through `Deref`); [`decode`] fills both.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerOptions<R> {
    /// Run the sandbox's server in a memory cgroup of this many MiB: its memory and the page
    /// cache its reads fill, so data far above it is read from the disk (a server needs some
    /// tens of MiB above its caches — about 85 for MariaDB, 64 for PostgreSQL; beyond the
    /// limit the kernel kills it, and dbduel says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mb: Option<u64>,
    /// Throttle the sandbox's server to a storage class: a built-in profile (`hdd`,
    /// `sata-ssd`, `cloud-disk`, `raid10-hdd`, `raid10-ssd`) or `{ read_mb_s, read_iops, write_mb_s, write_iops }`, held
    /// by the kernel's block-I/O cgroup on the disk under its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_profile: Option<DeviceProfile>,
    /// Keep the sandbox's data under this directory — on a device you name — instead of the
    /// run directory (dbduel makes and removes its own directory inside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// Any other server settings, written into the sandbox's configuration file as given.
    #[serde(default)]
    pub server: toml::Table,
    /// Replicas of this server, one sandbox each (or each given by its target): the
    /// contender becomes a replication topology for the replication steps.
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<R>,
    /// Create the dataset's tables split into this many partitions by their primary key
    /// (MariaDB `PARTITION BY KEY`, PostgreSQL `PARTITION BY HASH`), 2 to 1024; absent:
    /// plain tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    /// With a target and replicas given by target: may dbduel stop and start the replicas'
    /// apply (and, on MariaDB, set the primary's `binlog_commit_wait_*`)? Off by default:
    /// someone else's replication is left as it runs.
    #[serde(default)]
    pub control_replication: bool,
    /// Serve the sandbox's clients over TLS: dbduel makes a CA for the sandbox and a
    /// certificate it signs for 127.0.0.1 and `localhost`, and every connection of the
    /// contender checks it in full (`verify-full`), so what TLS costs can be measured. A
    /// target's TLS is in its URL (`sslmode`, `ssl-mode`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tls: bool,
    /// An existing server to use instead of a sandbox (the contender's `target`).
    #[serde(skip)]
    pub target: Option<Target>,
    /// The server binary the contender's `version` or `basedir` chooses (absent: the
    /// system's).
    #[serde(skip)]
    pub binary: BinaryChoice,
    /// That choice resolved on this machine, once the contender opens.
    #[serde(skip)]
    pub resolved: Option<ServerBinary>,
}

impl<R> Default for ServerOptions<R> {
    fn default() -> Self {
        ServerOptions {
            memory_limit_mb: None,
            device_profile: None,
            data_dir: None,
            server: toml::Table::new(),
            replicas: Vec::new(),
            partitions: None,
            control_replication: false,
            tls: false,
            target: None,
            binary: BinaryChoice::default(),
            resolved: None,
        }
    }
}

/// The keys of [`ServerOptions`] in a contender's `options`.
const SHARED_KEYS: &[&str] = &[
    "memory_limit_mb",
    "device_profile",
    "data_dir",
    "server",
    "replicas",
    "partitions",
    "control_replication",
    "tls",
];

/// Decode a server family's `options` table: the shared keys into [`ServerOptions`], the
/// rest into the family's own options `O`, with errors under `options`. A key neither
/// knows is refused naming every key both take.
pub fn decode<O, R>(options: &toml::Table) -> Result<(O, ServerOptions<R>), DecodeError>
where
    O: DeserializeOwned,
    R: DeserializeOwned,
{
    crate::decode::split(options, SHARED_KEYS).map_err(crate::engines::in_options)
}

impl<R> ServerOptions<R> {
    /// Take the contender's choice of server binary: a private server's only, so refused
    /// (placed at its key) with a target, whose server runs its own.
    pub fn choose_binary(&mut self, binary: &BinaryChoice) -> Result<(), DecodeError> {
        if self.target.is_some() {
            binary.refuse("with a target the server runs its own")?;
        }
        self.binary = binary.clone();
        Ok(())
    }

    /// Resolve the chosen binary on this machine (a sandbox's; a target has none): it
    /// exists, starts and is the version asked for. Once resolved, it stays.
    pub fn resolve_binary(
        &mut self,
        family: &FamilyBinaries,
    ) -> Result<(), crate::engine::EngineError> {
        if self.target.is_none() && self.resolved.is_none() {
            self.resolved = Some(family.resolve(&self.binary)?);
        }
        Ok(())
    }

    /// The directory of the chosen server's `bin/`, `share/`, `lib/`; `None`: the system's.
    pub fn server_dir(&self) -> Option<PathBuf> {
        self.resolved.as_ref().and_then(|b| b.dir.clone())
    }

    /// The certificates of a sandbox contender `name` that asked for `tls = true`.
    pub fn server_certs(
        &self,
        name: &str,
    ) -> Result<Option<crate::sandbox::certs::ServerCerts>, crate::engine::EngineError> {
        if !self.tls || self.target.is_some() {
            return Ok(None);
        }
        crate::sandbox::certs::for_sandbox(name)
            .map(Some)
            .map_err(|m| crate::engine::EngineError::new("tls", m))
    }
}

impl<R: ReplicaOptions> ServerOptions<R> {
    /// Where the data goes: the partitions asked for and the data directory named.
    pub fn check_placement(&self) -> Result<(), DecodeError> {
        crate::engines::check_partitions(self.partitions)?;
        crate::engines::check_data_dir(self.data_dir.as_deref())
    }

    /// The extra server settings (checked against the family's `rules`: names, values, and
    /// none of the settings dbduel owns), then the replicas: unique names and each one's
    /// options.
    pub fn check_settings_and_replicas(
        &self,
        rules: &crate::engines::server::SettingRules,
    ) -> Result<(), DecodeError> {
        extra_settings(&self.server, rules)?;
        if self.tls {
            let why = if self.target.is_some() {
                Some(
                    "with a target, TLS is the URL's: add sslmode=verify-full&sslrootcert=FILE (ssl-mode=VERIFY_IDENTITY&ssl-ca=FILE) to it",
                )
            } else if !self.replicas.is_empty() {
                Some(
                    "tls = true serves a single sandbox so far; replicas would still replicate in clear: leave tls out, or the replicas",
                )
            } else {
                None
            };
            if let Some(why) = why {
                return Err(DecodeError::at(KeyPath::root().key("tls"), why));
            }
        }
        let names: Vec<&str> = self.replicas.iter().map(|r| r.name()).collect();
        crate::engine::replication::check_replica_names(&names)?;
        for (i, r) in self.replicas.iter().enumerate() {
            r.validate(&KeyPath::root().key("replicas").index(i))?;
        }
        Ok(())
    }
}
