//! The generated CPU forms against the hand-written ones they replaced, in one run: each block
//! runs on the CPU worker alone, once with the CPU form xcd-build wrote from the WGSL and once
//! with the Rust that was written by hand before it (kept here as the baseline).
//!
//! Run with `cargo bench -p xcd-kernels --bench cpu_forms`; the ratios go in
//! docs/performance.md. The goal: every generated form within 1.2× of its baseline.
#![allow(missing_docs)] // criterion_group! makes undocumented public functions

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use xcd_runtime::{Args, Block, CpuTile, Par, RunOptions, Settings, WorkerChoice, canonical};

/// The escape block's hand-written CPU form.
fn escape_by_hand(t: &mut CpuTile<'_>) {
    let (width, height, max_iter) = (t.param_u32(0), t.param_u32(1), t.param_u32(2));
    let start = t.tile.start;
    for (i, count) in t.take_write::<u32>(0).iter_mut().enumerate() {
        *count = xcd_kernels::escape_pixel(start + i as u32, width, height, max_iter);
    }
}

/// The saxpy block's hand-written CPU form.
fn saxpy_by_hand(t: &mut CpuTile<'_>) {
    let a = t.param_f32(0);
    let x = t.read::<f32>(0);
    for (y, &x) in t.take_write::<f32>(1).iter_mut().zip(x) {
        #[allow(clippy::assign_op_pattern)]
        {
            *y = canonical(a * x + *y);
        }
    }
}

/// The poly block's hand-written CPU form.
fn poly_by_hand(t: &mut CpuTile<'_>) {
    let terms = t.param_u32(0);
    let x = t.read::<f32>(0);
    let coef = t.read::<f32>(1);
    for (y, &v) in t.take_write::<f32>(2).iter_mut().zip(x) {
        let mut acc = 0.0f32;
        for k in (0..terms as usize).rev() {
            acc = acc * v + coef.get(k).copied().unwrap_or(0.0);
        }
        *y = canonical(acc);
    }
}

/// The block with its CPU form replaced by the hand-written one.
fn by_hand(block: Block, cpu: xcd_runtime::CpuKernel) -> Block {
    Block { desc: Arc::clone(&block.desc), cpu }
}

fn cpu_only() -> Par {
    Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker")
}

fn forms(c: &mut Criterion) {
    let par = cpu_only();
    let one_tile = |n: u32| RunOptions { tile_items: Some(n), progress: None };

    let (w, h, iters) = (512u32, 256u32, 500u32);
    let n = w * h;
    let mut group = c.benchmark_group("escape_512x256x500");
    group.sample_size(10).throughput(Throughput::Elements(u64::from(n)));
    for (name, block) in
        [("by_hand", by_hand(xcd_kernels::escape(), escape_by_hand)), ("generated", xcd_kernels::escape())]
    {
        let mut counts = vec![0u32; n as usize];
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let args = Args::new().u32(w).u32(h).u32(iters).output(&mut counts);
                par.run_with(&block, n, args, &one_tile(n)).expect("runs");
                black_box(&counts);
            })
        });
    }
    group.finish();

    let n = 1u32 << 22;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut group = c.benchmark_group("saxpy_4M");
    group.sample_size(10).throughput(Throughput::Elements(u64::from(n)));
    for (name, block) in
        [("by_hand", by_hand(xcd_kernels::saxpy(), saxpy_by_hand)), ("generated", xcd_kernels::saxpy())]
    {
        let mut y = vec![1.0f32; n as usize];
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let args = Args::new().f32(1.5).input(&x).inout(&mut y);
                par.run_with(&block, n, args, &one_tile(n)).expect("runs");
                black_box(&y);
            })
        });
    }
    group.finish();

    let n = 1u32 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / n as f32).collect();
    let coef: Vec<f32> = (0..16).map(|k| 1.0 / (k as f32 + 1.0)).collect();
    let mut group = c.benchmark_group("poly_1M_16_terms");
    group.sample_size(10).throughput(Throughput::Elements(u64::from(n)));
    for (name, block) in [("by_hand", by_hand(xcd_kernels::poly(), poly_by_hand)), ("generated", xcd_kernels::poly())] {
        let mut y = vec![0.0f32; n as usize];
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let args = Args::new().u32(16).input(&x).whole(&coef).output(&mut y);
                par.run_with(&block, n, args, &one_tile(n)).expect("runs");
                black_box(&y);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, forms);
criterion_main!(benches);
