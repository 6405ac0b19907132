//! The block store: the blocks registered with the daemon, by id, bounded by count and bytes;
//! the turn a new block waits for, so that the room found for it is there when it is kept; and
//! the whole arrays' bytes the daemon was sent, by content hash, in one
//! [`xcd_engine::whole::WholeCache`]. Loading blocks on devices is the routes'; this module must
//! not touch a device.

use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;

use xcd_engine::whole::WholeCache;
use xcd_wire::{ArrayHash, BlockDesc, BlockId};

use super::{BLOCK_WEIGHT, Limits};
use crate::problem::{ApiError, Limit};

/// Registered blocks, and the bytes they count for.
#[derive(Default)]
struct Blocks {
    by_id: HashMap<BlockId, Arc<BlockDesc>>,
    bytes: u64,
}

/// The blocks and whole arrays clients have sent.
pub(crate) struct BlockStore {
    blocks: RwLock<Blocks>,
    /// Taken while a new block is checked and loaded.
    registering: tokio::sync::Mutex<()>,
    /// Whole arrays' bytes by content hash, bounded by `Limits::array_cache_bytes` only.
    arrays: Mutex<WholeCache<Arc<[u8]>>>,
    /// Blocks held at most, and their bytes (`Limits::max_blocks`, `max_block_store_bytes`).
    max_blocks: usize,
    max_bytes: u64,
}

impl BlockStore {
    /// An empty store bounded by `limits`.
    pub(crate) fn new(limits: &Limits) -> BlockStore {
        BlockStore {
            blocks: RwLock::default(),
            registering: tokio::sync::Mutex::new(()),
            arrays: Mutex::new(WholeCache::with_count(limits.array_cache_bytes, usize::MAX)),
            max_blocks: limits.max_blocks,
            max_bytes: limits.max_block_store_bytes,
        }
    }

    /// The block registered as `id`.
    pub(crate) fn block(&self, id: &BlockId) -> Result<Arc<BlockDesc>, ApiError> {
        self.blocks.read().by_id.get(id).cloned().ok_or(ApiError::UnknownBlock(*id))
    }

    /// The block whose id a client wrote as `text`.
    pub(crate) fn find(&self, text: &str) -> Result<Arc<BlockDesc>, ApiError> {
        let id: BlockId = text.parse().map_err(|_| {
            let shown: String = text.chars().take(80).collect();
            ApiError::BadRequest(format!(
                "{shown:?} is not a block id (64 hex digits): use the id that POST /v1/blocks answered"
            ))
        })?;
        self.block(&id)
    }

    /// Starts registering the block `id`: a new one waits for its turn (one at a time, so that
    /// a refused block has loaded nothing anywhere); a known one goes straight on.
    pub(crate) async fn register(&self, id: BlockId) -> Registration<'_> {
        let turn = match self.block(&id) {
            Ok(_) => None,
            Err(_) => Some(self.registering.lock().await),
        };
        let known = self.block(&id).is_ok();
        Registration { store: self, id, known, _turn: turn }
    }

    /// The whole array of content hash `hash`, if held, counted as used now.
    pub(crate) fn array(&self, hash: &ArrayHash) -> Option<Arc<[u8]>> {
        self.arrays.lock().get(hash).cloned()
    }

    /// Keeps a whole array unless it is held already, the least recently used going first.
    pub(crate) fn keep_array(&self, hash: ArrayHash, data: Arc<[u8]>) {
        let bytes = data.len() as u64;
        self.arrays.lock().keep(hash, data, bytes);
    }
}

/// A block being registered, holding its turn if it is new.
pub(crate) struct Registration<'s> {
    store: &'s BlockStore,
    id: BlockId,
    known: bool,
    _turn: Option<tokio::sync::MutexGuard<'s, ()>>,
}

impl Registration<'_> {
    /// Whether the block was registered already.
    pub(crate) fn known(&self) -> bool {
        self.known
    }

    /// Whether a new block of `size` bytes fits, by count and by bytes; checked before any
    /// device loads it, so that a refused block costs nothing.
    pub(crate) fn room_for(&self, size: usize) -> Result<(), ApiError> {
        let (store, blocks) = (self.store, self.store.blocks.read());
        let weight = (size as u64).max(BLOCK_WEIGHT);
        if blocks.by_id.len() >= store.max_blocks || blocks.bytes + weight > store.max_bytes {
            return Err(ApiError::Busy(Limit::Blocks {
                held: blocks.by_id.len(),
                max: store.max_blocks,
                mib: blocks.bytes >> 20,
                max_mib: store.max_bytes >> 20,
            }));
        }
        Ok(())
    }

    /// Keeps the block, `size` bytes as sent, once its room was found.
    pub(crate) fn keep(self, desc: Arc<BlockDesc>, size: usize) {
        let mut blocks = self.store.blocks.write();
        if blocks.by_id.insert(self.id, desc).is_none() {
            blocks.bytes += (size as u64).max(BLOCK_WEIGHT);
        }
    }
}
