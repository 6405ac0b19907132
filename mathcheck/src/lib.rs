//! The math library's proof and tests (docs/kernels.md, "Math functions"): each function the
//! library implements, as a block made by xcd-build (so its CPU form is the one every kernel
//! gets, written from the same IR as the GPU forms), beside its correctly rounded reference
//! from CORE-MATH.
//!
//! `math-proof` (scripts/math-proof) runs each one-argument function on all 2^32 f32; the tests
//! run the special values, the hard cases that run found and random arguments on the CPU form,
//! the PTX interpreter and llvmpipe. This crate owns that checking only; the library itself is
//! `xcd-forms`'s.
#![forbid(unsafe_code)]

use xcd_runtime::wire::Tile;
use xcd_runtime::{CpuArg, CpuKernel, CpuTile};

xcd_runtime::include_blocks!();

/// Each function's `NAME_1` block with the library's WGSL alone, never the f64 fast path of
/// `xcd-cpumath`: the GPU forms' code, transcribed (`Kernel::rust_library_as_wgsl`).
pub mod as_wgsl {
    include!(concat!(env!("OUT_DIR"), "/library_as_wgsl.rs"));
}

/// One function of the library on one f32.
#[derive(Debug, Clone, Copy)]
pub struct Function {
    /// Its WGSL name.
    pub name: &'static str,
    /// The block that applies it to each f32 of an array.
    pub block: fn() -> xcd_runtime::Block,
    /// The block that applies it to each vec4<f32>, componentwise.
    pub block4: fn() -> xcd_runtime::Block,
    /// The block that calls it [`RATE_CALLS`] times per item (`math-proof --rate`).
    pub rate: fn() -> xcd_runtime::Block,
    /// `block`'s CPU form with the library's WGSL alone (what the GPU forms compute).
    pub wgsl: CpuKernel,
    /// The CPU form's f64 fast path (`xcd-cpumath`), `None` where the WGSL must decide.
    pub fast: fn(f32) -> Option<f32>,
    /// The correctly rounded result (CORE-MATH).
    pub reference: fn(f32) -> f32,
}

/// Every one-argument function of the library.
pub const FUNCTIONS: &[Function] = &[
    Function {
        name: "exp",
        block: exp_1::block,
        block4: exp_4::block,
        rate: rate_exp::block,
        wgsl: as_wgsl::exp_1::cpu,
        fast: xcd_runtime::cpumath::exp,
        reference: core_math::expf,
    },
    Function {
        name: "exp2",
        block: exp2_1::block,
        block4: exp2_4::block,
        rate: rate_exp2::block,
        wgsl: as_wgsl::exp2_1::cpu,
        fast: xcd_runtime::cpumath::exp2,
        reference: core_math::exp2f,
    },
    Function {
        name: "log",
        block: log_1::block,
        block4: log_4::block,
        rate: rate_log::block,
        wgsl: as_wgsl::log_1::cpu,
        fast: xcd_runtime::cpumath::log,
        reference: core_math::logf,
    },
    Function {
        name: "log2",
        block: log2_1::block,
        block4: log2_4::block,
        rate: rate_log2::block,
        wgsl: as_wgsl::log2_1::cpu,
        fast: xcd_runtime::cpumath::log2,
        reference: core_math::log2f,
    },
    Function {
        name: "sin",
        block: sin_1::block,
        block4: sin_4::block,
        rate: rate_sin::block,
        wgsl: as_wgsl::sin_1::cpu,
        fast: xcd_runtime::cpumath::sin,
        reference: core_math::sinf,
    },
    Function {
        name: "cos",
        block: cos_1::block,
        block4: cos_4::block,
        rate: rate_cos::block,
        wgsl: as_wgsl::cos_1::cpu,
        fast: xcd_runtime::cpumath::cos,
        reference: core_math::cosf,
    },
    Function {
        name: "tan",
        block: tan_1::block,
        block4: tan_4::block,
        rate: rate_tan::block,
        wgsl: as_wgsl::tan_1::cpu,
        fast: xcd_runtime::cpumath::tan,
        reference: core_math::tanf,
    },
    Function {
        name: "asin",
        block: asin_1::block,
        block4: asin_4::block,
        rate: rate_asin::block,
        wgsl: as_wgsl::asin_1::cpu,
        fast: xcd_runtime::cpumath::asin,
        reference: core_math::asinf,
    },
    Function {
        name: "acos",
        block: acos_1::block,
        block4: acos_4::block,
        rate: rate_acos::block,
        wgsl: as_wgsl::acos_1::cpu,
        fast: xcd_runtime::cpumath::acos,
        reference: core_math::acosf,
    },
    Function {
        name: "atan",
        block: atan_1::block,
        block4: atan_4::block,
        rate: rate_atan::block,
        wgsl: as_wgsl::atan_1::cpu,
        fast: xcd_runtime::cpumath::atan,
        reference: core_math::atanf,
    },
    Function {
        name: "sinh",
        block: sinh_1::block,
        block4: sinh_4::block,
        rate: rate_sinh::block,
        wgsl: as_wgsl::sinh_1::cpu,
        fast: xcd_runtime::cpumath::sinh,
        reference: core_math::sinhf,
    },
    Function {
        name: "cosh",
        block: cosh_1::block,
        block4: cosh_4::block,
        rate: rate_cosh::block,
        wgsl: as_wgsl::cosh_1::cpu,
        fast: xcd_runtime::cpumath::cosh,
        reference: core_math::coshf,
    },
    Function {
        name: "tanh",
        block: tanh_1::block,
        block4: tanh_4::block,
        rate: rate_tanh::block,
        wgsl: as_wgsl::tanh_1::cpu,
        fast: xcd_runtime::cpumath::tanh,
        reference: core_math::tanhf,
    },
    Function {
        name: "asinh",
        block: asinh_1::block,
        block4: asinh_4::block,
        rate: rate_asinh::block,
        wgsl: as_wgsl::asinh_1::cpu,
        fast: xcd_runtime::cpumath::asinh,
        reference: core_math::asinhf,
    },
    Function {
        name: "acosh",
        block: acosh_1::block,
        block4: acosh_4::block,
        rate: rate_acosh::block,
        wgsl: as_wgsl::acosh_1::cpu,
        fast: xcd_runtime::cpumath::acosh,
        reference: core_math::acoshf,
    },
    Function {
        name: "atanh",
        block: atanh_1::block,
        block4: atanh_4::block,
        rate: rate_atanh::block,
        wgsl: as_wgsl::atanh_1::cpu,
        fast: xcd_runtime::cpumath::atanh,
        reference: core_math::atanhf,
    },
    Function {
        name: "inverseSqrt",
        block: inverse_sqrt_1::block,
        block4: inverse_sqrt_4::block,
        rate: rate_inverse_sqrt::block,
        wgsl: as_wgsl::inverse_sqrt_1::cpu,
        fast: xcd_runtime::cpumath::inverse_sqrt,
        reference: core_math::rsqrtf,
    },
    Function {
        name: "degrees",
        block: degrees_1::block,
        block4: degrees_4::block,
        rate: rate_degrees::block,
        wgsl: as_wgsl::degrees_1::cpu,
        fast: xcd_runtime::cpumath::degrees,
        reference: reference::degrees,
    },
    Function {
        name: "radians",
        block: radians_1::block,
        block4: radians_4::block,
        rate: rate_radians::block,
        wgsl: as_wgsl::radians_1::cpu,
        fast: xcd_runtime::cpumath::radians,
        reference: reference::radians,
    },
    Function {
        name: "quantizeToF16",
        block: quantize_to_f16_1::block,
        block4: quantize_to_f16_4::block,
        rate: rate_quantize_to_f16::block,
        wgsl: as_wgsl::quantize_to_f16_1::cpu,
        // Integer code throughout: the CPU form has no fast path to try first.
        fast: |_| None,
        reference: reference::quantize_to_f16,
    },
];

/// Correctly rounded references for what CORE-MATH has not: written apart from the library's
/// code (double-f64 products, not its integer ones; the `half` crate's f16 conversions), so
/// that the two check each other.
pub mod reference {
    /// x 180/pi, correctly rounded.
    pub fn degrees(x: f32) -> f32 {
        // 180/pi as the f64 nearest it plus the f64 nearest the rest (`scripts/mathlib-tables angle`).
        times(x, f64::from_bits(0x404c_a5dc_1a63_c1f8), f64::from_bits(0xbce1_e7ab_4564_05f9))
    }

    /// x pi/180, correctly rounded.
    pub fn radians(x: f32) -> f32 {
        times(x, f64::from_bits(0x3f91_df46_a252_9d39), f64::from_bits(0x3c15_c1d8_becd_d291))
    }

    /// What the `split_1` block stores for `x`: `frexp`'s fields (the exponent as an f32), then
    /// `modf`'s, as musl's `frexpf` and `modff` give them (`frexp` of zero, an infinity or NaN is
    /// the argument and 0, as C says and musl leaves open for the infinities).
    pub fn split(x: f32) -> [f32; 4] {
        let (fract, exp) = if x.is_nan() || x.is_infinite() || x == 0.0 { (x, 0) } else { libm::frexpf(x) };
        let (m_fract, m_whole) = libm::modff(x);
        [fract, exp as f32, m_fract, m_whole]
    }

    /// x rounded to binary16 (to nearest, ties to even, subnormal halves kept) and back: the
    /// `half` crate's conversions.
    pub fn quantize_to_f16(x: f32) -> f32 {
        half::f16::from_f32(x).to_f32()
    }

    /// x (hi + lo) rounded once to f32: the product as p + q to about 2^-104 of it (p exact
    /// f64 rounding, q the rest by a fused multiply-add), then p's rounding, which can differ
    /// from the sum's only where p is itself a midpoint of two f32 (every such midpoint is an
    /// f64, and q is below half a unit of p's last place): there q says which way.
    fn times(x: f32, hi: f64, lo: f64) -> f32 {
        if !x.is_finite() || x == 0.0 {
            return if x.is_nan() { f32::NAN } else { x };
        }
        let x = f64::from(x);
        let p = x * hi;
        let q = x.mul_add(hi, -p) + x * lo;
        let r = p as f32;
        let (below, above) = if f64::from(r) <= p { (r, r.next_up()) } else { (r.next_down(), r) };
        if above.is_finite() && p == (f64::from(below) + f64::from(above)) / 2.0 && q != 0.0 {
            return if q > 0.0 { above } else { below };
        }
        r
    }
}

/// One operation of the library on two or three arguments: the second an i32 (`ldexp`) or an
/// f32 (`%`, `atan2`, `fma`, `pow`), carried as its bits, the third (`fma`'s) an f32.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    /// Its name in WGSL (`%` as `remainder`).
    pub name: &'static str,
    /// The block that applies it to each f32 and its other arguments.
    pub block: fn() -> xcd_runtime::Block,
    /// The same on vec4<f32> and vectors of the other arguments' types, componentwise.
    pub block4: fn() -> xcd_runtime::Block,
    /// `block`'s CPU form with the library's WGSL alone (what the GPU forms compute).
    pub wgsl: CpuKernel,
    /// The correctly rounded result, from code apart from the library's: musl's scalbnf and
    /// fmaf (the `libm` crate) for `ldexp` and `fma`, the platform's fmodf (Rust's `%`) for
    /// the remainder, CORE-MATH's for `atan2` and `pow`. The third argument is 0 for an
    /// operation on two.
    pub reference: fn(f32, u32, f32) -> f32,
    /// Whether the second argument is an f32 (else an i32).
    pub second_is_float: bool,
    /// Whether it takes a third argument.
    pub third: bool,
}

/// Every operation of the library on two or three arguments.
pub const PAIRS: &[Pair] = &[
    Pair {
        name: "ldexp",
        block: ldexp_1::block,
        block4: ldexp_4::block,
        wgsl: as_wgsl::ldexp_1::cpu,
        reference: |x, n, _| libm::ldexpf(x, n as i32),
        second_is_float: false,
        third: false,
    },
    Pair {
        name: "remainder",
        block: remainder_1::block,
        block4: remainder_4::block,
        wgsl: as_wgsl::remainder_1::cpu,
        reference: |x, y, _| x % f32::from_bits(y),
        second_is_float: true,
        third: false,
    },
    Pair {
        name: "atan2",
        block: atan2_1::block,
        block4: atan2_4::block,
        wgsl: as_wgsl::atan2_1::cpu,
        reference: |y, x, _| core_math::atan2f(y, f32::from_bits(x)),
        second_is_float: true,
        third: false,
    },
    Pair {
        name: "fma",
        block: fma_1::block,
        block4: fma_4::block,
        wgsl: as_wgsl::fma_1::cpu,
        reference: |a, b, c| libm::fmaf(a, f32::from_bits(b), c),
        second_is_float: true,
        third: true,
    },
    Pair {
        name: "pow",
        block: pow_1::block,
        block4: pow_4::block,
        wgsl: as_wgsl::pow_1::cpu,
        reference: |x, y, _| core_math::powf(x, f32::from_bits(y)),
        second_is_float: true,
        third: false,
    },
];

/// A xorshift generator from `seed` (never 0): 32 random bits a call, the same every run.
pub fn random_bits(seed: u64) -> impl FnMut() -> u32 {
    let mut s = seed.max(1);
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 16) as u32
    }
}

/// Random arguments for `pow`: one pair in 8 any two f32; one in 8 an exact or midpoint case
/// or near one (x = K^(2^f) 2^a, y = n/2^f); the rest any x with a y that puts x^y between
/// 2^-155 and 2^133 (where it is neither 0 nor infinite), every third of them a negative x with
/// an integer y.
fn draw_powers(seed: u64, x: &mut [f32], y: &mut [u32]) {
    let mut next = random_bits(seed);
    for (i, (x, y)) in x.iter_mut().zip(y.iter_mut()).enumerate() {
        let (a, b) = (next(), next());
        let unit = f64::from(b) / 4_294_967_296.0;
        (*x, *y) = match i % 8 {
            0 => (f32::from_bits(a), b),
            1 => {
                let f = a % 4;
                let k = 3 + 2 * (next() % [2047, 31, 5, 2][f as usize]);
                let base = (k as f32).powi(1 << f);
                let shift = ((next() % 16) as i32 - 8) << f;
                let n = 1 + b % if next().is_multiple_of(2) { 15 } else { 40 };
                let wobble = if next().is_multiple_of(4) { next() % 3 } else { 1 } as i32 - 1;
                let power = f32::from_bits((n as f32 / (1 << f) as f32).to_bits().wrapping_add_signed(wobble));
                (base * 2f32.powi(shift), power.to_bits())
            }
            _ => {
                let v = f32::from_bits(a & 0x7fff_ffff);
                let v = if v.is_finite() && v != 1.0 && v != 0.0 { v } else { 1.5 };
                let t = -155.0 + 288.0 * unit;
                let power = t / f64::from(v).log2();
                if i % 8 >= 6 && power.abs() < 16_777_216.0 {
                    (-v, (power.round() as f32).to_bits())
                } else {
                    (v, (power as f32).to_bits())
                }
            }
        };
    }
}

/// `bits` with its exponent field set to `field`, clamped to the finite ones.
fn with_exponent(bits: u32, field: i32) -> u32 {
    (bits & 0x807f_ffff) | ((field.clamp(0, 254) as u32) << 23)
}

/// Random arguments for `p`, the same for the same `seed`: for `ldexp` any f32 with an exponent
/// mostly in [-330, 330] (one in 16 any i32); for `%` any two f32 (their exponents mostly far
/// apart), every second pair with exponents within 24 of each other, where the remainder keeps
/// bits; for `fma` any three f32 in one case of four, and otherwise products of moderate size
/// with `c` near them (within 26 binades, or the product's own rounding moved by a few units,
/// where most bits cancel). Fills `x`, `second` and `third` (`third` empty for an operation on
/// two, else as long as `x`).
pub fn draw_pairs(p: &Pair, seed: u64, x: &mut [f32], second: &mut [u32], third: &mut [f32]) {
    if p.name == "pow" {
        return draw_powers(seed, x, second);
    }
    let mut next = random_bits(seed);
    for (i, (x, second)) in x.iter_mut().zip(second.iter_mut()).enumerate() {
        let (a, b) = (next(), next());
        *x = f32::from_bits(a);
        *second = match (p.second_is_float, i % 2) {
            (false, _) if b.is_multiple_of(16) => next(),
            (false, _) => ((b % 661) as i32 - 330) as u32,
            (true, 0) => b,
            (true, _) => with_exponent(b, ((a >> 23) & 0xff) as i32 + (b % 49) as i32 - 24),
        };
        if let Some(z) = third.get_mut(i) {
            *z = f32::from_bits(next());
            if i % 4 != 0 {
                let field = |v: u32| ((v >> 23) & 0xff) as i32;
                let (a, b) = (with_exponent(a, 64 + field(a) / 2), with_exponent(b, 64 + field(b) / 2));
                (*x, *second) = (f32::from_bits(a), b);
                let product = *x * f32::from_bits(b);
                *z = f32::from_bits(match i % 4 {
                    1 => with_exponent(next(), field(product.to_bits()) + (next() % 53) as i32 - 26),
                    _ => (-product).to_bits() ^ (next() & 7),
                });
            }
        }
    }
}

/// Runs a pair's block's CPU form on `x`, `n` and `z` (empty for an operation on two) as one
/// tile, into `y` (as long as `x`): items of `lanes` values each.
pub fn run_cpu_pair(kernel: CpuKernel, lanes: usize, x: &[f32], n: &[u32], z: &[f32], y: &mut [f32]) {
    let tile = Tile { start: 0, count: (x.len() / lanes) as u32 };
    let mut args = vec![CpuArg::Read(bytemuck::cast_slice(x)), CpuArg::Read(bytemuck::cast_slice(n))];
    if !z.is_empty() {
        args.push(CpuArg::Read(bytemuck::cast_slice(z)));
    }
    args.push(CpuArg::Write(bytemuck::cast_slice_mut(y)));
    let mut t = CpuTile::new(tile, &[], args);
    kernel(&mut t);
}

/// The calls of its function each item of a `rate` block makes.
pub const RATE_CALLS: u64 = 64;

/// The `rate` blocks' loop with no function in it: the baseline of `math-proof --rate`.
pub fn rate_baseline() -> xcd_runtime::Block {
    rate_unchanged::block()
}

/// The function called `name`.
pub fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// Runs a block's CPU form on `x` as one tile, into `y` (as long as `x`): items of `lanes` f32
/// each (1 for `block`, 4 for `block4`).
pub fn run_cpu(kernel: CpuKernel, lanes: usize, x: &[f32], y: &mut [f32]) {
    let tile = Tile { start: 0, count: (x.len() / lanes) as u32 };
    let mut t = CpuTile::new(
        tile,
        &[],
        vec![CpuArg::Read(bytemuck::cast_slice(x)), CpuArg::Write(bytemuck::cast_slice_mut(y))],
    );
    kernel(&mut t);
}

/// Runs `block`'s CPU form on one tile of `items` items, with `inputs` (bytes, in binding order)
/// and output arrays of `out_sizes` bytes per item; the outputs.
pub fn run_block_cpu(block: &xcd_runtime::Block, items: usize, inputs: &[&[u8]], out_sizes: &[usize]) -> Vec<Vec<u8>> {
    let mut outs: Vec<Vec<u8>> = out_sizes.iter().map(|&s| vec![0u8; s * items]).collect();
    let mut args: Vec<CpuArg<'_>> = inputs.iter().map(|&i| CpuArg::Read(i)).collect();
    args.extend(outs.iter_mut().map(|o| CpuArg::Write(o.as_mut_slice())));
    let mut tile = CpuTile::new(Tile { start: 0, count: items as u32 }, &[], args);
    (block.cpu)(&mut tile);
    outs
}

/// Runs `block` on `device` as one tile of `items` items with `inputs`; the outputs, or why
/// the device did not run it.
pub fn run_block_on(
    device: &xcd_engine::DeviceHandle,
    block: &xcd_runtime::Block,
    items: usize,
    inputs: &[&[u8]],
) -> Result<Vec<Vec<u8>>, xcd_engine::EngineError> {
    let id = device.load_blocking(block.desc.clone())?;
    let job = xcd_engine::TileJob {
        block: id,
        tile: Tile { start: 0, count: items as u32 },
        params: Vec::new(),
        inputs: inputs.iter().map(|&i| bytes::Bytes::copy_from_slice(i)).collect(),
        whole: Vec::new(),
    };
    Ok(device.run_blocking(job)?.outputs.into_iter().map(|b| b.to_vec()).collect())
}

/// Whether `got` is the reference's `want`: the same bits, or both NaN (every form stores the
/// one canonical NaN; CORE-MATH may return another).
pub fn same(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

/// How far `got` is from the exact value that `want` is the correct rounding of, in units in
/// the last place of `want`, at least: the distance between the two on the f32 grid (0 where
/// they agree, 1 for a neighbour).
pub fn ulps(got: f32, want: f32) -> u64 {
    if same(got, want) {
        return 0;
    }
    if got.is_nan() || want.is_nan() {
        return u64::MAX;
    }
    let order = |v: f32| {
        let b = v.to_bits() as i64;
        if b & 0x8000_0000 != 0 { -(b & 0x7fff_ffff) } else { b }
    };
    order(got).abs_diff(order(want))
}
