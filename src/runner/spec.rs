//! What a client load is: how many clients, when each stops (`Bound`), when its operations
//! start (`Pacing`, with the open loop's late and drop limits), where the clock starts
//! (`Clock`), and the `Worker` each client runs.

use super::rate::RateProfile;
use crate::engine;
use std::time::Duration;

/// How long all clients together may take to connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the step's clock starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// Every client connects first; the clock starts when the last one is ready and all
    /// start together. Connecting is timed apart (`RunOutcome::connect`).
    #[default]
    AllConnected,
    /// The clock starts when the clients are released to connect, and each client starts
    /// its operations as soon as it is connected: what `mysqlslap` times ("seconds to run
    /// all queries" includes opening every connection). Warm-up does not apply, and the
    /// connects are bounded by the engine's own connect timeouts rather than
    /// `CONNECT_TIMEOUT`.
    FirstConnect,
}

/// When each client stops.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// Each client runs this many operations (warm-up included).
    PerClient(u64),
    /// Every client runs until this long after the start (warm-up included).
    Duration(Duration),
}

impl Bound {
    /// The instant after which a client starts no operation, when the run is timed.
    pub fn deadline(self, start: std::time::Instant) -> Option<std::time::Instant> {
        match self {
            Bound::Duration(d) => Some(start + d),
            Bound::PerClient(_) => None,
        }
    }

    /// The most operations a client runs.
    pub fn limit(self) -> u64 {
        match self {
            Bound::PerClient(n) => n,
            Bound::Duration(_) => u64::MAX,
        }
    }
}

/// When operations start.
#[derive(Debug, Clone, PartialEq)]
pub enum Pacing {
    /// Each client starts its next operation when the previous one ends; latency is
    /// measured from the actual start.
    Closed,
    /// Operations are scheduled at `rate` in all (spread over the clients; constant or
    /// ramping), evenly spaced or with exponential gaps (`poisson`); latency is measured
    /// from the scheduled start, so queueing behind a slow engine counts (no coordinated
    /// omission). An operation more than `DROP_AFTER` behind its schedule is dropped and
    /// counted.
    Open { rate: RateProfile, poisson: bool },
}

impl Pacing {
    /// An open loop at `rate_per_s` throughout, evenly spaced.
    pub fn fixed(rate_per_s: f64) -> Pacing {
        Pacing::Open {
            rate: RateProfile::constant(rate_per_s),
            poisson: false,
        }
    }
}

/// How far behind schedule an open-loop operation may fall before it is dropped.
pub const DROP_AFTER: Duration = Duration::from_secs(1);

/// An open-loop operation that starts later than this after its schedule counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// How to drive the clients.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub clients: usize,
    pub bound: Bound,
    /// Whole seconds at the start whose operations are not counted in the totals.
    pub warmup_s: u64,
    pub pacing: Pacing,
    /// Seed of the open loop's Poisson gaps.
    pub seed: u64,
    /// A sharded run: only this shard's clients run here (each with its id in the whole
    /// run, `clients` still counting them all), starting when every shard is ready.
    pub team: Option<crate::shard::Team>,
    /// OS threads the clients here are served from, each keeping one operation in flight on
    /// each of its clients' connections (pgbench's `-j`); `None`: a thread per client.
    /// Fewer threads than clients need closed loop, the `AllConnected` clock and workers
    /// that are [`Overlapped`].
    pub threads: Option<usize>,
}

/// One client's operations. Created inside its own thread, so it owns its session there.
pub trait Worker {
    /// Run operation number `seq` of this client; returns the op kind's index and the rows
    /// it returned or changed.
    fn op(&mut self, seq: u64) -> (usize, engine::Result<u64>);

    /// Closed loop: how long to wait before the next operation, outside its latency (a
    /// user's keying and think time). None: go on at once.
    fn pause(&mut self) -> Option<Duration> {
        None
    }

    /// The operation in two halves, when the worker's session can send one and read its
    /// answer later: then one thread can serve several clients. `None`: only [`op`](Self::op).
    fn overlapped(&mut self) -> Option<&mut dyn Overlapped> {
        None
    }
}

/// A worker's operation started and finished apart, by a thread that serves several
/// clients and waits on all their sockets at once. Still one operation in flight a client.
pub trait Overlapped {
    /// The socket the operation's answer arrives on.
    fn fd(&mut self) -> std::os::fd::RawFd;
    /// Send operation number `seq`; its op kind's index, and whether it went (an error is
    /// the operation's failure: nothing is then in flight).
    fn start(&mut self, seq: u64) -> (usize, engine::Result<()>);
    /// Read what has arrived, never waiting: the operation's rows once its answer is whole.
    fn finish(&mut self) -> Option<engine::Result<u64>>;
}
