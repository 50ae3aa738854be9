//! `tpch-power`: the specification's power test (clause 5.3.3) — the refresh function RF1,
//! the 22 TPC-H queries one after another in query stream 0's order (Appendix A), then RF2
//! ([`refresh`]) — each query first cold (the engine restarted and its files dropped from
//! the page cache, as `count` does) and then `hot_runs` times hot; per query the cold seconds
//! and the best hot seconds, RF1's and RF2's seconds, the geometric means, and Power@Size
//! over the 24 timings of the run in the specification's order: each query's first run (its
//! cold one when `cold`), RF1 and RF2 ([`spec::power_at_size`]). Each query runs under a
//! timeout the server enforces ([`crate::engine::Session::statement_timeout`]): a query past
//! it is cancelled on the server and recorded `timed out`. Each answer is kept in canonical
//! form ([`answer`]) so contenders' answers can be compared, and the slowest query's
//! `EXPLAIN` is kept. `tpch-throughput` ([`throughput`]) runs the streams side by side.
//!
//! Figures are TPC-H-like, not audited: queries whose ORDER BY leaves ties (Q3, Q10, Q11,
//! Q18) order them by their key as well, so answers compare row by row.

pub mod answer;
pub mod published;
pub mod queries;
pub mod refresh;
pub mod spec;
pub mod throughput;

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::restart::{ColdRestart, cold_restart, restart_note};
use crate::dataset::tpch::{Tpch, UNITS_PER_SF};
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{EngineError, RestartOutcome, Session, TIMEOUT, Value};
use crate::results::{Better, Metric, Role, Unit};
use answer::Answer;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What TPC-H figures are, wherever they are shown.
pub const LABEL: &str = "TPC-H-like, not audited";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerParams {
    /// Hot runs after each query's cold one (ClickBench: 1 cold + 2 hot).
    #[serde(default = "default_hot_runs")]
    pub hot_runs: u32,
    /// Seconds a query may run before the server cancels it.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// Restart the engine cold before each query's first run.
    #[serde(default = "yes")]
    pub cold: bool,
    /// The queries to run (1 to 22), in this order; all 22 in stream 0's order by default.
    #[serde(default)]
    pub queries: Option<Vec<u8>>,
    /// Run RF1 before the queries and RF2 after them.
    #[serde(default = "yes")]
    pub refresh: bool,
    /// The seed of the substitution parameters; the dataset's by default.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The specification's validation parameters in place of drawn ones; at SF 1 each
    /// answer is then checked against the specification's published answer.
    #[serde(default)]
    pub validation: bool,
}

fn default_hot_runs() -> u32 {
    2
}
fn default_timeout_s() -> f64 {
    600.0
}
fn yes() -> bool {
    true
}

impl super::kind::StepKind for PowerParams {
    fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if self.hot_runs > 100 {
            return at(
                "hot_runs",
                format!("hot_runs = {} is out of range; use 0 to 100", self.hot_runs),
            );
        }
        check_timeout(self.timeout_s)?;
        if self.validation && self.seed.is_some() {
            return at(
                "seed",
                "validation = true runs the specification's own parameters, so no seed draws \
                 them; remove `seed` or set validation = false"
                    .into(),
            );
        }
        if let Some(qs) = &self.queries {
            if qs.is_empty() {
                return at(
                    "queries",
                    "queries must name at least one query (1 to 22)".into(),
                );
            }
            for (i, q) in qs.iter().enumerate() {
                if !queries::QUERIES.contains(q) {
                    return Err(DecodeError::at(
                        KeyPath::root().key("queries").index(i),
                        format!("there is no query {q}; TPC-H's queries are 1 to 22"),
                    ));
                }
            }
        }
        Ok(())
    }
    fn restarts(&self) -> Option<&'static str> {
        self.cold.then_some("cold")
    }
    fn generator(&self) -> Option<super::kind::GeneratorNeed> {
        Some(super::kind::GeneratorNeed {
            generator: crate::dataset::Generator::Tpch,
            why: "runs TPC-H's queries, which need TPC-H's eight tables",
            fix: "generator = \"tpch\" with `sf = N`",
        })
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all(
            "runs TPC-H's queries on",
            tables,
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// One query's figures.
#[derive(Debug, Clone, Serialize)]
pub struct QueryRun {
    pub query: u8,
    pub params: queries::Params,
    pub sql: String,
    /// Seconds of the cold run (or the first, when not cold); `None` when it timed out or
    /// failed.
    pub cold_s: Option<f64>,
    /// How the engine was restarted before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartOutcome>,
    /// Seconds of each hot run.
    pub hot_s: Vec<Option<f64>>,
    /// The best hot run (the cold one when there are none).
    pub best_s: Option<f64>,
    /// `ok`, `timed out`, or `failed: <engine's words>`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    /// The contender whose answer this one was compared with (see [`compare_with_earlier`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// Scale factor of the loaded data: suppliers / 10,000, as the specification sizes them.
pub(crate) fn scale_factor(session: &mut dyn Session) -> Result<f64, EngineError> {
    let n = session.query_i64("SELECT COUNT(*) FROM supplier")?;
    Ok((n as f64 / 10_000.0).max(1e-4))
}

/// One timed run of `sql`: its seconds and answer, or `Err(status)`.
pub(crate) fn timed(
    session: &mut dyn Session,
    sql: &str,
    out: &mut Vec<Value>,
) -> Result<(f64, Answer), String> {
    let t = Instant::now();
    let r = session
        .prepare(sql)
        .and_then(|st| session.run_rows(st, &[], out));
    let secs = t.elapsed().as_secs_f64();
    match r {
        Ok(rows) => Ok((secs, Answer::of(out, rows))),
        Err(e) if e.kind == TIMEOUT => Err("timed out".to_string()),
        Err(e) => Err(format!("failed: {e}")),
    }
}

/// A session with the step's timeout set, and whether the engine enforces it.
pub(crate) fn open(
    ctx: &StepCtx<'_>,
    limit: Duration,
) -> Result<(Box<dyn Session>, bool), StepError> {
    let mut s = ctx.engine.connect()?;
    let bounded = s.statement_timeout(Some(limit))?;
    Ok((s, bounded))
}

/// Run query `q` cold, then hot.
fn run_query(
    p: &PowerParams,
    ctx: &StepCtx<'_>,
    q: u8,
    params: queries::Params,
) -> Result<QueryRun, StepError> {
    let sql = queries::render(q, &params, ctx.engine.dialect())
        .map_err(|e| StepError::Check(e.to_string()))?;
    let limit = Duration::from_secs_f64(p.timeout_s);
    let restart = match p.cold {
        false => None,
        true => match cold_restart(ctx) {
            Ok(r) => Some(r),
            Err(ColdRestart::Unsupported(why)) => {
                return Err(StepError::Skipped(format!(
                    "cold query runs need a restart: {why} (set cold = false to run them warm)"
                )));
            }
            Err(ColdRestart::Failed(e)) => return Err(e.into()),
        },
    };
    let (mut session, _) = open(ctx, limit)?;
    let mut out = Vec::new();
    let mut run = QueryRun {
        query: q,
        params,
        sql: sql.clone(),
        cold_s: None,
        restart,
        hot_s: Vec::new(),
        best_s: None,
        status: "ok".to_string(),
        answer: None,
        reference: None,
    };
    match timed(session.as_mut(), &sql, &mut out) {
        Ok((s, a)) => {
            run.cold_s = Some(s);
            run.answer = Some(a);
        }
        Err(status) => {
            run.status = status;
            return Ok(run);
        }
    }
    for _ in 0..p.hot_runs {
        match timed(session.as_mut(), &sql, &mut out) {
            Ok((s, a)) => {
                run.hot_s.push(Some(s));
                if run
                    .answer
                    .as_ref()
                    .is_some_and(|first| first.digest != a.digest)
                {
                    run.status = "failed: a hot run's answer differs from the cold run's".into();
                }
            }
            Err(status) => {
                run.hot_s.push(None);
                run.status = status;
            }
        }
    }
    run.best_s = run
        .hot_s
        .iter()
        .flatten()
        .copied()
        .reduce(f64::min)
        .or(run.cold_s.filter(|_| p.hot_runs == 0));
    Ok(run)
}

/// Each query's answer against the reference's: the first contender, in the study's order,
/// that ran this step earlier in the run and answered the query. The first contender to run
/// is the reference rather than a majority because contenders run one after another and each
/// step's result is final when it ends; a report then shows every contender's verdict
/// against the same answer. An answer that differs fails the query (and so the step, its
/// figures kept), naming the first differing row. `earlier`: (contender, `<step>.json`).
pub fn compare_with_earlier(earlier: &[(String, std::path::PathBuf)], runs: &mut [QueryRun]) {
    let files: Vec<(&str, serde_json::Value)> = earlier
        .iter()
        .filter_map(|(name, path)| {
            let text = std::fs::read_to_string(path).ok()?;
            Some((name.as_str(), serde_json::from_str(&text).ok()?))
        })
        .collect();
    for run in runs.iter_mut() {
        let Some(mine) = &run.answer else { continue };
        let theirs = files.iter().find_map(|(name, v)| {
            let q = v["details"]["queries"]
                .as_array()?
                .iter()
                .find(|q| q["query"].as_u64() == Some(u64::from(run.query)))?;
            let a: Answer = serde_json::from_value(q["answer"].clone()).ok()?;
            Some((*name, a))
        });
        let Some((name, reference)) = theirs else {
            continue;
        };
        run.reference = Some(name.to_string());
        if let Some(why) = mine.differs_from(&reference) {
            run.status = format!("failed: the answer differs from {name}'s: {why}");
        }
    }
}

/// Geometric mean of `xs` (each floored at 1 ms, so an instant query does not sink it).
pub fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let logs: f64 = xs.iter().map(|x| x.max(0.001).ln()).sum();
    Some((logs / xs.len() as f64).exp())
}

/// The generator of the loaded data at scale factor `sf` (for the refresh functions' rows).
pub(crate) fn generator(ctx: &StepCtx<'_>, sf: f64) -> Tpch {
    let units = (sf * UNITS_PER_SF as f64).round().max(1.0) as u64;
    Tpch {
        seed: ctx.dataset_seed,
        units,
    }
}

/// RF1 and RF2 of one set, as the power test ran them.
#[derive(Debug, Clone, Serialize)]
pub struct Refreshed {
    pub set: u64,
    pub rf1_s: f64,
    pub rf1_rows: u64,
    pub rf2_s: f64,
    pub rf2_rows: u64,
    /// Rows of `orders` and `lineitem` before RF1 and after RF2.
    pub rows: refresh::Counts,
    /// A set an earlier run left after its RF1 (stopped before RF2), whose RF2 ran first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_first: Option<u64>,
}

/// Count the rows, then RF1 of the next refresh set: (that RF1 with `rf2_s` still 0).
fn begin_refresh(ctx: &StepCtx<'_>, tpch: &Tpch) -> Result<Refreshed, StepError> {
    ctx.progress.status("TPC-H RF1");
    let mut s = ctx.engine.connect()?;
    let completed_first = refresh::complete_unfinished(s.as_mut(), ctx.engine.dialect(), tpch)
        .map_err(refresh_failed)?;
    let rows = refresh::Counts::now(s.as_mut())?;
    let set = refresh::next_set(s.as_mut(), tpch).map_err(refresh_failed)?;
    let (rf1_s, rf1_rows) =
        refresh::rf1(s.as_mut(), ctx.engine.dialect(), tpch, set).map_err(refresh_failed)?;
    Ok(Refreshed {
        set,
        rf1_s,
        rf1_rows,
        rf2_s: 0.0,
        rf2_rows: 0,
        rows,
        completed_first,
    })
}

/// RF2 of the set RF1 inserted, then count the rows again.
fn end_refresh(ctx: &StepCtx<'_>, tpch: &Tpch, r: Refreshed) -> Result<Refreshed, StepError> {
    ctx.progress.status("TPC-H RF2");
    let mut s = ctx.engine.connect()?;
    let (rf2_s, rf2_rows) =
        refresh::rf2(s.as_mut(), ctx.engine.dialect(), tpch, r.set).map_err(refresh_failed)?;
    let rows = r.rows.after(s.as_mut())?;
    Ok(Refreshed {
        rf2_s,
        rf2_rows,
        rows,
        ..r
    })
}

fn refresh_failed(e: refresh::RefreshError) -> StepError {
    StepError::Check(format!(
        "{e}; the database may now hold a refresh set's rows: load it again before comparing"
    ))
}

pub fn run(p: &PowerParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let list: Vec<u8> = p
        .queries
        .clone()
        .unwrap_or_else(|| spec::stream_order(0).to_vec());
    let seed = p.seed.unwrap_or(ctx.dataset_seed);
    let sf = scale_factor(ctx.engine.connect()?.as_mut())?;
    let bounded = open(ctx, Duration::from_secs_f64(p.timeout_s))?.1;
    let tpch = generator(ctx, sf);
    let rf1 = match p.refresh {
        true => Some(begin_refresh(ctx, &tpch)?),
        false => None,
    };
    let mut runs = Vec::with_capacity(list.len());
    let mut failed = None;
    for q in &list {
        if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        ctx.progress.status(&format!("TPC-H Q{q}"));
        let params = match p.validation {
            true => queries::validation_params(*q, sf),
            false => queries::params(*q, seed, sf),
        };
        match run_query(p, ctx, *q, params) {
            Ok(r) => runs.push(r),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    // RF2 runs whatever happened to the queries, so later steps find as many rows.
    let refreshed = match rf1 {
        None => None,
        Some(r) => Some(end_refresh(ctx, &tpch, r)?),
    };
    if let Some(e) = failed {
        return Err(e);
    }
    let interrupted = runs.len() < list.len();
    compare_with_earlier(ctx.earlier, &mut runs);
    let published = (p.validation && published::applies(sf)).then(|| published::check(&mut runs));
    let explain = explain_worst(ctx, &runs, p.timeout_s);
    let ran = Ran {
        published,
        runs,
        refreshed,
        sf,
        seed,
        bounded,
        explain,
        interrupted,
    };
    output(p, ctx, ran)
}

/// What the power test ran, for its output.
struct Ran {
    runs: Vec<QueryRun>,
    /// With `validation = true` at SF 1: how many answers agreed with the published ones.
    published: Option<usize>,
    refreshed: Option<Refreshed>,
    sf: f64,
    seed: u64,
    bounded: bool,
    explain: serde_json::Value,
    interrupted: bool,
}

/// `EXPLAIN` of the query with the most seconds (best hot, else cold), as the engine gives
/// it: the query and its plan's rows, one line each.
fn explain_worst(ctx: &StepCtx<'_>, runs: &[QueryRun], timeout_s: f64) -> serde_json::Value {
    let worst = runs.iter().max_by(|a, b| {
        let key = |r: &QueryRun| r.best_s.or(r.cold_s).unwrap_or(timeout_s);
        key(a).total_cmp(&key(b))
    });
    let Some(w) = worst else {
        return serde_json::Value::Null;
    };
    let sql = ctx.engine.dialect().explain(&w.sql);
    let plan = ctx.engine.connect().and_then(|mut s| {
        let mut out = Vec::new();
        let st = s.prepare(&sql)?;
        let rows = s.run_rows(st, &[], &mut out)?;
        let cols = if rows == 0 {
            1
        } else {
            (out.len() / rows as usize).max(1)
        };
        Ok(out
            .chunks(cols)
            .map(|r| r.iter().map(plan_cell).collect::<Vec<_>>().join(" | "))
            .collect::<Vec<_>>())
    });
    match plan {
        Ok(lines) => serde_json::json!({ "query": w.query, "plan": lines }),
        Err(e) => serde_json::json!({ "query": w.query, "error": e.message }),
    }
}

/// The queries that failed (not those that timed out), in words: `Q2: failed: ...`.
fn failures(runs: &[QueryRun]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.status.starts_with("failed"))
        .map(|r| format!("Q{}: {}", r.query, r.status))
        .collect()
}

/// How the first runs began, in the note's words: every restart verified cold, or how many
/// were not (then the first of those says why), or no restart.
fn cold_note(runs: &[QueryRun]) -> String {
    let restarts: Vec<&RestartOutcome> = runs.iter().filter_map(|r| r.restart.as_ref()).collect();
    let Some(first) = restarts.first() else {
        return "warm: no restart".to_string();
    };
    match restarts.iter().find(|r| !r.cold) {
        None => format!(
            "cold: restarted before each query, each verified cold ({})",
            first.cache
        ),
        Some(warm) => format!(
            "warm-restart: {} of {} restarts left the page cache warm; {}",
            restarts.iter().filter(|r| !r.cold).count(),
            restarts.len(),
            restart_note(warm)
        ),
    }
}

/// A cell of a plan as the engine wrote it.
fn plan_cell(v: &Value) -> String {
    match v {
        Value::Int(n) => n.to_string(),
        Value::Text(t) => t.clone(),
        Value::Null => "NULL".to_string(),
    }
}

/// The step's figures: each query's, RF1's and RF2's, the geometric means, Power@Size.
struct Figures {
    metrics: Vec<Metric>,
    geo_hot: Option<f64>,
    geo_cold: Option<f64>,
    /// Power@Size over the 24 timings (22 queries, RF1, RF2).
    power: Option<f64>,
    /// With `refresh = false`: 3600 × SF over the 22 queries' geometric mean alone.
    power_queries_only: Option<f64>,
}

fn seconds(key: String, label: String, v: f64) -> Metric {
    Metric::new(&key, &label, v, Unit::Seconds, Better::Lower)
}

/// Query `number`'s seconds in `phase` (`cold`, `hot`).
fn query_seconds(number: u32, phase: &str, v: f64) -> Metric {
    seconds(
        format!("q{number:02}_{phase}_s"),
        format!("Q{number} {phase}"),
        v,
    )
    .with_role(Role::Query {
        number,
        phase: phase.into(),
    })
}

/// Figures of `runs` at scale factor `sf`. A geometric mean needs every query's seconds (a
/// query timed out leaves none); Power@Size needs all 22 and, unless `refresh = false`,
/// RF1's and RF2's. It is over each query's first run: the one in the specification's order.
fn figures(runs: &[QueryRun], refreshed: Option<&Refreshed>, sf: f64) -> Figures {
    let mut metrics = Vec::new();
    for r in runs {
        if let Some(c) = r.cold_s {
            metrics.push(query_seconds(r.query.into(), "cold", c));
        }
        if let Some(b) = r.best_s {
            metrics.push(query_seconds(r.query.into(), "hot", b));
        }
    }
    if let Some(r) = refreshed {
        metrics.push(seconds("rf1_s".into(), "RF1".into(), r.rf1_s));
        metrics.push(seconds("rf2_s".into(), "RF2".into(), r.rf2_s));
    }
    let hot: Vec<f64> = runs.iter().filter_map(|r| r.best_s).collect();
    let cold: Vec<f64> = runs.iter().filter_map(|r| r.cold_s).collect();
    let geo_hot = geomean(&hot).filter(|_| hot.len() == runs.len());
    let geo_cold = geomean(&cold).filter(|_| cold.len() == runs.len());
    if let Some(g) = geo_cold {
        metrics.push(seconds("geomean_cold_s".into(), "geomean cold".into(), g));
    }
    if let Some(g) = geo_hot {
        metrics.push(seconds("geomean_hot_s".into(), "geomean hot".into(), g));
    }
    let all = cold.len() == runs.len();
    let power = refreshed
        .filter(|_| all)
        .and_then(|r| spec::power_at_size(sf, &cold, r.rf1_s, r.rf2_s));
    let power_queries_only = geo_cold
        .filter(|_| refreshed.is_none() && runs.len() == 22)
        .map(|g| 3600.0 * sf / g);
    if let Some(pw) = power {
        metrics.push(Metric::new(
            "power_at_size",
            "Power@Size",
            pw,
            Unit::Count,
            Better::Higher,
        ));
    }
    if let Some(pw) = power_queries_only {
        metrics.push(Metric::new(
            "power_at_size_queries_only",
            "Power@Size (queries only, refresh = false)",
            pw,
            Unit::Count,
            Better::Higher,
        ));
    }
    Figures {
        metrics,
        geo_hot,
        geo_cold,
        power,
        power_queries_only,
    }
}

/// Queries that timed out, for a note: `Q2, Q9`.
pub(crate) fn timed_out(runs: &[QueryRun]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.status == "timed out")
        .map(|r| format!("Q{}", r.query))
        .collect()
}

/// The step's note.
fn note(p: &PowerParams, ran: &Ran) -> String {
    let runs = &ran.runs;
    let (sequence, refresh) = match &ran.refreshed {
        Some(r) => (
            format!("RF1, {} queries, RF2", runs.len()),
            format!(
                "RF1 {:.3} s, RF2 {:.3} s (refresh set {}; orders and lineitem hold as many \
                 rows as before){}; Power@Size over each query's first run, RF1 and RF2",
                r.rf1_s,
                r.rf2_s,
                r.set,
                r.completed_first.map_or(String::new(), |set| format!(
                    "; refresh set {set}, which an earlier run left after its RF1, had its RF2 \
                     run first"
                ))
            ),
        ),
        None => (
            format!("{} queries", runs.len()),
            "refresh = false: no RF1/RF2, Power@Size over the queries only".to_string(),
        ),
    };
    let mut note = format!(
        "{LABEL}; SF {}; {sequence}; first run then {} hot; {}; {refresh}",
        ran.sf,
        p.hot_runs,
        cold_note(runs)
    );
    if p.validation {
        note.push_str(&match ran.published {
            Some(agreed) => format!(
                "; the specification's validation parameters: {agreed} of {} answers agree \
                 with its published ones",
                runs.len()
            ),
            None => format!(
                "; the specification's validation parameters (its published answers are for \
                 SF 1, so at SF {} they were not checked)",
                ran.sf
            ),
        });
    }
    timing_notes(&mut note, p.timeout_s, &timed_out(runs), "", ran.bounded);
    note
}

/// A step's `timeout_s`, checked: more than 0, at most a day.
pub(crate) fn check_timeout(timeout_s: f64) -> Result<(), DecodeError> {
    if timeout_s > 0.0 && timeout_s <= 86_400.0 {
        return Ok(());
    }
    Err(DecodeError::at(
        KeyPath::root().key("timeout_s"),
        format!(
            "timeout_s = {timeout_s} is out of range; use more than 0 and at most 86400 (a day)"
        ),
    ))
}

/// The note's words on queries that timed out (`what`: what that costs, as ` (no X)`) and on
/// an engine that cannot bound a statement's time.
pub(crate) fn timing_notes(
    note: &mut String,
    timeout_s: f64,
    timed_out: &[String],
    what: &str,
    bounded: bool,
) {
    if !timed_out.is_empty() {
        note.push_str(&format!(
            "; timed out after {timeout_s} s{what}: {}",
            timed_out.join(", ")
        ));
    }
    if !bounded {
        note.push_str("; this engine cannot bound a statement's time, so queries ran unbounded");
    }
}

/// The step's output, or — when something `failed` (a query, not one that timed out; the
/// row counts) — the step failed with it kept.
pub(crate) fn verdict(
    summary: crate::results::StepSummary,
    details: serde_json::Value,
    interrupted: bool,
    failed: &[String],
) -> Result<StepOutput, StepError> {
    let out = StepOutput {
        summary,
        details,
        seconds: 0,
        interrupted,
    };
    if failed.is_empty() {
        Ok(out)
    } else {
        Err(StepError::Failed(
            failed.join("; "),
            super::ctx::Kept(Box::new(out)),
        ))
    }
}

/// The step's output from the queries' runs: a query that failed (not one that timed out)
/// fails the step, its figures kept.
fn output(p: &PowerParams, ctx: &StepCtx<'_>, ran: Ran) -> Result<StepOutput, StepError> {
    let f = figures(&ran.runs, ran.refreshed.as_ref(), ran.sf);
    let mut failed = failures(&ran.runs);
    failed.extend(ran.refreshed.as_ref().and_then(|r| r.rows.changed()));
    let mut s = summary(ctx.title("TPC-H power (TPC-H-like, not audited)"));
    let refresh_s = ran.refreshed.as_ref().map_or(0.0, |r| r.rf1_s + r.rf2_s);
    s.elapsed_s = Some(
        refresh_s
            + ran
                .runs
                .iter()
                .map(|r| r.cold_s.unwrap_or(0.0) + r.hot_s.iter().flatten().sum::<f64>())
                .sum::<f64>(),
    );
    s.metrics = f.metrics;
    s.note = Some(note(p, &ran));
    let details = serde_json::json!({
        "label": LABEL, "scale_factor": ran.sf, "seed": ran.seed, "timeout_s": p.timeout_s,
        "validation": p.validation, "published_answers_agreed": ran.published,
        "hot_runs": p.hot_runs, "geomean_hot_s": f.geo_hot, "geomean_cold_s": f.geo_cold,
        "power_at_size": f.power, "power_at_size_queries_only": f.power_queries_only,
        "refresh": ran.refreshed, "queries": ran.runs, "explain_worst": ran.explain,
        "answer_tolerance": { "absolute": answer::ABS_TOLERANCE, "relative": answer::REL_TOLERANCE },
    });
    verdict(s, details, ran.interrupted, &failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(q: u8, cells: &[&str]) -> QueryRun {
        let values: Vec<Value> = cells.iter().map(|c| Value::Text(c.to_string())).collect();
        QueryRun {
            query: q,
            params: queries::Params::new(),
            sql: String::new(),
            cold_s: Some(1.0),
            restart: None,
            hot_s: vec![Some(0.5)],
            best_s: Some(0.5),
            status: "ok".into(),
            answer: Some(Answer::of(&values, cells.len() as u64)),
            reference: None,
        }
    }

    /// The first earlier contender's answer is the reference; a differing answer fails the
    /// query with the first differing row, an agreeing one names its reference.
    #[test]
    fn answers_are_checked_against_the_first_earlier_contenders() {
        let dir = tempfile::tempdir().expect("tmp");
        let write = |name: &str, runs: &[QueryRun]| {
            let path = dir.path().join(format!("{name}.json"));
            let v = serde_json::json!({ "details": { "queries": runs } });
            std::fs::write(&path, v.to_string()).expect("write");
            (name.to_string(), path)
        };
        let earlier = vec![
            write("first", &[run_with(1, &["10.00"]), run_with(2, &["7"])]),
            write("second", &[run_with(1, &["99"]), run_with(3, &["x"])]),
        ];
        let mut mine = vec![
            run_with(1, &["10.001"]),
            run_with(2, &["8"]),
            run_with(3, &["x"]),
            run_with(4, &["y"]),
        ];
        compare_with_earlier(&earlier, &mut mine);
        assert_eq!(mine[0].status, "ok");
        assert_eq!(mine[0].reference.as_deref(), Some("first"));
        assert!(
            mine[1]
                .status
                .starts_with("failed: the answer differs from first's: row 1: [8.0000]"),
            "{}",
            mine[1].status
        );
        assert_eq!(mine[2].reference.as_deref(), Some("second"));
        assert_eq!(mine[3].reference, None);
        let f = figures(&mine, None, 0.01);
        assert!(
            f.geo_hot.is_some() && f.power.is_none() && f.power_queries_only.is_none(),
            "4 queries: no Power@Size"
        );
        assert_eq!(failures(&mine).len(), 1);
        assert!(failures(&mine)[0].starts_with("Q2: failed"));
    }

    /// Power@Size is over the 22 first runs, RF1 and RF2: first runs of 1 s, RF1 of 2 s and
    /// RF2 of 8 s give a geometric mean of 16^(1/24), so at SF 0.01: 36 / 16^(1/24); the hot
    /// runs do not count. Without the refresh functions it is the queries' alone.
    #[test]
    fn power_at_size_is_over_the_first_runs_and_the_refresh_functions() {
        let runs: Vec<QueryRun> = spec::stream_order(0)
            .iter()
            .map(|&q| run_with(q, &["1"]))
            .map(|r| QueryRun {
                cold_s: Some(1.0),
                ..r
            })
            .collect();
        let rows = refresh::Counts {
            orders: [15, 15],
            lineitem: [60, 60],
        };
        let r = Refreshed {
            set: 1,
            rf1_s: 2.0,
            rf1_rows: 75,
            rf2_s: 8.0,
            rf2_rows: 75,
            rows,
            completed_first: None,
        };
        let f = figures(&runs, Some(&r), 0.01);
        let want = 36.0 / 16f64.powf(1.0 / 24.0);
        assert!((f.power.expect("24 timings") - want).abs() < 1e-9);
        assert_eq!(f.power_queries_only, None);
        let keys: Vec<&str> = f.metrics.iter().map(|m| m.key.as_str()).collect();
        assert!(
            keys.contains(&"rf1_s") && keys.contains(&"rf2_s"),
            "{keys:?}"
        );
        let f = figures(&runs, None, 0.01);
        assert_eq!(f.power, None);
        assert!((f.power_queries_only.expect("22 queries") - 36.0).abs() < 1e-9);
        assert_eq!(r.rows.changed(), None);
        let moved = refresh::Counts {
            lineitem: [60, 61],
            ..rows
        };
        assert!(
            moved
                .changed()
                .expect("differs")
                .contains("lineitem with 61")
        );
    }

    #[test]
    fn the_geometric_mean_is_of_the_seconds() {
        let g = geomean(&[1.0, 4.0]).expect("two");
        assert!((g - 2.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
    }
}
