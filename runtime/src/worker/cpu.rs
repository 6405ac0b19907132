//! The CPU worker: a block's CPU form over a tile, split across the machine's cores (rayon).
//! Also runs the CPU form over one tile on the caller's thread, for a GPU worker whose device
//! cannot run a tile exactly.

use xcd_wire::ArrayRole;

use super::{RunCtx, TileArray, TileSlices, Worker, WorkerError, WorkerId};
use crate::block::{CpuArray, CpuTile};

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
pub(crate) fn run_cpu_form(ctx: &RunCtx, tile: &mut TileSlices<'_>) {
    (ctx.block.cpu)(&mut cpu_tile(ctx, tile));
}

/// Runs the CPU form, splitting each tile across the machine's cores.
pub(crate) struct CpuWorker {
    id: WorkerId,
    pool: rayon::ThreadPool,
}

impl CpuWorker {
    /// The CPU worker on `pool`'s threads.
    pub(crate) fn new(pool: rayon::ThreadPool) -> CpuWorker {
        CpuWorker { id: WorkerId::cpu(), pool }
    }
}

impl Worker for CpuWorker {
    fn id(&self) -> &WorkerId {
        &self.id
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
