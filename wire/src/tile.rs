//! Tiles: contiguous ranges of a block's items, and the words a kernel is handed with one.
//!
//! Every form receives the same header: `start` (the block-wide index of the tile's first item),
//! `count` (items in the tile) and `first` (the tile-local index of the first item of this
//! dispatch, non-zero only where a device must split a large tile into several dispatches),
//! followed by the block's scalar parameters, one 32-bit word each.

use serde::{Deserialize, Serialize};

/// Words in the header that precedes a block's scalar parameters: `start`, `count`, `first`.
pub const TILE_HEADER_WORDS: usize = 3;

/// Invocations per workgroup in every WGSL, SPIR-V and MSL form (`@workgroup_size(64)`).
pub const WORKGROUP_SIZE: u32 = 64;

/// A contiguous range of items of one block run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tile {
    /// Block-wide index of the first item.
    pub start: u32,
    /// Number of items; never zero.
    pub count: u32,
}

impl Tile {
    /// The block-wide index one past the last item.
    pub fn end(&self) -> u64 {
        u64::from(self.start) + u64::from(self.count)
    }

    /// The uniform words a kernel sees for one dispatch of this tile.
    pub fn header(&self, first: u32) -> [u32; TILE_HEADER_WORDS] {
        [self.start, self.count, first]
    }
}
