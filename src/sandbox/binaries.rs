//! The server binaries cache: servers Debian does not ship (MySQL, newer MariaDB and
//! PostgreSQL), unpacked once by `scripts/install-servers` into `<root>/<family>-<version>/`
//! with `bin/`, `share/`, `lib/` and a `dbduel-install.json` written last (its presence means
//! the entry is complete). This module finds the root, lists the complete entries, picks one
//! by a version prefix, and knows which servers the install script can fetch.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The command that fills the cache.
pub const INSTALL_COMMAND: &str = "scripts/install-servers";

/// The file that marks a complete cache entry.
pub const INSTALL_RECORD: &str = "dbduel-install.json";

/// Environment variable naming the cache's root, over the defaults.
pub const ROOT_ENV: &str = "DBDUEL_SERVERS_DIR";

/// The servers the install script fetches: its checksum list, one
/// `<sha256>  <family>-<version>  <registry>  <coordinates>` a line.
const KNOWN: &str = include_str!("../../scripts/servers.sha256");

/// The cache's root: `$DBDUEL_SERVERS_DIR`, else `/var/cache/dbduel/servers` for root, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/dbduel/servers` (what the install script uses).
pub fn root() -> PathBuf {
    if let Some(d) = std::env::var_os(ROOT_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if super::user::is_root() {
        return PathBuf::from("/var/cache/dbduel/servers");
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("dbduel").join("servers")
}

/// One complete cache entry, as its `dbduel-install.json` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Installed {
    /// `<family>-<version>`, the directory's name.
    pub name: String,
    /// `mysql`, `mariadb` or `postgres`.
    pub family: String,
    /// The server's full version (`11.4.5`).
    pub version: String,
    /// The registry it came from (`npm`, `maven`).
    pub registry: String,
    /// The package's coordinates in that registry.
    pub package: String,
    /// sha256 of the downloaded package, as checked.
    pub sha256: String,
    /// When it was installed (UTC, RFC 3339).
    #[serde(default)]
    pub installed_at: String,
    /// The entry's directory (`bin/`, `share/`, `lib/` below it).
    #[serde(skip)]
    pub dir: PathBuf,
}

impl Installed {
    /// Where it came from, in one line: `mariadb-11.4.5 from maven ch.vorburger…:11.4.5`.
    pub fn origin(&self) -> String {
        format!("{} from {} {}", self.name, self.registry, self.package)
    }
}

/// A server the install script can fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub family: String,
    pub version: String,
    pub registry: String,
    pub package: String,
}

impl Known {
    /// `<family>-<version>`, its cache directory's name.
    pub fn name(&self) -> String {
        format!("{}-{}", self.family, self.version)
    }
}

/// Every server the install script can fetch, in its order.
pub fn known() -> Vec<Known> {
    KNOWN
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (family, version) = f.get(1)?.split_once('-')?;
            Some(Known {
                family: family.into(),
                version: version.into(),
                registry: (*f.get(2)?).into(),
                package: (*f.get(3)?).into(),
            })
        })
        .collect()
}

/// The complete entries under `root`, by name; an entry without its record (an install
/// under way or interrupted) or with an unreadable one is left out.
pub fn installed_in(root: &Path) -> Vec<Installed> {
    let mut out: Vec<Installed> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| read_record(&e.path()))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The complete entries of the cache at [`root`].
pub fn installed() -> Vec<Installed> {
    installed_in(&root())
}

/// The entry in `dir`, if it is complete.
pub fn read_record(dir: &Path) -> Option<Installed> {
    let text = std::fs::read_to_string(dir.join(INSTALL_RECORD)).ok()?;
    let mut i: Installed = serde_json::from_str(&text).ok()?;
    i.dir = dir.to_path_buf();
    Some(i)
}

/// Does `version` match `prefix` whole part by whole part (`11.4` matches `11.4.5`, not
/// `11.40.1`)?
pub fn version_matches(version: &str, prefix: &str) -> bool {
    version == prefix
        || version
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The newest entry of `family` in `entries` whose version starts with `prefix`.
pub fn find_in<'a>(entries: &'a [Installed], family: &str, prefix: &str) -> Option<&'a Installed> {
    entries
        .iter()
        .filter(|i| i.family == family && version_matches(&i.version, prefix))
        .max_by(|a, b| version_key(&a.version).cmp(&version_key(&b.version)))
}

/// `family`'s entry for the version `prefix` (`8.0`, `11.4`, `17`) in the cache.
pub fn find(family: &str, prefix: &str) -> Option<Installed> {
    find_in(&installed(), family, prefix).cloned()
}

/// A version's parts as numbers, for ordering (`10.11.6` after `10.2`).
pub fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '-'])
        .map_while(|p| p.parse::<u64>().ok())
        .collect()
}

/// Refuse to run a server binary someone else could replace: each of `paths` (a server
/// directory, its `bin/`, the binary) must belong to this user or root and be writable by
/// its owner only. dbduel may run as root, and runs what it finds there.
pub fn check_owned(paths: &[&Path]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for p in paths {
        let m = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if m.uid() != me && m.uid() != 0 {
            return Err(format!(
                "{} belongs to user id {}, not to this user or root; dbduel runs only server binaries that cannot be replaced by someone else (chown it, or install the server again)",
                p.display(),
                m.uid()
            ));
        }
        if m.mode() & 0o022 != 0 {
            return Err(format!(
                "{} is writable by others (mode {:o}); dbduel runs only server binaries that cannot be replaced by someone else (chmod go-w it)",
                p.display(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Run `binary --version` (after `args`) and return its first line of output; the loader's
/// or the program's own words when it cannot run.
pub fn run_version(binary: &Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(binary)
        .args(args)
        .arg("--version")
        .output()
        .map_err(|e| format!("{} cannot be run: {e}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let words = if stderr.trim().is_empty() {
            stdout.trim()
        } else {
            stderr.trim()
        };
        return Err(format!(
            "{} cannot start: {}",
            binary.display(),
            words.lines().take(5).collect::<Vec<_>>().join(" / ")
        ));
    }
    Ok(stdout.lines().next().unwrap_or_default().trim().to_string())
}

/// The first `N.N[.N]` in a `--version` line (`mariadbd  Ver 11.4.5-MariaDB for …` → `11.4.5`;
/// `postgres (PostgreSQL) 17.5` → `17.5`).
pub fn parse_version(line: &str) -> Option<String> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .find(|w| w.contains('.') && w.split('.').all(|p| !p.is_empty()))
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(root: &Path, name: &str, record: bool) {
        let d = root.join(name);
        std::fs::create_dir_all(d.join("bin")).unwrap();
        if record {
            let (family, version) = name.split_once('-').unwrap();
            std::fs::write(
                d.join(INSTALL_RECORD),
                format!(
                    r#"{{"name":"{name}","family":"{family}","version":"{version}","registry":"maven","package":"g:a:{version}","sha256":"00","installed_at":"2026-01-01T00:00:00Z"}}"#
                ),
            )
            .unwrap();
        }
    }

    #[test]
    fn only_complete_entries_are_listed_and_found_by_whole_version_parts() {
        let t = tempfile::tempdir().unwrap();
        entry(t.path(), "mariadb-11.4.5", true);
        entry(t.path(), "mariadb-11.40.1", true);
        entry(t.path(), "postgres-17.5", false); // an install under way
        entry(t.path(), "mysql-8.0.15", true);
        let all = installed_in(t.path());
        let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["mariadb-11.4.5", "mariadb-11.40.1", "mysql-8.0.15"]);
        assert_eq!(
            find_in(&all, "mariadb", "11.4").map(|i| i.dir.clone()),
            Some(t.path().join("mariadb-11.4.5"))
        );
        assert_eq!(
            find_in(&all, "mariadb", "11").map(|i| i.version.as_str()),
            Some("11.40.1")
        );
        assert!(find_in(&all, "postgres", "17").is_none());
        assert!(find_in(&all, "mysql", "8.0.1").is_none());
        assert_eq!(all[0].origin(), "mariadb-11.4.5 from maven g:a:11.4.5");
    }

    #[test]
    fn the_install_scripts_servers_are_known() {
        let names: Vec<String> = known().iter().map(Known::name).collect();
        for n in [
            "mysql-5.6.24",
            "mysql-5.7.22",
            "mysql-8.0.15",
            "mariadb-11.4.5",
            "postgres-17.5",
        ] {
            assert!(names.iter().any(|k| k == n), "{n} in {names:?}");
        }
    }

    #[test]
    fn versions_are_read_from_the_binarys_words() {
        assert_eq!(
            parse_version("/x/bin/mariadbd  Ver 11.4.5-MariaDB for linux-systemd on x86_64")
                .as_deref(),
            Some("11.4.5")
        );
        assert_eq!(
            parse_version("postgres (PostgreSQL) 17.5").as_deref(),
            Some("17.5")
        );
        assert_eq!(
            parse_version("mysqld  Ver 5.6.24 for linux-glibc2.5 on x86_64").as_deref(),
            Some("5.6.24")
        );
        assert_eq!(parse_version("no digits here"), None);
        assert!(version_key("10.11.6") > version_key("10.2"));
    }

    #[test]
    fn a_server_directory_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("s");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(check_owned(&[&d]), Ok(()));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_owned(&[&d]).unwrap_err();
        assert!(e.contains("is writable by others (mode 777)"), "{e}");
    }

    #[test]
    fn a_binary_that_cannot_start_says_so_in_its_own_words() {
        let e = run_version(
            Path::new("/bin/sh"),
            &[
                "-c",
                "echo 'libfoo.so.1: cannot open shared object file' >&2; exit 127",
            ],
        )
        .unwrap_err();
        assert!(e.contains("cannot start: libfoo.so.1: cannot open"), "{e}");
    }
}
