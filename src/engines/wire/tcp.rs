//! Connecting the lean wire clients (`wire::mysql`, `wire::pg`): the first of the host's
//! addresses that answers within the timeout, with Nagle's delay off.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

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
