//! Advertising and browsing on loopback only (never the machine's outside interface): a daemon's
//! record is found with its TXT keys, updated when it stops taking work, and gone once withdrawn.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use xcd_discovery::{Advert, Advertiser, Browser, Change, Scope};

const LOOPBACK: Scope = Scope::Interface(IpAddr::V4(Ipv4Addr::LOCALHOST));

fn advert(pool: &str) -> Advert {
    Advert {
        version: "0.1.0".into(),
        pool: Some(pool.into()),
        layout: "little-64".into(),
        fingerprint: Some("cd".repeat(32)),
        devices: vec!["vulkan:llvmpipe".into()],
        accepting: true,
        reason: None,
    }
}

/// Polls until `want` holds for a change, or 10 s pass.
fn wait_for(browser: &mut Browser, want: impl Fn(&Change) -> bool) -> Change {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = Instant::now();
        assert!(now < deadline, "nothing seen in 10 s");
        for change in browser.poll(now + Duration::from_millis(200)) {
            if want(&change) {
                return change;
            }
        }
    }
}

#[test]
fn a_daemon_is_found_updated_and_withdrawn() {
    let port = 40_000 + (std::process::id() % 20_000) as u16;
    let mut browser = Browser::start(LOOPBACK).expect("browsing");
    let mut advertiser = Advertiser::start(LOOPBACK, port, advert("render")).expect("advertising");
    let name = advertiser.fullname().to_owned();
    let Change::Appeared(found) = wait_for(&mut browser, |c| matches!(c, Change::Appeared(f) if f.name == name)) else {
        unreachable!()
    };
    assert_eq!(found.port, port);
    assert_eq!(found.advert, Ok(advert("render")));
    assert!(found.addrs.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{found:?}");

    let declining = Advert { accepting: false, reason: Some("nimby until 17:00".into()), ..advert("render") };
    advertiser.update(&declining).expect("updated");
    let Change::Updated(found) = wait_for(&mut browser, |c| matches!(c, Change::Updated(f) if f.name == name)) else {
        unreachable!()
    };
    assert_eq!(found.advert, Ok(declining));

    advertiser.withdraw(Duration::from_secs(2));
    wait_for(&mut browser, |c| *c == Change::Left(name.clone()));
}
