//! `exact`: what exactness costs on this machine's devices. Each example block runs in process on
//! each device twice in the same run: with the form the engine makes by default (from the WGSL,
//! exact, and on a device that cannot compute every tile exactly with its detectors and hidden
//! constants), and with the block's build-time form of the device's kind loaded as sent
//! (`FormPolicy::Trust`, what `xcd -trust-forms` does), which has neither. The ratio of the two
//! is the price of the guarantee. Inputs are free of subnormals and loops stay short, so no tile
//! is declined and both runs compute every item.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, TileJob};
use xcd_runtime::Block;
use xcd_wire::Tile;
use xcd_wire::{FormPolicy, WholeArray};

use crate::Options;

/// A block's run: its tiles, each a job for a loaded device.
struct Run {
    block: Block,
    items: u32,
    tile: u32,
    params: Vec<u32>,
    /// Per-item input bytes of the whole run, by array, in binding order.
    inputs: Vec<Vec<u8>>,
    whole: Vec<WholeArray>,
}

fn floats(n: u32, scale: f32) -> Vec<u8> {
    (0..n).flat_map(|i| ((i % 1000) as f32 * scale - 1.0).to_le_bytes()).collect()
}

fn runs(quick: bool) -> Vec<Run> {
    let (side, iters) = if quick { (256, 100) } else { (1024, 500) };
    let n = if quick { 1 << 16 } else { 1 << 22 };
    vec![
        Run {
            block: xcd_kernels::escape(),
            items: side * side,
            tile: 1 << 16,
            params: vec![side, side, iters],
            inputs: Vec::new(),
            whole: Vec::new(),
        },
        Run {
            block: xcd_kernels::saxpy(),
            items: n,
            tile: 1 << 18,
            params: vec![1.5f32.to_bits()],
            inputs: vec![floats(n, 0.001), floats(n, 0.002)],
            whole: Vec::new(),
        },
        Run {
            block: xcd_kernels::poly(),
            items: n,
            tile: 1 << 18,
            params: vec![8],
            inputs: vec![floats(n, 0.0005)],
            whole: vec![WholeArray::new(Arc::from(floats(8, 0.25)))],
        },
    ]
}

/// Seconds for the whole run on `device` (the block loaded first).
fn time(device: &DeviceHandle, run: &Run) -> Result<f64, String> {
    let id = device.load_blocking(run.block.desc.clone()).map_err(|e| e.to_string())?;
    let elem: Vec<usize> = run.block.desc.tile_inputs().map(|i| run.block.desc.arrays[i].elem_size as usize).collect();
    let started = Instant::now();
    let mut start = 0;
    while start < run.items {
        let count = run.tile.min(run.items - start);
        let inputs = run
            .inputs
            .iter()
            .zip(&elem)
            .map(|(data, &size)| Bytes::copy_from_slice(&data[start as usize * size..(start + count) as usize * size]))
            .collect();
        let job = TileJob {
            block: id,
            tile: Tile { start, count },
            params: run.params.clone(),
            inputs,
            whole: run.whole.clone(),
        };
        device.run_blocking(job).map_err(|e| e.to_string())?;
        start += count;
    }
    Ok(started.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The `exact` measure's section of the report.
pub(crate) fn run(o: &Options) -> Result<String, String> {
    let options = |forms| xcd_engine::Options { forms, ..xcd_engine::Options::default() };
    let exact = xcd_engine::discover_with(options(FormPolicy::Remake)).devices;
    let trusted = xcd_engine::discover_with(options(FormPolicy::Trust)).devices;
    let reps = if o.quick { 1 } else { 5 };
    let mut out = String::from(
        "## The cost of exactness, in process\n\n| device | block | exact forms (made from WGSL) | build-time forms as sent | exact / as sent |\n|---|---|---:|---:|---:|\n",
    );
    for device in &exact {
        let Some(twin) = trusted.iter().find(|d| d.info().id == device.info().id) else { continue };
        for run in runs(o.quick) {
            // Once each to warm up (pipelines, buffers), then alternating, so both see the same load.
            time(device, &run)?;
            time(twin, &run)?;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                a.push(time(device, &run)?);
                b.push(time(twin, &run)?);
            }
            let (a, b) = (median(a), median(b));
            out.push_str(&format!(
                "| {} | {} ({} items) | {:.3} s | {:.3} s | {:.2} |\n",
                device.info().id,
                run.block.desc.name,
                run.items,
                a,
                b,
                a / b
            ));
        }
    }
    Ok(out)
}
