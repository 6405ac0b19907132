//! The bounds on what clients may make the daemon hold or do ([`Limits`], set once by the
//! binary), and the budgets that hold them to those bounds while it runs ([`Budgets`]: the
//! uploads being received and the tile data held, each shared out by address through
//! [`crate::held`]). What to refuse, and in which words, when a budget has no room is said here;
//! the accounting itself is `crate::held`'s.

use axum::body::Body;
use std::sync::Arc;
use std::time::Duration;

use crate::activity::Peer;
use crate::held::{Budget, Held, Metered, Short, Wanted};
use crate::problem::{ApiError, Limit};

/// The least a registered block counts for against [`Limits::max_block_store_bytes`].
pub const BLOCK_WEIGHT: u64 = 256 << 10;

/// Bounds on what one client may make the daemon hold or do.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest tile frame (and single-tile body), in bytes.
    pub max_frame_bytes: u64,
    /// Largest block registration body, in bytes.
    pub max_block_bytes: usize,
    /// Largest whole array, in bytes.
    pub max_array_bytes: usize,
    /// Whole arrays held at once, in bytes; the least recently used go first.
    pub array_cache_bytes: u64,
    /// Blocks held at once.
    pub max_blocks: usize,
    /// Block descriptions held at once, in bytes, each counted as at least [`BLOCK_WEIGHT`]
    /// (about what a device keeps for a small block's pipeline).
    pub max_block_store_bytes: u64,
    /// Tile streams open at once.
    pub max_streams: u64,
    /// Connections that have shown the secret, open at once.
    pub max_connections: usize,
    /// Connections that have not shown the secret yet, open at once; the oldest is closed to make
    /// room for a new one ([`crate::admission`]).
    pub unproven_connections: usize,
    /// Of those, from one address (IPv6: one /64); the address's oldest is closed to make room. A
    /// trusted proxy has no such share.
    pub unproven_per_address: usize,
    /// Time from accepting a connection to a request on it showing the secret (TLS handshake
    /// included); a connection that has not by then is closed.
    pub prove_within: Duration,
    /// A tile stream that sends nothing for this long with no tile in flight, or reads no result
    /// for this long, is closed.
    pub stream_idle: Duration,
    /// Time for a TLS handshake.
    pub handshake: Duration,
    /// Time for an HTTP/1.1 request's headers to arrive (a client that trickles them, slowloris,
    /// is cut off).
    pub header_read: Duration,
    /// Time to receive a whole block, array or single-tile body.
    pub body: Duration,
    /// Bytes of block, array and single-tile bodies being received at once, in all (each counted
    /// by its `Content-Length`, or its endpoint's limit without one); past it, or past half of it
    /// from one client address, an upload is refused as `busy`.
    pub upload_bytes: u64,
    /// Tile data held at once, in all: each tile from the moment its frame starts to arrive (its
    /// frame's bytes and its results' bytes) until its results have gone to the client. A tile
    /// stream waits for room, reading nothing meanwhile; a single tile without room is refused as
    /// `busy`. One client address (IPv6: one /64) holds at most half; a tile larger than that
    /// counts as that.
    pub tile_bytes: u64,
    /// A connection with no request open for this long is closed (HTTP/2 GOAWAY, or the end of
    /// an HTTP/1.1 keep-alive), however often it answers or sends pings.
    pub connection_idle: Duration,
    /// Wrong secrets one address may send before it is held back.
    pub secret_failures: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 256 << 20,
            max_block_bytes: 32 << 20,
            max_array_bytes: 512 << 20,
            array_cache_bytes: 2 << 30,
            max_blocks: 1024,
            max_block_store_bytes: 256 << 20,
            max_streams: 256,
            max_connections: 4096,
            unproven_connections: 512,
            unproven_per_address: 64,
            prove_within: Duration::from_secs(10),
            stream_idle: Duration::from_secs(60),
            handshake: Duration::from_secs(10),
            header_read: Duration::from_secs(30),
            connection_idle: Duration::from_secs(300),
            body: Duration::from_secs(60),
            upload_bytes: 1 << 30,
            tile_bytes: 1 << 30,
            secret_failures: crate::wrong_secrets::FREE_FAILURES,
        }
    }
}

impl Limits {
    /// These limits with `bytes` of clients' data held at once, in all (`-memory`): 4/17 for
    /// uploads being received, 4/17 for tile data, 8/17 for whole arrays, 1/17 for block
    /// descriptions (4352 MiB gives 1 GiB, 1 GiB, 2 GiB and 256 MiB: the default limits). The
    /// largest frame, array and block are held to what one client may hold of their budgets (half
    /// of the uploads' and of the tile data's), so that one too large for them is refused as too
    /// large, saying the limit, rather than as busy for ever: by default 256 MiB, 512 MiB, 32 MiB.
    pub fn with_memory(self, bytes: u64) -> Self {
        let part = |n: u64| bytes / 17 * n;
        let (uploads, tiles, arrays, blocks) = (part(4), part(4), part(8), part(1));
        Limits {
            upload_bytes: uploads,
            tile_bytes: tiles,
            array_cache_bytes: arrays,
            max_block_store_bytes: blocks,
            max_frame_bytes: self.max_frame_bytes.min(uploads / 2).min(tiles / 2),
            max_array_bytes: self.max_array_bytes.min(uploads as usize / 2).min(arrays as usize),
            max_block_bytes: self.max_block_bytes.min(blocks as usize),
            ..self
        }
    }
}

/// The limits, and the budgets of bytes clients' requests hold while they run.
pub(crate) struct Budgets {
    limits: Limits,
    /// Upload bytes being received ([`Limits::upload_bytes`]).
    uploads: Arc<Budget>,
    /// Tile data held ([`Limits::tile_bytes`]).
    tile_data: Arc<Budget>,
}

impl Budgets {
    /// Budgets of the sizes `limits` sets.
    pub(crate) fn new(limits: Limits) -> Budgets {
        let uploads = Budget::new(limits.upload_bytes);
        let tile_data = Budget::new(limits.tile_bytes);
        Budgets { limits, uploads, tile_data }
    }

    /// The limits.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// An upload's share of `kib` for `peer` now, or `busy`, saying which budget is full.
    pub(crate) fn take_upload(&self, peer: Peer, kib: u32) -> Result<Held, ApiError> {
        self.uploads.try_take(peer, kib).map_err(|short| {
            let (all, one) = (self.limits.upload_bytes >> 20, short == Short::Client);
            ApiError::Busy(Limit::Uploads { mib: if one { all / 2 } else { all }, one })
        })
    }

    /// `body`, of unknown size, taking its share of the uploads' budget as it arrives.
    pub(crate) fn metered(&self, body: Body, peer: Peer) -> Body {
        Body::new(Metered::new(body, self.uploads.clone(), peer))
    }

    /// A single tile's share of `kib` of tile data for `peer` now, or `busy`.
    pub(crate) fn take_tile(&self, peer: Peer, kib: u32) -> Result<Held, ApiError> {
        self.tile_data.try_take(peer, kib).map_err(|short| {
            let (all, one) = (self.limits.tile_bytes >> 20, short == Short::Client);
            ApiError::Busy(Limit::TileData { mib: if one { all / 2 } else { all }, one })
        })
    }

    /// A streamed tile's share of `kib` of tile data for `peer`: now, or a future that holds it
    /// once there is room.
    pub(crate) fn tile_share(&self, peer: Peer, kib: u32) -> Result<Held, Wanted> {
        self.tile_data.try_take(peer, kib).map_err(|_| -> Wanted { Box::pin(self.tile_data.clone().take(peer, kib)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_is_shared_out_and_the_largest_of_each_fits_its_share() {
        let default = Limits::default().with_memory(4352 << 20);
        let today = Limits::default();
        assert_eq!(
            (default.upload_bytes, default.tile_bytes, default.array_cache_bytes, default.max_block_store_bytes),
            (today.upload_bytes, today.tile_bytes, today.array_cache_bytes, today.max_block_store_bytes),
            "the default is today's budgets"
        );
        assert_eq!(default.max_frame_bytes, today.max_frame_bytes);
        assert_eq!(default.max_array_bytes, today.max_array_bytes);
        assert_eq!(default.max_array_bytes, 512 << 20, "half the uploads' budget, what one client may send");
        let small = Limits::default().with_memory(170 << 20);
        assert_eq!(
            small.upload_bytes + small.tile_bytes + small.array_cache_bytes + small.max_block_store_bytes,
            170 << 20
        );
        assert_eq!(small.max_frame_bytes, 20 << 20, "a frame fits one client's half of the uploads and the tiles");
        assert_eq!(small.max_array_bytes, 20 << 20);
        assert_eq!(small.max_block_bytes, 10 << 20);
    }
}
