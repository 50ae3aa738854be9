//! What server engines share: a server is either a private sandbox dbduel runs or someone
//! else's target; restarting either (cold where the page cache is dbduel's to drop), its pid,
//! its log, and letting it go at the end.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::target::{self, Target};
use crate::engine::{EngineError, RestartOutcome, Result};
use crate::sandbox::Sandbox;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A sandbox failure as an engine error; a server that is not installed is `missing`.
pub(crate) fn sandbox_err(e: crate::sandbox::SandboxError) -> EngineError {
    let kind = match e {
        crate::sandbox::SandboxError::Missing { .. } => "missing",
        _ => "sandbox",
    };
    EngineError::new(kind, e.to_string())
}

pub use crate::engine::{MARKER, MARKER_NOTE};

/// Where a server engine's server is.
pub enum Server {
    /// A private server dbduel started.
    Sandbox(Box<Mutex<Sandbox>>),
    /// Someone else's server.
    External(Target),
}

/// How a server engine reaches a freshly started sandbox: the superuser over loopback TCP,
/// with the sandbox's secret as its password.
pub struct Provisioned {
    pub server: Server,
    pub reach: Target,
    /// The server's data directory when it is readable here.
    pub datadir: Option<PathBuf>,
}

impl Server {
    /// Start a sandbox for `recipe` in `dir` (or take the contender's target), and say how
    /// to reach it: for a sandbox as `superuser` on 127.0.0.1 with the sandbox's secret.
    pub fn provision(
        target: Option<&Target>,
        recipe: Box<dyn crate::sandbox::Recipe>,
        contender: &str,
        dir: &Path,
        scheme: &str,
        superuser: &str,
    ) -> Result<Provisioned> {
        if let Some(t) = target {
            return Ok(Provisioned {
                server: Server::External(t.clone()),
                reach: t.clone(),
                datadir: None,
            });
        }
        let mut sandbox =
            Sandbox::create(recipe, contender, &dir.join("sandbox")).map_err(sandbox_err)?;
        if let Err(e) = sandbox.start() {
            // Nothing of a server that never served stays behind: its private directory
            // (outside the run's) would be found by no one. The error holds its log's tail.
            let _ = sandbox.destroy();
            return Err(sandbox_err(e));
        }
        let secret = sandbox.secret().map_err(sandbox_err)?;
        let reach = Target {
            scheme: scheme.into(),
            user: superuser.into(),
            host: "127.0.0.1".into(),
            port: sandbox.layout.port,
            database: None,
            password: Some(target::Secret::new(secret.expose())),
            restart_command: None,
            allow_cleartext: false,
        };
        let datadir = Some(sandbox.layout.datadir.clone());
        Ok(Provisioned {
            server: Server::Sandbox(Box::new(Mutex::new(sandbox))),
            reach,
            datadir,
        })
    }

    pub fn sandbox(&self) -> Option<MutexGuard<'_, Sandbox>> {
        match self {
            Server::Sandbox(m) => Some(m.lock().unwrap_or_else(|p| p.into_inner())),
            Server::External(_) => None,
        }
    }

    /// Turn a sandbox's device profile on or off; a target's storage is its own.
    pub fn set_throttle(&self, on: bool) -> Result<bool> {
        match self.sandbox() {
            Some(sb) => sb.set_throttle(on).map_err(sandbox_err),
            None => Ok(false),
        }
    }

    pub fn is_external(&self) -> bool {
        matches!(self, Server::External(_))
    }

    /// Restart the server. A sandbox is stopped, its files evicted from the page cache when
    /// `cold` (and verified), and started again; a target is restarted by its
    /// `restart_command` and waited for (`answers` says when it is back). `what_resets` names
    /// the server's own cache a restart empties.
    pub fn restart(
        &self,
        cold: bool,
        datadir: Option<&Path>,
        what_resets: &str,
        answers: impl Fn() -> bool,
    ) -> Result<RestartOutcome> {
        let start = Instant::now();
        match self {
            Server::Sandbox(m) => {
                let mut sb = m.lock().unwrap_or_else(|p| p.into_inner());
                sb.stop().map_err(sandbox_err)?;
                let files = datadir.map(crate::oscache::files_under).unwrap_or_default();
                let (cold_ok, cache, resident) =
                    crate::oscache::drop_for_restart(&files, cold && datadir.is_some());
                sb.start().map_err(sandbox_err)?;
                Ok(RestartOutcome {
                    cold: cold_ok,
                    cache: format!("server restarted ({what_resets}); {cache}"),
                    resident_bytes: resident,
                    elapsed_s: start.elapsed().as_secs_f64(),
                })
            }
            Server::External(t) => {
                let Some(cmd) = &t.restart_command else {
                    return Err(EngineError::new(
                        "unsupported",
                        format!(
                            "{} is an external server and the contender gives no restart_command",
                            t.display()
                        ),
                    ));
                };
                target::run_restart(cmd).map_err(|m| EngineError::new("restart", m))?;
                let deadline = Instant::now() + Duration::from_secs(120);
                while !answers() {
                    if crate::stop::requested() {
                        return Err(EngineError::new("restart", crate::stop::INTERRUPTED));
                    }
                    if Instant::now() > deadline {
                        return Err(EngineError::new(
                            "restart",
                            format!(
                                "{} did not answer within 120 s of restart_command",
                                t.display()
                            ),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Ok(RestartOutcome {
                    cold: false,
                    cache: "warm-restart: external server restarted by restart_command; its page cache is not dbduel's to drop".into(),
                    resident_bytes: None,
                    elapsed_s: start.elapsed().as_secs_f64(),
                })
            }
        }
    }

    /// How the sandbox's server ended, if it has.
    pub fn gone(&self) -> Option<String> {
        self.sandbox().and_then(|mut s| s.exited())
    }

    pub fn pid(&self) -> Option<i32> {
        self.sandbox().and_then(|s| s.pid())
    }

    pub fn log(&self) -> Option<PathBuf> {
        self.sandbox().map(|s| s.layout.log_file.clone())
    }

    /// Stop a sandbox and remove it (or leave it running with `keep`); leave a target as it
    /// is (the study's database stays, marked).
    pub fn finish(self, keep: bool) -> Result<()> {
        match self {
            Server::Sandbox(m) => m
                .into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .finish(keep)
                .map_err(sandbox_err),
            Server::External(_) => Ok(()),
        }
    }

    /// Refusal for a database that exists without dbduel's marker.
    pub fn not_ours(db: &str, t: &Target) -> EngineError {
        EngineError::new(
            "refused",
            format!(
                "database `{db}` exists on {} and was not created by dbduel (no {MARKER} table); dbduel will not touch it — name another database in the target",
                t.display()
            ),
        )
    }
}

/// Claim the study's database with `claim`, allowing for another dbduel creating it at this
/// moment (the shards of one run start together): a database caught between its creation and
/// its marker, or a create that lost the race, is looked at again for up to 2 s before the
/// error stands.
pub fn claim_racing(
    mut claim: impl FnMut() -> crate::engine::Result<()>,
) -> crate::engine::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match claim() {
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r => return r,
        }
    }
}

/// A contender's `server = { ... }` table: extra settings for its private server, checked
/// and written as the server's configuration file expects (`on_off` spells booleans).
/// Names are letters, digits, `_` and the characters in `punct`.
pub fn extra_settings(
    table: &toml::Table,
    punct: &str,
    on_off: (&str, &str),
) -> std::result::Result<Vec<(String, String)>, DecodeError> {
    let mut out = Vec::with_capacity(table.len());
    for (k, v) in table {
        let name_ok = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || punct.contains(c));
        match setting_value(v, on_off) {
            Some(v) if name_ok && !v.contains('\n') => out.push((k.clone(), v)),
            _ => {
                return Err(DecodeError::at(
                    KeyPath::root().key("server").key(k),
                    format!(
                        "server settings are names (letters, digits, _ and `{punct}`) with a one-line string, number or boolean"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// A setting's value as a configuration file writes it: strings as they are, numbers in
/// decimal, booleans as `on_off` spells them; `None` for arrays, tables and dates.
pub fn setting_value(v: &toml::Value, on_off: (&str, &str)) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { on_off.0 } else { on_off.1 }.to_string()),
        _ => None,
    }
}

/// With a target the server's own configuration applies: refuse the first of `options`
/// (name, given?) that configures a private server, rather than ignore it silently.
pub fn refuse_sandbox_options(options: &[(&str, bool)]) -> std::result::Result<(), DecodeError> {
    match options.iter().find(|(_, set)| *set) {
        Some((k, _)) => Err(DecodeError::at(
            KeyPath::root().key(k),
            format!(
                "{k} configures a private server; with a target the server's own configuration applies"
            ),
        )),
        None => Ok(()),
    }
}

/// The name of the lease on database `db` (MariaDB's `GET_LOCK` takes at most 64
/// characters: a longer one is hashed, as PostgreSQL's advisory key always is).
pub fn lease_name(db: &str) -> String {
    let name = format!("dbduel:{db}");
    if name.len() <= 64 {
        name
    } else {
        format!("dbduel:{:016x}", lease_key(db))
    }
}

/// The 64-bit key of the lease on database `db` (PostgreSQL's advisory lock): FNV-1a of its
/// name, stable across versions and machines as every run must agree on it.
pub fn lease_key(db: &str) -> i64 {
    let h = format!("dbduel:{db}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    i64::from_ne_bytes(h.to_ne_bytes())
}

/// Refusal for a database another dbduel run holds the lease of on target `t`; `holder`
/// says who, when the server tells.
pub fn lease_refused(db: &str, t: &Target, holder: Option<String>) -> EngineError {
    let who = holder.map(|h| format!(" ({h})")).unwrap_or_default();
    EngineError::new(
        "busy",
        format!(
            "database `{db}` on {} is in use by another dbduel run{who}: two runs of one study on one server would drop each other's tables; wait for that run to end, or give this one another study name (`[study] name`, which names the database), or run both as shards of one run (`--shard I/N --run-group G`)",
            t.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_fit_get_lock_and_differ_by_database() {
        assert_eq!(lease_name("dbduel_shootout"), "dbduel:dbduel_shootout");
        let long = "d".repeat(63);
        assert!(lease_name(&long).len() <= 64);
        assert_ne!(lease_name(&long), lease_name(&"d".repeat(62)));
        assert_ne!(lease_key("dbduel_a_b"), lease_key("dbduel_ab"));
    }
}
