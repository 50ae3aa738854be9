//! A standby's data directory: a copy of the running primary's, made between `pg_backup_start`
//! and `pg_backup_stop` (PostgreSQL's low-level base backup), read beneath the primary's
//! sandbox with no link followed and written beneath the standby's. The server cache's
//! PostgreSQL ships no `pg_basebackup`, and one way serves every version, the system's too.
//! The standby then streams from the backup's start, which the primary keeps by
//! `wal_keep_size` (topology.rs).

use crate::engines::postgres::recipe::SUPERUSER;
use crate::sandbox::beneath::Take;
use crate::sandbox::secret::SandboxSecret;
use crate::sandbox::{Layout, Result, SandboxError};
use std::path::Path;
use std::time::Duration;

/// The primary a standby is copied from: where it listens and where its files are.
#[derive(Debug, Clone)]
pub struct Source {
    pub port: u16,
    pub layout: Layout,
    /// The standby's name, as the primary knows it (`application_name`, which
    /// `synchronous_standby_names` lists).
    pub standby: String,
}

/// What a base backup leaves out of a data directory, as `pg_basebackup` does (PostgreSQL's
/// "Backing Up the Data Directory"): the running server's own files, and the contents of the
/// directories it fills anew at a start. `pg_wal`'s segments come by streaming.
fn take(p: &Path) -> Take {
    const EMPTIED: &[&str] = &[
        "pg_dynshmem",
        "pg_notify",
        "pg_replslot",
        "pg_serial",
        "pg_snapshots",
        "pg_stat_tmp",
        "pg_subtrans",
    ];
    const LEFT_OUT: &[&str] = &[
        "postmaster.pid",
        "postmaster.opts",
        "postgresql.auto.conf.tmp",
        "current_logfiles.tmp",
        "backup_label",
        "backup_label.old",
        "tablespace_map",
        "standby.signal",
        "recovery.signal",
    ];
    let parts: Vec<&str> = p.iter().filter_map(|c| c.to_str()).collect();
    let name = parts.last().copied().unwrap_or_default();
    match parts.as_slice() {
        [top] if EMPTIED.contains(top) => Take::Empty,
        [top] if LEFT_OUT.contains(top) => Take::Skip,
        ["pg_wal", "archive_status" | "summaries"] => Take::Empty,
        ["pg_wal", _] => Take::Skip,
        _ if name == "pg_internal.init" || name.starts_with("pgsql_tmp") => Take::Skip,
        _ => Take::All,
    }
}

/// Copy the primary's data directory into `standby`'s, leaving it a standby's: the backup's
/// label (where its recovery starts) and `standby.signal`. Returns the bytes copied.
pub fn copy(source: &Source, secret: &SandboxSecret, standby: &Layout) -> Result<u64> {
    let failed = |detail: String| SandboxError::Failed {
        what: format!(
            "a base backup of 127.0.0.1:{} into {}",
            source.port,
            standby.datadir.display()
        ),
        detail,
    };
    let mut c = postgres::Config::new()
        .host("127.0.0.1")
        .port(source.port)
        .user(SUPERUSER)
        .password(secret.expose())
        .dbname("postgres")
        .connect_timeout(Duration::from_secs(10))
        .connect(postgres::NoTls)
        .map_err(|e| failed(format!("cannot connect to the primary: {e}")))?;
    // A checkpoint now (fast), so the copy's recovery starts here; the session holds the
    // backup open until pg_backup_stop (closing it ends the backup).
    c.execute("SELECT pg_backup_start('dbduel standby', true)", &[])
        .map_err(|e| failed(format!("pg_backup_start: {e}")))?;
    let (from, to) = (&source.layout.datadir, &standby.datadir);
    let theirs = source.layout.beneath(from)?;
    let ours = standby.beneath(to)?;
    let owner = standby.owner.as_ref();
    let uid = source.layout.owner.as_ref().map(|u| u.uid);
    let bytes = ours.copy_tree_from(&theirs, from, to, owner, uid, &take)?;
    let row = c
        .query_one(
            "SELECT labelfile, spcmapfile FROM pg_backup_stop(wait_for_archive => false)",
            &[],
        )
        .map_err(|e| failed(format!("pg_backup_stop: {e}")))?;
    let (label, map): (String, String) = (row.get(0), row.get(1));
    ours.write_new(&to.join("backup_label"), label.as_bytes(), 0o600, owner)?;
    if !map.is_empty() {
        ours.write_new(&to.join("tablespace_map"), map.as_bytes(), 0o600, owner)?;
    }
    ours.write_new(&to.join("standby.signal"), b"", 0o600, owner)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_leaves_out_what_pg_basebackup_does() {
        let t = |p: &str| take(Path::new(p));
        assert_eq!(t("base/5/1259"), Take::All);
        assert_eq!(t("global/pg_control"), Take::All);
        assert_eq!(t("postgresql.auto.conf"), Take::All);
        assert_eq!(t("pg_wal"), Take::All);
        assert_eq!(t("pg_wal/000000010000000000000001"), Take::Skip);
        assert_eq!(t("pg_wal/archive_status"), Take::Empty);
        assert_eq!(t("pg_stat_tmp"), Take::Empty);
        assert_eq!(t("pg_replslot"), Take::Empty);
        assert_eq!(t("postmaster.pid"), Take::Skip);
        assert_eq!(t("backup_label"), Take::Skip);
        assert_eq!(t("global/pg_internal.init"), Take::Skip);
        assert_eq!(t("base/pgsql_tmp"), Take::Skip);
        // Only at the top: a table's file of the same name is data.
        assert_eq!(t("base/5/postmaster.pid"), Take::All);
    }
}
