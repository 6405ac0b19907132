//! One tile's way through the daemon, the same for a stream's tiles and a single tile's request:
//! a run opened on a device ([`open`]: admitted, its block found and loaded, memory enough), a
//! decoded frame made a device job ([`job`]: checked against the block and the limits, its whole
//! arrays found), and the job run and counted ([`run`]). How frames arrive and results leave is
//! `crate::stream`'s and the routes'; this module must not read a request body.

use std::time::Instant;

use xcd_engine::{CheckedJob, DeviceHandle, Loaded, TileJob};
use xcd_wire::TileFrame;
use xcd_wire::WholeArray;

use crate::activity::Peer;
use crate::held::result_bytes;
use crate::metrics::DeviceLabel;
use crate::problem::ApiError;
use crate::state::AppState;

/// A run opened on a device: its block, loaded there.
pub(crate) struct Opened {
    /// The block, as the device loaded it: its tiles are checked against it.
    pub(crate) block: Loaded,
    /// The device it runs on.
    pub(crate) device: DeviceHandle,
}

/// Checks a run can start on a device: not draining, not NIMBY, block loaded, memory enough.
pub(crate) async fn open(
    state: &AppState,
    id: &str,
    device: Option<&str>,
    run_items: Option<u64>,
) -> Result<Opened, ApiError> {
    state.admit()?;
    let desc = state.store().find(id)?;
    let (_, handle) = state.devices().pick(device)?;
    let block = handle.load(desc.clone()).await?;
    if let Some(items) = run_items {
        let per_item: u64 =
            desc.arrays.iter().filter(|a| a.role != xcd_wire::ArrayRole::Whole).map(|a| u64::from(a.elem_size)).sum();
        state.admit_memory(&handle, items.saturating_mul(per_item)).await?;
    }
    Ok(Opened { block, device: handle })
}

/// Turns a decoded frame into a device job, checked against the block once, here: the device
/// runs it as checked.
pub(crate) fn job(state: &AppState, block: &Loaded, frame: TileFrame) -> Result<CheckedJob, ApiError> {
    let desc = block.desc();
    let count = u64::from(frame.tile.count);
    let out_bytes = result_bytes(desc, frame.tile.count);
    let limit = state.limits().max_frame_bytes;
    if out_bytes > limit {
        return Err(ApiError::TooLarge(format!(
            "a tile of {count} items returns {out_bytes} bytes, over this daemon's limit of {limit}: send smaller tiles"
        )));
    }
    // The frame carries the per-item inputs as one run of bytes; split it where the block says.
    let sizes: Vec<u64> = desc.tile_inputs().map(|i| count * u64::from(desc.arrays[i].elem_size)).collect();
    let want: u64 = sizes.iter().sum();
    if frame.inputs.len() as u64 != want {
        return Err(ApiError::BadFrame(format!(
            "a tile of {count} items of block {} needs {want} bytes of per-item inputs, the frame carries {}",
            desc.name,
            frame.inputs.len()
        )));
    }
    // Each input is a view of the frame's bytes, which are a view of the stream's.
    let mut inputs = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for size in sizes {
        inputs.push(frame.inputs.slice(at..at + size as usize));
        at += size as usize;
    }
    let mut whole = Vec::with_capacity(frame.wholes.len());
    for hash in &frame.wholes {
        let data = state.store().array(hash).ok_or(ApiError::UnknownArray(*hash))?;
        whole.push(WholeArray { hash: *hash, data });
    }
    let job = TileJob { block: block.id(), tile: frame.tile, params: frame.params, inputs, whole };
    let job = job.check(block)?;
    state.metrics().bytes_in.inc_by(want);
    Ok(job)
}

/// Runs one job of `peer`'s on a device, counting it; its outputs in binding order.
pub(crate) async fn run(
    state: &AppState,
    peer: Peer,
    device: &DeviceHandle,
    job: CheckedJob,
) -> Result<Vec<Vec<u8>>, ApiError> {
    let started = Instant::now();
    let items = u64::from(job.job().tile.count);
    let desc = job.desc().clone();
    let in_flight = state.in_flight(device);
    let result = device.run(job).await;
    drop(in_flight);
    state.activity().tile(peer, &desc.name, &device.info().id, items, result.is_ok());
    let output = result.map_err(ApiError::from)?;
    let label = DeviceLabel { device: device.info().id.clone() };
    state.metrics().tiles.get_or_create(&label).inc();
    state.metrics().tile_seconds.get_or_create(&label).observe(started.elapsed().as_secs_f64());
    let bytes: usize = output.outputs.iter().map(Vec::len).sum();
    state.metrics().bytes_out.inc_by(bytes as u64);
    Ok(output.outputs)
}
