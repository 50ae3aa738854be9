//! A sweep of client counts, as the steps that measure throughput per level run it: each level
//! runs for its seconds, closed-loop or paced alike (and an `slo` search repeats one level at
//! rates it chooses), and the data device is read at the runner's own ticks so
//! every second's device figures line up with that second's operations.

use super::ctx::{StepCtx, StepError, StepOutput};
use crate::decode::{DecodeError, KeyPath};
use crate::engine;
use crate::metrics::Latency;
use crate::results::{Better, Derived, Metric, Unit};
use crate::runner::{self, Bound, Pacing, RunOutcome, RunSpec, Worker};
use crate::sysmon::DeviceIo;
use crate::sysmon::disk_meter::{self, DiskMeter};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Most clients one step may open.
pub const MAX_CLIENTS: u64 = 10_000;

/// One client count, or a sweep of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "threads must be a positive client count or a list of them"
)]
pub enum Threads {
    One(u64),
    Sweep(Vec<u64>),
}

impl Threads {
    pub fn levels(&self) -> Vec<u64> {
        match self {
            Threads::One(n) => vec![*n],
            Threads::Sweep(v) => v.clone(),
        }
    }

    /// Most clients of any level.
    pub fn max(&self) -> u64 {
        self.levels().into_iter().max().unwrap_or(1)
    }
}

/// A sweep's client counts, each level's seconds and its unmeasured warm-up, checked alike
/// for every step kind that sweeps (paths relative to the step).
pub fn check_levels(threads: &Threads, duration_s: u64, warmup_s: u64) -> Result<(), DecodeError> {
    let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
    let levels = threads.levels();
    if levels.is_empty() {
        return at(
            "threads",
            "threads must list at least one client count".into(),
        );
    }
    if let Some(i) = levels.iter().position(|t| !(1..=MAX_CLIENTS).contains(t)) {
        return Err(DecodeError::at(
            KeyPath::root().key("threads").index(i),
            format!(
                "{} threads is out of range; use 1 to {}",
                levels[i], MAX_CLIENTS
            ),
        ));
    }
    if !(1..=7 * 86_400).contains(&duration_s) {
        return at(
            "duration_s",
            "duration_s must be from 1 to 604800 (a week)".into(),
        );
    }
    if warmup_s >= duration_s {
        return at(
            "warmup_s",
            format!(
                "warmup_s = {} leaves nothing of duration_s = {}",
                warmup_s, duration_s
            ),
        );
    }
    Ok(())
}

/// The keys every sweeping step kind (oltp, tpcc, lookups, select-triple) takes alike,
/// decoded once into [`Levels`] beside the kind's own parameters (see [`decode`]).
pub const LEVEL_KEYS: &[&str] = &["threads", "duration_s", "warmup_s", "cold_start"];

/// A sweep's levels as a step asks for them: the client counts, each level's seconds and
/// its unmeasured warm-up, and whether the sweep starts cold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Levels {
    /// Clients: one number, or a list to sweep (each level runs for `duration_s`).
    pub threads: Threads,
    /// Seconds each level runs.
    pub duration_s: u64,
    /// Seconds at the start of each level left out of its figures (on top of a kind's
    /// final-fraction rule, where it has one).
    #[serde(default)]
    pub warmup_s: u64,
    /// Restart the engine cold (its files evicted from the OS page cache, as the `count`
    /// step's cold restart) before the first level, so the sweep starts with nothing cached
    /// — the seed's "cold back-up". An engine that cannot restart runs warm, and says so.
    #[serde(default)]
    pub cold_start: bool,
}

impl Default for Levels {
    /// One client for one second: only a placeholder until [`decode`] fills it.
    fn default() -> Self {
        Levels {
            threads: Threads::One(1),
            duration_s: 1,
            warmup_s: 0,
            cold_start: false,
        }
    }
}

impl Levels {
    /// The levels checked alike for every kind that sweeps (paths relative to the step).
    pub fn check(&self) -> Result<(), DecodeError> {
        check_levels(&self.threads, self.duration_s, self.warmup_s)
    }
}

/// Decode a sweeping step's parameters: [`LEVEL_KEYS`] into its [`Levels`], the rest into
/// the kind's own `P`, which keeps them (`set`). Paths in errors are relative to the step.
pub fn decode<P: DeserializeOwned>(
    v: toml::Value,
    set: impl FnOnce(&mut P, Levels),
) -> Result<P, DecodeError> {
    let table = match v {
        toml::Value::Table(t) => t,
        other => return crate::decode::decode(other),
    };
    let (mut p, levels): (P, Levels) = crate::decode::split(&table, LEVEL_KEYS)?;
    set(&mut p, levels);
    Ok(p)
}

/// The data device in one second of a level.
#[derive(Debug, Clone, Serialize)]
pub struct DiskSecond {
    /// The level's client count.
    pub level: u64,
    /// The second's number in the step (levels follow one another).
    pub tick: u64,
    pub warmup: bool,
    /// How long the reading spans (a level's last is often shorter than a second).
    pub secs: f64,
    #[serde(flatten)]
    pub io: DeviceIo,
}

/// One level as it ran.
pub struct LevelRun {
    pub threads: u64,
    pub out: RunOutcome,
    /// Its seconds' device readings.
    pub disk: Vec<DiskSecond>,
}

impl LevelRun {
    /// Operations a second over the measured part.
    pub fn rate(&self) -> f64 {
        if self.out.measured_s > 0.0 {
            self.out.ops as f64 / self.out.measured_s
        } else {
            0.0
        }
    }

    pub fn latency(&self) -> Option<Latency> {
        Latency::of(&self.out.all)
    }

    /// The device over the measured seconds (means of its seconds).
    pub fn disk_mean(&self) -> Option<DeviceIo> {
        let measured: Vec<(DeviceIo, f64)> = self
            .disk
            .iter()
            .filter(|s| !s.warmup)
            .map(|s| (s.io.clone(), s.secs))
            .collect();
        (!measured.is_empty()).then(|| disk_meter::mean(&measured))
    }
}

/// A whole sweep.
pub struct Sweep {
    pub levels: Vec<LevelRun>,
    /// Per-second records the levels wrote to the step's file.
    pub seconds: u64,
    pub interrupted: bool,
}

impl Sweep {
    /// Every second's device readings, in order.
    pub fn disk_seconds(&self) -> Vec<DiskSecond> {
        self.levels.iter().flat_map(|l| l.disk.clone()).collect()
    }
}

/// What a sweep runs.
pub struct SweepSpec<'a> {
    pub levels: Vec<u64>,
    pub duration_s: u64,
    pub warmup_s: u64,
    /// Op kinds the workers report, by index.
    pub names: &'a [String],
    /// What one operation is, for progress and errors ("lookups", "transactions").
    pub what: &'a str,
    /// Closed loop, or the open loop's rate (each level alike).
    pub pacing: Pacing,
}

/// The one level loop of every sweeping step: each of `levels` in turn (client counts, or a
/// step's settings), `duration_s` apart on the step's clock from `first_tick`.
/// `run(index, level, tick_base)` runs one and hands back its record and whether the stop
/// flag cut it short; a kind's level adds what it adds (schema changes alongside, a node
/// killed) inside it. The walk stops before a level once the stop flag is up and after a
/// level that was cut short, keeping the levels done; an error of a level ends it.
/// Returns the levels' records and whether it was stopped.
pub fn walk<T: Copy, L>(
    ctx: &StepCtx<'_>,
    levels: &[T],
    (first_tick, duration_s): (u64, u64),
    mut run: impl FnMut(usize, T, u64) -> Result<(L, bool), StepError>,
) -> Result<(Vec<L>, bool), StepError> {
    let mut done = Vec::new();
    let mut tick_base = first_tick;
    for (li, &level) in levels.iter().enumerate() {
        if ctx.stop.load(Ordering::Relaxed) {
            return Ok((done, true));
        }
        let (record, interrupted) = run(li, level, tick_base)?;
        done.push(record);
        tick_base += duration_s;
        if interrupted {
            return Ok((done, true));
        }
    }
    Ok((done, false))
}

/// Run each level in turn with workers from `make(level_index, client)` (see [`walk`]);
/// fails when every operation of a level failed.
pub fn run<'w, F>(ctx: &StepCtx<'_>, spec: &SweepSpec<'_>, make: F) -> Result<Sweep, StepError>
where
    F: Fn(usize, usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    let (levels, interrupted) = walk(
        ctx,
        &spec.levels,
        (0, spec.duration_s),
        |li, threads, tick_base| {
            let level = run_level(ctx, spec, li, threads, &spec.pacing, tick_base, &make)?;
            if !level.out.interrupted
                && let Some((errors, first)) = level.out.all_failed()
            {
                return Err(StepError::Check(format!(
                    "every one of the {} failed at {threads} clients ({errors} errors); first: {first}",
                    spec.what
                )));
            }
            let interrupted = level.out.interrupted;
            Ok((level, interrupted))
        },
    )?;
    if levels.is_empty() {
        return Err(StepError::Skipped(
            "interrupted before the first level".into(),
        ));
    }
    Ok(Sweep {
        seconds: levels.iter().map(|l| l.out.seconds.count).sum(),
        levels,
        interrupted,
    })
}

/// Run one level (index `li`, `threads` clients, paced by `pacing`), its seconds going to the
/// step's file from `tick_base` (a level where every operation failed is the caller's to
/// judge: a sweep fails, an slo probe fails its goal).
pub fn run_level<'w, F>(
    ctx: &StepCtx<'_>,
    spec: &SweepSpec<'_>,
    li: usize,
    threads: u64,
    pacing: &Pacing,
    tick_base: u64,
    make: &F,
) -> Result<LevelRun, StepError>
where
    F: Fn(usize, usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    let run_spec = RunSpec {
        clients: threads as usize,
        bound: Bound::Duration(Duration::from_secs(spec.duration_s)),
        warmup_s: spec.warmup_s,
        pacing: pacing.clone(),
        seed: li as u64,
        team: ctx.team.cloned(),
        threads: None,
    };
    ctx.progress
        .status(&format!("{threads} clients connecting"));
    let progress = ctx.progress;
    // Each tick closes one second of device counters, aligned with its operations (the
    // first also spans the clients' connecting, as rates over its real length).
    let mut meter = DiskMeter::start(ctx.data_device);
    let mut disk: Vec<DiskSecond> = Vec::new();
    let what = spec.what;
    let out = runner::run_closed(
        &run_spec,
        spec.names,
        |client| make(li, client),
        ctx.stop,
        |iv| {
            ctx.seconds.append_shifted(iv, tick_base, Some(threads));
            if let Some(io) = meter.tick() {
                disk.push(DiskSecond {
                    level: threads,
                    tick: tick_base + iv.tick,
                    warmup: iv.warmup,
                    secs: meter.secs(),
                    io,
                });
            }
            progress.status(&format!(
                "{threads} clients t={:.0}s {:.0} {what}/s",
                iv.t_s, iv.ops_per_s
            ));
        },
    )?;
    Ok(LevelRun { threads, out, disk })
}

/// A sweeping step's `slo`: probes of one level of `threads` clients (the closed loop, then
/// fixed rates in the step's unit, `per_unit` operations each), and the step's figures of
/// the search.
#[allow(clippy::too_many_arguments)]
pub fn search<'w, F>(
    ctx: &StepCtx<'_>,
    spec: &SweepSpec<'_>,
    pace: &super::pacing::Pace,
    slo: &super::slo::Slo,
    per_unit: f64,
    title: String,
    unit: &str,
    make: F,
) -> Result<StepOutput, StepError>
where
    F: Fn(usize, usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    super::slo::unsharded(ctx)?;
    let threads = spec.levels.iter().copied().max().unwrap_or(1);
    let found = super::slo::search(slo, |rate, tick_base| {
        let pacing = pace.at(rate).pacing(per_unit);
        let li = (tick_base / spec.duration_s.max(1)) as usize;
        let l = run_level(ctx, spec, li, threads, &pacing, tick_base, &make)?;
        Ok(super::slo::Measured::of(l.out, per_unit, tick_base))
    })?;
    Ok(super::slo::output(
        format!("{title}, {threads} clients"),
        slo,
        unit,
        pace.details(),
        found,
    ))
}

/// The notes on how a sweep was paced: for an open loop its rate, and each level that fell
/// short of it (`unit`: the rate's, e.g. "lookups/s").
pub fn pace_notes(
    pace: &super::pacing::Pace,
    per_unit: f64,
    spec: &SweepSpec<'_>,
    levels: &[LevelRun],
    unit: &str,
) -> Vec<String> {
    if !pace.is_open() {
        return Vec::new();
    }
    let target = pace.target_mean(1.0, spec.warmup_s as f64, spec.duration_s as f64);
    let mut notes = vec![pace.loop_note(unit)];
    for l in levels {
        notes.extend(super::pacing::shortfall(
            &format!("at {} clients", l.threads),
            target,
            l.rate() / per_unit,
            l.out.late,
            l.out.dropped,
            l.out.unstarted,
            unit,
        ));
    }
    notes
}

/// The index of the level with the highest rate.
pub fn best(levels: &[LevelRun]) -> usize {
    levels
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.rate().total_cmp(&b.1.rate()))
        .map(|(i, _)| i)
        .unwrap_or(0)
}

/// Level `t`'s latency percentiles as figures (`p50_us_tN`, …): `which` of p50, p95, p99, max.
pub fn latency_figures(t: u64, lat: &Latency, which: &[&str]) -> Vec<Metric> {
    which
        .iter()
        .map(|&key| {
            latency_metric(
                &format!("{key}_us_t{t}"),
                &format!("{key} @{t}"),
                lat,
                key,
                Some(t),
            )
        })
        .collect()
}

/// The best level's rate as the figure reports lead with (`key`, `label`, counting `counts`)
/// and the clients it ran at, both found again among the levels' `prefix…` figures when
/// shards are merged.
pub fn best_figures(
    (key, label, counts): (&str, &str, &str),
    prefix: &str,
    rate: f64,
    threads: u64,
) -> [Metric; 2] {
    [
        Metric::new(key, label, rate, Unit::PerSecond, Better::Higher)
            .with_role(crate::results::Role::Lead {
                counts: counts.into(),
            })
            .derived(Derived::Best {
                prefix: prefix.into(),
            }),
        Metric::new(
            "best_threads",
            "at clients",
            threads as f64,
            Unit::Count,
            Better::None,
        )
        .derived(Derived::BestLevel {
            prefix: prefix.into(),
        }),
    ]
}

/// The latency figure `key` (p50, p95, p99 or max) of `lat` as metric `id`, with the quantile
/// a merge of shards computes it again from (over the clients' histograms at `level`, or the
/// step's when `None`).
pub fn latency_metric(
    id: &str,
    label: &str,
    lat: &Latency,
    key: &str,
    level: Option<u64>,
) -> Metric {
    let (v, q) = match key {
        "p50" => (lat.p50, 0.5),
        "p95" => (lat.p95, 0.95),
        "p99" => (lat.p99, 0.99),
        _ => (lat.max, 1.0),
    };
    Metric::new(id, label, v as f64, Unit::Micros, Better::Lower).quantile(q, level, &[])
}

/// Level `t`'s data device as figures: reads (and writes, with `writes`) in bytes and
/// requests a second, and the busy share.
pub fn disk_figures(t: u64, d: &DeviceIo, writes: bool) -> Vec<Metric> {
    let mut all = vec![(
        "read_bytes_per_s",
        "disk reads",
        d.read_bytes_per_s,
        Unit::BytesPerSecond,
    )];
    if writes {
        all.push((
            "write_bytes_per_s",
            "disk writes",
            d.write_bytes_per_s,
            Unit::BytesPerSecond,
        ));
    }
    all.push(("read_iops", "read IOPS", d.read_iops, Unit::PerSecond));
    if writes {
        all.push(("write_iops", "write IOPS", d.write_iops, Unit::PerSecond));
    }
    all.push(("busy_pct", "disk busy", d.busy_pct, Unit::Percent));
    all.into_iter()
        .map(|(key, label, v, unit)| {
            Metric::new(
                &format!("{key}_t{t}"),
                &format!("{label} @{t}"),
                v,
                unit,
                Better::None,
            )
            .derived(Derived::Shared)
        })
        .collect()
}
