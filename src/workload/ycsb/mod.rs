//! YCSB's core workloads: the key choosers of `CoreWorkload` ([`keys`]), its workload files
//! ([`properties`]) and the `ycsb` step that runs them on the `ycsb` dataset ([`step`]).

pub mod keys;
pub mod properties;
pub mod step;
