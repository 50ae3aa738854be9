//! A blocking connection for the PostgreSQL sessions that clients drive: `tokio-postgres`'s
//! protocol code over a blocking socket, run by a minimal executor on the client's own thread.
//!
//! The `postgres` crate gives each connection a tokio runtime of its own, so every statement
//! costs two `epoll_wait` calls and the runtime's bookkeeping on top of the `send` and `recv`
//! that carry it — in a closed-loop benchmark that is client CPU taken from the server on the
//! same machine. A closed-loop client has exactly one thing to wait for: the server's answer.
//! Here the futures are polled until none of them makes progress (a waker records any
//! progress), and only then does the thread block, in `recv`, on the socket. A statement
//! costs one `send` and usually one `recv`. Protocol, statements and results are the same as
//! through the `postgres` crate; only the waiting differs.

use super::target::Target;
use super::{EngineError, Result};
use futures_core::Stream;
use std::future::Future;
use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Connection, NoTls, SimpleQueryMessage, Statement};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP socket in blocking mode. A read blocks only when the executor has found nothing else
/// to do (`may_block`); otherwise it reports `Pending` at once, without a system call, and
/// the executor comes back when blocking is the only way forward.
pub struct BlockingSocket {
    sock: TcpStream,
    may_block: Arc<AtomicBool>,
}

impl AsyncRead for BlockingSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.may_block.swap(false, Ordering::Relaxed) {
            return Poll::Pending;
        }
        let fd = self.sock.as_raw_fd();
        loop {
            // SAFETY: `unfilled_mut` is writable memory of the given length owned by `buf`;
            // recv writes at most that many bytes, and only the `n` it reports are marked
            // initialized and filled.
            let n = unsafe {
                let dst = buf.unfilled_mut();
                libc::recv(fd, dst.as_mut_ptr().cast(), dst.len(), 0)
            };
            if n >= 0 {
                let n = n as usize;
                // SAFETY: recv initialized the first `n` bytes of the unfilled part.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                return Poll::Ready(Ok(()));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Poll::Ready(Err(e));
            }
        }
    }
}

impl AsyncWrite for BlockingSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready((&self.sock).write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let _ = self.sock.shutdown(std::net::Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}

/// Records that some future or the connection made progress (woke a waiter).
struct Progress(AtomicBool);

impl Wake for Progress {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The executor's state: when the socket may block, and whether the last round progressed.
struct Driver {
    may_block: Arc<AtomicBool>,
    progress: Arc<Progress>,
    waker: Waker,
}

impl Driver {
    fn new(may_block: Arc<AtomicBool>) -> Driver {
        let progress = Arc::new(Progress(AtomicBool::new(false)));
        Driver {
            may_block,
            waker: Waker::from(progress.clone()),
            progress,
        }
    }

    /// Call `step` until it is ready. A round in which nothing woke anything lets the next
    /// round's first socket read block: nothing but the server can move things on then.
    fn run<T>(&self, mut step: impl FnMut(&mut Context<'_>) -> Poll<T>) -> T {
        let mut cx = Context::from_waker(&self.waker);
        let mut block = false;
        loop {
            self.progress.0.store(false, Ordering::Relaxed);
            self.may_block.store(block, Ordering::Relaxed);
            let r = step(&mut cx);
            self.may_block.store(false, Ordering::Relaxed);
            if let Poll::Ready(v) = r {
                return v;
            }
            block = !self.progress.0.load(Ordering::Relaxed);
        }
    }
}

fn closed(why: &str) -> EngineError {
    EngineError::new("connection", format!("postgres: connection closed: {why}"))
}

/// One PostgreSQL connection, driven on the calling thread.
pub struct PgConn {
    /// `None` only while dropping.
    client: Option<Client>,
    conn: Connection<BlockingSocket, NoTlsStream>,
    driver: Driver,
    /// Why the connection can no longer be used.
    broken: Option<String>,
    /// The connection's socket (a second handle), for its timeouts.
    sock: TcpStream,
}

impl PgConn {
    /// Connect to `db` on the target's server (TCP, no TLS, as the `postgres` crate does
    /// for these servers), with `TCP_NODELAY` and keepalives.
    pub fn connect(t: &Target, db: &str) -> Result<PgConn> {
        let io = |e: std::io::Error| {
            EngineError::new(
                "connection",
                format!("postgres: cannot connect to {}:{}: {e}", t.host, t.port),
            )
        };
        let mut last = None;
        let mut sock = None;
        for addr in (t.host.as_str(), t.port).to_socket_addrs().map_err(io)? {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let sock = match sock {
            Some(s) => s,
            None => {
                return Err(io(last.unwrap_or_else(|| {
                    std::io::Error::other("the host name has no address")
                })));
            }
        };
        sock.set_nodelay(true).map_err(io)?;
        let on: libc::c_int = 1;
        // SAFETY: setsockopt reads an int of the size given from a live local.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_KEEPALIVE,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        // The handshake must not wait forever on a server that accepted but never answers.
        sock.set_read_timeout(Some(CONNECT_TIMEOUT)).map_err(io)?;
        let may_block = Arc::new(AtomicBool::new(false));
        let stream = BlockingSocket {
            sock: sock.try_clone().map_err(io)?,
            may_block: may_block.clone(),
        };
        let mut cfg = tokio_postgres::Config::new();
        cfg.user(&t.user).dbname(db).application_name("dbduel");
        if let Some(p) = &t.password {
            cfg.password(p.expose());
        }
        let driver = Driver::new(may_block);
        let (client, conn) = {
            let mut fut = pin!(cfg.connect_raw(stream, NoTls));
            driver
                .run(|cx| fut.as_mut().poll(cx))
                .map_err(super::postgres::pg_err)?
        };
        sock.set_read_timeout(None).map_err(io)?;
        Ok(PgConn {
            client: Some(client),
            conn,
            driver,
            broken: None,
            sock,
        })
    }

    /// Run `f(client)` to completion, driving the connection meanwhile.
    fn block_on<'c, T, F>(&'c mut self, f: impl FnOnce(&'c Client) -> F) -> Result<T>
    where
        F: Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    {
        if let Some(why) = &self.broken {
            return Err(closed(why));
        }
        let PgConn {
            client,
            conn,
            driver,
            broken,
            sock: _,
        } = self;
        let Some(client) = client.as_ref() else {
            return Err(closed("dropped"));
        };
        let mut fut = pin!(f(client));
        driver.run(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(v.map_err(super::postgres::pg_err));
            }
            loop {
                match conn.poll_message(cx) {
                    // notices and notifications: nothing in a benchmark listens for them
                    Poll::Ready(Some(Ok(_))) => continue,
                    Poll::Ready(Some(Err(e))) => {
                        let e = super::postgres::pg_err(e);
                        *broken = Some(e.message.clone());
                        return Poll::Ready(Err(e));
                    }
                    Poll::Ready(None) => {
                        *broken = Some("the server ended the session".into());
                        return Poll::Ready(Err(closed("the server ended the session")));
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
    }

    /// Run SQL text (simple query protocol): rows returned, or rows affected.
    pub fn simple_query(&mut self, sql: &str) -> Result<u64> {
        let msgs = self.block_on(|c| c.simple_query(sql))?;
        let (mut rows, mut had_rows, mut affected) = (0u64, false, 0u64);
        for m in msgs {
            match m {
                SimpleQueryMessage::Row(_) => {
                    had_rows = true;
                    rows += 1;
                }
                SimpleQueryMessage::CommandComplete(n) => affected += n,
                _ => {}
            }
        }
        Ok(if had_rows { rows } else { affected })
    }

    /// One BIGINT-compatible value from a query returning one row.
    pub fn query_i64(&mut self, sql: &str) -> Result<i64> {
        let row = self.block_on(|c| c.query_one(sql, &[]))?;
        row.try_get::<_, i64>(0).map_err(super::postgres::pg_err)
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Statement> {
        self.block_on(|c| c.prepare(sql))
    }

    /// Execute a prepared statement, reading (and counting) every row it returns; rows
    /// returned for a query, rows affected otherwise.
    pub fn run(&mut self, st: &Statement, args: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        if st.columns().is_empty() {
            return self.block_on(|c| c.execute(st, args));
        }
        self.block_on(|c| async move {
            let mut rows = pin!(c.query_raw(st, args.iter().copied()).await?);
            let mut n = 0u64;
            while let Some(r) = std::future::poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
                r?;
                n += 1;
            }
            Ok(n)
        })
    }
}

impl Drop for PgConn {
    /// Say goodbye the way the `postgres` crate does (a Terminate message), so the server
    /// sees an orderly disconnect; give up after a moment on a server that does not answer.
    fn drop(&mut self) {
        // Dropping the client first also keeps prepared statements from queueing Close
        // messages: they close with the session.
        self.client = None;
        if self.broken.is_some() {
            return;
        }
        let wait = Duration::from_secs(2);
        let _ = self.sock.set_read_timeout(Some(wait));
        let deadline = std::time::Instant::now() + wait;
        let conn = &mut self.conn;
        self.driver.run(|cx| {
            loop {
                if std::time::Instant::now() > deadline {
                    return Poll::Ready(());
                }
                match conn.poll_message(cx) {
                    Poll::Ready(None) | Poll::Ready(Some(Err(_))) => return Poll::Ready(()),
                    Poll::Ready(Some(Ok(_))) => continue,
                    Poll::Pending => return Poll::Pending,
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    #[test]
    fn blocking_is_allowed_only_after_a_round_without_progress() {
        let may_block = Arc::new(AtomicBool::new(false));
        let d = Driver::new(may_block.clone());
        let mut seen = Vec::new();
        let waker_of = |cx: &Context<'_>| cx.waker().clone();
        // round 1 wakes (progress), round 2 does not, round 3 finishes
        let out = d.run(|cx| {
            seen.push(may_block.load(Ordering::Relaxed));
            match seen.len() {
                1 => {
                    waker_of(cx).wake();
                    Poll::Pending
                }
                2 => Poll::Pending,
                _ => Poll::Ready(7),
            }
        });
        assert_eq!(out, 7);
        assert_eq!(seen, vec![false, false, true]);
        assert!(!may_block.load(Ordering::Relaxed), "cleared after the run");
    }

    #[test]
    fn the_socket_reads_only_when_allowed_and_then_once() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (sock, _) = listener.accept().unwrap();
        let may_block = Arc::new(AtomicBool::new(false));
        let mut s = BlockingSocket {
            sock,
            may_block: may_block.clone(),
        };
        peer.write_all(b"hello").unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        let mut mem = [0u8; 16];
        let mut buf = ReadBuf::new(&mut mem);
        // data is there, but the executor has not allowed a read: no system call, Pending
        assert!(Pin::new(&mut s).poll_read(&mut cx, &mut buf).is_pending());
        may_block.store(true, Ordering::Relaxed);
        assert!(Pin::new(&mut s).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled(), b"hello");
        assert!(
            !may_block.load(Ordering::Relaxed),
            "one read per permission"
        );
        assert!(Pin::new(&mut s).poll_read(&mut cx, &mut buf).is_pending());
        // writes go straight out
        assert!(matches!(
            Pin::new(&mut s).poll_write(&mut cx, b"back"),
            Poll::Ready(Ok(4))
        ));
        let mut got = [0u8; 4];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"back");
        // end of stream reads as zero bytes, which the protocol code takes as closed
        drop(peer);
        may_block.store(true, Ordering::Relaxed);
        let before = buf.filled().len();
        assert!(Pin::new(&mut s).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled().len(), before);
    }
}
