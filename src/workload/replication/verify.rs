//! Nothing lost: every table's checksum on each replica must equal the primary's, once the
//! replicas have caught up. A difference fails the step and names the replica and the table.

use crate::engine::replication::{Replicated, TableSum};
use crate::workload::ctx::StepError;
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
        if let Some(problem) = difference(("the primary", &primary), ("the replica", &replica)) {
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

/// The first table whose checksum differs, or that one side lacks, in words: `a` is the
/// reference copy (`the primary`, `node-1`), `b` the one compared with it.
pub(crate) fn difference(
    (a_name, a): (&str, &[TableSum]),
    (b_name, b): (&str, &[TableSum]),
) -> Option<String> {
    for p in a {
        match b.iter().find(|r| r.table == p.table) {
            None => return Some(format!("table {} is missing on {b_name}", p.table)),
            Some(r) if r.sum != p.sum => {
                return Some(format!(
                    "table {} differs: checksum {} on {a_name}, {} on {b_name}",
                    p.table, p.sum, r.sum
                ));
            }
            Some(_) => {}
        }
    }
    b.iter()
        .find(|r| !a.iter().any(|p| p.table == r.table))
        .map(|r| format!("table {} exists on {b_name} only", r.table))
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
        let diff = |r: &[TableSum]| difference(("the primary", &p), ("the replica", r));
        assert_eq!(diff(&p), None);
        let d = diff(&sums(&[("a", "1"), ("b", "3")])).expect("differs");
        assert!(
            d.contains("table b differs: checksum 2 on the primary, 3"),
            "{d}"
        );
        let d = diff(&sums(&[("a", "1")])).expect("missing");
        assert!(d.contains("table b is missing"), "{d}");
        let d = diff(&sums(&[("a", "1"), ("b", "2"), ("c", "0")])).expect("extra");
        assert!(d.contains("table c exists on the replica only"), "{d}");
    }
}
