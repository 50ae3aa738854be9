//! What differs between the servers of the MySQL protocol this engine drives: MariaDB itself
//! (no flavor), or another server a family describes by a [`Flavor`] — its name, the storage
//! engines and schema-change algorithms it has, and the sandbox recipe that runs it — and
//! errors that name it. The sessions, loads, footprints, counters and database claim are the
//! protocol's and shared.

use crate::engine::{Changes, EngineError, Overlap, Result, Session, StmtId, Value};
use crate::engines::mariadb::recipe::MariadbRecipe;
use crate::engines::mariadb::replica_dialect::ReplicaDialect;
use crate::engines::versions::FamilyBinaries;
use crate::sandbox::Recipe;

/// A MySQL-protocol server other than MariaDB, as the engine asks about it.
pub trait Flavor: std::fmt::Debug + Send + Sync {
    /// The engine's name in study files and manifests (`mysql`).
    fn name(&self) -> &'static str;
    /// Does the server have MariaDB's Aria storage engine (and its page cache setting)?
    fn has_aria(&self) -> bool {
        false
    }
    /// Does it have `ALTER TABLE ... RENAME COLUMN` (else a rename is a `CHANGE COLUMN`)?
    fn renames_columns(&self) -> bool {
        true
    }
    /// The `ALTER TABLE` algorithms it accepts, cheapest first.
    fn ddl_algorithms(&self) -> &'static [&'static str];
    /// The sandbox recipe that runs this server with the settings `base` holds (those the
    /// contender's options gave, as MariaDB's recipe would have written them).
    fn recipe(&'static self, base: &MariadbRecipe) -> Box<dyn Recipe>;
    /// The family's binaries: where its versions come from (the server cache, a basedir).
    fn binaries(&self) -> &'static FamilyBinaries;
    /// How a replica of this server (the same server) replicates.
    fn replica_dialect(&'static self) -> Box<dyn ReplicaDialect>;
    /// A primary's settings when it has replicas, beside its binary log (GTIDs on, and what
    /// lets its replicas apply in parallel).
    fn primary_settings(&self) -> Vec<(&'static str, &'static str)>;
    /// The SQL expression of the GTID set the server has executed.
    fn executed_gtids(&self) -> &'static str;
    /// The primary's group-commit wait, (count, microseconds) variables, if it has one.
    fn commit_wait(&self) -> Option<(&'static str, &'static str)>;
}

/// The protocol layer's prefix of an error (the wire client's and the `mysql` crate's, for
/// MariaDB).
const PROTOCOL_PREFIX: &str = "mariadb: ";

/// `e` naming the engine `family` whose server it came from, instead of MariaDB.
pub fn named(family: &'static str, mut e: EngineError) -> EngineError {
    if family != "mariadb"
        && let Some(rest) = e.message.strip_prefix(PROTOCOL_PREFIX)
    {
        e.message = format!("{family}: {rest}");
    }
    e
}

/// A benchmark session whose errors name `family`: MariaDB's as they are, another family's
/// through [`Named`].
pub fn named_session(family: &'static str, s: Box<dyn Session>) -> Box<dyn Session> {
    if family == "mariadb" {
        s
    } else {
        let mut s = s;
        let fd = s.overlap().map(|o| o.fd());
        Box::new(Named {
            family,
            inner: s,
            fd,
        })
    }
}

/// A session of another server of the protocol: the wire client's errors, worded for
/// MariaDB, name the family instead.
struct Named {
    family: &'static str,
    inner: Box<dyn Session>,
    /// The inner session's socket, when it can share a thread.
    fd: Option<std::os::fd::RawFd>,
}

impl Session for Named {
    fn statement_timeout(&mut self, limit: Option<std::time::Duration>) -> Result<bool> {
        self.inner
            .statement_timeout(limit)
            .map_err(|e| named(self.family, e))
    }

    fn execute(&mut self, sql: &str) -> Result<u64> {
        self.inner.execute(sql).map_err(|e| named(self.family, e))
    }

    fn query_i64(&mut self, sql: &str) -> Result<i64> {
        self.inner.query_i64(sql).map_err(|e| named(self.family, e))
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId> {
        self.inner.prepare(sql).map_err(|e| named(self.family, e))
    }

    fn run(&mut self, stmt: StmtId, params: &[Value]) -> Result<u64> {
        self.inner
            .run(stmt, params)
            .map_err(|e| named(self.family, e))
    }

    fn run_rows(&mut self, stmt: StmtId, params: &[Value], out: &mut Vec<Value>) -> Result<u64> {
        self.inner
            .run_rows(stmt, params, out)
            .map_err(|e| named(self.family, e))
    }

    fn execute_counted(&mut self, sql: &str) -> Result<Changes> {
        self.inner
            .execute_counted(sql)
            .map_err(|e| named(self.family, e))
    }

    fn overlap(&mut self) -> Option<&mut dyn Overlap> {
        if self.fd.is_some() { Some(self) } else { None }
    }
}

impl Named {
    /// The inner session's split form; `Named` lends its own only when the inner one has it.
    fn inner_overlap(&mut self) -> &mut dyn Overlap {
        self.inner
            .overlap()
            .expect("lent out only when it overlaps")
    }
}

impl Overlap for Named {
    fn fd(&self) -> std::os::fd::RawFd {
        self.fd.expect("lent out only with a socket")
    }

    fn send_run(&mut self, stmt: StmtId, params: &[Value]) -> Result<()> {
        let family = self.family;
        self.inner_overlap()
            .send_run(stmt, params)
            .map_err(|e| named(family, e))
    }

    fn send_text(&mut self, sql: &str) -> Result<()> {
        let family = self.family;
        self.inner_overlap()
            .send_text(sql)
            .map_err(|e| named(family, e))
    }

    fn try_finish(&mut self) -> Option<Result<u64>> {
        let family = self.family;
        self.inner_overlap()
            .try_finish()
            .map(|r| r.map_err(|e| named(family, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_familys_errors_name_it_and_mariadbs_stay() {
        let e = || EngineError::new("constraint", "mariadb: ERROR 1062 (23000): Duplicate");
        assert_eq!(
            named("mysql", e()).message,
            "mysql: ERROR 1062 (23000): Duplicate"
        );
        assert_eq!(named("mariadb", e()).message, e().message);
        let other = EngineError::new("usage", "unknown prepared statement");
        assert_eq!(named("mysql", other.clone()).message, other.message);
    }
}
