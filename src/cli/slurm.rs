//! `dbduel slurm`: check a study can run sharded, then print the `sbatch` script that runs its
//! shards as one Slurm array job and merges them (see `crate::slurm`).

use super::failure::Failure;
use super::output::out;
use crate::slurm::{Launch, StudyText};
use crate::study::{Study, builtin};
use std::path::PathBuf;

/// `dbduel slurm`'s arguments.
#[derive(clap::Args, Debug)]
pub struct SlurmArgs {
    /// Built-in study name or path to a study file (its contenders need targets).
    study: String,
    /// How many shards: the array's tasks, all running at once.
    #[arg(long, value_name = "N")]
    shards: u32,
    /// The directory every node shares that the tasks write their run directories to (under
    /// the job's id), and the merge its run. It must exist before the job starts.
    #[arg(long, value_name = "DIR", default_value = "dbduel-results")]
    results: PathBuf,
    /// The job's name. Default: dbduel-STUDY.
    #[arg(long)]
    name: Option<String>,
    /// How the nodes run dbduel: a command on their PATH, or a path they all see.
    #[arg(long, value_name = "COMMAND", default_value = "dbduel")]
    dbduel: String,
    /// The partition the tasks and the merge run in.
    #[arg(long)]
    partition: Option<String>,
    /// Each task's time limit (`sbatch --time`, e.g. 01:00:00).
    #[arg(long)]
    time: Option<String>,
    /// Seconds a shard waits for the others at a meeting (`run --barrier-timeout-s`).
    #[arg(long, value_name = "S")]
    barrier_timeout_s: Option<u64>,
    #[arg(long)]
    scale: Option<String>,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    #[arg(long = "contender", value_name = "NAME")]
    contenders: Vec<String>,
    /// Task I serves its live metrics at port PORT+I of HOST on its node (`run
    /// --metrics-listen HOST:PORT+I`) and writes its address for Prometheus's file discovery
    /// to RESULTS/JOBID/prometheus/shard-I.json. PORT alone is loopback; a Prometheus on
    /// another machine needs `0.0.0.0:PORT` and --metrics-allow-remote.
    #[arg(long, value_name = "[HOST:]PORT")]
    metrics_listen: Option<String>,
    /// Let --metrics-listen be an address other than loopback (the endpoint has no
    /// authentication).
    #[arg(long, requires = "metrics_listen")]
    metrics_allow_remote: bool,
}

/// Print the script (`dbduel slurm … > run.sbatch && sbatch run.sbatch`).
pub(super) fn exec(args: SlurmArgs) -> Result<(), Failure> {
    let (source, loaded) = super::sharded::load(
        "slurm",
        &args.study,
        args.shards,
        args.scale.clone(),
        args.sets.clone(),
        args.contenders.clone(),
    )?;
    let (password_envs, password_files) = passwords(&loaded);
    let results = std::path::absolute(&args.results)
        .map_err(|e| Failure::bad_input(format!("--results {}: {e}", args.results.display())))?;
    let metrics = args
        .metrics_listen
        .as_deref()
        .map(|spec| {
            let addr = crate::live::listen_addr(spec, args.metrics_allow_remote)
                .map_err(Failure::bad_input)?;
            super::sharded::metrics_port(Some(addr.port()), args.shards)?;
            Ok::<_, Failure>(addr)
        })
        .transpose()?;
    let run_args = super::sharded::run_args(args.scale.as_ref(), &args.sets, &args.contenders);
    let launch = Launch {
        name: args.name.unwrap_or_else(|| {
            format!("dbduel-{}", loaded.file.study.name).replace(|c: char| c.is_whitespace(), "-")
        }),
        study_name: loaded.file.study.name.clone(),
        shards: args.shards,
        dbduel: args.dbduel,
        study: match builtin::get(&args.study) {
            Some(_) => StudyText::Builtin(args.study.clone()),
            None => StudyText::File(source.text),
        },
        run_args,
        results: results.display().to_string(),
        password_envs,
        password_files,
        partition: args.partition,
        time: args.time,
        barrier_timeout_s: args.barrier_timeout_s,
        metrics,
    };
    let script = crate::slurm::script(&launch).map_err(Failure::bad_input)?;
    out!("{script}");
    Ok(())
}

/// The environment variables and the files the chosen contenders (and their replicas given by
/// target) read their passwords from, each once.
fn passwords(loaded: &Study) -> (Vec<String>, Vec<String>) {
    let (mut envs, mut files) = (Vec::new(), Vec::new());
    for c in &loaded.contenders {
        let Some(spec) = loaded.file.contenders.iter().find(|s| s.name == c.name) else {
            continue;
        };
        envs.extend(spec.password_env.clone());
        files.extend(spec.password_file.iter().map(|f| f.display().to_string()));
        let replicas = c.options.get("replicas").and_then(toml::Value::as_array);
        for r in replicas.into_iter().flatten() {
            let text = |k: &str| r.get(k).and_then(toml::Value::as_str).map(str::to_string);
            envs.extend(text("password_env"));
            files.extend(text("password_file"));
        }
    }
    for v in [&mut envs, &mut files] {
        v.sort();
        v.dedup();
    }
    (envs, files)
}
