//! A block as a program holds it: the wire description plus the CPU closure that is its CPU form.
//!
//! The CPU form is plain Rust over one tile ([`CpuTile`]): every float operation is rounded on
//! its own, as the GPU forms are made to do, so a tile gives the same bits wherever it runs.

use std::sync::Arc;

use xcd_wire::{BlockDesc, Tile};

/// The CPU form of a kernel: runs every item of one tile.
pub type CpuKernel = fn(&mut CpuTile<'_>);

/// A par block: its description (with every GPU form) and its CPU form.
#[derive(Clone, Debug)]
pub struct Block {
    /// What the block binds and every GPU form of its kernel.
    pub desc: Arc<BlockDesc>,
    /// The CPU form.
    pub cpu: CpuKernel,
}

/// One array as a CPU kernel sees it for one tile.
#[derive(Debug)]
pub(crate) enum CpuArray<'a> {
    /// Per-item input slice or a whole array.
    Read(&'a [u8]),
    /// Per-item output or input-output slice; taken out by [`CpuTile::take_write`].
    Write(Option<&'a mut [u8]>),
}

/// One tile of a block run, as the CPU form sees it: per-item arrays are the tile's slices
/// (indexed tile-locally, like every GPU form), whole arrays are whole.
#[derive(Debug)]
pub struct CpuTile<'a> {
    /// The items this tile covers.
    pub tile: Tile,
    /// The block's scalar parameters.
    pub params: &'a [u32],
    pub(crate) arrays: Vec<CpuArray<'a>>,
}

impl<'a> CpuTile<'a> {
    /// Parameter `k` as an unsigned integer.
    pub fn param_u32(&self, k: usize) -> u32 {
        self.params[k]
    }

    /// Parameter `k` as a signed integer.
    pub fn param_i32(&self, k: usize) -> i32 {
        self.params[k] as i32
    }

    /// Parameter `k` as a float.
    pub fn param_f32(&self, k: usize) -> f32 {
        f32::from_bits(self.params[k])
    }

    /// The array at binding position `k` (0 = the first array), which the block reads.
    ///
    /// Panics if the block writes that array: that is a mistake in the CPU form itself.
    pub fn read<T: bytemuck::Pod>(&self, k: usize) -> &'a [T] {
        match &self.arrays[k] {
            CpuArray::Read(bytes) => bytemuck::cast_slice(bytes),
            CpuArray::Write(_) => panic!("array {k} is written by this block; use take_write"),
        }
    }

    /// The array at binding position `k`, which the block writes; each such array can be taken
    /// once per tile, so a CPU form can hold several at a time.
    pub fn take_write<T: bytemuck::Pod>(&mut self, k: usize) -> &'a mut [T] {
        match &mut self.arrays[k] {
            CpuArray::Write(slot) => {
                bytemuck::cast_slice_mut(slot.take().expect("each written array is taken once per tile"))
            }
            CpuArray::Read(_) => panic!("array {k} is read-only in this block; use read"),
        }
    }

    /// Splits the tile after `items` items, for running the halves on different cores.
    pub(crate) fn split(self, items: u32, sizes: &[u32], per_item: &[bool]) -> (CpuTile<'a>, CpuTile<'a>) {
        let mut left = Vec::with_capacity(self.arrays.len());
        let mut right = Vec::with_capacity(self.arrays.len());
        for ((array, &size), &sliced) in self.arrays.into_iter().zip(sizes).zip(per_item) {
            let at = items as usize * size as usize;
            match array {
                CpuArray::Read(bytes) if sliced => {
                    let (a, b) = bytes.split_at(at);
                    left.push(CpuArray::Read(a));
                    right.push(CpuArray::Read(b));
                }
                CpuArray::Read(bytes) => {
                    left.push(CpuArray::Read(bytes));
                    right.push(CpuArray::Read(bytes));
                }
                CpuArray::Write(Some(bytes)) => {
                    let (a, b) = bytes.split_at_mut(at);
                    left.push(CpuArray::Write(Some(a)));
                    right.push(CpuArray::Write(Some(b)));
                }
                CpuArray::Write(None) => {
                    left.push(CpuArray::Write(None));
                    right.push(CpuArray::Write(None));
                }
            }
        }
        let tile = self.tile;
        (
            CpuTile { tile: Tile { start: tile.start, count: items }, params: self.params, arrays: left },
            CpuTile {
                tile: Tile { start: tile.start + items, count: tile.count - items },
                params: self.params,
                arrays: right,
            },
        )
    }
}
