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
        wgsl: as_wgsl::exp_1::cpu,
        fast: xcd_runtime::cpumath::exp,
        reference: core_math::expf,
    },
    Function {
        name: "exp2",
        block: exp2_1::block,
        block4: exp2_4::block,
        wgsl: as_wgsl::exp2_1::cpu,
        fast: xcd_runtime::cpumath::exp2,
        reference: core_math::exp2f,
    },
    Function {
        name: "log",
        block: log_1::block,
        block4: log_4::block,
        wgsl: as_wgsl::log_1::cpu,
        fast: xcd_runtime::cpumath::log,
        reference: core_math::logf,
    },
    Function {
        name: "log2",
        block: log2_1::block,
        block4: log2_4::block,
        wgsl: as_wgsl::log2_1::cpu,
        fast: xcd_runtime::cpumath::log2,
        reference: core_math::log2f,
    },
    Function {
        name: "sin",
        block: sin_1::block,
        block4: sin_4::block,
        wgsl: as_wgsl::sin_1::cpu,
        fast: xcd_runtime::cpumath::sin,
        reference: core_math::sinf,
    },
    Function {
        name: "cos",
        block: cos_1::block,
        block4: cos_4::block,
        wgsl: as_wgsl::cos_1::cpu,
        fast: xcd_runtime::cpumath::cos,
        reference: core_math::cosf,
    },
];

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
