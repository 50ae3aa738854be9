//! The run's lease on the study's database on a MariaDB/MySQL target: `GET_LOCK` held on a
//! connection of its own for as long as the engine is open (the server releases it when that
//! connection closes, however dbduel ends), so a second run of the same study on the same
//! server is refused instead of dropping the first's tables.

use crate::engine::Result;
use crate::engine::target::Target;
use crate::engines::mariadb::{conn_opts, crate_conn, my_err};
use crate::engines::server::{lease_name, lease_refused};
use mysql::prelude::Queryable;

/// A held lease: the connection that holds the lock.
pub struct Lease {
    _conn: mysql::Conn,
}

impl Lease {
    /// Take the lease on `db` at `reach`, or say who holds it.
    pub fn take(reach: &Target, db: &str, timeout_s: u64) -> Result<Lease> {
        let name = lease_name(db);
        let mut conn = crate_conn(conn_opts(reach, None, timeout_s))?;
        let got: Option<Option<i64>> = conn
            .exec_first("SELECT GET_LOCK(?, 0)", (&name,))
            .map_err(my_err)?;
        if got.flatten() == Some(1) {
            return Ok(Lease { _conn: conn });
        }
        Err(lease_refused(db, reach, holder(&mut conn, &name)))
    }
}

/// Who holds lock `name`, as far as this account may see: the connection's id, user and host.
fn holder(conn: &mut mysql::Conn, name: &str) -> Option<String> {
    let id: u64 = conn
        .exec_first("SELECT IS_USED_LOCK(?)", (name,))
        .ok()
        .flatten()
        .flatten()?;
    let who: Option<(String, String)> = conn
        .exec_first(
            "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = ?",
            (id,),
        )
        .ok()
        .flatten();
    Some(match who {
        Some((user, host)) => format!("connection {id} of {user}@{host}"),
        None => format!("connection {id}"),
    })
}
