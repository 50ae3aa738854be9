//! `script`: clients running pgbench-style scripts — SQL statements with `:var` bind
//! parameters and meta-commands (`\set` with pgbench's expressions and random functions,
//! `\sleep`, `\if`/`\elif`/`\else`/`\endif`, `\gset`) — drawn by weight, closed loop or paced (`rate`). Each
//! script is parsed once, when the study is read, into a small program (`parse.rs`); each
//! client interprets it with its own variables (`interp.rs`), preparing each statement once.
//! One script run is one timed operation, as pgbench's "transaction".
//!
//! This file owns the step: its parameters, reading the script files, and its figures.

pub mod builtin;
pub mod expr;
pub mod exprparse;
pub mod func;
pub mod interp;
pub mod parse;
pub mod sql;
pub mod vars;

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::sweep::{self, LevelRun, MAX_CLIENTS, SweepSpec, Threads};
use crate::dataset::rng::SplitMix64;
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{self, Session};
use crate::metrics::Latency;
use crate::results::{Better, Derived, Metric, Role, Unit};
use crate::runner::{self, Bound, RunSpec, Worker};
use expr::Val;
use interp::{Client, Program, StmtStats};
use parse::{Script, ScriptError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vars::{Names, Vars};

/// How a step names a built-in script: `builtin:tpcb-like`.
pub const BUILTIN: &str = "builtin:";

/// Variables every script may read without setting them.
pub const PREDEFINED: &[&str] = &["scale", "client_id", "default_seed", "random_seed"];

/// The name `default_seed`, which one-argument `hash()` and two-argument `permute()` read.
pub(crate) fn default_seed_name() -> &'static str {
    "default_seed"
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptParams {
    /// Script files, relative to the study file, each with an optional `@weight` (default
    /// 1); `builtin:NAME` for a built-in.
    pub scripts: Vec<String>,
    /// Concurrent clients: one count, or a list to sweep (each level for `duration_s`).
    pub clients: Threads,
    /// Script runs per client (one level only; give this or `duration_s`).
    #[serde(default)]
    pub per_client: Option<u64>,
    /// Seconds each level runs (give this or `per_client`).
    #[serde(default)]
    pub duration_s: Option<u64>,
    /// Seconds at the start of each level not counted.
    #[serde(default)]
    pub warmup_s: u64,
    /// `:scale`, as pgbench's `-s` (the built-ins' tables have 100,000 accounts per unit).
    #[serde(default = "one")]
    pub scale: i64,
    /// Variables every client starts with, as pgbench's `-D NAME=VALUE`: integers, floats,
    /// booleans or strings.
    #[serde(default)]
    pub vars: BTreeMap<String, toml::Value>,
    /// Seed of the clients' random streams (`random()` and friends, the script drawn) and
    /// `:default_seed`.
    #[serde(default)]
    pub seed: u64,
    /// Times a script run that failed with a serialization failure or a deadlock is run
    /// again from its start, with the same random draws (pgbench's `--max-tries` less one);
    /// 0: never.
    #[serde(default)]
    pub retries: u32,
    /// The scripts read and parsed ([`ScriptParams::load`]), shared by every run of the step.
    #[serde(skip)]
    pub loaded: Option<Arc<Loaded>>,
    /// `rate`, `start_rate`, `arrival`, `slo` (script runs a second), decoded apart (see
    /// [`super::pacing`]).
    #[serde(skip)]
    pub pace: super::pacing::Pace,
}

fn one() -> i64 {
    1
}

/// A step's scripts, parsed.
#[derive(Debug)]
pub struct Loaded {
    pub scripts: Vec<Script>,
    /// Each script as the step names it (weight left out): the op names.
    pub labels: Vec<String>,
    pub weights: Vec<u64>,
    pub names: Names,
    /// Every client's variables before its first script.
    pub initial: Vars,
}

/// Why a step's scripts could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    /// About the study's own text: the key (relative to the step) and what is wrong.
    #[error("{1}")]
    At(KeyPath, String),
    /// In a script, located there.
    #[error("{0}")]
    Script(#[from] ScriptError),
}

/// `new_order.sql@5` as (path, weight); the weight is 1 when left out.
pub fn split_weight(entry: &str) -> Result<(&str, u64), String> {
    match entry.rsplit_once('@') {
        Some((path, w)) if !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()) => w
            .parse::<u64>()
            .ok()
            .filter(|w| *w <= 1_000_000)
            .map(|w| (path, w))
            .ok_or_else(|| format!("weight @{w} is out of range; use 0 to 1000000")),
        _ => Ok((entry, 1)),
    }
}

impl ScriptParams {
    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if self.scripts.is_empty() {
            return at(
                "scripts",
                "scripts must list at least one script file (or builtin:tpcb-like)".into(),
            );
        }
        if self.retries > 1000 {
            return at("retries", "retries must be at most 1000".into());
        }
        self.validate_scripts()?;
        let levels = self.clients.levels();
        if levels.is_empty() {
            return at(
                "clients",
                "clients must list at least one client count".into(),
            );
        }
        if let Some(i) = levels.iter().position(|t| !(1..=MAX_CLIENTS).contains(t)) {
            return Err(DecodeError::at(
                KeyPath::root().key("clients"),
                format!(
                    "{} clients is out of range; use 1 to {MAX_CLIENTS}",
                    levels[i]
                ),
            ));
        }
        match (self.per_client, self.duration_s) {
            (Some(_), Some(_)) | (None, None) => at(
                "per_client",
                "give exactly one of per_client (script runs per client) or duration_s (seconds)".into(),
            ),
            (Some(_), None) if levels.len() > 1 => at(
                "per_client",
                "a sweep of clients runs each level for duration_s seconds: give duration_s instead of per_client".into(),
            ),
            (Some(n), None) if n == 0 || n > 1_000_000_000 => {
                at("per_client", format!("per_client = {n} is out of range; use 1 to 1000000000"))
            }
            (None, Some(d)) => sweep::check_levels(&self.clients, d, self.warmup_s),
            _ => Ok(()),
        }?;
        self.pace.validate()?;
        if self.per_client.is_some() && self.warmup_s > 0 {
            return at(
                "warmup_s",
                "warmup_s needs duration_s: with per_client every script run counts".into(),
            );
        }
        if self.scale < 1 {
            return at(
                "scale",
                format!("scale = {} is out of range; use 1 or more", self.scale),
            );
        }
        self.validate_vars()?;
        Ok(())
    }

    /// Each `scripts` entry: a path (or a built-in that exists) and its weight, one weight
    /// at least above 0.
    fn validate_scripts(&self) -> Result<(), DecodeError> {
        let mut total = 0;
        for (i, s) in self.scripts.iter().enumerate() {
            let key = KeyPath::root().key("scripts").index(i);
            let (path, w) = split_weight(s).map_err(|m| DecodeError::at(key.clone(), m))?;
            if let Some(name) = path.strip_prefix(BUILTIN)
                && builtin::get(name).is_none()
            {
                return Err(DecodeError::at(
                    key,
                    format!(
                        "no built-in script `{name}`; built-ins are: {}",
                        builtin::NAMES.join(", ")
                    ),
                ));
            }
            if path.is_empty() {
                return Err(DecodeError::at(key, "a script entry needs a file path"));
            }
            total += w;
        }
        if total == 0 {
            return Err(DecodeError::at(
                KeyPath::root().key("scripts"),
                "every script has weight 0: give one a weight of at least 1",
            ));
        }
        Ok(())
    }

    /// Each of `vars`: a plain name, a scalar value.
    fn validate_vars(&self) -> Result<(), DecodeError> {
        for (name, v) in &self.vars {
            let key = KeyPath::root().key("vars").key(name);
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(DecodeError::at(
                    key,
                    "a variable name is letters, digits and `_`",
                ));
            }
            if !matches!(
                v,
                toml::Value::Integer(_)
                    | toml::Value::Float(_)
                    | toml::Value::Boolean(_)
                    | toml::Value::String(_)
            ) {
                return Err(DecodeError::at(
                    key,
                    "a variable's value is an integer, a float, a boolean or a string",
                ));
            }
        }
        Ok(())
    }

    /// Read and parse the scripts, paths relative to `base` (the study file's directory).
    /// With `for_target` (some contender runs on someone else's server) every statement is
    /// checked as a `sql` step's are there: nothing outside dbduel's own database.
    pub fn load(&mut self, base: &Path, for_target: Option<&str>) -> Result<(), LoadError> {
        let loaded = self.read(base)?;
        if let Some(contender) = for_target {
            for script in &loaded.scripts {
                for st in &script.stmts {
                    if let Some(why) = super::sql_reach::outside_own_database(&st.text) {
                        return Err(LoadError::Script(ScriptError {
                            file: script.file.clone(),
                            line: st.line,
                            col: st.col,
                            message: super::sql_reach::on_target(&why, contender),
                        }));
                    }
                }
            }
        }
        self.loaded = Some(Arc::new(loaded));
        Ok(())
    }

    fn read(&self, base: &Path) -> Result<Loaded, LoadError> {
        let mut names = Names::default();
        for n in PREDEFINED {
            names.assign(n);
        }
        for n in self.vars.keys() {
            names.assign(n);
        }
        let mut scripts = Vec::new();
        let (mut labels, mut weights) = (Vec::new(), Vec::new());
        for (i, entry) in self.scripts.iter().enumerate() {
            let key = KeyPath::root().key("scripts").index(i);
            let (path, w) = split_weight(entry).map_err(|m| LoadError::At(key.clone(), m))?;
            let (file, text) = match path.strip_prefix(BUILTIN) {
                Some(name) => (path.to_string(), builtin::get(name).unwrap_or_default()),
                None => {
                    let full = base.join(path);
                    let text = std::fs::read_to_string(&full).map_err(|e| {
                        LoadError::At(
                            key.clone(),
                            format!("cannot read script {}: {e}", full.display()),
                        )
                    })?;
                    (full.display().to_string(), text)
                }
            };
            scripts.push(parse::parse(&file, i, &text, &mut names)?);
            labels.push(path.to_string());
            weights.push(w);
        }
        if let Some((name, place)) = names.never_assigned() {
            return Err(LoadError::Script(ScriptError {
                file: scripts
                    .get(place.script)
                    .map_or(String::new(), |s| s.file.clone()),
                line: place.line,
                col: place.col,
                message: format!(
                    "unknown variable `{name}`: no \\set or \\gset gives it a value; set it, or give it in the step's vars (predefined: {})",
                    PREDEFINED.join(", ")
                ),
            }));
        }
        let initial = self.initial(&names);
        Ok(Loaded {
            scripts,
            labels,
            weights,
            names,
            initial,
        })
    }

    fn initial(&self, names: &Names) -> Vars {
        let mut v = Vars::new(names.len());
        let mut put = |name: &str, val: Val| {
            if let Some(s) = names.get(name) {
                v.set(s, val);
            }
        };
        put("scale", Val::Int(self.scale));
        put("default_seed", Val::Int(self.seed as i64));
        put("random_seed", Val::Int(self.seed as i64));
        for (name, val) in &self.vars {
            let Some(slot) = names.get(name) else {
                continue;
            };
            match val {
                toml::Value::Integer(i) => v.set(slot, Val::Int(*i)),
                toml::Value::Float(f) => v.set(slot, Val::Double(*f)),
                toml::Value::Boolean(b) => v.set(slot, Val::Bool(*b)),
                toml::Value::String(s) => v.set_text(slot, s),
                _ => {}
            }
        }
        v
    }

    /// The parsed scripts: loaded with the study, or read now relative to the working
    /// directory.
    fn scripts(&self) -> Result<Arc<Loaded>, StepError> {
        match &self.loaded {
            Some(l) => Ok(l.clone()),
            None => self
                .read(Path::new(""))
                .map(Arc::new)
                .map_err(|e| StepError::Check(e.to_string())),
        }
    }
}

impl super::kind::StepKind for ScriptParams {
    // Scripts run on every contender: checked for a target's when there is one.
    fn read_beside(
        &mut self,
        beside: &super::kind::Beside<'_>,
    ) -> Result<(), super::kind::BesideError> {
        use super::kind::BesideError;
        self.load(beside.base, beside.on_target)
            .map_err(|e| match e {
                LoadError::At(path, message) => BesideError::At(path, message),
                LoadError::Script(e) => BesideError::In {
                    file: e.file,
                    line: e.line,
                    col: e.col,
                    message: e.message,
                },
            })
    }
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        super::pacing::decode_with(v, crate::decode::decode, |p: &mut Self, pace| p.pace = pace)
    }
    fn divides_clients() -> bool {
        true
    }
    fn validate(&self) -> Result<(), DecodeError> {
        ScriptParams::validate(self)
    }
    fn clients(&self) -> u64 {
        self.clients.max()
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// One client: its interpreter, the scripts' weights, and where its per-statement figures go
/// when it ends.
struct ScriptWorker<'a> {
    client: Client<'a>,
    /// Running totals of the weights, for drawing a script.
    cumulative: &'a [u64],
    sink: &'a Mutex<Vec<Vec<StmtStats>>>,
}

impl Worker for ScriptWorker<'_> {
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let s = match self.cumulative {
            [_] => 0,
            all => {
                let total = all.last().copied().unwrap_or(1).max(1);
                let r = self.client.rng().below_u64(total);
                all.iter().position(|&c| c > r).unwrap_or(0)
            }
        };
        (s, self.client.run_script(s))
    }
}

impl Drop for ScriptWorker<'_> {
    fn drop(&mut self) {
        // Once per client at its end, never per operation.
        if let Ok(mut all) = self.sink.lock() {
            for (into, from) in all.iter_mut().zip(&self.client.stats) {
                for (a, b) in into.iter_mut().zip(from) {
                    a.merge(b);
                }
            }
        }
    }
}

pub fn run(p: &ScriptParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let loaded = p.scripts()?;
    let engine = ctx.engine;
    let dialect = engine.dialect();
    let texts: Vec<Vec<String>> = loaded
        .scripts
        .iter()
        .map(|s| s.stmts.iter().map(|st| st.bound.render(dialect)).collect())
        .collect();
    let program = Program {
        scripts: &loaded.scripts,
        names: &loaded.names,
        texts: &texts,
        initial: &loaded.initial,
        keeps_rows: engine.keeps_rows(),
    };
    let cumulative: Vec<u64> = loaded
        .weights
        .iter()
        .scan(0u64, |t, w| {
            *t += w;
            Some(*t)
        })
        .collect();
    let sink = Mutex::new(
        loaded
            .scripts
            .iter()
            .map(|s| (0..s.stmts.len()).map(|_| StmtStats::new()).collect())
            .collect::<Vec<Vec<StmtStats>>>(),
    );
    let warmup = Duration::from_secs(p.warmup_s);
    let make = |li: usize, client: usize| -> engine::Result<Box<dyn Worker + '_>> {
        let session: Box<dyn Session> = engine.connect()?;
        let rng = SplitMix64::stream(p.seed ^ 0x5c21_9700 ^ li as u64, client as u64);
        Ok(Box::new(ScriptWorker {
            client: Client::new(&program, session, client, rng, warmup).retrying(p.retries),
            cumulative: &cumulative,
            sink: &sink,
        }))
    };
    // A failure names the contender beside the script's file:line and the engine's words.
    let located = |e| match e {
        StepError::Check(m) => StepError::Check(format!("contender {}: {m}", ctx.contender)),
        e => e,
    };
    if let Some(slo) = &p.pace.slo {
        let spec = level_spec(p, &loaded.labels);
        let title = ctx.title(&format!("scripts {}", loaded.labels.join(", ")));
        return sweep::search(ctx, &spec, &p.pace, slo, 1.0, title, "script runs/s", make)
            .map_err(located);
    }
    let (levels, seconds, interrupted) =
        run_levels(p, ctx, &loaded.labels, &make).map_err(located)?;
    let stats = sink.into_inner().unwrap_or_default();
    Ok(output(
        p,
        ctx,
        &loaded,
        &levels,
        &stats,
        seconds,
        interrupted,
    ))
}

type Make<'m> = dyn Fn(usize, usize) -> engine::Result<Box<dyn Worker + 'm>> + Sync + 'm;

/// The step's levels as a sweep runs them (`duration_s` each).
fn level_spec<'a>(p: &ScriptParams, names: &'a [String]) -> SweepSpec<'a> {
    SweepSpec {
        levels: p.clients.levels(),
        duration_s: p.duration_s.unwrap_or(1),
        warmup_s: p.warmup_s,
        names,
        what: "script runs",
        pacing: p.pace.pacing(1.0),
    }
}

/// Run the levels: a sweep for `duration_s`, or one level of `per_client` script runs.
fn run_levels<'m>(
    p: &ScriptParams,
    ctx: &StepCtx<'_>,
    names: &[String],
    make: &Make<'m>,
) -> Result<(Vec<LevelRun>, u64, bool), StepError> {
    if p.duration_s.is_some() {
        let spec = level_spec(p, names);
        let swept = sweep::run(ctx, &spec, make)?;
        return Ok((swept.levels, swept.seconds, swept.interrupted));
    }
    let threads = p.clients.max();
    let spec = RunSpec {
        clients: threads as usize,
        bound: Bound::PerClient(p.per_client.unwrap_or(1)),
        warmup_s: 0,
        pacing: p.pace.pacing(1.0),
        seed: 0,
        team: ctx.team.cloned(),
        threads: None,
    };
    ctx.progress
        .status(&format!("{threads} clients connecting"));
    let progress = ctx.progress;
    let out = runner::run_closed(
        &spec,
        names,
        |c| make(0, c),
        ctx.stop,
        |iv| {
            ctx.seconds.append(iv);
            progress.status(&format!(
                "t={:.0}s {:.0} script runs/s",
                iv.t_s, iv.ops_per_s
            ));
        },
    )?;
    if let Some((n, first)) = out.all_failed() {
        return Err(StepError::Check(format!(
            "every script run failed ({n} errors); first: {first}"
        )));
    }
    let interrupted = out.interrupted;
    let seconds = out.seconds.count;
    Ok((
        vec![LevelRun {
            threads,
            out,
            disk: Vec::new(),
        }],
        seconds,
        interrupted,
    ))
}

/// A level's script runs a second, overall and per script.
fn rates(l: &LevelRun) -> (f64, Vec<f64>) {
    let s = l.out.measured_s;
    let per = |n: u64| if s > 0.0 { n as f64 / s } else { 0.0 };
    (
        l.rate(),
        l.out.per_op.iter().map(|h| per(h.len())).collect(),
    )
}

fn output(
    p: &ScriptParams,
    ctx: &StepCtx<'_>,
    loaded: &Loaded,
    levels: &[LevelRun],
    stats: &[Vec<StmtStats>],
    seconds: u64,
    interrupted: bool,
) -> StepOutput {
    let best_i = sweep::best(levels);
    let best = &levels[best_i];
    let (best_tps, best_per) = rates(best);
    let errors: u64 = levels.iter().map(|l| l.out.error_count()).sum();
    let scripts = loaded.labels.join(", ");
    let mut s = summary(ctx.title(&format!("scripts {scripts}")));
    s.elapsed_s = Some(levels.iter().map(|l| l.out.measured_s).sum());
    s.ops_per_s = Some(best_tps);
    s.latency_us = best.latency();
    s.rows = Some(levels.iter().map(|l| l.out.rows).sum());
    s.errors = Some(errors);
    s.metrics = figures(levels, best, &best_per, &loaded.labels, errors);
    let mut notes = vec![format!(
        "{}: a script run's latency is from {}, \\sleep included; TPS counts script runs{}",
        p.pace.loop_note("script runs/s"),
        if p.pace.is_open() {
            "its scheduled start to its last command's end"
        } else {
            "its first command to its last"
        },
        if p.warmup_s > 0 {
            format!("; the first {} s of each level not counted", p.warmup_s)
        } else {
            String::new()
        }
    )];
    if errors > 0 {
        notes.push(format!(
            "{errors} script runs failed; see the step's JSON for kinds and lines"
        ));
    }
    let spec = level_spec(p, &loaded.labels);
    notes.extend(
        sweep::pace_notes(&p.pace, 1.0, &spec, levels, "script runs/s")
            .into_iter()
            .skip(1),
    );
    if ctx.engine.embedded() {
        notes.push("dbduel's CPU per script run includes the embedded engine's own work".into());
    }
    s.note = Some(notes.join("; "));
    let statements = statement_details(loaded, stats);
    let level_details: Vec<serde_json::Value> = levels
        .iter()
        .map(|l| {
            let (tps, per) = rates(l);
            serde_json::json!({
                "clients": l.threads,
                "tps": tps,
                "tps_per_script": loaded.labels.iter().zip(&per).map(|(n, t)| serde_json::json!({ "script": n, "tps": t })).collect::<Vec<_>>(),
                "script_runs": l.out.ops,
                "script_runs_per_script": l.out.per_op.iter().map(|h| h.len()).collect::<Vec<_>>(),
                "latency_us": l.latency(),
                "latency_us_per_script": l.out.per_op.iter().map(Latency::of).collect::<Vec<_>>(),
                "measured_s": l.out.measured_s,
                "errors": l.out.errors,
                "dbduel_cpu_us_per_script_run": l.out.cpu_us_per_op(),
            })
        })
        .collect();
    StepOutput {
        summary: s,
        details: serde_json::json!({
            "loop": "closed",
            "scripts": statements,
            "scale": p.scale,
            "seed": p.seed,
            "retries": p.retries,
            "retried": stats.iter().flatten().map(|x| x.retried).sum::<u64>(),
            "per_client": p.per_client,
            "duration_s": p.duration_s,
            "warmup_s": p.warmup_s,
            "pacing": p.pace.details(),
            "levels": level_details,
            "best_clients": best.threads,
        }),
        seconds,
        interrupted,
    }
}

/// Each script's weight and statements: line, text, runs, latency and errors by kind
/// (over every level, warm-up left out).
fn statement_details(loaded: &Loaded, stats: &[Vec<StmtStats>]) -> Vec<serde_json::Value> {
    loaded
        .scripts
        .iter()
        .zip(&loaded.labels)
        .zip(&loaded.weights)
        .enumerate()
        .map(|(i, ((script, label), w))| {
            let stmts: Vec<serde_json::Value> = script
                .stmts
                .iter()
                .enumerate()
                .map(|(n, st)| {
                    let x = stats.get(i).and_then(|v| v.get(n));
                    let errors: BTreeMap<&str, u64> = x.map(|x| x.errors.iter().copied().collect()).unwrap_or_default();
                    serde_json::json!({
                        "line": st.line,
                        "sql": st.text,
                        "count": x.map_or(0, |x| x.latency.len()),
                        "latency_us": x.and_then(|x| Latency::of(&x.latency)),
                        "errors": errors,
                        "retried": x.map_or(0, |x| x.retried),
                    })
                })
                .collect();
            serde_json::json!({ "script": label, "file": script.file, "weight": w, "statements": stmts })
        })
        .collect()
}

/// The best level's TPS first, then each script's TPS at it, then each level's TPS and
/// latency percentiles, errors and dbduel's CPU per script run.
fn figures(
    levels: &[LevelRun],
    best: &LevelRun,
    best_per: &[f64],
    labels: &[String],
    errors: u64,
) -> Vec<Metric> {
    let mut m = vec![
        Metric::new(
            "best_tps",
            "best TPS",
            best.rate(),
            Unit::PerSecond,
            Better::Higher,
        )
        .derived(Derived::Best {
            prefix: "tps_t".into(),
        }),
        Metric::new(
            "best_clients",
            "at clients",
            best.threads as f64,
            Unit::Count,
            Better::None,
        )
        .derived(Derived::BestLevel {
            prefix: "tps_t".into(),
        }),
    ];
    if labels.len() > 1 {
        // One label for every contender: each one's best level may be another client count.
        let at = if levels.len() > 1 { " at best" } else { "" };
        for (i, (label, tps)) in labels.iter().zip(best_per).enumerate() {
            m.push(Metric::new(
                &format!("tps_script{}", i + 1),
                &format!("TPS {label}{at}"),
                *tps,
                Unit::PerSecond,
                Better::Higher,
            ));
        }
    }
    for l in levels {
        let t = l.threads;
        m.push(
            Metric::new(
                &format!("tps_t{t}"),
                &format!("TPS @{t}"),
                l.rate(),
                Unit::PerSecond,
                Better::Higher,
            )
            .with_role(Role::Rate),
        );
        if let Some(lat) = l.latency() {
            m.extend(sweep::latency_figures(
                t,
                &lat,
                &["p50", "p95", "p99", "max"],
            ));
        }
    }
    if errors > 0 {
        m.push(Metric::new(
            "errors",
            "errors",
            errors as f64,
            Unit::Count,
            Better::Lower,
        ));
    }
    m.push(Metric::new(
        "cpu_us_per_script_run",
        "dbduel CPU/script run",
        best.out.cpu_us_per_op(),
        Unit::Micros,
        Better::None,
    ));
    m
}

#[cfg(test)]
mod tests;
