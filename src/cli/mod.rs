//! The command line: `run`, `studies`, `report`, `compare`, `list`; maps every failure to a
//! message that says what to do and to an exit code (0 ok, 1 a contender or step failed, 2 bad
//! input or usage, 3 missing prerequisite, 130 interrupted).

use crate::progress::Progress;
use crate::report::{self, Format};
use crate::results::{RunDir, Status, Summary};
use crate::run::{self as execute, RunOptions};
use crate::sandbox;
use crate::study::{self, builtin};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Write to stdout. A reader that went away (`dbduel report … | head`) ends the output, not
/// the program: without this, `print!` panics on the broken pipe. Other write errors (a full
/// disk behind a redirect) are said on stderr.
fn emit(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|()| o.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        // A cut-off result (a full disk behind `> file`) must not pass for a whole one; the
        // run's own files are written by then.
        let _ = writeln!(std::io::stderr(), "dbduel: writing the output: {e}");
        std::process::exit(exit::FAILED);
    }
}

/// `print!` through [`emit`].
macro_rules! out {
    ($($t:tt)*) => { emit(&format!($($t)*)) };
}

/// `println!` through [`emit`].
macro_rules! outln {
    () => { emit("\n") };
    ($($t:tt)*) => { emit(&format!("{}\n", format_args!($($t)*))) };
}

/// Exit codes.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILED: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const PREREQUISITE: i32 = 3;
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Parser, Debug)]
#[command(
    name = "dbduel",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("DBDUEL_GIT_COMMIT"), ")"),
    about = "Run the same database experiment on two or more engines and compare them side by side.",
    long_about = "Run the same database experiment on two or more engines and compare them side by side.\n\n\
        A study (TOML) names contenders (engine + configuration), a deterministic dataset and timed \
        steps. dbduel generates the data, runs every step on every contender, samples the system each \
        second, writes everything to a run directory and prints the comparison.\n\n\
        Start with:  dbduel run shootout      (built in; SQLite, no server needed)\n\
        List studies: dbduel studies",
    after_help = "Exit codes: 0 ok, 1 a contender or step failed, 2 bad input or usage, 3 missing prerequisite, 130 interrupted."
)]
pub struct Cli {
    /// No progress output on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Splitting a run over several processes or machines (`run --shard I/N`).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Shards (one run from many client machines)")]
pub struct ShardArgs {
    /// Run shard I of N (0-based): every step's clients are divided among the shards, each
    /// keeping its id in the whole run; steps not divided among clients (load, checks) run on
    /// shard 0. Shards meet in each target's database before every step and start together.
    /// Every contender needs a target (MariaDB or PostgreSQL) that all shards reach. Merge
    /// the shards' run directories with `dbduel merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The number of shards, for a shard whose index comes from the scheduler:
    /// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID. Also
    /// DBDUEL_SHARDS.
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    pub shards: Option<u32>,
    /// The name every shard of this run shares, new for each run (default: DBDUEL_RUN_GROUP,
    /// or under Slurm the array's job id).
    #[arg(long, value_name = "NAME")]
    pub run_group: Option<String>,
    /// Seconds a shard waits for the others at a meeting point before the run fails, naming
    /// the shards that did not come (they also wait while shard 0 loads the data).
    #[arg(long, value_name = "S", default_value_t = 600)]
    pub barrier_timeout_s: u64,
}

impl ShardArgs {
    /// The shard this process runs, from the flags or the scheduler's environment; None for
    /// an unsharded run.
    pub fn resolve(&self) -> Result<Option<execute::Sharding>, String> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let shard = match &self.shard {
            Some(s) => Some(crate::shard::Shard::parse(s)?),
            None => crate::shard::Shard::from_env(self.shards, env)?,
        };
        let Some(shard) = shard else {
            return Ok(None);
        };
        let group = self
            .run_group
            .clone()
            .or_else(|| env("DBDUEL_RUN_GROUP"))
            .or_else(|| env("SLURM_ARRAY_JOB_ID").map(|j| format!("slurm-{j}")))
            .ok_or_else(|| {
                format!(
                    "shard {shard} needs the run's group, the name all its shards share: pass --run-group NAME (or set DBDUEL_RUN_GROUP), new for each run"
                )
            })?;
        crate::shard::check_group(&group)?;
        Ok(Some(execute::Sharding {
            shard,
            group,
            timeout: std::time::Duration::from_secs(self.barrier_timeout_s.max(1)),
        }))
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a study: a built-in name (see `dbduel studies`) or a path to a TOML file.
    Run {
        /// Built-in study name or path to a study file.
        study: String,
        /// Named scale from the study's [scale.*] tables (default: the study's default_scale, usually quick).
        #[arg(long)]
        scale: Option<String>,
        /// Run only this contender (repeat for several). Default: the study's
        /// default_contenders (for shootout: the SQLite ones, which need no server).
        #[arg(long = "contender", value_name = "NAME")]
        contenders: Vec<String>,
        /// Run every contender of the study.
        #[arg(long, conflicts_with = "contenders")]
        all_contenders: bool,
        /// Run every contender's steps N times, interleaved across contenders (the order of
        /// each round is recorded); each figure is then its median with a confidence interval,
        /// and "tie" where the intervals overlap. 5 or more let differences be judged.
        /// Same as --set study.repeat=N.
        #[arg(long, value_name = "N")]
        repeat: Option<u32>,
        /// Show every figure also as a ratio to this contender's (×0.52: 0.52 times its
        /// figure). Same as --set study.baseline=NAME.
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
        /// Override a study value with a TOML value, e.g. dataset.rows=20000,
        /// contender.NAME.KEY=VALUE, step.NAME.KEY=VALUE (repeatable; applied after --scale).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Results root; each run makes a new directory inside it.
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
        /// Keep the data files (databases, generated dataset) in the run directory.
        #[arg(long)]
        keep: bool,
        /// Format of the comparison printed at the end.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Check the study and print the plan without running anything.
        #[arg(long)]
        check: bool,
        /// Run even if the study looks too big for this machine's memory or disk.
        #[arg(long)]
        skip_resource_check: bool,
        #[command(flatten)]
        sharding: ShardArgs,
    },
    /// List the built-in studies, or print one (`dbduel studies show NAME > my.toml`).
    Studies {
        #[command(subcommand)]
        action: Option<StudiesAction>,
    },
    /// Render a past run from its directory alone.
    Report {
        /// A run directory (printed by `dbduel run`, listed by `dbduel list`).
        run_dir: PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Show every figure also as a ratio to this contender's (overrides the run's).
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
    },
    /// Run a past run again exactly — its study as it ran (scale and overrides applied), seed,
    /// rounds and contenders — then compare the new run with it and say whether this machine
    /// reproduced it within the noise (exit 1 when a judged figure differs).
    Rerun {
        /// The run directory to reproduce.
        run_dir: PathBuf,
        /// Results root for the new run.
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
        /// Keep the data files of the new run.
        #[arg(long)]
        keep: bool,
        /// Smallest change that counts, in percent (`5%` or `5`).
        #[arg(long, default_value = "5%")]
        threshold: String,
        /// Format of the comparison printed at the end.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Compare two runs of a study (before/after a change): per contender per step, the
    /// change from A to B and whether it is beyond the threshold and the run's noise.
    /// `compare A B`, or several runs a side: `compare A1 A2 A3 -- B1 B2 B3` (each side's
    /// runs pooled, every figure judged from its samples: 5 or more a side).
    Compare {
        /// The run to compare against (before) and the run to judge (after); or, with `--`,
        /// the runs of side A.
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<PathBuf>,
        /// After `--`: the runs of side B.
        #[arg(last = true, value_name = "RUN_B")]
        runs_b: Vec<PathBuf>,
        /// Smallest change that counts, in percent (`5%` or `5`).
        #[arg(long, default_value = "5%")]
        threshold: String,
        /// Exit 1 when a figure regressed significantly (beyond the threshold and the noise).
        #[arg(long)]
        fail_on_regression: bool,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Make the shards of one run (`run --shard I/N`) into one run: counts and rates added,
    /// every latency percentile computed from the shards' histograms summed. The merged run
    /// is an ordinary run directory for `report` and `compare`.
    Merge {
        /// Every shard's run directory.
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<PathBuf>,
        /// The merged run's directory (must not exist yet).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print the Kubernetes objects that run a study's shards (`kubectl apply -f -`): a
    /// ConfigMap with the study file, an Indexed Job of N pods each running one shard, the
    /// target passwords as Secret references, and a volume claim for the results.
    K8s {
        /// Built-in study name or path to a study file (its contenders need targets).
        study: String,
        /// How many shards (pods), each on its own node where the cluster allows.
        #[arg(long, value_name = "N")]
        shards: u32,
        /// Container image with dbduel on its PATH.
        #[arg(long)]
        image: String,
        #[arg(long)]
        namespace: Option<String>,
        /// Name of the Job (and prefix of its ConfigMap and claim). Default: dbduel-STUDY.
        #[arg(long)]
        name: Option<String>,
        /// Secret holding each password the study reads (`password_env`), under the variable's
        /// name as its key.
        #[arg(long, value_name = "NAME")]
        secret: Option<String>,
        /// An existing ReadWriteMany claim for the results; default: one is made.
        #[arg(long, value_name = "CLAIM")]
        results_claim: Option<String>,
        /// Size of the claim made for the results.
        #[arg(long, default_value = "10Gi")]
        results_size: String,
        #[arg(long)]
        scale: Option<String>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[arg(long = "contender", value_name = "NAME")]
        contenders: Vec<String>,
    },
    /// Private servers dbduel started: list them, or stop and remove them.
    Sandbox {
        #[command(subcommand)]
        action: SandboxAction,
    },
    /// List past runs, newest first.
    List {
        /// Results root to look in.
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum SandboxAction {
    /// Start a private MariaDB or PostgreSQL server and leave it running, to point studies'
    /// `target`s at (the shards of a sharded run on this machine, or a try of a target);
    /// prints its target. `dbduel sandbox down` stops and removes it.
    Up {
        /// mariadb or postgres.
        #[arg(value_parser = ["mariadb", "postgres"])]
        engine: String,
        /// The sandbox's name (its directory under OUT/sandboxes/).
        #[arg(long, default_value = "target")]
        name: String,
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
    /// List sandboxes under the results root: running or not, and whether the dbduel that
    /// started them is still there (`--keep` and crashes leave them behind).
    Status {
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
    /// Stop and remove sandboxes whose dbduel is gone; with --all, every sandbox found.
    Down {
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
        /// Also those of dbduel runs still in progress.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum StudiesAction {
    /// Print a built-in study's TOML.
    Show { name: String },
}

/// A failure with its exit code.
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

/// Parse arguments, run, print errors; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    raise_open_files_limit();
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    match cli.command {
        Command::Run {
            study,
            scale,
            contenders,
            all_contenders,
            repeat,
            baseline,
            mut sets,
            out,
            keep,
            format,
            check,
            skip_resource_check,
            sharding,
        } => {
            let sharding = sharding
                .resolve()
                .map_err(|e| Failure::new(exit::BAD_INPUT, e))?;
            // Only shard 0 writes the dataset and loads it; the others need no disk for it.
            let machine = (!skip_resource_check).then(|| {
                let mut m = study::resources::Machine::here(&out);
                if sharding.as_ref().is_some_and(|s| !s.shard.leads()) {
                    m.disk_free_bytes = None;
                }
                m
            });
            if let Some(n) = repeat {
                sets.push(format!("study.repeat={n}"));
            }
            if let Some(b) = &baseline {
                sets.push(format!("study.baseline={b:?}"));
            }
            let req = study::Request {
                study,
                scale,
                sets,
                contenders,
                all_contenders,
                machine,
                passwords_elsewhere: false,
            };
            let study =
                study::load(&req).map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            if let Some(b) = &baseline
                && !study.contenders.iter().any(|c| &c.name == b)
            {
                return Err(Failure::new(
                    exit::BAD_INPUT,
                    format!(
                        "--baseline {b}: `{b}` is not among the contenders this run would run ({}); add --contender {b}",
                        join_names(study.contenders.iter().map(|c| c.name.as_str()))
                    ),
                ));
            }
            if let Some(sh) = &sharding {
                study.check_sharding().map_err(|e| {
                    Failure::new(exit::BAD_INPUT, format!("--shard {}: {e}", sh.shard))
                })?;
            }
            if check {
                print_plan(&study);
                return Ok(exit::OK);
            }
            let report = execute_study(&study, out, keep, sharding, cli.quiet)?;
            out!(
                "{}",
                report::render(&report.dir.path, &report.summary, &report.manifest, format)
            );
            eprintln!("results: {}", report.dir.path.display());
            Ok(status_code(report.summary.status))
        }
        Command::Rerun {
            run_dir,
            out,
            keep,
            threshold,
            format,
        } => {
            let threshold = report::compare::parse_threshold(&threshold)
                .map_err(|e| Failure::new(exit::BAD_INPUT, e))?;
            let before =
                report::load(&run_dir).map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            let names: Vec<String> = before
                .summary
                .contenders
                .iter()
                .map(|c| c.name.clone())
                .collect();
            let study = study::as_run(
                &before.manifest,
                &before.name,
                names,
                Some(study::resources::Machine::here(&out)),
            )
            .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            let report = execute_study(&study, out, keep, None, cli.quiet)?;
            eprintln!("results: {}", report.dir.path.display());
            let after = report::load(&report.dir.path)
                .map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
            let c = report::compare::compare(&before, &after, threshold);
            out!("{}", report::compare::render(&c, format));
            let reproduced = c.reproduction();
            match &reproduced {
                Ok(how) => eprintln!("reproduced {}: {how}", before.name),
                Err(why) => eprintln!("NOT reproduced ({}): {why}", before.name),
            }
            Ok(match status_code(report.summary.status) {
                exit::OK if reproduced.is_err() => exit::FAILED,
                code => code,
            })
        }
        Command::K8s {
            study,
            shards,
            image,
            namespace,
            name,
            secret,
            results_claim,
            results_size,
            scale,
            sets,
            contenders,
        } => {
            let bad = |e: String| Failure::new(exit::BAD_INPUT, e);
            if crate::shard::Shard::new(0, shards).is_none() {
                return Err(bad(format!(
                    "--shards {shards}: use 1 to {}",
                    crate::shard::MAX_SHARDS
                )));
            }
            let req = study::Request {
                study: study.clone(),
                scale: scale.clone(),
                sets: sets.clone(),
                contenders: contenders.clone(),
                // the pods have the passwords, not this machine
                passwords_elsewhere: true,
                ..study::Request::default()
            };
            // the text the pods get is the text checked here
            let source = study::source(&study).map_err(|e| bad(e.to_string()))?;
            let loaded = study::parse(&source, &req).map_err(|e| bad(e.to_string()))?;
            loaded
                .check_sharding()
                .map_err(|e| bad(format!("k8s: {e}")))?;
            let study_file = match builtin::get(&study) {
                Some(_) => format!("{study}.toml"),
                None => "study.toml".to_string(),
            };
            let study_text = source.text;
            let mut password_envs = Vec::new();
            for c in &loaded.contenders {
                let Some(spec) = loaded.file.contenders.iter().find(|s| s.name == c.name) else {
                    continue;
                };
                if spec.password_file.is_some() {
                    return Err(bad(format!(
                        "contender `{}` reads its password from a file, which the pods do not have: use password_env, and --secret",
                        c.name
                    )));
                }
                password_envs.extend(spec.password_env.clone());
            }
            password_envs.sort();
            password_envs.dedup();
            let mut run_args = Vec::new();
            for (flag, v) in scale
                .iter()
                .map(|s| ("--scale", s))
                .chain(sets.iter().map(|s| ("--set", s)))
                .chain(contenders.iter().map(|s| ("--contender", s)))
            {
                run_args.extend([flag.to_string(), v.clone()]);
            }
            let launch = crate::k8s::Launch {
                name: name.unwrap_or_else(|| {
                    format!("dbduel-{}", loaded.file.study.name)
                        .to_ascii_lowercase()
                        .replace('_', "-")
                }),
                namespace,
                image,
                shards,
                study_text,
                study_file,
                run_args,
                password_envs,
                secret,
                results_claim,
                results_size,
            };
            let list = crate::k8s::manifests(&launch).map_err(bad)?;
            outln!(
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            );
            Ok(exit::OK)
        }
        Command::Merge { runs, out, format } => {
            use crate::results::shard_merge;
            let read = runs
                .iter()
                .map(|d| shard_merge::ShardRun::read(d))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            let (dir, summary, manifest) = shard_merge::merge(read, &out).map_err(|e| {
                let code = match e {
                    shard_merge::MergeError::NotOneRun(_) => exit::BAD_INPUT,
                    shard_merge::MergeError::Results(_) => exit::FAILED,
                };
                Failure::new(code, e.to_string())
            })?;
            if let Err(e) = report::write_html(&dir, &summary, &manifest) {
                eprintln!("could not write the HTML report: {e}");
            }
            out!("{}", report::render(&dir.path, &summary, &manifest, format));
            eprintln!(
                "merged {} shards: {}",
                manifest.shards.len(),
                dir.path.display()
            );
            Ok(status_code(summary.status))
        }
        Command::Studies { action: None } => {
            for (name, text) in builtin::BUILTINS {
                outln!("{name:<12} {}", builtin::description(text));
            }
            Ok(exit::OK)
        }
        Command::Studies {
            action: Some(StudiesAction::Show { name }),
        } => match builtin::get(&name) {
            Some(text) => {
                out!("{text}");
                Ok(exit::OK)
            }
            None => Err(Failure::new(
                exit::BAD_INPUT,
                format!(
                    "no built-in study `{name}`; built-ins: {}",
                    builtin::names().join(", ")
                ),
            )),
        },
        Command::Report {
            run_dir,
            format,
            baseline,
        } => {
            let dir =
                RunDir::open(&run_dir).map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            let summary = dir
                .read_summary()
                .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            let mut manifest = dir
                .read_manifest()
                .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
            if let Some(b) = baseline {
                if !summary.contenders.iter().any(|c| c.name == b) {
                    return Err(Failure::new(
                        exit::BAD_INPUT,
                        format!(
                            "--baseline {b}: no contender `{b}` in this run; its contenders are: {}",
                            join_names(summary.contenders.iter().map(|c| c.name.as_str()))
                        ),
                    ));
                }
                manifest.baseline = Some(b);
            }
            out!("{}", report::render(&dir.path, &summary, &manifest, format));
            Ok(exit::OK)
        }
        Command::Compare {
            runs,
            runs_b,
            threshold,
            fail_on_regression,
            format,
        } => {
            let threshold = report::compare::parse_threshold(&threshold)
                .map_err(|e| Failure::new(exit::BAD_INPUT, e))?;
            let (side_a, side_b) = match (runs.as_slice(), runs_b.is_empty()) {
                ([a, b], true) => (vec![a.clone()], vec![b.clone()]),
                (_, true) => {
                    return Err(Failure::new(
                        exit::BAD_INPUT,
                        format!(
                            "compare takes two runs (A B), or several a side separated by `--` (A1 A2 -- B1 B2); got {} run(s) and no `--`",
                            runs.len()
                        ),
                    ));
                }
                (_, false) => (runs, runs_b),
            };
            let load = |ps: &[PathBuf]| -> Result<report::series::RunData, Failure> {
                let loaded = ps
                    .iter()
                    .map(|p| {
                        report::load(p).map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                report::series::RunData::pooled(loaded)
                    .map_err(|e| Failure::new(exit::BAD_INPUT, e))
            };
            let c = report::compare::compare(&load(&side_a)?, &load(&side_b)?, threshold);
            out!("{}", report::compare::render(&c, format));
            Ok(if fail_on_regression && c.regressions().next().is_some() {
                exit::FAILED
            } else {
                exit::OK
            })
        }
        Command::List { out } => {
            list(&out)?;
            Ok(exit::OK)
        }
        Command::Sandbox {
            action: SandboxAction::Up { engine, name, out },
        } => {
            let dir = out.join("sandboxes").join(&name);
            if dir.exists() {
                return Err(Failure::new(
                    exit::BAD_INPUT,
                    format!(
                        "{} exists: choose another --name, or remove it with `dbduel sandbox down --out {}`",
                        dir.display(),
                        out.display()
                    ),
                ));
            }
            let recipe: Box<dyn sandbox::Recipe> = match engine.as_str() {
                "mariadb" => Box::new(crate::engines::mariadb::recipe::MariadbRecipe {
                    settings: Default::default(),
                    rocksdb: false,
                    memory_limit_mb: None,
                    device_profile: None,
                    data_dir: None,
                    galera: None,
                }),
                _ => Box::new(crate::engines::postgres::recipe::PostgresRecipe::default()),
            };
            let started = sandbox::Sandbox::create(recipe, &name, &dir).and_then(|mut sb| {
                sb.start()?;
                let port = sb.layout.port;
                sb.finish(true)?;
                Ok(port)
            });
            let port = started.map_err(|e| {
                let code = match e {
                    sandbox::SandboxError::Missing { .. } => exit::PREREQUISITE,
                    _ => exit::FAILED,
                };
                Failure::new(code, format!("{engine} sandbox `{name}`: {e}"))
            })?;
            let target = match engine.as_str() {
                "mariadb" => format!("mysql://root@127.0.0.1:{port}"),
                _ => format!("postgres://dbduel@127.0.0.1:{port}"),
            };
            outln!("target = \"{target}\"");
            eprintln!(
                "{engine} running in {}; stop and remove it with `dbduel sandbox down --out {}`",
                dir.display(),
                out.display()
            );
            Ok(exit::OK)
        }
        Command::Sandbox {
            action: SandboxAction::Status { out },
        } => {
            let found = sandbox::find(&out);
            if found.is_empty() {
                outln!("no sandboxes under {}", out.display());
            }
            for f in found {
                let state = match (f.running, f.orphaned) {
                    (true, false) => "running (its dbduel is running)",
                    (true, true) => "running, left behind",
                    (false, false) => "stopped (its dbduel is running)",
                    (false, true) => "stopped, left behind",
                };
                outln!(
                    "{:<8} {:<16} {:<28} port {:<5} pid {:<8} {state}  {}",
                    f.manifest.flavor,
                    f.manifest.name,
                    f.manifest.role.as_deref().unwrap_or("single server"),
                    f.manifest.port,
                    f.manifest
                        .pid
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "-".into()),
                    f.path.display()
                );
            }
            Ok(exit::OK)
        }
        Command::Sandbox {
            action: SandboxAction::Down { out, all },
        } => {
            let mut failed = false;
            for f in sandbox::find(&out) {
                if !all && !f.orphaned {
                    outln!(
                        "skipping {} (its dbduel {} is running; use --all)",
                        f.path.display(),
                        f.manifest.owner_pid
                    );
                    continue;
                }
                match sandbox::remove_found(&f) {
                    Ok(()) => outln!(
                        "removed {} {} ({})",
                        f.manifest.flavor,
                        f.manifest.name,
                        f.path.display()
                    ),
                    Err(e) => {
                        failed = true;
                        eprintln!("error: {}: {e}", f.path.display());
                    }
                }
            }
            // Cgroups whose dbduel is gone and that hold no process (a `kill -9` left them).
            for dir in sandbox::limits::sweep() {
                outln!("removed cgroup {}", dir.display());
            }
            Ok(if failed { exit::FAILED } else { exit::OK })
        }
    }
}

/// A thousand clients need a thousand sockets, and servers started from here inherit the
/// limit: raise the soft limit on open files to the hard limit.
fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit fill and read the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Check that every contender can run here, then run the study with Ctrl-C handling and
/// progress.
fn execute_study(
    study: &study::Study,
    out: PathBuf,
    keep: bool,
    shard: Option<execute::Sharding>,
    quiet: bool,
) -> Result<execute::RunReport, Failure> {
    for c in &study.contenders {
        c.engine.preflight().map_err(|e| {
            // Something not installed (or an engine the server lacks) is a missing
            // prerequisite; a server that does not answer is a failure.
            let code = if e.kind == "missing" {
                exit::PREREQUISITE
            } else {
                exit::FAILED
            };
            Failure::new(code, format!("contender `{}` cannot run here: {e}", c.name))
        })?;
        // Never silently unthrottled: a profile that cannot apply stops the run now.
        if let Some(p) = c.engine.device_profile() {
            // where its data will be: its data_dir, else under the results
            let at = match c.engine.data_dir() {
                Some(d) => d.to_path_buf(),
                None => std::path::absolute(&out).unwrap_or_else(|_| out.clone()),
            };
            sandbox::limits::Limits::check_io(p, &at).map_err(|e| {
                Failure::new(
                    exit::PREREQUISITE,
                    format!(
                        "contender `{}` asks for device_profile {}, which cannot be applied here: {e}",
                        c.name,
                        p.describe()
                    ),
                )
            })?;
        }
    }
    let stop = install_signal_handlers()?;
    let mut progress = Progress::new(quiet);
    execute::run(
        study,
        &RunOptions { out, keep, shard },
        &mut progress,
        &stop,
    )
    .map_err(|e| Failure::new(exit::FAILED, e.to_string()))
}

/// `a, b, c`.
fn join_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// The exit code of a run's status.
fn status_code(s: Status) -> i32 {
    match s {
        Status::Ok | Status::Skipped => exit::OK,
        Status::Failed => exit::FAILED,
        Status::Interrupted => exit::INTERRUPTED,
    }
}

/// First SIGINT/SIGTERM sets the stop flag (the run finishes its tick and writes partial
/// results); a second one exits at once with 130.
fn install_signal_handlers() -> Result<Arc<AtomicBool>, Failure> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, exit::INTERRUPTED, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&stop)))
            .map_err(|e| {
                Failure::new(
                    exit::PREREQUISITE,
                    format!("cannot install signal handlers: {e}"),
                )
            })?;
    }
    Ok(stop)
}

fn print_plan(s: &study::Study) {
    let f = &s.file;
    outln!(
        "study {} ({}) from {}",
        f.study.name,
        s.scale.as_deref().unwrap_or("no scale"),
        s.source
    );
    let d = &f.dataset;
    if let Some(w) = d.warehouses {
        outln!(
            "dataset: TPC-C's nine tables for {w} warehouse(s) (seed {})",
            d.seed
        );
    } else {
        match d.tables {
            1 => outln!(
                "dataset: {} rows of {} (seed {}) into table {}",
                d.rows,
                d.generator,
                d.seed,
                d.table
            ),
            n => outln!(
                "dataset: {n} tables × {} rows of {} (seed {})",
                d.rows,
                d.generator,
                d.seed
            ),
        }
    }
    // Options and parameters as the study gives them, in its own TOML; what it leaves out
    // takes the defaults the README lists.
    for c in &s.contenders {
        outln!(
            "contender {}: engine {}, options {}",
            c.name,
            c.engine.kind(),
            toml::Value::Table(c.options.clone())
        );
    }
    let rounds = crate::run::plan(s);
    if rounds.len() > 1 {
        let orders: Vec<String> = rounds
            .iter()
            .map(|o| {
                o.iter()
                    .map(|&i| s.contenders[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        outln!(
            "rounds: {}, contenders interleaved: {}",
            rounds.len(),
            orders.join(" | ")
        );
    }
    for st in &s.steps {
        let spec = f.steps.iter().find(|x| x.name == st.name);
        let mut given = spec.map(|x| x.params.clone()).unwrap_or_default();
        if let Some(r) = spec.and_then(|x| x.report_interval_s) {
            given.insert("report_interval_s".into(), toml::Value::Integer(r as i64));
        }
        if given.is_empty() {
            outln!("step {}: {}", st.name, st.kind);
        } else {
            outln!(
                "step {}: {} {}",
                st.name,
                st.kind,
                toml::Value::Table(given)
            );
        }
    }
    outln!("(anything not given takes its default)");
}

fn list(out: &std::path::Path) -> Result<(), Failure> {
    let entries = match std::fs::read_dir(out) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            outln!(
                "no runs in {} yet; start one with `dbduel run shootout`",
                out.display()
            );
            return Ok(());
        }
        Err(e) => {
            return Err(Failure::new(
                exit::BAD_INPUT,
                format!("{}: {e}", out.display()),
            ));
        }
    };
    let mut runs: Vec<(PathBuf, Summary)> = entries
        .flatten()
        .filter_map(|e| {
            let dir = RunDir::open(&e.path()).ok()?;
            let s = dir.read_summary().ok()?;
            Some((dir.path, s))
        })
        .collect();
    runs.sort_by(|a, b| b.1.started_at.cmp(&a.1.started_at).then(b.0.cmp(&a.0)));
    if runs.is_empty() {
        outln!(
            "no runs in {} yet; start one with `dbduel run shootout`",
            out.display()
        );
    }
    for (path, s) in runs {
        let names: Vec<&str> = s.contenders.iter().map(|c| c.name.as_str()).collect();
        outln!(
            "{}  {:<11} {:<12} {:<10} {}  {}",
            s.started_at,
            s.status.as_str(),
            s.study,
            s.scale.as_deref().unwrap_or("-"),
            names.join(","),
            path.display()
        );
    }
    Ok(())
}
