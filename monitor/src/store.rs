//! The runs xcmon has received: the newest [`KEEP_RUNS`], each with where it came from and when
//! and a number of its own, plus counts of what was refused; followers get each new run as it
//! arrives.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::broadcast;
use xcd_wire::trace::TraceRun;

/// Runs kept; older ones are dropped.
pub const KEEP_RUNS: usize = 500;
/// New runs a slow follower may fall behind by before it misses some.
const FOLLOW_BACKLOG: usize = 64;

/// One run as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The sending program's address.
    pub from: SocketAddr,
    /// When it arrived.
    pub at: SystemTime,
    /// The record.
    pub run: TraceRun,
}

#[derive(Debug, Default)]
struct Inner {
    runs: VecDeque<Received>,
    refused: u64,
    dropped: u64,
}

/// The store, shared by the intake and the pages.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
    news: broadcast::Sender<Received>,
}

impl Default for Store {
    fn default() -> Self {
        Store { inner: Arc::default(), news: broadcast::channel(FOLLOW_BACKLOG).0 }
    }
}

impl Store {
    fn lock(&self) -> parking_lot::MutexGuard<'_, Inner> {
        self.inner.lock()
    }

    /// Keeps a run, dropping the oldest past [`KEEP_RUNS`], and tells the followers.
    pub fn add(&self, received: Received) {
        let mut inner = self.lock();
        if inner.runs.len() == KEEP_RUNS {
            inner.runs.pop_front();
            inner.dropped += 1;
        }
        inner.runs.push_back(received.clone());
        drop(inner);
        // No follower is not an error.
        let _ = self.news.send(received);
    }

    /// Counts a line that was not a trace record.
    pub fn refuse(&self) {
        self.lock().refused += 1;
    }

    /// The runs kept, oldest first.
    pub fn runs(&self) -> Vec<Received> {
        self.lock().runs.iter().cloned().collect()
    }

    /// The number of the oldest run kept: runs are numbered from 0 as they arrive, and keep
    /// their number while they are kept.
    pub fn first_id(&self) -> u64 {
        self.lock().dropped
    }

    /// Run number `id`, while it is kept.
    pub fn run(&self, id: u64) -> Option<Received> {
        let inner = self.lock();
        let at = usize::try_from(id.checked_sub(inner.dropped)?).ok()?;
        inner.runs.get(at).cloned()
    }

    /// Lines refused and old runs dropped, so far.
    pub fn counts(&self) -> (u64, u64) {
        let inner = self.lock();
        (inner.refused, inner.dropped)
    }

    /// Each new run from now on.
    pub fn follow(&self) -> broadcast::Receiver<Received> {
        self.news.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(i: u64) -> Received {
        Received {
            from: "127.0.0.1:1".parse().expect("address"),
            at: SystemTime::UNIX_EPOCH,
            run: TraceRun {
                version: "0.1.0".into(),
                program: "escape".into(),
                pid: 1,
                source: "main.rs:1".into(),
                block: "escape".into(),
                items: i,
                tiles: 1,
                started_ms: 0,
                seconds: 0.1,
                placement: None,
                workers: Vec::new(),
                spans: Vec::new(),
                merged: false,
            },
        }
    }

    #[test]
    fn the_store_keeps_the_newest_runs_and_counts_the_rest() {
        let store = Store::default();
        let mut follower = store.follow();
        for i in 0..(KEEP_RUNS as u64 + 10) {
            store.add(received(i));
        }
        let runs = store.runs();
        assert_eq!(runs.len(), KEEP_RUNS);
        assert_eq!(runs[0].run.items, 10);
        assert_eq!(store.counts(), (0, 10));
        // Runs keep their numbers: the first ten are gone, number 10 is the oldest kept.
        assert_eq!(store.first_id(), 10);
        assert_eq!(store.run(10).map(|r| r.run.items), Some(10));
        assert_eq!(store.run(KEEP_RUNS as u64 + 9).map(|r| r.run.items), Some(KEEP_RUNS as u64 + 9));
        assert!(store.run(9).is_none() && store.run(KEEP_RUNS as u64 + 10).is_none() && store.run(u64::MAX).is_none());
        store.refuse();
        assert_eq!(store.counts(), (1, 10));
        // A follower that fell behind misses the oldest news, not the newest.
        let mut last = None;
        while let Ok(news) = follower.try_recv().or_else(|_| follower.try_recv()) {
            last = Some(news.run.items);
        }
        assert_eq!(last, Some(KEEP_RUNS as u64 + 9));
    }
}
