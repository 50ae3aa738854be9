//! Findings across steps and contenders, in words and numbers: what one step's table cannot
//! say on its own. For steps that draw keys (their spec says `keys`), each contender's fall
//! from keys its cache holds (`small-random`) to keys that read the disk (`full-random`); each
//! partitioned contender against its plain twin (the same engine and options but
//! `partitions`); each engine on a fast device profile against the same on a slow one, step by
//! step; for steps that time numbered queries (figures `qNN_hot_s`, as `tpch-power` records),
//! the queries each contender runs fastest and slowest and by how much; for steps that count
//! acknowledged transactions lost to a crash (figures `lost_per_crash` beside `tps`), which
//! contenders lost nothing and at what rate, and what the others lost for theirs; then the
//! original study's own figures, when the study file states them (`[study] reference`).
//!
//! Steps are told apart by what they recorded — their spec's fields and their figures' keys —
//! never by their kind's name.

use super::format;
use super::study::device_profiles;
use crate::results::{Manifest, Metric, Role, Status, StepSummary, Summary, Unit};
use crate::sandbox::device_profile::DeviceProfile;
use serde_json::Value;

/// The findings of a run, one sentence each; empty when none apply.
pub fn findings(s: &Summary, m: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
    let steps = keyed_steps(&m.study);
    for (a, b, what) in &key_falls(s, &steps) {
        for c in &s.contenders {
            if let (Some(x), Some(y)) = (lead(s, &c.name, a), lead(s, &c.name, b)) {
                out.push(format!(
                    "{}: {} → {} {what} from keys its cache holds ({a}) to keys from the whole table ({b}): ×{}",
                    c.name,
                    format::count(x),
                    format::count(y),
                    format::ratio(y / x)
                ));
            }
        }
    }
    for (part, plain) in partition_twins(&m.study) {
        let ratios: Vec<String> = steps
            .iter()
            .filter_map(|(st, _, _)| {
                let (p, q) = (lead(s, &part, st)?, lead(s, &plain, st)?);
                Some(format!("{st} ×{}", format::ratio(p / q)))
            })
            .collect();
        if !ratios.is_empty() {
            out.push(format!(
                "{part} against {plain} (the same but not partitioned), QPS: {}",
                ratios.join(", ")
            ));
        }
    }
    for (fast, slow) in profile_twins(&m.study) {
        let ratios: Vec<String> = run_steps(s, &m.study)
            .iter()
            .filter_map(|st| {
                let (f, w) = (lead(s, &fast.0, st)?, lead(s, &slow.0, st)?);
                Some(format!("{st} ×{}", format::ratio(f / w)))
            })
            .collect();
        if !ratios.is_empty() {
            out.push(format!(
                "{} on {} against {} on {}: {}",
                fast.0,
                fast.1.describe(),
                slow.0,
                slow.1.describe(),
                ratios.join(", ")
            ));
        }
    }
    out.extend(query_wins(s));
    out.extend(losses(s));
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

/// Pairs of steps of one kind that draw keys, one from the cache's keys (`small-random`), one
/// from the whole table's (`full-random`), with what their lead rate counts: (cached step,
/// whole-table step, unit words). Ordered by the unit words.
fn key_falls(s: &Summary, steps: &[(String, String, String)]) -> Vec<(String, String, String)> {
    let mut kinds: Vec<&str> = Vec::new();
    for (_, _, kind) in steps {
        if !kinds.contains(&kind.as_str()) {
            kinds.push(kind);
        }
    }
    let mut out = Vec::new();
    for kind in kinds {
        let of_kind = |keys: &str| steps.iter().find(|(_, k, kd)| k == keys && kd == kind);
        if let (Some((a, _, _)), Some((b, _, _))) =
            (of_kind("small-random"), of_kind("full-random"))
        {
            out.push((a.clone(), b.clone(), lead_words(s, a)));
        }
    }
    out.sort_by(|a, b| a.2.cmp(&b.2));
    out
}

/// What a step's lead rate counts, as its lead figure says (lookups, transactions), a second;
/// transactions when it has none.
fn lead_words(s: &Summary, step: &str) -> String {
    let counts = s
        .contenders
        .iter()
        .flat_map(|c| c.steps.iter().filter(|x| x.name == step))
        .flat_map(|x| x.metrics.iter())
        .find_map(|m| match &m.role {
            Some(Role::Lead { counts }) => Some(counts.as_str()),
            _ => None,
        });
    format!("{}/s", counts.unwrap_or("transactions"))
}

/// Whether a step's figures give the rate of the work it ran (queries, lookups or
/// transactions a second) — not a load's rows, a size or a DDL's seconds.
fn rate_of_work(st: &StepSummary) -> bool {
    st.metrics.iter().any(|m| {
        m.unit == Unit::PerSecond && matches!(m.role, Some(Role::Lead { .. } | Role::Rate))
    })
}

/// Steps that run work with a rate to compare (not load, footprint or DDL): names in the
/// study's order.
fn run_steps(s: &Summary, study: &Value) -> Vec<String> {
    steps(study)
        .filter_map(|st| Some(st.get("name")?.as_str()?.to_string()))
        .filter(|name| {
            s.contenders
                .iter()
                .flat_map(|c| c.steps.iter())
                .any(|x| &x.name == name && rate_of_work(x))
        })
        .collect()
}

fn steps(study: &Value) -> impl Iterator<Item = &Value> {
    study
        .get("step")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// (engine on the fastest profile, engine on the slowest), each with its profile: contenders
/// the same in all but `device_profile`.
fn profile_twins(study: &Value) -> Vec<((String, DeviceProfile), (String, DeviceProfile))> {
    let cs = device_profiles(study);
    let mut out = Vec::new();
    let mut seen: Vec<&Value> = Vec::new();
    for (_, _, rest) in &cs {
        if seen.contains(&rest) {
            continue;
        }
        seen.push(rest);
        let mut group: Vec<&(String, DeviceProfile, Value)> =
            cs.iter().filter(|c| &c.2 == rest).collect();
        group.sort_by_key(|c| (c.1.read_iops, c.1.read_mb_s));
        if let (Some(slow), Some(fast)) = (group.first(), group.last())
            && slow.1 != fast.1
        {
            out.push((
                (fast.0.clone(), fast.1.clone()),
                (slow.0.clone(), slow.1.clone()),
            ));
        }
    }
    out
}

/// Steps of the study that draw keys (their spec says `keys`), as run: (name, keys, kind).
fn keyed_steps(study: &Value) -> Vec<(String, String, String)> {
    steps(study)
        .filter_map(|st| {
            let kind = st.get("kind")?.as_str()?;
            Some((
                st.get("name")?.as_str()?.to_string(),
                st.get("keys")?.as_str()?.to_string(),
                kind.to_string(),
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

/// The lead rate of a step that ran through: a `lookups` step's best QPS, a transaction
/// step's TPS, a query step's ops a second.
fn lead(s: &Summary, contender: &str, step: &str) -> Option<f64> {
    let st = s
        .contenders
        .iter()
        .find(|c| c.name == contender)?
        .steps
        .iter()
        .find(|x| x.name == step && x.status == Status::Ok)?;
    st.metrics
        .iter()
        .find(|m| matches!(m.role, Some(Role::Lead { .. })))
        .map(|m| m.value)
        .or(st.ops_per_s)
        .filter(|v| *v > 0.0)
}

/// Per step with numbered queries' best hot seconds (figures whose role is a query's, hot)
/// and per contender, the queries it runs fastest of all (by how much ahead of the next) and
/// slowest (how many times the fastest's time), when two or more contenders ran them.
fn query_wins(s: &Summary) -> Vec<String> {
    let mut steps: Vec<&str> = Vec::new();
    for st in s.contenders.iter().flat_map(|c| c.steps.iter()) {
        if st.metrics.iter().any(|m| hot_query(m).is_some()) && !steps.contains(&st.name.as_str()) {
            steps.push(&st.name);
        }
    }
    let mut out = Vec::new();
    for step in steps {
        let of = |c: &crate::results::ContenderSummary, number: u32| {
            c.steps
                .iter()
                .find(|x| x.name == step)?
                .metrics
                .iter()
                .find(|m| hot_query(m) == Some(number))
                .map(|m| m.value)
                .filter(|v| *v > 0.0)
        };
        // In query order (Q1 < Q2), whatever order the step ran them in.
        let mut numbers: Vec<u32> = s
            .contenders
            .iter()
            .flat_map(|c| c.steps.iter().filter(|x| x.name == step))
            .flat_map(|x| x.metrics.iter())
            .filter_map(hot_query)
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        let mut wins: Vec<Vec<String>> = vec![Vec::new(); s.contenders.len()];
        let mut losses: Vec<Vec<String>> = vec![Vec::new(); s.contenders.len()];
        for number in numbers {
            let mut times: Vec<(usize, f64)> = s
                .contenders
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i, of(c, number)?)))
                .collect();
            if times.len() < 2 {
                continue;
            }
            times.sort_by(|a, b| a.1.total_cmp(&b.1));
            let q = format!("Q{number}");
            let (best, next, worst) = (times[0], times[1], times[times.len() - 1]);
            wins[best.0].push(format!("{q} (×{} ahead)", format::ratio(next.1 / best.1)));
            losses[worst.0].push(format!("{q} (×{})", format::ratio(worst.1 / best.1)));
        }
        for (i, c) in s.contenders.iter().enumerate() {
            if wins[i].is_empty() && losses[i].is_empty() {
                continue;
            }
            out.push(format!(
                "{step}: {} is fastest on {} {}: {}; slowest on {}: {} (its time over the fastest's)",
                c.name,
                wins[i].len(),
                if wins[i].len() == 1 { "query" } else { "queries" },
                list(&wins[i]),
                losses[i].len(),
                list(&losses[i])
            ));
        }
    }
    out
}

/// Per step that counts what a crash lost (figures `tps` and `lost_per_crash`, with
/// `lost_s_per_crash`): the contenders that lost nothing, with their rate, fastest first;
/// then those that lost, with what they lost a crash and for which rate. The trade-off in one
/// sentence a step.
fn losses(s: &Summary) -> Vec<String> {
    let mut steps: Vec<(&str, &str)> = Vec::new();
    for st in s.contenders.iter().flat_map(|c| c.steps.iter()) {
        let counts = st.metrics.iter().any(|m| m.key == "lost_per_crash");
        if counts && !steps.iter().any(|(n, _)| *n == st.name) {
            steps.push((&st.name, st.title.as_str()));
        }
    }
    let mut out = Vec::new();
    for (step, title) in steps {
        // (contender, TPS, lost a crash, lost seconds a crash)
        let mut ran: Vec<(&str, f64, f64, f64)> = s
            .contenders
            .iter()
            .filter_map(|c| {
                let st = c
                    .steps
                    .iter()
                    .find(|x| x.name == step && x.status == Status::Ok)?;
                let of = |k: &str| st.metrics.iter().find(|m| m.key == k).map(|m| m.value);
                Some((
                    c.name.as_str(),
                    of("tps")?,
                    of("lost_per_crash")?,
                    of("lost_s_per_crash")?,
                ))
            })
            .collect();
        if ran.len() < 2 {
            continue;
        }
        ran.sort_by(|a, b| b.1.total_cmp(&a.1));
        let kept: Vec<String> = ran
            .iter()
            .filter(|r| r.2 == 0.0)
            .map(|r| format!("{} at {} TPS", r.0, format::count(r.1)))
            .collect();
        let lost: Vec<String> = ran
            .iter()
            .filter(|r| r.2 > 0.0)
            .map(|r| {
                format!(
                    "{} {} a crash ({} of its {} TPS)",
                    r.0,
                    format::count(r.2),
                    format::seconds(r.3),
                    format::count(r.1)
                )
            })
            .collect();
        out.push(format!(
            "{title}: lost no acknowledged transaction: {}; lost: {}",
            list(&kept),
            list(&lost)
        ));
    }
    out
}

/// `a, b, c`, or `none`.
fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// A numbered query's best hot seconds: the query's number.
fn hot_query(m: &Metric) -> Option<u32> {
    match &m.role {
        Some(Role::Query { number, phase }) if phase == "hot" => Some(*number),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{ContenderSummary, Metric, StepSummary};

    /// The findings of a run of `study` whose contenders came out as `contenders`.
    fn run(study: Value, contenders: Vec<ContenderSummary>) -> Vec<String> {
        let s = Summary {
            schema_version: 1,
            study: "t".into(),
            scale: None,
            started_at: String::new(),
            finished_at: None,
            status: Status::Ok,
            contenders,
        };
        let mut m: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "dbduel": { "version": "0", "commit": "x" },
            "source": "t", "scale": null, "overrides": [], "study": null,
            "started_at": "", "contenders": [],
            "host": { "hostname": "h", "cpu_model": "c", "cores": 2, "mem_total_bytes": 1,
                      "kernel": "k" },
        }))
        .expect("manifest");
        m.study = study;
        findings(&s, &m)
    }

    fn step(name: &str, qps: f64) -> StepSummary {
        let mut s = StepSummary::without_figures(name, "lookups", Status::Ok, "");
        s.metrics.push(
            Metric::new(
                "best_qps",
                "best QPS",
                qps,
                crate::results::Unit::PerSecond,
                crate::results::Better::Higher,
            )
            .with_role(Role::Lead {
                counts: "lookups".into(),
            }),
        );
        s
    }

    fn queries(name: &str, hot: &[(&str, f64)]) -> StepSummary {
        let mut s = StepSummary::without_figures(name, "tpch-power", Status::Ok, "");
        for (k, v) in hot {
            // `q02_hot_s`: query 2, hot
            s.metrics.push(
                Metric::new(
                    k,
                    k,
                    *v,
                    crate::results::Unit::Seconds,
                    crate::results::Better::Lower,
                )
                .with_role(Role::Query {
                    number: k[1..3].parse().expect("a number"),
                    phase: k[4..k.len() - 2].into(),
                }),
            );
        }
        s
    }

    #[test]
    fn each_contenders_fastest_and_slowest_queries_with_their_ratios() {
        let c = |name: &str, hot: &[(&str, f64)]| ContenderSummary {
            name: name.into(),
            engine: "e".into(),
            steps: vec![queries("power", hot)],
        };
        let f = run(
            serde_json::json!({}),
            vec![
                // a ran them in another order than 1, 2; the findings list them in order
                c(
                    "a",
                    &[("q02_hot_s", 4.0), ("q01_hot_s", 1.0), ("q01_cold_s", 0.1)],
                ),
                c("b", &[("q02_hot_s", 1.0), ("q01_hot_s", 2.0)]),
                c("c", &[("q01_hot_s", 3.0)]),
            ],
        );
        assert_eq!(
            f,
            [
                "power: a is fastest on 1 query: Q1 (×2.00 ahead); slowest on 1: Q2 (×4.00) (its time over the fastest's)",
                "power: b is fastest on 1 query: Q2 (×4.00 ahead); slowest on 0: none (its time over the fastest's)",
                "power: c is fastest on 0 queries: none; slowest on 1: Q1 (×3.00) (its time over the fastest's)",
            ]
        );
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
        let f = run(
            study,
            vec![
                contender("innodb", 40_000.0, 2_000.0),
                contender("innodb-p", 30_000.0, 2_400.0),
                contender("pg-p", 1.0, 1.0),
            ],
        );
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

    #[test]
    fn each_engine_on_a_fast_profile_against_a_slow_one() {
        let study = serde_json::json!({
            "study": { "name": "t" },
            "contender": [
                { "name": "i-cloud", "engine": "mariadb", "options": { "device_profile": "cloud-disk", "buffer_pool_mb": 16 } },
                { "name": "i-hdd", "engine": "mariadb", "options": { "buffer_pool_mb": 16, "device_profile": "hdd" } },
                { "name": "p-hdd", "engine": "postgres", "options": { "device_profile": "hdd" } },
            ],
            "step": [
                { "name": "load", "kind": "load" },
                { "name": "cpu", "kind": "select-triple", "keys": "small-random" },
                { "name": "io", "kind": "select-triple", "keys": "full-random" },
                { "name": "ins", "kind": "insert-trickle" },
            ],
        });
        let tps = |name: &str, v: f64| {
            let mut st = step(name, 0.0);
            st.metrics[0].key = "tps".into();
            st.metrics[0].value = v;
            st.metrics[0].role = Some(Role::Lead {
                counts: "transactions".into(),
            });
            st
        };
        let contender = |name: &str, cpu: f64, io: f64, ins: f64| ContenderSummary {
            name: name.into(),
            engine: "mariadb".into(),
            steps: vec![tps("cpu", cpu), tps("io", io), tps("ins", ins)],
        };
        let f = run(
            study,
            vec![
                contender("i-cloud", 10_000.0, 3_000.0, 900.0),
                contender("i-hdd", 10_000.0, 300.0, 150.0),
                contender("p-hdd", 8_000.0, 200.0, 100.0),
            ],
        );
        assert_eq!(
            f[0],
            "i-cloud: 10,000 → 3,000 transactions/s from keys its cache holds (cpu) to keys from the whole table (io): ×0.300"
        );
        assert_eq!(
            f[3],
            "i-cloud on cloud-disk (125 MB/s, 3000 IOPS) against i-hdd on hdd (120 MB/s, 150 IOPS): cpu ×1.00, io ×10.00, ins ×6.00"
        );
        assert_eq!(f.len(), 4, "{f:?}");
    }

    #[test]
    fn a_crash_step_says_who_lost_nothing_and_what_the_others_lost_for_their_rate() {
        let crash = |tps: f64, lost: f64, lost_s: f64| {
            let mut s = StepSummary::without_figures("crash", "crash", Status::Ok, "");
            s.title = "killed under writes".into();
            for (k, v, u) in [
                ("tps", tps, crate::results::Unit::PerSecond),
                ("lost_per_crash", lost, crate::results::Unit::Count),
                ("lost_s_per_crash", lost_s, crate::results::Unit::Seconds),
            ] {
                s.metrics
                    .push(Metric::new(k, k, v, u, crate::results::Better::Lower));
            }
            s
        };
        let c = |name: &str, step: StepSummary| ContenderSummary {
            name: name.into(),
            engine: "e".into(),
            steps: vec![step],
        };
        let f = run(
            serde_json::json!({ "study": { "reference": "seed 1 ran at 0" } }),
            vec![
                c("sync", crash(6000.0, 0.0, 0.0)),
                c("relaxed", crash(20_000.0, 800.0, 0.04)),
                c("group", crash(9000.0, 0.0, 0.0)),
            ],
        );
        assert_eq!(
            f,
            [
                "killed under writes: lost no acknowledged transaction: group at 9,000 TPS, sync at 6,000 TPS; lost: relaxed 800 a crash (40.0 ms of its 20,000 TPS)",
                "the original: seed 1 ran at 0",
            ]
        );
    }
}
