//! The library's operations on two arguments (`ldexp`, and `%` on floats as `remainder`), bit
//! for bit against references written apart from it (musl's scalbnf, the platform's fmodf), on
//! the CPU form, the library's WGSL alone (the GPU forms' code, transcribed), the PTX
//! interpreter and llvmpipe: every pair of special values and edges, and random pairs
//! (`XCD_MATH_RANDOM` of them, default 1,000,000; scripts/math-proof's `--pairs` runs many more).

use bytes::Bytes;
use xcd_engine::{DeviceHandle, EngineError, TileJob};
use xcd_mathcheck::{PAIRS, Pair, draw_pairs, run_cpu_pair, same};
use xcd_wire::Tile;

/// Floats every operation meets: zeros, infinities, NaN, the subnormal and normal edges, and
/// values whose remainders are exact halves, wholes and neighbours.
const FLOATS: &[u32] = &[
    0,
    0x8000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    1,
    0x8000_0003,
    0x007f_ffff,
    0x0080_0000,
    0x0080_0001,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x3f80_0000,
    0xbf80_0000,
    0x3f80_0001,
    0x3fc0_0000,
    0x4040_0000,
    0xc0a0_0000,
    0x4b00_0000,
    0x4b7f_ffff,
    0x7f00_0000,
    0x3dcc_cccd,
    0x4049_0fdb,
];

/// Exponents `ldexp` meets: where results become subnormal, vanish, overflow, and beyond.
const EXPONENTS: &[i32] = &[
    0,
    1,
    -1,
    23,
    -23,
    24,
    -24,
    126,
    -126,
    127,
    -127,
    128,
    -128,
    149,
    -149,
    150,
    -150,
    151,
    -151,
    254,
    -254,
    255,
    -255,
    277,
    -277,
    300,
    -300,
    1000,
    -1000,
    i32::MAX,
    i32::MIN,
];

/// Every pair of the edges, then random pairs (`draw_pairs`).
fn arguments(p: &Pair) -> (Vec<f32>, Vec<u32>) {
    let n = std::env::var("XCD_MATH_RANDOM").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let seconds: Vec<u32> =
        if p.second_is_float { FLOATS.to_vec() } else { EXPONENTS.iter().map(|&e| e as u32).collect() };
    let (mut x, mut second) = (Vec::new(), Vec::new());
    for &a in FLOATS {
        for &b in &seconds {
            x.push(f32::from_bits(a));
            second.push(b);
        }
    }
    let (mut rx, mut rs) = (vec![0f32; n], vec![0u32; n]);
    draw_pairs(p, 0x5eed ^ p.name.len() as u64, &mut rx, &mut rs);
    x.extend(rx);
    second.extend(rs);
    (x, second)
}

/// The pairs on which `got` is not the reference's result, listed.
fn wrong(p: &Pair, x: &[f32], second: &[u32], got: &[f32]) -> Vec<String> {
    x.iter()
        .zip(second)
        .zip(got)
        .filter(|&((&a, &b), &y)| !same(y, (p.reference)(a, b)))
        .take(20)
        .map(|((&a, &b), &y)| {
            format!(
                "{}({:#010x}, {b:#x}) gave {:#010x}, not {:#010x}",
                p.name,
                a.to_bits(),
                y.to_bits(),
                (p.reference)(a, b).to_bits()
            )
        })
        .collect()
}

#[test]
fn the_cpu_form_and_the_wgsl_alone_give_the_reference_s_bits() {
    for p in PAIRS {
        let (mut x, mut second) = arguments(p);
        x.truncate(x.len() / 4 * 4);
        second.truncate(x.len());
        let mut y = vec![0f32; x.len()];
        run_cpu_pair((p.block)().cpu, 1, &x, &second, &mut y);
        let bad = wrong(p, &x, &second, &y);
        assert!(bad.is_empty(), "CPU form, {} wrong:\n{}", bad.len(), bad.join("\n"));
        let mut y4 = vec![0f32; x.len()];
        run_cpu_pair((p.block4)().cpu, 4, &x, &second, &mut y4);
        assert!(y.iter().zip(&y4).all(|(a, b)| a.to_bits() == b.to_bits()), "{}: vec4 differs from f32", p.name);
        let mut alone = vec![0f32; x.len()];
        run_cpu_pair(p.wgsl, 1, &x, &second, &mut alone);
        let bad = wrong(p, &x, &second, &alone);
        assert!(bad.is_empty(), "the WGSL alone, {} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}

/// Runs a pair's block on `device` in tiles of 2^16 pairs; the results, or why a tile failed.
fn run(device: &DeviceHandle, p: &Pair, x: &[f32], second: &[u32]) -> Result<Vec<f32>, EngineError> {
    let id = device.load_blocking((p.block)().desc.clone())?;
    let mut out = Vec::with_capacity(x.len());
    for (a, b) in x.chunks(1 << 16).zip(second.chunks(1 << 16)) {
        let job = TileJob {
            block: id,
            tile: Tile { start: 0, count: a.len() as u32 },
            params: Vec::new(),
            inputs: vec![
                Bytes::copy_from_slice(bytemuck::cast_slice(a)),
                Bytes::copy_from_slice(bytemuck::cast_slice(b)),
            ],
            whole: Vec::new(),
        };
        out.extend(bytemuck::pod_collect_to_vec::<u8, f32>(&device.run_blocking(job)?.outputs[0]));
    }
    Ok(out)
}

#[test]
fn the_ptx_interpreter_gives_the_reference_s_bits() {
    let device = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    for p in PAIRS {
        if let Some(ptxas) = xcd_ptxsim::ptxas::required() {
            let ptx = (p.block)().desc.forms.ptx.clone().expect("xcd-build makes the PTX form");
            xcd_ptxsim::ptxas::check(&ptxas, &ptx, p.name).unwrap_or_else(|e| panic!("{e}"));
        }
        let (x, second) = arguments(p);
        let got = run(&device, p, &x, &second).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let bad = wrong(p, &x, &second, &got);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}

#[test]
fn llvmpipe_runs_every_pair_whose_values_are_normal() {
    let Some(device) = xcd_engine::discover().devices.into_iter().find(|d| d.info().id.starts_with("vulkan:")) else {
        eprintln!("skipped: no Vulkan device");
        return;
    };
    for p in PAIRS {
        let (x, second) = arguments(p);
        let normal = |v: f32| !v.is_subnormal();
        let (x, second): (Vec<f32>, Vec<u32>) = x
            .into_iter()
            .zip(second)
            .filter(|&(a, b)| {
                normal(a) && (!p.second_is_float || normal(f32::from_bits(b))) && normal((p.reference)(a, b))
            })
            .unzip();
        let got = run(&device, p, &x, &second).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let bad = wrong(p, &x, &second, &got);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}
