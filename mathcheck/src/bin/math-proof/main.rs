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
//! With `--device PART`, the same on the device whose id contains PART (`cuda`, or
//! `vulkan:nvidia` with CUDA hidden, on a GPU machine: scripts/gpu-check): every argument on a
//! device that keeps subnormals, as llvmpipe's on one that flushes them (any Vulkan device).
//!
//! With `--rate`, no proof: each function's calls per second, in the CPU form on one core or
//! on the device named, against the same loop without the function (`rate.rs`).
//!
//! With `--pairs N`, the operations on two or three arguments (`ldexp`, `%` as `remainder`,
//! `atan2`, `fma`, `pow`) on N random pairs or triples each (`pairs.rs`), or those named.
//!
//! With `--split`, `frexp` and `modf` (whose results are structs) on all 2^32 arguments, against
//! musl's (`split.rs`).
//!
//! `math-proof [--llvmpipe | --device PART] [--rate] [--pairs N] [--split] [--step K] [NAME…]` (default: every function);
//! `XCD_PROOF_THREADS` sets the threads that run and check (default: every core).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, EngineError, TileJob};
use xcd_mathcheck::{FUNCTIONS, Function, PAIRS, run_cpu, same, ulps};
use xcd_wire::Tile;

mod pairs;
mod rate;
mod split;

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
                if self.first.len() < LISTED {
                    self.first.push((a.to_bits(), got.to_bits(), want.to_bits()));
                }
            }
        }
    }

    fn merge(&mut self, other: Found) {
        self.wrong += other.wrong;
        self.worst = self.worst.max(other.worst);
        self.first.extend(other.first);
        // The first arguments of all: chunks end in any order.
        self.first.sort_unstable();
        self.first.truncate(LISTED);
    }
}

/// Every `step`th argument (all 2^32 when `step` is 1), through `cpu`.
fn prove(f: &Function, cpu: xcd_runtime::CpuKernel, threads: usize, step: u64) -> Found {
    let next = AtomicU64::new(0);
    let found = Mutex::new(Found::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let (mut x, mut y) = (vec![0f32; CHUNK as usize], vec![0f32; CHUNK as usize]);
                loop {
                    let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if start >= (1 << 32) / step {
                        break;
                    }
                    for (i, v) in x.iter_mut().enumerate() {
                        *v = f32::from_bits(((start + i as u64) * step) as u32);
                    }
                    run_cpu(cpu, 1, &x, &mut y);
                    let mut local = Found::default();
                    local.check(f, &x, &y);
                    if local.wrong > 0 {
                        found.lock().merge(local);
                    }
                }
            });
        }
    });
    let mut found = found.into_inner();
    found.first.sort_unstable();
    found
}

/// What a run on a device found beyond wrong results: the arguments it skipped (a subnormal
/// argument or result, on a device that flushes them) and the tiles it declined.
#[derive(Debug, Default)]
struct OnDevice {
    ran: u64,
    skipped: u64,
    declined: Vec<String>,
}

/// One chunk of the 2^32 arguments on `device`: those it can take, the results checked.
fn chunk_on(
    f: &Function,
    device: &DeviceHandle,
    id: xcd_wire::BlockId,
    start: u64,
    skip_subnormal: bool,
) -> Result<(Found, OnDevice), EngineError> {
    let (mut found, mut seen) = (Found::default(), OnDevice::default());
    let mut args: Vec<f32> = Vec::with_capacity(CHUNK as usize);
    for bits in start..start + CHUNK {
        let x = f32::from_bits(bits as u32);
        if skip_subnormal && (x.is_subnormal() || (f.reference)(x).is_subnormal()) {
            seen.skipped += 1;
        } else {
            args.push(x);
        }
    }
    if args.is_empty() {
        return Ok((found, seen));
    }
    let job = TileJob {
        block: id,
        tile: Tile { start: 0, count: args.len() as u32 },
        params: Vec::new(),
        inputs: vec![Bytes::copy_from_slice(bytemuck::cast_slice(&args))],
        whole: Vec::new(),
    };
    match device.run_blocking(job) {
        Ok(done) => {
            let got: Vec<f32> = bytemuck::pod_collect_to_vec(&done.outputs[0]);
            found.check(f, &args, &got);
            seen.ran += args.len() as u64;
        }
        Err(EngineError::Inexact { reason, .. }) => seen.declined.push(format!(
            "{:#010x}..={:#010x}: {reason}",
            args[0].to_bits(),
            args[args.len() - 1].to_bits()
        )),
        Err(e) => return Err(e),
    }
    Ok((found, seen))
}

/// Every argument of `f` on `device`, `threads` chunks at a time (the reference and the
/// comparison run on this machine's cores meanwhile). A device that flushes subnormals (every
/// Vulkan device, as far as the engine trusts it) skips an argument whose argument or result
/// is subnormal, which would make it decline the whole tile.
fn prove_on(f: &Function, device: &DeviceHandle, threads: usize) -> Result<(Found, OnDevice), String> {
    let id = device.load_blocking((f.block)().desc.clone()).map_err(|e| e.to_string())?;
    let skip_subnormal = device.info().id.starts_with("vulkan:");
    let next = AtomicU64::new(0);
    let total = Mutex::new((Found::default(), OnDevice::default(), None::<String>));
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if start >= 1 << 32 {
                        break;
                    }
                    if start.is_multiple_of(1 << 30) && start > 0 {
                        let done = start as f64 / 2f64.powi(32);
                        let left = started.elapsed().as_secs_f64() * (1.0 - done) / done;
                        eprintln!("{}: {:.0}% on {}, about {left:.0} s left", f.name, done * 100.0, device.info().id);
                    }
                    let result = chunk_on(f, device, id, start, skip_subnormal);
                    let mut total = total.lock();
                    match result {
                        Ok((found, seen)) => {
                            total.0.merge(found);
                            total.1.ran += seen.ran;
                            total.1.skipped += seen.skipped;
                            total.1.declined.extend(seen.declined);
                        }
                        Err(e) => {
                            total.2.get_or_insert(e.to_string());
                            next.store(1 << 32, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let (mut found, mut seen, failed) = total.into_inner();
    if let Some(e) = failed {
        return Err(e);
    }
    found.first.sort_unstable();
    seen.declined.sort_unstable();
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

/// The command line: where to run, what to measure, which functions.
struct Args {
    /// Part of a device's id (`--device`; `--llvmpipe` is `--device vulkan:llvmpipe`).
    device: Option<String>,
    /// Measure calls per second instead of proving (`--rate`).
    rate: bool,
    /// Random pairs (or triples) for each operation on two (or three) arguments instead
    /// (`--pairs N`).
    pairs: Option<u64>,
    /// `frexp` and `modf` on every argument instead (`--split`).
    split: bool,
    /// Every this many'th argument only, on the CPU (`--step K`, odd): a quick look before the
    /// proof.
    step: u64,
    names: Vec<String>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args { device: None, rate: false, pairs: None, split: false, step: 1, names: Vec::new() };
    let mut all = std::env::args().skip(1);
    while let Some(arg) = all.next() {
        match arg.as_str() {
            "--llvmpipe" => args.device = Some("vulkan:llvmpipe".into()),
            "--device" => {
                args.device = Some(
                    all.next().ok_or("--device takes part of a device's id (`xcrun devices` lists them), e.g. cuda")?,
                );
            }
            "--rate" => args.rate = true,
            "--split" => args.split = true,
            "--step" => {
                let k = all.next().and_then(|k| k.parse().ok()).filter(|k: &u64| k % 2 == 1);
                args.step = k.ok_or("--step takes an odd number K: every Kth argument, e.g. 1001")?;
            }
            "--pairs" => {
                let n = all.next().and_then(|n| n.parse().ok());
                args.pairs = Some(n.ok_or("--pairs takes how many random pairs, e.g. 1000000000")?);
            }
            name if FUNCTIONS.iter().any(|f| f.name == name) || PAIRS.iter().any(|p| p.name == name) => {
                args.names.push(arg);
            }
            other => {
                let names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).chain(PAIRS.iter().map(|p| p.name)).collect();
                return Err(format!(
                    "unknown argument {other}: the options are --device PART, --llvmpipe, --rate, --step K, --pairs N and --split, the functions {}",
                    names.join(" ")
                ));
            }
        }
    }
    Ok(args)
}

/// The device whose id contains `part` (case aside).
fn device(part: &str) -> Result<DeviceHandle, String> {
    let part = part.to_lowercase();
    let devices = xcd_engine::discover().devices;
    let ids: Vec<String> = devices.iter().map(|d| d.info().id.clone()).collect();
    devices.into_iter().find(|d| d.info().id.to_lowercase().contains(&part)).ok_or_else(|| {
        let hint = if part.contains("llvmpipe") { "; install mesa-vulkan-drivers (scripts/deps --tests)" } else { "" };
        format!(
            "no device here matches {part} (here: {}){hint}",
            if ids.is_empty() { "none".into() } else { ids.join(", ") }
        )
    })
}

/// Proves each function on the CPU form, both codes; true if any result is wrong.
fn prove_cpu(functions: &[&Function], threads: usize, step: u64) -> bool {
    let mut failed = false;
    for f in functions {
        let codes = [("CPU form: f64 fast path, WGSL fallback", (f.block)().cpu), ("the WGSL alone", f.wgsl)];
        for (code, cpu) in codes {
            let started = Instant::now();
            let found = prove(f, cpu, threads, step);
            let how = format!("{code}, {:.0} s, {threads} threads", started.elapsed().as_secs_f64());
            report(f, &found, (1 << 32) / step, how);
            failed |= found.wrong > 0;
        }
    }
    failed
}

/// Proves each function on `device`; true if any result is wrong, a tile was declined or the
/// device failed.
fn prove_device(functions: &[&Function], device: &DeviceHandle, threads: usize) -> bool {
    let mut failed = false;
    for f in functions {
        let started = Instant::now();
        match prove_on(f, device, threads) {
            Ok((found, seen)) => {
                let how = format!(
                    "{}, {} skipped for a subnormal argument or result, {} tiles declined, {:.0} s",
                    device.info().id,
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
                println!("{}: {} failed: {e}", f.name, device.info().id);
                failed = true;
            }
        }
    }
    failed
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("math-proof: {e}");
            std::process::exit(64);
        }
    };
    let threads = std::env::var("XCD_PROOF_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let device = match args.device.as_deref().map(device).transpose() {
        Ok(device) => device,
        Err(e) => {
            eprintln!("math-proof: {e}");
            std::process::exit(2);
        }
    };
    let functions: Vec<&Function> =
        FUNCTIONS.iter().filter(|f| args.names.is_empty() || args.names.iter().any(|n| n == f.name)).collect();
    if args.split {
        std::process::exit(i32::from(split::prove(threads)));
    }
    if let Some(total) = args.pairs {
        std::process::exit(i32::from(pairs::prove_all(total, threads, &args.names)));
    }
    let failed = match (&device, args.rate) {
        (_, true) => rate::measure(&functions, device.as_ref()).map_err(|e| eprintln!("math-proof: {e}")).is_err(),
        (None, false) => prove_cpu(&functions, threads, args.step),
        (Some(device), false) => prove_device(&functions, device, threads),
    };
    std::process::exit(i32::from(failed));
}
