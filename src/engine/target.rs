//! External servers: a contender's `target = "mysql://user@host:port/db"` (or `postgres://…`),
//! its password from an environment variable or a file — never from the study text or the
//! command line — and an optional command that restarts it.

use crate::decode::{DecodeError, KeyPath};
use std::fmt;
use std::path::{Path, PathBuf};

/// A password that never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// An existing server a contender runs against instead of a sandbox.
#[derive(Debug, Clone)]
pub struct Target {
    /// `mysql` or `postgres`.
    pub scheme: String,
    pub user: String,
    pub host: String,
    pub port: u16,
    /// The database dbduel creates and works in (default `dbduel_<study>`).
    pub database: Option<String>,
    pub password: Option<Secret>,
    /// Shell command that restarts the server, for steps that need a restart.
    pub restart_command: Option<String>,
    /// May a password cross a connection that is neither loopback nor encrypted in a form
    /// an eavesdropper can use (PostgreSQL's cleartext and MD5 exchanges)? The URL's
    /// `allow_cleartext=1`; off by default.
    pub allow_cleartext: bool,
    /// What TLS the clients ask for, and how they check the server.
    pub tls: TlsSettings,
}

impl Target {
    /// A server on 127.0.0.1 at `port`, as `user`, with no password, database or restart
    /// command: what the wire clients' own tests connect to.
    #[cfg(test)]
    pub fn loopback(scheme: &str, user: &str, port: u16) -> Target {
        Target {
            scheme: scheme.into(),
            user: user.into(),
            host: "127.0.0.1".into(),
            port,
            database: None,
            password: None,
            restart_command: None,
            allow_cleartext: false,
            tls: TlsSettings::default(),
        }
    }

    /// The target as shown in results: no password, ever.
    pub fn display(&self) -> String {
        let user = if self.user.is_empty() {
            String::new()
        } else {
            format!("{}@", self.user)
        };
        format!(
            "{}://{user}{}:{}/{}",
            self.scheme,
            self.host,
            self.port,
            self.database.as_deref().unwrap_or("")
        )
    }

    /// The same target reached in clear: what `prefer` falls back to when TLS cannot be had.
    pub fn in_clear(&self) -> Target {
        Target {
            tls: TlsSettings::default(),
            ..self.clone()
        }
    }

    /// Is the server on this machine (so its files may be readable here)?
    pub fn is_local(&self) -> bool {
        matches!(self.host.as_str(), "127.0.0.1" | "localhost" | "::1")
    }
}

/// How a client asks for TLS: libpq's `sslmode` levels, which the mysql client's `ssl-mode`
/// levels map onto (`DISABLED`, `PREFERRED`, `REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Never TLS (what dbduel's own sandboxes, on loopback or a private socket, use).
    #[default]
    Disable,
    /// In clear (libpq would try TLS only after a clear connection failed).
    Allow,
    /// TLS when the server offers it, in clear when it does not: libpq's and the mysql
    /// client's default.
    Prefer,
    /// TLS or nothing; the certificate is not checked.
    Require,
    /// TLS, with a certificate signed by the given CA, for any name.
    VerifyCa,
    /// TLS, with a certificate signed by the given CA for the host connected to.
    VerifyFull,
}

impl TlsMode {
    /// Does the client ask the server for TLS at all?
    pub fn tries_tls(self) -> bool {
        !matches!(self, TlsMode::Disable | TlsMode::Allow)
    }

    /// Must the connection be encrypted (no clear fallback)?
    pub fn requires_tls(self) -> bool {
        matches!(
            self,
            TlsMode::Require | TlsMode::VerifyCa | TlsMode::VerifyFull
        )
    }

    /// libpq's word for the level.
    pub fn name(self) -> &'static str {
        match self {
            TlsMode::Disable => "disable",
            TlsMode::Allow => "allow",
            TlsMode::Prefer => "prefer",
            TlsMode::Require => "require",
            TlsMode::VerifyCa => "verify-ca",
            TlsMode::VerifyFull => "verify-full",
        }
    }

    /// Either family's word (any case, `_` or `-`) for a level.
    fn parse(word: &str) -> Option<TlsMode> {
        Some(match word.to_ascii_lowercase().replace('_', "-").as_str() {
            "disable" | "disabled" => TlsMode::Disable,
            "allow" => TlsMode::Allow,
            "prefer" | "preferred" => TlsMode::Prefer,
            "require" | "required" => TlsMode::Require,
            "verify-ca" => TlsMode::VerifyCa,
            "verify-full" | "verify-identity" => TlsMode::VerifyFull,
            _ => return None,
        })
    }
}

/// The CA a verifying client checks the server's certificate against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    File(PathBuf),
    /// The well-known public CAs (libpq's `sslrootcert=system`).
    System,
}

/// A target's TLS settings, from its URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: TlsMode,
    pub ca: Option<RootCert>,
    /// The client's certificate and key (PEM), when the server asks for one.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// The URL's `?key=value&…` settings, each in libpq's spelling and the mysql client's:
/// `sslmode`/`ssl-mode`, `sslrootcert`/`ssl-ca`, `sslcert`/`ssl-cert`, `sslkey`/`ssl-key`
/// (`_` for `-` too), and `allow_cleartext`; files as given, like `password_file`. Returns
/// the TLS settings and `allow_cleartext`.
fn url_settings(
    query: &str,
    at: &dyn Fn(String) -> DecodeError,
) -> Result<(TlsSettings, bool), DecodeError> {
    let mut allow_cleartext = false;
    let mut mode = None;
    let mut mysql_words = false;
    let mut tls = TlsSettings::default();
    let file = |value: &str| PathBuf::from(value);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let needs_value = || {
            if value.is_empty() {
                Err(at(format!("{key} needs a value: {key}=FILE")))
            } else {
                Ok(())
            }
        };
        match key.replace('_', "-").as_str() {
            "sslmode" | "ssl-mode" => {
                mysql_words = key != "sslmode";
                mode = Some(TlsMode::parse(value).ok_or_else(|| {
                    at(format!(
                        "{key}={value}: give disable, allow, prefer, require, verify-ca or verify-full (or MySQL's DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY)"
                    ))
                })?);
            }
            "sslrootcert" | "ssl-ca" => {
                needs_value()?;
                tls.ca = Some(if value == "system" {
                    RootCert::System
                } else {
                    RootCert::File(file(value))
                });
            }
            "sslcert" | "ssl-cert" => {
                needs_value()?;
                tls.cert = Some(file(value));
            }
            "sslkey" | "ssl-key" => {
                needs_value()?;
                tls.key = Some(file(value));
            }
            "allow-cleartext" => {
                allow_cleartext = match value {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(at(format!("allow_cleartext={value}: give 1 or 0"))),
                }
            }
            _ => {
                return Err(at(format!(
                    "unknown setting {key:?} in the target; known: sslmode (or ssl-mode), sslrootcert (ssl-ca), sslcert (ssl-cert), sslkey (ssl-key), allow_cleartext"
                )));
            }
        }
    }
    if tls.cert.is_some() != tls.key.is_some() {
        return Err(at(
            "give the client certificate and its key together: sslcert=FILE&sslkey=FILE (ssl-cert, ssl-key)".into(),
        ));
    }
    // As libpq and the mysql client: no level said is `prefer`; a CA given without a level
    // verifies the chain, and so does libpq's `prefer` or `require` with a CA (the mysql
    // client's explicit PREFERRED and REQUIRED do not).
    tls.mode = match mode {
        None if tls.ca.is_some() => TlsMode::VerifyCa,
        Some(TlsMode::Prefer | TlsMode::Require) if tls.ca.is_some() && !mysql_words => {
            TlsMode::VerifyCa
        }
        None => TlsMode::Prefer,
        Some(m) => m,
    };
    if matches!(tls.mode, TlsMode::VerifyCa | TlsMode::VerifyFull) && tls.ca.is_none() {
        return Err(at(format!(
            "{}: verifying the server needs the CA that signed its certificate: add sslrootcert=FILE (ssl-ca=FILE), or sslrootcert=system for the well-known public CAs",
            tls.mode.name()
        )));
    }
    Ok((tls, allow_cleartext))
}

/// The client key file a target URL names (`sslkey`, `ssl-key`, `ssl_key`), if any: a file
/// dbduel would sign a TLS handshake with, so a run's manifest that names one is asked about
/// as its password files are.
pub fn client_key_in(url: &str) -> Option<&str> {
    let (_, query) = url.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        matches!(key.replace('_', "-").as_str(), "sslkey" | "ssl-key").then_some(value)
    })
}

/// Where a contender's target settings are, for error paths.
pub struct TargetSpec<'a> {
    pub url: &'a str,
    pub password_env: Option<&'a str>,
    pub password_file: Option<&'a PathBuf>,
    pub restart_command: Option<&'a str>,
    /// Read the password now (false: the study is checked here and runs elsewhere, e.g.
    /// `dbduel k8s`, where the variable is set; the target then has none).
    pub read_password: bool,
}

/// Parse a target for an engine whose URL scheme is `scheme` (`mysql` or `postgres`), whose
/// servers always name a user. Error paths are relative to the contender table.
pub fn parse(
    spec: &TargetSpec<'_>,
    scheme: &str,
    default_port: u16,
) -> Result<Target, DecodeError> {
    parse_url(spec, scheme, default_port, true)
}

/// [`parse`] for an engine whose server may run without authentication (MongoDB's): the
/// user may be left out.
pub fn parse_user_optional(
    spec: &TargetSpec<'_>,
    scheme: &str,
    default_port: u16,
) -> Result<Target, DecodeError> {
    parse_url(spec, scheme, default_port, false)
}

fn parse_url(
    spec: &TargetSpec<'_>,
    scheme: &str,
    default_port: u16,
    user_required: bool,
) -> Result<Target, DecodeError> {
    let at = |m: String| DecodeError::at(KeyPath::root().key("target"), m);
    let example = if !user_required {
        format!("{scheme}://[USER@]HOST:PORT/DATABASE")
    } else {
        format!("{scheme}://USER@HOST:PORT/DATABASE")
    };
    let rest = spec
        .url
        .strip_prefix(&format!("{scheme}://"))
        .ok_or_else(|| at(format!("target must look like {example}")))?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (tls, allow_cleartext) = url_settings(query, &at)?;
    let (authority, path) = match rest.split_once('/') {
        Some((a, p)) => (a, p),
        None => (rest, ""),
    };
    let (user, hostport) = match authority.rsplit_once('@') {
        Some(split) => split,
        None if !user_required => ("", authority),
        None => return Err(at(format!("target needs a user: {example}"))),
    };
    if user.contains(':') {
        return Err(at(
            "the target holds a password; put it in password_env (an environment variable's name) or password_file instead, so it never appears in files or process lists".into(),
        ));
    }
    // A MongoDB server may run without authentication; SQL servers always name a user.
    if user.is_empty() && user_required {
        return Err(at(format!("target needs a user: {example}")));
    }
    let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
        let (h, p) = h
            .split_once(']')
            .ok_or_else(|| at("unclosed [ in the host".into()))?;
        (h.to_string(), p.strip_prefix(':').unwrap_or(""))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (hostport.to_string(), ""),
        }
    };
    if host.is_empty() {
        return Err(at(format!("target needs a host: {example}")));
    }
    let port = if port.is_empty() {
        default_port
    } else {
        port.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| at(format!("port {port:?} is not a port number (1-65535)")))?
    };
    let database = match path.trim_end_matches('/') {
        "" => None,
        db if db.len() <= 63 && db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Some(db.to_string())
        }
        db => {
            return Err(at(format!(
                "database {db:?} must be 1-63 letters, digits or _"
            )));
        }
    };
    let password = match (spec.password_env, spec.password_file) {
        (Some(_), Some(_)) => {
            return Err(DecodeError::at(
                KeyPath::root().key("password_file"),
                "give password_env or password_file, not both",
            ));
        }
        _ if !spec.read_password => None,
        (Some(var), None) => Some(Secret(std::env::var(var).map_err(|_| {
            DecodeError::at(
                KeyPath::root().key("password_env"),
                format!("the environment variable {var} is not set; export it with the target's password"),
            )
        })?)),
        (None, Some(file)) => Some(Secret(read_password_file(file).map_err(|m| {
            DecodeError::at(KeyPath::root().key("password_file"), m)
        })?)),
        (None, None) => None,
    };
    Ok(Target {
        scheme: scheme.to_string(),
        user: user.to_string(),
        host,
        port,
        database,
        password,
        restart_command: spec.restart_command.map(str::to_string),
        allow_cleartext,
        tls,
    })
}

/// The first line of a password file, read only when it is a file of the user running
/// dbduel that no one else may read or write (the rule libpq applies to `~/.pgpass`). A
/// study or a run's manifest names the file, so it cannot make dbduel read a file kept
/// from other accounts (`/etc/shadow`, someone's key) and send its first line to a server.
pub fn read_password_file(file: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut f = open_regular(file, true)?;
    let mut text = String::new();
    f.by_ref()
        .take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// Open a regular file for reading without blocking on a FIFO or device; when `private`,
/// only one of the user's own that no one else may read or write.
pub fn open_regular(file: &Path, private: bool) -> Result<std::fs::File, String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        // No FIFO or device may block the read: a regular file is checked below.
        .custom_flags(libc::O_NONBLOCK)
        .open(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let meta = f
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", file.display()));
    }
    if private && (meta.uid() != me || meta.mode() & 0o077 != 0) {
        return Err(format!(
            "{} must be a file of yours that only you can read (it is uid {}, mode {:o}): chown it, then chmod 600 it",
            file.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(f)
}

/// Run a target's restart command (`sh -c`), returning its failure as text. A stop asked
/// for meanwhile (Ctrl-C, SIGTERM, SIGHUP) kills the command and everything it started.
pub fn run_restart(cmd: &str) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        // Its own group, so a stop ends the command's children too.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run restart_command: {e}"))?;
    let (status, stderr) =
        crate::stop::wait_child(child).map_err(|e| format!("restart_command: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "restart_command exited with {status}: {}",
            stderr.trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_file_others_can_read_or_that_is_not_a_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("pw");
        std::fs::write(&f, "s3cret\nsecond\n").expect("write");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = read_password_file(&f).expect_err("0644 refused");
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read_password_file(&f).as_deref(), Ok("s3cret"));
        // A link to it reads it; a directory, and a file kept from others, are refused.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &link).expect("symlink");
        assert_eq!(read_password_file(&link).as_deref(), Ok("s3cret"));
        assert!(read_password_file(dir.path()).is_err());
        if Path::new("/etc/shadow").exists() {
            assert!(read_password_file(Path::new("/etc/shadow")).is_err());
        }
    }

    fn spec(url: &str) -> TargetSpec<'_> {
        TargetSpec {
            url,
            password_env: None,
            password_file: None,
            restart_command: None,
            read_password: true,
        }
    }

    #[test]
    fn parses_targets() {
        let t = parse(&spec("mysql://bench@db.example:3307/perf"), "mysql", 3306).unwrap();
        assert_eq!(
            (t.user.as_str(), t.host.as_str(), t.port),
            ("bench", "db.example", 3307)
        );
        assert_eq!(t.database.as_deref(), Some("perf"));
        let t = parse(&spec("mysql://root@127.0.0.1"), "mysql", 3306).unwrap();
        assert_eq!(t.port, 3306);
        assert!(t.is_local() && t.database.is_none());
        let t = parse(&spec("postgres://u@[::1]:5433/"), "postgres", 5432).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 5433));
        // A MongoDB server may have no users; SQL servers always do.
        let t = parse_user_optional(&spec("mongodb://127.0.0.1/docs"), "mongodb", 27017).unwrap();
        assert_eq!((t.user.as_str(), t.port), ("", 27017));
        assert_eq!(t.display(), "mongodb://127.0.0.1:27017/docs");
        assert!(parse(&spec("mysql://127.0.0.1"), "mysql", 3306).is_err());
    }

    #[test]
    fn rejects_bad_targets_and_inline_passwords() {
        assert!(
            parse(&spec("mysql://u:secret@h/db"), "mysql", 3306)
                .unwrap_err()
                .message
                .contains("password_env")
        );
        assert!(parse(&spec("postgres://u@h/db"), "mysql", 3306).is_err());
        assert!(parse(&spec("mysql://h:3306/db"), "mysql", 3306).is_err());
        assert!(parse(&spec("mysql://u@h:99999/db"), "mysql", 3306).is_err());
        assert!(parse(&spec("mysql://u@h/db;drop"), "mysql", 3306).is_err());
    }

    #[test]
    fn a_client_key_is_found_in_either_spelling() {
        assert_eq!(
            client_key_in("postgres://u@h/p?sslmode=require&sslcert=c.pem&sslkey=k.pem"),
            Some("k.pem")
        );
        assert_eq!(client_key_in("mysql://u@h?ssl_key=/k"), Some("/k"));
        assert_eq!(client_key_in("mysql://u@h?ssl-mode=REQUIRED"), None);
        assert_eq!(client_key_in("mysql://u@h"), None);
    }

    #[test]
    fn tls_levels_read_as_libpq_and_the_mysql_client_read_them() {
        let tls = |url: &str| {
            let scheme = url.split(':').next().unwrap();
            parse(&spec(url), scheme, 1).map(|t| t.tls)
        };
        let mode = |url: &str| tls(url).unwrap().mode;
        // Nothing said: prefer, as both clients default.
        assert_eq!(mode("postgres://u@db.example/perf"), TlsMode::Prefer);
        assert_eq!(mode("mysql://u@db.example/perf"), TlsMode::Prefer);
        assert_eq!(mode("postgres://u@h/p?sslmode=require"), TlsMode::Require);
        assert_eq!(mode("mysql://u@h/p?ssl-mode=REQUIRED"), TlsMode::Require);
        assert_eq!(mode("mysql://u@h/p?ssl_mode=disabled"), TlsMode::Disable);
        let full = tls("mysql://u@h/p?ssl-mode=VERIFY_IDENTITY&ssl-ca=ca.pem").unwrap();
        assert_eq!(full.mode, TlsMode::VerifyFull);
        assert_eq!(full.ca, Some(RootCert::File("ca.pem".into())));
        // A CA with libpq's require verifies the chain; with the mysql client's REQUIRED not.
        assert_eq!(
            mode("postgres://u@h/p?sslmode=require&sslrootcert=ca.pem"),
            TlsMode::VerifyCa
        );
        assert_eq!(
            mode("mysql://u@h/p?ssl-mode=REQUIRED&ssl-ca=ca.pem"),
            TlsMode::Require
        );
        assert_eq!(mode("mysql://u@h/p?ssl-ca=ca.pem"), TlsMode::VerifyCa);
        assert_eq!(
            tls("postgres://u@h/p?sslmode=verify-full&sslrootcert=system")
                .unwrap()
                .ca,
            Some(RootCert::System)
        );
        for (url, words) in [
            ("postgres://u@h/p?sslmode=verify-full", "sslrootcert=FILE"),
            ("mysql://u@h/p?ssl-mode=VERIFY_CA", "ssl-ca=FILE"),
            ("postgres://u@h/p?sslmode=sometimes", "verify-full"),
            ("postgres://u@h/p?sslcert=c.pem", "together"),
            ("postgres://u@h/p?sslrootcert=", "needs a value"),
            ("postgres://u@h/p?tls=1", "unknown setting"),
        ] {
            let e = tls(url).unwrap_err();
            assert!(e.message.contains(words), "{url}: {}", e.message);
        }
        let t = parse(
            &spec("postgres://u@db.example/perf?sslmode=disable"),
            "postgres",
            1,
        )
        .unwrap();
        assert_eq!(t.database.as_deref(), Some("perf"));
        assert!(!t.allow_cleartext);
        let t = parse(
            &spec("postgres://u@db.example/perf?sslmode=prefer&allow_cleartext=1"),
            "postgres",
            1,
        )
        .unwrap();
        assert!(t.allow_cleartext);
    }

    #[test]
    fn password_never_prints() {
        let s = TargetSpec {
            url: "mysql://u@h/db",
            password_env: Some("PATH"),
            password_file: None,
            restart_command: None,
            read_password: true,
        };
        let t = parse(&s, "mysql", 3306).unwrap();
        let shown = format!("{t:?} {}", t.display());
        assert!(!shown.contains(t.password.as_ref().unwrap().expose()));
    }
}
