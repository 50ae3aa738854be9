//! The MySQL recipe: a data directory made by the version's own way (5.6: the package's
//! ready system tables; 5.7 and later: `mysqld --initialize-insecure`), with `root` on
//! 127.0.0.1 and the socket only, using `mysql_native_password` and the sandbox's secret; the
//! server runs as dbduel's dedicated account when dbduel is root; a generated configuration
//! file; `mysqld` in the
//! foreground on a loopback port with a socket in the sandbox, its bundled libraries on its
//! library path; readiness by a real handshake and `SELECT VERSION()`.

use crate::engines::mariadb::recipe::{
    MAX_ALLOWED_PACKET, MariadbRecipe, client_tls_files, client_tls_settings, port_taken,
    probe_root,
};
use crate::engines::mysql::versions::{Init, MysqlVersion};
use crate::sandbox::binaries::INSTALL_COMMAND;
use crate::sandbox::device_profile::DeviceProfile;
use crate::sandbox::secret::{self, SandboxSecret};
use crate::sandbox::{Layout, Recipe, Result, SandboxError};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The accounts of a 5.7 or 8.0 sandbox, made while its data directory is made: `root` from
/// 127.0.0.1 (every dbduel connection: TCP on loopback, names not resolved) and from
/// `localhost` (the socket), both with the sandbox's `secret` (hex digits: nothing to quote)
/// and `mysql_native_password` on every version: the lean wire client the benchmark
/// sessions use speaks that plugin, and MySQL 8.0's default, `caching_sha2_password`, would
/// push every session onto the `mysql` crate's slower client. (8.0's configuration also
/// makes it the default plugin for accounts made later.) Kept out of the binary log a
/// primary of a topology writes from its start: a replica made the same way has them.
fn accounts_sql(secret: &SandboxSecret) -> String {
    let s = secret.expose();
    format!(
        "SET SQL_LOG_BIN = 0;\n\
         CREATE USER 'root'@'127.0.0.1' IDENTIFIED WITH mysql_native_password BY '{s}';\n\
         GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n\
         ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '{s}';\n"
    )
}

/// 5.6's ready tables hold anonymous accounts, passwordless roots and one for the packager's
/// host name: only root from 127.0.0.1 and the socket stays, with the sandbox's `secret`
/// (`mysql_native_password`, 5.6's only plugin for it).
fn template_accounts_sql(secret: &SandboxSecret) -> String {
    format!(
        "DELETE FROM mysql.user WHERE User = '' OR Host NOT IN ('localhost', '127.0.0.1');\n\
         DELETE FROM mysql.db WHERE User = '';\n\
         DELETE FROM mysql.proxies_priv WHERE Host NOT IN ('localhost', '127.0.0.1');\n\
         UPDATE mysql.user SET Password = PASSWORD('{}') WHERE User = 'root';\n",
        secret.expose()
    )
}

/// MariaDB 10.11's default `sql_mode`, so that the same statements mean the same on both
/// (MySQL 5.7+ adds ONLY_FULL_GROUP_BY and NO_ZERO_DATE, among others); a contender's
/// `server = { sql_mode = ... }` replaces it.
const SQL_MODE: &str = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";

/// One MySQL server of a version, with its settings.
#[derive(Debug, Clone)]
pub struct MysqlRecipe {
    pub version: &'static MysqlVersion,
    /// The server's directory (`bin/`, `share/`, `lib/`): the server cache's entry or the
    /// contender's basedir, as the shared binaries lookup resolved it.
    pub home: Option<PathBuf>,
    /// `[mysqld]` variables (the contender's), in the order written.
    pub settings: BTreeMap<String, String>,
    pub memory_limit_mb: Option<u64>,
    pub device_profile: Option<DeviceProfile>,
    pub data_dir: Option<PathBuf>,
    /// Serve clients over TLS with this certificate (the contender's `tls = true`).
    pub tls: Option<crate::sandbox::certs::ServerCerts>,
}

impl MysqlRecipe {
    /// The recipe for `version` with the settings and the server directory MariaDB's recipe
    /// `base` holds.
    pub fn new(version: &'static MysqlVersion, base: &MariadbRecipe) -> Self {
        MysqlRecipe {
            version,
            home: base.server_dir.clone(),
            settings: base.settings.clone(),
            memory_limit_mb: base.memory_limit_mb,
            device_profile: base.device_profile.clone(),
            data_dir: base.data_dir.clone(),
            tls: base.tls.clone(),
        }
    }

    /// The server's directory, or what is missing.
    fn home(&self) -> Result<&Path> {
        self.home.as_deref().ok_or_else(|| SandboxError::Missing {
            what: format!("MySQL {}'s server", self.version.version),
            hint: format!("run `{INSTALL_COMMAND}` to install it"),
        })
    }

    fn mysqld(&self) -> PathBuf {
        self.home
            .as_deref()
            .unwrap_or(Path::new("."))
            .join("bin/mysqld")
    }

    /// `mysqld` with the bundled libraries on its library path (5.6's libaio, 8.0's
    /// OpenSSL 1.0), reading the sandbox's configuration only.
    fn server_command(&self, l: &Layout) -> Command {
        let mut cmd = l.command(self.mysqld());
        if let Some(home) = &self.home {
            cmd.env("LD_LIBRARY_PATH", home.join("lib"));
        }
        // --defaults-file must come first; nothing else is read (no /etc/mysql).
        cmd.arg(format!("--defaults-file={}", l.config_file.display()));
        cmd
    }

    /// The directory `SELECT ... INTO OUTFILE` and `LOAD DATA INFILE` (server side) may use:
    /// inside the sandbox, never the host's files.
    fn files_dir(l: &Layout) -> PathBuf {
        l.server_dir().join("files")
    }

    /// Run the server once to make its data directory (`args`, `stdin` fed to it); the
    /// server's own words when it fails.
    fn run_once(&self, l: &Layout, args: &[String], stdin: Option<&str>) -> Result<()> {
        let what = format!("mysqld {} in {}", args.join(" "), l.datadir.display());
        let mut cmd = self.server_command(l);
        cmd.args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let failed = |detail: String| SandboxError::Failed {
            what: what.clone(),
            detail,
        };
        let mut child = cmd.spawn().map_err(|e| failed(e.to_string()))?;
        if let (Some(sql), Some(mut input)) = (stdin, child.stdin.take()) {
            input
                .write_all(sql.as_bytes())
                .map_err(|e| failed(e.to_string()))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| failed(e.to_string()))?;
        if out.status.success() {
            return Ok(());
        }
        let mut text = crate::sandbox::tail(&l.log_file, 40);
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        let errors: Vec<&str> = text.lines().filter(|l| l.contains("ERROR")).collect();
        let lines: Vec<&str> = if errors.is_empty() {
            text.lines().collect()
        } else {
            errors
        };
        Err(failed(format!(
            "{} ({}):\n{}",
            out.status,
            "the server's words",
            lines[lines.len().saturating_sub(15)..].join("\n")
        )))
    }
}

impl Recipe for MysqlRecipe {
    fn flavor(&self) -> &'static str {
        "mysql"
    }

    fn service_user(&self) -> Result<Option<crate::sandbox::ServiceUser>> {
        // Never root: a server that can write files as root gives root to any account that
        // can log in to it.
        crate::sandbox::user::sandbox_account()
    }

    fn memory_limit_bytes(&self) -> Option<u64> {
        self.memory_limit_mb.map(|m| m << 20)
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.device_profile.as_ref()
    }

    fn data_root(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    fn check_installed(&self) -> Result<()> {
        let home = self.home()?;
        let mysqld = home.join("bin/mysqld");
        let template = home.join("data-template/mysql");
        if !mysqld.is_file() {
            return Err(SandboxError::Missing {
                what: format!(
                    "{} (MySQL {}'s server)",
                    mysqld.display(),
                    self.version.version
                ),
                hint: format!("run `{INSTALL_COMMAND}` to install it again"),
            });
        }
        if self.version.init == Init::CopyTemplate && !template.is_dir() {
            return Err(SandboxError::Missing {
                what: format!(
                    "{} (MySQL {}'s system tables)",
                    template.display(),
                    self.version.version
                ),
                hint: format!("run `{INSTALL_COMMAND}` to install it again"),
            });
        }
        Ok(())
    }

    fn config(&self, l: &Layout) -> String {
        let mut s = String::from(
            "# Written by dbduel for one sandbox; the server reads only this file.\n[mysqld]\n",
        );
        let mut put = |k: &str, v: &str| match v {
            // A flag such as disable_log_bin takes no value.
            "" => s.push_str(&format!("{k}\n")),
            _ => s.push_str(&format!("{k} = {v}\n")),
        };
        // No `user =`: mysqld is started as its account (`Layout::command`), never as root.
        let home = self.home.clone().unwrap_or_default();
        put("basedir", &home.display().to_string());
        put(
            "lc-messages-dir",
            &home.join(self.version.messages_dir).display().to_string(),
        );
        put("port", &l.port.to_string());
        put("bind-address", "127.0.0.1");
        put("socket", &l.socket.display().to_string());
        put("datadir", &l.datadir.display().to_string());
        put("tmpdir", &l.server_dir().display().to_string());
        put("pid-file", &l.pid_file.display().to_string());
        put(
            "secure_file_priv",
            &Self::files_dir(l).display().to_string(),
        );
        if l.owner.is_none() {
            put("log-error", &l.log_file.display().to_string());
        }
        put("skip-name-resolve", "1");
        put("local_infile", "1");
        put("innodb_buffer_pool_dump_at_shutdown", "OFF");
        put("innodb_buffer_pool_load_at_startup", "OFF");
        put("innodb_file_per_table", "ON");
        put("max_allowed_packet", &MAX_ALLOWED_PACKET.to_string());
        // As on MariaDB, where it is off by default: its instruments cost memory and time.
        put("performance_schema", "OFF");
        put("sql_mode", SQL_MODE);
        for (k, v) in self.version.settings {
            // A primary of a topology writes the binary log 8.0 is otherwise told not to.
            if *k == "disable_log_bin" && self.settings.contains_key("log_bin") {
                continue;
            }
            put(k, v);
        }
        for (k, v) in self.tls.iter().flat_map(|_| client_tls_settings(l)) {
            put(k, &v);
        }
        for (k, v) in &self.settings {
            put(k, v);
        }
        s
    }

    fn client_ca(&self, l: &Layout) -> Option<PathBuf> {
        self.tls.as_ref().map(|_| client_tls_files(l).ca)
    }

    fn init(&self, l: &Layout) -> Result<()> {
        if let Some(t) = &self.tls {
            t.write(&client_tls_files(l), l.owner.as_ref())?;
        }
        let home = self.home()?.to_path_buf();
        let files = Self::files_dir(l);
        l.beneath(&files)?.mkdir(&files, 0o700, l.owner.as_ref())?;
        match self.version.init {
            Init::CopyTemplate => {
                let template = home.join("data-template/mysql");
                l.beneath(&l.datadir)?
                    .copy_tree(&template, &l.datadir, l.owner.as_ref())?;
                // The packager's server id would be every sandbox's: each makes its own.
                let _ = std::fs::remove_file(l.datadir.join("auto.cnf"));
                let sql = template_accounts_sql(&secret::read(&l.dir)?);
                self.run_once(l, &["--bootstrap".into()], Some(&sql))
            }
            Init::InitializeInsecure => {
                // It holds the secret: only the server's account reads it (and cannot change
                // it), gone once read.
                let init_file = l.conf_dir().join("accounts.sql");
                let sql = accounts_sql(&secret::read(&l.dir)?);
                secret::write_readable_by(&init_file, &sql, l.owner.as_ref())?;
                let r = self.run_once(
                    l,
                    &[
                        "--initialize-insecure".into(),
                        format!("--init-file={}", init_file.display()),
                    ],
                    None,
                );
                let _ = std::fs::remove_file(&init_file);
                r
            }
        }
    }

    fn command(&self, l: &Layout) -> Command {
        self.server_command(l)
    }

    fn probe(&self, l: &Layout) -> Option<String> {
        probe_root(l.port, secret::read(&l.dir).ok()?.expose())
    }

    fn port_in_use(&self, log_tail: &str) -> bool {
        port_taken(log_tail)
    }

    fn start_timeout(&self) -> Duration {
        Duration::from_secs(120)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::mysql::versions::row as find;

    #[test]
    fn eight_zero_gets_native_passwords_and_no_x_protocol_or_binary_log() {
        let v = find("8.0").expect("8.0");
        let names: Vec<&str> = v.settings.iter().map(|(k, _)| *k).collect();
        assert!(names.contains(&"default_authentication_plugin"));
        assert!(names.contains(&"mysqlx"));
        assert!(names.contains(&"disable_log_bin"));
        let secret = secret::generate().expect("a secret");
        let sql = accounts_sql(&secret);
        let by = format!(
            "IDENTIFIED WITH mysql_native_password BY '{}'",
            secret.expose()
        );
        assert!(sql.contains(&by));
        assert!(!sql.contains("BY ''"));
    }
}
