//! A block as a program holds it: the wire description plus the CPU closure that is its CPU form.
//!
//! The CPU form is plain Rust over one tile ([`CpuTile`]): every float operation is rounded on
//! its own, as the GPU forms are made to do, so a tile gives the same bits wherever it runs.
//! It follows the rules of the exact subset (docs/kernels.md) that Rust does not follow by
//! itself; [`canonical`] and [`to_u32`] / [`to_i32`] are those rules.

use std::sync::Arc;

use xcd_wire::{BlockDesc, Tile};

/// The NaN every form stores: quiet, no payload, sign clear (`0x7fc00000`). Devices make NaNs
/// with other bits, so a CPU form passes every float it stores through this.
#[inline]
pub fn canonical(x: f32) -> f32 {
    if x.is_nan() { f32::from_bits(0x7fc0_0000) } else { x }
}

/// WGSL's `u32(x)` as every form computes it: NaN gives 0, and the value is clamped to
/// `[0, 4294967040]` (the largest f32 below 2^32) before truncating.
#[inline]
pub fn to_u32(x: f32) -> u32 {
    if x.is_nan() { 0 } else { x.clamp(0.0, 4_294_967_040.0) as u32 }
}

/// WGSL's `i32(x)` as every form computes it: NaN gives 0, and the value is clamped to
/// `[-2147483648, 2147483520]` before truncating (Rust's `as` would give 2147483647 at the top).
#[inline]
pub fn to_i32(x: f32) -> i32 {
    if x.is_nan() { 0 } else { x.clamp(-2_147_483_648.0, 2_147_483_520.0) as i32 }
}

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

/// One array lent to [`CpuTile::new`]: one the block reads, or one it writes.
#[derive(Debug)]
pub enum CpuArg<'a> {
    /// An array the block reads (per-item input, or whole).
    Read(&'a [u8]),
    /// An array the block writes (output or input-output).
    Write(&'a mut [u8]),
}

impl<'a> CpuTile<'a> {
    /// A tile over arrays the caller lends, in binding order (per-item arrays `tile.count`
    /// elements long), for running a CPU form directly: tests and benchmarks. Workers make
    /// their own.
    pub fn new(tile: Tile, params: &'a [u32], arrays: Vec<CpuArg<'a>>) -> Self {
        let arrays = arrays
            .into_iter()
            .map(|a| match a {
                CpuArg::Read(d) => CpuArray::Read(d),
                CpuArg::Write(d) => CpuArray::Write(Some(d)),
            })
            .collect();
        CpuTile { tile, params, arrays }
    }

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
