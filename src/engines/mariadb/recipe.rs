//! The MariaDB recipe: `mariadb-install-db` into a private data directory, a generated
//! configuration file, `mariadbd` in the foreground on a loopback port and a socket in the
//! sandbox, readiness by a real protocol handshake and `SELECT VERSION()`. `root` is the only
//! account; it authenticates with `mysql_native_password` (what the lean wire client speaks)
//! and the sandbox's secret, from `localhost` (the private socket) and 127.0.0.1 alone; the
//! server runs as dbduel's dedicated account when dbduel is root, and reads and writes files
//! (`INTO OUTFILE`, `LOAD_FILE`, server-side `LOAD DATA`) only in a directory of its sandbox.
//! The binaries are Debian's, or those of a server directory (`bin/`, `share/`) a
//! contender's `version` or `basedir` chose.

use crate::engines::server::{Guards, SettingRules};
use crate::sandbox::device_profile::DeviceProfile;
use crate::sandbox::secret::{self, SandboxSecret};
use crate::sandbox::{Layout, Recipe, Result, SandboxError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `[mysqld]` settings a study may give a MariaDB or MySQL sandbox, and those dbduel
/// owns (a MySQL contender's options decode through the MariaDB engine, so MySQL's own
/// listeners and plugins, `mysqlx_*`, `admin_*`, the keyring, are here too). Both servers
/// take `-` for `_`, strip `loose-`, `skip-`, `enable-`, `disable-`, `maximum-` and accept
/// a unique prefix of an option's name.
pub const SETTINGS: SettingRules = SettingRules {
    punct: "-",
    on_off: ("ON", "OFF"),
    owned: &[
        ("user", Guards::Accounts),
        ("skip_grant_tables", Guards::Accounts),
        ("init_file", Guards::Accounts),
        ("init_connect", Guards::Accounts),
        ("init_slave", Guards::Accounts),
        ("default_authentication_plugin", Guards::Accounts),
        ("authentication_policy", Guards::Accounts),
        ("caching_sha2_password*", Guards::Accounts),
        ("sha256_password*", Guards::Accounts),
        ("secure_auth", Guards::Accounts),
        ("old_passwords", Guards::Accounts),
        ("old_mode", Guards::Accounts),
        ("secure_file_priv", Guards::Files),
        ("local_infile", Guards::Files),
        ("datadir", Guards::Files),
        ("basedir", Guards::Files),
        ("tmpdir", Guards::Files),
        ("slave_load_tmpdir", Guards::Files),
        ("pid_file", Guards::Files),
        ("log_error", Guards::Files),
        ("log_basename", Guards::Files),
        ("log_tc", Guards::Files),
        ("character_sets_dir", Guards::Files),
        ("lc_messages_dir", Guards::Files),
        ("innodb_data_home_dir", Guards::Files),
        ("innodb_data_file_path", Guards::Files),
        ("innodb_temp_data_file_path", Guards::Files),
        ("innodb_log_group_home_dir", Guards::Files),
        ("innodb_undo_directory", Guards::Files),
        ("innodb_tmpdir", Guards::Files),
        ("innodb_buffer_pool_filename", Guards::Files),
        ("aria_log_dir_path", Guards::Files),
        ("rocksdb_datadir", Guards::Files),
        ("rocksdb_wal_dir", Guards::Files),
        ("rocksdb_tmpdir", Guards::Files),
        ("master_info_file", Guards::Files),
        ("relay_log_info_file", Guards::Files),
        ("chroot", Guards::Files),
        ("core_file", Guards::Files),
        ("debug", Guards::Files),
        ("log_bin", Guards::FileName),
        ("log_bin_index", Guards::FileName),
        ("relay_log", Guards::FileName),
        ("relay_log_index", Guards::FileName),
        ("general_log_file", Guards::FileName),
        ("slow_query_log_file", Guards::FileName),
        ("log_slow_query_file", Guards::FileName),
        ("log_ddl_recovery", Guards::Files),
        ("innodb_directories", Guards::Files),
        ("innodb_temp_tablespaces_dir", Guards::Files),
        ("innodb_doublewrite_dir", Guards::Files),
        ("replica_load_tmpdir", Guards::Files),
        ("init_replica", Guards::Accounts),
        ("port", Guards::Listeners),
        ("bind_address", Guards::Listeners),
        ("socket", Guards::Listeners),
        ("skip_networking", Guards::Listeners),
        ("extra_port", Guards::Listeners),
        ("proxy_protocol_networks", Guards::Listeners),
        ("named_pipe", Guards::Listeners),
        ("mysqlx*", Guards::Listeners),
        ("admin_address", Guards::Listeners),
        ("admin_port", Guards::Listeners),
        ("create_admin_listener_thread", Guards::Listeners),
        ("plugin_dir", Guards::Plugins),
        ("plugin_load", Guards::Plugins),
        ("plugin_load_add", Guards::Plugins),
        ("plugin_maturity", Guards::Plugins),
        ("early_plugin_load", Guards::Plugins),
        ("keyring*", Guards::Plugins),
        ("rocksdb", Guards::Plugins),
        ("ssl*", Guards::Tls),
        ("tls_version", Guards::Tls),
        ("have_ssl", Guards::Tls),
        ("require_secure_transport", Guards::Tls),
        ("wsrep_ssl_mode", Guards::Tls),
        ("wsrep_provider", Guards::Replication),
        ("wsrep_provider_options", Guards::Replication),
        ("wsrep_cluster_address", Guards::Replication),
        ("wsrep_cluster_name", Guards::Replication),
        ("wsrep_node_address", Guards::Replication),
        ("wsrep_node_incoming_address", Guards::Replication),
        ("wsrep_sst*", Guards::Replication),
        ("wsrep_data_home_dir", Guards::Replication),
        ("report_host", Guards::Replication),
        ("report_user", Guards::Replication),
        ("report_password", Guards::Replication),
        ("report_port", Guards::Replication),
        ("wsrep_notify_cmd", Guards::Commands),
    ],
    option_prefixes: &[
        "loose_", "skip_", "enable_", "disable_", "maximum_", "autoset_",
    ],
    abbreviations: true,
    exact_names: &[
        "general_log",
        "slow_query_log",
        "log_slow_query",
        "lc_messages",
        "ssl",
    ],
};

/// Where Debian installs the server binaries.
const SERVER_PATHS: &[&str] = &[
    "/usr/sbin/mariadbd",
    "/usr/bin/mariadbd",
    "/usr/local/bin/mariadbd",
];
const INSTALL_DB_PATHS: &[&str] = &[
    "/usr/bin/mariadb-install-db",
    "/usr/sbin/mariadb-install-db",
    "/usr/local/bin/mariadb-install-db",
];

fn first_existing(paths: &[&'static str]) -> Option<&'static str> {
    paths.iter().copied().find(|p| Path::new(p).exists())
}

/// The system's `mariadbd`, where Debian installs it.
pub fn system_server() -> Option<PathBuf> {
    first_existing(SERVER_PATHS).map(PathBuf::from)
}

/// `max_allowed_packet` of every sandbox, and what clients are told it is, bytes.
pub const MAX_ALLOWED_PACKET: usize = 64 << 20;

/// One MariaDB server's settings, rendered into the `[mysqld]` section. The default is a
/// plain server with the engine's own settings.
#[derive(Debug, Clone, Default)]
pub struct MariadbRecipe {
    /// `[mysqld]` variables, in the order written.
    pub settings: BTreeMap<String, String>,
    /// Load the MyRocks plugin.
    pub rocksdb: bool,
    /// Run the server in a memory cgroup of this many MiB.
    pub memory_limit_mb: Option<u64>,
    /// Throttle the server's block I/O to this profile.
    pub device_profile: Option<DeviceProfile>,
    /// Keep the data under this directory (on a device the user named).
    pub data_dir: Option<std::path::PathBuf>,
    /// This server is a node of a Galera cluster.
    pub galera: Option<GaleraNode>,
    /// The server directory whose `bin/mariadbd`, `bin/mariadb-install-db` (or
    /// `scripts/`) and `share/` to run; `None`: Debian's.
    pub server_dir: Option<PathBuf>,
    /// The cluster's secret, for a node whose accounts come from another by state transfer.
    pub secret: Option<SandboxSecret>,
    /// Serve clients over TLS with this certificate (the contender's `tls = true`).
    pub tls: Option<crate::sandbox::certs::ServerCerts>,
}

/// A sandbox's client TLS files, with what the server only reads.
pub(crate) fn client_tls_files(l: &Layout) -> crate::sandbox::certs::Files {
    crate::sandbox::certs::Files::in_dir(l.conf_dir(), "tls")
}

/// The target URL of a MariaDB or MySQL sandbox on `port` (`dbduel sandbox up`), which checks
/// its certificate against `ca` in full when it serves TLS.
pub fn sandbox_target(port: u16, ca: Option<&Path>) -> String {
    let tls = ca.map_or(String::new(), |ca| {
        format!("?ssl-mode=VERIFY_IDENTITY&ssl-ca={}", ca.display())
    });
    format!("mysql://root@127.0.0.1:{port}{tls}")
}

/// The `[mysqld]` lines that serve clients TLS with the files of [`client_tls_files`]
/// (MariaDB's and MySQL's names).
pub(crate) fn client_tls_settings(l: &Layout) -> [(&'static str, String); 3] {
    let f = client_tls_files(l);
    [
        ("ssl_ca", f.ca.display().to_string()),
        ("ssl_cert", f.cert.display().to_string()),
        ("ssl_key", f.key.display().to_string()),
    ]
}

impl MariadbRecipe {
    /// The server binary: the server directory's, else Debian's.
    fn server(&self) -> Option<PathBuf> {
        match &self.server_dir {
            Some(d) => Some(d.join("bin").join("mariadbd")).filter(|p| p.is_file()),
            None => system_server(),
        }
    }

    /// `mariadb-install-db`: the server directory's (`bin/` or `scripts/`), else Debian's.
    fn install_db(&self) -> Option<PathBuf> {
        match &self.server_dir {
            Some(d) => ["bin", "scripts"]
                .iter()
                .map(|b| d.join(b).join("mariadb-install-db"))
                .find(|p| p.is_file()),
            None => first_existing(INSTALL_DB_PATHS).map(PathBuf::from),
        }
    }

    /// Where the missing binaries come from, for the error.
    fn install_hint(&self) -> String {
        match &self.server_dir {
            Some(d) => format!(
                "{} is not a complete MariaDB server directory; run `{}` again or name another basedir",
                d.display(),
                crate::sandbox::binaries::INSTALL_COMMAND
            ),
            None => "run `make install-servers` (Debian: apt-get install mariadb-server mariadb-plugin-rocksdb)".into(),
        }
    }
}

/// The directory under the server's own where `secure_file_priv` confines the server's file
/// reads and writes.
pub const FILES_DIR: &str = "files";

/// The SQL appended to the system tables' bootstrap: `root` only from the private socket
/// and 127.0.0.1, with `mysql_native_password` and `secret` (hex digits: nothing to quote).
fn accounts_sql(secret: &SandboxSecret) -> String {
    format!(
        "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host NOT IN ('localhost', '127.0.0.1'));\n\
         DELETE FROM mysql.proxies_priv WHERE User = 'root' AND Host NOT IN ('localhost', '127.0.0.1');\n\
         UPDATE mysql.global_priv SET Priv = JSON_SET(Priv, '$.plugin', 'mysql_native_password', \
         '$.authentication_string', PASSWORD('{}')) WHERE User = 'root';\n",
        secret.expose()
    )
}

/// Where Debian's galera-4 installs the wsrep provider.
pub const GALERA_PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

/// One node of a Galera cluster on loopback: its own ports for group communication,
/// incremental and full state transfer, and every node's group-communication address.
#[derive(Debug, Clone)]
pub struct GaleraNode {
    pub cluster_name: String,
    pub node_name: String,
    /// Every node's group-communication port on 127.0.0.1, this one's included.
    pub peers: Vec<u16>,
    /// This node's group-communication (gmcast) port.
    pub gcomm_port: u16,
    /// Where it receives incremental state transfers.
    pub ist_port: u16,
    /// Where it receives a full state transfer (rsync).
    pub sst_port: u16,
    /// Start a new cluster (`--wsrep-new-cluster`) rather than join the peers.
    pub bootstrap: bool,
    /// More `wsrep_provider_options`, `key=value; key=value`.
    pub provider_options: Vec<String>,
    /// Its key and certificate under the cluster's own CA.
    pub tls: crate::sandbox::certs::ServerCerts,
}

/// A Galera node's TLS files, with what the server only reads.
fn galera_files(l: &Layout) -> crate::sandbox::certs::Files {
    crate::sandbox::certs::Files::in_dir(l.conf_dir(), "galera")
}

impl GaleraNode {
    /// The `[mysqld]` lines that make the server in `l` this node: every channel on
    /// loopback and under the cluster's TLS (group communication and IST by Galera's own,
    /// verified against the cluster's CA).
    fn settings(&self, l: &Layout) -> Vec<(&'static str, String)> {
        let peers: Vec<String> = self
            .peers
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let tls = galera_files(l);
        let mut provider = vec![
            format!("gmcast.listen_addr=tcp://127.0.0.1:{}", self.gcomm_port),
            format!("ist.recv_addr=127.0.0.1:{}", self.ist_port),
            "socket.ssl=YES".to_string(),
            format!("socket.ssl_key={}", tls.key.display()),
            format!("socket.ssl_cert={}", tls.cert.display()),
            format!("socket.ssl_ca={}", tls.ca.display()),
        ];
        provider.extend(self.provider_options.iter().cloned());
        vec![
            ("wsrep_on", "ON".into()),
            ("wsrep_provider", GALERA_PROVIDER.into()),
            ("wsrep_cluster_name", self.cluster_name.clone()),
            (
                "wsrep_cluster_address",
                format!("gcomm://{}", peers.join(",")),
            ),
            ("wsrep_node_name", self.node_name.clone()),
            ("wsrep_node_address", "127.0.0.1".into()),
            (
                "wsrep_provider_options",
                format!("\"{}\"", provider.join("; ")),
            ),
            ("wsrep_sst_method", "rsync".into()),
            (
                "wsrep_sst_receive_address",
                format!("127.0.0.1:{}", self.sst_port),
            ),
            // What Galera requires of every node.
            ("binlog_format", "ROW".into()),
            ("innodb_autoinc_lock_mode", "2".into()),
        ]
    }

    /// The `[sst]` section: a full state transfer goes through stunnel under the cluster's
    /// certificates, each end verifying the other's against the cluster's CA.
    fn sst_section(&self, l: &Layout) -> String {
        let tls = galera_files(l);
        format!(
            "[sst]\ntkey = {}\ntcert = {}\ntca = {}\nssl-mode = VERIFY_CA\n",
            tls.key.display(),
            tls.cert.display(),
            tls.ca.display()
        )
    }
}

impl Recipe for MariadbRecipe {
    fn flavor(&self) -> &'static str {
        "mariadb"
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

    fn service_user(&self) -> Result<Option<crate::sandbox::ServiceUser>> {
        // Never root: a server that can write files as root gives root to any account that
        // can log in to it. (A Galera node as root could not serve a state transfer either:
        // its rsync drops to `nobody` and cannot read a root-owned 0700 data directory.)
        crate::sandbox::user::sandbox_account()
    }

    fn client_ca(&self, l: &Layout) -> Option<PathBuf> {
        self.tls.as_ref().map(|_| client_tls_files(l).ca)
    }

    fn inherited_secret(&self) -> Option<SandboxSecret> {
        self.secret.clone()
    }

    fn check_installed(&self) -> Result<()> {
        let hint = self.install_hint();
        if self.server().is_none() {
            return Err(SandboxError::Missing {
                what: "mariadbd (the MariaDB server)".into(),
                hint,
            });
        }
        if self.install_db().is_none() {
            return Err(SandboxError::Missing {
                what: "mariadb-install-db".into(),
                hint,
            });
        }
        if self.galera.is_some() && !Path::new(GALERA_PROVIDER).exists() {
            return Err(SandboxError::Missing {
                what: "the Galera provider (libgalera_smm.so)".into(),
                hint: "run `make install-servers` (Debian: apt-get install galera-4 rsync)".into(),
            });
        }
        // A full state transfer goes only under TLS, through stunnel.
        if self.galera.is_some() && !in_path("stunnel") {
            return Err(SandboxError::Missing {
                what: "stunnel (Galera's state transfers go through it, under TLS)".into(),
                hint: "run `make install-servers` (Debian: apt-get install stunnel4)".into(),
            });
        }
        // The plugins of the server directory, else Debian's.
        let has_plugin = |file: &str| match &self.server_dir {
            Some(d) => d.join("lib/plugin").join(file).exists(),
            None => plugin_dir_has(file),
        };
        if self.rocksdb && !has_plugin("ha_rocksdb.so") {
            return Err(SandboxError::Missing {
                what: "the MyRocks plugin (ha_rocksdb.so)".into(),
                hint: "run `make install-servers` (Debian: apt-get install mariadb-plugin-rocksdb)"
                    .into(),
            });
        }
        if let Some(p) = self.settings.get("plugin_load_add") {
            let file = format!("{p}.so");
            if !has_plugin(&file) {
                return Err(SandboxError::Missing {
                    what: format!("the MariaDB plugin {file}"),
                    hint: format!(
                        "run `make install-servers` (Debian: apt-get install mariadb-plugin-{})",
                        p.replace('_', "-")
                    ),
                });
            }
        }
        Ok(())
    }

    fn config(&self, l: &Layout) -> String {
        let mut s = String::from(
            "# Written by dbduel for one sandbox; the server reads only this file.\n[mysqld]\n",
        );
        // No `user =`: the server is started as its account (`Layout::command`), so no
        // setting can keep it root.
        let mut put = |k: &str, v: &str| s.push_str(&format!("{k} = {v}\n"));
        put("port", &l.port.to_string());
        put("bind-address", "127.0.0.1");
        put(
            "secure_file_priv",
            &l.server_dir().join(FILES_DIR).display().to_string(),
        );
        put("socket", &l.socket.display().to_string());
        put("datadir", &l.datadir.display().to_string());
        put("tmpdir", &l.server_dir().display().to_string());
        put("pid-file", &l.pid_file.display().to_string());
        if l.owner.is_none() {
            put("log-error", &l.log_file.display().to_string());
        } // else its stderr, which dbduel opened into the log, is the log: the account
        // the server runs as may not reach the sandbox directory.
        put("skip-name-resolve", "1");
        put("local_infile", "1");
        // A restart must be cold: no buffer-pool dump and reload across restarts.
        put("innodb_buffer_pool_dump_at_shutdown", "OFF");
        put("innodb_buffer_pool_load_at_startup", "OFF");
        put("innodb_file_per_table", "ON");
        put("max_allowed_packet", &MAX_ALLOWED_PACKET.to_string());
        if let Some(d) = &self.server_dir {
            // A server directory's own files: its messages, character sets and plugins.
            put("basedir", &d.display().to_string());
            put("lc-messages-dir", &d.join("share").display().to_string());
            put(
                "character-sets-dir",
                &d.join("share/charsets").display().to_string(),
            );
            put("plugin-dir", &d.join("lib/plugin").display().to_string());
        }
        if self.rocksdb {
            put("plugin-load-add", "ha_rocksdb.so");
            // Without FORCE a bad RocksDB option only disables the plugin and the server
            // starts without MyRocks; with it the server refuses to start and says why.
            put("rocksdb", "FORCE");
        }
        for (k, v) in self.galera.iter().flat_map(|g| g.settings(l)) {
            put(k, &v);
        }
        for (k, v) in self.tls.iter().flat_map(|_| client_tls_settings(l)) {
            put(k, &v);
        }
        for (k, v) in &self.settings {
            put(k, v);
        }
        if let Some(g) = &self.galera {
            s.push_str(&g.sst_section(l));
        }
        s
    }

    fn init(&self, l: &Layout) -> Result<()> {
        let Some(install_db) = self.install_db() else {
            return Err(SandboxError::Missing {
                what: "mariadb-install-db".into(),
                hint: self.install_hint(),
            });
        };
        make_files_dir(l)?;
        if let Some(g) = &self.galera {
            g.tls.write(&galera_files(l), l.owner.as_ref())?;
        }
        if let Some(t) = &self.tls {
            t.write(&client_tls_files(l), l.owner.as_ref())?;
        }
        // The accounts' SQL holds the secret: a file only the server's account reads (and
        // cannot change), gone once read.
        let sql_file = l.conf_dir().join("accounts.sql");
        secret::write_readable_by(
            &sql_file,
            &accounts_sql(&secret::read(&l.dir)?),
            l.owner.as_ref(),
        )?;
        // Run as the server's account from the start, as the server is.
        let mut cmd = l.command(install_db);
        cmd.arg(format!("--defaults-file={}", l.config_file.display()));
        if let Some(d) = &self.server_dir {
            // Its own mariadbd, my_print_defaults and system tables' SQL, not Debian's.
            cmd.arg(format!("--basedir={}", d.display()));
        }
        cmd.arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .arg("--skip-name-resolve")
            .arg(format!("--extra-file={}", sql_file.display()));
        let out = cmd.output();
        let _ = std::fs::remove_file(&sql_file);
        let out = out.map_err(|e| SandboxError::Failed {
            what: "mariadb-install-db".into(),
            detail: e.to_string(),
        })?;
        if !out.status.success() {
            // The server's own complaints are in its error log (or on stderr); stdout is
            // install-db's boilerplate.
            let mut text = crate::sandbox::tail(&l.log_file, 40);
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            let errors: Vec<&str> = text.lines().filter(|l| l.contains("[ERROR]")).collect();
            let lines: Vec<&str> = if errors.is_empty() {
                text.lines().collect()
            } else {
                errors
            };
            return Err(SandboxError::Failed {
                what: format!("mariadb-install-db in {}", l.datadir.display()),
                detail: lines[lines.len().saturating_sub(15)..].join("\n"),
            });
        }
        Ok(())
    }

    fn command(&self, l: &Layout) -> Command {
        let server = self.server().unwrap_or_else(|| PathBuf::from("mariadbd"));
        // Started as its account (credentials set before exec), never as root.
        let mut cmd = l.command(server);
        // --defaults-file must come first; nothing else is read (no /etc/mysql).
        cmd.arg(format!("--defaults-file={}", l.config_file.display()));
        if self.galera.as_ref().is_some_and(|g| g.bootstrap) {
            cmd.arg("--wsrep-new-cluster");
        }
        cmd
    }

    fn probe(&self, l: &Layout) -> Option<String> {
        let secret = secret::read(&l.dir).ok()?;
        probe_root(l.port, secret.expose())
    }

    fn port_in_use(&self, log_tail: &str) -> bool {
        port_taken(log_tail)
    }

    fn start_timeout(&self) -> Duration {
        // First start after install, with crash recovery or a large buffer pool, can be slow.
        Duration::from_secs(120)
    }
}

/// Make the `secure_file_priv` directory, the server's account's.
fn make_files_dir(l: &Layout) -> Result<()> {
    let d = l.server_dir().join(FILES_DIR);
    l.beneath(&d)?.mkdir(&d, 0o700, l.owner.as_ref())
}

/// Whether the server's plugin directory has `file`.
/// Is `program` on the `PATH` servers are started with?
fn in_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

fn plugin_dir_has(file: &str) -> bool {
    [
        "/usr/lib/mysql/plugin",
        "/usr/lib64/mysql/plugin",
        "/usr/lib/mariadb/plugin",
    ]
    .iter()
    .any(|d| Path::new(d).join(file).exists())
}

/// Does a MySQL-protocol server answer `root` on 127.0.0.1:`port`? Its version when it does.
pub(crate) fn probe_root(port: u16, password: &str) -> Option<String> {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(password.to_string()))
        .prefer_socket(false)
        .max_allowed_packet(Some(MAX_ALLOWED_PACKET))
        .tcp_connect_timeout(Some(Duration::from_millis(500)));
    let mut conn = mysql::Conn::new(opts).ok()?;
    use mysql::prelude::Queryable;
    conn.query_first::<String, _>("SELECT VERSION()")
        .ok()
        .flatten()
}

/// Does a MySQL-protocol server's log tail say it could not bind its port?
pub(crate) fn port_taken(log_tail: &str) -> bool {
    log_tail.contains("Address already in use") || log_tail.contains("Bind on TCP/IP port")
}
