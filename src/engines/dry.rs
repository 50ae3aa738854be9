//! The `dry` engine: every call returns at once, so a run on it measures dbduel's own cost per
//! operation (threads, clocks, histograms) — the floor under every other engine's figures.

use crate::engine::{
    Dialect, Engine, EngineInfo, Footprint, LoadOutcome, LoadRequest, RestartOutcome, Result,
    Session, StmtId, Value,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Contender options for `engine = "dry"`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DryOptions {
    /// Rows each query pretends to return (nothing is read).
    #[serde(default)]
    pub rows_per_query: u64,
    /// Microseconds each statement takes (a deliberately slow engine, e.g. to show
    /// open-loop queueing); 0: returns at once.
    #[serde(default)]
    pub delay_us: u64,
    /// Each opening of the engine (each round of a repeated run) takes `delay_us` times a
    /// factor drawn at random within ±this percent: a machine whose speed drifts between
    /// rounds, for testing how rounds are judged; 0: none.
    #[serde(default)]
    pub round_jitter_pct: f64,
    /// Every Nth statement a session runs fails with an error of kind `injected` (a
    /// deliberately failing engine, e.g. to show how errors are counted); 0: none fails.
    #[serde(default)]
    pub fail_every: u64,
    /// The kind of error `fail_every` injects: `injected` (the default), or `deadlock` or
    /// `serialization`, as a server would name a conflict (for a step's retries).
    #[serde(default)]
    pub fail_kind: FailKind,
}

/// The error kinds the dry engine can inject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailKind {
    #[default]
    Injected,
    Deadlock,
    Serialization,
}

impl FailKind {
    fn name(self) -> &'static str {
        match self {
            FailKind::Injected => "injected",
            FailKind::Deadlock => "deadlock",
            FailKind::Serialization => "serialization",
        }
    }
}

/// The `dry` family in the engines registry.
pub const FAMILY: crate::engines::Family = crate::engines::Family {
    name: "dry",
    decode,
    // The dry engine sends nothing: any variant will do.
    sql_variants: &["", "sqlite", "mysql", "mariadb", "postgres"],
    url_schemes: &[],
    keeps_rows: false,
    shards_meet: false,
    sandbox: None,
};

/// `engine = "dry"`: decode the options; embedded, so no target.
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
    binary: &crate::engines::versions::BinaryChoice,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, crate::decode::DecodeError> {
    crate::engines::refuse_target("dry", target)?;
    binary.refuse("engine dry runs inside dbduel")?;
    let o: DryOptions = crate::engines::decode_options(options)?;
    Ok(Box::new(o))
}

impl crate::engine::EngineKind for DryOptions {
    fn name(&self) -> &'static str {
        "dry"
    }

    /// It opens nothing.
    fn files_per_client(&self) -> u64 {
        0
    }

    fn open(&self, _ctx: &crate::engine::OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        let mut o = self.clone();
        if o.round_jitter_pct > 0.0 {
            let mut b = [0u8; 8];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
                .map_err(|e| crate::engine::EngineError::new("io", e.to_string()))?;
            let u = (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64;
            let factor = 1.0 + o.round_jitter_pct / 100.0 * (2.0 * u - 1.0);
            o.delay_us = (o.delay_us as f64 * factor).round() as u64;
        }
        Ok(Box::new(DryEngine::new(o)))
    }
}

pub struct DryEngine {
    opts: DryOptions,
}

impl DryEngine {
    pub fn new(opts: DryOptions) -> Self {
        DryEngine { opts }
    }
}

impl Engine for DryEngine {
    fn keeps_rows(&self) -> bool {
        FAMILY.keeps_rows
    }

    fn kind(&self) -> &'static str {
        "dry"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Dry
    }

    fn connect(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(DrySession {
            rows: self.opts.rows_per_query,
            delay: std::time::Duration::from_micros(self.opts.delay_us),
            prepared: 0,
            fail_every: self.opts.fail_every,
            fail_kind: self.opts.fail_kind.name(),
            runs: 0,
        }))
    }

    fn info(&self) -> Result<EngineInfo> {
        let mut settings = BTreeMap::new();
        settings.insert(
            "rows_per_query".into(),
            self.opts.rows_per_query.to_string(),
        );
        settings.insert("delay_us".into(), self.opts.delay_us.to_string());
        settings.insert("fail_every".into(), self.opts.fail_every.to_string());
        if self.opts.fail_every > 0 {
            settings.insert("fail_kind".into(), self.opts.fail_kind.name().into());
        }
        Ok(EngineInfo {
            engine: "dry".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            settings,
        })
    }

    fn bulk_load(&self, _req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        Ok(LoadOutcome {
            rows: 0,
            method: "none (dry engine stores nothing)".into(),
            warnings: None,
        })
    }

    fn load_file(&self, _req: &crate::engine::FileLoad<'_>) -> Result<LoadOutcome> {
        Ok(LoadOutcome {
            rows: 0,
            method: "none (dry engine stores nothing)".into(),
            warnings: None,
        })
    }

    fn footprint(&self, _tables: &[&str]) -> Result<Footprint> {
        Ok(Footprint {
            files_bytes: Some(0),
            allocated_bytes: Some(0),
            files: Vec::new(),
            files_rule: "none (dry engine stores nothing)".into(),
            engine_bytes: None,
            engine_rule: "none".into(),
        })
    }

    fn embedded(&self) -> bool {
        true
    }

    fn restart(&self, _cold: bool) -> Result<RestartOutcome> {
        Ok(RestartOutcome {
            cold: false,
            cache: "dry engine: nothing to restart".into(),
            resident_bytes: None,
            elapsed_s: 0.0,
        })
    }
}

struct DrySession {
    rows: u64,
    delay: std::time::Duration,
    prepared: usize,
    fail_every: u64,
    fail_kind: &'static str,
    /// Statements run so far.
    runs: u64,
}

impl Session for DrySession {
    fn execute(&mut self, _sql: &str) -> Result<u64> {
        Ok(0)
    }

    fn query_i64(&mut self, _sql: &str) -> Result<i64> {
        Ok(0)
    }

    fn prepare(&mut self, _sql: &str) -> Result<StmtId> {
        self.prepared += 1;
        Ok(StmtId(self.prepared - 1))
    }

    fn run(&mut self, _stmt: StmtId, _params: &[Value]) -> Result<u64> {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.runs += 1;
        if self.fail_every > 0 && self.runs.is_multiple_of(self.fail_every) {
            return Err(crate::engine::EngineError::new(
                self.fail_kind,
                format!("dry engine: statement {} fails (fail_every)", self.runs),
            ));
        }
        Ok(std::hint::black_box(self.rows))
    }

    /// Rows without values: the dry engine returns nothing to read.
    fn run_rows(&mut self, stmt: StmtId, params: &[Value], out: &mut Vec<Value>) -> Result<u64> {
        out.clear();
        self.run(stmt, params)
    }
}
