//! The clients' connects: tallied as they report (each timed on its own thread, failures
//! counted by kind), and waited for before the clock starts.

use super::msg::Msg;
use super::outcome::{ConnectFailure, ConnectOutcome, RunError};
use super::spec::CONNECT_TIMEOUT;
use crate::engine::EngineError;
use crate::metrics::{self, Hist, Latency};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The clients' connects as they report, and the figures made of them.
pub(super) struct ConnectTally {
    clients: usize,
    released: Instant,
    last_ready: Option<Instant>,
    ready: usize,
    hist: Hist,
    /// By kind: (count, first client, its message).
    failures: BTreeMap<&'static str, (u64, usize, String)>,
    pub failed: usize,
}

impl ConnectTally {
    pub fn new(clients: usize, released: Instant) -> Self {
        ConnectTally {
            clients,
            released,
            last_ready: None,
            ready: 0,
            hist: metrics::new_hist(),
            failures: BTreeMap::new(),
            failed: 0,
        }
    }

    pub fn ready(&mut self, took: Duration) {
        self.ready += 1;
        self.last_ready = Some(Instant::now());
        self.hist.saturating_record(metrics::micros(took));
    }

    pub fn failed(&mut self, client: usize, error: EngineError) {
        self.failed += 1;
        let e = self
            .failures
            .entry(error.kind)
            .or_insert((0, client, error.message));
        e.0 += 1;
    }

    pub fn reported(&self) -> usize {
        self.ready + self.failed
    }

    pub fn outcome(&self) -> ConnectOutcome {
        let all_s = self
            .last_ready
            .map(|t| t.saturating_duration_since(self.released).as_secs_f64())
            .unwrap_or(0.0);
        ConnectOutcome {
            clients: self.clients,
            connected: self.ready,
            all_s,
            per_s: if all_s > 0.0 {
                self.ready as f64 / all_s
            } else {
                0.0
            },
            latency_us: Latency::of(&self.hist),
            failures: self
                .failures
                .iter()
                .map(|(kind, (count, client, msg))| ConnectFailure {
                    kind: kind.to_string(),
                    count: *count,
                    first_client: *client,
                    first_message: msg.clone(),
                })
                .collect(),
        }
    }
}

/// Wait until every client has connected or failed to (all are waited for, so failures can
/// be counted by kind), within `CONNECT_TIMEOUT`.
pub(super) fn await_connects(
    rx: &mpsc::Receiver<Msg>,
    tally: &mut ConnectTally,
    stop: &AtomicBool,
) -> Result<(), RunError> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    while tally.reported() < tally.clients {
        if stop.load(Ordering::Relaxed) {
            return Err(RunError::Interrupted);
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Ready { took }) => tally.ready(took),
            Ok(Msg::ConnectFailed { client, error }) => tally.failed(client, error),
            // A failed client says it is done; nothing else runs before the clock starts.
            Ok(Msg::Flush { .. }) => {}
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(RunError::ConnectTimeout {
                    ready: tally.ready,
                    failed: tally.failed,
                    clients: tally.clients,
                    timeout_s: CONNECT_TIMEOUT.as_secs(),
                });
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(RunError::Spawn(std::io::Error::other(
                    "a client thread ended before it was ready",
                )));
            }
        }
    }
    Ok(())
}
