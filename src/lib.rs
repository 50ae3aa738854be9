//! dbduel runs the same database experiment on two or more engines and compares them side by
//! side. See `docs/design.md` for how the modules fit together.

// A build without the server engines (`--no-default-features`, `make demo`'s) leaves what only
// they use — replicas' targets, cluster members, sandbox certificates — compiled and unused.
#![cfg_attr(not(feature = "servers"), allow(dead_code))]

pub mod cli;
pub mod dataset;
pub mod decode;
pub mod engine;
pub mod engines;
pub mod fdlimit;
pub mod history;
pub mod k8s;
pub mod live;
pub mod metrics;
pub mod oscache;
pub mod progress;
pub mod report;
pub mod results;
pub mod run;
pub mod runner;
pub mod sandbox;
pub mod shard;
pub mod slurm;
pub mod stop;
pub mod study;
pub mod sysmon;
pub mod workload;
