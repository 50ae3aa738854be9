//! What a run hands back: the figures it measured (`RunOutcome`), how the clients'
//! connects went (`ConnectOutcome`), and why a run could not start or had to stop
//! (`RunError`).

use crate::metrics::{Hist, Latency};
use serde::{Deserialize, Serialize};

/// How the clients' connects went.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectOutcome {
    pub clients: usize,
    pub connected: usize,
    /// From the release of the clients to the last one connected, seconds (0 when none
    /// connected).
    pub all_s: f64,
    /// Clients connected per second over `all_s`.
    pub per_s: f64,
    /// Each client's connect, µs: its connection opened and authenticated and its
    /// statements prepared, timed on its own thread.
    pub latency_us: Option<Latency>,
    /// Clients that could not connect, by kind of failure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ConnectFailure>,
}

/// Clients that failed to connect with one kind of error.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectFailure {
    pub kind: String,
    pub count: u64,
    /// The first client to report this failure, and its message.
    pub first_client: usize,
    pub first_message: String,
}

impl ConnectOutcome {
    /// Clients that could not connect.
    pub fn failed(&self) -> u64 {
        self.failures.iter().map(|f| f.count).sum()
    }
}

/// `12 of 30 clients could not connect: too_many_connections 12 (first: client 18, …); 18
/// connected in 0.21 s`.
fn connect_failure_message(c: &ConnectOutcome) -> String {
    let kinds: Vec<String> = c
        .failures
        .iter()
        .map(|f| {
            format!(
                "{} {} (first: client {}, {})",
                f.kind, f.count, f.first_client, f.first_message
            )
        })
        .collect();
    format!(
        "{} of {} clients could not connect: {}; {} connected in {:.3} s",
        c.failed(),
        c.clients,
        kinds.join("; "),
        c.connected,
        c.all_s
    )
}

/// Errors of one kind on one op kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorCount {
    pub op: String,
    pub kind: String,
    pub count: u64,
    pub first_message: String,
}

/// Everything a closed-loop run measured.
pub struct RunOutcome {
    pub op_names: Vec<String>,
    /// Operations that succeeded after warm-up.
    pub ops: u64,
    /// Operations that succeeded, warm-up included: the denominator of `process_cpu_s`.
    pub ops_all: u64,
    pub rows: u64,
    pub errors: Vec<ErrorCount>,
    /// Per op kind, after warm-up.
    pub per_op: Vec<Hist>,
    /// All op kinds together, after warm-up.
    pub all: Hist,
    /// Seconds from the end of warm-up to the last client's end.
    pub measured_s: f64,
    /// The seconds handed to `on_interval`, which are not kept: what a run holds does not
    /// grow with its length, so a caller that needs a second's figures keeps them as they
    /// come.
    pub seconds: Seconds,
    /// Stopped early by the stop flag.
    pub interrupted: bool,
    /// CPU seconds dbduel's process used from the clock's start to the run's end, warm-up
    /// included, connecting excluded (user + system).
    pub process_cpu_s: f64,
    /// Open loop, after warm-up: operations started late, and dropped.
    pub late: u64,
    pub dropped: u64,
    /// Open loop: operations due before the end that had not started by it, each under
    /// `DROP_AFTER` late (the queue a slow engine left; one or two from a late wake-up).
    /// Every scheduled operation is run, dropped or this.
    pub unstarted: u64,
    /// How the clients connected.
    pub connect: ConnectOutcome,
}

impl RunOutcome {
    /// Failed operations of every kind.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().map(|e| e.count).sum()
    }

    /// dbduel's CPU per operation, µs (every operation, warm-up included, as the CPU is).
    pub fn cpu_us_per_op(&self) -> f64 {
        if self.ops_all > 0 {
            self.process_cpu_s * 1e6 / self.ops_all as f64
        } else {
            0.0
        }
    }

    /// When every operation failed: the count and the first failure's message, for a step to
    /// fail with (a run with any success is reported, its errors counted, instead).
    pub fn all_failed(&self) -> Option<(u64, String)> {
        let n = self.error_count();
        (self.ops == 0 && n > 0).then(|| {
            let first = self.errors.first().map(|e| e.first_message.clone());
            (n, first.unwrap_or_default())
        })
    }
}

/// Which seconds a run emitted: how many, and the ticks of the first and the last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seconds {
    pub count: u64,
    pub first: Option<u64>,
    pub last: Option<u64>,
}

impl Seconds {
    /// One more second emitted.
    pub fn saw(&mut self, tick: u64) {
        self.count += 1;
        self.first.get_or_insert(tick);
        self.last = Some(tick);
    }

    /// These seconds followed by `later` (a later level's, shifted already).
    pub fn then(self, later: Seconds) -> Seconds {
        Seconds {
            count: self.count + later.count,
            first: self.first.or(later.first),
            last: later.last.or(self.last),
        }
    }

    /// The same seconds as part of a longer step that began `tick_base` seconds earlier.
    pub fn shifted(self, tick_base: u64) -> Seconds {
        Seconds {
            count: self.count,
            first: self.first.map(|t| t + tick_base),
            last: self.last.map(|t| t + tick_base),
        }
    }
}

/// A run that could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Some clients could not connect (every client was waited for).
    #[error("{}", connect_failure_message(.0))]
    Connect(ConnectOutcome),
    #[error("could not start client thread: {0}")]
    Spawn(std::io::Error),
    #[error(
        "only {ready} of {clients} clients connected within {timeout_s} s ({failed} failed to); the server stopped accepting connections"
    )]
    ConnectTimeout {
        ready: usize,
        failed: usize,
        clients: usize,
        timeout_s: u64,
    },
    #[error("interrupted while clients were connecting")]
    Interrupted,
    #[error("{0}")]
    Shards(#[from] crate::shard::BarrierError),
}
