//! The daemons xcmon found by multicast DNS, grouped by pool: version, devices, and whether each
//! takes work (or why not), from their advertisements; and, where xcmon reads the daemons
//! themselves (it has their secret), their live figures and throughput.

use std::collections::BTreeMap;

use askama::Template;
use xcd_discovery::FoundDaemon;

use crate::chart::Chart;

/// What xcmon read from a daemon itself: `/v1/capacity` and `/v1/devices`, over time.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveView {
    /// Tiles running or queued on it now; None until a reading has succeeded.
    pub in_flight: Option<u64>,
    /// Each device's memory: `vulkan:llvmpipe: 1.2 GiB free of 2.0 GiB`.
    pub memory: Vec<String>,
    /// Its items per second over the last minutes.
    pub chart: Chart,
    /// Each device's tiles in flight over the last minutes, by device id.
    pub in_flight_charts: Vec<(String, Chart)>,
    /// Its refusals over the same minutes, by code, e.g. `busy 3`; empty when none.
    pub refusals: Vec<String>,
    /// Why the last reading failed, if it did (the figures are then older).
    pub error: Option<String>,
}

/// One daemon, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonView {
    /// `host:port`.
    pub addr: String,
    /// Its xcc version, or what is wrong with its advertisement.
    pub version: String,
    /// Its devices.
    pub devices: Vec<String>,
    /// `accepting`, or why not.
    pub state: String,
    /// True when it takes work.
    pub accepting: bool,
    /// Its live figures, where xcmon reads them.
    pub live: Option<LiveView>,
}

/// The daemons of one pool.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolView {
    /// The pool's name, or `(no pool)`.
    pub name: String,
    /// Its daemons, by address.
    pub daemons: Vec<DaemonView>,
}

/// The daemons section.
#[derive(Debug, Template)]
#[template(path = "daemons.html")]
pub struct DaemonsPage {
    /// Pools by name, the daemons without one last.
    pub pools: Vec<PoolView>,
    /// True when xcmon reads the daemons themselves (it was given their secret).
    pub reading: bool,
}

impl DaemonsPage {
    /// The section for `found`, with the live figures in `live` (by advertisement name) where
    /// `reading`.
    pub fn of<'a>(
        found: impl IntoIterator<Item = &'a FoundDaemon>,
        live: &BTreeMap<String, LiveView>,
        reading: bool,
    ) -> DaemonsPage {
        let mut pools: Vec<PoolView> = Vec::new();
        for daemon in found {
            let (pool, view) = match &daemon.advert {
                Ok(advert) => (
                    advert.pool.clone(),
                    DaemonView {
                        addr: daemon.addr(),
                        version: advert.version.clone(),
                        devices: advert.devices.clone(),
                        state: if advert.accepting {
                            "accepting".to_owned()
                        } else {
                            format!("not taking work: {}", advert.reason.as_deref().unwrap_or("no reason given"))
                        },
                        accepting: advert.accepting,
                        live: live.get(&daemon.name).cloned(),
                    },
                ),
                Err(e) => (
                    None,
                    DaemonView {
                        addr: daemon.addr(),
                        version: format!("unreadable advertisement ({e})"),
                        devices: Vec::new(),
                        state: "unknown".to_owned(),
                        accepting: false,
                        live: None,
                    },
                ),
            };
            let name = pool.unwrap_or_else(|| "(no pool)".to_owned());
            match pools.iter_mut().find(|p| p.name == name) {
                Some(p) => p.daemons.push(view),
                None => pools.push(PoolView { name, daemons: vec![view] }),
            }
        }
        for pool in &mut pools {
            pool.daemons.sort_by(|a, b| a.addr.cmp(&b.addr));
        }
        pools.sort_by(|a, b| (a.name == "(no pool)", &a.name).cmp(&(b.name == "(no pool)", &b.name)));
        DaemonsPage { pools, reading }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::Duration;

    use xcd_discovery::{Advert, AdvertError};

    use super::*;

    fn found(port: u16, pool: Option<&str>, accepting: bool) -> FoundDaemon {
        FoundDaemon {
            name: format!("xcd box {port}._xcd._tcp.local."),
            host: "box".into(),
            addrs: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            port,
            advert: Ok(Advert {
                version: "0.1.0".into(),
                pool: pool.map(str::to_owned),
                layout: "little-64".into(),
                fingerprint: None,
                devices: vec!["cuda:<H200>".into()],
                accepting,
                reason: (!accepting).then(|| "nimby until 17:00".to_owned()),
            }),
        }
    }

    #[test]
    fn daemons_are_grouped_by_pool_and_escaped() {
        let mut broken = found(9, None, true);
        broken.advert = Err(AdvertError::Missing("version"));
        let all = [found(3, Some("render"), true), found(1, None, true), found(2, Some("render"), false), broken];
        let page = DaemonsPage::of(&all, &BTreeMap::new(), false);
        let names: Vec<&str> = page.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["render", "(no pool)"]);
        assert_eq!(page.pools[0].daemons[0].addr, "box:2");
        assert_eq!(page.pools[0].daemons[0].state, "not taking work: nimby until 17:00");
        let html = page.render().expect("renders");
        assert!(html.contains("cuda:&#60;H200&#62;") && !html.contains("<H200>"), "{html}");
        assert!(html.contains("unreadable advertisement"), "{html}");
        assert!(html.contains("give xcmon XC_PAR_SECRET"), "{html}");
        let empty = DaemonsPage::of(&[], &BTreeMap::new(), false).render().expect("renders");
        assert!(empty.contains("No daemons found"), "{empty}");
    }

    #[test]
    fn live_figures_show_beside_the_advertisement() {
        let all = [found(3, Some("render"), true), found(4, Some("render"), true)];
        let live = BTreeMap::from([
            (
                all[0].name.clone(),
                LiveView {
                    in_flight: Some(7),
                    memory: vec!["cuda:H200: 100.0 GiB free of 139.0 GiB".into()],
                    chart: Chart::of(&[1e6, 3e6], Duration::from_secs(2)),
                    in_flight_charts: vec![(
                        "cuda:<H200> \"0\"".into(),
                        Chart::of_unit(&[2.0, 3.0], Duration::from_secs(2), crate::Unit::TilesInFlight),
                    )],
                    refusals: vec!["busy 3".into(), "unknown_block 1".into()],
                    error: Some("the daemon refused the secret <x>".into()),
                },
            ),
            (
                // Read, but never successfully yet: no figure is shown as if it were one.
                all[1].name.clone(),
                LiveView {
                    in_flight: None,
                    memory: Vec::new(),
                    chart: Chart::of(&[], Duration::from_secs(2)),
                    in_flight_charts: Vec::new(),
                    refusals: Vec::new(),
                    error: Some("the daemon stopped answering".into()),
                },
            ),
        ]);
        let html = DaemonsPage::of(&all, &live, true).render().expect("renders");
        for want in [
            "7 tiles in flight",
            "100.0 GiB free of 139.0 GiB",
            "<polyline",
            "refused the secret &#60;x&#62;",
            "tiles in flight on cuda:&#60;H200&#62; &#34;0&#34;",
            "peak 3 tiles",
            "refusals, last 5 min: busy 3, unknown_block 1",
        ] {
            assert!(html.contains(want), "{want:?} in {html}");
        }
        assert!(html.contains("no reading yet") && html.contains("stopped answering"), "the second daemon: {html}");
        assert!(!html.contains("0 tiles in flight"), "{html}");
        assert!(!html.contains("give xcmon XC_PAR_SECRET"), "{html}");
    }
}
