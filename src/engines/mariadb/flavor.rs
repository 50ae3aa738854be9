//! What differs between the servers of the MySQL protocol this engine drives: MariaDB itself
//! (no flavor), or another server a family describes by a [`Flavor`] — its name, the storage
//! engines and schema-change algorithms it has, and the sandbox recipe that runs it. The
//! sessions, loads, footprints, counters and database claim are the protocol's and shared.

use crate::engines::mariadb::recipe::MariadbRecipe;
use crate::engines::versions::FamilyBinaries;
use crate::sandbox::Recipe;

/// A MySQL-protocol server other than MariaDB, as the engine asks about it.
pub trait Flavor: std::fmt::Debug + Send + Sync {
    /// The engine's name in study files and manifests (`mysql`).
    fn name(&self) -> &'static str;
    /// Does the server have MariaDB's Aria storage engine (and its page cache setting)?
    fn has_aria(&self) -> bool {
        false
    }
    /// Does it have `ALTER TABLE ... RENAME COLUMN` (else a rename is a `CHANGE COLUMN`)?
    fn renames_columns(&self) -> bool {
        true
    }
    /// The `ALTER TABLE` algorithms it accepts, cheapest first.
    fn ddl_algorithms(&self) -> &'static [&'static str];
    /// The sandbox recipe that runs this server with the settings `base` holds (those the
    /// contender's options gave, as MariaDB's recipe would have written them).
    fn recipe(&'static self, base: &MariadbRecipe) -> Box<dyn Recipe>;
    /// The family's binaries: where its versions come from (the server cache, a basedir).
    fn binaries(&self) -> &'static FamilyBinaries;
}
