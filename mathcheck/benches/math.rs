//! Each library function's throughput in the CPU form, against Rust's `f32` function (the
//! platform's, not correctly rounded; `1.0 / x.sqrt()` for `inverseSqrt`) and the correctly
//! rounded reference (CORE-MATH's; for `degrees` and `radians` mathcheck's own), on the same
//! arguments in one run: `cargo bench -p xcd-mathcheck --bench math`. The ratios go in
//! docs/performance.md; the goal is the CPU form within 3x of Rust's `f32::exp`.
#![allow(missing_docs)] // criterion_group! makes undocumented public functions

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use xcd_mathcheck::{FUNCTIONS, PAIRS, run_cpu, run_cpu_pair};

/// Arguments per measured call: normal results, as programs mostly meet.
const N: usize = 1 << 16;

/// `N` arguments evenly over the range a program mostly gives `name`: [-80, 80] for the
/// exponentials, the hyperbolic functions, `sin`, `cos`, `tan` (nearly all reduced by pi/2),
/// `atan`, `asinh`, `degrees` and `radians`; (0, 160] for the logarithms and `inverseSqrt`;
/// [1, 161] for `acosh`; (-1, 1) for `asin`, `acos` and `atanh`.
fn arguments(name: &str) -> Vec<f32> {
    let (low, width) = match name {
        "asin" | "acos" | "atanh" => (-1.0, 2.0),
        "acosh" => (1.0, 160.0),
        _ if name.starts_with("log") || name == "inverseSqrt" => (0.0, 160.0),
        _ => (-80.0, 160.0),
    };
    (0..N).map(|i| low + width * (i as f32 + 0.5) / N as f32).collect()
}

fn rust_f32(name: &str) -> fn(f32) -> f32 {
    match name {
        "exp" => f32::exp,
        "exp2" => f32::exp2,
        "log" => f32::ln,
        "log2" => f32::log2,
        "sin" => f32::sin,
        "cos" => f32::cos,
        "tan" => f32::tan,
        "asin" => f32::asin,
        "acos" => f32::acos,
        "atan" => f32::atan,
        "sinh" => f32::sinh,
        "cosh" => f32::cosh,
        "tanh" => f32::tanh,
        "asinh" => f32::asinh,
        "acosh" => f32::acosh,
        "atanh" => f32::atanh,
        "inverseSqrt" => |x| 1.0 / x.sqrt(),
        "degrees" => f32::to_degrees,
        "radians" => f32::to_radians,
        // Rust's f16 is not stable: the `half` crate's conversions (F16C where the CPU has it).
        "quantizeToF16" => |x| half::f16::from_f32(x).to_f32(),
        other => panic!("no Rust baseline for {other}"),
    }
}

fn functions(c: &mut Criterion) {
    let mut out = vec![0f32; N];
    let mut group = c.benchmark_group("math");
    group.throughput(Throughput::Elements(N as u64));
    for f in FUNCTIONS {
        let args = arguments(f.name);
        let block = (f.block)();
        group.bench_function(BenchmarkId::new(f.name, "cpu form"), |b| {
            b.iter(|| run_cpu(block.cpu, 1, black_box(&args), &mut out));
        });
        group.bench_function(BenchmarkId::new(f.name, "fast path"), |b| {
            b.iter(|| out.iter_mut().zip(black_box(&args)).for_each(|(y, &x)| *y = (f.fast)(x).unwrap_or(f32::NAN)));
        });
        let rust = rust_f32(f.name);
        group.bench_function(BenchmarkId::new(f.name, "rust f32"), |b| {
            b.iter(|| out.iter_mut().zip(black_box(&args)).for_each(|(y, &x)| *y = rust(x)));
        });
        group.bench_function(BenchmarkId::new(f.name, "core-math"), |b| {
            b.iter(|| out.iter_mut().zip(black_box(&args)).for_each(|(y, &x)| *y = (f.reference)(x)));
        });
    }
    group.finish();
}

/// `pow`, on two arguments: the CPU form (the f64 fast path of `xcd-cpumath`, falling back to
/// the library's WGSL) against Rust's `f32::powf` and CORE-MATH's `powf`, on `x` in (0, 16] and `y` in
/// [-8, 8], where results stay normal.
fn pow(c: &mut Criterion) {
    let Some(p) = PAIRS.iter().find(|p| p.name == "pow") else { return };
    let x: Vec<f32> = (0..N).map(|i| 16.0 * (i as f32 + 0.5) / N as f32).collect();
    let y: Vec<f32> = (0..N).map(|i| -8.0 + 16.0 * ((i * 7919) % N) as f32 / N as f32).collect();
    let second: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
    let mut out = vec![0f32; N];
    let mut group = c.benchmark_group("math");
    group.throughput(Throughput::Elements(N as u64));
    let block = (p.block)();
    group.bench_function(BenchmarkId::new("pow", "cpu form"), |b| {
        b.iter(|| run_cpu_pair(block.cpu, 1, black_box(&x), &second, &[], &mut out));
    });
    group.bench_function(BenchmarkId::new("pow", "rust f32"), |b| {
        b.iter(|| out.iter_mut().zip(black_box(&x)).zip(&y).for_each(|((o, &a), &b)| *o = a.powf(b)));
    });
    group.bench_function(BenchmarkId::new("pow", "core-math"), |b| {
        b.iter(|| out.iter_mut().zip(black_box(&x)).zip(&y).for_each(|((o, &a), &b)| *o = core_math::powf(a, b)));
    });
    group.finish();
}

criterion_group!(benches, functions, pow);
criterion_main!(benches);
