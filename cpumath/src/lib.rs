//! xcd-cpumath: the CPU form's fast path for the math library's functions (docs/kernels.md,
//! "Math functions"). Each function evaluates an f32 function in f64 and returns its correctly
//! rounded f32, or `None` in the rare case (about one argument in a million) where the f64
//! value lies too near the middle between two f32 to say which way the exact value rounds.
//!
//! The generated CPU form calls these and falls back, on `None`, to its transcription of the
//! library's WGSL (xcd-forms' `mathlib`), which every GPU form runs and which is correctly
//! rounded on every argument. As a correctly rounded result is unique, the two give the same
//! bits; `scripts/math-proof` checks the pair, as the CPU form runs it, on all 2^32 arguments.
//! The WGSL works in double-f32 because a GPU form has no fast f64; a CPU core has, and this
//! is roughly thirty times faster (docs/performance.md).
//!
//! How each stays honest: the f64 value's relative error is below 2^-39 (each function's doc
//! says why: short polynomials, as speed is the point), so it is within 2^14 units of the
//! f64's last place of the exact value; where it lies within [`MARGIN`] units of an f32
//! midpoint the function says `None`, so a `Some` is the exact value's rounding. That is one
//! argument in 4,096 at most, where the fallback costs some 150 ns: 0.04 ns on average.
//! Results that would be subnormal f32 (rounded at a coarser place) are left to the fallback.
//!
//! This crate owns only these evaluations: no kernel, no IR, no other form. Plain Rust, no
//! dependencies, so it builds wherever the runtime does.
#![forbid(unsafe_code)]
#![no_std]

mod exp;
mod log;
mod tables;

pub use exp::{exp, exp2};
pub use log::{log, log2};

/// How near, in units in the last place of the f64 value, an f32 midpoint may be before the
/// rounding is left to the fallback: 4 times the error bound.
const MARGIN: u64 = 1 << 16;

/// 1.5 * 2^52: adding it rounds an f64 below 2^51 to an integer, ties to even, held in the low
/// 32 bits of the sum (no call to `rint`, which a CPU without SSE4.1 makes a library call).
const SHIFT: f64 = 6755399441055744.0;

/// `y` rounded to f32, if `y` (within 8 f64 units of the exact value) is far enough from an
/// f32 midpoint for that to be the exact value's rounding too. `y` must round to a normal f32
/// or to zero or infinity.
#[inline]
fn rounded(y: f64) -> Option<f32> {
    // The 29 bits f64 has beyond f32's 23: 2^28 is the midpoint. (Near an f32 itself, at 0 or
    // 2^29, both sides round to that f32, even across a binade.)
    let below = y.to_bits() & 0x1fff_ffff;
    if below.abs_diff(1 << 28) <= MARGIN { None } else { Some(y as f32) }
}

/// 2^e as f64, for e in [-1022, 1023].
#[inline]
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    //! The special values; every other argument is proven in `xcd-mathcheck` (scripts/math-proof),
    //! against CORE-MATH, with the fallback that a `None` leaves the answer to.
    use super::*;

    #[test]
    fn special_values_follow_ieee_754() {
        let inf = f32::INFINITY;
        assert!(exp(f32::NAN).is_some_and(f32::is_nan) && log(f32::NAN).is_some_and(f32::is_nan));
        assert_eq!((exp(inf), exp(-inf), exp(0.0), exp(-0.0)), (Some(inf), Some(0.0), Some(1.0), Some(1.0)));
        assert_eq!(
            (exp2(inf), exp2(-inf), exp2(-150.0), exp2(127.0)),
            (Some(inf), Some(0.0), Some(0.0), Some(f32::from_bits(0x7f00_0000)))
        );
        assert_eq!((log(0.0), log(-0.0), log(inf), log(1.0)), (Some(-inf), Some(-inf), Some(inf), Some(0.0)));
        assert!(log(-1.0).is_some_and(f32::is_nan) && log2(-inf).is_some_and(f32::is_nan));
        for e in -149i32..128 {
            let two_to_e =
                if e < -126 { f32::from_bits(1 << (e + 149)) } else { f32::from_bits(((e + 127) as u32) << 23) };
            assert_eq!(log2(two_to_e), Some(e as f32), "log2(2^{e})");
            assert_eq!(exp2(e as f32), if e < -126 { None } else { Some(two_to_e) }, "exp2({e})");
        }
    }

    #[test]
    fn subnormal_results_are_left_to_the_fallback() {
        assert_eq!((exp(-100.0), exp2(-140.5)), (None, None));
        assert!(log(f32::from_bits(1)).is_some() && exp(-86.5).is_some());
    }
}
