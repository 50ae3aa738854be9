//! The MySQL versions dbduel provisions, as data: where each one's server comes from (the
//! server cache, or a `basedir`, through the shared [`FamilyBinaries`]), how its data
//! directory is made, and what it can do (schema-change
//! algorithms, authentication, GTIDs, parallel apply on a replica, storage engines). A step
//! never asks which version runs; it asks the engine, which reads this table.

use crate::engines::versions::{FamilyBinaries, Origin};

/// MySQL's binaries: `mysqld` under `bin/`, every version from the server cache (Debian
/// ships none) or a basedir; the series are [`VERSIONS`]' (a test keeps them equal).
pub const BINARIES: FamilyBinaries = FamilyBinaries {
    family: "mysql",
    title: "MySQL",
    server: "mysqld",
    system: || None,
    series: &[
        ("5.6", Origin::Cache),
        ("5.7", Origin::Cache),
        ("8.0", Origin::Cache),
    ],
};

/// How a version's data directory is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// Copy the package's ready system tables (`data-template/mysql`), then run the server
    /// once with `--bootstrap` to fit the accounts: the 5.6 package has no way to initialize.
    CopyTemplate,
    /// `mysqld --initialize-insecure` (5.7 and later), with an init file for the accounts.
    InitializeInsecure,
}

/// How a version names its replication's global transaction ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gtids {
    /// The settings that turn GTIDs on (`gtid_mode = ON` needs the consistency check).
    pub settings: &'static [(&'static str, &'static str)],
    /// The variable holding the set a server has executed.
    pub executed: &'static str,
    /// Does the server also write each applied transaction's GTID into an InnoDB table
    /// (`mysql.gtid_executed`, 5.7 on), whose rows its row counters then count?
    pub table: bool,
}

/// One MySQL version as dbduel runs it.
#[derive(Debug)]
pub struct MysqlVersion {
    /// The version series a study names (`version = "5.7"`).
    pub version: &'static str,
    pub init: Init,
    /// The error messages' directory under the server's directory.
    pub messages_dir: &'static str,
    /// `ALTER TABLE ... ALGORITHM=` values it accepts, cheapest first: `INSTANT` from 8.0
    /// (8.0.12), never MariaDB's `NOCOPY`.
    pub ddl_algorithms: &'static [&'static str],
    /// Has `ALTER TABLE ... RENAME COLUMN` (8.0.3 on); before, a rename is `CHANGE COLUMN`
    /// with the column's whole definition.
    pub rename_column: bool,
    /// The authentication plugin new accounts get by default.
    pub default_auth_plugin: &'static str,
    /// Settings this version's sandbox always gets, beside the contender's.
    pub settings: &'static [(&'static str, &'static str)],
    pub gtids: Gtids,
    /// A replica's settings for parallel apply (with `{workers}` for the worker count).
    pub parallel_replica: &'static [(&'static str, &'static str)],
    /// A primary's settings that let its replicas apply in parallel (8.0: dependencies by
    /// write sets, not only by group commit).
    pub parallel_primary: &'static [(&'static str, &'static str)],
    /// The primary's group-commit wait, (count, microseconds) variables: MariaDB's
    /// `binlog_commit_wait_count`/`_usec` counterpart (5.7 on); none on 5.6.
    pub commit_wait: Option<(&'static str, &'static str)>,
    /// Storage engines a contender may choose on it.
    pub storage_engines: &'static [&'static str],
}

const GTIDS_56: Gtids = Gtids {
    // 5.6 also needs the replica's binary log of applied changes for GTIDs.
    settings: &[
        ("gtid_mode", "ON"),
        ("enforce_gtid_consistency", "ON"),
        ("log_slave_updates", "ON"),
    ],
    executed: "@@global.gtid_executed",
    table: false,
};
const GTIDS: Gtids = Gtids {
    settings: &[("gtid_mode", "ON"), ("enforce_gtid_consistency", "ON")],
    executed: "@@global.gtid_executed",
    table: true,
};

/// The versions dbduel provisions, oldest first.
pub const VERSIONS: &[MysqlVersion] = &[
    MysqlVersion {
        version: "5.6",
        init: Init::CopyTemplate,
        messages_dir: "share/english",
        ddl_algorithms: &["INPLACE", "COPY"],
        rename_column: false,
        default_auth_plugin: "mysql_native_password",
        settings: &[],
        gtids: GTIDS_56,
        // Parallel by database only.
        parallel_replica: &[("slave_parallel_workers", "{workers}")],
        parallel_primary: &[],
        commit_wait: None,
        storage_engines: &["innodb", "myisam"],
    },
    MysqlVersion {
        version: "5.7",
        init: Init::InitializeInsecure,
        messages_dir: "share",
        ddl_algorithms: &["INPLACE", "COPY"],
        rename_column: false,
        default_auth_plugin: "mysql_native_password",
        settings: &[],
        gtids: GTIDS,
        parallel_replica: &[
            ("slave_parallel_type", "LOGICAL_CLOCK"),
            ("slave_parallel_workers", "{workers}"),
            ("slave_preserve_commit_order", "ON"),
            ("log_slave_updates", "ON"),
        ],
        parallel_primary: &[],
        commit_wait: Some((
            "binlog_group_commit_sync_no_delay_count",
            "binlog_group_commit_sync_delay",
        )),
        storage_engines: &["innodb", "myisam"],
    },
    MysqlVersion {
        version: "8.0",
        init: Init::InitializeInsecure,
        messages_dir: "share",
        ddl_algorithms: &["INSTANT", "INPLACE", "COPY"],
        rename_column: true,
        default_auth_plugin: "caching_sha2_password",
        settings: &[
            // The sandbox's accounts use mysql_native_password, which the lean benchmark
            // client speaks: caching_sha2_password would push every session onto the
            // `mysql` crate's slower client (see the recipe).
            ("default_authentication_plugin", "mysql_native_password"),
            // The X protocol listens on 33060 on every address by default: off, a sandbox
            // listens on its loopback port only.
            ("mysqlx", "OFF"),
            // 8.0 writes a binary log by default; MariaDB and older MySQL do not. A topology
            // turns it on where it needs one.
            ("disable_log_bin", ""),
            // information_schema.TABLES caches sizes for a day: a footprint reads them fresh.
            ("information_schema_stats_expiry", "0"),
        ],
        gtids: GTIDS,
        parallel_replica: &[
            ("binlog_transaction_dependency_tracking", "WRITESET"),
            ("transaction_write_set_extraction", "XXHASH64"),
            ("slave_parallel_type", "LOGICAL_CLOCK"),
            ("slave_parallel_workers", "{workers}"),
            ("slave_preserve_commit_order", "ON"),
            ("log_slave_updates", "ON"),
        ],
        parallel_primary: &[
            ("binlog_transaction_dependency_tracking", "WRITESET"),
            ("transaction_write_set_extraction", "XXHASH64"),
        ],
        commit_wait: Some((
            "binlog_group_commit_sync_no_delay_count",
            "binlog_group_commit_sync_delay",
        )),
        storage_engines: &["innodb", "myisam"],
    },
];

/// The row of a version a study names (`8.0`, `8.0.15`) or a binary reports, if dbduel
/// provisions its series.
pub fn row(version: &str) -> Option<&'static MysqlVersion> {
    let (series, _) = BINARIES.series_of(version)?;
    VERSIONS.iter().find(|v| v.version == series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_8_0_changes_a_table_instantly_and_no_mysql_knows_nocopy() {
        for v in VERSIONS {
            assert!(!v.ddl_algorithms.contains(&"NOCOPY"), "{}", v.version);
            assert_eq!(v.ddl_algorithms.contains(&"INSTANT"), v.version == "8.0");
            assert!(v.ddl_algorithms.ends_with(&["INPLACE", "COPY"]));
        }
        assert_eq!(row("5.6").map(|v| v.init), Some(Init::CopyTemplate));
        assert_eq!(row("8.0.15").map(|v| v.version), Some("8.0"));
        assert!(row("9.9").is_none());
        assert!(row("5.60").is_none());
    }

    #[test]
    fn the_binaries_series_are_the_version_tables() {
        let series: Vec<&str> = BINARIES.series.iter().map(|(s, _)| *s).collect();
        let rows: Vec<&str> = VERSIONS.iter().map(|v| v.version).collect();
        assert_eq!(series, rows);
    }
}
