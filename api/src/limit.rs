//! Failed secrets, limited per client address: after a few wrong secrets from one address, every
//! request from it that carries a secret (right or wrong) is refused for a while, doubling with
//! each further failure up to 5 minutes, so a secret cannot be guessed at the speed of the
//! network. A right secret from an address that is not held back clears its count. Bounded: at
//! most `ENTRIES` addresses are remembered, the longest quiet first forgotten.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong secrets an address may send before it is held back, unless configured otherwise
/// (`-secret-failures`).
pub const FREE_FAILURES: u32 = 5;
/// The first hold; each further failure doubles it.
const FIRST_HOLD: Duration = Duration::from_secs(1);
/// The longest hold.
const LONGEST_HOLD: Duration = Duration::from_secs(300);
/// A count left alone this long is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(900);
/// Addresses remembered at once.
const ENTRIES: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Count {
    failures: u32,
    last: Instant,
    held_until: Option<Instant>,
}

/// Wrong secrets by client address.
#[derive(Debug)]
pub struct FailedSecrets {
    free: u32,
    counts: Mutex<HashMap<IpAddr, Count>>,
}

impl Default for FailedSecrets {
    fn default() -> Self {
        FailedSecrets::new(FREE_FAILURES)
    }
}

impl FailedSecrets {
    /// Holds an address back after `free` wrong secrets.
    pub fn new(free: u32) -> Self {
        FailedSecrets { free, counts: Mutex::default() }
    }

    /// Wrong secrets an address may send before it is held back.
    pub fn free(&self) -> u32 {
        self.free
    }

    /// How long `client` is still held back at `now`, if it is.
    pub fn held(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(&client).and_then(|c| c.held_until).and_then(|until| until.checked_duration_since(now))
    }

    /// Counts a wrong secret from `client` at `now`; returns how long it is now held back.
    pub fn failed(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() >= ENTRIES && !counts.contains_key(&client) {
            counts.retain(|_, c| now.saturating_duration_since(c.last) < FORGET_AFTER);
            if counts.len() >= ENTRIES {
                if let Some(quietest) = counts.iter().min_by_key(|(_, c)| c.last).map(|(ip, _)| *ip) {
                    counts.remove(&quietest);
                }
            }
        }
        let count = counts.entry(client).or_insert(Count { failures: 0, last: now, held_until: None });
        if now.saturating_duration_since(count.last) >= FORGET_AFTER {
            *count = Count { failures: 0, last: now, held_until: None };
        }
        count.failures += 1;
        count.last = now;
        if count.failures <= self.free {
            return None;
        }
        let doublings = (count.failures - self.free - 1).min(16);
        let hold = FIRST_HOLD.saturating_mul(1 << doublings).min(LONGEST_HOLD);
        count.held_until = Some(now + hold);
        Some(hold)
    }

    /// A right secret from `client`: its count starts again.
    pub fn succeeded(&self, client: IpAddr) {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).remove(&client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_held_back_after_a_few_failures_and_others_are_not() {
        let limit = FailedSecrets::default();
        let (guesser, other) = (IpAddr::from([10, 0, 0, 9]), IpAddr::from([10, 0, 0, 7]));
        let t = Instant::now();
        for i in 0..FREE_FAILURES {
            assert_eq!(limit.failed(guesser, t + Duration::from_millis(u64::from(i))), None);
        }
        assert_eq!(limit.failed(guesser, t), Some(Duration::from_secs(1)));
        assert!(limit.held(guesser, t).is_some());
        assert_eq!(limit.held(other, t), None, "another address is not held back");
        assert_eq!(limit.failed(guesser, t), Some(Duration::from_secs(2)), "doubling");
        assert_eq!(limit.failed(guesser, t), Some(Duration::from_secs(4)));
        for _ in 0..20 {
            limit.failed(guesser, t);
        }
        assert_eq!(limit.held(guesser, t), Some(LONGEST_HOLD), "at most 5 minutes");
        assert_eq!(limit.held(guesser, t + LONGEST_HOLD + Duration::from_secs(1)), None, "then free to try");
        limit.succeeded(guesser);
        assert_eq!(limit.held(guesser, t), None, "a right secret clears it");
        let later = t + FORGET_AFTER + Duration::from_secs(1);
        for _ in 0..FREE_FAILURES {
            limit.failed(other, t);
        }
        assert_eq!(limit.failed(other, later), None, "an old count is forgotten");
    }

    #[test]
    fn memory_is_bounded() {
        let limit = FailedSecrets::default();
        let t = Instant::now();
        for i in 0..(ENTRIES as u32 + 50) {
            limit.failed(IpAddr::from(i.to_be_bytes()), t + Duration::from_micros(u64::from(i)));
        }
        assert!(limit.counts.lock().expect("not poisoned").len() <= ENTRIES);
    }
}
