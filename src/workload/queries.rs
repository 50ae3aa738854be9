//! `queries`: N concurrent clients each running a list of statements in turn, closed loop (or
//! paced by `rate`) —
//! the original study's `mysqlslap --concurrency=N` run, with latency percentiles per query.
//! Statements are SELECTs, or single-row-style writes (INSERT, UPDATE, DELETE, REPLACE) into
//! tables of dbduel's own database, named without a database or schema.
//! Placeholders (`?`, or `$1`, `$2`, … on PostgreSQL) take a fresh uniform random integer from
//! their range in `params` at every execution, as `pgbench`'s `\set aid random(1, N)` does.
//!
//! Connecting is timed as its own figures (all clients open, connects/s, the slowest). With
//! `timed_from = "connect"` the clock starts as the clients start connecting and each client
//! queries as soon as it is connected, which is what mysqlslap's "seconds to run all
//! queries" measures.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::sweep::MAX_CLIENTS;
use crate::dataset::rng::SplitMix64;
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::{self, Session, StmtId, Value};
use crate::metrics::Latency;
use crate::results::{Better, Derived, Metric, Role, Unit};
use crate::runner::{self, Bound, Clock, RunSpec, Worker};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The statements a `queries` step may run: reads, and writes of rows.
pub const QUERY_VERBS: &[&str] = &["SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueriesParams {
    /// Concurrent clients: one connection and one query in flight each.
    pub clients: u64,
    /// OS threads serving the clients, each waiting on its clients' sockets at once
    /// (pgbench's `-j`, the `oltp` step's `jobs`); none: one thread a client. PostgreSQL,
    /// MariaDB and MySQL, closed loop.
    #[serde(default)]
    pub jobs: Option<u64>,
    /// `jobs`'s older name, still taken (not both).
    #[serde(default)]
    pub threads: Option<u64>,
    /// SELECTs and writes (INSERT, UPDATE, DELETE, REPLACE); client k runs them in turn,
    /// starting with query k mod len.
    pub queries: Vec<String>,
    /// Operations per client (give this or `duration_s`).
    #[serde(default)]
    pub per_client: Option<u64>,
    /// Seconds to run (give this or `per_client`).
    #[serde(default)]
    pub duration_s: Option<u64>,
    /// Seconds at the start not counted in the results.
    #[serde(default)]
    pub warmup_s: u64,
    /// Random integer parameters: entry i is the inclusive range of every query's (i+1)-th
    /// placeholder (its (i+1)-th `?`, or `$i+1`); each execution draws new values, uniformly.
    #[serde(default)]
    pub params: Vec<IntRange>,
    /// Where the clock starts: `queries` (every client connected first; connecting is timed
    /// apart) or `connect` (from the first connect, each client querying once connected —
    /// mysqlslap's timing).
    #[serde(default, deserialize_with = "by_name")]
    pub timed_from: TimedFrom,
    /// `rate`, `start_rate`, `arrival`, `slo` (queries a second in all), decoded apart (see
    /// [`super::pacing`]).
    #[serde(skip)]
    pub pace: super::pacing::Pace,
}

/// Where a `queries` step's clock starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimedFrom {
    /// Once every client is connected; connecting is timed apart.
    #[default]
    Queries,
    /// When the clients start connecting; each client queries as soon as it is connected.
    Connect,
}

/// An inclusive range of integers a placeholder is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, expecting = "a table { min = …, max = … }")]
pub struct IntRange {
    pub min: i64,
    pub max: i64,
}

impl IntRange {
    /// A uniform draw from the range.
    fn sample(self, rng: &mut SplitMix64) -> i64 {
        let span = self.max.wrapping_sub(self.min) as u64;
        let off = match span.checked_add(1) {
            Some(n) => rng.below_u64(n),
            None => rng.next_u64(), // the whole i64 range
        };
        self.min.wrapping_add(off as i64)
    }
}

/// Placeholders in `sql` outside quotes and comments: the count of `?`, or the highest `$n`.
pub fn placeholder_count(sql: &str) -> usize {
    let b = sql.as_bytes();
    let (mut i, mut qmarks, mut dollar) = (0, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'?' => qmarks += 1,
            b'$' => {
                let digits: String = b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .map(|c| *c as char)
                    .collect();
                if let Ok(n) = digits.parse::<usize>() {
                    dollar = dollar.max(n);
                    i += digits.len();
                }
            }
            _ => {}
        }
        i += 1;
    }
    qmarks.max(dollar)
}

impl QueriesParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        self.pace.validate()?;
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return at(
                "clients",
                format!(
                    "clients = {} is out of range; use 1 to {MAX_CLIENTS}",
                    self.clients
                ),
            );
        }
        if self.queries.is_empty() {
            return at(
                "queries",
                "queries must list at least one SELECT statement".into(),
            );
        }
        for (i, q) in self.queries.iter().enumerate() {
            self.validate_query(q)
                .map_err(|m| DecodeError::at(KeyPath::root().key("queries").index(i), m))?;
        }
        for (i, r) in self.params.iter().enumerate() {
            if r.min > r.max {
                return Err(DecodeError::at(
                    KeyPath::root().key("params").index(i),
                    format!("min = {} is above max = {}", r.min, r.max),
                ));
            }
        }
        match (self.per_client, self.duration_s) {
            (Some(_), Some(_)) | (None, None) => at(
                "per_client",
                "give exactly one of per_client (operations per client) or duration_s (seconds)"
                    .into(),
            ),
            (Some(n), None) if n == 0 || n > 1_000_000_000 => at(
                "per_client",
                format!("per_client = {n} is out of range; use 1 to 1000000000"),
            ),
            (None, Some(d)) if d == 0 || d > 7 * 86_400 => at(
                "duration_s",
                format!("duration_s = {d} is out of range; use 1 to 604800 (a week)"),
            ),
            (None, Some(d)) if self.warmup_s >= d => at(
                "warmup_s",
                format!(
                    "warmup_s = {} leaves nothing to measure in duration_s = {d}",
                    self.warmup_s
                ),
            ),
            _ => Ok(()),
        }?;
        self.validate_jobs()?;
        if self.timed_from == TimedFrom::Connect {
            if self.duration_s.is_some() {
                return at(
                    "timed_from",
                    "timed_from = \"connect\" times a fixed amount of work, as mysqlslap does: give per_client instead of duration_s".into(),
                );
            }
            if self.warmup_s > 0 {
                return at(
                    "warmup_s",
                    "warmup_s does not apply with timed_from = \"connect\": every second counts, connecting included".into(),
                );
            }
        }
        Ok(())
    }

    /// One of `queries`: one statement of a reading verb, writing only unqualified tables,
    /// with a range in `params` for each placeholder. The error's message.
    fn validate_query(&self, q: &str) -> Result<(), String> {
        let head = q.trim_start().to_ascii_uppercase();
        let verb = head.split_whitespace().next().unwrap_or("");
        if !QUERY_VERBS.contains(&verb) {
            return Err(format!(
                "each query must be one {} statement (schema changes go in a step with kind = \"sql\" or \"ddl\")",
                QUERY_VERBS.join(", ")
            ));
        }
        if verb != "SELECT"
            && let Some(t) = super::sql_file::qualified_table(q)
        {
            return Err(format!(
                "this {verb} names {t} with a database or schema: dbduel writes only into tables of its own database (the study's, made and marked by dbduel, also on a target); name the table without a qualifier"
            ));
        }
        super::sql_text::one_statement(q, KeyPath::root(), "this query").map_err(|e| e.message)?;
        let n = placeholder_count(q);
        if n > self.params.len() {
            return Err(format!(
                "this query has {n} placeholder(s) but params gives {} range(s); add one {{ min = …, max = … }} per placeholder",
                self.params.len()
            ));
        }
        Ok(())
    }

    /// The OS threads serving the clients, however the study named them: `jobs`, or
    /// `threads` as it was called before the `oltp` step's `jobs` named the same thing.
    fn served_by(&self) -> Option<u64> {
        self.jobs.or(self.threads)
    }

    /// `jobs` (or `threads`): from 1 to the clients, in a closed loop whose clients all
    /// connect first.
    fn validate_jobs(&self) -> Result<(), DecodeError> {
        let at = |key: &str, msg: String| Err(DecodeError::at(KeyPath::root().key(key), msg));
        let (key, t) = match (self.jobs, self.threads) {
            (Some(_), Some(_)) => {
                return at(
                    "threads",
                    "jobs and threads name one setting (threads is its older name): remove threads"
                        .into(),
                );
            }
            (Some(t), None) => ("jobs", t),
            (None, Some(t)) => ("threads", t),
            (None, None) => return Ok(()),
        };
        if t == 0 || t > self.clients {
            return at(
                key,
                format!(
                    "{key} = {t} is out of range; use 1 to clients ({}), or leave it out for a thread a client",
                    self.clients
                ),
            );
        }
        if self.pace.rate.is_some() || self.pace.slo.is_some() {
            return at(
                key,
                format!("{key} serves clients in a closed loop: leave out rate and slo (or {key})"),
            );
        }
        if self.timed_from == TimedFrom::Connect {
            return at(
                key,
                format!(
                    "{key} needs every client connected before the clock starts: leave out timed_from = \"connect\" (or {key})"
                ),
            );
        }
        Ok(())
    }
}

struct QueryWorker<'a> {
    session: Box<dyn Session>,
    /// Each query's statement and its placeholder count; empty when the queries go as SQL
    /// text (`text`).
    stmts: Vec<(StmtId, usize)>,
    /// The queries as SQL text, when they are sent unprepared.
    text: &'a [String],
    offset: usize,
    ranges: &'a [IntRange],
    rng: SplitMix64,
    /// Reused parameter buffer: no allocation per query.
    values: Vec<Value>,
}

impl QueryWorker<'_> {
    /// Operation `seq`'s query, with its parameters drawn into `values`.
    fn draw(&mut self, seq: u64) -> (usize, StmtId, usize) {
        let i = (self.offset + seq as usize) % self.stmts.len();
        let (stmt, n) = self.stmts[i];
        for (v, r) in self.values[..n].iter_mut().zip(self.ranges) {
            *v = Value::Int(r.sample(&mut self.rng));
        }
        (i, stmt, n)
    }
}

impl Worker for QueryWorker<'_> {
    fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>) {
        if self.stmts.is_empty() {
            let i = (self.offset + seq as usize) % self.text.len().max(1);
            return match self.text.get(i) {
                Some(sql) => (i, self.session.execute(sql)),
                None => (0, Err(engine::EngineError::new("usage", "no queries"))),
            };
        }
        let (i, stmt, n) = self.draw(seq);
        (i, self.session.run(stmt, &self.values[..n]))
    }

    fn overlapped(&mut self) -> Option<&mut dyn runner::Overlapped> {
        if self.stmts.is_empty() || self.session.overlap().is_none() {
            return None;
        }
        Some(self)
    }
}

/// Only made [`Worker::overlapped`] when its session has an [`engine::Overlap`] and its
/// queries are prepared; without one, each half fails as a usage error.
impl runner::Overlapped for QueryWorker<'_> {
    fn fd(&mut self) -> std::os::fd::RawFd {
        self.session.overlap().map_or(-1, |o| o.fd())
    }

    fn start(&mut self, seq: u64) -> (usize, engine::Result<()>) {
        let (i, stmt, n) = self.draw(seq);
        let Some(o) = self.session.overlap() else {
            return (
                i,
                Err(engine::EngineError::new("usage", "no overlapped session")),
            );
        };
        (i, o.send_run(stmt, &self.values[..n]))
    }

    fn finish(&mut self) -> Option<engine::Result<u64>> {
        self.session.overlap()?.try_finish()
    }
}

impl super::kind::StepKind for QueriesParams {
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        super::pacing::decode_with(v, crate::decode::decode, |p: &mut Self, pace| p.pace = pace)
    }
    fn divides_clients() -> bool {
        true
    }
    fn validate(&self) -> Result<(), DecodeError> {
        QueriesParams::validate(self)
    }
    fn clients(&self) -> u64 {
        self.clients
    }
    fn read_beside(
        &mut self,
        beside: &super::kind::Beside<'_>,
    ) -> Result<(), super::kind::BesideError> {
        for (q, text) in self.queries.iter().enumerate() {
            let at = KeyPath::root().key("queries").index(q);
            super::kind::own_sql_stays_inside(beside, at, text)?;
        }
        Ok(())
    }
    // A query may read no table at all (`SELECT 1`): only one that names one needs it.
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        self.queries.iter().enumerate().find_map(|(j, sql)| {
            let t = named_table(sql, tables)?;
            Some(super::kind::TableNeed::one(
                KeyPath::root().key("queries").index(j),
                format!("reads table {t}"),
            ))
        })
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// The words of a statement outside string literals and `--` comments: identifiers with
/// their qualifiers (`main.user_logs`), quotes around identifiers removed.
fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = sql.chars().peekable();
    let mut flush = |word: &mut String| {
        if !word.is_empty() {
            out.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                flush(&mut word);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                flush(&mut word);
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' | '`' => {}
            c if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$' => word.push(c),
            _ => flush(&mut word),
        }
    }
    flush(&mut word);
    out
}

/// The first of `tables` that `sql` names (in any case, alone or qualified).
fn named_table<'a>(sql: &str, tables: &'a [String]) -> Option<&'a str> {
    words(sql).iter().find_map(|w| {
        w.split('.').find_map(|part| {
            tables
                .iter()
                .find(|t| t.eq_ignore_ascii_case(part))
                .map(String::as_str)
        })
    })
}

pub fn run(p: &QueriesParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let names: Vec<String> = (1..=p.queries.len()).map(|i| format!("q{i}")).collect();
    let queries = &p.queries;
    let from_connect = p.timed_from == TimedFrom::Connect;
    // mysqlslap's shape sends each query as SQL text: no prepare round trip per client.
    let as_text = from_connect && p.params.is_empty();
    if let Some(slo) = &p.pace.slo {
        return run_slo(p, slo, ctx, &names, (from_connect, as_text));
    }
    let out = run_clients(
        p,
        ctx,
        &names,
        (from_connect, as_text),
        &p.pace.pacing(1.0),
        0,
    )?;
    let qps = per_s(out.ops, out.measured_s);
    let lat = Latency::of(&out.all);
    let errors: u64 = out.errors.iter().map(|e| e.count).sum();
    if out.ops == 0 && errors > 0 {
        let first = &out.errors[0];
        return Err(StepError::Check(format!(
            "every query failed ({errors} errors); first: {}",
            first.first_message
        )));
    }
    let mut s = summary(format!("{}, {} clients", ctx.title("queries"), p.clients));
    s.elapsed_s = Some(out.measured_s);
    s.rows = Some(out.rows);
    s.ops_per_s = Some(qps);
    s.latency_us = lat;
    s.errors = Some(errors);
    s.metrics = query_metrics(&out, qps, lat, from_connect);
    s.metrics.extend(connect_metrics(&out.connect));
    if errors > 0 {
        s.metrics.push(Metric::new(
            "errors",
            "errors",
            errors as f64,
            Unit::Count,
            Better::Lower,
        ));
    }
    s.note = Some(step_note(p, &out, qps, errors));
    add_timing_notes(&mut s.note, p, from_connect, as_text);
    let cpu_us_per_op = if out.ops_all > 0 {
        out.process_cpu_s * 1e6 / out.ops_all as f64
    } else {
        0.0
    };
    // dbduel's cost, not the engine's (except an embedded engine's, which runs inside it):
    // shown beside the figures, never judged.
    s.metrics.push(Metric::new(
        "cpu_us_per_query",
        "dbduel CPU/query",
        cpu_us_per_op,
        Unit::Micros,
        Better::None,
    ));
    let per_query: Vec<_> = out
        .op_names
        .iter()
        .zip(queries)
        .zip(&out.per_op)
        .map(|((name, sql), h)| {
            serde_json::json!({ "op": name, "sql": sql, "ops": h.len(), "latency_us": Latency::of(h) })
        })
        .collect();
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "clients": p.clients,
            "threads": p.served_by().unwrap_or(p.clients),
            "loop": if p.pace.is_open() { "open" } else { "closed" },
            "pacing": p.pace.details(),
            "late": out.late,
            "dropped": out.dropped,
            "unstarted": out.unstarted,
            "per_client": p.per_client,
            "duration_s": p.duration_s,
            "warmup_s": p.warmup_s,
            "timed_from": p.timed_from,
            "sent_as": if as_text { "text" } else { "prepared" },
            "connect": out.connect,
            "params": p.params,
            "measured_s": out.measured_s,
            "ops": out.ops,
            "rows": out.rows,
            "ops_per_s": qps,
            "latency_us": lat,
            "per_query": per_query,
            "errors": out.errors,
            "dbduel_cpu_s": out.process_cpu_s,
            "dbduel_cpu_us_per_op": cpu_us_per_op,
        }),
        seconds: out.seconds.count,
        interrupted: out.interrupted,
    })
}

/// The step's note: its failures, or how it was paced and, in an open loop, whether the
/// engine kept the rate.
fn step_note(p: &QueriesParams, out: &runner::RunOutcome, qps: f64, errors: u64) -> String {
    let mut note = if errors > 0 {
        format!("{errors} queries failed; see the step's JSON for kinds")
    } else if p.pace.is_open() {
        p.pace.loop_note("queries/s")
    } else {
        "closed loop: latency from each query's actual start".into()
    };
    let target = p
        .pace
        .target_mean(1.0, p.warmup_s as f64, p.duration_s.unwrap_or(0) as f64);
    let short = super::pacing::shortfall(
        "",
        target,
        qps,
        out.late,
        out.dropped,
        out.unstarted,
        "queries/s",
    );
    if let Some(short) = short {
        note.push_str("; ");
        note.push_str(short.trim_start());
    }
    note
}

/// `slo`: the search's probes, each a run of the step's clients at one rate (the first
/// closed-loop), and the step's figures of it.
fn run_slo(
    p: &QueriesParams,
    slo: &super::slo::Slo,
    ctx: &StepCtx<'_>,
    names: &[String],
    timing: (bool, bool),
) -> Result<StepOutput, StepError> {
    super::slo::unsharded(ctx)?;
    let found = super::slo::search(slo, |rate, tick_base| {
        let pacing = p.pace.at(rate).pacing(1.0);
        let out = run_clients(p, ctx, names, timing, &pacing, tick_base)?;
        Ok(super::slo::Measured::of(out, 1.0, tick_base))
    })?;
    let title = format!("{}, {} clients", ctx.title("queries"), p.clients);
    Ok(super::slo::output(
        title,
        slo,
        "queries/s",
        p.pace.details(),
        found,
    ))
}

/// The step's first figures: (from the first connect) its seconds, the queries and their rate,
/// and the latency percentiles.
fn query_metrics(
    out: &runner::RunOutcome,
    qps: f64,
    lat: Option<Latency>,
    from_connect: bool,
) -> Vec<Metric> {
    let mut m = Vec::new();
    if from_connect {
        // mysqlslap's figure: from the first connect to the last query's end.
        m.push(Metric::new(
            "elapsed_s",
            "seconds",
            out.measured_s,
            Unit::Seconds,
            Better::Lower,
        ));
    }
    m.extend([
        Metric::new("ops", "queries", out.ops as f64, Unit::Count, Better::None),
        Metric::new(
            "ops_per_s",
            "queries/s",
            qps,
            Unit::PerSecond,
            Better::Higher,
        )
        .with_role(Role::Rate)
        .derived(Derived::Rate {
            count: "ops".into(),
        }),
    ]);
    if let Some(l) = lat {
        for key in ["p50", "p95", "p99", "max"] {
            m.push(super::sweep::latency_metric(
                &format!("{key}_us"),
                key,
                &l,
                key,
                None,
            ));
        }
    }
    m
}

/// Run the clients, each querying in turn (prepared, or as SQL text with `as_text`), the clock
/// started at the first connect (`from_connect`) or once all are connected, paced by
/// `pacing`; its seconds go to the step's file from `tick_base`.
fn run_clients(
    p: &QueriesParams,
    ctx: &StepCtx<'_>,
    names: &[String],
    (from_connect, as_text): (bool, bool),
    pacing: &runner::Pacing,
    tick_base: u64,
) -> Result<runner::RunOutcome, StepError> {
    let spec = RunSpec {
        clients: p.clients as usize,
        bound: match (p.per_client, p.duration_s) {
            (Some(n), _) => Bound::PerClient(n),
            (None, Some(d)) => Bound::Duration(Duration::from_secs(d)),
            (None, None) => Bound::PerClient(1),
        },
        warmup_s: p.warmup_s,
        pacing: pacing.clone(),
        seed: 0,
        team: ctx.team.cloned(),
        threads: p.served_by().map(|t| t as usize),
    };
    ctx.progress
        .status(&format!("{} clients connecting", p.clients));
    let engine = ctx.engine;
    let queries = &p.queries;
    let ranges = &p.params[..];
    let make = |client: usize| -> engine::Result<Box<dyn Worker + '_>> {
        let mut session = engine.connect()?;
        let stmts = if as_text {
            Vec::new()
        } else {
            queries
                .iter()
                .map(|q| {
                    let sql = engine.dialect().placeholders(q);
                    Ok((session.prepare(&sql)?, placeholder_count(q)))
                })
                .collect::<engine::Result<Vec<_>>>()?
        };
        Ok(Box::new(QueryWorker {
            session,
            stmts,
            text: queries,
            offset: client,
            ranges,
            rng: SplitMix64::stream(0x7175_6572_7931, client as u64),
            values: vec![Value::Int(0); ranges.len()],
        }))
    };
    let progress = ctx.progress;
    let clock = if from_connect {
        Clock::FirstConnect
    } else {
        Clock::AllConnected
    };
    let out = runner::run_clocked(&spec, clock, names, make, ctx.stop, |iv| {
        ctx.seconds.append_shifted(iv, tick_base, None);
        progress.status(&format!("t={:.0}s {:.0} queries/s", iv.t_s, iv.ops_per_s));
    })?;
    Ok(out)
}

/// `n` over `secs` seconds, a second; 0 when nothing was measured.
fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

/// Add to the step's `note` how it was timed, and its random parameters.
fn add_timing_notes(
    note: &mut Option<String>,
    p: &QueriesParams,
    from_connect: bool,
    as_text: bool,
) {
    let timing = match (from_connect, as_text) {
        (false, _) => "clients connect before the clock starts, timed apart",
        (true, true) => {
            "timed from the first connect, each client querying once connected, queries sent as SQL text (mysqlslap's timing)"
        }
        (true, false) => {
            "timed from the first connect, each client querying once connected (mysqlslap's timing)"
        }
    };
    if let Some(n) = note.as_mut() {
        n.push_str("; ");
        n.push_str(timing);
        if let Some(t) = p.served_by().filter(|&t| t < p.clients) {
            n.push_str(&format!(
                "; the {} clients served from {t} thread(s), one query in flight on each connection",
                p.clients
            ));
        }
    }
    if !p.params.is_empty() {
        let ranges: Vec<String> = p
            .params
            .iter()
            .enumerate()
            .map(|(i, r)| format!("#{} uniform in [{}, {}]", i + 1, r.min, r.max))
            .collect();
        if let Some(n) = note.as_mut() {
            n.push_str(&format!("; random parameters: {}", ranges.join(", ")));
        }
    }
}

/// The connect phase's figures: seconds to open every client, connects a second, and the
/// slowest client's connect.
fn connect_metrics(c: &runner::ConnectOutcome) -> Vec<Metric> {
    let mut m = vec![
        Metric::new(
            "connect_s",
            "connect all",
            c.all_s,
            Unit::Seconds,
            Better::Lower,
        ),
        Metric::new(
            "connects_per_s",
            "connects/s",
            c.per_s,
            Unit::PerSecond,
            Better::Higher,
        ),
    ];
    if let Some(l) = c.latency_us {
        m.push(Metric::new(
            "connect_max_us",
            "slowest connect",
            l.max as f64,
            Unit::Micros,
            Better::Lower,
        ));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn queries_name_tables_outside_literals_and_comments() {
        let t = tables(&["user_logs"]);
        assert_eq!(
            named_table("SELECT COUNT(*) FROM User_Logs WHERE id > 5", &t),
            Some("user_logs")
        );
        assert_eq!(
            named_table("SELECT x FROM \"main\".\"user_logs\"", &t),
            Some("user_logs")
        );
        assert_eq!(named_table("SELECT 1", &t), None);
        assert_eq!(named_table("SELECT 'user_logs'", &t), None);
        assert_eq!(named_table("SELECT 1 -- from user_logs", &t), None);
        assert_eq!(named_table("SELECT user_logs_id FROM other", &t), None);
        let t = tables(&["sbtest1", "sbtest2"]);
        assert_eq!(
            named_table("SELECT c FROM sbtest2 WHERE id = $1", &t),
            Some("sbtest2")
        );
    }

    fn params(queries: &[&str], params: Vec<IntRange>) -> QueriesParams {
        QueriesParams {
            clients: 1,
            queries: queries.iter().map(|q| q.to_string()).collect(),
            per_client: Some(1),
            duration_s: None,
            warmup_s: 0,
            params,
            timed_from: TimedFrom::Queries,
            pace: Default::default(),
            jobs: None,
            threads: None,
        }
    }

    #[test]
    fn jobs_serve_a_closed_loop_of_connected_clients() {
        let with = |jobs, f: fn(&mut QueriesParams)| {
            let mut p = params(&["SELECT 1"], vec![]);
            p.clients = 8;
            p.jobs = Some(jobs);
            f(&mut p);
            p.validate()
                .map_err(|e| format!("{:?}: {}", e.path, e.message))
        };
        assert!(with(2, |_| {}).is_ok());
        assert!(with(8, |_| {}).is_ok());
        for bad in [0, 9] {
            let e = with(bad, |_| {}).unwrap_err();
            assert!(
                e.contains("jobs = ") && e.contains("1 to clients (8)"),
                "{e}"
            );
        }
        // `threads`, the older name, is taken and its errors name it; both at once are not
        let e = with(9, |p| p.threads = p.jobs.take()).unwrap_err();
        assert!(e.contains("threads = 9"), "{e}");
        let mut p = params(&["SELECT 1"], vec![]);
        p.clients = 8;
        p.threads = Some(2);
        assert!(p.validate().is_ok());
        assert_eq!(p.served_by(), Some(2));
        let e = with(2, |p| p.threads = Some(2)).unwrap_err();
        assert!(e.contains("remove threads"), "{e}");
        let e = with(2, |p| {
            p.pace.rate = Some(super::super::pacing::Rate::Fixed(10.0))
        })
        .unwrap_err();
        assert!(e.contains("closed loop"), "{e}");
        let e = with(2, |p| p.timed_from = TimedFrom::Connect).unwrap_err();
        assert!(e.contains("timed_from"), "{e}");
    }

    #[test]
    fn placeholders_are_counted_outside_quotes_and_comments() {
        assert_eq!(placeholder_count("SELECT 1"), 0);
        assert_eq!(placeholder_count("SELECT c FROM t WHERE id = ?"), 1);
        assert_eq!(
            placeholder_count("SELECT c FROM t WHERE id BETWEEN ? AND ?"),
            2
        );
        assert_eq!(
            placeholder_count("SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
            1
        );
        assert_eq!(placeholder_count("SELECT $2, $1, $2"), 2);
        assert_eq!(placeholder_count("SELECT '?', \"a?\", `b?` FROM t"), 0);
        assert_eq!(placeholder_count("SELECT 'it''s ?' -- why?\nFROM t"), 0);
        assert_eq!(placeholder_count("SELECT /* ? $9 */ ? FROM t"), 1);
    }

    #[test]
    fn writes_are_queries_too_but_only_into_dbduels_own_tables() {
        let r = IntRange { min: 1, max: 10 };
        for ok in [
            "INSERT INTO orders (id, amount) VALUES (?, 5)",
            "UPDATE orders SET amount = amount + 1 WHERE id = ?",
            "DELETE FROM orders WHERE id = ?",
            "REPLACE INTO orders VALUES (?, 1)",
            "select * from main.orders where id = ?",
        ] {
            assert!(params(&[ok], vec![r]).validate().is_ok(), "{ok}");
        }
        for (bad, says) in [
            ("DROP TABLE orders", "each query must be one SELECT, INSERT"),
            ("TRUNCATE orders", "each query must be one SELECT, INSERT"),
            ("UPDATE prod.orders SET a = 1", "names table prod.orders"),
            ("INSERT INTO `x`.`y` VALUES (1)", "names table x.y with"),
            ("DELETE FROM orders; DROP TABLE t", "holds a `;`"),
        ] {
            let e = params(&[bad], vec![]).validate().expect_err(bad);
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn every_placeholder_needs_a_range() {
        let r = IntRange { min: 1, max: 10 };
        assert!(params(&["SELECT 1"], vec![]).validate().is_ok());
        assert!(params(&["SELECT ?"], vec![r]).validate().is_ok());
        assert!(
            params(&["SELECT 1", "SELECT ?"], vec![r])
                .validate()
                .is_ok()
        );
        let e = params(&["SELECT 1", "SELECT ?, ?"], vec![r])
            .validate()
            .map_err(|e| format!("{}: {}", e.path, e.message))
            .unwrap_err();
        assert!(
            e.contains("queries[1]") && e.contains("2 placeholder(s)"),
            "{e}"
        );
        let e = params(&["SELECT $1"], vec![IntRange { min: 5, max: 4 }])
            .validate()
            .map_err(|e| format!("{}: {}", e.path, e.message))
            .unwrap_err();
        assert!(e.contains("params[0]") && e.contains("above max"), "{e}");
    }

    #[test]
    fn timed_from_connect_needs_a_count_and_no_warmup() {
        let err = |p: &QueriesParams| {
            p.validate()
                .map_err(|e| format!("{}: {}", e.path, e.message))
                .unwrap_err()
        };
        let mut p = params(&["SELECT 1"], vec![]);
        p.timed_from = TimedFrom::Connect;
        assert!(p.validate().is_ok());
        p.warmup_s = 1;
        assert!(err(&p).starts_with("warmup_s: warmup_s does not apply"));
        p.warmup_s = 0;
        p.per_client = None;
        p.duration_s = Some(5);
        assert!(err(&p).starts_with("timed_from: timed_from = \"connect\" times a fixed amount"));
    }

    #[test]
    fn draws_cover_the_range_and_stay_inside_it() {
        let mut rng = SplitMix64::stream(1, 2);
        let r = IntRange { min: -3, max: 3 };
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            let v = r.sample(&mut rng);
            assert!((-3..=3).contains(&v), "{v}");
            seen[(v + 3) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
        assert_eq!(IntRange { min: 7, max: 7 }.sample(&mut rng), 7);
        let whole = IntRange {
            min: i64::MIN,
            max: i64::MAX,
        };
        let _ = whole.sample(&mut rng); // no overflow
    }
}
