//! Several clients served from one thread (`RunSpec::threads`, pgbench's `-j`): each client
//! still has its own connection and one operation in flight, but the thread sends each
//! client's next operation as its answer arrives and waits on all their sockets at once, so
//! a thread wakes once for every answer that arrived meanwhile instead of once an answer.
//! Closed loop only; a client's latency runs from the send to the moment its thread reads
//! the whole answer, as pgbench measures.

use super::drive::{Clients, Ticker, connect, flush_nothing};
use super::msg::Msg;
use super::spec::{Bound, Worker};
use crate::engine::{self, EngineError};
use crate::metrics;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a wait for answers may last before the thread looks at the clock and the stop
/// flag again (and hands the collector a second that ended meanwhile).
const WAKE_AT_LEAST_EVERY: Duration = Duration::from_millis(50);

/// Thread `slot`'s life: wait to be released, connect each of `clients` in turn (each
/// timed), wait for the clock, then serve them until they are done.
pub(super) fn run_group<'w, F>(c: &Clients<'_, F>, slot: usize, clients: &[usize], tx: Sender)
where
    F: Fn(usize) -> engine::Result<Box<dyn Worker + 'w>> + Sync,
{
    if c.release.wait().is_none() {
        return;
    }
    let mut workers = Vec::with_capacity(clients.len());
    for &client in clients {
        let made = connect(c, client, &tx, |w| match w.overlapped() {
            Some(_) => Ok(()),
            None => Err(EngineError::new(
                "usage",
                "this engine's sessions cannot share a thread (PostgreSQL's, MariaDB's and MySQL's can): \
                 remove `threads`, so that each client has a thread of its own",
            )),
        });
        workers.extend(made);
    }
    if workers.len() < clients.len() {
        // The run fails for the clients that could not connect; none of these runs.
        flush_nothing(slot, c.n_ops, &tx);
        return;
    }
    if let Some(start) = c.gate.wait() {
        serve(
            slot,
            &mut workers,
            c.spec.bound,
            start,
            c.n_ops,
            c.stop,
            &tx,
        );
    }
}

type Sender = mpsc::Sender<Msg>;

/// One client's operation in flight: when it was sent and its op kind.
#[derive(Clone, Copy)]
struct InFlight {
    sent: Instant,
    op: usize,
}

/// The closed loop over `workers`, every one [`Worker::overlapped`]: start an operation on
/// each, then as each answer is read count it and start that client's next, until each
/// client has run its bound (or the stop).
fn serve(
    slot: usize,
    workers: &mut [Box<dyn Worker + '_>],
    bound: Bound,
    start: Instant,
    n_ops: usize,
    stop: &AtomicBool,
    tx: &Sender,
) {
    let mut t = Ticker::new(slot, start, n_ops, tx);
    // The sockets, waited on together; a client's token is its place in `workers`.
    let poll = Poll::new().and_then(|poll| {
        for (i, w) in workers.iter_mut().enumerate() {
            let fd = w.overlapped().map_or(-1, |o| o.fd());
            poll.registry()
                .register(&mut SourceFd(&fd), Token(i), Interest::READABLE)?;
        }
        Ok(poll)
    });
    let mut poll = match poll {
        Ok(p) => p,
        Err(e) => {
            let e = EngineError::new("client", format!("cannot wait on the sockets: {e}"));
            t.count(0, Err(e), 0);
            t.finish();
            return;
        }
    };
    let go = Go {
        limit: bound.limit(),
        deadline: bound.deadline(start),
        stop,
    };
    let mut seq = vec![0u64; workers.len()];
    let mut flight: Vec<Option<InFlight>> = vec![None; workers.len()];
    for ((w, n), f) in workers.iter_mut().zip(&mut seq).zip(&mut flight) {
        *f = go.next(w.as_mut(), n, &mut t);
    }
    let mut live = flight.iter().flatten().count();
    let mut events = Events::with_capacity(workers.len().clamp(1, 1024));
    while live > 0 && !stop.load(Ordering::Relaxed) {
        if let Err(e) = poll.poll(&mut events, Some(WAKE_AT_LEAST_EVERY))
            && e.kind() != std::io::ErrorKind::Interrupted
        {
            let e = EngineError::new("client", format!("waiting on the sockets failed: {e}"));
            t.count(0, Err(e), 0);
            break;
        }
        t.roll(Instant::now());
        for ev in events.iter() {
            let i = ev.token().0;
            let (Some(w), Some(f)) = (workers.get_mut(i), flight.get(i).copied().flatten()) else {
                continue;
            };
            let Some(res) = w.overlapped().and_then(|o| o.finish()) else {
                continue; // not all of its answer yet
            };
            let now = Instant::now();
            t.roll(now);
            t.count(
                f.op,
                res,
                metrics::micros(now.saturating_duration_since(f.sent)),
            );
            seq[i] += 1;
            flight[i] = go.next(w.as_mut(), &mut seq[i], &mut t);
            live -= usize::from(flight[i].is_none());
        }
    }
    t.finish();
}

/// When a client starts another operation.
#[derive(Clone, Copy)]
struct Go<'a> {
    limit: u64,
    deadline: Option<Instant>,
    stop: &'a AtomicBool,
}

impl Go<'_> {
    /// Start `w`'s next operation, if its bound allows one: what is then in flight. An
    /// operation that could not be sent (its connection is gone) is counted as failed, and
    /// the client stops there rather than hold its thread's other clients up failing again.
    fn next(&self, w: &mut dyn Worker, seq: &mut u64, t: &mut Ticker<'_>) -> Option<InFlight> {
        let o = w.overlapped()?;
        let sent = Instant::now();
        if *seq >= self.limit
            || self.stop.load(Ordering::Relaxed)
            || self.deadline.is_some_and(|d| sent >= d)
        {
            return None;
        }
        match o.start(*seq) {
            (op, Ok(())) => Some(InFlight { sent, op }),
            (op, Err(e)) => {
                t.count(op, Err(e), 0);
                *seq += 1;
                None
            }
        }
    }
}
