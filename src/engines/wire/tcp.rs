//! Connecting the lean wire clients (`wire::mysql`, `wire::pg`): the first of the host's
//! addresses that answers within the timeout, with Nagle's delay off; reading a blocking
//! socket without waiting; and the error a failed read or write makes.

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Reads a socket that stays blocking for everything else without waiting: `recv` with
/// `MSG_DONTWAIT`, so no `fcntl` switches it back and forth around each read.
pub struct DontWait<'a>(pub &'a TcpStream);

impl Read for DontWait<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: recv writes at most `buf.len()` bytes into `buf`, which we hold mutably.
        let n = unsafe {
            libc::recv(
                self.0.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// Ends the message of a read or write that ran out its socket timeout, so that the
/// handshake can tell it from a connection that broke.
const TIMED_OUT: &str = " (timed out)";

/// A failed read or write on `family`'s connection, kind `connection`; marked when it ran
/// out a socket timeout.
pub fn io_error(family: &str, e: std::io::Error) -> crate::engine::EngineError {
    let timed_out = matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    );
    let suffix = if timed_out { TIMED_OUT } else { "" };
    crate::engine::EngineError::new("connection", format!("{family}: {e}{suffix}"))
}

/// Whether `e` is an [`io_error`] that ran out a socket timeout.
pub fn timed_out(e: &crate::engine::EngineError) -> bool {
    e.kind == "connection" && e.message.ends_with(TIMED_OUT)
}

pub fn connect(host: &str, port: u16, timeout: Duration) -> std::io::Result<TcpStream> {
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("the host name has no address")))
}
