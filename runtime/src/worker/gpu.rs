//! The GPU worker: tiles sent to one local device through the engine's handle.
//!
//! A device that computes on the CPU (llvmpipe) cannot run every tile exactly (it ends long
//! loops early and flushes subnormal floats; the forms detect both and the device declines the
//! tile, `EngineError::Inexact`). It shares this machine's cores with the block's CPU form,
//! which gives the exact bits, so the worker runs such a tile with the CPU form instead, and
//! every later tile of that run too; the report says so.

use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, EngineError, TileJob};

use super::cpu::run_cpu_form;
use super::{RunCtx, TileSlices, Worker, WorkerError, WorkerId, max_tile_items};

/// Sends tiles to one local device.
pub(crate) struct GpuWorker {
    id: WorkerId,
    device: DeviceHandle,
    /// Tiles of this run given to the CPU form, and why the device declined the first.
    declined: Mutex<(u64, Option<String>)>,
}

impl GpuWorker {
    /// The worker of `device`.
    pub(crate) fn new(device: DeviceHandle) -> GpuWorker {
        GpuWorker { id: WorkerId::gpu(&device.info().id), device, declined: Mutex::new((0, None)) }
    }

    fn declined(&self) -> MutexGuard<'_, (u64, Option<String>)> {
        self.declined.lock()
    }
}

impl Worker for GpuWorker {
    fn id(&self) -> &WorkerId {
        &self.id
    }

    fn about(&self) -> String {
        let kind = if self.device.info().cpu { " (a CPU device)" } else { "" };
        format!("gpu worker {}{kind}", self.id.name)
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
        let inputs = tile.inputs().map(Bytes::copy_from_slice).collect();
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
        let outputs: Vec<&[u8]> = result.outputs.iter().map(Vec::as_slice).collect();
        tile.write_outputs(&self.id, &outputs)
    }
}
