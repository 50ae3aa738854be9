//! How one replica of a MySQL-protocol topology replicates, by what its server is: MariaDB
//! following MariaDB's GTIDs, or a MySQL server following the primary's binary-log file and
//! position (a MySQL replica of a MariaDB primary, which cannot follow MariaDB's GTIDs). Each
//! says how the replica is wired to the primary, its parallel-apply settings, how its
//! applied and received positions and the rows it wrote are read, and which of its settings
//! its facts report. The topology asks its replica's dialect; it never asks which server runs.

use crate::engine::replication::Position;
use crate::engines::mysql::versions::MysqlVersion;
use mysql::prelude::Queryable;

/// What a new replica is pointed at: the primary on loopback, the replication account, and
/// the primary's first binary-log file (where a file/position replica starts).
pub struct Wiring<'a> {
    pub port: u16,
    pub user: &'a str,
    pub password: &'a str,
    pub first_file: &'a str,
}

/// A replica's `SHOW SLAVE STATUS` row, read by column name (the same names on MariaDB and
/// MySQL).
pub struct SlaveStatus(pub mysql::Row);

impl SlaveStatus {
    /// A column's text, empty when absent or NULL.
    pub fn text(&self, k: &str) -> String {
        self.0
            .get_opt::<Option<String>, _>(k)
            .and_then(|r| r.ok())
            .flatten()
            .unwrap_or_default()
    }

    /// A column as a number, if it is one.
    pub fn number(&self, k: &str) -> Option<u64> {
        self.text(k).parse().ok()
    }
}

/// What a dialect reads of a replica beside the status row.
pub struct Reading {
    pub applied: Position,
    pub received: Position,
    /// Rows written, updated and deleted by its own counters (see `ReplicaState`).
    pub rows_changed: Option<u64>,
}

/// How one replica replicates.
pub trait ReplicaDialect: Send + Sync {
    /// The method, in words, for the replica's facts (`MariaDB GTID`).
    fn method(&self) -> &'static str;
    /// The statement that points a new replica at the primary from the start of its
    /// binary log, so that it replays everything the primary ever wrote.
    fn wire(&self, w: &Wiring<'_>) -> String;
    /// Its `[mysqld]` settings for parallel apply with `threads` workers (0: serial, in
    /// order) and MariaDB's `mode`.
    fn parallel_settings(&self, threads: u64, mode: Option<&str>) -> Vec<(String, String)>;
    /// Its other `[mysqld]` settings for replicating this way (over the defaults).
    fn replica_settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The server variables its facts report.
    fn facts_variables(&self) -> &'static [&'static str];
    /// Its positions and rows, with `status` its `SHOW SLAVE STATUS` row, read on `c`.
    fn read(&self, c: &mut mysql::Conn, status: &SlaveStatus) -> mysql::Result<Reading>;
}

/// `SHOW GLOBAL STATUS` counters `names`, summed (absent ones count 0).
fn sum_counters(c: &mut mysql::Conn, names: &[&str]) -> mysql::Result<Option<u64>> {
    let list = names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let rows: Vec<(String, String)> = c.query(format!(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"
    ))?;
    Ok((!rows.is_empty()).then(|| rows.iter().filter_map(|(_, v)| v.parse::<u64>().ok()).sum()))
}

/// A MariaDB replica of a MariaDB primary: `MASTER_USE_GTID = slave_pos`, positions from
/// GTIDs, rows from the handler counters, `slave_parallel_threads` and `_mode`.
pub struct MariadbGtid;

/// Transactions in a GTID position (`0-1-1234,1-2-5`): the sequence numbers summed over its
/// domains (each domain numbers its own transactions from 1).
pub fn gtid_transactions(pos: &str) -> u64 {
    pos.split(',')
        .filter_map(|g| g.trim().rsplit('-').next()?.parse::<u64>().ok())
        .sum()
}

/// A MariaDB GTID position.
pub fn gtid_position(text: String) -> Position {
    Position {
        transactions: gtid_transactions(&text),
        bytes: None,
        binlog: None,
        text,
    }
}

impl ReplicaDialect for MariadbGtid {
    fn method(&self) -> &'static str {
        "MariaDB GTID (slave_pos)"
    }

    fn wire(&self, w: &Wiring<'_>) -> String {
        format!(
            "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, MASTER_USER = '{}', MASTER_PASSWORD = '{}', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
            w.port, w.user, w.password
        )
    }

    fn parallel_settings(&self, threads: u64, mode: Option<&str>) -> Vec<(String, String)> {
        let mut s = vec![("slave_parallel_threads".into(), threads.to_string())];
        if let Some(m) = mode {
            s.push(("slave_parallel_mode".into(), m.into()));
        }
        s
    }

    fn facts_variables(&self) -> &'static [&'static str] {
        &[
            "slave_parallel_threads",
            "slave_parallel_mode",
            "log_slave_updates",
            "innodb_flush_log_at_trx_commit",
            "sync_binlog",
            "log_bin",
            "server_id",
            "slave_parallel_max_queued",
            "innodb_buffer_pool_size",
        ]
    }

    fn read(&self, c: &mut mysql::Conn, status: &SlaveStatus) -> mysql::Result<Reading> {
        let applied: Option<String> = c.query_first("SELECT @@gtid_slave_pos")?;
        let applied = gtid_position(applied.unwrap_or_default());
        // MariaDB 10.11 has no Innodb_rows_* any more; the handler counters count row
        // writes for every storage engine. Every applied transaction also writes its GTID
        // into mysql.gtid_slave_pos and later deletes it: two handler operations that are
        // not the study's rows.
        let rows = sum_counters(c, &["Handler_write", "Handler_update", "Handler_delete"])?
            .map(|n| n.saturating_sub(2 * applied.transactions));
        Ok(Reading {
            applied,
            received: gtid_position(status.text("Gtid_IO_Pos")),
            rows_changed: rows,
        })
    }
}

/// A MySQL replica of a MariaDB primary, by the primary's binary-log file and position
/// (MySQL's GTIDs are not MariaDB's: it cannot follow those). Positions are the primary's
/// coordinates it has executed (`Relay_Master_Log_File`, `Exec_Master_Log_Pos`) and read
/// (`Master_Log_File`, `Read_Master_Log_Pos`); transactions are the event groups it applied,
/// by its own statement counters (each of the primary's transactions arrives as a `BEGIN`,
/// each schema change as its own statement); rows by InnoDB's row counters (its handler
/// counters also count the temporary tables its own `SHOW STATUS` fills).
pub struct FilePosition {
    /// Its version's row (none for a replica given by target, whose settings are its own).
    pub version: Option<&'static MysqlVersion>,
}

/// The statement counters of the event groups a file/position replica applies: a
/// transaction's `BEGIN`, or one schema change.
const EVENT_GROUPS: &[&str] = &[
    "Com_begin",
    "Com_create_db",
    "Com_drop_db",
    "Com_alter_db",
    "Com_create_table",
    "Com_drop_table",
    "Com_alter_table",
    "Com_rename_table",
    "Com_truncate",
    "Com_create_index",
    "Com_drop_index",
    "Com_create_view",
    "Com_drop_view",
];

/// A binary log file's number: `binlog.000012` is 12.
fn file_number(file: &str) -> Option<u64> {
    file.rsplit('.').next()?.parse().ok()
}

/// A position in the primary's binary log, `transactions` applied by then.
fn file_position(file: String, offset: Option<u64>, transactions: u64) -> Position {
    let binlog = file_number(&file).zip(offset);
    Position {
        transactions,
        bytes: None,
        binlog,
        text: match offset {
            Some(o) if !file.is_empty() => format!("{file}:{o}"),
            _ => String::new(),
        },
    }
}

impl ReplicaDialect for FilePosition {
    fn method(&self) -> &'static str {
        "binary-log file and position"
    }

    fn wire(&self, w: &Wiring<'_>) -> String {
        format!(
            "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, MASTER_USER = '{}', MASTER_PASSWORD = '{}', MASTER_LOG_FILE = '{}', MASTER_LOG_POS = 4, MASTER_CONNECT_RETRY = 1",
            w.port, w.user, w.password, w.first_file
        )
    }

    fn parallel_settings(&self, threads: u64, _mode: Option<&str>) -> Vec<(String, String)> {
        if threads == 0 {
            return vec![("slave_parallel_workers".into(), "0".into())];
        }
        self.version
            .map_or(&[][..], |v| v.parallel_replica)
            .iter()
            .map(|(k, v)| (k.to_string(), v.replace("{workers}", &threads.to_string())))
            .collect()
    }

    fn facts_variables(&self) -> &'static [&'static str] {
        &[
            "slave_parallel_workers",
            "slave_parallel_type",
            "log_slave_updates",
            "innodb_flush_log_at_trx_commit",
            "sync_binlog",
            "log_bin",
            "server_id",
            "relay_log_info_repository",
            "innodb_buffer_pool_size",
        ]
    }

    fn read(&self, c: &mut mysql::Conn, status: &SlaveStatus) -> mysql::Result<Reading> {
        let applied_tx = sum_counters(c, EVENT_GROUPS)?.unwrap_or(0);
        let rows = sum_counters(
            c,
            &[
                "Innodb_rows_inserted",
                "Innodb_rows_updated",
                "Innodb_rows_deleted",
            ],
        )?;
        Ok(Reading {
            applied: file_position(
                status.text("Relay_Master_Log_File"),
                status.number("Exec_Master_Log_Pos"),
                applied_tx,
            ),
            // What was received but not applied is not counted in transactions: its
            // coordinates say how far it is.
            received: file_position(
                status.text("Master_Log_File"),
                status.number("Read_Master_Log_Pos"),
                applied_tx,
            ),
            rows_changed: rows,
        })
    }
}

/// Transactions in a MySQL GTID set (`uuid:1-5:7-9,\nuuid2:1`): the lengths of its
/// intervals summed over its servers.
pub fn gtid_set_transactions(set: &str) -> u64 {
    set.split(',')
        .flat_map(|server| server.trim().split(':').skip(1))
        .filter_map(|interval| {
            let mut ends = interval.trim().splitn(2, '-');
            let first: u64 = ends.next()?.parse().ok()?;
            let last: u64 = match ends.next() {
                Some(l) => l.parse().ok()?,
                None => first,
            };
            Some(last.saturating_sub(first) + 1)
        })
        .sum()
}

/// A MySQL GTID set as a position.
pub fn gtid_set_position(text: String) -> Position {
    let text = text.replace('\n', "");
    Position {
        transactions: gtid_set_transactions(&text),
        bytes: None,
        binlog: None,
        text,
    }
}

/// A MySQL replica of a MySQL primary of its version, GTIDs on (`MASTER_AUTO_POSITION = 1`):
/// positions from the GTID sets it executed (`gtid_executed`) and retrieved
/// (`Retrieved_Gtid_Set`), rows by InnoDB's row counters where they count only the study's
/// rows (5.6; from 5.7 they also count the GTIDs the server writes into and compresses out
/// of `mysql.gtid_executed`, not in a fixed ratio, so rows are not counted there), parallel
/// apply by its version.
pub struct MysqlGtid {
    pub version: &'static MysqlVersion,
}

impl ReplicaDialect for MysqlGtid {
    fn method(&self) -> &'static str {
        "MySQL GTID (auto-position)"
    }

    fn wire(&self, w: &Wiring<'_>) -> String {
        format!(
            "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, MASTER_USER = '{}', MASTER_PASSWORD = '{}', MASTER_AUTO_POSITION = 1, MASTER_CONNECT_RETRY = 1",
            w.port, w.user, w.password
        )
    }

    fn parallel_settings(&self, threads: u64, mode: Option<&str>) -> Vec<(String, String)> {
        FilePosition {
            version: Some(self.version),
        }
        .parallel_settings(threads, mode)
    }

    /// GTIDs on (5.6 also logs what it applies for that).
    fn replica_settings(&self) -> Vec<(String, String)> {
        self.version
            .gtids
            .settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn facts_variables(&self) -> &'static [&'static str] {
        &[
            "slave_parallel_workers",
            "slave_parallel_type",
            "slave_preserve_commit_order",
            "gtid_mode",
            "log_slave_updates",
            "innodb_flush_log_at_trx_commit",
            "sync_binlog",
            "log_bin",
            "server_id",
            "innodb_buffer_pool_size",
        ]
    }

    fn read(&self, c: &mut mysql::Conn, status: &SlaveStatus) -> mysql::Result<Reading> {
        let executed: Option<String> =
            c.query_first(format!("SELECT {}", self.version.gtids.executed))?;
        let rows = match self.version.gtids.table {
            true => None,
            false => sum_counters(
                c,
                &[
                    "Innodb_rows_inserted",
                    "Innodb_rows_updated",
                    "Innodb_rows_deleted",
                ],
            )?,
        };
        Ok(Reading {
            applied: gtid_set_position(executed.unwrap_or_default()),
            received: gtid_set_position(status.text("Retrieved_Gtid_Set")),
            rows_changed: rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtid_positions_count_transactions_over_domains() {
        assert_eq!(gtid_transactions(""), 0);
        assert_eq!(gtid_transactions("0-1-1234"), 1234);
        assert_eq!(gtid_transactions("0-1-1234,1-2-5"), 1239);
        assert_eq!(gtid_transactions("0-1-10, 1-2-5"), 15);
    }

    #[test]
    fn mysql_gtid_sets_count_their_intervals() {
        assert_eq!(gtid_set_transactions(""), 0);
        let u = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        assert_eq!(gtid_set_transactions(&format!("{u}:1-5")), 5);
        assert_eq!(gtid_set_transactions(&format!("{u}:1-5:7-9:12")), 9);
        let two = format!("{u}:1-10,\n4e11fa47-71ca-11e1-9e33-c80aa9429562:1-3");
        assert_eq!(gtid_set_position(two).transactions, 13);
    }

    #[test]
    fn a_file_position_names_the_file_and_compares_by_its_number() {
        let p = file_position("binlog.000012".into(), Some(4_096), 7);
        assert_eq!(p.binlog, Some((12, 4_096)));
        assert_eq!(p.text, "binlog.000012:4096");
        let none = file_position(String::new(), None, 0);
        assert_eq!(none.binlog, None);
        assert!(none.text.is_empty());
    }

    #[test]
    fn a_mysql_replica_applies_in_parallel_by_its_versions_settings() {
        let v56 = crate::engines::mysql::versions::row("5.6").expect("5.6");
        let d = FilePosition { version: Some(v56) };
        assert_eq!(
            d.parallel_settings(4, None),
            vec![("slave_parallel_workers".to_string(), "4".to_string())]
        );
        assert_eq!(d.parallel_settings(0, None)[0].1, "0");
        let wire = d.wire(&Wiring {
            port: 3307,
            user: "u",
            password: "p",
            first_file: "binlog.000001",
        });
        assert!(wire.contains("MASTER_LOG_FILE = 'binlog.000001', MASTER_LOG_POS = 4"));
    }
}
