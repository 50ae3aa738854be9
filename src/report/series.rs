//! The per-second series of a run as reports read them: `<contender>/<step>.intervals.ndjson`
//! (client steps), `<contender>/<step>.system.ndjson` (every step) and, for replication
//! steps, each replica's seconds in `<contender>/<step>.json` (`details.timeline`). Only the fields the
//! reports draw are read, each with a default, so run directories written by older or newer
//! builds still render; unreadable lines are skipped and counted, never fatal.
//!
//! Also the statistics reports need from a series: downsampling for charts and the noise of
//! a mean (for `dbduel compare`).

use crate::results::{Manifest, Summary};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Most points a chart line gets; longer series are averaged (or, for latency, maxed) into
/// this many buckets so a report stays small whatever the step's length.
pub const MAX_POINTS: usize = 120;

/// Latency quantiles of one interval, µs.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub struct Lat {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Lat {
    /// The quantile a metric key names (`p50_us`, `p999_us`, `max_us`, `mean_us`, ...);
    /// p99 when the key names none.
    pub fn by_key(&self, key: &str) -> f64 {
        let k = key.to_ascii_lowercase();
        if k.starts_with("p999") {
            self.p999
        } else if k.starts_with("p99") {
            self.p99
        } else if k.starts_with("p95") {
            self.p95
        } else if k.starts_with("p50") {
            self.p50
        } else if k.starts_with("max") {
            self.max
        } else if k.starts_with("mean") {
            self.mean
        } else {
            self.p99
        }
    }
}

/// One second of a client step (`results::IntervalRecord`, the fields reports use).
#[derive(Debug, Clone, Deserialize)]
pub struct Interval {
    #[serde(default)]
    pub tick: u64,
    /// End of the interval, seconds after the step's start.
    #[serde(default)]
    pub t_s: f64,
    #[serde(default)]
    pub warmup: bool,
    #[serde(default)]
    pub ops_per_s: f64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default)]
    pub latency_us: Option<Lat>,
    /// The sweep level (client count) this interval belongs to, when the step sweeps.
    #[serde(default)]
    pub level: Option<u64>,
    /// Operations completed of each kind.
    #[serde(default)]
    pub per_op: Vec<OpCount>,
}

/// One op kind's completions in an interval.
#[derive(Debug, Clone, Deserialize)]
pub struct OpCount {
    pub op: String,
    #[serde(default)]
    pub ops: u64,
}

impl Interval {
    /// Seconds this interval covers: 1 except for the last, partial one of a run.
    pub fn duration_s(&self) -> f64 {
        (self.t_s - self.tick as f64).clamp(0.0, 1.0)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawCpu {
    idle_pct: f64,
    steal_pct: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawDevice {
    name: String,
    read_bytes_per_s: f64,
    write_bytes_per_s: f64,
    read_iops: f64,
    write_iops: f64,
    busy_pct: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawProc {
    cpu_pct: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawSystem {
    t_s: f64,
    cpu: RawCpu,
    devices: Vec<RawDevice>,
    engine: Option<RawProc>,
}

/// One system sample (`sysmon::SystemSample`, reduced to what reports draw).
#[derive(Debug, Clone, Default)]
pub struct SystemPoint {
    pub t_s: f64,
    /// Host CPU in use, % of the whole machine (100 − idle − steal).
    pub cpu_busy_pct: f64,
    /// The engine's process tree, % of one core.
    pub engine_cpu_pct: Option<f64>,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    /// Share of the second the disk had a request in flight, % (the busiest, when all disks).
    pub busy_pct: f64,
}

/// One replica over about a second of a replication step
/// (`workload::replication::follow::ReplicaSecond`, the fields reports draw).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ReplicaPoint {
    pub t_s: f64,
    pub replica: String,
    pub applied_per_s: f64,
    pub behind_tx: u64,
    pub lag_s: Option<f64>,
    pub cpu_pct: Option<f64>,
}

/// A cluster's second (`details.cluster.seconds` of a step on a Galera contender).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ClusterPoint {
    pub t_s: f64,
    pub dt_s: f64,
    pub live: usize,
    pub writesets: u64,
    pub cert_failures: u64,
    pub bf_aborts: u64,
    /// Share of the second flow control paused replication on the most paused node (0–1).
    pub flow_control_paused: f64,
}

/// Every series of one step of one contender.
#[derive(Debug, Clone, Default)]
pub struct StepSeries {
    pub intervals: Vec<Interval>,
    pub system: Vec<SystemPoint>,
    /// Each replica's seconds, for a replication step.
    pub replicas: Vec<ReplicaPoint>,
    /// The cluster's seconds, for a step on a cluster.
    pub cluster: Vec<ClusterPoint>,
    /// Which disk the I/O figures are for (`vda`, or `all disks`).
    pub disk: String,
    /// Lines that could not be read, per file name.
    pub unreadable: Vec<(String, usize)>,
    /// Schema changes made during the step: (start, end, what), seconds into the step.
    pub marks: Vec<(f64, f64, String)>,
    /// A sweep's p99 per level (client count → µs), from each level's merged histogram over
    /// its measured window (`details.levels`), where the step kind records one.
    pub level_p99: BTreeMap<u64, f64>,
}

/// A run directory as renderers see it: summary, manifest and every step's series.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The run directory's own name (not its path), for headings.
    pub name: String,
    pub summary: Summary,
    pub manifest: Manifest,
    /// Keyed by (contender, step).
    pub series: BTreeMap<(String, String), StepSeries>,
}

impl RunData {
    /// Read every step's series from `dir`. Missing files are simply absent series.
    pub fn load(dir: &Path, summary: Summary, manifest: Manifest) -> RunData {
        let mut series = BTreeMap::new();
        for c in &summary.contenders {
            // A contender whose data lives on a device of its own is measured there.
            let device = manifest
                .contenders
                .iter()
                .find(|f| f.name == c.name)
                .and_then(|f| f.effective.get("data_device"))
                .or(manifest.host.data_device.as_ref());
            for st in &c.steps {
                let s = load_step(&dir.join(&c.name), &st.name, device.map(String::as_str));
                series.insert((c.name.clone(), st.name.clone()), s);
            }
        }
        let name = dir
            .canonicalize()
            .ok()
            .as_deref()
            .unwrap_or(dir)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        RunData {
            name,
            summary,
            manifest,
            series,
        }
    }

    /// Several runs of one study as one: figures pooled into medians over every run's
    /// samples ([`crate::results::rounds::runs`]), named `A + B + C`. The series and context
    /// are the first run's. Runs of different studies as run, or one run given twice, are
    /// refused.
    pub fn pooled(mut runs: Vec<RunData>) -> Result<RunData, String> {
        if runs.len() == 1 {
            return Ok(runs.remove(0));
        }
        let Some(first) = runs.first() else {
            return Err("no run given".into());
        };
        // Pooled runs must be the same experiment: the study as run (scale and overrides
        // applied), and each a different run.
        if let Some(other) = runs
            .iter()
            .find(|r| r.manifest.study != first.manifest.study)
        {
            let (fa, fb) = (
                super::study::flatten(&first.manifest.study),
                super::study::flatten(&other.manifest.study),
            );
            let key = fa
                .iter()
                .find(|(k, v)| fb.get(*k) != Some(v))
                .map(|(k, _)| k.clone())
                .or_else(|| fb.keys().find(|k| !fa.contains_key(*k)).cloned())
                .unwrap_or_default();
            return Err(format!(
                "{} and {} ran different studies (they differ at `{key}`): pool only runs of one study as run",
                first.name, other.name
            ));
        }
        for (i, r) in runs.iter().enumerate() {
            if runs[..i]
                .iter()
                .any(|o| o.name == r.name && o.summary.started_at == r.summary.started_at)
            {
                return Err(format!(
                    "{} is given twice on one side: each run counts once",
                    r.name
                ));
            }
        }
        let parts: Vec<(String, &Summary)> =
            runs.iter().map(|r| (r.name.clone(), &r.summary)).collect();
        let summary = crate::results::rounds::runs(&parts);
        let name = runs
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(" + ");
        let mut out = runs.remove(0);
        out.summary = summary;
        out.name = name;
        Ok(out)
    }

    /// A contender's series of a step (empty when it has none).
    pub fn step(&self, contender: &str, step: &str) -> Option<&StepSeries> {
        self.series.get(&(contender.to_string(), step.to_string()))
    }

    /// Seconds per point the study asked of this step's timelines (`report_interval_s`,
    /// read from the study as run); 1 when it gave none.
    pub fn report_interval_s(&self, step: &str) -> u64 {
        self.manifest.study["step"]
            .as_array()
            .and_then(|ss| ss.iter().find(|s| s["name"] == step))
            .and_then(|s| s["report_interval_s"].as_u64())
            .unwrap_or(1)
            .max(1)
    }
}

/// One second of a series, for [`windows`]: its tick, end (s), length (s) and value.
#[derive(Debug, Clone, Copy)]
pub struct Second {
    pub tick: u64,
    pub t_s: f64,
    pub duration_s: f64,
    pub y: f64,
}

/// Seconds gathered into windows of `n` (ticks 0..n, n..2n, … — sysbench's
/// `--report-interval n`): each window's end, its value (rates: the mean over the seconds it
/// holds, weighted by their length; latency: the worst second) and how many seconds it holds.
pub fn windows(secs: &[Second], n: u64, how: Combine) -> Vec<(f64, f64, usize)> {
    let mut out: Vec<(u64, f64, f64, f64, usize)> = Vec::new(); // (window, end, Σy·d, Σd or max, n)
    for s in secs {
        let w = s.tick / n.max(1);
        let fresh = out.last().is_none_or(|l| l.0 != w);
        if fresh {
            out.push((w, s.t_s, 0.0, f64::NEG_INFINITY, 0));
        }
        let Some(l) = out.last_mut() else { continue };
        l.1 = l.1.max(s.t_s);
        l.4 += 1;
        match how {
            Combine::Mean => {
                l.2 += s.y * s.duration_s;
                l.3 = if l.3.is_finite() {
                    l.3 + s.duration_s
                } else {
                    s.duration_s
                };
            }
            Combine::Max => l.3 = l.3.max(s.y),
        }
    }
    out.into_iter()
        .map(|(_, end, sum, acc, k)| {
            let y = match how {
                Combine::Mean if acc > 0.0 => sum / acc,
                Combine::Mean => 0.0,
                Combine::Max => acc,
            };
            (end, y, k)
        })
        .collect()
}

/// The schema changes a step made under load (its `details.ddl`), as marks.
fn marks(ddl: &serde_json::Value) -> Vec<(f64, f64, String)> {
    let Some(runs) = ddl.as_array() else {
        return Vec::new();
    };
    runs.iter()
        .filter_map(|r| {
            let (a, b) = (r["start_s"].as_f64()?, r["end_s"].as_f64()?);
            let what = format!(
                "{} on {}",
                r["title"].as_str().unwrap_or("change"),
                r["table"].as_str().unwrap_or("?")
            );
            let how = match (r["elapsed_s"].as_f64(), r["error"].as_str()) {
                (Some(s), _) => format!(
                    "{}{}",
                    crate::report::format::seconds(s),
                    r["algorithm"]
                        .as_str()
                        .map(|a| format!(", ALGORITHM={a}"))
                        .unwrap_or_default()
                ),
                (None, Some(e)) => format!("failed: {e}"),
                (None, None) => String::new(),
            };
            Some((a, b, format!("{what} ({how})")))
        })
        .collect()
}

/// Each sweep level's p99 from a step's `details.levels` (entries with `threads` and
/// `latency_us.p99`).
fn level_p99(levels: &serde_json::Value) -> BTreeMap<u64, f64> {
    levels
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| Some((l["threads"].as_u64()?, l["latency_us"]["p99"].as_f64()?)))
        .collect()
}

/// Read the two series files of one step; `data_device` (e.g. `/dev/vda1`) picks the disk.
pub fn load_step(contender_dir: &Path, step: &str, data_device: Option<&str>) -> StepSeries {
    let mut out = StepSeries::default();
    let iv_name = format!("{step}.intervals.ndjson");
    let (intervals, bad) = read_ndjson::<Interval>(&contender_dir.join(&iv_name));
    out.intervals = intervals;
    if bad > 0 {
        out.unreadable.push((iv_name, bad));
    }
    let step_file = contender_dir.join(format!("{step}.json"));
    if let Ok(text) = std::fs::read_to_string(&step_file) {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(mut v) => {
                out.marks = marks(&v["details"]["ddl"]);
                out.level_p99 = level_p99(&v["details"]["levels"]);
                let t = v["details"]["timeline"].take();
                let c = v["details"]["cluster"]["seconds"].take();
                match (
                    serde_json::from_value::<Option<Vec<ReplicaPoint>>>(t),
                    serde_json::from_value::<Option<Vec<ClusterPoint>>>(c),
                ) {
                    (Ok(replicas), Ok(cluster)) => {
                        out.replicas = replicas.unwrap_or_default();
                        out.cluster = cluster.unwrap_or_default();
                    }
                    _ => out.unreadable.push((format!("{step}.json"), 1)),
                }
            }
            Err(_) => out.unreadable.push((format!("{step}.json"), 1)),
        }
    }
    let sys_name = format!("{step}.system.ndjson");
    let (raw, bad) = read_ndjson::<RawSystem>(&contender_dir.join(&sys_name));
    if bad > 0 {
        out.unreadable.push((sys_name, bad));
    }
    let names: Vec<&str> = raw
        .iter()
        .flat_map(|r| r.devices.iter().map(|d| d.name.as_str()))
        .collect();
    let disk = crate::sysmon::disk_meter::whole_disk_of(&names, data_device);
    out.disk = disk.clone().unwrap_or_else(|| "all disks".into());
    out.system = raw
        .iter()
        .map(|r| {
            let devs = r
                .devices
                .iter()
                .filter(|d| disk.as_ref().is_none_or(|n| &d.name == n));
            let mut p = SystemPoint {
                t_s: r.t_s,
                cpu_busy_pct: (100.0 - r.cpu.idle_pct - r.cpu.steal_pct).clamp(0.0, 100.0),
                engine_cpu_pct: r.engine.as_ref().map(|e| e.cpu_pct),
                ..SystemPoint::default()
            };
            for d in devs {
                p.read_bytes_per_s += d.read_bytes_per_s;
                p.write_bytes_per_s += d.write_bytes_per_s;
                p.read_iops += d.read_iops;
                p.write_iops += d.write_iops;
                p.busy_pct = p.busy_pct.max(d.busy_pct);
            }
            p
        })
        .collect();
    out
}

/// Every parseable line of an NDJSON file, and how many lines were not. A missing file is
/// an empty series.
fn read_ndjson<T: serde::de::DeserializeOwned>(path: &Path) -> (Vec<T>, usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), 0);
    };
    let mut rows = Vec::new();
    let mut bad = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(r) => rows.push(r),
            Err(_) => bad += 1,
        }
    }
    (rows, bad)
}

/// How points of a bucket combine when a series is downsampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Rates and percentages: the mean keeps the area.
    Mean,
    /// Latency: the worst second of the bucket, so spikes stay visible.
    Max,
}

/// At most `max` points of `pts` (x ascending): consecutive points are bucketed, x is the
/// bucket's last x. Returns the points and how many source points each stands for.
pub fn downsample(pts: &[(f64, f64)], max: usize, how: Combine) -> (Vec<(f64, f64)>, usize) {
    if pts.len() <= max || max == 0 {
        return (pts.to_vec(), 1);
    }
    let per = pts.len().div_ceil(max);
    let out = pts
        .chunks(per)
        .filter_map(|c| {
            let x = c.last()?.0;
            let y = match how {
                Combine::Mean => c.iter().map(|p| p.1).sum::<f64>() / c.len() as f64,
                Combine::Max => c.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max),
            };
            Some((x, y))
        })
        .collect();
    (out, per)
}

/// The relative standard error of the mean of a per-second series, corrected for the
/// correlation of neighbouring seconds (a slow second tends to follow a slow second, so n
/// correlated seconds carry the information of fewer independent ones:
/// n_eff = n (1 − r₁) / (1 + r₁), r₁ the lag-1 autocorrelation, clamped to [0, 0.9]).
/// `None` with fewer than 3 values or a zero mean: too little to estimate noise from.
pub fn relative_standard_error(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if !(mean.is_finite() && mean.abs() > 0.0) {
        return None;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    let r1 = if var > 0.0 {
        let cov = xs
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / (n - 1) as f64;
        (cov / var).clamp(0.0, 0.9)
    } else {
        0.0
    };
    let n_eff = (n as f64 * (1.0 - r1) / (1.0 + r1)).max(1.0);
    Some(sd / mean.abs() / n_eff.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_gather_into_report_intervals() {
        // 25 seconds at 100/s with a spike second, then a 0.5 s tail at 50/s.
        let mut secs: Vec<Second> = (0..25)
            .map(|t| Second {
                tick: t,
                t_s: t as f64 + 1.0,
                duration_s: 1.0,
                y: if t == 13 { 1000.0 } else { 100.0 },
            })
            .collect();
        secs.push(Second {
            tick: 25,
            t_s: 25.5,
            duration_s: 0.5,
            y: 50.0,
        });
        let mean = windows(&secs, 10, Combine::Mean);
        assert_eq!(mean.len(), 3);
        assert_eq!((mean[0].0, mean[0].1, mean[0].2), (10.0, 100.0, 10));
        assert_eq!((mean[1].0, mean[1].1), (20.0, 190.0));
        // The last window: five full seconds at 100 and half a second at 50.
        assert_eq!((mean[2].0, mean[2].2), (25.5, 6));
        assert!((mean[2].1 - 525.0 / 5.5).abs() < 1e-9, "{}", mean[2].1);
        let worst = windows(&secs, 10, Combine::Max);
        assert_eq!(worst[1].1, 1000.0);
        assert_eq!(windows(&secs, 1, Combine::Mean).len(), 26);
    }

    #[test]
    fn downsampling_keeps_spikes_for_latency_and_area_for_rates() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, if i == 3 { 100.0 } else { 1.0 }))
            .collect();
        let (mean, per) = downsample(&pts, 5, Combine::Mean);
        assert_eq!(per, 2);
        assert_eq!(mean.len(), 5);
        assert_eq!(mean[1], (3.0, 50.5));
        let (max, _) = downsample(&pts, 5, Combine::Max);
        assert_eq!(max[1], (3.0, 100.0));
        let (same, per) = downsample(&pts, 20, Combine::Mean);
        assert_eq!((same.len(), per), (10, 1));
    }

    #[test]
    fn noise_of_a_mean() {
        assert_eq!(relative_standard_error(&[1.0, 2.0]), None);
        assert_eq!(relative_standard_error(&[0.0, 0.0, 0.0]), None);
        assert_eq!(relative_standard_error(&[5.0, 5.0, 5.0]), Some(0.0));
        // Alternating values are negatively correlated: r₁ clamps to 0, plain SE.
        let alt = [90.0, 110.0, 90.0, 110.0];
        let se = relative_standard_error(&alt).unwrap_or_default();
        let plain = (400.0f64 / 3.0).sqrt() / 100.0 / 2.0;
        assert!((se - plain).abs() < 1e-9, "{se} vs {plain}");
        // A trend is positively correlated: fewer effective samples, more noise.
        let trend: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
        let wobble: Vec<f64> = (0..20)
            .map(|i| 100.0 + if i % 2 == 0 { 6.0 } else { -6.0 })
            .collect();
        let t = relative_standard_error(&trend).unwrap_or_default();
        let w = relative_standard_error(&wobble).unwrap_or_default();
        assert!(t > w, "trend {t} should be noisier than wobble {w}");
    }

    #[test]
    fn unreadable_lines_are_counted_not_fatal() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(
            dir.path().join("s.intervals.ndjson"),
            "{\"tick\":0,\"t_s\":1.0,\"ops_per_s\":5.0}\nnot json\n{\"tick\":1,\"t_s\":1.5}\n",
        )
        .expect("write");
        let s = load_step(dir.path(), "s", None);
        assert_eq!(s.intervals.len(), 2);
        assert_eq!(s.intervals[1].duration_s(), 0.5);
        assert_eq!(s.unreadable, vec![("s.intervals.ndjson".to_string(), 1)]);
        assert!(s.system.is_empty());
    }
}
