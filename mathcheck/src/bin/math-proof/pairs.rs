//! `math-proof --pairs N`: the library's operations on two or three arguments (`ldexp`, `%`,
//! `atan2`, `fma`, `pow`), whose argument space (2^64 or 2^96) cannot be enumerated, on N random pairs (or
//! triples) each, in the CPU form and in
//! the library's WGSL alone, against references written apart from the library (the `Pair`'s).
//! The pairs are drawn as `mathcheck/tests/pairs.rs` draws them (`draw_pairs`), from a seed per
//! chunk, so a run is the same every time and a wrong pair can be found again.
//!
//! This module owns the drawing and the count; the blocks and references are the crate's.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use xcd_mathcheck::{PAIRS, Pair, draw_pairs, run_cpu_pair, same, ulps};
use xcd_runtime::CpuKernel;

/// Pairs per chunk.
const CHUNK: u64 = 1 << 20;
/// Wrong pairs listed per operation.
const LISTED: usize = 20;

/// What one operation's run found: the wrong results, the largest error, the first wrong pairs.
#[derive(Default)]
struct Found {
    wrong: u64,
    worst: u64,
    first: Vec<(u32, u32, u32, u32, u32)>,
}

fn prove(p: &Pair, cpu: CpuKernel, total: u64, threads: usize) -> Found {
    let next = AtomicU64::new(0);
    let found = Mutex::new(Found::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let n = CHUNK as usize;
                let (mut x, mut second, mut y) = (vec![0f32; n], vec![0u32; n], vec![0f32; n]);
                let mut third = vec![0f32; if p.third { n } else { 0 }];
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c * CHUNK >= total {
                        break;
                    }
                    let seed = 0x9e37_79b9_7f4a_7c15 ^ c.wrapping_mul(0x2545_f491_4f6c_dd1d);
                    draw_pairs(p, seed, &mut x, &mut second, &mut third);
                    run_cpu_pair(cpu, 1, &x, &second, &third, &mut y);
                    for (i, ((&a, &b), &got)) in x.iter().zip(&second).zip(&y).enumerate() {
                        let z = third.get(i).copied().unwrap_or(0.0);
                        let want = (p.reference)(a, b, z);
                        if !same(got, want) {
                            let mut found = found.lock();
                            found.wrong += 1;
                            found.worst = found.worst.max(ulps(got, want));
                            if found.first.len() < LISTED {
                                found.first.push((a.to_bits(), b, z.to_bits(), got.to_bits(), want.to_bits()));
                            }
                        }
                    }
                }
            });
        }
    });
    found.into_inner()
}

/// Runs each operation named in `names` (every one if none of them is an operation) on `total` pairs (rounded up to
/// whole chunks) in both codes; true if any result is wrong.
pub(crate) fn prove_all(total: u64, threads: usize, names: &[String]) -> bool {
    let total = total.div_ceil(CHUNK) * CHUNK;
    let mut failed = false;
    let named = |p: &&Pair| names.iter().any(|n| n == p.name);
    let every = !PAIRS.iter().any(|p| named(&p));
    for p in PAIRS.iter().filter(|p| every || named(p)) {
        for (code, cpu) in [("CPU form", (p.block)().cpu), ("the WGSL alone", p.wgsl)] {
            let started = Instant::now();
            let found = prove(p, cpu, total, threads);
            println!(
                "{}: {total} random pairs, {} not correctly rounded, largest error {} ulp ({code}, {:.0} s, {threads} threads)",
                p.name,
                found.wrong,
                found.worst,
                started.elapsed().as_secs_f64()
            );
            for (a, b, z, got, want) in &found.first {
                let z = if p.third { format!(", {z:#010x}") } else { String::new() };
                println!("  {}({a:#010x}, {b:#010x}{z}) gave {got:#010x}, the reference {want:#010x}", p.name);
            }
            failed |= found.wrong > 0;
        }
    }
    failed
}
