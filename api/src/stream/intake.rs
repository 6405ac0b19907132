//! What has arrived of a stream's request body: its frames, the front frame's share of the tile
//! budget (held, or waited for), and when the frame now arriving must be whole.

use axum::body::Bytes;
use xcd_wire::FrameSplitter;

use super::TileStream;
use crate::held::Wanted;
use crate::held::{Held, frame_cost};
use crate::problem::ApiError;

/// What has arrived of the request body: frames, the front frame's share of the tile budget
/// (held, or waited for), and when the frame now arriving must be whole.
pub(super) struct Intake {
    pub(super) splitter: FrameSplitter,
    pub(super) charge: Option<Held>,
    pub(super) wanted: Option<Wanted>,
    pub(super) frame_due: Option<tokio::time::Instant>,
}

impl Intake {
    /// The next whole frame whose share of the budget is held, taking or asking for its share
    /// first; `Ok(None)` when none is ready (or its share is being waited for).
    pub(super) fn next(&mut self, stream: &TileStream) -> Result<Option<(Bytes, Option<Held>)>, xcd_wire::FrameError> {
        let (state, limits) = (&stream.state, stream.state.limits());
        if self.charge.is_none() && self.wanted.is_none() {
            if let Some(cost) = self.splitter.front().and_then(|front| frame_cost(front, stream.block.desc(), limits)) {
                match state.budgets().tile_share(stream.peer, cost) {
                    Ok(held) => self.charge = Some(held),
                    Err(wait) => self.wanted = Some(wait),
                }
            }
        }
        if self.wanted.is_some() {
            return Ok(None);
        }
        Ok(self.splitter.next_frame()?.map(|frame| {
            self.frame_due = None;
            (frame, self.charge.take())
        }))
    }

    /// Sets when the frame now arriving must be whole, while there is `room` to take it; the
    /// clock starts when its first bytes arrive.
    pub(super) fn set_due(&mut self, room: bool, limits: &crate::Limits) {
        self.frame_due = match self.splitter.arriving() {
            Some(length) if room => {
                self.frame_due.or_else(|| Some(tokio::time::Instant::now() + frame_time(limits, length)))
            }
            _ => None,
        };
    }

    /// Why a stream with nothing running ends now, if it does: `Some(None)` cleanly.
    pub(super) fn ending(&self, body_done: bool, draining: bool) -> Option<Option<ApiError>> {
        if !(body_done || draining) {
            return None;
        }
        Some(if draining && !(body_done && self.splitter.is_empty()) {
            Some(ApiError::Draining)
        } else if !self.splitter.is_empty() {
            Some(ApiError::BadFrame("the stream ended inside a frame".into()))
        } else {
            None
        })
    }
}

/// How long a frame of `length` bytes may take to arrive: the idle limit, and a second per MiB.
pub(super) fn frame_time(limits: &crate::Limits, length: u64) -> std::time::Duration {
    limits.stream_idle + std::time::Duration::from_secs(length >> 20)
}
