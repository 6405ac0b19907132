//! One tile's work for a device, and its results, checked against the block before any upload:
//! a daemon checks each tile once, at its edge, into a [`CheckedJob`] against the block it
//! [`Loaded`]; a program's tiles ([`crate::DeviceHandle::run_blocking`]) are checked in the engine.

use std::sync::Arc;

use bytes::Bytes;
use xcd_wire::{BlockDesc, BlockId, Tile, WholeArray};

use crate::EngineError;

/// Everything a device needs to run one tile of a loaded block.
#[derive(Debug, Clone)]
pub struct TileJob {
    /// The block, as loaded.
    pub block: BlockId,
    /// Which items.
    pub tile: Tile,
    /// The block's scalar parameters, one word each.
    pub params: Vec<u32>,
    /// The tile's slice of each per-item array the device reads, in binding order (views of
    /// the bytes as they arrived: a daemon's are slices of the tile's frame).
    pub inputs: Vec<Bytes>,
    /// Each whole array, in binding order.
    pub whole: Vec<WholeArray>,
}

/// A tile's results: the tile's slice of each per-item array the device writes, in binding order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileOutput {
    /// One byte vector per written array, `count * elem_size` bytes each.
    pub outputs: Vec<Vec<u8>>,
}

/// A block loaded on a device ([`crate::DeviceHandle::load`]): its id and description, so that a
/// tile can be checked against it without finding the block again. Check a tile against the
/// `Loaded` of the device it will run on; a device sent a block it does not hold refuses it as
/// [`EngineError::NotLoaded`].
#[derive(Debug, Clone)]
pub struct Loaded {
    id: BlockId,
    desc: Arc<BlockDesc>,
}

impl Loaded {
    pub(crate) fn new(id: BlockId, desc: Arc<BlockDesc>) -> Loaded {
        Loaded { id, desc }
    }

    /// The block's id.
    pub fn id(&self) -> BlockId {
        self.id
    }

    /// The block's description.
    pub fn desc(&self) -> &Arc<BlockDesc> {
        &self.desc
    }
}

/// A job checked against its loaded block ([`TileJob::check`]): the only kind
/// [`crate::DeviceHandle::run`] takes, which then neither checks it again nor looks its block up.
#[derive(Debug)]
pub struct CheckedJob {
    job: TileJob,
    desc: Arc<BlockDesc>,
}

impl CheckedJob {
    /// The job.
    pub fn job(&self) -> &TileJob {
        &self.job
    }

    /// Its block's description.
    pub fn desc(&self) -> &Arc<BlockDesc> {
        &self.desc
    }
}

impl TileJob {
    /// Checks that the job is for `block` and fits it ([`TileJob::fits`]).
    pub fn check(self, block: &Loaded) -> Result<CheckedJob, EngineError> {
        if self.block != block.id {
            return Err(EngineError::BadJob(format!(
                "the tile is for block {}, checked against block {} ({})",
                self.block, block.id, block.desc.name
            )));
        }
        self.fits(&block.desc)?;
        Ok(CheckedJob { job: self, desc: block.desc.clone() })
    }

    /// Checks that the job fits the block: parameter count, input sizes, whole arrays.
    pub fn fits(&self, desc: &BlockDesc) -> Result<(), EngineError> {
        let bad = |msg: String| Err(EngineError::BadJob(msg));
        if self.tile.count == 0 {
            return bad("a tile must hold at least one item".into());
        }
        if self.tile.end() > u64::from(u32::MAX) + 1 {
            return bad(format!("tile {}+{} runs past the last possible item", self.tile.start, self.tile.count));
        }
        if self.params.len() != desc.params.len() {
            return bad(format!(
                "block {} takes {} parameters, the tile carries {}",
                desc.name,
                desc.params.len(),
                self.params.len()
            ));
        }
        let inputs: Vec<usize> = desc.tile_inputs().collect();
        if inputs.len() != self.inputs.len() {
            return bad(format!(
                "block {} reads {} per-item arrays, the tile carries {}",
                desc.name,
                inputs.len(),
                self.inputs.len()
            ));
        }
        for (&index, data) in inputs.iter().zip(&self.inputs) {
            let spec = &desc.arrays[index];
            let want = u64::from(self.tile.count) * u64::from(spec.elem_size);
            if data.len() as u64 != want {
                return bad(format!(
                    "array {} needs {want} bytes for {} items, the tile carries {}",
                    spec.name,
                    self.tile.count,
                    data.len()
                ));
            }
        }
        let wholes: Vec<usize> = desc.whole_arrays().collect();
        if wholes.len() != self.whole.len() {
            return bad(format!(
                "block {} binds {} whole arrays, the tile carries {}",
                desc.name,
                wholes.len(),
                self.whole.len()
            ));
        }
        for (&index, array) in wholes.iter().zip(&self.whole) {
            let spec = &desc.arrays[index];
            if array.data.is_empty() || array.data.len() % spec.elem_size as usize != 0 {
                return bad(format!(
                    "whole array {} must hold at least one element of {} bytes and whole elements, it has {} bytes",
                    spec.name,
                    spec.elem_size,
                    array.data.len()
                ));
            }
        }
        Ok(())
    }
}
