//! A count of the payload bytes this process's own code copies: how a regression to more
//! copies per byte shows (issue 22; `xcd-bench copy` prints copies per byte on each side).
//!
//! Every place in xcd that copies a tile's inputs or outputs calls [`count`]: gathering a tile
//! frame's inputs ([`crate::frame::encode_tile`]), a daemon buffering a frame out of the
//! transport's chunks ([`crate::FrameSplitter`]), writing results in place ([`crate::Rope`]),
//! a small result joined to its header ([`crate::result_pieces`]), and a device's results read
//! back from mapped memory (the engine). What TLS, HTTP/2 and a GPU API copy inside themselves is
//! theirs and not counted. The count is one relaxed atomic add per copy, never per byte.

use std::sync::atomic::{AtomicU64, Ordering};

static COPIED: AtomicU64 = AtomicU64::new(0);

/// Counts `bytes` payload bytes copied.
pub fn count(bytes: usize) {
    COPIED.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// Payload bytes copied by this process since it started.
pub fn copied() -> u64 {
    COPIED.load(Ordering::Relaxed)
}
