//! PostgreSQL's versions as data: where each comes from (Debian's 15, or 17 from the server
//! cache) and what differs between them for a contender (17's bundle has no `pg_basebackup`,
//! so it cannot make standbys).

use crate::engines::versions::{BinaryChoice, FamilyBinaries, Origin};

/// PostgreSQL's binaries: `postgres` (with `initdb`, `pg_ctl`) under `bin/`, the system's
/// the newest Debian installs.
pub const BINARIES: FamilyBinaries = FamilyBinaries {
    family: "postgres",
    title: "PostgreSQL",
    server: "postgres",
    system: system_server,
    series: &[("15", Origin::System), ("17", Origin::Cache)],
};

fn system_server() -> Option<std::path::PathBuf> {
    super::recipe::bin_dir().map(|d| d.join("postgres"))
}

/// What a PostgreSQL version can do that another cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Streaming standbys: a base backup by `pg_basebackup` of the same version.
    pub standbys: bool,
}

/// The capabilities of the version a contender chooses: the system's has Debian's client
/// tools; the cached 17 has only `initdb`, `pg_ctl` and `postgres`; a basedir's are its own
/// (`None`: known from its files).
pub fn capabilities(choice: &BinaryChoice) -> Option<Capabilities> {
    let system = match (&choice.version, &choice.basedir) {
        (None, None) => true,
        (Some(v), _) => matches!(BINARIES.series_of(v), Some((_, Origin::System))),
        (None, Some(_)) => return None,
    };
    Some(Capabilities { standbys: system })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_17_makes_no_standbys() {
        let v = |s: &str| BinaryChoice {
            version: Some(s.into()),
            basedir: None,
        };
        assert_eq!(capabilities(&v("17")).map(|c| c.standbys), Some(false));
        assert_eq!(capabilities(&v("15")).map(|c| c.standbys), Some(true));
        assert_eq!(
            capabilities(&BinaryChoice::default()).map(|c| c.standbys),
            Some(true)
        );
    }
}
