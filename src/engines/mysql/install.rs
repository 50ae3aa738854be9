//! Where an installed MySQL server is: the servers' cache that `scripts/install-servers`
//! fills (`$DBDUEL_SERVERS_DIR`, else `/var/cache/dbduel/servers` for root, else
//! `$XDG_CACHE_HOME/dbduel/servers` or `~/.cache/dbduel/servers`), one directory a server,
//! `mysql-<release>/` with `bin/mysqld`, `share/`, `lib/` (the libraries it brings) and, for
//! 5.6, `data-template/mysql`; `dbduel-install.json`, written last, says it is complete.

use crate::engines::mysql::versions::{self, MysqlVersion};
use crate::sandbox::SandboxError;
use std::path::{Path, PathBuf};

/// The file an install writes last: a server directory without it is incomplete.
const COMPLETE: &str = "dbduel-install.json";
/// How a user installs the servers.
pub const INSTALL_HINT: &str = "run `scripts/install-servers` to install them";

/// The servers' cache directory.
pub fn cache_root() -> PathBuf {
    if let Some(d) = std::env::var_os("DBDUEL_SERVERS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if crate::sandbox::user::is_root() {
        return PathBuf::from("/var/cache/dbduel/servers");
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("dbduel").join("servers")
}

/// The complete MySQL installs in the cache: (release, directory), oldest release first.
pub fn installed() -> Vec<(String, PathBuf)> {
    let root = cache_root();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let release = name.strip_prefix("mysql-")?.to_string();
            let dir = e.path();
            dir.join(COMPLETE).is_file().then_some((release, dir))
        })
        .collect();
    found.sort_by_key(|(r, _)| release_key(r));
    found
}

/// A release's numbers, for ordering (`5.7.22` before `5.7.100`).
fn release_key(release: &str) -> Vec<u64> {
    release
        .split(['.', '-'])
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// The directory of the newest complete install of `v` (`mysql-<version>.*`), or what is
/// missing: what is installed and how to install the rest.
pub fn server_dir(v: &MysqlVersion) -> Result<PathBuf, SandboxError> {
    let prefix = format!("{}.", v.version);
    installed()
        .into_iter()
        .rev()
        .find(|(release, _)| release.starts_with(&prefix))
        .map(|(_, dir)| dir)
        .ok_or_else(|| missing(v.version))
}

/// `version` is not installed (or not one dbduel provisions): the error names the versions
/// dbduel runs, those installed and the command that installs them.
pub fn missing(version: &str) -> SandboxError {
    let have: Vec<String> = installed().into_iter().map(|(r, _)| r).collect();
    let have = if have.is_empty() {
        "none".to_string()
    } else {
        have.join(", ")
    };
    SandboxError::Missing {
        what: format!(
            "MySQL {version} (dbduel runs MySQL {}; installed in {}: {have})",
            versions::names(),
            cache_root().display()
        ),
        hint: INSTALL_HINT.into(),
    }
}

/// Every version's install, for `find` with a version dbduel knows.
pub fn resolve(version: &str) -> Result<(&'static MysqlVersion, PathBuf), SandboxError> {
    let v = versions::find(version).ok_or_else(|| missing(version))?;
    Ok((v, server_dir(v)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_order_by_their_numbers() {
        let mut r = vec!["5.7.100", "5.7.22", "5.6.24"];
        r.sort_by_key(|r| release_key(r));
        assert_eq!(r, ["5.6.24", "5.7.22", "5.7.100"]);
    }
}
