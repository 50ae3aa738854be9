//! The PostgreSQL recipe: `initdb` into a private data directory, settings appended to its
//! postgresql.conf, `postgres` in the foreground on a loopback port with its socket in the
//! sandbox, readiness by a real connection. Every connection, over the private socket or
//! 127.0.0.1, authenticates with `scram-sha-256` and the sandbox's secret (no `trust`); a
//! standby's base backup and its streaming read the secret from a 0600 passfile of its own.
//! PostgreSQL refuses to run as root, so when dbduel is root the server runs as dbduel's
//! dedicated account (created on first use, never Debian's `postgres`, which owns the host's
//! own clusters) in a directory only that account can use.
//! The binaries are Debian's, or those of a server directory (`bin/`, `lib/`, `share/`) a
//! contender's `version` or `basedir` chose.

use crate::engines::server::{Guards, SettingRules};
use crate::sandbox::device_profile::DeviceProfile;
use crate::sandbox::secret::{self, SandboxSecret};
use crate::sandbox::{Layout, Recipe, Result, SandboxError, ServiceUser, user};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `postgresql.conf` settings a study may give a PostgreSQL sandbox, and those dbduel
/// owns. PostgreSQL compares names without case and takes no abbreviation; a dotted name
/// is an extension's.
pub const SETTINGS: SettingRules = SettingRules {
    punct: ".",
    on_off: ("on", "off"),
    owned: &[
        ("hba_file", Guards::Accounts),
        ("ident_file", Guards::Accounts),
        ("password_encryption", Guards::Accounts),
        ("krb_server_keyfile", Guards::Accounts),
        ("krb_caseins_users", Guards::Accounts),
        ("db_user_namespace", Guards::Accounts),
        ("scram_iterations", Guards::Accounts),
        ("data_directory", Guards::Files),
        ("config_file", Guards::Files),
        ("external_pid_file", Guards::Files),
        ("include", Guards::Files),
        ("include_dir", Guards::Files),
        ("include_if_exists", Guards::Files),
        ("log_directory", Guards::Files),
        ("log_filename", Guards::Files),
        ("logging_collector", Guards::Files),
        ("stats_temp_directory", Guards::Files),
        ("listen_addresses", Guards::Listeners),
        ("port", Guards::Listeners),
        ("unix_socket_directories", Guards::Listeners),
        ("unix_socket_group", Guards::Listeners),
        ("unix_socket_permissions", Guards::Listeners),
        ("shared_preload_libraries", Guards::Plugins),
        ("local_preload_libraries", Guards::Plugins),
        ("session_preload_libraries", Guards::Plugins),
        ("dynamic_library_path", Guards::Plugins),
        ("jit_provider", Guards::Plugins),
        ("ssl*", Guards::Tls),
        ("primary_conninfo", Guards::Replication),
        ("primary_slot_name", Guards::Replication),
        ("promote_trigger_file", Guards::Replication),
        ("archive_command", Guards::Commands),
        ("archive_library", Guards::Commands),
        ("restore_command", Guards::Commands),
        ("archive_cleanup_command", Guards::Commands),
        ("recovery_end_command", Guards::Commands),
    ],
    option_prefixes: &[],
    abbreviations: false,
    exact_names: &[],
};

/// The superuser initdb creates; dbduel connects as it (with the sandbox's secret).
pub const SUPERUSER: &str = "dbduel";

/// The directory holding `postgres`, `initdb`: the newest Debian install, or `pg_config`'s.
pub fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    if let Some((_, b)) = found.pop() {
        return Some(b);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.join("postgres").exists().then_some(p)
}

/// One PostgreSQL server's settings (postgresql.conf names and values).
#[derive(Debug, Clone, Default)]
pub struct PostgresRecipe {
    pub settings: BTreeMap<String, String>,
    /// Make the data directory a streaming standby of this running server, from a base
    /// backup of it (base_backup.rs), instead of a new cluster (`initdb`).
    pub base_backup_of: Option<super::base_backup::Source>,
    /// Run the server in a memory cgroup of this many MiB.
    pub memory_limit_mb: Option<u64>,
    /// Throttle the server's block I/O to this profile.
    pub device_profile: Option<DeviceProfile>,
    /// Keep the data under this directory (on a device the user named).
    pub data_dir: Option<std::path::PathBuf>,
    /// The server directory whose `bin/initdb` and `bin/postgres` to run (they find their
    /// `lib/` and `share/` beside it); `None`: Debian's.
    pub server_dir: Option<PathBuf>,
    /// The primary's secret, for a standby (whose accounts are a copy of the primary's).
    pub secret: Option<SandboxSecret>,
    /// Serve clients over TLS with this certificate (the contender's `tls = true`).
    pub tls: Option<crate::sandbox::certs::ServerCerts>,
}

/// A sandbox's client TLS files, with what the server only reads.
fn client_tls_files(l: &Layout) -> crate::sandbox::certs::Files {
    crate::sandbox::certs::Files::in_dir(l.conf_dir(), "tls")
}

/// The host-based authentication file the server reads, with what it only reads.
pub fn hba_file(l: &Layout) -> PathBuf {
    l.conf_dir().join("pg_hba.conf")
}

/// The standby's password file (libpq's passfile format), in the server's own directory: the
/// base backup and the standby's streaming (its `primary_conninfo` names it) read it.
const PASSFILE: &str = "pgpass";

impl PostgresRecipe {
    /// The settings that keep the server dbduel's — its files, where it listens, whom it lets
    /// in, its TLS. They are in its configuration file and on its command line too, which
    /// outranks every file: the data directory's, and `postgresql.auto.conf`, which a
    /// superuser's `ALTER SYSTEM` writes, so a study's SQL cannot undo them at a restart.
    fn kept_settings(&self, l: &Layout) -> Vec<(&'static str, String)> {
        let socket_dir = l.socket.parent().unwrap_or(Path::new("/tmp"));
        let mut v = vec![
            ("data_directory", l.datadir.display().to_string()),
            ("hba_file", hba_file(l).display().to_string()),
            ("listen_addresses", "127.0.0.1".to_string()),
            ("unix_socket_directories", socket_dir.display().to_string()),
        ];
        if self.tls.is_some() {
            let f = client_tls_files(l);
            v.push(("ssl", "on".to_string()));
            v.push(("ssl_cert_file", f.cert.display().to_string()));
            v.push(("ssl_key_file", f.key.display().to_string()));
        }
        v
    }

    /// The directory of `initdb` and `postgres`: the server directory's, else Debian's.
    fn bin_dir(&self) -> Option<PathBuf> {
        match &self.server_dir {
            Some(d) => Some(d.join("bin")),
            None => bin_dir(),
        }
    }

    fn bin(&self, name: &str) -> Result<PathBuf> {
        let p = self.bin_dir().map(|d| d.join(name)).ok_or_else(missing)?;
        match &self.server_dir {
            Some(d) if !p.is_file() => Err(SandboxError::Missing {
                what: format!("{name} in {}", d.display()),
                hint: format!(
                    "a PostgreSQL server directory needs bin/initdb and bin/postgres; run `{}` again or name another basedir",
                    crate::sandbox::binaries::INSTALL_COMMAND
                ),
            }),
            _ => Ok(p),
        }
    }
}

fn missing() -> SandboxError {
    SandboxError::Missing {
        what: "the PostgreSQL server (postgres, initdb)".into(),
        hint: "run `make install-servers` (Debian: apt-get install postgresql postgresql-contrib)"
            .into(),
    }
}

/// A value quoted for postgresql.conf.
fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "''"))
}

impl Recipe for PostgresRecipe {
    fn memory_limit_bytes(&self) -> Option<u64> {
        self.memory_limit_mb.map(|m| m << 20)
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.device_profile.as_ref()
    }

    fn data_root(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    fn flavor(&self) -> &'static str {
        "postgres"
    }

    fn check_installed(&self) -> Result<()> {
        let bin = self.bin_dir().ok_or_else(missing)?;
        if self.server_dir.is_some() {
            self.bin("initdb")?;
            self.bin("postgres")?;
        } else if !bin.join("initdb").exists() {
            return Err(missing());
        }
        Ok(())
    }

    fn service_user(&self) -> Result<Option<ServiceUser>> {
        user::sandbox_account()
    }

    fn client_ca(&self, l: &Layout) -> Option<PathBuf> {
        self.tls.as_ref().map(|_| client_tls_files(l).ca)
    }

    fn inherited_secret(&self) -> Option<SandboxSecret> {
        self.secret.clone()
    }

    fn config(&self, l: &Layout) -> String {
        // initdb's settings first (the data directory's file, which the server's account
        // may change), then dbduel's, which win: this file is root's when the server runs as
        // another account, and so is the host-based authentication file it names.
        let mut s = format!(
            "# Written by dbduel for one sandbox.\ninclude {}\n",
            quote(&l.datadir.join("postgresql.conf").display().to_string())
        );
        let mut put = |k: &str, v: &str| s.push_str(&format!("{k} = {}\n", quote(v)));
        for (k, v) in self.kept_settings(l) {
            put(k, &v);
        }
        for (k, v) in &self.settings {
            put(k, v);
        }
        if let Some(src) = &self.base_backup_of {
            // The standby streams from the primary, reading the secret from its passfile.
            let passfile = l.server_dir().join(PASSFILE);
            put(
                "primary_conninfo",
                &format!(
                    "host=127.0.0.1 port={} user={SUPERUSER} passfile={} sslmode=prefer application_name={}",
                    src.port,
                    passfile.display(),
                    src.standby
                ),
            );
        }
        s
    }

    fn init(&self, l: &Layout) -> Result<()> {
        let secret = secret::read(&l.dir)?;
        if let Some(t) = &self.tls {
            t.write(&client_tls_files(l), l.owner.as_ref())?;
        }
        // initdb reads the superuser's password from a file the server's account can read,
        // gone once read; a standby keeps its passfile.
        let pwfile = l.conf_dir().join("initdb.pw");
        match &self.base_backup_of {
            None => {
                secret::write_readable_by(
                    &pwfile,
                    &format!("{}\n", secret.expose()),
                    l.owner.as_ref(),
                )?;
                let mut c = l.command(self.bin("initdb")?);
                c.arg("-D")
                    .arg(&l.datadir)
                    .args(["-U", SUPERUSER, "--auth=scram-sha-256"])
                    .arg(format!("--pwfile={}", pwfile.display()))
                    .args(["--encoding=UTF8", "--locale=C", "--no-instructions"]);
                let out = c.output();
                let _ = std::fs::remove_file(&pwfile);
                let out = out.map_err(|e| SandboxError::Failed {
                    what: "initdb".into(),
                    detail: e.to_string(),
                })?;
                if !out.status.success() {
                    let text = String::from_utf8_lossy(&out.stderr);
                    let lines: Vec<&str> = text.lines().collect();
                    return Err(SandboxError::Failed {
                        what: format!("initdb into {}", l.datadir.display()),
                        detail: lines[lines.len().saturating_sub(15)..].join("\n"),
                    });
                }
            }
            Some(src) => {
                // libpq reads a passfile only when it is 0600: the account's own.
                let passfile = l.server_dir().join(PASSFILE);
                let line = format!("127.0.0.1:{}:*:{SUPERUSER}:{}\n", src.port, secret.expose());
                l.beneath(&passfile)?.write_new(
                    &passfile,
                    line.as_bytes(),
                    0o600,
                    l.owner.as_ref(),
                )?;
                super::base_backup::copy(src, &secret, l)?;
            }
        }
        // The host-based authentication initdb wrote (or the primary's, copied), where the
        // server reads it and cannot change it.
        let hba = l.datadir.join("pg_hba.conf");
        let text = l.beneath(&hba)?.read(&hba)?;
        secret::write_readable_by(
            &hba_file(l),
            &String::from_utf8_lossy(&text),
            l.owner.as_ref(),
        )
    }

    fn command(&self, l: &Layout) -> Command {
        let server = self
            .bin("postgres")
            .unwrap_or_else(|_| PathBuf::from("postgres"));
        let mut cmd = l.command(server);
        // The port is given here, not in the file, so a retry on a new port needs no rewrite.
        cmd.arg("-D")
            .arg(&l.datadir)
            .arg("-c")
            .arg(format!("config_file={}", l.config_file.display()))
            .arg("-c")
            .arg(format!("port={}", l.port));
        for (k, v) in self.kept_settings(l) {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd
    }

    fn probe(&self, l: &Layout) -> Option<String> {
        let mut c = postgres::Config::new()
            .host("127.0.0.1")
            .port(l.port)
            .user(SUPERUSER)
            .password(secret::read(&l.dir).ok()?.expose())
            .dbname("postgres")
            .connect_timeout(Duration::from_millis(500))
            .connect(postgres::NoTls)
            .ok()?;
        let row = c.query_one("SHOW server_version", &[]).ok()?;
        row.try_get::<_, String>(0)
            .ok()
            .map(|v| format!("PostgreSQL {v}"))
    }

    fn port_in_use(&self, log_tail: &str) -> bool {
        log_tail.contains("could not bind") || log_tail.contains("Address already in use")
    }

    fn stop_signal(&self) -> i32 {
        // SIGTERM waits for clients to leave ("smart"); SIGINT disconnects them ("fast").
        libc::SIGINT
    }
}
