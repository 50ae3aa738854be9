//! A merged step's per-level details made of its shards' own: each level of a sweep
//! (`details.levels`, matched across shards by `threads`) with its counts and rates added up,
//! its latency from the level's histograms summed, its seconds the longest shard's, dbduel's
//! CPU per operation weighted by each shard's operations, and the best level (`details.best`)
//! chosen again. The step kinds' level records follow one naming convention, which is what
//! this merge reads; it never names a step kind.

use super::intervals::IntervalRecord;
use crate::metrics::Latency;
use serde_json::{Map, Value};

/// One shard's part in a merged step: its step details and its seconds.
pub struct ShardLevels<'a> {
    pub details: &'a Value,
    pub seconds: &'a [IntervalRecord],
}

/// The latency of the shards' summed histograms at a level (all when None) of the op kinds
/// given (all when empty).
pub type LatencyOf<'a> = dyn FnMut(Option<u64>, &[String]) -> Option<Latency> + 'a;

/// What one level's merge knows besides the values: the level, the op kinds a latency is
/// of, each shard's weight (its measured operations at the level).
struct Ctx<'a> {
    level: Option<u64>,
    ops: Vec<String>,
    weights: &'a [f64],
}

/// `lead` (shard 0's details) with its `levels` and `best` the merged ones of `shards` (every
/// shard that has the step, shard 0 first); `best_level` is the merged best level's clients
/// when the merge chose one. Details without levels come back as they are.
pub fn merge(
    lead: &Value,
    shards: &[ShardLevels],
    best_level: Option<u64>,
    latency: &mut LatencyOf,
) -> Value {
    let mut out = lead.clone();
    let Some(lead_levels) = lead.get("levels").and_then(Value::as_array) else {
        return out;
    };
    let mut merged = Vec::with_capacity(lead_levels.len());
    for level in lead_levels {
        let Some(threads) = level.get("threads").and_then(Value::as_u64) else {
            merged.push(level.clone());
            continue;
        };
        let (parts, weights): (Vec<&Value>, Vec<f64>) = shards
            .iter()
            .filter_map(|s| {
                let l = s
                    .details
                    .get("levels")?
                    .as_array()?
                    .iter()
                    .find(|l| l.get("threads").and_then(Value::as_u64) == Some(threads))?;
                Some((l, measured_ops(s.seconds, threads)))
            })
            .unzip();
        if parts.is_empty() {
            merged.push(level.clone());
            continue;
        }
        let ctx = Ctx {
            level: Some(threads),
            ops: Vec::new(),
            weights: &weights,
        };
        merged.push(value("", &parts, &ctx, latency));
    }
    let best = match best_level {
        Some(b) => merged.iter().find(|l| l["threads"].as_u64() == Some(b)),
        None if merged.len() == 1 => merged.first(),
        None => None,
    };
    if let (Some(b), Some(o)) = (best.cloned(), out.as_object_mut())
        && o.contains_key("best")
    {
        o.insert("best".into(), b);
    }
    if let Some(o) = out.as_object_mut() {
        o.insert("levels".into(), Value::Array(merged));
    }
    out
}

/// A shard's operations in the measured seconds (after warm-up) of the level of `threads`.
fn measured_ops(seconds: &[IntervalRecord], threads: u64) -> f64 {
    seconds
        .iter()
        .filter(|s| !s.warmup && s.level == Some(threads))
        .map(|s| s.ops as f64)
        .sum()
}

/// The shards' values `vals` (shard 0's first) of the field `key`, merged.
fn value(key: &str, vals: &[&Value], ctx: &Ctx, latency: &mut LatencyOf) -> Value {
    let lead = vals[0];
    match key {
        "latency_us" => {
            return serde_json::to_value(latency(ctx.level, &ctx.ops)).unwrap_or_default();
        }
        // The client machine's data device: shard 0's, as its system samples are the step's.
        "disk" | "threads" | "name" => return lead.clone(),
        _ => {}
    }
    match lead {
        Value::Number(_) => number(key, vals, ctx.weights),
        Value::Object(o) => {
            let maps: Vec<&Map<String, Value>> =
                vals.iter().filter_map(|v| v.as_object()).collect();
            let mut keys: Vec<&String> = o.keys().collect();
            for m in &maps[1..] {
                keys.extend(m.keys().filter(|k| !o.contains_key(*k)));
            }
            let merged = keys
                .into_iter()
                .map(|k| {
                    let theirs: Vec<&Value> = maps.iter().filter_map(|m| m.get(k)).collect();
                    (k.clone(), value(k, &theirs, ctx, latency))
                })
                .collect();
            Value::Object(merged)
        }
        Value::Array(a) if a.iter().all(|x| x.get("name").is_some()) && !a.is_empty() => {
            named(vals, ctx, latency)
        }
        Value::Array(a) if a.iter().all(Value::is_number) => {
            let arrays: Vec<&Vec<Value>> = vals.iter().filter_map(|v| v.as_array()).collect();
            let len = arrays.iter().map(|a| a.len()).max().unwrap_or(0);
            let merged = (0..len)
                .map(|i| {
                    let theirs: Vec<&Value> = arrays.iter().filter_map(|a| a.get(i)).collect();
                    number(key, &theirs, ctx.weights)
                })
                .collect();
            Value::Array(merged)
        }
        _ => lead.clone(),
    }
}

/// A list of named items (a level's figures per operation kind), merged item by item, each
/// item's latency of its own kind, and each one's share of the operations taken again.
fn named(vals: &[&Value], ctx: &Ctx, latency: &mut LatencyOf) -> Value {
    let arrays: Vec<&Vec<Value>> = vals.iter().filter_map(|v| v.as_array()).collect();
    let mut items: Vec<Value> = arrays[0]
        .iter()
        .map(|item| {
            let name = item.get("name").cloned().unwrap_or_default();
            let theirs: Vec<&Value> = arrays
                .iter()
                .filter_map(|a| a.iter().find(|x| x.get("name") == Some(&name)))
                .collect();
            let of = Ctx {
                level: ctx.level,
                ops: name
                    .as_str()
                    .map(|n| vec![n.to_string()])
                    .unwrap_or_default(),
                weights: ctx.weights,
            };
            value("", &theirs, &of, latency)
        })
        .collect();
    let total: u64 = items.iter().filter_map(|i| i["count"].as_u64()).sum();
    for i in items.iter_mut() {
        if let (Some(n), Some(o)) = (i["count"].as_u64(), i.as_object_mut())
            && o.contains_key("share_pct")
        {
            let share = if total > 0 {
                n as f64 * 100.0 / total as f64
            } else {
                0.0
            };
            o.insert("share_pct".into(), share.into());
        }
    }
    Value::Array(items)
}

/// The shards' numbers of the field `key`: a tick the earliest, seconds the longest,
/// dbduel's CPU per operation weighted by each shard's operations, anything else (counts,
/// rates, a rate's share of a fixed ceiling) added up.
fn number(key: &str, vals: &[&Value], weights: &[f64]) -> Value {
    let f: Vec<f64> = vals.iter().filter_map(|v| v.as_f64()).collect();
    let ints: Option<Vec<u64>> = vals.iter().map(|v| v.as_u64()).collect();
    if key.ends_with("_tick") {
        return match ints {
            Some(i) => i.into_iter().min().into(),
            None => f.into_iter().reduce(f64::min).into(),
        };
    }
    if key.ends_with("_s") && !key.ends_with("_per_s") {
        return f.into_iter().reduce(f64::max).into();
    }
    if key.starts_with("dbduel_cpu_") {
        let w: f64 = weights.iter().take(f.len()).sum();
        if w > 0.0 {
            let sum: f64 = f.iter().zip(weights).map(|(v, w)| v * w).sum();
            return (sum / w).into();
        }
        return vals[0].clone();
    }
    match ints {
        Some(i) => i.into_iter().sum::<u64>().into(),
        None => f.into_iter().sum::<f64>().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_latency(_: Option<u64>, _: &[String]) -> Option<Latency> {
        None
    }

    #[test]
    fn a_level_adds_counts_and_rates_and_takes_the_longest_seconds() {
        let a = json!({"levels": [{"threads": 2, "events": 10, "tps": 5.0, "measured_s": 2.0,
            "first_tick": 0, "dbduel_cpu_us_per_event": 10.0, "target_rate": null}],
            "best": {"threads": 2}});
        let b = json!({"levels": [{"threads": 2, "events": 30, "tps": 15.0, "measured_s": 2.5,
            "first_tick": 0, "dbduel_cpu_us_per_event": 20.0, "target_rate": null}],
            "best": {"threads": 2}});
        let shards = [
            ShardLevels {
                details: &a,
                seconds: &[],
            },
            ShardLevels {
                details: &b,
                seconds: &[],
            },
        ];
        let m = merge(&a, &shards, Some(2), &mut no_latency);
        let l = &m["levels"][0];
        assert_eq!(l["events"], 40);
        assert_eq!(l["tps"], 20.0);
        assert_eq!(l["measured_s"], 2.5);
        assert_eq!(l["first_tick"], 0);
        assert!(l["target_rate"].is_null());
        assert_eq!(m["best"], *l);
    }

    #[test]
    fn named_items_merge_by_name_and_shares_are_taken_again() {
        let a = json!({"levels": [{"threads": 1, "types": [
            {"name": "x", "count": 1, "share_pct": 50.0, "conflicts": {"deadlock": 1}},
            {"name": "y", "count": 1, "share_pct": 50.0, "conflicts": {}}],
            "per_10s": [1, 2]}]});
        let b = json!({"levels": [{"threads": 1, "types": [
            {"name": "y", "count": 2, "share_pct": 100.0, "conflicts": {"lock_wait": 2}},
            {"name": "x", "count": 0, "share_pct": 0.0, "conflicts": {}}],
            "per_10s": [3, 4, 5]}]});
        let shards = [
            ShardLevels {
                details: &a,
                seconds: &[],
            },
            ShardLevels {
                details: &b,
                seconds: &[],
            },
        ];
        let m = merge(&a, &shards, None, &mut no_latency);
        let t = &m["levels"][0]["types"];
        assert_eq!(t[0]["count"], 1);
        assert_eq!(t[1]["count"], 3);
        assert_eq!(t[1]["share_pct"], 75.0);
        assert_eq!(t[0]["conflicts"], json!({"deadlock": 1}));
        assert_eq!(t[1]["conflicts"], json!({"lock_wait": 2}));
        assert_eq!(m["levels"][0]["per_10s"], json!([4, 6, 5]));
    }
}
