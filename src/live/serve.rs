//! The endpoint's HTTP side: one thread answering `GET /metrics` with the exposition, `GET /`
//! with the live page and `GET /live.json` with what it draws, until the run is over.
//!
//! Plain `std::net`: the endpoint answers one GET on one path, once a scrape interval, and
//! closes each connection; an HTTP crate would add its threads, parsers and dependencies for
//! none of what it offers (keep-alive, chunking, routing, TLS). Requests are read with a
//! timeout and a size limit, so a client that sends nothing or too much cannot hold it.

use super::exposition::CONTENT_TYPE;
use super::feed::{Shared, render, snapshot};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A request's head may be at most this long.
const MAX_HEAD: usize = 8192;

/// A running endpoint; dropping it stops its thread.
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
    let thread = std::thread::Builder::new()
        .name("metrics-listen".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) if !flag.load(Ordering::Relaxed) => answer(conn, &state),
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

fn answer(mut conn: TcpStream, state: &Shared) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_write_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, ctype, body) = match (method, path.split('?').next().unwrap_or("")) {
        ("GET", "/metrics") => ("200 OK", CONTENT_TYPE, render(state)),
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
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes());
}
