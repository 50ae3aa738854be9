//! dbduel runs the same database experiment on two or more engines and compares them side by
//! side. See `DESIGN` in the README for how the modules fit together.

pub mod cli;
pub mod dataset;
pub mod engine;
pub mod execute;
pub mod fdlimit;
pub mod k8s;
pub mod metrics;
pub mod oscache;
pub mod progress;
pub mod report;
pub mod results;
pub mod runner;
pub mod sandbox;
pub mod shard;
pub mod study;
pub mod sysmon;
pub mod workload;
