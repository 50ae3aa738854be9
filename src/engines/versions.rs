//! Which server binary a contender runs: its `version` (a row of its family's version table —
//! the system's, Debian's packages, or an entry of the server cache) or its `basedir` (any
//! unpacked server tarball, its version read from the binary), decoded and checked here once
//! for every server family and resolved on this machine before anything runs.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::EngineError;
use crate::sandbox::binaries::{self, Installed};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a contender asks for with its `version` and `basedir` keys; both absent: the
/// system's server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryChoice {
    /// A version of the family (`"11.4"`, `"17"`), from its version table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// An unpacked server tarball (`<basedir>/bin/<server>`), by absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basedir: Option<PathBuf>,
}

impl BinaryChoice {
    /// Neither key given: the system's server.
    pub fn is_system(&self) -> bool {
        self.version.is_none() && self.basedir.is_none()
    }

    /// The keys' own rules: a version of digits and dots, a basedir by absolute path, not
    /// both. Errors are placed at the key (relative to the contender).
    pub fn validate(&self) -> Result<(), DecodeError> {
        if let Some(v) = &self.version {
            let ok = !v.is_empty()
                && v.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                return Err(DecodeError::at(
                    KeyPath::root().key("version"),
                    format!("version = {v:?} must be a server version such as \"11.4\" or \"17\""),
                ));
            }
            if self.basedir.is_some() {
                return Err(DecodeError::at(
                    KeyPath::root().key("basedir"),
                    "give version or basedir, not both: a basedir's version is read from its server binary",
                ));
            }
        }
        if let Some(d) = &self.basedir
            && !d.is_absolute()
        {
            return Err(DecodeError::at(
                KeyPath::root().key("basedir"),
                format!(
                    "basedir = {:?} must be an absolute path (an unpacked server tarball)",
                    d.display().to_string()
                ),
            ));
        }
        Ok(())
    }

    /// Refuse the keys for a family without a private server of its own (`what` says why).
    pub fn refuse(&self, what: &str) -> Result<(), DecodeError> {
        let key = if self.version.is_some() {
            "version"
        } else if self.basedir.is_some() {
            "basedir"
        } else {
            return Ok(());
        };
        Err(DecodeError::at(
            KeyPath::root().key(key),
            format!("{key} chooses a private server's binary; {what}"),
        ))
    }
}

/// A contender's `version` as text: a string as written, a whole number as its digits; a
/// decimal number is refused (as a number 10.10 would read 10.1).
pub fn version_text(v: &toml::Value) -> Result<String, DecodeError> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        other => Err(DecodeError::at(
            KeyPath::root().key("version"),
            format!(
                "version must be a string, such as version = \"11.4\": as a number it loses trailing zeros (this one reads {other})"
            ),
        )),
    }
}

/// Where a version of a family comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Debian's packages (the default when no version is given).
    System,
    /// The server cache `scripts/install-servers` fills.
    Cache,
}

/// What a family tells this module about its binaries.
#[derive(Debug, Clone, Copy)]
pub struct FamilyBinaries {
    /// The family's name in the cache (`mariadb`, `postgres`).
    pub family: &'static str,
    /// Its name for people (`MariaDB`).
    pub title: &'static str,
    /// The server binary under `bin/` (`mariadbd`).
    pub server: &'static str,
    /// The system's server binary, when installed.
    pub system: fn() -> Option<PathBuf>,
    /// The family's versions: series and where each comes from.
    pub series: &'static [(&'static str, Origin)],
}

/// The binaries a contender's server runs, resolved on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerBinary {
    /// The directory holding `bin/`, `share/`, `lib/`; `None`: the system's installation.
    pub dir: Option<PathBuf>,
    /// The server's full version as its binary says (empty for the unchecked default).
    pub version: String,
    /// Where it came from, for the manifest (`system /usr/sbin/mariadbd`, `cache
    /// mariadb-11.4.5 from maven …`, `basedir /opt/mariadb`).
    pub origin: String,
}

impl ServerBinary {
    /// The system's server, as the family finds it.
    pub fn system() -> Self {
        ServerBinary {
            dir: None,
            version: String::new(),
            origin: "system".into(),
        }
    }
}

fn missing(msg: String) -> EngineError {
    EngineError::new("missing", msg)
}

impl FamilyBinaries {
    /// The series row `version` falls in (`11.4.5` and `11.4` in `11.4`).
    pub fn series_of(&self, version: &str) -> Option<(&'static str, Origin)> {
        self.series.iter().copied().find(|(s, _)| {
            binaries::version_matches(version, s) || binaries::version_matches(s, version)
        })
    }

    /// Resolve a contender's choice on this machine: the binary exists and starts (its
    /// `--version` runs), and it is the version asked for. Errors are `missing` (exit 3)
    /// and say what is installed and how to install the rest.
    pub fn resolve(&self, choice: &BinaryChoice) -> Result<ServerBinary, EngineError> {
        if let Some(dir) = &choice.basedir {
            return self.in_basedir(dir);
        }
        let Some(v) = choice.version.as_deref() else {
            let mut b = ServerBinary::system();
            if let Some(bin) = (self.system)() {
                b.origin = format!("system {}", bin.display());
            }
            return Ok(b);
        };
        if let Some((series, Origin::System)) = self.series_of(v)
            && let Some(bin) = (self.system)()
        {
            let found = self.version_of(&bin)?;
            if binaries::version_matches(&found, series) {
                return Ok(ServerBinary {
                    dir: None,
                    origin: format!("system {}", bin.display()),
                    version: found,
                });
            }
        }
        match binaries::find(self.family, v) {
            Some(entry) => self.cached_entry(&entry),
            None if matches!(self.series_of(v), Some((_, Origin::System)))
                && (self.system)().is_none() =>
            {
                Err(missing(format!(
                    "{} {v} is the system's and its {} is not installed: run `make install-servers` (Debian's packages)",
                    self.title, self.server
                )))
            }
            None => Err(missing(self.not_installed(v))),
        }
    }

    fn cached_entry(&self, entry: &Installed) -> Result<ServerBinary, EngineError> {
        let bin = entry.dir.join("bin").join(self.server);
        // The cache's root too: whoever can write it can swap an entry.
        let root = entry.dir.parent().unwrap_or(&entry.dir);
        binaries::check_owned(&[root, &entry.dir, &entry.dir.join("bin"), &bin])
            .map_err(missing)?;
        self.version_of(&bin)?;
        Ok(ServerBinary {
            dir: Some(entry.dir.clone()),
            version: entry.version.clone(),
            origin: format!("cache {}", entry.origin()),
        })
    }

    fn in_basedir(&self, dir: &Path) -> Result<ServerBinary, EngineError> {
        let bin = ["bin", "sbin"]
            .iter()
            .map(|b| dir.join(b).join(self.server))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                missing(format!(
                    "basedir {} has no bin/{}: it must be an unpacked {} server (bin/{}, share/)",
                    dir.display(),
                    self.server,
                    self.title,
                    self.server
                ))
            })?;
        let bin_dir = bin.parent().unwrap_or(dir);
        binaries::check_owned(&[dir, bin_dir, &bin]).map_err(missing)?;
        let version = self.version_of(&bin)?;
        Ok(ServerBinary {
            dir: Some(dir.to_path_buf()),
            version,
            origin: format!("basedir {}", dir.display()),
        })
    }

    /// The version `bin --version` prints; the loader's or the server's words when it
    /// cannot start.
    fn version_of(&self, bin: &Path) -> Result<String, EngineError> {
        let line = binaries::run_version(bin, &[]).map_err(missing)?;
        binaries::parse_version(&line).ok_or_else(|| {
            missing(format!(
                "{} --version printed no version ({line:?}); is it a {} server?",
                bin.display(),
                self.title
            ))
        })
    }

    /// What is installed, and the command that installs the rest.
    fn not_installed(&self, v: &str) -> String {
        let mut have: Vec<String> = Vec::new();
        if let Some(bin) = (self.system)() {
            let ver = binaries::run_version(&bin, &[])
                .ok()
                .and_then(|l| binaries::parse_version(&l))
                .unwrap_or_else(|| "?".into());
            have.push(format!("{ver} (system)"));
        }
        let cached = binaries::installed();
        have.extend(
            cached
                .iter()
                .filter(|i| i.family == self.family)
                .map(|i| format!("{} (cache)", i.version)),
        );
        let installable: Vec<String> = binaries::known()
            .into_iter()
            .filter(|k| k.family == self.family && !cached.iter().any(|i| i.name == k.name()))
            .map(|k| k.name())
            .collect();
        let have = if have.is_empty() {
            "none".to_string()
        } else {
            have.join(", ")
        };
        let rest = if installable.is_empty() {
            format!(
                "the server cache ({}) has every version `{}` fetches",
                binaries::root().display(),
                binaries::INSTALL_COMMAND
            )
        } else {
            format!(
                "`{}` installs {} into {}",
                binaries::INSTALL_COMMAND,
                installable.join(", "),
                binaries::root().display()
            )
        };
        let series: Vec<&str> = self.series.iter().map(|(s, _)| *s).collect();
        format!(
            "{} {v} is not installed here; installed: {have}; dbduel runs {} {}; {rest}; or give basedir = \"/path\" of an unpacked {} server",
            self.title,
            self.title,
            series.join(", "),
            self.title
        )
    }
}

/// One version of a family as this machine has it, for `dbduel sandbox versions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Available {
    /// The family's name for people (`MariaDB`), or the cache's family name for entries no
    /// family here runs.
    pub family: String,
    /// The series a contender names (`11.4`).
    pub series: String,
    /// `system` or `cache`.
    pub origin: &'static str,
    /// Where it is and its full version, when installed; else `None`.
    pub installed: Option<String>,
    /// What installs it, when it is not installed.
    pub install: Option<String>,
}

/// Every version of `families` (installed or not), then cache entries no family runs.
pub fn available(families: &[&FamilyBinaries]) -> Vec<Available> {
    let cached = binaries::installed();
    let mut out = Vec::new();
    for f in families {
        for (series, origin) in f.series {
            let row = |installed: Option<String>, install: Option<String>| Available {
                family: f.title.into(),
                series: (*series).into(),
                origin: match origin {
                    Origin::System => "system",
                    Origin::Cache => "cache",
                },
                installed,
                install,
            };
            out.push(match origin {
                Origin::System => match (f.system)() {
                    Some(bin) => {
                        let v = binaries::run_version(&bin, &[])
                            .ok()
                            .and_then(|l| binaries::parse_version(&l))
                            .unwrap_or_else(|| "?".into());
                        row(Some(format!("{v} {}", bin.display())), None)
                    }
                    None => row(
                        None,
                        Some("make install-servers (Debian's packages)".into()),
                    ),
                },
                Origin::Cache => match binaries::find_in(&cached, f.family, series) {
                    Some(i) => row(Some(format!("{} {}", i.version, i.dir.display())), None),
                    None => row(None, Some(install_command(f.family, series))),
                },
            });
        }
    }
    for i in &cached {
        let runs = families.iter().any(|f| {
            f.family == i.family
                && f.series
                    .iter()
                    .any(|(s, _)| binaries::version_matches(&i.version, s))
        });
        if !runs {
            out.push(Available {
                family: i.family.clone(),
                series: i.version.clone(),
                origin: "cache",
                installed: Some(format!("{} {}", i.version, i.dir.display())),
                install: None,
            });
        }
    }
    // What the install script fetches for a family this build does not run yet.
    for k in binaries::known() {
        let runs = families.iter().any(|f| f.family == k.family);
        if !runs && !cached.iter().any(|i| i.name == k.name()) {
            out.push(Available {
                family: k.family.clone(),
                series: k.version.clone(),
                origin: "cache",
                installed: None,
                install: Some(format!("{} {}", binaries::INSTALL_COMMAND, k.name())),
            });
        }
    }
    out
}

/// The install script's command for a family's series.
fn install_command(family: &str, series: &str) -> String {
    match binaries::known()
        .into_iter()
        .find(|k| k.family == family && binaries::version_matches(&k.version, series))
    {
        Some(k) => format!("{} {}", binaries::INSTALL_COMMAND, k.name()),
        None => "no package known; give basedir = \"/path\" of an unpacked server".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_checked_where_they_are() {
        let c = |v: Option<&str>, d: Option<&str>| BinaryChoice {
            version: v.map(String::from),
            basedir: d.map(PathBuf::from),
        };
        assert!(c(None, None).validate().is_ok());
        assert!(c(Some("11.4"), None).validate().is_ok());
        assert!(c(None, Some("/opt/m")).validate().is_ok());
        let e = c(Some("latest"), None).validate().unwrap_err().message;
        assert!(e.contains("version") && e.contains("\"11.4\""), "{e}");
        let e = c(Some("11.4"), Some("/opt/m"))
            .validate()
            .unwrap_err()
            .message;
        assert!(e.contains("not both"), "{e}");
        let e = c(None, Some("opt/m")).validate().unwrap_err().message;
        assert!(e.contains("absolute"), "{e}");
        let e = c(Some("3"), None)
            .refuse("sqlite is embedded")
            .unwrap_err()
            .message;
        assert!(e.starts_with("version"), "{e}");
    }

    #[test]
    fn a_basedir_without_the_server_says_what_it_must_hold() {
        let t = tempfile::tempdir().unwrap();
        let fam = FamilyBinaries {
            family: "mariadb",
            title: "MariaDB",
            server: "mariadbd",
            system: || None,
            series: &[("10.11", Origin::System)],
        };
        let choice = BinaryChoice {
            version: None,
            basedir: Some(t.path().to_path_buf()),
        };
        let e = fam.resolve(&choice).unwrap_err();
        assert_eq!(e.kind, "missing");
        assert!(e.message.contains("has no bin/mariadbd"), "{}", e.message);
    }
}
