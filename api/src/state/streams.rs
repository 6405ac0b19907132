//! The tile streams open now, bounded by `Limits::max_streams`, and the drain that tells them to
//! stop reading new tiles. What a stream does is `crate::stream`'s; this module only counts them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::watch;

use crate::problem::{ApiError, Limit};

/// Open tile streams and the drain.
pub(crate) struct Streams {
    open: Arc<AtomicU64>,
    max: u64,
    draining: AtomicBool,
    /// Tells open tile streams to stop reading new tiles.
    drain_tx: watch::Sender<bool>,
    drain_rx: watch::Receiver<bool>,
}

/// A stream counted as open for as long as it lives.
pub(crate) struct StreamSlot(Arc<AtomicU64>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Streams {
    /// None open, at most `max`, not draining.
    pub(crate) fn new(max: u64) -> Streams {
        let (drain_tx, drain_rx) = watch::channel(false);
        Streams { open: Arc::default(), max, draining: AtomicBool::new(false), drain_tx, drain_rx }
    }

    /// Counts one more stream, or refuses it as `busy` when the most are open.
    pub(crate) fn try_open(&self) -> Result<StreamSlot, ApiError> {
        if self.open.fetch_add(1, Ordering::SeqCst) >= self.max {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError::Busy(Limit::Streams(self.max)));
        }
        Ok(StreamSlot(self.open.clone()))
    }

    /// Streams open now.
    pub(crate) fn open_now(&self) -> u64 {
        self.open.load(Ordering::SeqCst)
    }

    /// Stops every stream from reading new tiles, for good.
    pub(crate) fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.drain_tx.send_replace(true);
    }

    /// Whether the daemon is draining.
    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Changes to `true` when the daemon drains.
    pub(crate) fn drain_signal(&self) -> watch::Receiver<bool> {
        self.drain_rx.clone()
    }
}
