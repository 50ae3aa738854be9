//! The engine families dbduel can run — one folder (or file) a family, each owning its
//! options, sessions, topologies, sandbox recipe and dialect rules — and the registry that
//! turns a contender's `engine = "..."` and options into one of them. Nothing outside this
//! module names an engine.

pub mod absent;
pub mod dry;
#[cfg(feature = "servers")]
pub mod mariadb;
pub mod members;
#[cfg(feature = "servers")]
pub mod mongodb;
#[cfg(feature = "servers")]
pub mod mysql;
pub mod options;
#[cfg(feature = "servers")]
pub mod postgres;
pub mod server;
pub mod sqlite;
pub mod versions;
#[cfg(feature = "servers")]
pub mod wire;

use crate::decode::{DecodeError, KeyPath};
use crate::engine::{Engine, EngineError, EngineKind, FileSize, OpenCtx, Result, target};
use std::path::{Path, PathBuf};

/// Decodes a contender's `options` (and its `target`, and the server binary its `version` or
/// `basedir` chooses, for server engines) into its engine kind. Errors carry paths relative
/// to the contender table.
pub type DecodeKind = fn(
    &toml::Table,
    Option<&target::TargetSpec<'_>>,
    &versions::BinaryChoice,
) -> std::result::Result<Box<dyn EngineKind>, DecodeError>;

/// One engine family as the rest of dbduel may ask about it: its name in study files, its
/// decoder, and the few facts decided before an engine is open. A family declares its own
/// (`FAMILY` in its module); the registry lists them.
#[derive(Debug)]
pub struct Family {
    /// The name in study files (`engine = "..."`).
    pub name: &'static str,
    pub decode: DecodeKind,
    /// Does the engine keep what it is given (rows written can be read back and counted)?
    /// An engine that only pretends to work, to measure dbduel's own cost, does not: steps
    /// that check what they wrote are skipped on it, and the study's checks that ask for real
    /// tables ignore it.
    pub keeps_rows: bool,
    /// Can the shards of a sharded run share it, reaching one server by its `target` and
    /// meeting in its database (see `crate::shard`)?
    pub shards_meet: bool,
    /// What `dbduel sandbox up` needs to start one of its servers on its own, for a server
    /// family.
    pub sandbox: Option<SandboxFamily>,
    /// The variants of a `sql` step's file it reads, most specific first (`mysql` reads
    /// `schema.mysql.sql`, then `schema.sql`, which is `""`).
    pub sql_variants: &'static [&'static str],
    /// The URL schemes of its servers (`mysql://`), for a study made from a template and a
    /// target URL; the first family of [`REGISTRY`] naming a scheme takes it.
    pub url_schemes: &'static [&'static str],
}

/// What a build without the `servers` feature (`make demo`'s) says of the engines it lacks.
pub const WITHOUT_SERVERS: &str = "this dbduel was built without its server engines (`make demo` builds the embedded ones only, to be quick): `make build` builds every engine";

/// Every engine this build can run. A new engine is its module and one line here (and, for a
/// server family, its stand-in in [`absent`] for a build without servers).
pub const REGISTRY: &[&Family] = &[
    &sqlite::FAMILY,
    #[cfg(feature = "servers")]
    &mariadb::FAMILY,
    #[cfg(not(feature = "servers"))]
    &absent::MARIADB,
    #[cfg(feature = "servers")]
    &mysql::FAMILY,
    #[cfg(not(feature = "servers"))]
    &absent::MYSQL,
    #[cfg(feature = "servers")]
    &postgres::FAMILY,
    #[cfg(not(feature = "servers"))]
    &absent::POSTGRES,
    #[cfg(feature = "servers")]
    &mongodb::FAMILY,
    #[cfg(not(feature = "servers"))]
    &absent::MONGODB,
    &dry::FAMILY,
];

/// The server families whose contenders choose a `version` (or `basedir`): their version
/// tables, for `dbduel sandbox versions`. A family with versions is one line here.
pub const VERSIONED: &[&versions::FamilyBinaries] = &[
    #[cfg(feature = "servers")]
    &mariadb::versions::BINARIES,
    #[cfg(feature = "servers")]
    &mysql::versions::BINARIES,
    #[cfg(feature = "servers")]
    &postgres::versions::BINARIES,
];

/// The family named `engine` in a study file, if this build has one.
pub fn family(engine: &str) -> Option<&'static Family> {
    REGISTRY.iter().copied().find(|f| f.name == engine)
}

/// The `sql` file variants the engine named `engine` reads, most specific first (none for
/// an unknown name, which is refused on its own).
pub fn sql_variants(engine: &str) -> &'static [&'static str] {
    family(engine).map_or(&[], |f| f.sql_variants)
}

/// Every variant some engine reads, each once.
pub fn every_sql_variant() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    for v in REGISTRY.iter().flat_map(|f| f.sql_variants) {
        if !all.contains(v) {
            all.push(v);
        }
    }
    all
}

/// The engine whose servers a URL of `scheme` reaches (`mysql` → `mariadb`).
pub fn engine_for_scheme(scheme: &str) -> Option<&'static str> {
    REGISTRY
        .iter()
        .find(|f| f.url_schemes.contains(&scheme))
        .map(|f| f.name)
}

/// Does the engine named `engine` keep what it is given? An unknown name is taken for one
/// that does (it is refused on its own).
pub fn keeps_rows(engine: &str) -> bool {
    family(engine).is_none_or(|f| f.keeps_rows)
}

/// How `dbduel sandbox up` makes a family's recipe: for that version, serving TLS with the
/// certificates when given.
pub type SandboxRecipe =
    fn(
        &versions::BinaryChoice,
        Option<crate::sandbox::certs::ServerCerts>,
    ) -> std::result::Result<Box<dyn crate::sandbox::Recipe>, crate::engine::EngineError>;

/// A server family `dbduel sandbox up` can start on its own: its name on the command line,
/// its recipe with default settings for a version (resolved on this machine as a contender's
/// `version` is: an unknown or missing one is a `missing` error, exit 3), and the `target` a
/// study names to reach it on a port.
#[derive(Debug, Clone, Copy)]
pub struct SandboxFamily {
    pub name: &'static str,
    pub recipe: SandboxRecipe,
    /// The target URL of the sandbox on `port`, which checks its certificate against `ca`
    /// in full when it serves TLS (in the family's clients' words).
    pub target: fn(port: u16, ca: Option<&std::path::Path>) -> String,
}

/// Every family `dbduel sandbox up` can start: the registry's families with a sandbox.
pub static SANDBOX_FAMILIES: std::sync::LazyLock<Vec<SandboxFamily>> =
    std::sync::LazyLock::new(|| REGISTRY.iter().filter_map(|f| f.sandbox).collect());

/// A contender's engine with its options decoded and checked.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    family: &'static Family,
    kind: std::sync::Arc<dyn EngineKind>,
}

impl EngineConfig {
    /// Decode `options` (and a `target`, and the `version`/`basedir` choice of a server
    /// binary, for server engines) for `engine`. Errors carry paths relative to the contender
    /// table.
    pub fn decode(
        engine: &str,
        options: &toml::Table,
        target: Option<&target::TargetSpec<'_>>,
        binary: &versions::BinaryChoice,
    ) -> std::result::Result<Self, DecodeError> {
        let Some(family) = family(engine) else {
            let names: Vec<&str> = REGISTRY.iter().map(|f| f.name).collect();
            return Err(DecodeError::at(
                KeyPath::root().key("engine"),
                format!(
                    "unknown engine `{engine}`; engines are: {}",
                    names.join(", ")
                ),
            ));
        };
        Ok(EngineConfig {
            family,
            kind: (family.decode)(options, target, binary)?.into(),
        })
    }

    pub fn preflight(&self) -> Result<()> {
        self.kind.preflight()
    }

    pub fn account_reach(&self, database: &str) -> Result<Option<crate::engine::AccountReach>> {
        self.kind.account_reach(database)
    }

    pub fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        self.kind.memory_estimate(clients)
    }

    pub fn device_profile(&self) -> Option<&crate::sandbox::device_profile::DeviceProfile> {
        self.kind.device_profile()
    }

    pub fn data_dir(&self) -> Option<&Path> {
        self.kind.data_dir()
    }

    pub fn files_per_client(&self) -> u64 {
        self.kind.files_per_client()
    }

    /// The contender's engine family.
    pub fn family(&self) -> &'static Family {
        self.family
    }

    pub fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// The replication of a topology given by target, attached as it is (see
    /// [`crate::engine::EngineKind::attach_replication`]).
    pub fn attach_replication(
        &self,
        database: &str,
    ) -> Result<Option<Box<dyn crate::engine::replication::Replicated>>> {
        self.kind.attach_replication(database)
    }

    /// Create the engine with its data under `ctx.dir` (created if missing); servers are
    /// provisioned and started here.
    pub fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        std::fs::create_dir_all(ctx.dir).map_err(|e| {
            EngineError::new("io", format!("cannot create {}: {e}", ctx.dir.display()))
        })?;
        self.kind.open(ctx)
    }
}

/// An engine's `options` table decoded into its options type, errors under `options`.
pub(crate) fn decode_options<T: serde::de::DeserializeOwned>(
    options: &toml::Table,
) -> std::result::Result<T, DecodeError> {
    crate::decode::decode(toml::Value::Table(options.clone())).map_err(in_options)
}

/// A validation error of an engine's options, placed under `options`.
pub(crate) fn in_options(e: DecodeError) -> DecodeError {
    e.under(&KeyPath::root().key("options"))
}

/// Embedded engines run inside dbduel: a `target` is refused.
pub(crate) fn refuse_target(
    name: &str,
    target: Option<&target::TargetSpec<'_>>,
) -> std::result::Result<(), DecodeError> {
    match target {
        Some(_) => Err(DecodeError::at(
            KeyPath::root().key("target"),
            format!("engine {name} is embedded; target applies to mariadb and postgres"),
        )),
        None => Ok(()),
    }
}

/// Sizes of the regular files at `paths` that exist: (total length, total allocated, each).
pub fn file_sizes(root: &Path, paths: &[PathBuf]) -> (u64, u64, Vec<FileSize>) {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut allocated = 0;
    let mut files = Vec::new();
    for p in paths {
        if let Ok(m) = std::fs::metadata(p)
            && m.is_file()
        {
            total += m.len();
            allocated += m.blocks() * 512;
            let shown = p.strip_prefix(root).unwrap_or(p).display().to_string();
            files.push(FileSize {
                path: shown,
                bytes: m.len(),
            });
        }
    }
    (total, allocated, files)
}

/// The `partitions` option of engines that partition tables: 2 to 1024.
pub(crate) fn check_partitions(partitions: Option<u32>) -> std::result::Result<(), DecodeError> {
    match partitions {
        Some(n) if !(2..=1024).contains(&n) => Err(DecodeError::at(
            KeyPath::root().key("partitions"),
            format!(
                "partitions = {n} is out of range; use 2 to 1024 (leave it out for a plain table)"
            ),
        )),
        _ => Ok(()),
    }
}

/// The `data_dir` option of server engines: an existing directory, by absolute path.
pub(crate) fn check_data_dir(dir: Option<&Path>) -> std::result::Result<(), DecodeError> {
    let Some(d) = dir else { return Ok(()) };
    let at = |m: String| Err(DecodeError::at(KeyPath::root().key("data_dir"), m));
    if !d.is_absolute() {
        return at(format!(
            "data_dir = {:?} must be an absolute path (a directory on the device to use)",
            d.display().to_string()
        ));
    }
    if !d.is_dir() {
        return at(format!(
            "data_dir = {:?} is not a directory on this machine; create it (on the device to use) or name another",
            d.display().to_string()
        ));
    }
    Ok(())
}
