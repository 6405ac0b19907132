//! The long-form proof (scripts/math-proof): each one-argument function of the math library, in
//! its CPU form, on every one of the 2^32 f32 arguments, against CORE-MATH's correctly rounded
//! result. Prints, per function, the arguments tried, the results not correctly rounded and
//! the largest error in ulps, and the first wrong arguments; exits 1 if any result is wrong.
//!
//! `math-proof [NAME…]` (default: every function); `XCD_PROOF_THREADS` sets the threads (default:
//! every core).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use xcd_mathcheck::{FUNCTIONS, Function, run_cpu, same, ulps};

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

fn prove(f: &Function, threads: usize) -> Found {
    let block = (f.block)();
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
                    run_cpu(block.cpu, 1, &x, &mut y);
                    let mut local = Found::default();
                    for (&a, &got) in x.iter().zip(&y) {
                        let want = (f.reference)(a);
                        if !same(got, want) {
                            local.wrong += 1;
                            local.worst = local.worst.max(ulps(got, want));
                            local.first.push((a.to_bits(), got.to_bits(), want.to_bits()));
                        }
                    }
                    if local.wrong > 0 {
                        let mut all = found.lock().unwrap_or_else(|e| e.into_inner());
                        all.wrong += local.wrong;
                        all.worst = all.worst.max(local.worst);
                        all.first.extend(local.first);
                    }
                }
            });
        }
    });
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    found.first.sort_unstable();
    found
}

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let threads = std::env::var("XCD_PROOF_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut failed = false;
    for f in FUNCTIONS.iter().filter(|f| names.is_empty() || names.iter().any(|n| n == f.name)) {
        let started = Instant::now();
        let found = prove(f, threads);
        println!(
            "{}: {} arguments tried, {} not correctly rounded, largest error {} ulp ({:.0} s, {threads} threads)",
            f.name,
            1u64 << 32,
            found.wrong,
            found.worst,
            started.elapsed().as_secs_f64()
        );
        for (x, got, want) in found.first.iter().take(LISTED) {
            println!(
                "  {}({:e}) = {x:#010x}: gave {got:#010x}, correctly rounded {want:#010x}",
                f.name,
                f32::from_bits(*x)
            );
        }
        failed |= found.wrong > 0;
    }
    std::process::exit(i32::from(failed));
}
