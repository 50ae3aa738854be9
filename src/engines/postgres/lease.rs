//! The run's lease on the study's database on a PostgreSQL target: an advisory lock
//! (`pg_try_advisory_lock`) held on a connection of its own, to the study's database, for as
//! long as the engine is open (the server releases it when that connection closes, however
//! dbduel ends), so a second run of the same study on the same server is refused instead of
//! dropping the first's tables.

use crate::engine::Result;
use crate::engine::target::Target;
use crate::engines::server::{lease_key, lease_refused};

/// A held lease: the connection that holds the lock.
pub struct Lease {
    _client: postgres::Client,
}

impl Lease {
    /// Take the lease on `db` at `reach`, or say who holds it.
    pub fn take(reach: &Target, db: &str) -> Result<Lease> {
        let key = lease_key(db);
        let mut client = super::client_for(reach, db)?;
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .map_err(super::pg_err)?
            .get(0);
        if got {
            return Ok(Lease { _client: client });
        }
        Err(lease_refused(db, reach, holder(&mut client, key)))
    }
}

/// Who holds advisory lock `key` in this database, as far as this role may see: the
/// backend's pid, role and client address.
fn holder(client: &mut postgres::Client, key: i64) -> Option<String> {
    // A bigint key is shown as classid (high 32 bits) and objid (low 32 bits).
    let row = client
        .query_opt(
            "SELECT l.pid, coalesce(a.usename::text, ''), coalesce(host(a.client_addr), 'local') \
             FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND ((l.classid::bigint << 32) | l.objid::bigint) = $1 LIMIT 1",
            &[&key],
        )
        .ok()??;
    let pid: i32 = row.get(0);
    let user: String = row.get(1);
    let addr: String = row.get(2);
    Some(if user.is_empty() {
        format!("backend {pid}")
    } else {
        format!("backend {pid} of {user} from {addr}")
    })
}
