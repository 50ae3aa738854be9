//! What the families' topologies keep of their members (a replication topology's replicas,
//! a cluster's other nodes): each member's server and how to reach it, and one
//! administrative connection per member, opened on first use and kept.

use crate::engine::replication::ReplicaFacts;
use crate::engine::target::Target;
use crate::engine::{EngineError, Result};
use crate::engines::server::Server;
use std::collections::BTreeMap;

/// A replica given by target: someone else's server, reached as the study says.
pub(crate) fn external_member(name: &str, target: &Target) -> Member {
    Member {
        name: name.to_string(),
        server: Server::External(Box::new(target.clone())),
        reach: target.clone(),
    }
}

/// A replica's server and how to reach it.
pub(crate) struct Member {
    pub name: String,
    pub server: Server,
    pub reach: Target,
}

/// What both engines' topologies keep of their members: the replicas in order, and one
/// administrative connection `C` per member (the primary first), opened on first use and
/// kept, so that watching a replica many times a second does not connect each time.
pub(crate) struct Members<C> {
    pub primary: Target,
    pub list: Vec<Member>,
    admins: Vec<std::sync::Mutex<Option<C>>>,
}

impl<C> Members<C> {
    pub fn new(primary: Target, list: Vec<Member>) -> Self {
        Members {
            primary,
            admins: (0..=list.len())
                .map(|_| std::sync::Mutex::new(None))
                .collect(),
            list,
        }
    }

    pub fn get(&self, i: usize) -> Result<&Member> {
        self.list
            .get(i)
            .ok_or_else(|| EngineError::new("usage", format!("no replica number {i}")))
    }

    pub fn name(&self, i: usize) -> String {
        self.list
            .get(i)
            .map_or_else(|| format!("#{i}"), |m| m.name.clone())
    }

    /// Replica `i`'s facts from its settings as read back, with its target when it is
    /// given by one.
    pub fn facts(
        &self,
        i: usize,
        mut settings: BTreeMap<String, String>,
        version: String,
    ) -> Result<ReplicaFacts> {
        let m = self.get(i)?;
        if let Server::External(t) = &m.server {
            settings.insert("target".into(), t.display());
        }
        Ok(ReplicaFacts {
            name: m.name.clone(),
            settings,
            version,
        })
    }

    /// Where member `member` is (the primary for `None`), without a password.
    pub fn display(&self, member: Option<usize>) -> String {
        match member {
            None => self.primary.display(),
            Some(i) => self
                .list
                .get(i)
                .map_or_else(|| format!("#{i}"), |m| m.reach.display()),
        }
    }

    pub fn pid(&self, i: usize) -> Option<i32> {
        self.list.get(i)?.server.pid()
    }

    pub fn gone_of(&self, i: usize) -> Option<String> {
        self.list.get(i)?.server.gone()
    }

    /// The first replica whose server has died, and how.
    pub fn gone(&self) -> Option<String> {
        self.list.iter().find_map(|m| {
            m.server
                .gone()
                .map(|how| format!("replica {}: {how}", m.name))
        })
    }

    /// Stop every replica's server and remove its sandbox (or keep them with `keep`).
    pub fn finish(self, keep: bool) -> Result<()> {
        let mut first_err = None;
        for m in self.list {
            if let Err(e) = m.server.finish(keep) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Run `f` on the member's connection (the primary's for `None`), opening it with
    /// `connect` when there is none; a connection that failed is dropped and the next call
    /// opens a new one. `err` turns the driver's error into the engine's.
    pub fn admin<T, E>(
        &self,
        member: Option<usize>,
        connect: impl FnOnce(&Target) -> Result<C>,
        f: impl FnOnce(&mut C) -> std::result::Result<T, E>,
        err: impl FnOnce(E) -> EngineError,
    ) -> Result<T> {
        let (reach, slot) = match member {
            None => (&self.primary, &self.admins[0]),
            Some(i) => (&self.get(i)?.reach, &self.admins[i + 1]),
        };
        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
        let conn = match guard.as_mut() {
            Some(c) => c,
            None => guard.insert(connect(reach)?),
        };
        let r = f(conn);
        if r.is_err() {
            *guard = None;
        }
        r.map_err(err)
    }
}
