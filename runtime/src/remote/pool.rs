//! Daemons found by multicast DNS, for `XC_PAR_POOL=NAME` or `XC_PAR_REMOTE=mdns`: which to take
//! and which to skip, and why.
//!
//! A program takes the daemons of its pool (with `XC_PAR_REMOTE=mdns` and no pool: those started
//! without `-pool`) that run its own version and data layout and take work now. Browsing waits
//! at most [`BROWSE_AT_MOST`]; it ends sooner once a daemon of the pool appeared, [`SETTLE`] has
//! passed since the last daemon of any pool appeared (answers to one query come as a burst, slower
//! on a loaded host), and no service seen is still missing records; and it happens only
//! when a run may use remote workers at all. What an advertisement says is a hint: the
//! program connects as to a named daemon, checks version and layout again and pins the
//! certificate TLS shows it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use xcd_discovery::{AdvertError, Browser, Change, DiscoveryError, FoundDaemon, Scope};
use xcd_wire::{Layout, VERSION};

/// The longest a program browses before its first run.
pub(crate) const BROWSE_AT_MOST: Duration = Duration::from_secs(3);
/// How long after the last daemon appeared browsing goes on, for the others (they answer the
/// same query within milliseconds, though their records may take longer).
pub(crate) const SETTLE: Duration = Duration::from_secs(1);

/// Why a daemon found by mDNS is not for this program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// Its records are not an xcd advertisement.
    #[error("not an xcd advertisement ({0})")]
    NotXcd(AdvertError),
    /// It is in another pool than the program's.
    #[error("in pool {theirs}, not {ours}")]
    OtherPool {
        /// The daemon's pool.
        theirs: String,
        /// The program's (`XC_PAR_POOL`).
        ours: String,
    },
    /// It is in a pool, and the program names none.
    #[error("in pool {0}; set XC_PAR_POOL={0} to use it")]
    PoolNotNamed(String),
    /// It is in no pool, and the program names one.
    #[error("in no pool, not {0}")]
    NoPool(String),
    /// It runs another version (the daemon's).
    #[error("{why}", why = super::error::version_differs(.0))]
    Version(String),
    /// It computes with another data layout (the daemon's).
    #[error("a different data layout: this program is {ours} and the daemon is {0}", ours = Layout::native())]
    Layout(String),
    /// It takes no work now, and why if it says.
    #[error("not taking work ({})", .0.as_deref().unwrap_or("no reason given"))]
    NotTaking(Option<String>),
    /// It advertised no address.
    #[error("advertised without an address")]
    NoAddress,
    /// It withdrew its advertisement.
    #[error("it withdrew its advertisement")]
    Withdrew,
}

/// The address to connect to, or why a found daemon is not for this program.
pub(crate) fn judge(found: &FoundDaemon, pool: Option<&str>) -> Result<SocketAddr, Skip> {
    let advert = found.advert.as_ref().map_err(|e| Skip::NotXcd(e.clone()))?;
    if advert.pool.as_deref() != pool {
        return Err(match (&advert.pool, pool) {
            (Some(theirs), Some(ours)) => Skip::OtherPool { theirs: theirs.clone(), ours: ours.to_owned() },
            (Some(theirs), None) => Skip::PoolNotNamed(theirs.clone()),
            (None, Some(ours)) => Skip::NoPool(ours.to_owned()),
            (None, None) => unreachable!("equal pools"),
        });
    }
    if advert.version != VERSION {
        return Err(Skip::Version(advert.version.clone()));
    }
    if advert.layout != Layout::native().to_string() {
        return Err(Skip::Layout(advert.layout.clone()));
    }
    if !advert.accepting {
        return Err(Skip::NotTaking(advert.reason.clone()));
    }
    let ip = found.addrs.first().ok_or(Skip::NoAddress)?;
    Ok(SocketAddr::new(*ip, found.port))
}

/// Daemons found, as (`host:port`, address) to connect to, and a line per daemon skipped.
pub struct Picked {
    /// The daemons to use: `host:port` (their name and pin key) and the address to reach.
    pub take: Vec<(String, SocketAddr)>,
    /// A line per daemon skipped, saying why.
    pub skipped: Vec<String>,
}

/// Browses for the daemons of `pool` (see the module's words on how long).
pub fn browse(pool: Option<&str>) -> Result<Picked, DiscoveryError> {
    watch(pool).map(|(picked, _)| picked)
}

/// [`browse`], keeping the browser to follow daemons that come and go.
pub(crate) fn watch(pool: Option<&str>) -> Result<(Picked, Watch), DiscoveryError> {
    let mut browser = Browser::start(Scope::Everywhere)?;
    let deadline = Instant::now() + BROWSE_AT_MOST;
    let mut ours_seen = false;
    let mut last_appeared = Instant::now();
    while Instant::now() < deadline {
        let changes = browser.poll(deadline.min(Instant::now() + Duration::from_millis(50)));
        for change in &changes {
            if let Change::Appeared(found) = change {
                ours_seen |= judge(found, pool).is_ok();
                last_appeared = Instant::now();
            }
        }
        if ours_seen && last_appeared.elapsed() >= SETTLE && browser.unresolved() == 0 {
            break;
        }
    }
    let mut picked = Picked { take: Vec::new(), skipped: Vec::new() };
    let mut taken = HashMap::new();
    for found in browser.found() {
        match judge(found, pool) {
            Ok(ip) => {
                taken.insert(found.name.clone(), found.addr());
                picked.take.push((found.addr(), ip));
            }
            Err(why) => picked.skipped.push(format!("skipped daemon {} found by mDNS: {why}", found.addr())),
        }
    }
    // Daemons on one host are told apart by port already; keep a stable order.
    picked.take.sort();
    Ok((picked, Watch { browser, pool: pool.map(str::to_owned), taken }))
}

/// Follows the daemons of a pool after the program started.
pub(crate) struct Watch {
    browser: Browser,
    pool: Option<String>,
    /// Daemons taken, by service name: their `host:port`.
    taken: HashMap<String, String>,
}

/// What changed in a pool since the last look.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Moves {
    /// Daemons to use now: `host:port` and address.
    pub(crate) joined: Vec<(String, SocketAddr)>,
    /// Daemons no longer to use: `host:port` and why.
    pub(crate) left: Vec<(String, Skip)>,
}

impl Watch {
    /// What changed, without waiting.
    pub(crate) fn moves(&mut self) -> Moves {
        let mut moves = Moves::default();
        for change in self.browser.poll(Instant::now()) {
            match change {
                Change::Appeared(found) | Change::Updated(found) => match judge(&found, self.pool.as_deref()) {
                    Ok(ip) => {
                        if !self.taken.contains_key(&found.name) {
                            self.taken.insert(found.name.clone(), found.addr());
                            moves.joined.push((found.addr(), ip));
                        }
                    }
                    Err(why) => {
                        if let Some(addr) = self.taken.remove(&found.name) {
                            moves.left.push((addr, why));
                        }
                    }
                },
                Change::Left(name) => {
                    if let Some(addr) = self.taken.remove(&name) {
                        moves.left.push((addr, Skip::Withdrew));
                    }
                }
            }
        }
        moves
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use xcd_discovery::Advert;

    use super::*;

    fn found(pool: Option<&str>, version: &str, accepting: bool) -> FoundDaemon {
        FoundDaemon {
            name: "xcd gpu-box 7227._xcd._tcp.local.".into(),
            host: "gpu-box".into(),
            addrs: vec![IpAddr::V4(Ipv4Addr::new(169, 254, 7, 1))],
            port: 7227,
            advert: Ok(Advert {
                version: version.into(),
                pool: pool.map(str::to_owned),
                layout: Layout::native().to_string(),
                fingerprint: None,
                devices: vec!["vulkan:x".into()],
                accepting,
                reason: (!accepting).then(|| "nimby until 17:00".to_owned()),
            }),
        }
    }

    #[test]
    fn a_program_takes_its_pool_of_its_version_that_takes_work() {
        let ok = judge(&found(Some("render"), VERSION, true), Some("render"));
        assert_eq!(ok, Ok("169.254.7.1:7227".parse().expect("address")));
        assert_eq!(judge(&found(None, VERSION, true), None).map(|a| a.port()), Ok(7227));
        let why = |f: FoundDaemon, pool| judge(&f, pool).expect_err("skipped").to_string();
        assert_eq!(why(found(Some("other"), VERSION, true), Some("render")), "in pool other, not render");
        assert!(why(found(Some("other"), VERSION, true), None).contains("set XC_PAR_POOL=other"));
        assert_eq!(why(found(None, VERSION, true), Some("render")), "in no pool, not render");
        assert!(why(found(Some("render"), "9.9.9", true), Some("render")).contains("a different xcc version"));
        assert!(why(found(Some("render"), VERSION, false), Some("render")).contains("nimby until 17:00"));
        let mut foreign = found(None, VERSION, true);
        foreign.advert = Err(AdvertError::Missing("version"));
        assert!(why(foreign, None).contains("not an xcd advertisement"));
    }
}
