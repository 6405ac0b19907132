//! Tile data held in memory, against one daemon-wide budget (`Limits::tile_bytes`): what a tile
//! costs, and a response body that keeps its tile's share until it has been sent or dropped.
//!
//! A tile is charged from the moment its frame starts to arrive (the frame's bytes, and the bytes
//! its results will take) until its results have gone to HTTP/2. This module only prices and
//! holds; the tile endpoints (`routes::tiles`) decide when to wait for room and when to refuse.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;
use xcd_wire::{BlockDesc, Front};

use crate::Limits;
use crate::state::kib;

/// The bytes of results a tile of `count` items of `desc` returns.
pub(crate) fn result_bytes(desc: &BlockDesc, count: u32) -> u64 {
    desc.tile_outputs().map(|i| u64::from(count) * u64::from(desc.arrays[i].elem_size)).sum()
}

/// The share of `Limits::tile_bytes`, in KiB, that the frame at the front of a stream takes: its
/// own bytes and its results' (a count whose results are over the frame limit is refused when the
/// frame is read, so costs the limit). None while its header is still arriving, or when its
/// length is over the limit (the splitter refuses it).
pub(crate) fn frame_cost(front: Front, desc: &BlockDesc, limits: &Limits) -> Option<u32> {
    if front.length > limits.max_frame_bytes {
        return None;
    }
    // kind (4), tag, start, count: a tile frame's count is here by 16 bytes after the prefix.
    let results = match front.count {
        Some(count) => result_bytes(desc, count).min(limits.max_frame_bytes),
        None if front.arrived >= front.length.min(16) => 0,
        None => return None,
    };
    Some(share(front.length + results, limits))
}

/// `bytes` in KiB of the budget, at most all of it (a tile larger than the budget takes it all).
pub(crate) fn share(bytes: u64, limits: &Limits) -> u32 {
    kib(bytes.min(limits.tile_bytes)).max(1)
}

/// A response body holding its share of the budget until it has been sent or dropped.
pub(crate) struct Holding {
    body: Body,
    _held: OwnedSemaphorePermit,
}

impl Holding {
    pub(crate) fn new(body: Body, held: OwnedSemaphorePermit) -> Self {
        Holding { body, _held: held }
    }
}

impl hyper::body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_costs_its_bytes_and_its_results_once_its_count_is_here() {
        let desc = one_output();
        let limits = Limits { tile_bytes: 64 << 20, ..Limits::default() };
        let front = |count, arrived| Front { length: 4096, count, arrived };
        assert_eq!(frame_cost(front(None, 10), &desc, &limits), None, "the count still arriving");
        assert_eq!(frame_cost(front(Some(1024), 16), &desc, &limits), Some(4 + 4), "4 KiB and 1024 × 4 bytes");
        let short = Front { length: 8, count: None, arrived: 8 };
        assert_eq!(frame_cost(short, &desc, &limits), Some(1), "a whole frame too short to be a tile");
        let huge = Front { length: 4096, count: Some(u32::MAX), arrived: 16 };
        assert_eq!(frame_cost(huge, &desc, &limits), Some(64 << 10), "at most the whole budget");
        let over = Front { length: limits.max_frame_bytes + 1, count: None, arrived: 0 };
        assert_eq!(frame_cost(over, &desc, &limits), None, "refused by the splitter");
    }

    /// A block with one u32 output per item.
    fn one_output() -> BlockDesc {
        BlockDesc {
            name: "one".into(),
            entry: "main".into(),
            arrays: vec![xcd_wire::ArraySpec {
                name: "out".into(),
                elem_size: 4,
                role: xcd_wire::ArrayRole::PerItem(xcd_wire::Access::Out),
            }],
            params: Vec::new(),
            forms: Default::default(),
        }
    }
}
