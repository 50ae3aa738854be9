//! The command line: the clap types (`Cli`, the `Command` list), `main` and the dispatch to
//! one file per command (`run`, `studies`, `report`, `rerun`, `compare`, `merge`, `k8s`, `slurm`,
//! `sandbox`, `list`, `history`, `restore`, `init`). Every failure becomes a message that says what to do and an exit code
//! (0 ok, 1 a contender or step failed, 2 bad input or usage, 3 missing prerequisite, 130
//! interrupted): see `failure`.

mod compare;
mod execute;
mod failure;
mod history;
mod init;
mod k8s;
mod list;
mod merge;
mod output;
mod plan;
mod report;
mod rerun;
mod restore;
mod run;
mod sandbox;
mod sharded;
mod slurm;
mod studies;

pub use failure::{Failure, exit};

use clap::{Parser, Subcommand};
use std::path::PathBuf;

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
        List studies: dbduel studies\n\n\
        More: docs/commands.md, docs/studies.md, docs/study-files.md, docs/engines.md, \
        docs/step-kinds.md, docs/reports.md, docs/results.md, docs/measurement.md, docs/shards.md",
    after_help = "Exit codes: 0 ok, 1 a contender or step failed, 2 bad input or usage, 3 missing prerequisite, 130 interrupted."
)]
pub struct Cli {
    /// No progress output on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a study: a built-in name (see `dbduel studies`) or a path to a TOML file.
    Run(run::RunArgs),
    /// List the built-in studies, or print one (`dbduel studies show NAME > my.toml`; `show
    /// custom` prints the template of your own workload that `dbduel init` writes).
    Studies {
        #[command(subcommand)]
        action: Option<studies::StudiesAction>,
    },
    /// Write a study of your own schema, data and transactions to start from — the `custom`
    /// template with a sample schema (and its MariaDB/MySQL and PostgreSQL variants), a CSV
    /// and two scripts — into DIR; existing files are never overwritten.
    Init(init::InitArgs),
    /// Render a past run from its directory alone.
    Report(report::ReportArgs),
    /// Run a past run again exactly — its study as it ran (scale and overrides applied), seed,
    /// rounds and contenders — then compare the new run with it and say whether this machine
    /// reproduced it within the noise (exit 1 when a judged figure differs).
    Rerun(rerun::RerunArgs),
    /// Compare two runs of a study (before/after a change): per contender per step, the
    /// change from A to B and whether it is beyond the threshold and the run's noise.
    /// `compare A B`, or several runs a side: `compare A1 A2 A3 -- B1 B2 B3` (each side's
    /// runs pooled, every figure judged from its samples: 5 or more a side).
    Compare(compare::CompareArgs),
    /// Make the shards of one run (`run --shard I/N`) into one run: counts and rates added,
    /// every latency percentile computed from the shards' histograms summed. The merged run
    /// is an ordinary run directory for `report` and `compare`.
    Merge(merge::MergeArgs),
    /// Print the Kubernetes objects that run a study's shards (`kubectl apply -f -`): a
    /// ConfigMap with the study file, an Indexed Job of N pods each running one shard, the
    /// target passwords as Secret references, and a volume claim for the results.
    K8s(k8s::K8sArgs),
    /// Print the `sbatch` script that runs a study's shards as one Slurm array job (task I is
    /// shard I, the run group the job's id) and merges them in a job that starts after them;
    /// passwords from the tasks' environment or files the nodes see, never in the script.
    Slurm(slurm::SlurmArgs),
    /// Private servers dbduel started: list them, or stop and remove them.
    Sandbox {
        #[command(subcommand)]
        action: sandbox::SandboxAction,
    },
    /// Put back what a run that died changed on someone else's replication topology
    /// (replicas it paused, the primary's binlog_commit_wait_*), from the originals it wrote
    /// into its run directory; passwords from the study's password_env/password_file.
    Restore(restore::RestoreArgs),
    /// The runs recorded in the results catalogue: list and filter them, follow a figure
    /// across them (`--figure STEP.KEY`), import runs made elsewhere, or rebuild it.
    History(history::HistoryArgs),
    /// List past runs, newest first.
    List {
        /// Results root to look in.
        #[arg(long, default_value = "dbduel-results")]
        out: PathBuf,
    },
}

/// Parse arguments, run, print errors; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    raise_open_files_limit();
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            crate::errln!("error: {}", f.message);
            f.code
        }
    }
}

/// Run a parsed command line: one function a command, each returning its exit code.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    let ok = |()| exit::OK;
    match cli.command {
        Command::Run(args) => run::exec(args, cli.quiet),
        Command::Studies { action } => studies::exec(action).map(ok),
        Command::Init(args) => init::exec(args).map(ok),
        Command::Report(args) => report::exec(args).map(ok),
        Command::Rerun(args) => rerun::exec(args, cli.quiet),
        Command::Compare(args) => compare::exec(args),
        Command::Merge(args) => merge::exec(args),
        Command::K8s(args) => k8s::exec(args).map(ok),
        Command::Slurm(args) => slurm::exec(args).map(ok),
        Command::Sandbox { action } => sandbox::exec(action),
        Command::Restore(args) => restore::exec(args),
        Command::History(args) => history::exec(args).map(ok),
        Command::List { out } => list::exec(&out).map(ok),
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
