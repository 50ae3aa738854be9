//! The shards of one run made into one run. Counts and rates add up; every latency figure is
//! computed again from the shards' per-second histograms summed — never an average of
//! percentiles — and a sweep's best level is chosen again from the summed levels. Each
//! shard's own use of its client machine is kept beside the figures, and its warnings carry
//! over. Steps that only shard 0 ran (a load, a check) are shard 0's as they are. The merged
//! run is an ordinary run directory: reports and compare never know it was merged.

use super::intervals::{IntervalRecord, OpInterval};
use super::merge_levels::{self, ShardLevels};
use super::{
    ContenderSummary, Derived, Manifest, Metric, ResultsError, RunDir, Status, StepSummary,
    Summary, Unit,
};
use crate::metrics::{self, Hist, Latency};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One shard's run directory, read.
pub struct ShardRun {
    pub dir: PathBuf,
    pub summary: Summary,
    pub manifest: Manifest,
}

/// Why runs cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// The runs given are not the shards of one run (the message says how).
    #[error("{0}")]
    NotOneRun(String),
}

impl ShardRun {
    pub fn read(dir: &Path) -> Result<ShardRun, MergeError> {
        let rd = RunDir::open(dir)?;
        Ok(ShardRun {
            dir: dir.to_path_buf(),
            summary: rd.read_summary()?,
            manifest: rd.read_manifest()?,
        })
    }
}

/// Check that `runs` are every shard of one run, and put them in shard order.
pub fn check(mut runs: Vec<ShardRun>) -> Result<Vec<ShardRun>, MergeError> {
    let bad = |m: String| Err(MergeError::NotOneRun(m));
    let mut facts = Vec::new();
    for r in &runs {
        match r.manifest.shards.as_slice() {
            [one] => facts.push(one.clone()),
            [] => {
                return bad(format!(
                    "{}: not a shard's run (it ran without --shard)",
                    r.dir.display()
                ));
            }
            _ => {
                return bad(format!(
                    "{}: a merged run already; merge the shards' own runs",
                    r.dir.display()
                ));
            }
        }
    }
    let Some(first) = facts.first().cloned() else {
        return bad("no runs to merge".into());
    };
    for (r, f) in runs.iter().zip(&facts) {
        if f.group != first.group || f.count != first.count {
            return bad(format!(
                "{} is shard {}/{} of run group `{}`, the first is of `{}` with {} shards: these are not the shards of one run",
                r.dir.display(),
                f.index,
                f.count,
                f.group,
                first.group,
                first.count
            ));
        }
        if r.manifest.study != runs[0].manifest.study {
            return bad(format!(
                "{} ran another study (or scale, or overrides) than {}",
                r.dir.display(),
                runs[0].dir.display()
            ));
        }
    }
    runs.sort_by_key(|r| r.manifest.shards[0].index);
    let indexes: Vec<u32> = runs.iter().map(|r| r.manifest.shards[0].index).collect();
    let missing: Vec<String> = (0..first.count)
        .filter(|i| !indexes.contains(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return bad(format!(
            "shard(s) {} of {} missing: give every shard's run directory",
            missing.join(", "),
            first.count
        ));
    }
    if indexes.len() as u32 != first.count {
        return bad("a shard is given twice".into());
    }
    Ok(runs)
}

/// Merge the shards `runs` (every shard of one run) into a new run directory `out`, which
/// must not exist yet. `divided` says whether a step of a kind had its clients divided among
/// the shards (the step kinds are the workload's to know, above this layer). Returns the
/// merged run's files as written.
pub fn merge(
    runs: Vec<ShardRun>,
    out: &Path,
    divided: fn(&str) -> bool,
) -> Result<(RunDir, Summary, Manifest), MergeError> {
    let runs = check(runs)?;
    let dir = new_dir(out)?;
    let lead = &runs[0];
    let mut manifest = lead.manifest.clone();
    manifest.shards = runs
        .iter()
        .map(|r| {
            let mut f = r.manifest.shards[0].clone();
            f.run_dir = Some(r.dir.display().to_string());
            f
        })
        .collect();
    let mut summary = lead.summary.clone();
    for c in summary.contenders.iter_mut() {
        dir.contender_dir(&c.name)?;
        let theirs: Vec<Option<&ContenderSummary>> = runs
            .iter()
            .map(|r| r.summary.contenders.iter().find(|x| x.name == c.name))
            .collect();
        for (si, step) in c.steps.iter_mut().enumerate() {
            let parts: Vec<(u32, &StepSummary, &Path)> = runs
                .iter()
                .zip(&theirs)
                .filter_map(|(r, cs)| {
                    let s = (*cs)?.steps.get(si).filter(|s| s.name == step.name)?;
                    Some((r.manifest.shards[0].index, s, r.dir.as_path()))
                })
                .collect();
            let rel = format!("{}/{}", c.name, step.name);
            // A step not divided among clients ran on shard 0 alone; one without seconds to
            // add up (skipped, or failed before its first) is shard 0's as it is too.
            let divided = divided(&step.kind);
            let seconds = lead.dir.join(format!("{rel}.intervals.ndjson")).is_file();
            if !divided || !seconds {
                // Shard 0's step, with its files.
                for sfx in [".json", ".intervals.ndjson", ".system.ndjson"] {
                    copy_if_there(
                        &lead.dir.join(format!("{rel}{sfx}")),
                        &dir.path.join(format!("{rel}{sfx}")),
                    )?;
                }
                continue;
            }
            let ivs: Vec<Vec<IntervalRecord>> = parts
                .iter()
                .map(|(_, _, d)| read_intervals(&d.join(format!("{rel}.intervals.ndjson"))))
                .collect::<Result<_, _>>()?;
            let merged_ivs = merge_intervals(&ivs);
            *step = merge_step(&parts, &ivs);
            let absent: Vec<String> = runs
                .iter()
                .map(|r| r.manifest.shards[0].index)
                .filter(|i| !parts.iter().any(|(p, _, _)| p == i))
                .map(|i| i.to_string())
                .collect();
            if !absent.is_empty() {
                let n = step.note.get_or_insert_with(String::new);
                n.push_str(&format!(
                    "; shard(s) {} have no record of this step",
                    absent.join(", ")
                ));
            }
            dir.write_ndjson(&format!("{rel}.intervals.ndjson"), &merged_ivs)?;
            for (i, _, d) in &parts {
                copy_if_there(
                    &d.join(format!("{rel}.system.ndjson")),
                    &dir.path.join(format!("{rel}.shard-{i}.system.ndjson")),
                )?;
            }
            copy_if_there(
                &lead.dir.join(format!("{rel}.system.ndjson")),
                &dir.path.join(format!("{rel}.system.ndjson")),
            )?;
            let record = merged_record(&rel, &lead.dir, &parts, &ivs, step)?;
            dir.write_json(&format!("{rel}.json"), &record)?;
        }
    }
    summary.status = worst(runs.iter().map(|r| r.summary.status));
    summary.finished_at = runs
        .iter()
        .filter_map(|r| r.summary.finished_at.clone())
        .max();
    dir.write_json("manifest.json", &manifest)?;
    dir.write_json("summary.json", &summary)?;
    Ok((dir, summary, manifest))
}

/// The merged step's record: shard 0's (the server's counters over its window, which every
/// shard's work falls in) with the merged summary `step` and per-level details, and every
/// shard's own summary and details under `shards`.
fn merged_record(
    rel: &str,
    lead_dir: &Path,
    parts: &[(u32, &StepSummary, &Path)],
    ivs: &[Vec<IntervalRecord>],
    step: &StepSummary,
) -> Result<serde_json::Value, ResultsError> {
    let read = |dir: &Path| -> Result<serde_json::Value, ResultsError> {
        let path = dir.join(format!("{rel}.json"));
        if path.is_file() {
            super::read_versioned::<serde_json::Value>(&path)
        } else {
            Ok(serde_json::json!({}))
        }
    };
    let mut record = read(lead_dir)?;
    let records: Vec<serde_json::Value> = parts
        .iter()
        .map(|(_, _, d)| read(d))
        .collect::<Result<_, _>>()?;
    let shards: Vec<ShardLevels> = records
        .iter()
        .zip(ivs)
        .map(|(r, iv)| ShardLevels {
            details: &r["details"],
            seconds: iv,
        })
        .collect();
    let best_level = step.metrics.iter().find_map(|m| match &m.from {
        Some(Derived::BestLevel { .. }) => Some(m.value as u64),
        _ => None,
    });
    let mut sums = Sums::new(ivs);
    let details = merge_levels::merge(&record["details"], &shards, best_level, &mut |l, ops| {
        sums.get(l, ops).and_then(Latency::of)
    });
    let per_shard: Vec<serde_json::Value> = parts
        .iter()
        .zip(&records)
        .map(|((i, s, d), r)| {
            serde_json::json!({
                "shard": i,
                "run_dir": d.display().to_string(),
                "summary": s,
                "details": r["details"],
            })
        })
        .collect();
    if let Some(o) = record.as_object_mut() {
        o.insert("status".into(), serde_json::json!(step.status));
        o.insert("summary".into(), serde_json::json!(step));
        o.insert("details".into(), details);
        o.insert("shards".into(), serde_json::Value::Array(per_shard));
    }
    Ok(record)
}

fn new_dir(out: &Path) -> Result<RunDir, ResultsError> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(super::io(parent))?;
    }
    std::fs::create_dir(out).map_err(super::io(out))?;
    Ok(RunDir {
        path: out.to_path_buf(),
    })
}

fn copy_if_there(from: &Path, to: &Path) -> Result<(), ResultsError> {
    if from.is_file() {
        std::fs::copy(from, to).map_err(super::io(to))?;
    }
    Ok(())
}

fn read_intervals(path: &Path) -> Result<Vec<IntervalRecord>, ResultsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(super::io(path)(e)),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|source| ResultsError::Parse {
                path: path.to_path_buf(),
                source,
            })
        })
        .collect()
}

fn worst(statuses: impl Iterator<Item = Status>) -> Status {
    let all: Vec<Status> = statuses.collect();
    for s in [Status::Failed, Status::Interrupted, Status::Ok] {
        if all.contains(&s) {
            return s;
        }
    }
    Status::Skipped
}

/// The summed histogram of the measured seconds (after warm-up) of every shard: of the level
/// of `level` clients (all when None), of the op kinds `ops` (all when empty). None when no
/// second carries a histogram (a run written before they were kept).
fn summed(ivs: &[Vec<IntervalRecord>], level: Option<u64>, ops: &[String]) -> Option<Hist> {
    let mut h = metrics::new_hist();
    let mut any = false;
    for iv in ivs.iter().flatten() {
        if iv.warmup || level.is_some_and(|l| iv.level != Some(l)) {
            continue;
        }
        for op in &iv.per_op {
            if !ops.is_empty() && !ops.contains(&op.op) {
                continue;
            }
            if let Some(text) = &op.hist {
                let one = metrics::decode(text).ok()?;
                metrics::merge(&mut h, &one);
                any = true;
            } else if op.ops > 0 {
                return None;
            }
        }
    }
    any.then_some(h)
}

/// The shards' summed histograms of one step by level and operations, each decoded and
/// summed once however many figures ask for it (a sweep's p50, p95, p99 and max at a level
/// are one sum).
struct Sums<'a> {
    ivs: &'a [Vec<IntervalRecord>],
    done: BTreeMap<(Option<u64>, Vec<String>), Option<Hist>>,
}

impl<'a> Sums<'a> {
    fn new(ivs: &'a [Vec<IntervalRecord>]) -> Self {
        Sums {
            ivs,
            done: BTreeMap::new(),
        }
    }

    /// See [`summed`].
    fn get(&mut self, level: Option<u64>, ops: &[String]) -> Option<&Hist> {
        let ivs = self.ivs;
        self.done
            .entry((level, ops.to_vec()))
            .or_insert_with(|| summed(ivs, level, ops))
            .as_ref()
    }

    fn quantile(&mut self, level: Option<u64>, ops: &[String], q: f64) -> Option<f64> {
        self.get(level, ops).map(|h| metrics::quantile(h, q) as f64)
    }
}

/// One merged step from the shards' records of it and their seconds.
fn merge_step(parts: &[(u32, &StepSummary, &Path)], ivs: &[Vec<IntervalRecord>]) -> StepSummary {
    let lead = parts[0].1;
    let mut sums = Sums::new(ivs);
    let mut s = lead.clone();
    s.status = worst(parts.iter().map(|(_, p, _)| p.status));
    let sum_u = |f: fn(&StepSummary) -> Option<u64>| -> Option<u64> {
        parts
            .iter()
            .filter_map(|(_, p, _)| f(p))
            .reduce(|a, b| a + b)
    };
    s.rows = sum_u(|p| p.rows);
    s.errors = sum_u(|p| p.errors);
    s.bytes = sum_u(|p| p.bytes);
    s.elapsed_s = parts
        .iter()
        .filter_map(|(_, p, _)| p.elapsed_s)
        .reduce(f64::max);
    // Figures in shard 0's order, each from every shard that has it.
    let mut left_out = Vec::new();
    let mut metrics: Vec<Metric> = Vec::new();
    for m in &lead.metrics {
        let values: Vec<f64> = parts
            .iter()
            .filter_map(|(_, p, _)| p.metrics.iter().find(|x| x.key == m.key).map(|x| x.value))
            .collect();
        let value = match (&m.from, m.unit) {
            (Some(Derived::Quantile { q, level, ops }), _) => sums.quantile(*level, ops, *q),
            // Chosen once every level is summed, below.
            (
                Some(
                    Derived::Best { .. }
                    | Derived::BestLevel { .. }
                    | Derived::QuantileAtBest { .. }
                    | Derived::Rate { .. },
                ),
                _,
            ) => Some(m.value),
            (Some(Derived::AtOwnBest), _) => None,
            (Some(Derived::Shared), _) => Some(m.value),
            (Some(Derived::Sum), _)
            | (None, Unit::Count | Unit::PerSecond | Unit::BytesPerSecond) => {
                Some(values.iter().sum())
            }
            (None, Unit::Seconds | Unit::Bytes) => values.iter().copied().reduce(f64::max),
            (None, Unit::Micros | Unit::Percent) => None,
        };
        match value {
            Some(v) => {
                let mut merged = m.clone();
                merged.value = v;
                merged.samples.clear();
                merged.spread = None;
                metrics.push(merged);
            }
            None => left_out.push(m.label.clone()),
        }
    }
    choose_best(&mut metrics);
    at_best_and_rates(&mut metrics, &mut sums, s.elapsed_s);
    // The step's headline rate and latency follow its best level when it swept, or all of it.
    let best_level = metrics.iter().find_map(|m| match &m.from {
        Some(Derived::BestLevel { .. }) => Some(m.value as u64),
        _ => None,
    });
    let headline = metrics
        .iter()
        .find(|m| matches!(m.from, Some(Derived::Best { .. } | Derived::Rate { .. })));
    s.ops_per_s = match headline {
        Some(b) => Some(b.value),
        None => parts
            .iter()
            .filter_map(|(_, p, _)| p.ops_per_s)
            .reduce(|a, b| a + b),
    };
    let level = best_level.or_else(|| single_level(ivs));
    s.latency_us = sums.get(level, &lead.latency_ops).and_then(Latency::of);
    s.metrics = metrics;
    s.dbduel = parts
        .iter()
        .filter_map(|(_, p, _)| p.dbduel)
        .reduce(|a, b| crate::sysmon::own::OwnUse {
            peak_rss_bytes: a.peak_rss_bytes.max(b.peak_rss_bytes),
            cpu_s: a.cpu_s + b.cpu_s,
        });
    // The most disturbed shard's machine speaks for the step: compare will not judge it.
    s.machine = parts
        .iter()
        .filter_map(|(_, p, _)| p.machine)
        .reduce(|a, b| crate::sysmon::machine::MachineShare {
            others_cpu_pct: a.others_cpu_pct.max(b.others_cpu_pct),
            steal_pct: a.steal_pct.max(b.steal_pct),
            min_available_mem_pct: a.min_available_mem_pct.min(b.min_available_mem_pct),
            span_s: a.span_s.min(b.span_s),
        });
    s.note = Some(note(parts, &left_out));
    s
}

/// Set `Best` figures to the highest summed level and `BestLevel` ones to its level.
fn choose_best(metrics: &mut [Metric]) {
    let best_of = |metrics: &[Metric], prefix: &str| -> Option<(u64, f64)> {
        metrics
            .iter()
            .filter_map(|m| {
                let level: u64 = m.key.strip_prefix(prefix)?.parse().ok()?;
                Some((level, m.value))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    for i in 0..metrics.len() {
        let set = match &metrics[i].from {
            Some(Derived::Best { prefix }) => best_of(metrics, prefix).map(|(_, v)| v),
            Some(Derived::BestLevel { prefix }) => best_of(metrics, prefix).map(|(l, _)| l as f64),
            _ => None,
        };
        if let Some(v) = set {
            metrics[i].value = v;
        }
    }
}

/// Quantiles at the summed best level, and rates of summed counts over the merged span.
fn at_best_and_rates(metrics: &mut [Metric], sums: &mut Sums, elapsed: Option<f64>) {
    for i in 0..metrics.len() {
        let set = match &metrics[i].from {
            Some(Derived::QuantileAtBest { q, prefix, ops }) => {
                let level = metrics.iter().find_map(|m| match &m.from {
                    Some(Derived::BestLevel { prefix: p }) if p == prefix => Some(m.value as u64),
                    _ => None,
                });
                sums.quantile(level, ops, *q)
            }
            Some(Derived::Rate { count }) => {
                let n = metrics.iter().find(|m| &m.key == count).map(|m| m.value);
                match (n, elapsed) {
                    (Some(n), Some(s)) if s > 0.0 => Some(n / s),
                    _ => None,
                }
            }
            _ => continue,
        };
        if let Some(v) = set {
            metrics[i].value = v;
        }
    }
}

/// The one level the seconds belong to, if they all belong to one.
fn single_level(ivs: &[Vec<IntervalRecord>]) -> Option<u64> {
    let mut levels = ivs.iter().flatten().map(|iv| iv.level);
    let first = levels.next().flatten()?;
    levels.all(|l| l == Some(first)).then_some(first)
}

/// The merged step's note: shard 0's account, what the merge did, each shard's warnings.
fn note(parts: &[(u32, &StepSummary, &Path)], left_out: &[String]) -> String {
    let lead_note = parts[0].1.note.clone().unwrap_or_default();
    // Shard 0's own warnings are listed with the others', under its index.
    let own: Vec<&str> = lead_note
        .split("; ")
        .filter(|p| !p.starts_with("warning: "))
        .collect();
    let mut n = vec![own.join("; ")];
    n.push(format!(
        "merged from {} shards: counts and rates added, latency from their histograms summed",
        parts.len()
    ));
    if !left_out.is_empty() {
        n.push(format!(
            "left out (no exact merge; each shard's is in the step's JSON): {}",
            left_out.join(", ")
        ));
    }
    for (i, p, _) in parts {
        for w in p
            .note
            .iter()
            .flat_map(|n| n.split("; "))
            .filter(|w| w.starts_with("warning: "))
        {
            n.push(format!("shard {i} {w}"));
        }
        match p.status {
            Status::Failed => n.push(format!("shard {i} FAILED")),
            Status::Skipped | Status::Interrupted | Status::Running => n.push(format!(
                "shard {i} {}: {}",
                p.status.as_str(),
                p.note.as_deref().unwrap_or("")
            )),
            Status::Ok => {}
        }
    }
    n.retain(|x| !x.is_empty());
    n.join("; ")
}

/// The shards' seconds summed: the same tick of the same level across shards is one second.
///
/// Each second's histograms are summed on their own and encoded before the next second's
/// are read, in a few histograms reused throughout: what the merge holds beside the records
/// does not grow with the number of seconds (a full histogram per second per op kind, kept
/// to the end, made an hour of TPC-C take gigabytes).
pub fn merge_intervals(ivs: &[Vec<IntervalRecord>]) -> Vec<IntervalRecord> {
    // By tick first: a sweep's levels follow each other in ticks. Each second's records,
    // by shard and place.
    let mut by: BTreeMap<SecondKey, Vec<(usize, usize)>> = BTreeMap::new();
    for (s, shard) in ivs.iter().enumerate() {
        for (i, iv) in shard.iter().enumerate() {
            by.entry((iv.tick, iv.level)).or_default().push((s, i));
        }
    }
    let mut sums = SecondSums::default();
    by.into_values()
        .map(|at| {
            let seconds: Vec<&IntervalRecord> = at.iter().map(|&(s, i)| &ivs[s][i]).collect();
            sums.merge(&seconds)
        })
        .collect()
}

/// A merged second: its tick, and its level in a sweep.
type SecondKey = (u64, Option<u64>);

/// The histograms of one merged second: one per op kind and one of them all, reset and
/// reused from second to second.
#[derive(Default)]
struct SecondSums {
    /// Per op kind of the second, in the order they were met; `used` of them hold this
    /// second's.
    ops: Vec<Hist>,
    all: Option<Hist>,
}

impl SecondSums {
    /// The shards' records of one second (`seconds`, not empty) as one record.
    fn merge(&mut self, seconds: &[&IntervalRecord]) -> IntervalRecord {
        let first = seconds[0];
        let mut m = IntervalRecord {
            ops: 0,
            ops_per_s: 0.0,
            rows: 0,
            errors: 0,
            late: 0,
            dropped: 0,
            latency_us: None,
            per_op: Vec::new(),
            error_kinds: Vec::new(),
            target_rate: None,
            ..first.clone()
        };
        // Whether op kind k of the merged second has a histogram.
        let mut has: Vec<bool> = Vec::new();
        for iv in seconds {
            m.ops += iv.ops;
            m.ops_per_s += iv.ops_per_s;
            m.rows += iv.rows;
            m.errors += iv.errors;
            m.add_error_kinds(&iv.error_kinds);
            if let Some(r) = iv.target_rate {
                *m.target_rate.get_or_insert(0.0) += r;
            }
            m.late += iv.late;
            m.dropped += iv.dropped;
            m.t_s = m.t_s.max(iv.t_s);
            for op in &iv.per_op {
                let k = match m.per_op.iter().position(|o| o.op == op.op) {
                    Some(k) => {
                        m.per_op[k].ops += op.ops;
                        k
                    }
                    None => {
                        m.per_op.push(OpInterval {
                            op: op.op.clone(),
                            ops: op.ops,
                            latency_us: None,
                            hist: None,
                        });
                        has.push(false);
                        if self.ops.len() < m.per_op.len() {
                            self.ops.push(metrics::new_hist());
                        }
                        self.ops[m.per_op.len() - 1].reset();
                        m.per_op.len() - 1
                    }
                };
                if let Some(h) = op.hist.as_deref().and_then(|t| metrics::decode(t).ok()) {
                    metrics::merge(&mut self.ops[k], &h);
                    has[k] = true;
                }
            }
        }
        let all = self.all.get_or_insert_with(metrics::new_hist);
        all.reset();
        for (k, o) in m.per_op.iter_mut().enumerate() {
            if has[k] {
                let h = &self.ops[k];
                o.latency_us = Latency::of(h);
                o.hist = (!h.is_empty()).then(|| metrics::encode(h));
                metrics::merge(all, h);
            }
        }
        m.latency_us = Latency::of(all);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Better;

    fn level(key: &str, v: f64) -> Metric {
        Metric::new(key, key, v, Unit::PerSecond, Better::Higher)
    }

    #[test]
    fn the_best_level_is_chosen_again_from_the_summed_levels() {
        // each shard's best was 8 clients; added up, 16 is
        let mut m = vec![
            level("best_tps", 0.0).derived(Derived::Best {
                prefix: "tps_t".into(),
            }),
            level("best_threads", 0.0).derived(Derived::BestLevel {
                prefix: "tps_t".into(),
            }),
            level("tps_t8", 900.0),
            level("tps_t16", 950.0),
            level("tps_t16_extra", 5000.0),
        ];
        choose_best(&mut m);
        assert_eq!((m[0].value, m[1].value), (950.0, 16.0));
    }

    fn second(tick: u64, level: Option<u64>, lat: &[u64]) -> IntervalRecord {
        let mut h = metrics::new_hist();
        for &us in lat {
            h.record(us).unwrap();
        }
        IntervalRecord {
            tick,
            t_s: tick as f64 + 1.0,
            warmup: tick == 0,
            ops: lat.len() as u64,
            ops_per_s: lat.len() as f64,
            rows: lat.len() as u64,
            errors: 0,
            late: 0,
            dropped: 0,
            latency_us: Latency::of(&h),
            per_op: vec![OpInterval {
                op: "q".into(),
                ops: lat.len() as u64,
                latency_us: Latency::of(&h),
                hist: Some(metrics::encode(&h)),
            }],
            level,
            ..Default::default()
        }
    }

    #[test]
    fn seconds_add_up_and_quantiles_come_from_the_union() {
        let a = vec![second(0, Some(2), &[5000]), second(1, Some(2), &[100, 200])];
        let b = vec![
            second(1, Some(2), &[300, 10_000]),
            second(2, Some(4), &[50]),
        ];
        let merged = merge_intervals(&[a.clone(), b.clone()]);
        let ticks: Vec<(u64, u64)> = merged.iter().map(|m| (m.tick, m.ops)).collect();
        assert_eq!(ticks, [(0, 1), (1, 4), (2, 1)]);
        assert_eq!(merged[1].latency_us.unwrap().max, 10_007);
        // warm-up left out; the level's four operations, not an average of two medians
        let h = summed(&[a, b], Some(2), &[]).unwrap();
        assert_eq!(h.len(), 4);
        assert_eq!(metrics::quantile(&h, 0.5), 200);
    }

    /// The merge as it was before it reused its histograms: a fresh one per second per op
    /// kind, all kept to the end.
    fn merged_the_old_way(ivs: &[Vec<IntervalRecord>]) -> Vec<IntervalRecord> {
        let mut by: BTreeMap<SecondKey, IntervalRecord> = BTreeMap::new();
        let mut hists: BTreeMap<(Option<u64>, u64, String), Hist> = BTreeMap::new();
        for iv in ivs.iter().flatten() {
            let m = by
                .entry((iv.tick, iv.level))
                .or_insert_with(|| IntervalRecord {
                    ops: 0,
                    ops_per_s: 0.0,
                    rows: 0,
                    errors: 0,
                    late: 0,
                    dropped: 0,
                    latency_us: None,
                    per_op: Vec::new(),
                    ..iv.clone()
                });
            m.ops += iv.ops;
            m.ops_per_s += iv.ops_per_s;
            m.rows += iv.rows;
            m.t_s = m.t_s.max(iv.t_s);
            for op in &iv.per_op {
                match m.per_op.iter_mut().find(|o| o.op == op.op) {
                    Some(o) => o.ops += op.ops,
                    None => m.per_op.push(OpInterval {
                        hist: None,
                        latency_us: None,
                        ..op.clone()
                    }),
                }
                if let Some(h) = op.hist.as_deref().and_then(|t| metrics::decode(t).ok()) {
                    let into = hists
                        .entry((iv.level, iv.tick, op.op.clone()))
                        .or_insert_with(metrics::new_hist);
                    metrics::merge(into, &h);
                }
            }
        }
        by.into_iter()
            .map(|((tick, level), mut m)| {
                let mut all = metrics::new_hist();
                for o in &mut m.per_op {
                    if let Some(h) = hists.get(&(level, tick, o.op.clone())) {
                        o.latency_us = Latency::of(h);
                        o.hist = (!h.is_empty()).then(|| metrics::encode(h));
                        metrics::merge(&mut all, h);
                    }
                }
                m.latency_us = Latency::of(&all);
                m
            })
            .collect()
    }

    #[test]
    fn reused_histograms_merge_to_the_same_seconds_as_fresh_ones() {
        // Seconds of differing op kinds, levels sharing a tick, a second with no histogram,
        // seconds on one shard only: each merged second as a fresh histogram made it.
        let mut a = vec![
            second(0, Some(2), &[5000, 7]),
            second(1, Some(2), &[100, 200]),
            second(2, Some(2), &[9]),
            second(2, Some(4), &[1_000_000]),
        ];
        a[1].per_op.push(OpInterval {
            op: "r".into(),
            ops: 3,
            latency_us: None,
            hist: None,
        });
        let mut b = vec![
            second(1, Some(2), &[300, 10_000]),
            second(2, Some(4), &[50]),
            second(3, Some(4), &[60, 70, 80]),
        ];
        b[0].per_op[0].op = "r".into();
        let new = serde_json::to_string(&merge_intervals(&[a.clone(), b.clone()])).unwrap();
        let old = serde_json::to_string(&merged_the_old_way(&[a, b])).unwrap();
        assert_eq!(new, old);
    }
}
