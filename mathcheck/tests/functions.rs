//! Each function of the math library, bit for bit against CORE-MATH's correctly rounded result,
//! on the CPU form (its f64 fast path and the WGSL it falls back to), the library's WGSL alone
//! (transcribed: the GPU forms' code), the PTX interpreter and llvmpipe: the special values, the hard cases the
//! long-form proof (scripts/math-proof) found, and random arguments (`XCD_MATH_RANDOM` of them,
//! default 1,000,000, every bit pattern alike, so NaNs, infinities and subnormals too).
//!
//! llvmpipe flushes subnormals, so it is given the arguments whose argument and result are both
//! normal (or zero, infinite, NaN): every tile of those must run there, none declined because of
//! the library's own intermediate values; a tile with a subnormal argument or result must be
//! declined.

use std::sync::Arc;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, EngineError, TileJob};
use xcd_mathcheck::{FUNCTIONS, Function, run_cpu, same};
use xcd_wire::{BlockDesc, Tile};

/// Arguments each function is checked on beyond its random ones: IEEE's special values and the
/// edges of every range, and the arguments the proof found hardest to round (those its first
/// runs got wrong, each with its neighbours).
fn hard(f: &Function) -> Vec<f32> {
    let mut bits: Vec<u32> = vec![
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0001,
        0x7f80_0001,
        1,
        0x8000_0001,
        0x007f_ffff,
        0x807f_ffff,
        0x0080_0000,
        0x8080_0000,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x3f80_0000,
        0xbf80_0000,
    ];
    let cases: &[u32] = match f.name {
        "exp" => &[
            // Overflow, the subnormal range, underflow to 0, and rounding to 1.
            0x42b1_7217,
            0x42b1_7218,
            0xc2ae_ac4f,
            0xc2ae_ac50,
            0xc2cf_f1b4,
            0xc2cf_f1b5,
            0xc2ce_8ed0,
            0x3300_0000,
            0xb300_0000,
            0x3380_0000,
            0xb380_0000,
            // Where double-f32 alone rounds wrong (answered from the library's list).
            0x3380_0000,
            0x383a_3ef1,
            0x39c6_be5b,
            0x39e5_bb1d,
            0x3c60_8a0e,
            0x3caf_fe2e,
            0x4031_5b33,
            0x4034_d02b,
            0x4178_966e,
            0x4288_942b,
            0xbae0_e25c,
            0xbbf0_edf1,
            0xc13d_6631,
            0xc169_12cd,
        ],
        "exp2" => &[
            // Overflow, the subnormal range, underflow to 0 (-150 is a tie), and rounding to 1.
            0x42ff_ffff,
            0x4300_0000,
            0xc2fc_0000,
            0xc2fc_0001,
            0xc315_0000,
            0xc314_ffff,
            0xc316_0000,
            0x3300_0000,
            0xb300_0000,
            // Where double-f32 alone rounds wrong (answered from the library's list).
            0x33b8_aa3b,
            0x37e3_38eb,
            0x383e_cb1d,
            0x3a0b_4316,
            0x3b42_9d37,
            0x3b53_aa14,
            0x3c02_a9ad,
            0x3dc9_abe2,
            0xb338_aa3c,
            0xb4fd_ea14,
            0xb516_0a52,
            0xb63b_8cf0,
            0xb8d3_d026,
            0xbcaf_4d02,
            0xbcf3_a937,
        ],
        "log" => &[
            // Around 1, the bucket edges (the fraction rounds to 4 bits: 1 + 1/32, where m is
            // halved at 1.40625, where rounding carries into the exponent at 1.96875 and below
            // 1 at 0.984375), the subnormal range and the largest f32.
            0x3f84_0000,
            0x3fb4_0000,
            0x3ffc_0000,
            0x3f7c_0000,
            0x3f34_0000,
            0x0000_0002,
            0x0040_0000,
            0x0080_0001,
            0x7f7f_fffe,
            0xbf80_0000,
            // Where the three-part sum alone rounds wrong (answered from the library's list),
            // and two the first version got wrong.
            0x4117_8feb,
            0x3fa6_6c0b,
            0x65d8_90d3,
        ],
        "log2" => &[
            // Powers of two (exact results) from the smallest subnormal up, and the bucket
            // edges.
            0x0000_0001,
            0x0000_0100,
            0x0080_0000,
            0x3f00_0000,
            0x4000_0000,
            0x4b00_0000,
            0x7f00_0000,
            0x3f84_0000,
            0x3fb4_0000,
            0x3ffc_0000,
            0x3f7c_0000,
            // Where the proof found the double-f32 sum alone rounded wrong, before the
            // three-part rounding.
            0x2fd5_4996,
            0x37ff_c006,
            0x43ff_c006,
            0x4b55_4996,
        ],
        "sin" | "cos" | "tan" => &[
            // Where the series takes over from x and 1 (2^-12), pi/4 (where the reduction
            // begins), the multiples of pi/2 nearest an f32 up to 2 pi, and 2^24.
            0x3980_0000,
            0x3f49_0fdb,
            0x3fc9_0fdb,
            0x4049_0fdb,
            0x4096_cbe4,
            0x40c9_0fdb,
            0x4b80_0000,
            // The hardest reductions: the f32 in each binade whose x 2/pi is nearest an
            // integer (within 2^-29.9 to 2^-27.2), found over every binade by
            // `scripts/mathlib-tables hard-reductions`; 0x6f79be45 is Muller's worst case.
            0x6f79_be45,
            0x50a3_e87f,
            0x6ff9_be45,
            0x5123_e87f,
            0x437c_e5f1,
            0x7079_be45,
            0x6a19_76f1,
            0x53b1_46a6,
            0x6589_8498,
            0x51a3_e87f,
            0x43fc_e5f1,
            0x7758_4625,
        ],
        // Where x stands for asin(x) (2^-12), where 1 - x^2 stops being exact (2^-9) and
        // rounds to 1 (2^-32), 1/2, and the last f32 below 1 (the smallest sqrt(1 - x^2)).
        "asin" | "acos" => &[
            0x3980_0000,
            0x397f_ffff,
            0x3b00_0000,
            0x3aff_ffff,
            0x2f80_0000,
            0x2f7f_ffff,
            0x3f00_0000,
            0x3f7f_ffff,
            0x3f7f_fffe,
            0x3f80_0001,
        ],
        // Where x stands for atan(x) (2^-12), the series takes over from the table (2^-5),
        // the table's sixteenths change (at odd thirty-seconds), 1 (pi/4, where 1/x takes
        // over), and arguments whose 1/x is tiny.
        "atan" => &[
            0x3980_0000,
            0x397f_ffff,
            0x3d00_0000,
            0x3cff_ffff,
            0x3d40_0000,
            0x3dc0_0000,
            0x3ef8_0000,
            0x3f78_0000,
            0x3f7f_ffff,
            0x3f80_0001,
            0x4b80_0000,
            0x5f80_0000,
        ],
        // Where x stands for sinh(x) and 1 for cosh(x) (2^-12), the series gives way to
        // e^x (1/2), and overflow (89.416); then where double-f32 alone rounds wrong
        // (answered from the library's lists).
        "sinh" | "cosh" => {
            &[0x3980_0000, 0x3f00_0000, 0x3f80_0000, 0x42b2_d4fc, 0x42b2_d4fd, 0x4288_942b, 0x3d60_9528, 0x4142_a7c2]
        }
        // Where x stands for tanh(x) (2^-13), the series gives way to e^2x (1/2), and the
        // result rounds to 1 (9.011); then the library's list.
        "tanh" => &[0x3900_0000, 0x3f00_0000, 0x4110_2cb4, 0x3ac3_7de2, 0x3afc_9f57, 0x3bc8_b605, 0x40a6_ef82],
        // Where x stands for asinh(x) (2^-12), and where log(2x) takes over (2^28); then the
        // library's list.
        // 2^20 to 2^23, where log1p's r is a tiny power of 2 (its llvmpipe run once found a
        // product there subnormal, now left out).
        "asinh" => &[
            0x3980_0000,
            0x4d80_0000,
            0x3a53_52c8,
            0x3c09_d03d,
            0x3fe1_a91f,
            0x4041_409b,
            0x4bdd_65a5,
            0x4980_0000,
            0x4a00_0000,
            0x4a80_0000,
            0x4b00_0000,
        ],
        // 1 (acosh is 0), where log(2x) takes over (2^28), the library's list, and 2^20 to
        // 2^23 as for asinh.
        "acosh" => {
            &[0x3f80_0000, 0x3f80_0001, 0x4d80_0000, 0x4bdd_65a5, 0x4980_0000, 0x4a00_0000, 0x4a80_0000, 0x4b00_0000]
        }
        // Where x stands for atanh(x) (2^-12), the last f32 below 1 (the largest result), and
        // the library's list.
        "atanh" => &[0x3980_0000, 0x3f7f_ffff, 0x39b8_9ba2, 0x3b06_f2f9, 0x3cf7_5c10, 0x3dcd_9576],
        // The arguments whose results lie nearest a rounding midpoint (2.6e-9 of a unit for
        // the first; found by exact integer arithmetic over every significand and exponent
        // parity), powers of 4 (exact results), and the least subnormal.
        "inverseSqrt" => &[
            0x403a_18e3,
            0x4009_f038,
            0x407f_fffe,
            0x3fba_2a39,
            0x3fd2_208f,
            0x3fed_3230,
            0x3f8a_5c86,
            0x3fda_e942,
            0x4080_0000,
            0x3e80_0000,
            0x0040_0000,
            0x0000_0004,
            0x7f00_0000,
        ],
        // Nearest a midpoint: every significand, against 200 bits of the constant.
        "degrees" => {
            &[0x3fb4_c201, 0x3fb5_fea2, 0x3fb3_8560, 0x3fb7_3b43, 0x3fb2_48bf, 0x3fb8_77e4, 0x7c8e_fa35, 0x7c8f_0000]
        }
        // The same, and the edge below which results are subnormal (and, for degrees, above
        // which they overflow).
        "radians" => &[
            0x3fd8_5141,
            0x3fd7_35cb,
            0x3fd9_6cb7,
            0x3fd6_1a55,
            0x3fda_882d,
            0x3fd4_fedf,
            0x0365_2ee1,
            0x0365_2ee0,
            0x0380_0000,
        ],
        _ => &[],
    };
    for &c in cases {
        bits.extend([c.wrapping_sub(1), c, c.wrapping_add(1)]);
    }
    bits.into_iter().map(f32::from_bits).collect()
}

/// `n` arguments from every bit pattern alike, the same on every run.
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.max(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f32::from_bits((s >> 16) as u32)
        })
        .collect()
}

fn arguments(f: &Function) -> Vec<f32> {
    let n = std::env::var("XCD_MATH_RANDOM").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let mut args = hard(f);
    args.extend(random(n, 0x5eed ^ f.name.len() as u64));
    args
}

/// The arguments on which `got` is not the correctly rounded result, listed.
fn wrong(f: &Function, args: &[f32], got: &[f32]) -> Vec<String> {
    args.iter()
        .zip(got)
        .filter(|&(&x, &y)| !same(y, (f.reference)(x)))
        .take(20)
        .map(|(&x, &y)| {
            format!(
                "{}({x:e} = {:#010x}) gave {:#010x}, not {:#010x}",
                f.name,
                x.to_bits(),
                y.to_bits(),
                (f.reference)(x).to_bits()
            )
        })
        .collect()
}

#[test]
fn the_cpu_form_rounds_every_argument_correctly_on_scalars_and_vectors() {
    for f in FUNCTIONS {
        let mut args = arguments(f);
        args.truncate(args.len() / 4 * 4);
        let mut y = vec![0f32; args.len()];
        run_cpu((f.block)().cpu, 1, &args, &mut y);
        let bad = wrong(f, &args, &y);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
        let mut y4 = vec![0f32; args.len()];
        run_cpu((f.block4)().cpu, 4, &args, &mut y4);
        assert!(y.iter().zip(&y4).all(|(a, b)| a.to_bits() == b.to_bits()), "{}: vec4 differs from f32", f.name);
    }
}

#[test]
fn the_library_s_wgsl_alone_rounds_every_argument_correctly() {
    for f in FUNCTIONS {
        let args = arguments(f);
        let mut y = vec![0f32; args.len()];
        run_cpu(f.wgsl, 1, &args, &mut y);
        let bad = wrong(f, &args, &y);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}

/// The fast path's `None` (an f64 value too near an f32 midpoint) is rare, so random arguments
/// barely reach the fallback: here 2^20 arguments in a row from where each function's results
/// are ordinary normal numbers give some hundreds of them, found afresh on every run.
#[test]
fn the_cpu_form_falls_back_to_the_wgsl_where_the_fast_path_cannot_say() {
    for f in FUNCTIONS {
        let start = if f.name.starts_with("log") || f.name == "acosh" { 1.5f32 } else { 0.75f32 }.to_bits();
        let scan: Vec<f32> = (start..start + (1 << 20)).map(f32::from_bits).collect();
        let undecided: Vec<f32> = scan.iter().copied().filter(|&x| (f.fast)(x).is_none()).collect();
        assert!(undecided.len() >= 16, "{}: only {} arguments left to the fallback", f.name, undecided.len());
        let mut y = vec![0f32; undecided.len()];
        run_cpu((f.block)().cpu, 1, &undecided, &mut y);
        let bad = wrong(f, &undecided, &y);
        assert!(bad.is_empty(), "{} wrong where the fallback decides:\n{}", bad.len(), bad.join("\n"));
        let decided: Vec<String> = scan
            .iter()
            .filter_map(|&x| Some((x, (f.fast)(x)?)))
            .filter(|&(x, y)| !same(y, (f.reference)(x)))
            .take(20)
            .map(|(x, y)| format!("{}({:#010x}) = {:#010x}", f.name, x.to_bits(), y.to_bits()))
            .collect();
        assert!(decided.is_empty(), "the fast path is wrong:\n{}", decided.join("\n"));
    }
}

/// Runs `block` on `device` over `args` in tiles of `tile` items; the results, or why a tile
/// failed.
fn run(device: &DeviceHandle, block: &Arc<BlockDesc>, args: &[f32], tile: usize) -> Result<Vec<f32>, EngineError> {
    let id = device.load_blocking(block.clone())?;
    let mut out = Vec::with_capacity(args.len());
    for chunk in args.chunks(tile) {
        let job = TileJob {
            block: id,
            tile: Tile { start: 0, count: chunk.len() as u32 },
            params: Vec::new(),
            inputs: vec![Bytes::copy_from_slice(bytemuck::cast_slice(chunk))],
            whole: Vec::new(),
        };
        let done = device.run_blocking(job)?;
        out.extend(done.outputs[0].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
    }
    Ok(out)
}

#[test]
fn the_ptx_interpreter_gives_the_correctly_rounded_bits() {
    let device = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    if let Some(ptxas) = xcd_ptxsim::ptxas::required() {
        for f in FUNCTIONS {
            let ptx = (f.block)().desc.forms.ptx.clone().expect("xcd-build makes the PTX form");
            xcd_ptxsim::ptxas::check(&ptxas, &ptx, f.name).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    for f in FUNCTIONS {
        let args = arguments(f);
        let got = run(&device, &(f.block)().desc, &args, 1 << 16).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        let bad = wrong(f, &args, &got);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    }
}

#[test]
fn llvmpipe_runs_every_tile_whose_arguments_and_results_are_normal() {
    let Some(device) = xcd_engine::discover().devices.into_iter().find(|d| d.info().id.starts_with("vulkan:")) else {
        eprintln!("skipped: no Vulkan device");
        return;
    };
    for f in FUNCTIONS {
        let args: Vec<f32> =
            arguments(f).into_iter().filter(|&x| !x.is_subnormal() && !(f.reference)(x).is_subnormal()).collect();
        let got = run(&device, &(f.block)().desc, &args, 1 << 16).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        let bad = wrong(f, &args, &got);
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
        if device.info().cpu {
            // A tile with a subnormal argument, and one with a subnormal result, if the
            // function has one: each declined.
            let argument = hard(f).into_iter().find(|&x| x.is_subnormal() && !(f.reference)(x).is_nan());
            let result = hard(f).into_iter().find(|&x| (f.reference)(x).is_subnormal());
            for x in [argument, result].into_iter().flatten() {
                match run(&device, &(f.block)().desc, &[1.0, x], 2) {
                    Err(EngineError::Inexact { reason, .. }) => assert!(reason.contains("subnormal"), "{reason}"),
                    other => panic!("{}({x:e}) meets a subnormal: expected the tile declined, got {other:?}", f.name),
                }
            }
        }
    }
}
