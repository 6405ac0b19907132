//! `math-proof --split`: `frexp` and `modf`, whose results are structs, on every one of the 2^32
//! f32 arguments: the `split_1` block's four fields (frexp's fraction and exponent, modf's
//! fraction and whole part) against musl's `frexpf` and `modff` (`reference::split`). The CPU
//! form of `split_1` is the library's WGSL itself (these have no fast path), so this is the
//! GPU forms' code too.
//!
//! This module owns that enumeration and its report; the block and reference are the crate's.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use xcd_mathcheck::{reference, same, split_1};
use xcd_runtime::wire::Tile;
use xcd_runtime::{CpuArg, CpuTile};

/// Arguments per chunk.
const CHUNK: u64 = 1 << 20;
/// Wrong arguments listed.
const LISTED: usize = 20;

/// Runs every argument; prints what it found; true if any field is wrong.
pub(crate) fn prove(threads: usize) -> bool {
    let next = AtomicU64::new(0);
    let wrong = AtomicU64::new(0);
    let first = Mutex::new(Vec::new());
    let started = Instant::now();
    let cpu = split_1::block().cpu;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let (mut x, mut y) = (vec![0f32; CHUNK as usize], vec![0f32; 4 * CHUNK as usize]);
                loop {
                    let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if start >= 1 << 32 {
                        break;
                    }
                    for (i, v) in x.iter_mut().enumerate() {
                        *v = f32::from_bits((start + i as u64) as u32);
                    }
                    let tile = Tile { start: 0, count: CHUNK as u32 };
                    let args =
                        vec![CpuArg::Read(bytemuck::cast_slice(&x)), CpuArg::Write(bytemuck::cast_slice_mut(&mut y))];
                    cpu(&mut CpuTile::new(tile, &[], args));
                    for (&a, got) in x.iter().zip(y.chunks_exact(4)) {
                        let want = reference::split(a);
                        if got.iter().zip(&want).any(|(&g, &w)| !same(g, w)) {
                            wrong.fetch_add(1, Ordering::Relaxed);
                            let mut first = first.lock();
                            if first.len() < LISTED {
                                first.push((a.to_bits(), [got[0], got[1], got[2], got[3]], want));
                            }
                        }
                    }
                }
            });
        }
    });
    let wrong = wrong.into_inner();
    println!(
        "frexp and modf: 4294967296 arguments tried, {wrong} with a field unlike musl's ({:.0} s, {threads} threads)",
        started.elapsed().as_secs_f64()
    );
    let mut first = first.into_inner();
    first.sort_unstable_by_key(|f| f.0);
    for (x, got, want) in first {
        println!("  {x:#010x}: gave {got:?}, musl {want:?}");
    }
    wrong > 0
}
