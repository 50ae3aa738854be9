//! The per-second records of a client step, one line each of `<step>.intervals.ndjson`: what
//! the runner measured in each second, with each op kind's whole latency histogram of it.

use crate::metrics::Latency;
use serde::{Deserialize, Serialize};

/// Latency and counts of one op kind within one tick.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpInterval {
    pub op: String,
    pub ops: u64,
    pub latency_us: Option<Latency>,
    /// The second's latency histogram of this kind, as [`crate::metrics::encode`] writes it,
    /// so that seconds (and shards' seconds) add up to exact percentiles; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
}

/// Failed operations of one op kind and one error kind within one tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorTick {
    pub op: String,
    /// The engine's error kind (`deadlock`, `connection`, ...), as the step's summary counts it.
    pub kind: String,
    pub count: u64,
}

/// One second of a step: operations that completed in `[t_s - 1, t_s)` after the start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IntervalRecord {
    pub tick: u64,
    /// End of the interval, seconds after the start.
    pub t_s: f64,
    pub warmup: bool,
    pub ops: u64,
    pub ops_per_s: f64,
    pub rows: u64,
    pub errors: u64,
    /// Open loop: operations that started more than 1 ms after their schedule.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late: u64,
    /// Open loop: operations dropped for being more than 1 s behind their schedule.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
    pub latency_us: Option<Latency>,
    pub per_op: Vec<OpInterval>,
    /// Client count of the level this interval belongs to, in a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u64>,
    /// `errors` split by op kind and error kind (absent when nothing failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_kinds: Vec<ErrorTick>,
    /// Open loop: the rate this process's clients were scheduled at, operations a second
    /// (a shard's share of the step's `rate`); absent in a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<f64>,
}

impl IntervalRecord {
    /// This second as part of a longer step that began `tick_base` seconds earlier: its
    /// tick and time shifted, and tagged with `level` (a sweep's client count) when given.
    pub fn shifted(&self, tick_base: u64, level: Option<u64>) -> IntervalRecord {
        let mut iv = self.clone();
        iv.tick += tick_base;
        iv.t_s += tick_base as f64;
        iv.level = level.or(iv.level);
        iv
    }

    /// Add `more` failures to this second's, by op kind and error kind.
    pub fn add_error_kinds(&mut self, more: &[ErrorTick]) {
        for e in more {
            match self
                .error_kinds
                .iter_mut()
                .find(|k| k.op == e.op && k.kind == e.kind)
            {
                Some(k) => k.count += e.count,
                None => self.error_kinds.push(e.clone()),
            }
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
