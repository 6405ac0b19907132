//! How a stream's answer is being taken by HTTP/2 ([`Taking`]), and each result's share of the
//! tile budget, held until its last piece is taken ([`ResultShare`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::held::Held;

/// How a stream's answer is being taken by HTTP/2: how many of its results still hold a share of
/// the budget, and when it last took a piece. A stream waiting for room while its own results go
/// untaken for the idle limit has a client that reads nothing.
pub(super) struct Taking {
    pub(super) holding: std::sync::atomic::AtomicUsize,
    last: parking_lot::Mutex<tokio::time::Instant>,
}

impl Taking {
    pub(super) fn new() -> Self {
        Taking { holding: Default::default(), last: parking_lot::Mutex::new(tokio::time::Instant::now()) }
    }

    pub(super) fn took(&self) {
        *self.last.lock() = tokio::time::Instant::now();
    }

    pub(super) fn last(&self) -> tokio::time::Instant {
        *self.last.lock()
    }
}

/// A result's share of the budget, counted by its stream's [`Taking`] until dropped.
pub(super) struct ResultShare {
    _held: Held,
    taking: Arc<Taking>,
}

impl ResultShare {
    pub(super) fn new(held: Held, taking: &Arc<Taking>) -> Self {
        taking.holding.fetch_add(1, Ordering::SeqCst);
        ResultShare { _held: held, taking: taking.clone() }
    }
}

impl Drop for ResultShare {
    fn drop(&mut self) {
        self.taking.holding.fetch_sub(1, Ordering::SeqCst);
    }
}
