//! The daemon client: connecting to daemons named in `XC_PAR_REMOTE` or found by mDNS, over
//! HTTP/2 with TLS under a pinned certificate, and what a program asks of them. It knows nothing
//! of workers or scheduling (the remote worker in `crate::worker::remote` drives it).
//!
//! Layout: [`daemon`] (a pinned connection and what the daemon holds), [`stream`] (one tile stream
//! per device and block), [`pin`] (the certificate check and TLS set-up), [`error`] (refusals in
//! the tutorial's words), [`check`] (`xcrun check`: each step of reaching a daemon, said),
//! [`pool`] (daemons of a pool found by mDNS, and the watch on them), [`reader`] (reading a
//! daemon for a monitor, sending it no work).

pub mod check;
pub(crate) mod daemon;
pub mod error;
pub mod pin;
pub mod pool;
pub mod reader;
pub(crate) mod stream;

use std::net::{SocketAddr, ToSocketAddrs};

pub(crate) use daemon::Daemon;
pub use daemon::{PIN_PREFIX, pin_key};
pub use error::RemoteError;
pub(crate) use stream::TileStream;

use crate::home::Home;

/// Connects to every daemon of `addrs` (a name that resolves to several addresses is several
/// daemons) and of `found` (`host:port` and address, from mDNS), all at once; returns the
/// daemons that serve, and an error per daemon that cannot.
pub(crate) fn connect_all(
    runtime: &tokio::runtime::Handle,
    addrs: &[String],
    found: &[(String, SocketAddr)],
    home: &Home,
    secret: Option<&str>,
) -> (Vec<Daemon>, Vec<RemoteError>) {
    let mut targets: Vec<(String, SocketAddr)> = found.to_vec();
    let mut errors = Vec::new();
    for addr in addrs {
        let with_port = with_default_port(addr);
        match with_port.to_socket_addrs() {
            Ok(ips) => {
                let mut ips: Vec<_> = ips.collect();
                ips.sort();
                ips.dedup();
                let several = ips.len() > 1;
                for ip in ips {
                    let label = if several { format!("{}:{}", ip.ip(), ip.port()) } else { with_port.clone() };
                    targets.push((label, ip));
                }
            }
            Err(e) => errors.push(RemoteError::Unreachable { addr: with_port, reason: e.to_string() }),
        }
    }
    let connected = runtime.block_on(futures_util::future::join_all(
        targets.iter().map(|(label, ip)| Daemon::connect(label, *ip, home, secret)),
    ));
    let mut daemons = Vec::new();
    for result in connected {
        match result {
            Ok(daemon) => daemons.push(daemon),
            Err(e) => errors.push(e),
        }
    }
    (daemons, errors)
}

/// `addr` as `host:port`, with the daemon's default port ([`xcd_wire::rest::DEFAULT_PORT`])
/// where it names none.
pub(crate) fn with_default_port(addr: &str) -> String {
    if addr.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        addr.to_owned()
    } else {
        format!("{addr}:{}", xcd_wire::rest::DEFAULT_PORT)
    }
}
