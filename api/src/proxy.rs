//! Who a request came from when the daemon sits behind a reverse proxy: the connection's peer,
//! unless that peer is a proxy named with `-trust-proxy`, in which case the client the proxy
//! names in `X-Forwarded-For`. Nobody else's `X-Forwarded-For` is believed.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use axum::http::HeaderMap;
use ipnet::IpNet;

use crate::activity::Peer;

/// The proxies whose `X-Forwarded-For` the daemon believes: addresses or networks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

/// A `-trust-proxy` entry that is neither an address nor a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("-trust-proxy {0:?} is not an address or a network (e.g. 10.0.0.5 or 10.0.0.0/24)")]
pub struct TrustedProxiesError(String);

impl FromStr for TrustedProxies {
    type Err = TrustedProxiesError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut nets = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let net = match part.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => part.parse::<IpAddr>().map(IpNet::from).map_err(|_| TrustedProxiesError(part.to_owned()))?,
            };
            nets.push(net);
        }
        Ok(TrustedProxies(nets))
    }
}

impl TrustedProxies {
    /// True when no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// Who sent a request that arrived from `peer` with `headers`: walking `X-Forwarded-For` from
    /// the right while each hop is a trusted proxy, the first hop that is not.
    pub fn peer(&self, peer: SocketAddr, headers: &HeaderMap) -> Peer {
        let direct = canonical(peer.ip());
        if !self.trusts(direct) {
            return Peer { client: Some(direct), via: None };
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let mut client = direct;
        for hop in hops.iter().rev() {
            let Some(ip) = parse_hop(hop) else { break };
            client = canonical(ip);
            if !self.trusts(client) {
                break;
            }
        }
        Peer { client: Some(client), via: (client != direct).then_some(direct) }
    }
}

/// An IPv4 address mapped into IPv6 (a dual-stack socket's view) as plain IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// `203.0.113.9`, `203.0.113.9:5000`, `2001:db8::1` or `[2001:db8::1]:5000`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>().ok().or_else(|| hop.parse::<SocketAddr>().ok().map(|a| a.ip()))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn from(peer: &str, forwarded: &[&str], trusted: &str) -> Peer {
        let mut headers = HeaderMap::new();
        for value in forwarded {
            headers.append("x-forwarded-for", HeaderValue::from_str(value).expect("a header"));
        }
        let trusted: TrustedProxies = trusted.parse().expect("parses");
        trusted.peer(peer.parse().expect("an address"), &headers)
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client() {
        let ip = |s: &str| Some(s.parse::<IpAddr>().expect("an ip"));
        let direct = from("198.51.100.7:4000", &["203.0.113.9"], "");
        assert_eq!(direct, Peer { client: ip("198.51.100.7"), via: None }, "nobody is trusted");
        let spoofed = from("198.51.100.7:4000", &["203.0.113.9"], "10.0.0.0/8");
        assert_eq!(spoofed.client, ip("198.51.100.7"), "a peer that is no proxy cannot say who it is");
        let proxied = from("10.0.0.5:4000", &["203.0.113.9"], "10.0.0.0/8");
        assert_eq!(proxied, Peer { client: ip("203.0.113.9"), via: ip("10.0.0.5") });
        assert_eq!(proxied.to_string(), "203.0.113.9 (via 10.0.0.5)");
        // The client forged a hop before the proxy's: the rightmost untrusted hop wins.
        let forged = from("10.0.0.5:4000", &["1.2.3.4, 203.0.113.9"], "10.0.0.5");
        assert_eq!(forged.client, ip("203.0.113.9"));
        let chained = from("10.0.0.5:4000", &["203.0.113.9", "10.0.0.6:80"], "10.0.0.5,10.0.0.6");
        assert_eq!(chained.client, ip("203.0.113.9"), "two proxies, two headers");
        let garbage = from("10.0.0.5:4000", &["not an address"], "10.0.0.5");
        assert_eq!(garbage, Peer { client: ip("10.0.0.5"), via: None }, "the proxy itself");
        let mapped = from("[::ffff:10.0.0.5]:4000", &["[2001:db8::1]:5000"], "10.0.0.5");
        assert_eq!(mapped.client, ip("2001:db8::1"));
        assert!("10.0.0.0/33".parse::<TrustedProxies>().is_err());
        assert_eq!(
            "proxy.example".parse::<TrustedProxies>().map_err(|e| e.to_string()),
            Err("-trust-proxy \"proxy.example\" is not an address or a network (e.g. 10.0.0.5 or 10.0.0.0/24)"
                .to_owned())
        );
    }
}
