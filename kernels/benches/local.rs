//! Benchmarks of local devices: the escape block on each local device, and the cost of a tile
//! (many tiny tiles against one big tile of the same block, on each device).
//!
//! Run with `cargo bench -p xcd-kernels --bench local`; figures go in docs/performance.md.
#![allow(missing_docs)] // criterion_group! makes undocumented public functions

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use xcd_runtime::{Args, Par, RunOptions, Settings, WorkerChoice};

/// One Par per local device: the CPU and each GPU (llvmpipe here).
fn pars() -> Vec<(String, Par)> {
    let all = Par::new(Settings::default()).expect("local workers");
    all.worker_names()
        .into_iter()
        .map(|name| {
            let choice =
                if name == "cpu" { WorkerChoice::Cpu } else { WorkerChoice::named(&name).expect("a worker name") };
            let par = Par::new(Settings { workers: vec![choice], ..Settings::default() }).expect("one worker");
            (name.to_owned(), par)
        })
        .collect()
}

fn escape(c: &mut Criterion) {
    let (w, h, iters) = (512u32, 512u32, 500u32);
    let block = xcd_kernels::escape();
    let mut group = c.benchmark_group("escape_512x512x500");
    group.sample_size(10);
    group.throughput(Throughput::Elements(u64::from(w * h)));
    for (name, par) in pars() {
        let mut counts = vec![0u32; (w * h) as usize];
        group.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter(|| {
                par.run(&block, w * h, Args::new().u32(w).u32(h).u32(iters).output(&mut counts)).expect("runs");
                black_box(&counts);
            })
        });
    }
    group.finish();
}

fn tile_overhead(c: &mut Criterion) {
    let n = 1u32 << 16;
    let block = xcd_kernels::saxpy();
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut group = c.benchmark_group("saxpy_65536_tiles");
    group.sample_size(10);
    for (name, par) in pars() {
        let mut y = vec![1.0f32; n as usize];
        for tile in [256u32, n] {
            let options = RunOptions { tile_items: Some(tile), progress: None };
            let id = BenchmarkId::new(name.clone(), format!("{} tiles", n / tile));
            group.bench_function(id, |b| {
                b.iter(|| {
                    par.run_with(&block, n, Args::new().f32(0.5).input(&x).inout(&mut y), &options).expect("runs");
                    black_box(&y);
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, escape, tile_overhead);
criterion_main!(benches);
