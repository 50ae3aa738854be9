//! `tpch-throughput`: the specification's throughput test (clause 5.3.4) — S query streams at
//! once, stream `s` (1 to S) running the 22 queries in Appendix A's order for `s` with
//! substitution parameters drawn from the seed and `s`, each stream on its own session and
//! thread, beside one refresh stream running S pairs RF1 + RF2 ([`super::refresh`]). Ts is
//! the seconds from the first stream's start to the last's end (the refresh stream's too);
//! Throughput@Size = S × 22 × 3600 / Ts × SF, and, when this contender ran a `tpch-power`
//! step earlier in the run with its refresh functions, QphH@Size = √(Power@Size ×
//! Throughput@Size) ([`super::spec`]). A query past `timeout_s` is cancelled on the server
//! and recorded `timed out` (then there is no Throughput@Size). Answers are not compared
//! here: streams run different parameters, and `tpch-power` compares its answers.
//! Figures are TPC-H-like, not audited.

use super::{LABEL, queries, refresh, spec};
use crate::dataset::rng::mix64;
use crate::dataset::tpch::Tpch;
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{Dialect, Engine};
use crate::results::{Better, Metric, Unit};
use crate::workload::ctx::{StepCtx, StepError, StepOutput, summary};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThroughputParams {
    /// Query streams; the specification's fewest for the scale factor by default.
    #[serde(default)]
    pub streams: Option<u32>,
    /// Seconds a query may run before the server cancels it.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// Run the refresh stream (S pairs RF1 + RF2) beside the query streams.
    #[serde(default = "yes")]
    pub refresh: bool,
    /// The seed of the substitution parameters; the dataset's by default.
    #[serde(default)]
    pub seed: Option<u64>,
}

fn default_timeout_s() -> f64 {
    600.0
}
fn yes() -> bool {
    true
}

/// The most streams a step may ask for.
const MAX_STREAMS: u32 = 100;

impl crate::workload::kind::StepKind for ThroughputParams {
    fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if let Some(s) = self.streams.filter(|s| !(1..=MAX_STREAMS).contains(s)) {
            return at(
                "streams",
                format!("streams = {s} is out of range; use 1 to {MAX_STREAMS}"),
            );
        }
        super::check_timeout(self.timeout_s)
    }
    fn clients(&self) -> u64 {
        // the default is at most 6 streams up to SF 300, the generator's largest; + refresh
        u64::from(self.streams.unwrap_or(6)) + 1
    }
    fn generator(&self) -> Option<crate::workload::kind::GeneratorNeed> {
        Some(crate::workload::kind::GeneratorNeed {
            generator: crate::dataset::Generator::Tpch,
            why: "runs TPC-H's queries, which need TPC-H's eight tables",
            fix: "generator = \"tpch\" with `sf = N`",
        })
    }
    fn needs(&self, tables: &[String]) -> Option<crate::workload::kind::TableNeed> {
        Some(crate::workload::kind::TableNeed::all(
            "runs TPC-H's queries on",
            tables,
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// One query of a stream.
#[derive(Debug, Clone, Serialize)]
pub struct StreamQuery {
    pub query: u8,
    pub params: queries::Params,
    /// `None` when it timed out or failed.
    pub seconds: Option<f64>,
    /// `ok`, `timed out`, or `failed: <engine's words>`.
    pub status: String,
}

/// One query stream: when it started and ended, in seconds from the step's start.
#[derive(Debug, Clone, Serialize)]
pub struct StreamRun {
    pub stream: u32,
    pub start_s: f64,
    pub end_s: f64,
    pub queries: Vec<StreamQuery>,
}

/// The refresh stream.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshRun {
    pub start_s: f64,
    pub end_s: f64,
    pub pairs: Vec<refresh::Pair>,
    /// Rows of `orders` and `lineitem` before the first pair and after the last.
    pub rows: refresh::Counts,
    /// A set an earlier run left after its RF1 (stopped before RF2), whose RF2 ran first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_first: Option<u64>,
}

/// The seed of stream `s`'s substitution parameters.
pub fn stream_seed(seed: u64, stream: u32) -> u64 {
    mix64(seed ^ mix64(0x7470_6368_7374_0000 + u64::from(stream)))
}

/// What every stream's thread needs.
struct Shared<'a> {
    engine: &'a dyn Engine,
    dialect: Dialect,
    stop: &'a AtomicBool,
    t0: Instant,
    sf: f64,
    seed: u64,
    limit: Duration,
}

/// Query stream `stream` on its own session.
fn query_stream(sh: &Shared<'_>, stream: u32) -> Result<StreamRun, StepError> {
    let mut session = sh.engine.connect()?;
    session.statement_timeout(Some(sh.limit))?;
    let seed = stream_seed(sh.seed, stream);
    let mut out = Vec::new();
    let start_s = sh.t0.elapsed().as_secs_f64();
    let mut queries = Vec::with_capacity(22);
    for q in spec::stream_order(stream) {
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let params = queries::params(q, seed, sh.sf);
        let sql =
            queries::render(q, &params, sh.dialect).map_err(|e| StepError::Check(e.to_string()))?;
        let (seconds, status) = match super::timed(session.as_mut(), &sql, &mut out) {
            Ok((s, _)) => (Some(s), "ok".to_string()),
            Err(status) => (None, status),
        };
        queries.push(StreamQuery {
            query: q,
            params,
            seconds,
            status,
        });
    }
    Ok(StreamRun {
        stream,
        start_s,
        end_s: sh.t0.elapsed().as_secs_f64(),
        queries,
    })
}

/// The refresh stream: `pairs` pairs RF1 + RF2 one after another on its own session.
fn refresh_stream(sh: &Shared<'_>, tpch: &Tpch, pairs: u32) -> Result<RefreshRun, StepError> {
    let mut session = sh.engine.connect()?;
    let completed_first = refresh::complete_unfinished(session.as_mut(), sh.dialect, tpch)
        .map_err(|e| {
            StepError::Check(format!(
                "the refresh stream: {e}; load the dataset again before comparing"
            ))
        })?;
    let rows = refresh::Counts::now(session.as_mut())?;
    let start_s = sh.t0.elapsed().as_secs_f64();
    let mut done = Vec::new();
    for _ in 0..pairs {
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let pair = refresh::pair(session.as_mut(), sh.dialect, tpch).map_err(|e| {
            StepError::Check(format!(
                "the refresh stream: {e}; load the dataset again before comparing"
            ))
        })?;
        done.push(pair);
    }
    let end_s = sh.t0.elapsed().as_secs_f64();
    Ok(RefreshRun {
        start_s,
        end_s,
        pairs: done,
        rows: rows.after(session.as_mut())?,
        completed_first,
    })
}

pub fn run(p: &ThroughputParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let sf = super::scale_factor(ctx.engine.connect()?.as_mut())?;
    let streams = p.streams.unwrap_or_else(|| spec::min_streams(sf));
    let seed = p.seed.unwrap_or(ctx.dataset_seed);
    let tpch = super::generator(ctx, sf);
    let bounded = super::open(ctx, Duration::from_secs_f64(p.timeout_s))?.1;
    ctx.progress.status(&format!(
        "TPC-H throughput: {streams} query streams{}",
        if p.refresh {
            " and a refresh stream"
        } else {
            ""
        }
    ));
    let sh = Shared {
        engine: ctx.engine,
        dialect: ctx.engine.dialect(),
        stop: ctx.stop,
        t0: Instant::now(),
        sf,
        seed,
        limit: Duration::from_secs_f64(p.timeout_s),
    };
    let (runs, refreshed) = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..=streams)
            .map(|s| {
                let sh = &sh;
                scope.spawn(move || query_stream(sh, s))
            })
            .collect();
        let refreshed = p.refresh.then(|| refresh_stream(&sh, &tpch, streams));
        let runs: Vec<Result<StreamRun, StepError>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(StepError::Check("a query stream panicked".into())))
            })
            .collect();
        (runs, refreshed)
    });
    let runs = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
    let refreshed = refreshed.transpose()?;
    let power = earlier_power(ctx.before, sf);
    let ran = Ran {
        streams,
        runs,
        refreshed,
        sf,
        seed,
        bounded,
        power,
    };
    output(p, ctx, ran)
}

/// Power@Size of this contender's last `tpch-power` step before this one that ran RF1/RF2
/// at the same scale factor: (its step's name, the figure). `before`: (step, `<step>.json`).
pub fn earlier_power(before: &[(String, std::path::PathBuf)], sf: f64) -> Option<(String, f64)> {
    before.iter().rev().find_map(|(step, path)| {
        let text = std::fs::read_to_string(path).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let d = &v["details"];
        let same_sf = d["scale_factor"]
            .as_f64()
            .is_some_and(|s| (s - sf).abs() < 1e-9);
        let power = d["power_at_size"].as_f64().filter(|_| same_sf)?;
        Some((step.clone(), power))
    })
}

/// What the throughput test ran.
struct Ran {
    streams: u32,
    runs: Vec<StreamRun>,
    refreshed: Option<RefreshRun>,
    sf: f64,
    seed: u64,
    bounded: bool,
    /// The earlier power step's name and Power@Size.
    power: Option<(String, f64)>,
}

impl Ran {
    /// Ts: from the first stream's start to the last's end, the refresh stream's included.
    fn ts_s(&self) -> f64 {
        let spans = self.runs.iter().map(|r| (r.start_s, r.end_s));
        let spans = spans.chain(self.refreshed.iter().map(|r| (r.start_s, r.end_s)));
        let (start, end) = spans.fold((f64::MAX, 0.0f64), |(a, b), (s, e)| (a.min(s), b.max(e)));
        (end - start).max(0.0)
    }

    /// Queries with `status` starting so, as `stream 2 Q9: timed out`.
    fn with_status(&self, prefix: &str) -> Vec<String> {
        self.runs
            .iter()
            .flat_map(|r| {
                r.queries
                    .iter()
                    .filter(|q| q.status.starts_with(prefix))
                    .map(move |q| format!("stream {} Q{}: {}", r.stream, q.query, q.status))
            })
            .collect()
    }

    /// Did every stream run its 22 queries and the refresh stream its pairs?
    fn complete(&self) -> bool {
        self.runs
            .iter()
            .all(|r| r.queries.len() == 22 && r.queries.iter().all(|q| q.seconds.is_some()))
            && self
                .refreshed
                .as_ref()
                .is_none_or(|r| r.pairs.len() == self.streams as usize)
    }
}

/// The figures: Ts, Throughput@Size (when complete), the refresh functions' mean seconds,
/// and QphH@Size (when an earlier power step gave Power@Size).
fn figures(ran: &Ran) -> (Vec<Metric>, Option<f64>, Option<f64>) {
    let ts = ran.ts_s();
    let mut metrics = vec![Metric::new(
        "ts_s",
        "Ts (throughput test)",
        ts,
        Unit::Seconds,
        Better::Lower,
    )];
    if let Some(r) = ran.refreshed.as_ref().filter(|r| !r.pairs.is_empty()) {
        let n = r.pairs.len() as f64;
        let rf1 = r.pairs.iter().map(|p| p.rf1_s).sum::<f64>() / n;
        let rf2 = r.pairs.iter().map(|p| p.rf2_s).sum::<f64>() / n;
        let secs = |k: &str, l: &str, v| Metric::new(k, l, v, Unit::Seconds, Better::Lower);
        metrics.push(secs("rf1_mean_s", "RF1 (mean)", rf1));
        metrics.push(secs("rf2_mean_s", "RF2 (mean)", rf2));
    }
    let throughput = ran
        .complete()
        .then(|| spec::throughput_at_size(ran.sf, ran.streams, ts))
        .flatten();
    let count = |k: &str, l: &str, v| Metric::new(k, l, v, Unit::Count, Better::Higher);
    let mut qphh = None;
    if let Some(t) = throughput {
        metrics.push(count("throughput_at_size", "Throughput@Size", t));
        if let Some((_, power)) = &ran.power {
            let q = spec::qphh_at_size(*power, t);
            metrics.push(count("qphh_at_size", "QphH@Size", q));
            qphh = Some(q);
        }
    }
    (metrics, throughput, qphh)
}

/// The step's note.
fn note(p: &ThroughputParams, ran: &Ran, throughput: Option<f64>) -> String {
    let refresh = match &ran.refreshed {
        Some(r) => format!("a refresh stream of {} RF1/RF2 pairs", r.pairs.len()),
        None => "no refresh stream (refresh = false)".to_string(),
    };
    let mut note = format!(
        "{LABEL}; SF {}; {} query streams in Appendix A's orders, each on its own session, \
         beside {refresh}; Ts from the first stream's start to the last's end; answers not \
         compared (tpch-power compares them)",
        ran.sf, ran.streams
    );
    match &ran.power {
        Some((step, _)) if throughput.is_some() => {
            note.push_str(&format!("; QphH@Size with Power@Size of step `{step}`"));
        }
        _ => note.push_str("; no QphH@Size: no earlier tpch-power step with RF1/RF2 at this SF"),
    }
    let timed_out = ran.with_status("timed out");
    let what = " (no Throughput@Size)";
    super::timing_notes(&mut note, p.timeout_s, &timed_out, what, ran.bounded);
    note
}

fn output(p: &ThroughputParams, ctx: &StepCtx<'_>, ran: Ran) -> Result<StepOutput, StepError> {
    let (metrics, throughput, qphh) = figures(&ran);
    let mut s = summary(ctx.title("TPC-H throughput (TPC-H-like, not audited)"));
    s.elapsed_s = Some(ran.ts_s());
    s.metrics = metrics;
    s.note = Some(note(p, &ran, throughput));
    let mut failed = ran.with_status("failed");
    failed.extend(ran.refreshed.as_ref().and_then(|r| r.rows.changed()));
    let interrupted = !ran.complete() && ctx.stop.load(Ordering::Relaxed);
    let details = serde_json::json!({
        "label": LABEL, "scale_factor": ran.sf, "seed": ran.seed, "timeout_s": p.timeout_s,
        "streams": ran.streams, "ts_s": ran.ts_s(), "throughput_at_size": throughput,
        "power_at_size": ran.power.as_ref().map(|(_, p)| p),
        "power_step": ran.power.as_ref().map(|(s, _)| s), "qphh_at_size": qphh,
        "query_streams": ran.runs, "refresh_stream": ran.refreshed,
        "answers_compared": false,
    });
    super::verdict(s, details, interrupted, &failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(s: u32, start: f64, end: f64, timed_out: bool) -> StreamRun {
        let queries = spec::stream_order(s)
            .iter()
            .map(|&q| StreamQuery {
                query: q,
                params: queries::Params::new(),
                seconds: (!timed_out || q != 9).then_some(0.1),
                status: if timed_out && q == 9 {
                    "timed out"
                } else {
                    "ok"
                }
                .into(),
            })
            .collect();
        StreamRun {
            stream: s,
            start_s: start,
            end_s: end,
            queries,
        }
    }

    /// Ts spans the first start to the last end, the refresh stream's included; 2 streams
    /// at SF 1 in 36 s: 2 × 22 × 3600 / 36 × 1 = 4400; with Power@Size 1100, QphH = 2200.
    #[test]
    fn throughput_and_qphh_come_from_ts_and_the_earlier_power() {
        let mut ran = Ran {
            streams: 2,
            runs: vec![stream(1, 0.5, 30.0, false), stream(2, 1.0, 20.0, false)],
            refreshed: Some(RefreshRun {
                start_s: 0.0,
                end_s: 36.0,
                pairs: (1..=2)
                    .map(|set| refresh::Pair {
                        set,
                        rf1_s: 1.0,
                        rf2_s: 3.0,
                        rf1_rows: 0,
                        rf2_rows: 0,
                    })
                    .collect(),
                rows: refresh::Counts {
                    orders: [15, 15],
                    lineitem: [60, 60],
                },
                completed_first: None,
            }),
            sf: 1.0,
            seed: 1,
            bounded: true,
            power: Some(("power".into(), 1100.0)),
        };
        assert!((ran.ts_s() - 36.0).abs() < 1e-12);
        let (metrics, t, q) = figures(&ran);
        assert!((t.expect("complete") - 4400.0).abs() < 1e-9);
        assert!((q.expect("power given") - 2200.0).abs() < 1e-9);
        let keys: Vec<&str> = metrics.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "ts_s",
                "rf1_mean_s",
                "rf2_mean_s",
                "throughput_at_size",
                "qphh_at_size"
            ]
        );
        ran.runs[1] = stream(2, 1.0, 20.0, true);
        let (_, t, q) = figures(&ran);
        assert_eq!(
            (t, q),
            (None, None),
            "a query timed out: no Throughput@Size"
        );
        assert_eq!(ran.with_status("timed out"), ["stream 2 Q9: timed out"]);
    }

    /// QphH@Size takes Power@Size from the last earlier power step at the same scale factor
    /// that ran its refresh functions; other steps' files and other scales are passed over.
    #[test]
    fn the_power_figure_comes_from_the_last_earlier_power_step_at_this_sf() {
        let dir = tempfile::tempdir().expect("tmp");
        let write = |name: &str, details: serde_json::Value| {
            let path = dir.path().join(format!("{name}.json"));
            let v = serde_json::json!({ "details": details });
            std::fs::write(&path, v.to_string()).expect("write");
            (name.to_string(), path)
        };
        let before = vec![
            write(
                "power",
                serde_json::json!({ "scale_factor": 0.01, "power_at_size": 800.0 }),
            ),
            write(
                "power-2",
                serde_json::json!({ "scale_factor": 0.01, "power_at_size": 900.0 }),
            ),
            write(
                "queries-only",
                serde_json::json!({ "scale_factor": 0.01, "power_at_size": null }),
            ),
            write("load", serde_json::json!({ "rows": 5 })),
        ];
        assert_eq!(
            earlier_power(&before, 0.01),
            Some(("power-2".to_string(), 900.0))
        );
        assert_eq!(earlier_power(&before, 0.1), None);
        assert_eq!(earlier_power(&[], 0.01), None);
    }

    #[test]
    fn streams_draw_their_own_parameters() {
        assert_ne!(stream_seed(42, 1), stream_seed(42, 2));
        assert_eq!(stream_seed(42, 1), stream_seed(42, 1));
        let all = |s| -> Vec<queries::Params> {
            (1..=22)
                .map(|q| queries::params(q, stream_seed(42, s), 1.0))
                .collect()
        };
        assert_ne!(all(1), all(2));
    }
}
