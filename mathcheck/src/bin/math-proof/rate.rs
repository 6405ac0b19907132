//! `math-proof --rate`: what each function costs where it runs. Each function's `rate_NAME` block
//! (each item calls it 64 times, on arguments spread over a range where it is finite) runs
//! beside `rate_unchanged`, the same loop with no function, in the CPU form on one core or on a
//! device; the report gives both rates and the time per call above the loop's own.
//!
//! This module owns the timing only; the blocks are made in the crate's build.rs.

use std::time::{Duration, Instant};

use bytes::Bytes;
use xcd_engine::{DeviceHandle, TileJob};
use xcd_mathcheck::{Function, RATE_CALLS, rate_baseline, run_cpu};
use xcd_runtime::Block;
use xcd_wire::Tile;

/// The most items in one tile.
const MOST: usize = 1 << 22;
/// How long each block is timed for, after a warm-up.
const TIMED: Duration = Duration::from_secs(1);

/// Each item's starting value in [0, 1): multiples of 2^-24, never subnormal.
fn starts() -> Vec<f32> {
    (0..MOST as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 8) as f32 / 16_777_216.0).collect()
}

/// Where a block runs.
enum Place<'a> {
    Cpu,
    Device(&'a DeviceHandle),
}

impl Place<'_> {
    fn name(&self) -> String {
        match self {
            Place::Cpu => "CPU form, one core".into(),
            Place::Device(d) => d.info().id.clone(),
        }
    }

    /// Calls per second of `block` here: tiles growing fourfold from 4,096 items until one
    /// takes a fifth of a second (or holds `MOST`), then tiles of that size for [`TIMED`].
    fn rate(&self, block: &Block, x: &[f32]) -> Result<f64, String> {
        let run = self.runner(block)?;
        let mut items = 1 << 12;
        loop {
            let started = Instant::now();
            run(&x[..items])?;
            if started.elapsed() >= TIMED / 5 || items == MOST {
                break;
            }
            items = (items * 4).min(MOST);
        }
        let (started, mut done) = (Instant::now(), 0u64);
        while started.elapsed() < TIMED {
            run(&x[..items])?;
            done += items as u64;
        }
        Ok((done * RATE_CALLS) as f64 / started.elapsed().as_secs_f64())
    }

    /// A function that runs `block` on one tile of the given items.
    #[allow(clippy::type_complexity)]
    fn runner<'b>(&'b self, block: &'b Block) -> Result<Box<dyn Fn(&[f32]) -> Result<(), String> + 'b>, String> {
        match self {
            Place::Cpu => Ok(Box::new(move |x: &[f32]| {
                let mut y = vec![0f32; x.len()];
                run_cpu(block.cpu, 1, x, &mut y);
                Ok(())
            })),
            Place::Device(device) => {
                let id = device.load_blocking(block.desc.clone()).map_err(|e| e.to_string())?;
                Ok(Box::new(move |x: &[f32]| {
                    let job = TileJob {
                        block: id,
                        tile: Tile { start: 0, count: x.len() as u32 },
                        params: Vec::new(),
                        inputs: vec![Bytes::copy_from_slice(bytemuck::cast_slice(x))],
                        whole: Vec::new(),
                    };
                    device.run_blocking(job).map(drop).map_err(|e| e.to_string())
                }))
            }
        }
    }
}

/// Prints each function's rate on `device` (the CPU form when none), against the loop alone.
pub(crate) fn measure(functions: &[&Function], device: Option<&DeviceHandle>) -> Result<(), String> {
    let place = device.map_or(Place::Cpu, Place::Device);
    let x = starts();
    let baseline = place.rate(&rate_baseline(), &x)?;
    println!(
        "math-proof --rate on {}: {} calls per item, {:.1} M items/s for the loop alone\n",
        place.name(),
        RATE_CALLS,
        baseline / RATE_CALLS as f64 / 1e6
    );
    println!("| function | calls/s | the loop alone, calls/s | ns per call above the loop |");
    println!("|---|---:|---:|---:|");
    for f in functions {
        let rate = place.rate(&(f.rate)(), &x)?;
        println!("| {} | {:.3e} | {:.3e} | {:.3} |", f.name, rate, baseline, (1.0 / rate - 1.0 / baseline) * 1e9);
    }
    Ok(())
}
