//! Nothing lost: every table's checksum on each replica must equal the primary's, once the
//! replicas have caught up. A difference fails the step and names the replica and the table.

use crate::engine::replication::{Replicated, TableSum};
use crate::workload::StepError;
use serde::Serialize;

/// What the check found (when it passed).
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// Tables compared on every replica.
    pub tables: usize,
    pub rule: &'static str,
    pub elapsed_s: f64,
    /// The primary's checksums.
    pub sums: Vec<TableSum>,
}

impl Checked {
    /// `checksums equal on 3 replicas × 5 tables (CHECKSUM TABLE …)`.
    pub fn sentence(&self, replicas: usize) -> String {
        format!(
            "checksums equal on {replicas} replica(s) × {} tables ({}, {:.1} s)",
            self.tables, self.rule, self.elapsed_s
        )
    }
}

/// Compare every replica's checksums with the primary's.
pub fn checksums_equal(repl: &dyn Replicated) -> Result<Checked, StepError> {
    let t = std::time::Instant::now();
    let primary = repl.checksums(None)?;
    for i in 0..repl.replica_count() {
        let replica = repl.checksums(Some(i))?;
        if let Some(problem) = difference(&primary, &replica) {
            return Err(StepError::Check(format!(
                "replica {} does not hold what the primary holds: {problem} ({})",
                repl.replica_name(i),
                repl.checksum_rule()
            )));
        }
    }
    Ok(Checked {
        tables: primary.len(),
        rule: repl.checksum_rule(),
        elapsed_s: t.elapsed().as_secs_f64(),
        sums: primary,
    })
}

/// The first table whose checksum differs, or that one side lacks, in words.
fn difference(primary: &[TableSum], replica: &[TableSum]) -> Option<String> {
    for p in primary {
        match replica.iter().find(|r| r.table == p.table) {
            None => return Some(format!("table {} is missing on the replica", p.table)),
            Some(r) if r.sum != p.sum => {
                return Some(format!(
                    "table {} differs: checksum {} on the primary, {} on the replica",
                    p.table, p.sum, r.sum
                ));
            }
            Some(_) => {}
        }
    }
    replica
        .iter()
        .find(|r| !primary.iter().any(|p| p.table == r.table))
        .map(|r| format!("table {} exists on the replica only", r.table))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(v: &[(&str, &str)]) -> Vec<TableSum> {
        v.iter()
            .map(|(t, s)| TableSum {
                table: t.to_string(),
                sum: s.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_difference_names_the_table() {
        let p = sums(&[("a", "1"), ("b", "2")]);
        assert_eq!(difference(&p, &p), None);
        let d = difference(&p, &sums(&[("a", "1"), ("b", "3")])).expect("differs");
        assert!(
            d.contains("table b differs: checksum 2 on the primary, 3"),
            "{d}"
        );
        let d = difference(&p, &sums(&[("a", "1")])).expect("missing");
        assert!(d.contains("table b is missing"), "{d}");
        let d = difference(&p, &sums(&[("a", "1"), ("b", "2"), ("c", "0")])).expect("extra");
        assert!(d.contains("table c exists on the replica only"), "{d}");
    }
}
