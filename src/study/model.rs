//! The study file's shape: what a user writes in TOML, as serde types, before validation.
//!
//! Everything here is plain data. Step parameters stay an untyped table at this level and are
//! decoded per step kind by `study::validate`, so each kind owns its parameters (no god struct).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[[reference]]` is the results' type: a run's manifest carries it for reports to read.
pub use crate::results::{FindingSpec, ReferenceSpec};

/// A whole study file as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    pub study: StudyMeta,
    /// The generated dataset; absent (or `generator = "none"`): none, the study loads its
    /// own files.
    #[serde(default = "DatasetSpec::none")]
    pub dataset: DatasetSpec,
    #[serde(rename = "contender")]
    pub contenders: Vec<ContenderSpec>,
    #[serde(rename = "step")]
    pub steps: Vec<StepSpec>,
    /// Named sets of overrides (`quick`, `full`, ...): nested tables whose leaves are values,
    /// with the same keys as `--set` (e.g. `dataset.rows = 100000`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scale: BTreeMap<String, toml::Table>,
    /// Figures someone published for this experiment, shown beside the run's and marked as
    /// not measured here.
    #[serde(rename = "reference", default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<ReferenceSpec>,
    /// The original's findings as checks over this run's figures, each given a verdict.
    #[serde(rename = "finding", default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<FindingSpec>,
}

impl StudyFile {
    /// Its contenders' names, `, `-separated, for messages that list them.
    pub fn contender_names(&self) -> String {
        let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
        names.join(", ")
    }

    /// Its steps' names, likewise.
    pub fn step_names(&self) -> String {
        let names: Vec<&str> = self.steps.iter().map(|x| x.name.as_str()).collect();
        names.join(", ")
    }
}

/// `[study]`: identity of the study.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyMeta {
    pub name: String,
    pub description: String,
    /// What the original study measured, in a sentence, for reports to set beside this run's
    /// findings (e.g. "MongoDB 166,527 lookups/s in memory, 2,549 from disk").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Scale used when `--scale` is not given; must name a `[scale.*]` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_scale: Option<String>,
    /// Contenders run when none is chosen (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_contenders: Option<Vec<String>>,
    /// Rounds: every contender runs every step this many times, interleaved across
    /// contenders, and each figure is reported as a median with its spread (`--repeat N`).
    #[serde(default = "one_round")]
    pub repeat: u32,
    /// A contender every report also sets each figure beside, as a ratio (`--baseline NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

fn one_round() -> u32 {
    1
}

/// The generator of a study without a generated dataset.
pub const NO_GENERATOR: &str = "none";

/// `[dataset]`: which deterministic generator makes the rows, how many, from which seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub generator: String,
    /// Rows per table (for `tpcc`, the warehouses: its tables' rows follow from them).
    #[serde(default)]
    pub rows: u64,
    /// TPC-C's scale (`tpcc` only), in place of `rows`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouses: Option<u64>,
    /// TPC-H's scale factor (`tpch` only), in place of `rows`: a multiple of 0.01 from 0.01
    /// to 300 (e.g. 0.01, 0.1, 1, 10, 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sf: Option<f64>,
    /// Tables (sbtest: sbtest1..N; user_logs: 1).
    #[serde(default = "default_tables")]
    pub tables: u64,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_table")]
    pub table: String,
}

impl DatasetSpec {
    /// No generated dataset: a study of the user's own tables and files.
    pub fn none() -> Self {
        DatasetSpec {
            generator: NO_GENERATOR.to_string(),
            rows: 0,
            warehouses: None,
            sf: None,
            tables: default_tables(),
            seed: default_seed(),
            table: default_table(),
        }
    }

    /// Is there a generated dataset?
    pub fn generates(&self) -> bool {
        self.generator != NO_GENERATOR
    }

    /// What the generator is sized by: rows per table, for `tpcc` its warehouses, for
    /// `tpch` hundredths of its scale factor.
    pub fn scale(&self) -> u64 {
        match (self.warehouses, self.sf) {
            (Some(w), _) => w,
            (None, Some(sf)) => tpch_units(sf).unwrap_or(0),
            (None, None) => self.rows,
        }
    }
}

/// A TPC-H scale factor in hundredths ([`crate::dataset::tpch::UNITS_PER_SF`]), when it is
/// a whole number of them in the generator's range.
pub fn tpch_units(sf: f64) -> Option<u64> {
    use crate::dataset::tpch::{MAX_UNITS, UNITS_PER_SF};
    let units = sf * UNITS_PER_SF as f64;
    let whole = units.round();
    ((units - whole).abs() < 1e-6 && whole >= 1.0 && whole <= MAX_UNITS as f64)
        .then_some(whole as u64)
}

fn default_tables() -> u64 {
    1
}

fn default_seed() -> u64 {
    42
}

fn default_table() -> String {
    "user_logs".to_string()
}

/// `[[contender]]`: an engine plus its configuration plus where it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContenderSpec {
    pub name: String,
    pub engine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Engine options, decoded and checked by the engine itself.
    #[serde(default)]
    pub options: toml::Table,
    /// An existing server instead of a private sandbox (`mysql://user@host:port/db`,
    /// `postgres://user@host:port/db`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Name of the environment variable holding the target's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// File whose first line is the target's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<std::path::PathBuf>,
    /// Shell command that restarts the target server, for steps that need a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_command: Option<String>,
    /// Run study-written SQL (`sql`, `script`, `update`, `queries` steps) on the target even
    /// though its account may do more than dbduel's database needs (its grants reach other
    /// databases, or it is a superuser). Without it such a study stops before anything runs
    /// and prints the account that would suffice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide_account: bool,
    /// The server version a private server runs (`"11.4"`, `"17"`): the system's or one
    /// from the server cache; absent: the system's. A string (a whole number is taken as
    /// one; a decimal number is refused, as 10.10 would read 10.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<toml::Value>,
    /// An unpacked server tarball a private server runs (`<basedir>/bin/<server>`), its
    /// version read from the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basedir: Option<std::path::PathBuf>,
    /// The contender this one is judged against (`baseline = "mariadb-10.11"`): each of its
    /// figures is also shown as a ratio to that contender's, whatever the study's own
    /// `baseline`. Pairs an upgrade with what it replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// `[[step]]`: one timed step; `kind` selects which parameters apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepSpec {
    pub name: String,
    pub kind: String,
    /// How reports name the step (default: chosen by the step kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Seconds per point of the step's timelines in reports (default 1: every second); the
    /// per-second series is kept whatever this says (sysbench's `--report-interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_interval_s: Option<u64>,
    /// Every other key of the step table, decoded by the step kind.
    #[serde(flatten)]
    pub params: toml::Table,
}
