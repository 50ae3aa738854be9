//! PostgreSQL's versions as data: where each comes from (Debian's 15, or 17 and 18 from the
//! server cache). Every one makes standbys (base_backup.rs needs no tool of the version's).

use crate::engines::versions::{FamilyBinaries, Origin};

/// PostgreSQL's binaries: `postgres` (with `initdb`, `pg_ctl`) under `bin/`, the system's
/// the newest Debian installs.
pub const BINARIES: FamilyBinaries = FamilyBinaries {
    family: "postgres",
    title: "PostgreSQL",
    server: "postgres",
    system: system_server,
    series: &[
        ("15", Origin::System),
        ("17", Origin::Cache),
        ("18", Origin::Cache),
    ],
};

fn system_server() -> Option<std::path::PathBuf> {
    super::recipe::bin_dir().map(|d| d.join("postgres"))
}
