//! `dbduel run`: load a study (scale, overrides, contenders), check it, and print its plan
//! (`--check`) or run it and print the comparison; `--shard I/N` runs one shard of a run.

use super::execute::execute_study;
use super::failure::{Failure, exit, join_names, status_code};
use super::output::out;
use super::plan::print_plan;
use crate::report::{self, Format};
use crate::run as execute;
use crate::study::{self, Study};
use std::path::PathBuf;

/// `dbduel run`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
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
    /// Format of the run's report printed at the end.
    #[arg(long, default_value = "text", value_parser = Format::parser())]
    format: Format,
    /// Check the study and print the plan without running anything.
    #[arg(long)]
    check: bool,
    /// Run even if the study looks too big for this machine's memory or disk.
    #[arg(long)]
    skip_resource_check: bool,
    /// Run study-written SQL (sql, script, update, queries steps) on a target whose account
    /// may do more than dbduel's own database needs (as each contender's `wide_account =
    /// true`). Without it such a run stops before anything runs and prints the account that
    /// would suffice.
    #[arg(long)]
    allow_wide_account: bool,
    /// Serve the run's live metrics for Prometheus at http://ADDR/metrics (OpenMetrics text:
    /// operations, errors, latency histograms, clients, rates, dbduel's CPU and memory, by
    /// study, contender, step, op, round and shard). ADDR is PORT (on 127.0.0.1) or
    /// HOST:PORT; port 0 picks a free one, printed on stderr.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Let --metrics-listen use an address other than loopback (the endpoint has no
    /// authentication).
    #[arg(long, requires = "metrics_listen")]
    metrics_allow_remote: bool,
    #[command(flatten)]
    sharding: ShardArgs,
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

/// Run (or with `--check`, plan) a study; the exit code is the run's status.
pub(super) fn exec(args: RunArgs, quiet: bool) -> Result<i32, Failure> {
    let sharding = args.sharding.resolve().map_err(Failure::bad_input)?;
    let metrics = args
        .metrics_listen
        .as_deref()
        .map(|a| crate::live::listen_addr(a, args.metrics_allow_remote))
        .transpose()
        .map_err(Failure::bad_input)?;
    let study = load(&args, sharding.as_ref())?;
    if args.check {
        print_plan(&study);
        return Ok(exit::OK);
    }
    let report = execute_study(&study, args.out, args.keep, sharding, quiet, metrics)?;
    out!(
        "{}",
        report::render(
            &report.dir.path,
            &report.summary,
            &report.manifest,
            args.format
        )
        .map_err(|e| Failure::new(exit::FAILED, e))?
    );
    crate::errln!("results: {}", report.dir.path.display());
    Ok(status_code(report.summary.status))
}

/// The study as this run would run it: loaded with the flags applied, its baseline among
/// the contenders chosen, and fit for sharding when sharded.
fn load(args: &RunArgs, sharding: Option<&execute::Sharding>) -> Result<Study, Failure> {
    // Only shard 0 writes the dataset and loads it; the others need no disk for it.
    let machine = (!args.skip_resource_check).then(|| {
        let mut m = study::resources::Machine::here(&args.out);
        if sharding.is_some_and(|s| !s.shard.leads()) {
            m.disk_free_bytes = None;
        }
        m
    });
    let mut sets = args.sets.clone();
    if let Some(n) = args.repeat {
        sets.push(format!("study.repeat={n}"));
    }
    if let Some(b) = &args.baseline {
        sets.push(format!("study.baseline={b:?}"));
    }
    let req = study::Request {
        study: args.study.clone(),
        scale: args.scale.clone(),
        sets,
        contenders: args.contenders.clone(),
        all_contenders: args.all_contenders,
        machine,
        passwords_elsewhere: false,
    };
    let mut study = study::load(&req).map_err(|e| Failure::bad_input(e.to_string()))?;
    study.allow_wide_account = args.allow_wide_account;
    if let Some(b) = &args.baseline
        && !study.contenders.iter().any(|c| &c.name == b)
    {
        return Err(Failure::bad_input(format!(
            "--baseline {b}: `{b}` is not among the contenders this run would run ({}); add --contender {b}",
            join_names(study.contenders.iter().map(|c| c.name.as_str()))
        )));
    }
    if let Some(sh) = sharding {
        study
            .check_sharding()
            .map_err(|e| Failure::bad_input(format!("--shard {}: {e}", sh.shard)))?;
    }
    Ok(study)
}
