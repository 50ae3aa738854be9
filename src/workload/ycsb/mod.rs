//! YCSB's core workloads (issue: the `ycsb` step and dataset): the key choosers and key
//! names of `CoreWorkload` ([`keys`]) and its workload files ([`properties`]). The step that
//! runs them on every engine builds on these.

pub mod keys;
pub mod properties;
