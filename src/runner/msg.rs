//! What a client thread tells the collector: that it connected or could not, and once per
//! tick its counters and the latencies it recorded (never one message per operation).

use crate::engine::EngineError;
use crate::metrics::TickCounts;
use std::collections::BTreeMap;
use std::time::Duration;

/// Per-worker counters for the current tick. Latencies go into the worker's recorders, which
/// it keeps for the whole run; at each tick it sends their sparse counts with these.
pub(super) struct Local {
    pub ops: Vec<u64>,
    pub rows: u64,
    pub late: u64,
    pub dropped: u64,
    pub unstarted: u64,
    pub errors: BTreeMap<(usize, &'static str), (u64, String)>,
}

impl Local {
    #[inline]
    pub fn new(n: usize) -> Self {
        Local {
            ops: vec![0; n],
            rows: 0,
            late: 0,
            dropped: 0,
            unstarted: 0,
            errors: BTreeMap::new(),
        }
    }
}

/// What a worker hands the collector for one tick: its counters and, per op kind, the
/// latencies it recorded (a few hundred bytes, not a histogram).
pub(super) struct Flushed {
    pub local: Local,
    pub latencies: Vec<TickCounts>,
}

/// A client thread's message to the collector.
pub(super) enum Msg {
    /// Stats of `tick`; the worker has moved on to `next_tick` (or finished when `done`).
    Flush {
        worker: usize,
        tick: u64,
        next_tick: u64,
        stats: Flushed,
        done: bool,
    },
    /// A client connected; its connect took `took`.
    Ready {
        took: Duration,
    },
    ConnectFailed {
        client: usize,
        error: EngineError,
    },
}
