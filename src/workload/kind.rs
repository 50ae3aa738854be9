//! What every step kind says of itself: the [`StepKind`] trait its parameters implement —
//! decoding, checks, how it runs, and the properties the study's checks, the servers' sizing
//! and a sharded run ask of it — and what a step needs of the dataset's tables.

use super::ctx::{StepCtx, StepError, StepOutput};
use crate::dataset::Generator;
use crate::decode::{DecodeError, KeyPath};

/// A step kind's parameters. Each kind's file implements it; the kinds table in
/// `workload/mod.rs` names the kind and its parameter type, and everything else is asked of
/// this trait. The defaults fit the plainest kind: a SQL step, one client, needing no table.
pub trait StepKind {
    /// Decode the parameters of a step of `kind` (one type may serve several kinds). Paths in
    /// errors are relative to the step.
    fn decode(kind: &str, v: toml::Value) -> Result<Self, DecodeError>
    where
        Self: Sized + serde::de::DeserializeOwned,
    {
        let _ = kind;
        crate::decode::decode(v)
    }

    /// Is a step of this kind divided among clients? Each shard of a sharded run then runs its
    /// share of it; other steps (a load, a size, a check, a statement timed alone) run on
    /// shard 0 only, while the others wait for it.
    fn divides_clients() -> bool
    where
        Self: Sized,
    {
        false
    }

    /// Check the decoded parameters together (ranges, combinations).
    fn validate(&self) -> Result<(), DecodeError> {
        Ok(())
    }

    /// Is the step's work SQL statements (so a document engine cannot run it)?
    fn is_sql(&self) -> bool {
        true
    }

    /// The levels of a step that sweeps client counts (`threads`, `duration_s`, `warmup_s`,
    /// `cold_start`); the defaults of [`StepKind::restarts`] and [`StepKind::clients`] read
    /// them.
    fn levels(&self) -> Option<&super::sweep::Levels> {
        None
    }

    /// Does the step restart the server (a cold count, a cold start before a sweep)? The key
    /// that asks for it.
    fn restarts(&self) -> Option<&'static str> {
        self.levels()
            .and_then(|l| l.cold_start.then_some("cold_start"))
    }

    /// Clients this step opens at once (for sizing servers' connection limits): a sweep's
    /// largest level.
    fn clients(&self) -> u64 {
        self.levels().map_or(1, |l| l.threads.max())
    }

    /// Does the step create the dataset's tables (a `load`)?
    fn creates_tables(&self) -> bool {
        false
    }

    /// Does the step make tables of the user's own (a `sql` file, a `load` of the user's
    /// files)? Steps after it may then name tables the dataset does not have.
    fn makes_own_tables(&self) -> bool {
        false
    }

    /// Check the parameters against the study's dataset: its generator and its rows a table
    /// (for `tpcc`, its warehouses), as the chosen scale sets them. Errors are relative to
    /// the step.
    fn check_dataset(&self, generator: Generator, rows: u64) -> Result<(), DecodeError> {
        let _ = (generator, rows);
        Ok(())
    }

    /// The dataset a step of this kind needs, if only one will do.
    fn generator(&self) -> Option<GeneratorNeed> {
        None
    }

    /// What the step needs of `tables` (the dataset's, in order), if anything.
    fn needs(&self, tables: &[String]) -> Option<TableNeed> {
        let _ = tables;
        None
    }

    /// A table the step names itself, which may not be among the dataset's: the key that
    /// names it, what the step does with it ("sql updates"), and its name.
    fn names_table(&self) -> Option<(KeyPath, &'static str, String)> {
        None
    }

    /// Read and check what the step names beside the study (its scripts, statement files,
    /// data files), and check that its own SQL reaches only dbduel's database when a
    /// contender is a target. Called once, when the study is checked.
    fn read_beside(&mut self, beside: &Beside<'_>) -> Result<(), BesideError> {
        let _ = beside;
        Ok(())
    }

    /// The user's data files the step loads, as the manifest records them (a file that
    /// cannot be read is left out here, and fails its step).
    fn user_files(&self) -> Vec<crate::results::UserFileFacts> {
        Vec::new()
    }

    /// Run the step.
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError>;
}

/// The one dataset a step can run on.
pub struct GeneratorNeed {
    pub generator: Generator,
    /// What the step does, and why only that dataset will do ("runs sysbench's statements,
    /// which need the sbtest tables").
    pub why: &'static str,
    /// How to ask for it (`generator = "sbtest"`).
    pub fix: &'static str,
}

impl GeneratorNeed {
    /// sysbench's tables, which its statements need.
    pub const SBTEST: GeneratorNeed = GeneratorNeed {
        generator: Generator::Sbtest,
        why: "runs sysbench's statements, which need the sbtest tables",
        fix: "generator = \"sbtest\"",
    };
}

/// What a step does with the dataset's tables, and the key of the step that says so.
pub struct TableNeed {
    pub key: KeyPath,
    /// "counts the rows of table user_logs", for `step "NAME" ...`.
    pub what: String,
    /// Whether the object is one table ("it") or several ("them").
    pub one: bool,
}

impl TableNeed {
    /// Every one of `tables`, as the step's `kind` says: `verb` is "counts the rows of".
    pub fn all(verb: &str, tables: &[String]) -> Self {
        TableNeed {
            key: KeyPath::root().key("kind"),
            what: format!("{verb} {}", describe(tables)),
            one: tables.len() == 1,
        }
    }

    /// One table, as the step's `key` says: `what` is "changes table user_logs".
    pub fn one(key: KeyPath, what: String) -> Self {
        TableNeed {
            key,
            what,
            one: true,
        }
    }
}

/// The first of the dataset's `tables` (a dataset has at least one; `user_logs` has exactly
/// one, and DDL changes the first).
pub fn first(tables: &[String]) -> &str {
    tables.first().map_or("", String::as_str)
}

/// `table user_logs`, `tables sbtest1 and sbtest2`, `tables sbtest1 to sbtest16`.
pub fn describe(tables: &[String]) -> String {
    match tables {
        [one] => format!("table {one}"),
        [a, b] => format!("tables {a} and {b}"),
        [first, .., last] => format!("tables {first} to {last}"),
        [] => "the dataset's tables".to_string(),
    }
}

/// A contender as a step's files beside the study are read for it.
pub struct ContenderUse<'a> {
    pub name: &'a str,
    /// Its `engine` as written (`mariadb`, `postgres`, …).
    pub engine: &'a str,
    /// It runs on someone else's server (a `target`).
    pub target: bool,
    /// The variants its engine reads, most specific first (its family says which; none:
    /// it runs no SQL).
    pub variants: &'static [&'static str],
}

/// What a step's files beside the study are read against.
pub struct Beside<'a> {
    /// The study file's directory: the step's paths are relative to it.
    pub base: &'a std::path::Path,
    /// The study's contenders, with the SQL file variants each reads.
    pub users: &'a [ContenderUse<'a>],
    /// The first contender on a target, if any: the study's SQL must stay inside dbduel's
    /// database there.
    pub on_target: Option<&'a str>,
}

/// Why what a step names beside the study cannot be used.
#[derive(Debug)]
pub enum BesideError {
    /// About the study's own text: the key (relative to the step) and what is wrong.
    At(KeyPath, String),
    /// In a file the step names, located there.
    In {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
}

/// The study's own statement `sql`, at `key` of the step, refused when it reaches past
/// dbduel's database and a contender is a target.
pub fn own_sql_stays_inside(
    beside: &Beside<'_>,
    key: KeyPath,
    sql: &str,
) -> Result<(), BesideError> {
    if let (Some(c), Some(why)) = (
        beside.on_target,
        super::sql_reach::outside_own_database(sql),
    ) {
        return Err(BesideError::At(key, super::sql_reach::on_target(&why, c)));
    }
    Ok(())
}

/// A step kind's parameters decoded from TOML text as a study's step would be, for tests.
#[cfg(test)]
pub(crate) fn params_of<P>(text: &str) -> Result<P, DecodeError>
where
    P: StepKind + serde::de::DeserializeOwned,
{
    P::decode("", toml::from_str::<toml::Value>(text).expect("TOML"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn table_lists_read_as_text() {
        assert_eq!(describe(&tables(&["user_logs"])), "table user_logs");
        assert_eq!(
            describe(&tables(&["sbtest1", "sbtest2"])),
            "tables sbtest1 and sbtest2"
        );
        assert_eq!(
            describe(&tables(&["sbtest1", "sbtest2", "sbtest3"])),
            "tables sbtest1 to sbtest3"
        );
    }
}
