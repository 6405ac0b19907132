//! The long-form proof (scripts/math-proof): each one-argument function of the math library on
//! every one of the 2^32 f32 arguments, against CORE-MATH's correctly rounded result, in the
//! two codes that run it: the CPU form as every kernel gets it (the f64 fast path of
//! `xcd-cpumath`, falling back to the library's WGSL), and the library's WGSL alone,
//! transcribed (the GPU forms' code). Prints, per function and code, the arguments tried, the
//! results not correctly rounded and the largest error in ulps, and the first wrong
//! arguments; exits 1 if any result is wrong.
//!
//! With `--llvmpipe`, the same on the software Vulkan device, which flushes subnormals and so
//! declines a tile that meets one: every argument whose argument and result are both normal
//! (or zero, infinite, NaN) runs there, and any tile it declines is a failure too, as the
//! library's own intermediate values must never be subnormal.
//!
//! `math-proof [--llvmpipe] [NAME…]` (default: every function); `XCD_PROOF_THREADS` sets the
//! CPU form's threads (default: every core).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, EngineError, TileJob};
use xcd_mathcheck::{FUNCTIONS, Function, run_cpu, same, ulps};
use xcd_wire::Tile;

/// Arguments per tile.
const CHUNK: u64 = 1 << 20;
/// Wrong arguments listed per function.
const LISTED: usize = 40;

/// What one function's run found.
#[derive(Debug, Default)]
struct Found {
    wrong: u64,
    worst: u64,
    first: Vec<(u32, u32, u32)>,
}

impl Found {
    /// Compares each result with the reference's, keeping what differs.
    fn check(&mut self, f: &Function, args: &[f32], got: &[f32]) {
        for (&a, &got) in args.iter().zip(got) {
            let want = (f.reference)(a);
            if !same(got, want) {
                self.wrong += 1;
                self.worst = self.worst.max(ulps(got, want));
                self.first.push((a.to_bits(), got.to_bits(), want.to_bits()));
            }
        }
    }

    fn merge(&mut self, other: Found) {
        self.wrong += other.wrong;
        self.worst = self.worst.max(other.worst);
        self.first.extend(other.first);
    }
}

fn prove(f: &Function, cpu: xcd_runtime::CpuKernel, threads: usize) -> Found {
    let next = AtomicU64::new(0);
    let found = Mutex::new(Found::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let (mut x, mut y) = (vec![0f32; CHUNK as usize], vec![0f32; CHUNK as usize]);
                loop {
                    let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if start >= 1 << 32 {
                        break;
                    }
                    for (i, v) in x.iter_mut().enumerate() {
                        *v = f32::from_bits((start + i as u64) as u32);
                    }
                    run_cpu(cpu, 1, &x, &mut y);
                    let mut local = Found::default();
                    local.check(f, &x, &y);
                    if local.wrong > 0 {
                        found.lock().unwrap_or_else(|e| e.into_inner()).merge(local);
                    }
                }
            });
        }
    });
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    found.first.sort_unstable();
    found
}

/// What a run on llvmpipe found beyond wrong results: the arguments it skipped (a subnormal
/// argument or result) and the tiles it declined.
#[derive(Debug, Default)]
struct OnDevice {
    ran: u64,
    skipped: u64,
    declined: Vec<String>,
}

fn prove_on(f: &Function, device: &DeviceHandle) -> Result<(Found, OnDevice), EngineError> {
    let id = device.load_blocking((f.block)().desc.clone())?;
    let (mut found, mut seen) = (Found::default(), OnDevice::default());
    let mut args: Vec<f32> = Vec::with_capacity(CHUNK as usize);
    let run = |args: &mut Vec<f32>, found: &mut Found, seen: &mut OnDevice| -> Result<(), EngineError> {
        let job = TileJob {
            block: id,
            tile: Tile { start: 0, count: args.len() as u32 },
            params: Vec::new(),
            inputs: vec![Bytes::copy_from_slice(bytemuck::cast_slice(args))],
            whole: Vec::new(),
        };
        match device.run_blocking(job) {
            Ok(done) => {
                let got: Vec<f32> =
                    done.outputs[0].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                found.check(f, args, &got);
                seen.ran += args.len() as u64;
            }
            Err(EngineError::Inexact { reason, .. }) => {
                seen.declined.push(format!(
                    "{:#010x}..={:#010x}: {reason}",
                    args[0].to_bits(),
                    args[args.len() - 1].to_bits()
                ));
            }
            Err(e) => return Err(e),
        }
        args.clear();
        Ok(())
    };
    let started = Instant::now();
    for bits in 0..=u32::MAX {
        if bits % (1 << 28) == 0 && bits > 0 {
            let done = f64::from(bits) / 2f64.powi(32);
            let left = started.elapsed().as_secs_f64() * (1.0 - done) / done;
            eprintln!("{}: {:.0}% on llvmpipe, about {left:.0} s left", f.name, done * 100.0);
        }
        let x = f32::from_bits(bits);
        if x.is_subnormal() || (f.reference)(x).is_subnormal() {
            seen.skipped += 1;
            continue;
        }
        args.push(x);
        if args.len() == CHUNK as usize {
            run(&mut args, &mut found, &mut seen)?;
        }
    }
    if !args.is_empty() {
        run(&mut args, &mut found, &mut seen)?;
    }
    found.first.sort_unstable();
    Ok((found, seen))
}

fn report(f: &Function, found: &Found, tried: u64, how: String) {
    println!(
        "{}: {tried} arguments tried, {} not correctly rounded, largest error {} ulp ({how})",
        f.name, found.wrong, found.worst
    );
    for (x, got, want) in found.first.iter().take(LISTED) {
        println!(
            "  {}({:e}) = {x:#010x}: gave {got:#010x}, correctly rounded {want:#010x}",
            f.name,
            f32::from_bits(*x)
        );
    }
}

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    let llvmpipe = names.iter().any(|n| n == "--llvmpipe");
    names.retain(|n| n != "--llvmpipe");
    let threads = std::env::var("XCD_PROOF_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let device = if llvmpipe {
        let found = xcd_engine::discover().devices.into_iter().find(|d| d.info().id.starts_with("vulkan:llvmpipe"));
        let Some(device) = found else {
            eprintln!("math-proof: no llvmpipe device here: install mesa-vulkan-drivers (scripts/deps --tests)");
            std::process::exit(2);
        };
        Some(device)
    } else {
        None
    };
    let mut failed = false;
    for f in FUNCTIONS.iter().filter(|f| names.is_empty() || names.iter().any(|n| n == f.name)) {
        let started = Instant::now();
        match &device {
            None => {
                let codes = [("CPU form: f64 fast path, WGSL fallback", (f.block)().cpu), ("the WGSL alone", f.wgsl)];
                for (code, cpu) in codes {
                    let started = Instant::now();
                    let found = prove(f, cpu, threads);
                    let how = format!("{code}, {:.0} s, {threads} threads", started.elapsed().as_secs_f64());
                    report(f, &found, 1 << 32, how);
                    failed |= found.wrong > 0;
                }
            }
            Some(device) => match prove_on(f, device) {
                Ok((found, seen)) => {
                    let how = format!(
                        "llvmpipe, {} skipped for a subnormal argument or result, {} tiles declined, {:.0} s",
                        seen.skipped,
                        seen.declined.len(),
                        started.elapsed().as_secs_f64()
                    );
                    report(f, &found, seen.ran, how);
                    for tile in seen.declined.iter().take(LISTED) {
                        println!("  declined {tile}");
                    }
                    failed |= found.wrong > 0 || !seen.declined.is_empty();
                }
                Err(e) => {
                    println!("{}: llvmpipe failed: {e}", f.name);
                    failed = true;
                }
            },
        }
    }
    std::process::exit(i32::from(failed));
}
