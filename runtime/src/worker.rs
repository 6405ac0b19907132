//! Workers: where tiles run. The CPU worker runs a block's CPU form across all cores; a GPU
//! worker sends tiles to one local device through the engine.
//!
//! A worker gets a tile that owns its slices of the program's arrays. It writes results into
//! them only when the whole tile succeeded, so a failed tile can run elsewhere unchanged.

use std::sync::Arc;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, EngineError, TileJob, WholeArray};
use xcd_wire::{ArrayRole, Tile};

use crate::block::{Block, CpuArray, CpuTile};

/// What every worker is handed for a run: the block, its parameters and its whole arrays.
pub(crate) struct RunCtx {
    pub(crate) block: Block,
    /// The block's content address, computed once per run.
    pub(crate) id: xcd_wire::BlockId,
    /// Items in the run.
    pub(crate) items: u32,
    pub(crate) params: Vec<u32>,
    /// Whole arrays in binding order, hashed once per run.
    pub(crate) whole: Vec<WholeArray>,
}

/// One array of one tile.
#[derive(Debug)]
pub(crate) enum TileArray<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
    InOut(&'a mut [u8]),
    Whole,
}

/// A tile and its slices of the program's arrays, in binding order.
#[derive(Debug)]
pub(crate) struct TileSlices<'a> {
    pub(crate) tile: Tile,
    pub(crate) arrays: Vec<TileArray<'a>>,
}

impl<'a> TileSlices<'a> {
    /// Splits the tile after `items` items (0 < items < count); `elem` gives each array's
    /// element size.
    pub(crate) fn split(self, items: u32, elem: &[u32]) -> (TileSlices<'a>, TileSlices<'a>) {
        let mut head = Vec::with_capacity(self.arrays.len());
        let mut tail = Vec::with_capacity(self.arrays.len());
        for (array, &size) in self.arrays.into_iter().zip(elem) {
            let at = items as usize * size as usize;
            let (a, b) = match array {
                TileArray::In(d) => {
                    let (a, b) = d.split_at(at);
                    (TileArray::In(a), TileArray::In(b))
                }
                TileArray::Out(d) => {
                    let (a, b) = d.split_at_mut(at);
                    (TileArray::Out(a), TileArray::Out(b))
                }
                TileArray::InOut(d) => {
                    let (a, b) = d.split_at_mut(at);
                    (TileArray::InOut(a), TileArray::InOut(b))
                }
                TileArray::Whole => (TileArray::Whole, TileArray::Whole),
            };
            head.push(a);
            tail.push(b);
        }
        let t = self.tile;
        (
            TileSlices { tile: Tile { start: t.start, count: items }, arrays: head },
            TileSlices { tile: Tile { start: t.start + items, count: t.count - items }, arrays: tail },
        )
    }
}

/// Most items of a tile whose widest array must fit buffers of `max_bytes`. Devices grow their
/// buffers to the next power of two of a tile, so this stays within half the limit.
pub(crate) fn max_tile_items(desc: &xcd_wire::BlockDesc, max_bytes: u64) -> u32 {
    let widest = desc.arrays.iter().map(|a| u64::from(a.elem_size)).max().unwrap_or(4);
    u32::try_from(max_bytes / widest / 2).unwrap_or(u32::MAX).max(1)
}

/// Why a worker stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The device failed or refused.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A daemon refused, declined or broke off.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
    /// The device returned results of the wrong size.
    #[error("{0} returned {1} bytes where {2} were expected")]
    ShortResult(String, usize, usize),
    /// The worker's code panicked (a bug, reported rather than taking the program down).
    #[error("{0} panicked (a bug: please report it)")]
    Panicked(String),
}

/// Something that runs tiles.
pub(crate) trait Worker: Sync {
    /// The name reports use: `cpu`, `gpu:<device id>`.
    fn name(&self) -> &str;
    /// What the worker is, for the report: `gpu worker gpu:…`.
    fn about(&self) -> String {
        format!("worker {}", self.name())
    }
    /// The daemon (`host:port`) whose device this is, for a remote worker.
    fn daemon(&self) -> Option<&str> {
        None
    }
    /// That daemon's host.
    fn host(&self) -> Option<&str> {
        None
    }
    /// Tiles this worker runs at once, each on its own thread (a remote worker's depth).
    fn lanes(&self) -> usize {
        1
    }
    /// Most items one tile of this block may hold on this worker.
    fn max_tile(&self, _ctx: &RunCtx) -> u32 {
        u32::MAX
    }
    /// Readies the worker for a run (loads the block on a device).
    fn prepare(&self, ctx: &RunCtx) -> Result<(), WorkerError>;
    /// Runs one tile, writing its results in place only on success.
    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError>;
    /// What the report should say of how this worker ran its tiles in the last run, if anything
    /// (a device that could not run some exactly, and what ran them instead).
    fn note(&self) -> Option<String> {
        None
    }
}

/// One tile as the CPU form sees it: the tile's slices of the program's arrays, whole arrays whole.
fn cpu_tile<'t>(ctx: &'t RunCtx, tile: &'t mut TileSlices<'_>) -> CpuTile<'t> {
    let mut whole = ctx.whole.iter();
    let arrays = tile
        .arrays
        .iter_mut()
        .map(|a| match a {
            TileArray::In(d) => CpuArray::Read(d),
            TileArray::Out(d) | TileArray::InOut(d) => CpuArray::Write(Some(&mut **d)),
            TileArray::Whole => CpuArray::Read(whole.next().map(|w| &w.data[..]).unwrap_or(&[])),
        })
        .collect();
    CpuTile { tile: tile.tile, params: &ctx.params, arrays }
}

/// Runs a block's CPU form over one tile on this thread.
fn run_cpu_form(ctx: &RunCtx, tile: &mut TileSlices<'_>) {
    (ctx.block.cpu)(&mut cpu_tile(ctx, tile));
}

/// Runs the CPU form, splitting each tile across the machine's cores.
pub(crate) struct CpuWorker {
    pub(crate) pool: rayon::ThreadPool,
}

impl Worker for CpuWorker {
    fn name(&self) -> &str {
        "cpu"
    }

    fn about(&self) -> String {
        format!("cpu worker cpu, {} threads", self.pool.current_num_threads())
    }

    fn prepare(&self, _ctx: &RunCtx) -> Result<(), WorkerError> {
        Ok(())
    }

    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
        let desc = &ctx.block.desc;
        let cpu_tile = cpu_tile(ctx, tile);
        let sizes: Vec<u32> = desc.arrays.iter().map(|a| a.elem_size).collect();
        let per_item: Vec<bool> = desc.arrays.iter().map(|a| a.role != ArrayRole::Whole).collect();
        let pieces = self.pool.current_num_threads().max(1) as u32 * 4;
        let kernel = ctx.block.cpu;
        self.pool.scope(|scope| {
            let mut rest = cpu_tile;
            let piece = rest.tile.count.div_ceil(pieces).max(1);
            while rest.tile.count > piece {
                let (head, tail) = rest.split(piece, &sizes, &per_item);
                scope.spawn(move |_| {
                    let mut head = head;
                    kernel(&mut head)
                });
                rest = tail;
            }
            kernel(&mut rest);
        });
        Ok(())
    }
}

/// Sends tiles to one local device.
///
/// A device that computes on the CPU (llvmpipe) cannot run every tile exactly (it ends long
/// loops early and flushes subnormal floats; the forms detect both and the device declines the
/// tile, `EngineError::Inexact`). It shares this machine's cores with the block's CPU form,
/// which gives the exact bits, so the worker runs such a tile with the CPU form instead, and
/// every later tile of that run too; the report says so.
pub(crate) struct GpuWorker {
    pub(crate) name: String,
    pub(crate) device: DeviceHandle,
    /// Tiles of this run given to the CPU form, and why the device declined the first.
    pub(crate) declined: std::sync::Mutex<(u64, Option<String>)>,
}

impl GpuWorker {
    pub(crate) fn new(name: String, device: DeviceHandle) -> GpuWorker {
        GpuWorker { name, device, declined: std::sync::Mutex::new((0, None)) }
    }

    fn declined(&self) -> std::sync::MutexGuard<'_, (u64, Option<String>)> {
        self.declined.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Worker for GpuWorker {
    fn name(&self) -> &str {
        &self.name
    }

    fn about(&self) -> String {
        let kind = if self.device.info().cpu { " (a CPU device)" } else { "" };
        format!("gpu worker {}{kind}", self.name)
    }

    fn max_tile(&self, ctx: &RunCtx) -> u32 {
        max_tile_items(&ctx.block.desc, self.device.info().max_buffer_bytes)
    }

    fn prepare(&self, ctx: &RunCtx) -> Result<(), WorkerError> {
        *self.declined() = (0, None);
        self.device.load_blocking(Arc::clone(&ctx.block.desc))?;
        Ok(())
    }

    fn note(&self) -> Option<String> {
        let declined = self.declined();
        let (tiles, why) = (declined.0, declined.1.as_ref()?);
        Some(format!("{tiles} of its tiles ran on the block's CPU form, since {why}"))
    }

    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
        if self.declined().1.is_some() {
            self.declined().0 += 1;
            run_cpu_form(ctx, tile);
            return Ok(());
        }
        let inputs = tile
            .arrays
            .iter()
            .filter_map(|a| match a {
                TileArray::In(d) => Some(Bytes::copy_from_slice(d)),
                TileArray::InOut(d) => Some(Bytes::copy_from_slice(d)),
                _ => None,
            })
            .collect();
        let job =
            TileJob { block: ctx.id, tile: tile.tile, params: ctx.params.clone(), inputs, whole: ctx.whole.clone() };
        let result = match self.device.run_blocking(job) {
            Err(EngineError::Inexact { reason, .. }) if self.device.info().cpu => {
                let mut declined = self.declined();
                declined.0 += 1;
                declined.1.get_or_insert(format!("the device could not run them exactly ({reason})"));
                drop(declined);
                run_cpu_form(ctx, tile);
                return Ok(());
            }
            other => other?,
        };
        let mut outputs = result.outputs.into_iter();
        let mut written = Vec::new();
        for array in tile.arrays.iter_mut() {
            if let TileArray::Out(d) | TileArray::InOut(d) = array {
                let out = outputs.next().unwrap_or_default();
                if out.len() != d.len() {
                    return Err(WorkerError::ShortResult(self.name.clone(), out.len(), d.len()));
                }
                written.push((d, out));
            }
        }
        for (d, out) in written {
            d.copy_from_slice(&out);
        }
        Ok(())
    }
}
