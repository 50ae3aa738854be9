//! One client running scripts: its variables, its random stream, its statements prepared
//! on first use (so a script may create the tables its later statements use), and its
//! per-statement latencies. [`Client::run_script`] is one timed operation: every command of
//! the script, in order, branches followed.

use super::expr::{Env, Val, as_int, truth};
use super::parse::{Amount, Op, Script};
use super::sql::Txn;
use super::vars::{Names, Var, Vars};
use crate::dataset::rng::SplitMix64;
use crate::engine::{self, EngineError, Session, StmtId, Value};
use crate::metrics::Hist;
use std::time::{Duration, Instant};

/// The error kind of a script's own failure (an expression, a `\gset`), beside the
/// engines' kinds.
pub const SCRIPT_ERROR: &str = "script";

/// One statement's figures in one client (or, merged, in the step).
#[derive(Debug, Clone)]
pub struct StmtStats {
    pub latency: Hist,
    /// Failures by the engine's error kind (a retried one included).
    pub errors: Vec<(&'static str, u64)>,
    /// Failures of this statement after which the script run was run again.
    pub retried: u64,
}

impl StmtStats {
    pub fn new() -> Self {
        // Two significant digits: one per statement per client, so kept small (1 % error).
        let latency = match Hist::new_with_bounds(1, crate::metrics::MAX_US, 2) {
            Ok(h) => h,
            Err(_) => crate::metrics::new_hist(),
        };
        StmtStats {
            latency,
            errors: Vec::new(),
            retried: 0,
        }
    }

    pub fn error(&mut self, kind: &'static str) {
        match self.errors.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.errors.push((kind, 1)),
        }
    }

    pub fn merge(&mut self, other: &StmtStats) {
        crate::metrics::merge(&mut self.latency, &other.latency);
        self.retried += other.retried;
        for &(k, n) in &other.errors {
            match self.errors.iter_mut().find(|(x, _)| *x == k) {
                Some((_, m)) => *m += n,
                None => self.errors.push((k, n)),
            }
        }
    }
}

impl Default for StmtStats {
    fn default() -> Self {
        Self::new()
    }
}

/// What a client runs: the step's scripts, their variable names, and each statement's text
/// in the engine's dialect.
pub struct Program<'a> {
    pub scripts: &'a [Script],
    pub names: &'a Names,
    /// `texts[s][n]`: statement `n` of script `s` with the dialect's placeholders.
    pub texts: &'a [Vec<String>],
    /// Variables every client starts with (`scale`, `client_id`, the study's `vars`).
    pub initial: &'a Vars,
    /// Does the engine return rows (the `dry` engine does not: `\gset` then stores 0s)?
    pub keeps_rows: bool,
}

/// How a statement runs on a client's session.
#[derive(Debug, Clone, Copy)]
enum Prepared {
    /// Not run yet: prepared on its first run.
    NotYet,
    Id(StmtId),
    /// As text every time (an engine that cannot prepare it).
    Text,
}

/// One client's state.
pub struct Client<'a> {
    program: &'a Program<'a>,
    session: Box<dyn Session>,
    prepared: Vec<Vec<Prepared>>,
    vars: Vars,
    rng: SplitMix64,
    /// Reused buffers: no allocation per statement.
    params: Vec<Value>,
    rows: Vec<Value>,
    /// `stats[s][n]`: statement `n` of script `s`, counted from `measure_from`.
    pub stats: Vec<Vec<StmtStats>>,
    /// Statements before this instant (the warm-up) are not counted in `stats`.
    measure_from: Option<Instant>,
    warmup: Duration,
    in_txn: bool,
    /// Runs again after a serialization failure or a deadlock (see `retrying`).
    retries: u32,
    /// The statement (script, index) the current run last started.
    last: (usize, usize),
}

impl<'a> Client<'a> {
    /// A client on `session` whose variable `client_id` is `id`, drawing from `rng`;
    /// statements in its first `warmup` are left out of its figures.
    pub fn new(
        program: &'a Program<'a>,
        session: Box<dyn Session>,
        id: usize,
        rng: SplitMix64,
        warmup: Duration,
    ) -> Self {
        let mut vars = program.initial.clone();
        if let Some(s) = program.names.get("client_id") {
            vars.set(s, Val::Int(id as i64));
        }
        Client {
            program,
            session,
            prepared: program
                .scripts
                .iter()
                .map(|s| vec![Prepared::NotYet; s.stmts.len()])
                .collect(),
            vars,
            rng,
            params: Vec::new(),
            rows: Vec::new(),
            stats: program
                .scripts
                .iter()
                .map(|s| (0..s.stmts.len()).map(|_| StmtStats::new()).collect())
                .collect(),
            measure_from: None,
            warmup,
            in_txn: false,
            retries: 0,
            last: (0, 0),
        }
    }

    /// Run a script again from its start, with the same random draws, up to `n` times when
    /// it fails with a serialization failure or a deadlock (pgbench's `--max-tries`).
    pub fn retrying(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// The client's random stream (to draw which script runs next).
    pub fn rng(&mut self) -> &mut SplitMix64 {
        &mut self.rng
    }

    /// Run script `s` once; the rows its statements returned or changed. A failure is
    /// located at the script's line; an open transaction is rolled back after it.
    pub fn run_script(&mut self, s: usize) -> engine::Result<u64> {
        if self.measure_from.is_none() {
            self.measure_from = Some(Instant::now() + self.warmup);
        }
        let (rng, mut tries) = (self.rng, 0);
        loop {
            let r = self.interpret(s);
            if r.is_err() && self.in_txn {
                // The engine's words for the failure are what counts; a failed rollback says
                // no more (the session is then broken, and the next statement says so).
                let _ = self.session.execute("ROLLBACK");
                self.in_txn = false;
            }
            match &r {
                Err(e)
                    if tries < self.retries && matches!(e.kind, "serialization" | "deadlock") =>
                {
                    tries += 1;
                    let (si, n) = self.last;
                    if let Some(st) = self.stats.get_mut(si).and_then(|v| v.get_mut(n)) {
                        st.retried += 1;
                    }
                    self.rng = rng;
                }
                _ => return r,
            }
        }
    }

    fn interpret(&mut self, s: usize) -> engine::Result<u64> {
        let program = self.program;
        let Some(script) = program.scripts.get(s) else {
            return Err(EngineError::new(SCRIPT_ERROR, format!("no script {s}")));
        };
        let mut rows = 0;
        let mut pc = 0;
        while let Some(cmd) = script.cmds.get(pc) {
            let fail = |m: String| {
                EngineError::new(SCRIPT_ERROR, format!("{}:{}: {m}", script.file, cmd.line))
            };
            let mut env = Env {
                vars: &self.vars,
                names: program.names,
                rng: &mut self.rng,
            };
            match &cmd.op {
                Op::Set(slot, e) => {
                    let v = e.eval(&mut env).map_err(|e| fail(e.to_string()))?;
                    self.vars.set(*slot, v);
                }
                Op::Branch(cond, to) => {
                    let v = cond.eval(&mut env).map_err(|e| fail(e.to_string()))?;
                    if truth(v).map_err(|e| fail(e.to_string()))? != Some(true) {
                        pc = *to;
                        continue;
                    }
                }
                Op::Jump(to) => {
                    pc = *to;
                    continue;
                }
                Op::Sleep(amount, unit_us) => {
                    let n = match amount {
                        Amount::Const(n) => *n,
                        Amount::Var(v) => self
                            .vars
                            .number(*v, program.names)
                            .and_then(|x| as_int(x, "\\sleep"))
                            .map_err(|e| fail(e.to_string()))?,
                    };
                    if n > 0 {
                        std::thread::sleep(Duration::from_micros(
                            (n as u64).saturating_mul(*unit_us),
                        ));
                    }
                }
                Op::Sql(n) => rows += self.statement(script, s, *n)?,
            }
            pc += 1;
        }
        Ok(rows)
    }

    /// Bind, run and time statement `n` of script `s`.
    fn statement(&mut self, script: &Script, s: usize, n: usize) -> engine::Result<u64> {
        let program = self.program;
        let stmt = &script.stmts[n];
        self.last = (s, n);
        let at = |e: EngineError| {
            EngineError::new(
                e.kind,
                format!("{}:{}: {}", script.file, stmt.line, e.message),
            )
        };
        self.params.resize(stmt.bound.binds.len(), Value::Null);
        for (p, &slot) in self.params.iter_mut().zip(&stmt.bound.binds) {
            bind(p, self.vars.get(slot)).map_err(|m| {
                at(EngineError::new(
                    SCRIPT_ERROR,
                    m.replace("{}", program.names.name(slot)),
                ))
            })?;
        }
        let text = program
            .texts
            .get(s)
            .and_then(|t| t.get(n))
            .map_or("", String::as_str);
        let t0 = Instant::now();
        let r = match self.prepared_id(s, n, stmt.bound.txn, text) {
            Err(e) => Err(e),
            Ok(None) => self.session.execute(text),
            Ok(Some(id)) if stmt.gset.is_some() => {
                self.session.run_rows(id, &self.params, &mut self.rows)
            }
            Ok(Some(id)) => self.session.run(id, &self.params),
        };
        let done = Instant::now();
        let stats = &mut self.stats[s][n];
        let counted = self.measure_from.is_some_and(|m| t0 >= m);
        match stmt.bound.txn {
            Txn::Begin if r.is_ok() => self.in_txn = true,
            // A COMMIT that failed may leave the transaction open (SQLite's busy commit):
            // the failure's rollback then closes it.
            Txn::End if r.is_ok() => self.in_txn = false,
            _ => {}
        }
        let k = match r {
            Ok(k) => k,
            Err(e) => {
                if counted {
                    stats.error(e.kind);
                }
                return Err(at(e));
            }
        };
        if counted {
            stats
                .latency
                .saturating_record(crate::metrics::micros(done - t0).max(1));
        }
        if let Some(slots) = &stmt.gset {
            self.store(slots, k)
                .map_err(|m| at(EngineError::new(SCRIPT_ERROR, m)))?;
        }
        Ok(k)
    }

    /// Statement `n` of script `s` prepared on the session (on its first run), or `None`
    /// when it runs as text: a transaction statement the engine refuses to prepare.
    /// `BEGIN` and `COMMIT` are prepared like the rest, as `pgbench -M prepared` and
    /// sysbench prepare them: as text, PostgreSQL parses and describes them every time.
    fn prepared_id(
        &mut self,
        s: usize,
        n: usize,
        txn: Txn,
        text: &str,
    ) -> engine::Result<Option<StmtId>> {
        let slot = &mut self.prepared[s][n];
        match *slot {
            Prepared::Id(id) => Ok(Some(id)),
            Prepared::Text => Ok(None),
            Prepared::NotYet => match self.session.prepare(text) {
                Ok(id) => {
                    *slot = Prepared::Id(id);
                    Ok(Some(id))
                }
                Err(_) if txn != Txn::Other => {
                    *slot = Prepared::Text;
                    Ok(None)
                }
                Err(e) => Err(e),
            },
        }
    }

    /// `\gset`: the one row's columns into their variables.
    fn store(&mut self, slots: &[usize], rows: u64) -> Result<(), String> {
        if !self.program.keeps_rows {
            for &slot in slots {
                self.vars.set(slot, Val::Int(0));
            }
            return Ok(());
        }
        if rows != 1 {
            return Err(format!(
                "\\gset expects the query to return one row; it returned {rows}"
            ));
        }
        if self.rows.len() != slots.len() {
            return Err(format!(
                "\\gset names {} column(s) but the query returned {}",
                slots.len(),
                self.rows.len()
            ));
        }
        for (&slot, v) in slots.iter().zip(&self.rows) {
            match v {
                Value::Int(i) => self.vars.set(slot, Val::Int(*i)),
                Value::Null => self.vars.set(slot, Val::Null),
                Value::Text(t) => self.vars.set_text(slot, t),
            }
        }
        Ok(())
    }
}

/// A variable's value as a statement parameter, reusing the parameter's text buffer; an
/// error (`{}` for the variable's name) when it has none.
fn bind(p: &mut Value, v: &Var) -> Result<(), String> {
    match v {
        Var::Unset => return Err(
            "variable `{}` has no value yet (set it with \\set or \\gset before this statement)"
                .into(),
        ),
        Var::Val(Val::Int(i)) => *p = Value::Int(*i),
        Var::Val(Val::Bool(b)) => *p = Value::Int(i64::from(*b)),
        Var::Val(Val::Null) => *p = Value::Null,
        Var::Val(Val::Double(d)) => set_text(p, format_args!("{d}")),
        Var::Text(t) => set_text(p, format_args!("{t}")),
    }
    Ok(())
}

fn set_text(p: &mut Value, args: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    if let Value::Text(buf) = p {
        buf.clear();
        let _ = buf.write_fmt(args);
    } else {
        *p = Value::Text(args.to_string());
    }
}
