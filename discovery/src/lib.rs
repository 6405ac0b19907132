//! Finding daemons without naming them: multicast DNS (`_xcd._tcp`). A daemon advertises itself
//! ([`Advertiser`]) with a TXT record ([`Advert`]: version, pool, data layout, certificate
//! fingerprint, devices, whether it takes work); programs and xcmon browse ([`Browser`]) and
//! decide for themselves whom to use.
//!
//! Owns mdns-sd and the record's format. It must not touch HTTP, TLS or devices: what an
//! advertisement says is a hint (a program still pins what TLS shows it), and which daemons to
//! use is the caller's business. Where the traffic goes is a [`Scope`]: a daemon listening on one
//! address speaks mDNS on that interface only, so one bound to 127.0.0.1 never multicasts on the
//! machine's outside interface.
#![forbid(unsafe_code)]

mod advert;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

pub use advert::{Advert, AdvertError, MAX_DEVICES};
use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent, ServiceInfo};

/// The DNS-SD service type of xcd daemons.
pub const SERVICE_TYPE: &str = "_xcd._tcp.local.";

/// Why mDNS could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// mdns-sd refused (no usable interface, a socket error, a bad name).
    #[error("multicast DNS: {0}")]
    Mdns(#[from] mdns_sd::Error),
}

/// Where mDNS traffic goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every interface (a daemon listening on 0.0.0.0, a program browsing).
    Everywhere,
    /// The interface that holds this address only.
    Interface(IpAddr),
}

impl Scope {
    /// The scope of a daemon listening on `listen`.
    pub fn of_listen_address(listen: IpAddr) -> Scope {
        if listen.is_unspecified() { Scope::Everywhere } else { Scope::Interface(listen) }
    }

    fn apply(self, mdns: &ServiceDaemon) -> Result<(), DiscoveryError> {
        if let Scope::Interface(ip) = self {
            mdns.disable_interface(IfKind::All)?;
            let kind = match ip {
                IpAddr::V4(v4) if v4.is_loopback() => IfKind::LoopbackV4,
                IpAddr::V6(v6) if v6.is_loopback() => IfKind::LoopbackV6,
                other => IfKind::Addr(other),
            };
            mdns.enable_interface(kind)?;
        }
        Ok(())
    }
}

/// This machine's host name, as mDNS names it (`gpu-box`), without `.local.`.
pub fn host_name() -> String {
    let name = gethostname::gethostname().to_string_lossy().into_owned();
    let label: String = name
        .split('.')
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' })
        .collect();
    if label.is_empty() { "xcd-host".to_owned() } else { label }
}

/// A daemon's advertisement, kept up to date until withdrawn.
pub struct Advertiser {
    mdns: ServiceDaemon,
    instance: String,
    host: String,
    scope: Scope,
    port: u16,
    fullname: String,
    current: Advert,
}

impl Advertiser {
    /// Advertises a daemon listening on `port`.
    pub fn start(scope: Scope, port: u16, advert: Advert) -> Result<Advertiser, DiscoveryError> {
        let mdns = ServiceDaemon::new()?;
        scope.apply(&mdns)?;
        let host = host_name();
        // Unique per daemon on a host: several daemons on one machine differ by port.
        let instance = format!("xcd {host} {port}");
        let mut advertiser =
            Advertiser { mdns, instance, host, scope, port, fullname: String::new(), current: advert.clone() };
        advertiser.register(&advert)?;
        Ok(advertiser)
    }

    fn register(&mut self, advert: &Advert) -> Result<(), DiscoveryError> {
        let txt: HashMap<String, String> = advert.txt().into_iter().collect();
        let host = format!("{}.local.", self.host);
        let info = match self.scope {
            Scope::Interface(ip) => ServiceInfo::new(SERVICE_TYPE, &self.instance, &host, ip, self.port, txt)?,
            Scope::Everywhere => {
                ServiceInfo::new(SERVICE_TYPE, &self.instance, &host, "", self.port, txt)?.enable_addr_auto()
            }
        };
        self.fullname = info.get_fullname().to_owned();
        self.mdns.register(info)?;
        self.current = advert.clone();
        Ok(())
    }

    /// The service's full name (`xcd gpu-box 7227._xcd._tcp.local.`).
    pub fn fullname(&self) -> &str {
        &self.fullname
    }

    /// Announces a changed advertisement (it stopped or started taking work); does nothing when
    /// nothing changed.
    pub fn update(&mut self, advert: &Advert) -> Result<(), DiscoveryError> {
        if *advert == self.current {
            return Ok(());
        }
        self.register(advert)
    }

    /// Withdraws the advertisement (a goodbye packet, so browsers drop it at once) and stops,
    /// waiting at most `wait`.
    pub fn withdraw(self, wait: Duration) {
        if let Ok(done) = self.mdns.unregister(&self.fullname) {
            let _ = done.recv_timeout(wait);
        }
        if let Ok(done) = self.mdns.shutdown() {
            let _ = done.recv_timeout(wait);
        }
    }
}

/// A daemon found by browsing.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundDaemon {
    /// Its service's full name, unique on the network.
    pub name: String,
    /// Its host name, without `.local.`.
    pub host: String,
    /// Its addresses.
    pub addrs: Vec<IpAddr>,
    /// Its port.
    pub port: u16,
    /// What it says about itself, or why that could not be read.
    pub advert: Result<Advert, AdvertError>,
}

impl FoundDaemon {
    /// `host:port`, as programs name daemons (and pins).
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// What browsing noticed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A daemon appeared.
    Appeared(FoundDaemon),
    /// A daemon's record changed (it stopped or started taking work, its addresses changed).
    Updated(FoundDaemon),
    /// A daemon withdrew its advertisement (or stopped answering).
    Left(String),
}

/// Browsing for daemons; runs until dropped.
pub struct Browser {
    mdns: ServiceDaemon,
    events: mdns_sd::Receiver<ServiceEvent>,
    found: BTreeMap<String, FoundDaemon>,
    /// Services seen but not resolved yet (their SRV, TXT or address records still to come).
    unresolved: std::collections::BTreeSet<String>,
}

impl Browser {
    /// Starts browsing.
    pub fn start(scope: Scope) -> Result<Browser, DiscoveryError> {
        let mdns = ServiceDaemon::new()?;
        scope.apply(&mdns)?;
        let events = mdns.browse(SERVICE_TYPE)?;
        Ok(Browser { mdns, events, found: BTreeMap::new(), unresolved: Default::default() })
    }

    /// What changed since the last call, waiting for news until `until` (not at all when it has
    /// passed).
    pub fn poll(&mut self, until: Instant) -> Vec<Change> {
        let mut changes = Vec::new();
        loop {
            let wait = until.saturating_duration_since(Instant::now());
            let event = if wait.is_zero() { self.events.try_recv().ok() } else { self.events.recv_timeout(wait).ok() };
            let Some(event) = event else { return changes };
            match event {
                ServiceEvent::ServiceFound(_, name) if !self.found.contains_key(&name) => {
                    self.unresolved.insert(name);
                }
                ServiceEvent::ServiceResolved(service) => {
                    self.unresolved.remove(&service.fullname);
                    let advert = Advert::from_txt(|k| service.get_property_val_str(k).map(str::to_owned));
                    let mut addrs: Vec<IpAddr> = service.addresses.iter().map(|a| a.to_ip_addr()).collect();
                    // IPv4 first: what a program connects to when it has the choice.
                    addrs.sort_by_key(|a| (a.is_ipv6(), *a));
                    let host = service.host.trim_end_matches('.').trim_end_matches(".local").to_owned();
                    let found = FoundDaemon { name: service.fullname.clone(), host, addrs, port: service.port, advert };
                    match self.found.insert(found.name.clone(), found.clone()) {
                        None => changes.push(Change::Appeared(found)),
                        Some(old) if old != found => changes.push(Change::Updated(found)),
                        Some(_) => {}
                    }
                }
                ServiceEvent::ServiceRemoved(_, name) => {
                    self.unresolved.remove(&name);
                    if self.found.remove(&name).is_some() {
                        changes.push(Change::Left(name));
                    }
                }
                _ => {}
            }
        }
    }

    /// How many services were seen whose records have not all arrived yet.
    pub fn unresolved(&self) -> usize {
        self.unresolved.len()
    }

    /// Every daemon known now.
    pub fn found(&self) -> impl Iterator<Item = &FoundDaemon> {
        self.found.values()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.mdns.stop_browse(SERVICE_TYPE);
        let _ = self.mdns.shutdown();
    }
}
