//! Watching a run live: `run --metrics-listen ADDR` serves an OpenMetrics endpoint for
//! Prometheus (or anything that scrapes it) while the run goes, and at `/` a live page ([`page`])
//! that draws the running step's throughput and p99 per contender each second. It is one more consumer of the
//! run's events ([`feed`]), reading the per-second records the journal writes — no step knows
//! it exists and no client pays for it — laid out as [`exposition`] text by [`serve`]'s one
//! thread; the system sampler's latest second of each running step is laid out by `machine`.

pub mod exposition;
pub mod feed;
mod machine;
pub mod page;
pub mod serve;

pub use feed::{Feed, Shared, shared};
pub use serve::{Endpoint, serve};

use std::net::{SocketAddr, ToSocketAddrs};

/// Where `--metrics-listen` asks to listen: `PORT` (loopback), `HOST:PORT` or `[IPv6]:PORT`.
/// An address that is not loopback is refused unless `allow_remote`: the endpoint has no
/// authentication, and says what runs where.
pub fn listen_addr(spec: &str, allow_remote: bool) -> Result<SocketAddr, String> {
    let text = spec.trim();
    let with_host = if text.parse::<u16>().is_ok() {
        format!("127.0.0.1:{text}")
    } else {
        text.to_string()
    };
    let addr = with_host
        .to_socket_addrs()
        .map_err(|e| format!("--metrics-listen {spec}: not HOST:PORT or PORT ({e})"))?
        .next()
        .ok_or_else(|| format!("--metrics-listen {spec}: the name resolves to no address"))?;
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(format!(
            "--metrics-listen {spec}: {} is not a loopback address, and the endpoint has no authentication; give --metrics-allow-remote to listen there anyway",
            addr.ip()
        ));
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_the_flag() {
        assert_eq!(
            listen_addr("9464", false).expect("port").to_string(),
            "127.0.0.1:9464"
        );
        assert!(listen_addr("[::1]:0", false).is_ok());
        let e = listen_addr("0.0.0.0:9464", false).expect_err("refused");
        assert!(e.contains("--metrics-allow-remote"), "{e}");
        assert!(listen_addr("0.0.0.0:9464", true).is_ok());
        assert!(listen_addr("nonsense", false).is_err());
    }
}
