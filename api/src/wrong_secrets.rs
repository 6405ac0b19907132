//! Wrong secrets, limited so that a secret cannot be guessed at the speed of the network, and so
//! that a guesser cannot stop a program that already holds the secret:
//! - **per address** (an IPv4 address; an IPv6 /64, which one host commonly holds whole): after
//!   `free` wrong secrets (5, `-secret-failures`) the address is held back: every request from it
//!   that carries a secret is refused for 1 s, doubling with each further wrong one to 5 minutes.
//!   A right secret from an address that is not held back clears its count.
//! - **in total**: [`BURST`] wrong secrets, then [`RATE`] a second, across every address. Past
//!   that, a secret is not even compared (refused as held back for a second) until the budget
//!   refills, so that many addresses, or one host's many IPv6 addresses, guess no faster.
//! - **memory**: [`ENTRIES`] addresses are remembered. When full, the quietest address that is not
//!   held back is forgotten first; when every one is held back, a new address's secret is not
//!   compared until one frees: churning through addresses forgets nobody's hold.
//!
//! The caller does not apply a hold to a connection that has already shown the right secret
//! itself ([`crate::admission`]): a guesser sharing a program's address (NAT, a shared host)
//! cannot stop that program, and cannot guess through it either, since a secret is compared on
//! every request and every wrong one is counted.
//!
//! So the bound: at most `BURST + RATE × seconds` wrong secrets in all, whatever the number of
//! addresses; from one address, `free` and then one per hold.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

/// Wrong secrets an address may send before it is held back, unless configured otherwise
/// (`-secret-failures`).
pub const FREE_FAILURES: u32 = 5;
/// Wrong secrets compared, across every address, per second once the burst is spent.
pub const RATE: f64 = 10.0;
/// Wrong secrets compared at once, across every address, before [`RATE`] applies.
pub const BURST: f64 = 100.0;
/// The first hold; each further failure doubles it.
const FIRST_HOLD: Duration = Duration::from_secs(1);
/// The longest hold.
const LONGEST_HOLD: Duration = Duration::from_secs(300);
/// A count left alone this long (and not held back) is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(900);
/// Addresses remembered at once.
pub const ENTRIES: usize = 10_000;

/// The key an address is counted under: IPv4 as is (also when mapped into IPv6), IPv6 by /64.
pub fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// Whole seconds to wait, rounded up: a client that obeys `Retry-After` is not refused again.
pub fn retry_after(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[derive(Debug, Clone, Copy)]
struct Count {
    failures: u32,
    last: Instant,
    held_until: Option<Instant>,
}

impl Count {
    fn held(&self, now: Instant) -> bool {
        self.held_until.is_some_and(|until| until > now)
    }
}

#[derive(Debug)]
struct Counts {
    by_address: HashMap<IpAddr, Count>,
    /// Wrong secrets that may still be compared now, and when that was worked out.
    budget: f64,
    refilled: Instant,
}

impl Counts {
    fn refill(&mut self, now: Instant) {
        let seconds = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.budget = (self.budget + seconds * RATE).min(BURST);
        self.refilled = now;
    }

    /// Makes room for one more address, if any address may be forgotten.
    fn room(&mut self, now: Instant) -> bool {
        if self.by_address.len() < ENTRIES {
            return true;
        }
        self.by_address.retain(|_, c| c.held(now) || now.saturating_duration_since(c.last) < FORGET_AFTER);
        if self.by_address.len() < ENTRIES {
            return true;
        }
        let quietest =
            self.by_address.iter().filter(|(_, c)| !c.held(now)).min_by_key(|(_, c)| c.last).map(|(ip, _)| *ip);
        quietest.is_some_and(|ip| self.by_address.remove(&ip).is_some())
    }
}

/// Wrong secrets by client address, and in total.
#[derive(Debug)]
pub struct FailedSecrets {
    free: u32,
    counts: Mutex<Counts>,
}

impl Default for FailedSecrets {
    fn default() -> Self {
        FailedSecrets::new(FREE_FAILURES)
    }
}

impl FailedSecrets {
    /// Holds an address back after `free` wrong secrets (at least one).
    pub fn new(free: u32) -> Self {
        let counts = Counts { by_address: HashMap::new(), budget: BURST, refilled: Instant::now() };
        FailedSecrets { free: free.max(1), counts: Mutex::new(counts) }
    }

    /// Wrong secrets an address may send before it is held back.
    pub fn free(&self) -> u32 {
        self.free
    }

    /// Whether a secret from `client` may be compared at `now`; if not, how long to wait. Refused
    /// while the address is held back, while the total budget is spent, and for a new address
    /// while every remembered one is held back.
    pub fn may_compare(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut counts = self.counts.lock();
        let key = key(client);
        if let Some(until) = counts.by_address.get(&key).and_then(|c| c.held_until) {
            if let Some(wait) = until.checked_duration_since(now).filter(|w| !w.is_zero()) {
                return Err(wait);
            }
        }
        counts.refill(now);
        if counts.budget < 1.0 {
            return Err(Duration::from_secs_f64((1.0 - counts.budget) / RATE));
        }
        if !counts.by_address.contains_key(&key) && !counts.room(now) {
            return Err(FIRST_HOLD);
        }
        Ok(())
    }

    /// How long `client` is still held back at `now`, if it is.
    #[cfg(test)]
    fn held(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let counts = self.counts.lock();
        let until = counts.by_address.get(&key(client)).and_then(|c| c.held_until)?;
        until.checked_duration_since(now).filter(|w| !w.is_zero())
    }

    /// Counts a wrong secret from `client` at `now`; returns how long it is now held back.
    pub fn failed(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let mut counts = self.counts.lock();
        counts.refill(now);
        counts.budget = (counts.budget - 1.0).max(0.0);
        let key = key(client);
        if !counts.by_address.contains_key(&key) && !counts.room(now) {
            return None;
        }
        let count = counts.by_address.entry(key).or_insert(Count { failures: 0, last: now, held_until: None });
        if !count.held(now) && now.saturating_duration_since(count.last) >= FORGET_AFTER {
            *count = Count { failures: 0, last: now, held_until: None };
        }
        count.failures = count.failures.saturating_add(1);
        count.last = now;
        if count.failures < self.free {
            return None;
        }
        let doublings = (count.failures - self.free).min(16);
        let hold = FIRST_HOLD.saturating_mul(1 << doublings).min(LONGEST_HOLD);
        count.held_until = Some(now + hold);
        Some(hold)
    }

    /// A right secret from `client`: its count starts again, unless it is held back (a guesser
    /// there does not get its guesses back because a program at the same address is served).
    pub fn succeeded(&self, client: IpAddr, now: Instant) {
        let mut counts = self.counts.lock();
        let key = key(client);
        if counts.by_address.get(&key).is_some_and(|c| !c.held(now)) {
            counts.by_address.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn an_address_is_held_back_from_its_fifth_failure_and_others_are_not() {
        let limit = FailedSecrets::default();
        let (guesser, other) = (ip("10.0.0.9"), ip("10.0.0.7"));
        let t = Instant::now();
        for i in 1..FREE_FAILURES {
            assert_eq!(limit.may_compare(guesser, t), Ok(()));
            assert_eq!(limit.failed(guesser, t + Duration::from_millis(u64::from(i))), None, "failure {i}");
        }
        assert_eq!(limit.failed(guesser, t), Some(Duration::from_secs(1)), "the fifth holds it back");
        assert_eq!(limit.may_compare(guesser, t), Err(Duration::from_secs(1)));
        assert_eq!(limit.may_compare(other, t), Ok(()), "another address is not held back");
        assert_eq!(limit.failed(guesser, t), Some(Duration::from_secs(2)), "doubling");
        assert_eq!(limit.failed(guesser, t), Some(Duration::from_secs(4)));
        for _ in 0..20 {
            limit.failed(guesser, t);
        }
        assert_eq!(limit.held(guesser, t), Some(LONGEST_HOLD), "at most 5 minutes");
        let after = t + LONGEST_HOLD + Duration::from_secs(1);
        assert_eq!(limit.held(guesser, after), None, "then free to try");
        limit.succeeded(guesser, t);
        assert!(limit.held(guesser, t).is_some(), "a right secret while held back clears nothing");
        limit.succeeded(guesser, after);
        assert_eq!(limit.failed(guesser, after), None, "a right secret once free clears the count");
        let later = t + FORGET_AFTER + Duration::from_secs(1);
        for _ in 1..FREE_FAILURES {
            limit.failed(other, t);
        }
        assert_eq!(limit.failed(other, later), None, "an old count is forgotten");
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after(Duration::from_millis(1)), 1);
        assert_eq!(retry_after(Duration::from_millis(1999)), 2);
        assert_eq!(retry_after(Duration::from_millis(8040)), 9);
        assert_eq!(retry_after(Duration::from_secs(2)), 2);
    }

    #[test]
    fn ipv6_counts_by_slash_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(key(ip("2001:db8:1:2:aaaa::1")), key(ip("2001:db8:1:2:ffff:1:2:3")));
        assert_ne!(key(ip("2001:db8:1:2::1")), key(ip("2001:db8:1:3::1")));
        assert_eq!(key(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        let limit = FailedSecrets::default();
        let t = Instant::now();
        for i in 0..FREE_FAILURES {
            limit.failed(ip(&format!("2001:db8::{:x}", i + 1)), t);
        }
        assert!(limit.may_compare(ip("2001:db8::abcd"), t).is_err(), "one /64 is one address");
    }

    #[test]
    fn many_addresses_guess_no_faster_than_the_total_budget() {
        let limit = FailedSecrets::default();
        let t = Instant::now();
        let mut compared = 0;
        for i in 0..10 * BURST as u32 {
            let client = IpAddr::from((0x0a00_0000 + i).to_be_bytes());
            if limit.may_compare(client, t).is_ok() {
                limit.failed(client, t);
                compared += 1;
            }
        }
        assert_eq!(compared, BURST as u32, "the burst, then nothing");
        let wait = limit.may_compare(ip("192.0.2.1"), t).expect_err("spent");
        assert!(wait <= Duration::from_secs_f64(1.0 / RATE) + Duration::from_millis(1), "{wait:?}");
        assert_eq!(limit.may_compare(ip("192.0.2.1"), t + Duration::from_secs(1)), Ok(()), "refilled");
    }

    #[test]
    fn churning_addresses_forgets_no_hold_and_memory_is_bounded() {
        let limit = FailedSecrets::new(1);
        let mut t = Instant::now();
        for i in 0..(ENTRIES as u32 + 50) {
            // Each address's 1 s hold is over when the table fills; none is forgotten by age yet.
            t += Duration::from_millis(50);
            let _ = limit.failed(IpAddr::from((0x0a00_0000 + i).to_be_bytes()), t);
        }
        assert_eq!(limit.counts.lock().by_address.len(), ENTRIES, "bounded");
        let limit = FailedSecrets::new(1);
        let t = Instant::now();
        {
            let mut counts = limit.counts.lock();
            for i in 0..ENTRIES as u32 {
                let held = Count { failures: 1, last: t, held_until: Some(t + LONGEST_HOLD) };
                counts.by_address.insert(IpAddr::from((0x0a00_0000 + i).to_be_bytes()), held);
            }
        }
        assert_eq!(limit.may_compare(ip("192.0.2.9"), t), Err(FIRST_HOLD), "a new address waits");
        assert_eq!(limit.failed(ip("192.0.2.9"), t), None);
        assert!(limit.held(ip("10.0.0.0"), t).is_some(), "the oldest hold is kept");
    }
}
