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
    External(Box<Target>),
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
                server: Server::External(Box::new(t.clone())),
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
            // A sandbox that speaks TLS is reached under it, its certificate checked in full
            // against the CA made for it.
            tls: match sandbox.client_ca() {
                Some(ca) => target::TlsSettings {
                    mode: target::TlsMode::VerifyFull,
                    ca: Some(target::RootCert::File(ca)),
                    ..Default::default()
                },
                None => Default::default(),
            },
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

    /// Kill a sandbox's server as a process crash would (SIGKILL to its process group) or,
    /// `Fault::Power`, with what its filesystem held unsynced (see
    /// [`power_layer`](Self::power_layer)); start it again, and time it from the kill until
    /// it accepts a connection. The log lines the server wrote meanwhile that speak of its
    /// recovery come back with it. A target is never killed: dbduel did not start it.
    pub fn crash(&self, fault: crate::engine::Fault) -> Result<crate::engine::CrashOutcome> {
        let Server::Sandbox(m) = self else {
            return Err(EngineError::new(
                "unsupported",
                "the server is someone else's (a target): dbduel kills only a server it started",
            ));
        };
        let mut sb = m.lock().unwrap_or_else(|p| p.into_inner());
        let log = sb.layout.log_file.clone();
        let logged = std::fs::metadata(&log).map_or(0, |m| m.len());
        let killed = Instant::now();
        let unsynced_lost = match fault {
            f if f.cuts_power() => Some(lose_power(&mut sb)?),
            _ => {
                sb.crash().map_err(sandbox_err)?;
                None
            }
        };
        sb.start().map_err(sandbox_err)?;
        let accepting_s = killed.elapsed().as_secs_f64();
        Ok(crate::engine::CrashOutcome {
            accepting_s,
            recovery_log: recovery_lines(&log, logged),
            unsynced_lost,
        })
    }

    /// Serve a sandbox's data directory through the filesystem that forgets unsynced writes
    /// (`on`), or from its own filesystem again; the server is stopped cleanly and started
    /// again either way. A target's storage is its own.
    pub fn power_layer(&self, on: Option<crate::engine::Fault>) -> Result<()> {
        let Some(mut sb) = self.sandbox() else {
            return Err(EngineError::new(
                "unsupported",
                "the server is someone else's (a target): dbduel cuts the power only of a server it started",
            ));
        };
        #[cfg(feature = "servers")]
        if let Some(f) = on {
            return sb.power_on(f.strict_names()).map_err(sandbox_err);
        }
        #[cfg(not(feature = "servers"))]
        if on.is_some() {
            return Err(EngineError::new(
                "unsupported",
                "this build has no server engines",
            ));
        }
        sb.restart().map_err(sandbox_err)
    }

    /// Kill a sandbox's server as a process crash would and leave it dead (a failover's
    /// primary). A target is never killed.
    pub fn kill(&self) -> Result<()> {
        match self.sandbox() {
            Some(mut sb) => sb.crash().map_err(sandbox_err),
            None => Err(EngineError::new(
                "unsupported",
                "the server is someone else's (a target): dbduel kills only a server it started",
            )),
        }
    }

    /// Kill the sandbox's server — the primary of `topology` — and promote the replica that
    /// received the most (see [`replication::fail_over`](crate::engine::replication::fail_over)).
    pub fn fail_over(
        &self,
        topology: Option<&dyn crate::engine::replication::Replicated>,
    ) -> Result<crate::engine::FailoverOutcome> {
        let Some(topology) = topology.filter(|_| !self.is_external()) else {
            return Err(EngineError::new(
                "unsupported",
                "only a primary dbduel started, with replicas, fails over",
            ));
        };
        let killed = Instant::now();
        self.kill()?;
        crate::engine::replication::fail_over(topology, killed)
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

#[cfg(feature = "servers")]
fn lose_power(sb: &mut Sandbox) -> Result<crate::engine::UnsyncedLost> {
    Ok(sb.lose_power().map_err(sandbox_err)?.into())
}

#[cfg(not(feature = "servers"))]
fn lose_power(_: &mut Sandbox) -> Result<crate::engine::UnsyncedLost> {
    Err(EngineError::new(
        "unsupported",
        "this build has no server engines",
    ))
}

/// The lines of the server log `log` from byte `from` on that tell of a crash recovery
/// (InnoDB's "crash recovery", RocksDB's "recover"/"WAL", PostgreSQL's "redo" and "not
/// properly shut down"), at most 20, as the server wrote them.
fn recovery_lines(log: &Path, from: u64) -> Vec<String> {
    let text = crate::sandbox::log_since(log, from);
    const SAYS: [&str; 5] = [
        "recover",
        "redo",
        "not properly shut down",
        "wal",
        "interrupted",
    ];
    text.lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            SAYS.iter().any(|w| l.contains(w))
        })
        .take(20)
        .map(|l| l.chars().take(300).collect())
        .collect()
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

/// What a family's configuration file takes as extra settings, and which settings dbduel
/// owns there: the accounts, privileges, files and paths, listeners, plugins, TLS,
/// replication credentials and commands that keep a private server private. A study that
/// names an owned setting is refused when it is checked, so no study file, `--set` or run
/// manifest (`rerun` reads one as a study) can undo what dbduel set.
pub struct SettingRules {
    /// The characters besides letters, digits and `_` a name may hold.
    pub punct: &'static str,
    /// How the configuration file spells booleans (on, off).
    pub on_off: (&'static str, &'static str),
    /// The settings dbduel owns, each with what it guards; a name ending in `*` owns every
    /// name it begins. Names are lower case with `_`, as [`SettingRules::canonical`] makes them.
    pub owned: &'static [(&'static str, Guards)],
    /// Prefixes the server strips from an option's name before it looks the name up
    /// (MariaDB's and MySQL's `loose-`, `skip-`, `enable-`, …), in canonical form.
    pub option_prefixes: &'static [&'static str],
    /// Does the server take a unique prefix of an option's name for the name? MariaDB and
    /// MySQL do, so `secure_file` is `secure_file_priv` to them. Server options that are
    /// themselves a prefix of an owned name are listed in `exact_names`.
    pub abbreviations: bool,
    /// Options that are whole names of their own although an owned name begins with them
    /// (`general_log` beside `general_log_file`).
    pub exact_names: &'static [&'static str],
}

/// What an owned setting guards, for the refusal's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guards {
    /// The accounts, their authentication and their privileges.
    Accounts,
    /// Where the server reads and writes files: every path is the sandbox's.
    Files,
    /// A file the server keeps in its data directory: a plain name is taken, a path is not.
    FileName,
    /// Where the server listens: loopback and the sandbox's socket only.
    Listeners,
    /// Code the server loads.
    Plugins,
    /// TLS keys, certificates and modes.
    Tls,
    /// Replication and cluster membership, and their credentials.
    Replication,
    /// Commands the server runs.
    Commands,
}

impl Guards {
    fn why(self) -> &'static str {
        match self {
            Guards::Accounts => "it sets the server's accounts, authentication or privileges",
            Guards::Files => {
                "it names a file or directory, and every path of a sandbox is dbduel's"
            }
            Guards::FileName => {
                "a path there would put the server's files outside its sandbox (a plain file name, kept in the data directory, is taken)"
            }
            Guards::Listeners => {
                "it sets where the server listens (a sandbox listens on loopback and its own socket only)"
            }
            Guards::Plugins => "it loads code into the server",
            Guards::Tls => "it sets the server's TLS",
            Guards::Replication => {
                "it sets replication or cluster membership and their credentials"
            }
            Guards::Commands => "it makes the server run a command",
        }
    }
}

impl SettingRules {
    /// A name as the server compares it: lower case, `-` as `_`.
    pub fn canonical(name: &str) -> String {
        name.to_ascii_lowercase().replace('-', "_")
    }

    /// The owned setting `name` reaches, if any, and what it guards: the name itself, the
    /// name with the server's option prefixes taken off, or (where the server abbreviates)
    /// an owned name it is a prefix of.
    pub fn owner_of(&self, name: &str) -> Option<(&'static str, Guards)> {
        let mut n = Self::canonical(name);
        loop {
            if let Some(hit) = self.owned_match(&n) {
                return Some(hit);
            }
            match self.option_prefixes.iter().find(|p| n.starts_with(*p)) {
                Some(p) if n.len() > p.len() => n = n[p.len()..].to_string(),
                _ => return None,
            }
        }
    }

    fn owned_match(&self, n: &str) -> Option<(&'static str, Guards)> {
        let abbreviates = self.abbreviations && !self.exact_names.contains(&n);
        self.owned
            .iter()
            .copied()
            .find(|(owned, _)| match owned.strip_suffix('*') {
                Some(stem) => n.starts_with(stem) || (abbreviates && stem.starts_with(n)),
                None => n == *owned || (abbreviates && owned.starts_with(n)),
            })
    }
}

/// "`name` is a setting dbduel owns", saying how when the server reads it as `owned`.
pub fn owned_words(name: &str, owned: &str) -> String {
    if let Some(stem) = owned.strip_suffix('*')
        && SettingRules::canonical(name).starts_with(stem)
    {
        return format!("{name} is a setting dbduel owns (every {owned} is)");
    }
    if SettingRules::canonical(name) == owned {
        format!("{name} is a setting dbduel owns")
    } else {
        format!("{name} is {owned} to the server, a setting dbduel owns")
    }
}

/// A contender's `server = { ... }` table: extra settings for its private server, checked
/// against `rules` and written as the server's configuration file expects. Names are
/// letters, digits, `_` and the rules' punctuation, never a setting dbduel owns.
pub fn extra_settings(
    table: &toml::Table,
    rules: &SettingRules,
) -> std::result::Result<Vec<(String, String)>, DecodeError> {
    let punct = rules.punct;
    let mut out = Vec::with_capacity(table.len());
    for (k, v) in table {
        let at = || KeyPath::root().key("server").key(k);
        let name_ok = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || punct.contains(c));
        let value = setting_value(v, rules.on_off);
        if name_ok {
            let plain_name = |v: &str| {
                !v.is_empty()
                    && !v.starts_with('.')
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            };
            let owner = rules.owner_of(k).filter(|(_, g)| {
                *g != Guards::FileName || !value.as_deref().is_some_and(plain_name)
            });
            if let Some((owned, guards)) = owner {
                let what = owned_words(k, owned);
                return Err(DecodeError::at(
                    at(),
                    format!(
                        "{what}: {}; remove it (docs/engines.md lists the settings a study may not change)",
                        guards.why()
                    ),
                ));
            }
        }
        match value {
            Some(v) if name_ok && !v.contains('\n') => out.push((k.clone(), v)),
            _ => {
                return Err(DecodeError::at(
                    at(),
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

    fn table(text: &str) -> toml::Table {
        text.parse().expect("toml")
    }

    fn refusal(rules: &SettingRules, text: &str) -> String {
        match extra_settings(&table(text), rules) {
            Err(e) => format!("{}: {}", e.path, e.message),
            Ok(s) => panic!("{text} was taken: {s:?}"),
        }
    }

    #[test]
    fn a_study_cannot_set_what_keeps_a_mariadb_sandbox_private() {
        let rules = &crate::engines::mariadb::recipe::SETTINGS;
        for (text, owned) in [
            ("user = \"root\"", "user"),
            ("secure_file_priv = \"\"", "secure_file_priv"),
            ("secure-file-priv = \"\"", "secure_file_priv"),
            ("loose-secure-file-priv = \"\"", "secure_file_priv"),
            ("secure_file = \"\"", "secure_file_priv"),
            ("skip_grant_tables = true", "skip_grant_tables"),
            ("skip-grant = 1", "skip_grant_tables"),
            ("bind_address = \"0.0.0.0\"", "bind_address"),
            ("BIND-ADDRESS = \"0.0.0.0\"", "bind_address"),
            ("init_file = \"/tmp/x.sql\"", "init_file"),
            ("plugin_dir = \"/tmp\"", "plugin_dir"),
            ("plugin-load-add = \"x.so\"", "plugin_load_add"),
            ("ssl_cert = \"/tmp/c.pem\"", "ssl*"),
            (
                "wsrep_provider_options = \"gmcast.listen_addr=tcp://0.0.0.0:1\"",
                "wsrep_provider_options",
            ),
            ("socket = \"/tmp/s\"", "socket"),
            ("datadir = \"/var/lib/mysql\"", "datadir"),
            ("log_error = \"/etc/cron.d/x\"", "log_error"),
            ("log_bin = \"/etc/x\"", "log_bin"),
            ("general_log_file = \"../../x\"", "general_log_file"),
            ("mysqlx_bind_address = \"*\"", "mysqlx*"),
            ("enable-named-pipe = 1", "named_pipe"),
        ] {
            let e = refusal(rules, text);
            let name = text.split(' ').next().unwrap_or_default();
            assert!(e.contains(&format!("server.{name}")), "{text}: {e}");
            assert!(e.contains("dbduel owns"), "{text}: {e}");
            assert!(e.contains(owned) || e.contains(name), "{text}: {e}");
        }
        // What studies set, and plain file names kept in the data directory, stay.
        let taken = extra_settings(
            &table(
                "log_bin = \"binlog\"\nserver_id = 1\nsync_binlog = 0\ngeneral_log = true\nmax_connections = 400\ninnodb_log_file_size = \"8M\"\nlog_slave_updates = \"ON\"\nslow_query_log_file = \"slow.log\"\nlog-error-verbosity = 3",
            ),
            rules,
        )
        .expect("taken");
        assert_eq!(taken.len(), 9);
    }

    #[test]
    fn a_study_cannot_set_what_keeps_a_postgres_sandbox_private() {
        let rules = &crate::engines::postgres::recipe::SETTINGS;
        for text in [
            "listen_addresses = \"*\"",
            "Listen_Addresses = \"*\"",
            "hba_file = \"/tmp/hba\"",
            "ssl = true",
            "ssl_key_file = \"/tmp/k\"",
            "shared_preload_libraries = \"x\"",
            "archive_command = \"sh -c id\"",
            "include_dir = \"/etc\"",
            "port = 5432",
            "unix_socket_directories = \"/tmp\"",
        ] {
            assert!(refusal(rules, text).contains("dbduel owns"), "{text}");
        }
        // PostgreSQL takes no abbreviation: `ssl_min` is not a prefix rule, `port` is whole.
        let taken = extra_settings(
            &table("max_connections = 10\nshared_buffers = \"128MB\"\n\"pg_stat_statements.max\" = 100"),
            rules,
        )
        .expect("taken");
        assert_eq!(taken.len(), 3);
    }

    #[test]
    fn lease_names_fit_get_lock_and_differ_by_database() {
        assert_eq!(lease_name("dbduel_shootout"), "dbduel:dbduel_shootout");
        let long = "d".repeat(63);
        assert!(lease_name(&long).len() <= 64);
        assert_ne!(lease_name(&long), lease_name(&"d".repeat(62)));
        assert_ne!(lease_key("dbduel_a_b"), lease_key("dbduel_ab"));
    }
}
