//! The library's operations on two or three arguments (`ldexp`, `%` on floats as `remainder`,
//! `atan2`, `fma`, `pow`), bit for bit against references written apart from it (musl's scalbnf
//! and fmaf, the platform's fmodf, CORE-MATH's atan2f and powf), on the CPU form, the library's WGSL alone (the GPU forms' code,
//! transcribed), the PTX interpreter and llvmpipe: every pair (or triple) of special values and
//! edges, and random ones (`XCD_MATH_RANDOM` of them, default 1,000,000; scripts/math-proof's
//! `--pairs` runs many more).

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

/// `pow`'s hard cases: CORE-MATH's hardest to round (x^y within 2^-80 or so of a midpoint, from
/// its list of worst cases: 57 and 56 identical bits after the rounding bit), its non-regression
/// pairs, and exact and midpoint results (3^15 2^-60 as (3^8 2^-32)^(15/8), 2^-149 and 2^-150,
/// (1 + 2^-12)^2 halfway between two f32, cubes, square roots).
const HARD_POW: &[(u32, u32)] = &[
    (0x73bb_16bf, 0x3aef_a87f),
    (0x7c7a_f62c, 0x39bc_2bf2),
    (0x6cd1_52ec, 0x358b_51bd),
    (0x0b0f_a4ed, 0x33a4_b37f),
    (0x3ee4_5839, 0x3e0d_f47b),
    (0x1458_3c1a, 0x39d3_ff6c),
    (0x33b2_3cef, 0x39db_dde7),
    (0x33b3_a8ab, 0x3706_5502),
    (0x7a6a_983b, 0x366e_5683),
    (0x104f_6287, 0x34d8_a0b7),
    (0x2039_2df3, 0x345f_317f),
    (0x2928_70b3, 0x335f_90e4),
    (0x3885_351c, 0x3153_eaa1),
    (0x64b6_f157, 0x3e4a_27ff),
    (0x0bdb_d89e, 0x3b96_eebb),
    (0x60f1_f375, 0xbfee_256a),
    (0x2393_6ccd, 0xbfee_0f64),
    (0x25c1_1412, 0xbff5_055c),
    (0x1d24_db42, 0x3f8a_84fb),
    (0x3f88_2c00, 0x5fd0_0000),
    (0xbfa0_0000, 0x4963_4c90),
    (0x803f_c1ff, 0xc928_3990),
    (0x8000_0001, 0xcb1a_4001),
    (0xcf98_0000, 0x4b00_0001),
    (0x3547_ed87, 0x0cd1_8d80),
    (0x2386_ff07, 0x8a0e_4417),
    (0x5639_205c, 0x8c5a_1110),
    (0x35cd_0800, 0x3ff0_0000),
    (0x19cd_0800, 0x3ff0_0000),
    (0x293b_1960, 0xb42f_c98a),
    (0x3f7e_895a, 0xc668_582c),
    (0x3f7f_ff98, 0x4b56_fb4a),
    (0x3f80_0800, 0x4000_0000),
    (0x3f80_1000, 0x4040_0000),
    (0x4040_0000, 0x4170_0000),
    (0x4000_0000, 0xc315_0000),
    (0x4000_0000, 0xc316_0000),
    (0x3f00_0000, 0x4315_0000),
    (0x4110_0000, 0x3f00_0000),
    (0x4310_0000, 0x3f40_0000),
];

/// An operation's arguments: `third` empty for an operation on two.
struct Arguments {
    x: Vec<f32>,
    second: Vec<u32>,
    third: Vec<f32>,
}

impl Arguments {
    /// The `i`th arguments, the third 0 for an operation on two.
    fn get(&self, i: usize) -> (f32, u32, f32) {
        (self.x[i], self.second[i], self.third.get(i).copied().unwrap_or(0.0))
    }

    /// The first `n` arguments.
    fn truncate(&mut self, n: usize) {
        self.x.truncate(n);
        self.second.truncate(n);
        self.third.truncate(n);
    }

    /// The arguments `keep` says yes to.
    fn filter(&self, keep: impl Fn((f32, u32, f32)) -> bool) -> Arguments {
        let mut kept = Arguments { x: Vec::new(), second: Vec::new(), third: Vec::new() };
        for i in (0..self.x.len()).filter(|&i| keep(self.get(i))) {
            kept.x.push(self.x[i]);
            kept.second.push(self.second[i]);
            if let Some(&z) = self.third.get(i) {
                kept.third.push(z);
            }
        }
        kept
    }
}

/// Every pair (or triple) of the edges, then random ones (`draw_pairs`).
fn arguments(p: &Pair) -> Arguments {
    let n = std::env::var("XCD_MATH_RANDOM").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let seconds: Vec<u32> =
        if p.second_is_float { FLOATS.to_vec() } else { EXPONENTS.iter().map(|&e| e as u32).collect() };
    let thirds: &[u32] = if p.third { FLOATS } else { &[0] };
    let mut args = Arguments { x: Vec::new(), second: Vec::new(), third: Vec::new() };
    for &a in FLOATS {
        for &b in &seconds {
            for &c in thirds {
                args.x.push(f32::from_bits(a));
                args.second.push(b);
                if p.third {
                    args.third.push(f32::from_bits(c));
                }
            }
        }
    }
    if p.name == "pow" {
        for &(a, b) in HARD_POW {
            args.x.push(f32::from_bits(a));
            args.second.push(b);
        }
    }
    let (mut rx, mut rs, mut rz) = (vec![0f32; n], vec![0u32; n], vec![0f32; if p.third { n } else { 0 }]);
    draw_pairs(p, 0x5eed ^ p.name.len() as u64, &mut rx, &mut rs, &mut rz);
    args.x.extend(rx);
    args.second.extend(rs);
    args.third.extend(rz);
    args
}

/// The arguments on which `got` is not the reference's result, listed.
fn wrong(p: &Pair, args: &Arguments, got: &[f32]) -> Vec<String> {
    got.iter()
        .enumerate()
        .filter_map(|(i, &y)| {
            let (a, b, c) = args.get(i);
            let want = (p.reference)(a, b, c);
            let third = if p.third { format!(", {:#010x}", c.to_bits()) } else { String::new() };
            (!same(y, want)).then(|| {
                format!(
                    "{}({:#010x}, {b:#x}{third}) gave {:#010x}, not {:#010x}",
                    p.name,
                    a.to_bits(),
                    y.to_bits(),
                    want.to_bits()
                )
            })
        })
        .take(20)
        .collect()
}

#[test]
fn the_cpu_form_and_the_wgsl_alone_give_the_reference_s_bits() {
    for p in PAIRS {
        let mut args = arguments(p);
        args.truncate(args.x.len() / 4 * 4);
        let run = |kernel, lanes| {
            let mut y = vec![0f32; args.x.len()];
            run_cpu_pair(kernel, lanes, &args.x, &args.second, &args.third, &mut y);
            y
        };
        let y = run((p.block)().cpu, 1);
        let bad = wrong(p, &args, &y);
        assert!(bad.is_empty(), "CPU form, {} wrong:\n{}", bad.len(), bad.join("\n"));
        let y4 = run((p.block4)().cpu, 4);
        assert!(y.iter().zip(&y4).all(|(a, b)| a.to_bits() == b.to_bits()), "{}: vec4 differs from f32", p.name);
        let bad = wrong(p, &args, &run(p.wgsl, 1));
        assert!(bad.is_empty(), "the WGSL alone, {} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}

/// Runs a pair's block on `device` in tiles of 2^16 items; the results, or why a tile failed.
fn run(device: &DeviceHandle, p: &Pair, args: &Arguments) -> Result<Vec<f32>, EngineError> {
    const TILE: usize = 1 << 16;
    let id = device.load_blocking((p.block)().desc.clone())?;
    let mut out = Vec::with_capacity(args.x.len());
    for start in (0..args.x.len()).step_by(TILE) {
        let end = (start + TILE).min(args.x.len());
        let mut inputs = vec![
            Bytes::copy_from_slice(bytemuck::cast_slice(&args.x[start..end])),
            Bytes::copy_from_slice(bytemuck::cast_slice(&args.second[start..end])),
        ];
        if p.third {
            inputs.push(Bytes::copy_from_slice(bytemuck::cast_slice(&args.third[start..end])));
        }
        let job = TileJob {
            block: id,
            tile: Tile { start: 0, count: (end - start) as u32 },
            params: Vec::new(),
            inputs,
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
        let args = arguments(p);
        let got = run(&device, p, &args).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let bad = wrong(p, &args, &got);
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
        let normal = |v: f32| !v.is_subnormal();
        let args = arguments(p).filter(|(a, b, c)| {
            normal(a)
                && (!p.second_is_float || normal(f32::from_bits(b)))
                && normal(c)
                && normal((p.reference)(a, b, c))
        });
        let got = run(&device, p, &args).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let bad = wrong(p, &args, &got);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}
