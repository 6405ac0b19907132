//! What the daemon did lately, for its own page and for monitors: totals of tiles and items done,
//! items per 2-second step over the last 5 minutes, the recent work by program, block and device,
//! the recent refusals with who asked, and how many of each code since the start. Bounded: a few
//! dozen entries each, whatever the load.

use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Length of one throughput step.
pub const STEP: Duration = Duration::from_secs(2);
/// Steps of throughput kept (5 minutes).
const STEPS: usize = 150;
/// Entries of recent work and of refusals kept.
const RECENT: usize = 32;

/// Who a request came from, put on each request by the accept loop: the client's address and,
/// when a trusted proxy forwarded it (`-trust-proxy`), the proxy's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peer {
    /// The client (None when served in-process, without the accept loop).
    pub client: Option<IpAddr>,
    /// The trusted proxy it came through.
    pub via: Option<IpAddr>,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.client {
            Some(ip) => write!(f, "{ip}")?,
            None => f.write_str("(in-process)")?,
        }
        match self.via {
            Some(proxy) => write!(f, " (via {proxy})"),
            None => Ok(()),
        }
    }
}

/// Recent work of one program on one block and device.
#[derive(Debug, Clone, PartialEq)]
pub struct RecentWork {
    /// The program's address.
    pub peer: Peer,
    /// The block's name.
    pub block: String,
    /// The device's id.
    pub device: String,
    /// Tiles done.
    pub tiles: u64,
    /// Items done.
    pub items: u64,
    /// Tiles that failed.
    pub failed: u64,
    /// When its last tile ended.
    pub last: Instant,
}

/// A refused request or tile.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// When.
    pub at: Instant,
    /// Who asked.
    pub peer: Peer,
    /// The refusal's code.
    pub code: &'static str,
    /// What was asked, e.g. `POST /v1/blocks`.
    pub what: String,
}

/// The daemon's recent activity.
pub struct Activity {
    started: Instant,
    tiles: AtomicU64,
    items: AtomicU64,
    /// Items per step, newest last, with the step's number since `started`.
    steps: Mutex<VecDeque<(u64, u64)>>,
    work: Mutex<VecDeque<RecentWork>>,
    refusals: Mutex<VecDeque<Refusal>>,
    /// Refusals since the daemon started, by code.
    refused: Mutex<BTreeMap<&'static str, u64>>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            started: Instant::now(),
            tiles: AtomicU64::new(0),
            items: AtomicU64::new(0),
            steps: Mutex::default(),
            work: Mutex::default(),
            refusals: Mutex::default(),
            refused: Mutex::default(),
        }
    }
}

impl Activity {
    /// When the daemon started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Tiles and items done since the daemon started.
    pub fn totals(&self) -> (u64, u64) {
        (self.tiles.load(Ordering::Relaxed), self.items.load(Ordering::Relaxed))
    }

    /// Counts a tile of `items` for `peer` on `block` and `device`, done or failed.
    pub fn tile(&self, peer: Peer, block: &str, device: &str, items: u64, ok: bool) {
        let now = Instant::now();
        if ok {
            self.tiles.fetch_add(1, Ordering::Relaxed);
            self.items.fetch_add(items, Ordering::Relaxed);
            let step = self.step_of(now);
            let mut steps = self.steps.lock();
            match steps.back_mut() {
                Some((s, n)) if *s == step => *n += items,
                _ => steps.push_back((step, items)),
            }
            while steps.front().is_some_and(|&(s, _)| s + (STEPS as u64) <= step) {
                steps.pop_front();
            }
        }
        let mut work = self.work.lock();
        let at = work.iter().position(|w| w.peer == peer && w.block == block && w.device == device);
        let mut entry = match at.and_then(|i| work.remove(i)) {
            Some(entry) => entry,
            None => RecentWork {
                peer,
                block: block.to_owned(),
                device: device.to_owned(),
                tiles: 0,
                items: 0,
                failed: 0,
                last: now,
            },
        };
        if ok {
            entry.tiles += 1;
            entry.items += items;
        } else {
            entry.failed += 1;
        }
        entry.last = now;
        work.push_front(entry);
        work.truncate(RECENT);
    }

    /// Keeps a refusal.
    pub fn refused(&self, peer: Peer, code: &'static str, what: String) {
        let mut refusals = self.refusals.lock();
        refusals.push_front(Refusal { at: Instant::now(), peer, code, what });
        refusals.truncate(RECENT);
        drop(refusals);
        *self.refused.lock().entry(code).or_default() += 1;
    }

    /// Refusals since the daemon started, by code (a few dozen codes at most: they are the
    /// daemon's own).
    pub fn refusal_counts(&self) -> BTreeMap<String, u64> {
        let refused = self.refused.lock();
        refused.iter().map(|(code, n)| ((*code).to_owned(), *n)).collect()
    }

    /// Items per second in each step of the last 5 minutes, oldest first (the step now running
    /// is left out: it is not over).
    pub fn rates(&self) -> Vec<f64> {
        self.rates_at(Instant::now())
    }

    fn rates_at(&self, at: Instant) -> Vec<f64> {
        let now = self.step_of(at);
        let first = now.saturating_sub(STEPS as u64);
        let steps = self.steps.lock();
        let mut rates = vec![0.0; (now - first) as usize];
        for &(step, items) in steps.iter() {
            if (first..now).contains(&step) {
                rates[(step - first) as usize] = items as f64 / STEP.as_secs_f64();
            }
        }
        rates
    }

    /// Recent work, most recent first.
    pub fn work(&self) -> Vec<RecentWork> {
        self.work.lock().iter().cloned().collect()
    }

    /// Recent refusals, most recent first.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.refusals.lock().iter().cloned().collect()
    }

    fn step_of(&self, at: Instant) -> u64 {
        (at.duration_since(self.started).as_millis() / STEP.as_millis()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(last: u8) -> Peer {
        Peer { client: Some(IpAddr::from([10, 0, 0, last])), via: None }
    }

    #[test]
    fn work_is_kept_by_program_block_and_device_most_recent_first() {
        let activity = Activity::default();
        activity.tile(peer(1), "escape", "vulkan:a", 100, true);
        activity.tile(peer(2), "escape", "vulkan:a", 50, true);
        activity.tile(peer(1), "escape", "vulkan:a", 100, true);
        activity.tile(peer(1), "escape", "vulkan:a", 100, false);
        assert_eq!(activity.totals(), (3, 250));
        let work = activity.work();
        assert_eq!(work.len(), 2);
        assert_eq!((work[0].peer, work[0].tiles, work[0].items, work[0].failed), (peer(1), 2, 200, 1));
        assert_eq!(work[0].peer.to_string(), "10.0.0.1");
        for i in 0..100u8 {
            activity.tile(peer(i), "other", "vulkan:a", 1, true);
            activity.refused(peer(i), "secret_refused", "GET /v1/devices".into());
        }
        assert_eq!((activity.work().len(), activity.refusals().len()), (RECENT, RECENT), "bounded");
        assert_eq!(activity.refusals()[0].peer, peer(99));
        assert_eq!(activity.rates().len(), 0, "no step is over yet");
    }

    #[test]
    fn rates_cover_the_last_five_minutes() {
        let activity = Activity::default();
        let later = |secs: u64| activity.started + Duration::from_secs(secs);
        assert_eq!(activity.step_of(later(5)), 2);
        let mut steps = activity.steps.lock();
        steps.extend([(0, 20), (1, 40), (2, 10)]);
        drop(steps);
        assert_eq!(activity.rates_at(later(5)), [10.0, 20.0], "the step not over yet is not shown");
        let rates = activity.rates_at(later(1000));
        assert_eq!(rates.len(), STEPS);
        assert!(rates.iter().all(|&r| r == 0.0), "old steps are gone: {rates:?}");
    }
}
