//! The endpoint's HTTP side: `GET /metrics` with the exposition (OpenMetrics or Prometheus's
//! classic text, as the scraper's `Accept` header asks), `GET /` with the live page and
//! `GET /live.json` with what it draws, until the run is over.
//!
//! Plain `std::net`: the endpoint answers one GET on one path, once a scrape interval, and
//! closes each connection; an HTTP crate would add its runtime, parsers and dependencies for
//! none of what it offers (keep-alive, chunking, routing, TLS). One thread accepts and hands
//! each connection to a thread of its own, at most [`MAX_IN_FLIGHT`] at once (more are
//! turned away with 503), each with a deadline for its whole request and one for its whole
//! answer, so a client that trickles bytes holds one thread for seconds, never the endpoint;
//! dropping the endpoint stops the accepting thread and never waits for a client. A request
//! whose `Host` is a name other than this machine's or `localhost` is refused, so a web page
//! cannot reach the endpoint through a name it rebinds to loopback (DNS rebinding).

use super::exposition::TextFormat;
use super::feed::{Shared, render, snapshot};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A request's head may be at most this long.
const MAX_HEAD: usize = 8192;
/// Requests answered at once; more are turned away.
pub const MAX_IN_FLIGHT: usize = 8;
/// The whole request head must arrive within this.
const READ_DEADLINE: Duration = Duration::from_secs(2);
/// The whole answer must be taken within this.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);

/// A running endpoint; dropping it stops accepting (requests being answered end on their
/// own deadlines).
pub struct Endpoint {
    /// Where it listens (the port chosen when 0 was asked for).
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The thread waits in accept: one connection of our own wakes it to see the flag.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
            });
        }
        let woken = TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok();
        if let Some(t) = self.thread.take()
            && woken
        {
            // It only accepts and hands over: it ends as soon as it sees the flag.
            let _ = t.join();
        }
    }
}

/// Answer scrapes on `listener` from `state` until the returned endpoint is dropped.
pub fn serve(listener: TcpListener, state: Shared) -> std::io::Result<Endpoint> {
    let addr = listener.local_addr()?;
    // Blocking: a scrape is answered as it comes, and the thread costs nothing between
    // scrapes (no polling).
    listener.set_nonblocking(false)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let host = Arc::new(host_name());
    let thread = std::thread::Builder::new()
        .name("metrics-listen".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) if !flag.load(Ordering::Relaxed) => {
                        hand_over(conn, &state, &in_flight, &host);
                    }
                    Ok(_) => {}
                    // out of descriptors, say: wait a little rather than spin
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        })?;
    Ok(Endpoint {
        addr,
        stop,
        thread: Some(thread),
    })
}

/// Answer `conn` on a thread of its own, or turn it away when enough are being answered.
fn hand_over(
    mut conn: TcpStream,
    state: &Shared,
    in_flight: &Arc<AtomicUsize>,
    host: &Arc<String>,
) {
    if in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
        in_flight.fetch_sub(1, Ordering::AcqRel);
        let _ = conn.set_nonblocking(true);
        let _ = conn.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    let (state, count, host) = (state.clone(), in_flight.clone(), host.clone());
    let spawned = std::thread::Builder::new()
        .name("metrics-answer".into())
        .spawn(move || {
            answer(conn, &state, &host);
            count.fetch_sub(1, Ordering::AcqRel);
        });
    if spawned.is_err() {
        in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A request's head as far as the endpoint reads it.
struct Request {
    method: String,
    path: String,
    host: Option<String>,
    accept: Option<String>,
}

fn parse(head: &[u8]) -> Request {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    let mut r = Request {
        method: method.to_string(),
        path: path.split('?').next().unwrap_or("").to_string(),
        host: None,
        accept: None,
    };
    for line in lines.take_while(|l| !l.is_empty()) {
        if let Some((name, value)) = line.split_once(':') {
            let value = Some(value.trim().to_string());
            if name.eq_ignore_ascii_case("host") {
                r.host = value;
            } else if name.eq_ignore_ascii_case("accept") {
                r.accept = value;
            }
        }
    }
    r
}

/// May a request naming `host` (its `Host` header, port and all) be answered? An address,
/// `localhost` and this machine's own name are; any other name may be one a web page
/// rebinds to this machine. No header at all (HTTP/1.0) is taken: browsers always send one.
pub fn host_allowed(host: Option<&str>, own_name: &str) -> bool {
    let Some(h) = host else { return true };
    let name = match h.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => h.rsplit_once(':').map_or(h, |(n, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                n
            } else {
                h
            }
        }),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<IpAddr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
        // This machine's name, or its short form: never any name that merely begins with
        // it (`node7.attacker.example`).
        || (!own_name.is_empty()
            && (name == own_name || own_name.split('.').next() == Some(name.as_str())))
}

/// This machine's name, lower case (empty when it has none).
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that much.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    if ok {
        String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase()
    } else {
        String::new()
    }
}

/// Read a request head by its deadline; `None` when it did not come whole in time.
fn read_head(conn: &mut TcpStream) -> Option<Vec<u8>> {
    let deadline = Instant::now() + READ_DEADLINE;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() || head.len() >= MAX_HEAD {
            return None;
        }
        conn.set_read_timeout(Some(left)).ok()?;
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(head)
}

/// Write `bytes` by the write deadline, or give up.
fn write_by(conn: &mut TcpStream, mut bytes: &[u8]) {
    let deadline = Instant::now() + WRITE_DEADLINE;
    while !bytes.is_empty() {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        if left.is_zero() || conn.set_write_timeout(Some(left)).is_err() {
            return;
        }
        match conn.write(bytes) {
            Ok(0) | Err(_) => return,
            Ok(n) => bytes = &bytes[n..],
        }
    }
}

fn answer(mut conn: TcpStream, state: &Shared, own_name: &str) {
    let _ = conn.set_nonblocking(false);
    let Some(head) = read_head(&mut conn) else {
        return;
    };
    let r = parse(&head);
    let (status, ctype, body) = if !host_allowed(r.host.as_deref(), own_name) {
        (
            "403 Forbidden",
            "text/plain; charset=utf-8",
            "the Host header names neither this machine nor an address: ask for the endpoint by its address\n".to_string(),
        )
    } else {
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/metrics") => {
                let format = TextFormat::negotiate(r.accept.as_deref());
                ("200 OK", format.content_type(), render(state, format))
            }
            ("GET", "/") => (
                "200 OK",
                "text/html; charset=utf-8",
                super::page::PAGE.to_string(),
            ),
            ("GET", "/live.json") => ("200 OK", "application/json", snapshot(state)),
            _ => (
                "404 Not Found",
                "text/plain; charset=utf-8",
                "not found: GET /metrics\n".to_string(),
            ),
        }
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    write_by(&mut conn, reply.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_addresses_localhost_and_this_machines_name_are_answered() {
        for ok in [
            None,
            Some("127.0.0.1:9464"),
            Some("[::1]:9464"),
            Some("10.1.2.3:9464"),
            Some("localhost:9464"),
            Some("LOCALHOST"),
            Some("node7:9464"),
        ] {
            assert!(host_allowed(ok, "node7"), "{ok:?}");
        }
        assert!(host_allowed(Some("node7:1"), "node7.cluster.example"));
        assert!(host_allowed(
            Some("node7.cluster.example:1"),
            "node7.cluster.example"
        ));
        for bad in [
            Some("node7.attacker.example:9464"),
            Some("evil.example:9464"),
            Some("127.0.0.1.evil.example"),
            Some("localhost.evil.example:80"),
        ] {
            assert!(!host_allowed(bad, "node7"), "{bad:?}");
        }
    }

    fn get(addr: SocketAddr, host: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        write!(s, "GET /metrics HTTP/1.1\r\nHost: {host}\r\n\r\n").expect("write");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    }

    #[test]
    fn a_trickling_client_holds_neither_scrapes_nor_the_end() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let ep = serve(listener, crate::live::shared("s", "")).expect("serve");
        let addr = ep.addr;
        // Clients that send a byte now and then, more of them than are answered at once.
        let slow: Vec<TcpStream> = (0..MAX_IN_FLIGHT + 2)
            .map(|_| {
                let mut s = TcpStream::connect(addr).expect("connect");
                s.write_all(b"G").expect("a byte");
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        // Within their deadline the slow ones hold their threads; once it passes, a scrape
        // is answered.
        std::thread::sleep(READ_DEADLINE + Duration::from_millis(300));
        let began = Instant::now();
        let text = get(addr, &format!("127.0.0.1:{}", addr.port()));
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("text/plain; version=0.0.4"), "{text}");
        assert!(began.elapsed() < Duration::from_secs(2));
        // A name that is not this machine's is refused.
        let text = get(addr, "attacker.example");
        assert!(text.starts_with("HTTP/1.1 403"), "{text}");
        // Dropping the endpoint while a client trickles does not wait for it.
        let mut held = TcpStream::connect(addr).expect("connect");
        held.write_all(b"GET /metr").expect("part");
        let began = Instant::now();
        drop(ep);
        assert!(
            began.elapsed() < Duration::from_secs(1),
            "{:?}",
            began.elapsed()
        );
        drop(slow);
    }
}
