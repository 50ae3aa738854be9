//! Findings across steps and contenders, in words and numbers: what one step's table cannot
//! say on its own. For `lookups` steps, each contender's fall from keys its cache holds
//! (`small-random`) to keys that read the disk (`full-random`), and each partitioned
//! contender against its plain twin (the same engine and options but `partitions`); then the
//! original study's own figures, when the study file states them (`[study] reference`).

use super::format;
use crate::results::{Manifest, Status, Summary};
use serde_json::Value;

/// The findings of a run, one sentence each; empty when none apply.
pub fn findings(s: &Summary, m: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
    let steps = lookup_steps(&m.study);
    let in_mem = steps.iter().find(|(_, k)| k == "small-random");
    let on_disk = steps.iter().find(|(_, k)| k == "full-random");
    if let (Some((a, _)), Some((b, _))) = (in_mem, on_disk) {
        for c in &s.contenders {
            if let (Some(x), Some(y)) = (best_qps(s, &c.name, a), best_qps(s, &c.name, b)) {
                out.push(format!(
                    "{}: {} → {} lookups/s from keys its cache holds ({a}) to keys from the whole table ({b}): ×{}",
                    c.name,
                    format::count(x),
                    format::count(y),
                    ratio(y / x)
                ));
            }
        }
    }
    for (part, plain) in partition_twins(&m.study) {
        let ratios: Vec<String> = steps
            .iter()
            .filter_map(|(st, _)| {
                let (p, q) = (best_qps(s, &part, st)?, best_qps(s, &plain, st)?);
                Some(format!("{st} ×{}", ratio(p / q)))
            })
            .collect();
        if !ratios.is_empty() {
            out.push(format!(
                "{part} against {plain} (the same but not partitioned), QPS: {}",
                ratios.join(", ")
            ));
        }
    }
    if !out.is_empty()
        && let Some(r) = m
            .study
            .get("study")
            .and_then(|st| st.get("reference"))
            .and_then(Value::as_str)
    {
        out.push(format!("the original: {r}"));
    }
    out
}

/// `lookups` steps of the study as run: (name, keys).
fn lookup_steps(study: &Value) -> Vec<(String, String)> {
    study
        .get("step")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|st| st.get("kind").and_then(Value::as_str) == Some("lookups"))
        .filter_map(|st| {
            Some((
                st.get("name")?.as_str()?.to_string(),
                st.get("keys")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// (partitioned contender, its plain twin): same engine and target, same options but for
/// `partitions`.
fn partition_twins(study: &Value) -> Vec<(String, String)> {
    let cs: Vec<&Value> = study
        .get("contender")
        .and_then(Value::as_array)
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let without = |c: &Value| {
        let mut o = c.get("options").cloned().unwrap_or(Value::Null);
        if let Some(m) = o.as_object_mut() {
            m.remove("partitions");
        }
        (c.get("engine").cloned(), c.get("target").cloned(), o)
    };
    let name = |c: &Value| c.get("name").and_then(Value::as_str).map(String::from);
    let partitioned = |c: &Value| c.get("options").and_then(|o| o.get("partitions")).is_some();
    let mut out = Vec::new();
    for p in cs.iter().filter(|c| partitioned(c)) {
        if let Some(q) = cs
            .iter()
            .find(|q| !partitioned(q) && without(q) == without(p))
            && let (Some(a), Some(b)) = (name(p), name(q))
        {
            out.push((a, b));
        }
    }
    out
}

/// The best QPS of a `lookups` step that ran through.
fn best_qps(s: &Summary, contender: &str, step: &str) -> Option<f64> {
    let st = s
        .contenders
        .iter()
        .find(|c| c.name == contender)?
        .steps
        .iter()
        .find(|x| x.name == step && x.status == Status::Ok)?;
    st.metrics
        .iter()
        .find(|m| m.key == "best_qps")
        .map(|m| m.value)
        .filter(|v| *v > 0.0)
}

/// A ratio with three significant digits (×0.0153, ×0.33, ×1.12).
fn ratio(r: f64) -> String {
    if r >= 1.0 {
        format!("{r:.2}")
    } else {
        let digits = (-r.log10()).floor().max(0.0) as usize + 3;
        format!("{r:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{ContenderSummary, Metric, StepSummary};

    fn step(name: &str, qps: f64) -> StepSummary {
        let mut s = StepSummary::without_figures(name, "lookups", Status::Ok, "");
        s.metrics.push(Metric::new(
            "best_qps",
            "best QPS",
            qps,
            crate::results::Unit::PerSecond,
            crate::results::Better::Higher,
        ));
        s
    }

    #[test]
    fn falls_and_partition_ratios_in_words() {
        let study = serde_json::json!({
            "study": { "name": "p", "reference": "MongoDB 166,527 → 2,549" },
            "contender": [
                { "name": "innodb", "engine": "mariadb", "options": { "buffer_pool_mb": 128 } },
                { "name": "innodb-p", "engine": "mariadb", "options": { "buffer_pool_mb": 128, "partitions": 8 } },
                { "name": "pg-p", "engine": "postgres", "options": { "partitions": 8 } },
            ],
            "step": [
                { "name": "load", "kind": "load" },
                { "name": "hot", "kind": "lookups", "keys": "small-random" },
                { "name": "cold", "kind": "lookups", "keys": "full-random" },
            ],
        });
        let contender = |name: &str, hot: f64, cold: f64| ContenderSummary {
            name: name.into(),
            engine: "mariadb".into(),
            steps: vec![step("hot", hot), step("cold", cold)],
        };
        let s = Summary {
            schema_version: 1,
            study: "p".into(),
            scale: None,
            started_at: String::new(),
            finished_at: None,
            status: Status::Ok,
            contenders: vec![
                contender("innodb", 40_000.0, 2_000.0),
                contender("innodb-p", 30_000.0, 2_400.0),
                contender("pg-p", 1.0, 1.0),
            ],
        };
        let mut m: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "dbduel": { "version": "0", "commit": "x" },
            "source": "p", "scale": null, "overrides": [], "study": null,
            "started_at": "", "contenders": [],
            "host": { "hostname": "h", "cpu_model": "c", "cores": 2, "mem_total_bytes": 1,
                      "kernel": "k" },
        }))
        .expect("manifest");
        m.study = study;
        let f = findings(&s, &m);
        assert_eq!(
            f[0],
            "innodb: 40,000 → 2,000 lookups/s from keys its cache holds (hot) to keys from the whole table (cold): ×0.0500"
        );
        assert!(f[1].starts_with("innodb-p: 30,000 → 2,400"), "{f:?}");
        // pg-p has no plain twin; innodb-p's is innodb
        assert_eq!(
            f[3],
            "innodb-p against innodb (the same but not partitioned), QPS: hot ×0.750, cold ×1.20"
        );
        assert_eq!(f[4], "the original: MongoDB 166,527 → 2,549");
        assert_eq!(f.len(), 5);
    }
}
