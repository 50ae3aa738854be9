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
    /// Same as --set study.repeat=N. `auto[:MAX]`: rounds go on (at least 5, at most MAX,
    /// default 15) until every judged figure's interval is within ±5% of its median — a
    /// precision rule, never "until a difference shows"; the report says the rounds each
    /// figure needed and what stopped the run.
    #[arg(long, value_name = "N|auto[:MAX]", value_parser = parse_repeat)]
    repeat: Option<Repeat>,
    /// Start no round that would end past this much time from the first round's start, at
    /// the pace of the rounds run (`90s`, `30m`, `1h30m`): a step is never cut short.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    budget: Option<std::time::Duration>,
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
    let rounds = round_rule(args.repeat, args.budget);
    let report = execute_study(
        &study, args.out, args.keep, sharding, rounds, quiet, metrics,
    )?;
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
    match args.repeat {
        Some(Repeat::Fixed(n)) => sets.push(format!("study.repeat={n}")),
        // The plan holds the most rounds; the run decides how many it needs.
        Some(Repeat::Auto(max)) => sets.push(format!("study.repeat={max}")),
        None => {}
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

/// `--repeat`: a number of rounds, or `auto[:MAX]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    Fixed(u32),
    Auto(u32),
}

fn parse_repeat(s: &str) -> Result<Repeat, String> {
    use crate::results::spread::MIN_SAMPLES;
    let max = match s.strip_prefix("auto") {
        None => {
            return s
                .parse()
                .map(Repeat::Fixed)
                .map_err(|_| format!("{s:?} is not a number of rounds, nor auto or auto:MAX"));
        }
        Some("") => crate::run::auto_rounds::DEFAULT_MAX as u32,
        Some(rest) => rest
            .strip_prefix(':')
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| format!("{s:?}: write auto, or auto:MAX with MAX a number of rounds"))?,
    };
    if (max as usize) < MIN_SAMPLES {
        return Err(format!(
            "auto:{max}: an interval needs {MIN_SAMPLES} rounds before it can be judged; give MAX of {MIN_SAMPLES} or more"
        ));
    }
    Ok(Repeat::Auto(max))
}

/// `90s`, `30m`, `2h`, `1h30m`. (Three suffixes: not worth a crate.)
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not a duration: write it as 90s, 30m, 2h or 1h30m");
    let (mut total, mut digits) = (0u64, String::new());
    for c in s.trim().chars() {
        match c {
            '0'..='9' => digits.push(c),
            's' | 'm' | 'h' if !digits.is_empty() => {
                let n: u64 = digits.parse().map_err(|_| bad())?;
                let unit = match c {
                    's' => 1,
                    'm' => 60,
                    _ => 3600,
                };
                total = n
                    .checked_mul(unit)
                    .and_then(|x| total.checked_add(x))
                    .ok_or_else(bad)?;
                digits.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !digits.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs(total))
}

/// What decides the rounds beyond the plan's, when anything does.
fn round_rule(
    repeat: Option<Repeat>,
    budget: Option<std::time::Duration>,
) -> Option<crate::run::auto_rounds::RoundRule> {
    let auto = matches!(repeat, Some(Repeat::Auto(_)));
    (auto || budget.is_some()).then_some(crate::run::auto_rounds::RoundRule {
        auto,
        threshold: crate::run::auto_rounds::DEFAULT_THRESHOLD,
        budget,
    })
}

#[cfg(test)]
mod round_flags {
    use super::*;

    #[test]
    fn repeat_takes_a_number_or_auto_with_its_most() {
        assert_eq!(parse_repeat("5"), Ok(Repeat::Fixed(5)));
        assert_eq!(parse_repeat("auto"), Ok(Repeat::Auto(15)));
        assert_eq!(parse_repeat("auto:9"), Ok(Repeat::Auto(9)));
        assert!(parse_repeat("auto:3").unwrap_err().contains("5 rounds"));
        assert!(parse_repeat("auto9").is_err());
        assert!(parse_repeat("many").is_err());
    }

    #[test]
    fn a_budget_is_a_duration_in_seconds_minutes_or_hours() {
        let d = |s: &str| parse_duration(s).map(|d| d.as_secs());
        assert_eq!(d("90s"), Ok(90));
        assert_eq!(d("30m"), Ok(1800));
        assert_eq!(d("1h30m"), Ok(5400));
        for bad in ["", "30", "m", "5d", "0s", "1.5h"] {
            assert!(d(bad).is_err(), "{bad}");
        }
    }
}
