//! The shapes of `summary.json` and `manifest.json`. Scripts rely on these field names.

use crate::metrics::Latency;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a step ended, or where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
    Skipped,
    Interrupted,
    /// A run's status from its start until it finishes: a run directory that still says
    /// `running` is under way, or belongs to a dbduel that died (killed, the machine
    /// rebooted) before the end. Never a step's status.
    Running,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Interrupted => "interrupted",
            Status::Running => "running",
        }
    }
}

/// Which direction of a metric is better, for verdicts and ratios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
    /// Informational (e.g. a row count): no winner.
    None,
}

/// Unit of a metric's value, which decides how it is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Count,
    Seconds,
    Bytes,
    PerSecond,
    Micros,
    /// Percent (0–100, or above for several cores' worth).
    Percent,
    /// Bytes a second (disk throughput), shown in decimal MB/s as iostat shows it.
    BytesPerSecond,
}

/// One figure of a step, as the report shows it. Step kinds choose their metrics; renderers
/// only format them, so a new step kind needs no renderer change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    /// Stable key (`elapsed_s`, `rows_per_s`, `p99_us`, ...).
    pub key: String,
    /// Short label for tables (`seconds`, `rows/s`, `p99`).
    pub label: String,
    /// The figure; over repeated rounds, the median of `samples`.
    pub value: f64,
    pub unit: Unit,
    pub better: Better,
    /// Each round's value, in round order, when the step ran more than once (or when runs were
    /// pooled for `compare`); empty for a single measurement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
    /// What `samples` say: median, min–max and the interval for the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<super::spread::Spread>,
    /// How a merge of shards recomputes the figure from their per-second histograms, when it
    /// is not a plain sum (counts, rates) or maximum (seconds, bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Derived>,
    /// What the figure is, where a chart or a finding needs more than its unit; set by the
    /// step kind that makes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
}

/// What a figure is, for the report's charts and findings: the step kind that makes a figure
/// says so, and the report reads this, never the figure's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "is")]
pub enum Role {
    /// The rate a step's findings lead with, and what one of it counts (`lookups`,
    /// `transactions`).
    Lead { counts: String },
    /// Another rate of the work the step ran (a level's, or its operations a second).
    Rate,
    /// A numbered query's seconds: the query's number and its phase (`hot`: the best of its
    /// warm runs, `cold`: its first run).
    Query { number: u32, phase: String },
    /// A count of one op kind's completions, drawn per 10 s over the step's seconds and by
    /// clients: the op as its per-second records name it, and the completions as a chart
    /// calls them (`name`) and for short (`short`).
    Per10s {
        op: String,
        name: String,
        short: String,
    },
}

impl Role {
    /// The role of a figure written before figures carried one (run directories of an
    /// earlier dbduel), from the key its step kind gave it then: the one place those keys
    /// are read.
    fn of_older_key(key: &str) -> Option<Role> {
        // `q07_hot_s`, `q22_cold_s`: a query's number in two digits, then its phase
        let query = key
            .strip_prefix('q')
            .and_then(|k| k.strip_suffix("_s"))
            .and_then(|k| k.split_once('_'))
            .filter(|(n, phase)| {
                n.len() == 2
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && matches!(*phase, "hot" | "cold")
            });
        match key {
            "best_qps" => Some(Role::Lead {
                counts: "lookups".into(),
            }),
            "tps" => Some(Role::Lead {
                counts: "transactions".into(),
            }),
            "ops_per_s" => Some(Role::Rate),
            "tpmc" => Some(Role::new_orders()),
            k if k.starts_with("tps_t") => Some(Role::Rate),
            _ => {
                let (n, phase) = query?;
                Some(Role::Query {
                    number: n.parse().ok()?,
                    phase: phase.into(),
                })
            }
        }
    }

    /// TPC-C's New-Order transactions, counted by its `new_order` op.
    pub fn new_orders() -> Role {
        Role::Per10s {
            op: "new_order".into(),
            name: "New-Order transactions".into(),
            short: "New-Orders".into(),
        }
    }
}

/// Where a figure comes from, for a merge of shards to compute it again exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "of")]
pub enum Derived {
    /// A latency quantile, µs (`q` in [0, 1]; 1 is the maximum) of the operations measured
    /// after warm-up: in the level of `level` clients (every level when absent), of the op
    /// kinds `ops` (all when empty).
    Quantile {
        q: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<u64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ops: Vec<String>,
    },
    /// The highest of the step's figures whose keys are `prefix` and a level (`tps_t16`).
    Best { prefix: String },
    /// The level of that highest figure.
    BestLevel { prefix: String },
    /// A latency quantile, µs, at the best level of the figures keyed `prefix` and a level
    /// (as [`Derived::Quantile`], once the best level is known).
    QuantileAtBest {
        q: f64,
        prefix: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ops: Vec<String>,
    },
    /// The figure keyed `count` over the step's seconds (the longest shard's): a rate whose
    /// shards may have taken different times (a fixed count of operations each).
    Rate { count: String },
    /// A figure of the shard's own best level of a sweep: shards' best levels may differ,
    /// so it has no merge.
    AtOwnBest,
    /// A figure that adds up over shards though its unit does not say so (a share of a
    /// target that grows with throughput).
    Sum,
    /// A figure of the server or its machine, not of the clients (its disk's reads): every
    /// shard saw the same, so shard 0's is kept.
    Shared,
}

impl Metric {
    pub fn new(key: &str, label: &str, value: f64, unit: Unit, better: Better) -> Self {
        Metric {
            key: key.into(),
            label: label.into(),
            value,
            unit,
            better,
            samples: Vec::new(),
            spread: None,
            from: None,
            role: None,
        }
    }

    /// Say what the figure is (see [`Role`]).
    pub fn with_role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }

    /// A latency quantile of the measured operations (see [`Derived::Quantile`]).
    pub fn quantile(mut self, q: f64, level: Option<u64>, ops: &[&str]) -> Self {
        self.from = Some(Derived::Quantile {
            q,
            level,
            ops: ops.iter().map(|o| o.to_string()).collect(),
        });
        self
    }

    /// Say how a merge of shards computes it again.
    pub fn derived(mut self, from: Derived) -> Self {
        self.from = Some(from);
        self
    }

    /// The figure measured `samples` times: its value is their median.
    pub fn with_samples(mut self, samples: Vec<f64>) -> Self {
        self.spread = super::spread::Spread::of(&samples);
        if let Some(s) = &self.spread {
            self.value = s.median;
        }
        self.samples = samples;
        self
    }

    /// Its spread when measured more than once.
    pub fn repeated(&self) -> Option<&super::spread::Spread> {
        self.spread.as_ref().filter(|s| s.n >= 2)
    }
}

/// One step of one contender in `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepSummary {
    pub name: String,
    pub kind: String,
    pub status: Status,
    /// Short title for reports, e.g. `range queries, 100 clients`.
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<Latency>,
    /// The op kinds `latency_us` covers, when not all (TPC-C's is New-Order's): for a merge
    /// of shards to compute it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_ops: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// What dbduel itself used during the step (peak RSS, CPU seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dbduel: Option<crate::sysmon::own::OwnUse>,
    /// What the rest of the machine did meanwhile (other processes' CPU, steal, memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::sysmon::machine::MachineShare>,
}

impl StepSummary {
    /// A step that did not produce figures (failed, skipped, interrupted).
    pub fn without_figures(
        name: &str,
        kind: &str,
        status: Status,
        note: impl Into<String>,
    ) -> Self {
        StepSummary {
            name: name.into(),
            kind: kind.into(),
            status,
            title: name.into(),
            elapsed_s: None,
            rows: None,
            bytes: None,
            ops_per_s: None,
            latency_us: None,
            latency_ops: Vec::new(),
            errors: None,
            note: Some(note.into()),
            metrics: Vec::new(),
            dbduel: None,
            machine: None,
        }
    }
}

/// One contender in `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContenderSummary {
    pub name: String,
    pub engine: String,
    pub steps: Vec<StepSummary>,
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema_version: u32,
    pub study: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// `ok`, `failed` or `interrupted` for the whole run.
    pub status: Status,
    pub contenders: Vec<ContenderSummary>,
}

impl Summary {
    /// Give each figure written before figures carried a [`Role`] the role its key meant.
    pub fn give_older_figures_roles(&mut self) {
        for m in self
            .contenders
            .iter_mut()
            .flat_map(|c| c.steps.iter_mut())
            .flat_map(|st| st.metrics.iter_mut())
            .filter(|m| m.role.is_none())
        {
            m.role = Role::of_older_key(&m.key);
        }
    }
}

/// dbduel's own identity.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Build {
    pub version: String,
    pub commit: String,
    /// Built without optimizations: its own figures (client CPU, throughput it can drive)
    /// understate a release build's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub debug_build: bool,
}

impl Build {
    pub fn current() -> Self {
        Build {
            version: env!("CARGO_PKG_VERSION").into(),
            commit: env!("DBDUEL_GIT_COMMIT").into(),
            debug_build: cfg!(debug_assertions),
        }
    }
}

impl std::fmt::Display for Build {
    /// `0.1.0 (4f417703607b)`, with `, debug build` when it is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}", self.version, self.commit)?;
        if self.debug_build {
            write!(f, ", debug build")?;
        }
        write!(f, ")")
    }
}

/// The machine a run ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub mem_total_bytes: u64,
    pub kernel: String,
    /// Filesystem holding the run's data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_fs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_device: Option<String>,
}

/// The dataset as generated.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetFacts {
    pub generator: String,
    /// Rows per table; with `warehouses`, the rows of all tables.
    pub rows: u64,
    /// TPC-C's scale, for its dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouses: Option<u64>,
    /// TPC-H's scale factor, for its dataset (`rows` is then the rows of all tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sf: Option<f64>,
    /// How many tables of `rows` each (the sbtest generator makes several).
    #[serde(default = "one_table")]
    pub tables: u64,
    pub seed: u64,
    pub table: String,
    /// Size of the generated tab-separated file.
    pub file_bytes: u64,
    /// Seconds spent generating it (not part of any step).
    pub generate_s: f64,
    /// The user's own files the study loads (a `load` step's `files`), each with its bytes
    /// and records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<UserFileFacts>,
}

/// One of the user's files a `load` step loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserFileFacts {
    pub table: String,
    pub path: String,
    pub bytes: u64,
    /// Records, a header left out.
    pub rows: u64,
}

fn one_table() -> u64 {
    1
}

/// A contender as it ran: engine version and effective settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContenderFacts {
    pub name: String,
    pub engine: String,
    pub version: String,
    /// Options as given in the study (after overrides).
    pub options: serde_json::Value,
    /// Settings read back from the engine.
    pub effective: BTreeMap<String, String>,
}

/// `manifest.json`: everything needed to know what was run, where and how.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    pub dbduel: Build,
    /// The study file (or built-in name) the run came from.
    pub source: String,
    pub scale: Option<String>,
    /// `--set` overrides as given.
    pub overrides: Vec<String>,
    /// The study exactly as run, after scale and overrides.
    pub study: serde_json::Value,
    pub started_at: String,
    pub host: Host,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetFacts>,
    pub contenders: Vec<ContenderFacts>,
    /// With `repeat` above 1: each round's contender order, as run (a rotation of an order
    /// shuffled from the dataset's seed, so every contender leads equally often).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Vec<String>>,
    /// The contender every figure is also shown as a ratio to (`--baseline`, `baseline = …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Contenders judged against a contender of their own (a contender's `baseline = …`):
    /// contender → the one its figures are a ratio to, in place of `baseline`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baselines: BTreeMap<String, String>,
    /// A sharded run: this shard; a merged run: every shard, in index order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardFacts>,
    /// `--repeat auto` or `--budget`: how the run decided its rounds, and what each judged
    /// figure needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_rounds: Option<AutoRoundsFacts>,
}

/// How a run with `--repeat auto` (or a `--budget`) decided how many rounds to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoRoundsFacts {
    /// `--repeat auto`: rounds until every judged figure was precise.
    pub auto: bool,
    /// The most rounds the run could have had.
    pub max: usize,
    /// An interval within ± this share of its median is precise.
    pub threshold: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    pub rounds_run: usize,
    /// `precision`, `max`, `budget` or `interrupted`.
    pub stopped_by: String,
    /// Each judged figure of each contender.
    pub figures: Vec<FigureRounds>,
}

/// One judged figure of one contender over an auto run's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureRounds {
    pub step: String,
    /// The metric's key, and its label.
    pub figure: String,
    pub label: String,
    pub contender: String,
    /// Rounds that measured it.
    pub rounds: usize,
    /// Rounds it took to become, and stay, precise; `None`: it never did (undecided).
    pub needed: Option<usize>,
}

/// One shard of a run split over several processes or machines, as it ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFacts {
    pub index: u32,
    pub count: u32,
    /// The run group the shards met under.
    pub group: String,
    pub hostname: String,
    /// This shard's clock minus each contender's database clock, ms (positive: the shard's
    /// clock is ahead), measured at the contender's first meeting. Shards start together by
    /// the database's clock, so this is recorded, not corrected for.
    #[serde(default)]
    pub clock_offset_ms: BTreeMap<String, f64>,
    /// Per contender, how late this shard began a run after the instant the shards agreed
    /// on, at worst, ms (it saw the meeting complete only then); absent when never late.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub late_start_ms: BTreeMap<String, f64>,
    /// In a merged run: the shard's own run directory, as given to `merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
}

/// `[[reference]]`: one published column of figures — who measured them, on what.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceSpec {
    /// The column's name (`seed-innodb`).
    pub name: String,
    /// Where the figures were published.
    pub source: String,
    /// Engine and version as published (`InnoDB on MariaDB 10.0.14`).
    pub engine: String,
    /// The machine they ran on, as published.
    pub hardware: String,
    /// The scale whose sizes its figures are (the published dataset's); shown at every
    /// scale, and in a run at another one it says so. Absent: of no scale's sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    /// `"STEP.FIGURE_KEY" = value`, in the figure's own unit (seconds, bytes, …).
    pub figures: BTreeMap<String, f64>,
}

/// The original's side of a finding: `original = 2.12` (its figures' ratio; exactly 1 for a
/// tie it reported), `original = [1.1, 1.6]` (a range it gave, "10–60 % ahead") or
/// `original = "above"` / `"below"` (a direction it gave without a figure).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "original must be a ratio (original = 2.12; 1 for a tie), a range (original = [1.1, 1.6]) or a direction without a figure (original = \"above\" or \"below\")"
)]
pub enum Original {
    Ratio(f64),
    Range([f64; 2]),
    Side(Side),
}

/// Which side of 1 a ratio lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Above,
    Below,
}

impl Original {
    /// The ratios it spans (a direction: none).
    pub fn bounds(self) -> Option<(f64, f64)> {
        match self {
            Original::Ratio(r) => Some((r, r)),
            Original::Range([a, b]) => Some((a.min(b), a.max(b))),
            Original::Side(_) => None,
        }
    }

    /// Whether it reports a tie.
    pub fn tie(self) -> bool {
        self == Original::Ratio(1.0)
    }

    /// Whether a ratio above 1 is the original's side.
    pub fn above(self) -> bool {
        match self {
            Original::Side(s) => s == Side::Above,
            _ => self.bounds().is_some_and(|(lo, _)| lo > 1.0),
        }
    }

    /// `×2.12`, `×1.10–1.60`, `above ×1 (no figure)`.
    pub fn text(self) -> String {
        use crate::results::format::ratio;
        match self {
            Original::Ratio(r) => format!("×{}", ratio(r)),
            Original::Range([a, b]) => format!("×{}–{}", ratio(a), ratio(b)),
            Original::Side(Side::Above) => "above ×1 (no figure)".into(),
            Original::Side(Side::Below) => "below ×1 (no figure)".into(),
        }
    }
}

/// `[[finding]]`: one finding of the original, stated as a check over the run's own figures —
/// the ratio of two figures (two contenders' at one step, or one contender's at two steps)
/// against the ratio the original published. Reports end with each one's verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSpec {
    /// What the original found, in its words (`TokuDB loaded the table 2.1× as fast as InnoDB`).
    pub says: String,
    /// Which original said it (`seed 000`).
    pub source: String,
    /// The ratio's numerator: `"STEP.FIGURE_KEY"` of contender `of`.
    pub figure: String,
    pub of: String,
    /// The denominator's contender; absent: `of` (a finding across two steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// The denominator's `"STEP.FIGURE_KEY"`; absent: `figure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_figure: Option<String>,
    /// What the original found of the same two figures' ratio.
    pub original: Original,
    /// What this run has in place of the original's (a stand-in engine, another server
    /// version), shown beside the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differs: Option<String>,
    /// The scales whose runs keep the original's regime (cached or disk-bound, its ratios);
    /// in a run at any other the verdict is `not comparable`. Empty: every scale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scales: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_an_earlier_dbduel_get_the_role_their_key_meant() {
        let roles = |key: &str| Role::of_older_key(key);
        assert_eq!(
            roles("q07_hot_s"),
            Some(Role::Query {
                number: 7,
                phase: "hot".into()
            })
        );
        assert_eq!(
            roles("q22_cold_s"),
            Some(Role::Query {
                number: 22,
                phase: "cold".into()
            })
        );
        for not_a_query in ["geomean_hot_s", "qps", "q7_hot_s", "q07_warm_s"] {
            assert_eq!(roles(not_a_query), None, "{not_a_query}");
        }
        assert_eq!(roles("tps_t16"), Some(Role::Rate));
        assert_eq!(roles("tpmc"), Some(Role::new_orders()));
        assert!(matches!(roles("best_qps"), Some(Role::Lead { counts }) if counts == "lookups"));
        // a role a figure carries is kept; one it lacks comes from its key
        let mut st = StepSummary::without_figures("s", "k", Status::Ok, "");
        st.metrics = vec![
            Metric::new("tps", "TPS", 1.0, Unit::PerSecond, Better::Higher).with_role(Role::Rate),
            Metric::new("q01_hot_s", "Q1 hot", 1.0, Unit::Seconds, Better::Lower),
            Metric::new("rows", "rows", 1.0, Unit::Count, Better::None),
        ];
        let mut s = Summary {
            schema_version: 1,
            study: "t".into(),
            scale: None,
            started_at: String::new(),
            finished_at: None,
            status: Status::Ok,
            contenders: vec![ContenderSummary {
                name: "c".into(),
                engine: "e".into(),
                steps: vec![st],
            }],
        };
        s.give_older_figures_roles();
        let got: Vec<Option<Role>> = s.contenders[0].steps[0]
            .metrics
            .iter()
            .map(|m| m.role.clone())
            .collect();
        assert_eq!(
            got,
            [
                Some(Role::Rate),
                Some(Role::Query {
                    number: 1,
                    phase: "hot".into()
                }),
                None
            ]
        );
    }
}
