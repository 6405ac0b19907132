//! xcd-cpumath: the CPU form's fast path for the math library's functions (docs/kernels.md,
//! "Math functions"). Each function evaluates an f32 function in f64 and returns its correctly
//! rounded f32, or `None` in the rare case (about one argument in 4,000) where the f64 value
//! lies too near the middle between two f32 to say which way the exact value rounds, for
//! the subnormal results of `exp` and `exp2` (which f32 rounds at a coarser place), and for
//! the arguments of `sin` and `cos` from 2^20 up (which need more of pi than f64 holds).
//! `fma` is the exception: f64 holds its product exactly and its sum as two parts, so it
//! rounds every argument itself and never says `None`.
//!
//! The generated CPU form calls these and falls back, on `None`, to its transcription of the
//! library's WGSL (xcd-forms' `mathlib`), which every GPU form runs and which is correctly
//! rounded on every argument. As a correctly rounded result is unique, the two give the same
//! bits; `scripts/math-proof` checks the pair, as the CPU form runs it, on all 2^32 arguments.
//! The WGSL works in double-f32 because a GPU form has no fast f64; a CPU core has, and this
//! is roughly twenty times faster (docs/performance.md).
//!
//! How each stays honest: the f64 value's relative error is below 2^-39 (each function's doc
//! says why: short polynomials, as speed is the point), so it is within 2^14 units of the
//! f64's last place of the exact value; where it lies within 2^16 units of an f32 midpoint
//! the function says `None` (`round`), so a `Some` is the exact value's rounding. The fallback
//! costs 150–250 ns where it runs, about 0.05 ns an argument on average.
//!
//! This crate owns only these evaluations: no kernel, no IR, no other form. Plain Rust, on any
//! target with IEEE binary64 arithmetic rounded at each operation (not x87's extended
//! registers, which the build refuses). It uses std for f64's `sqrt` (IEEE's correctly rounded
//! square root, one instruction on x86-64 and Arm) and the `libm` crate (musl's functions in
//! Rust, the same on every target) for f64's `atan`, `atan2`, `asin`, `acos`, `pow` and the six
//! hyperbolic functions (within one unit of f64's last place, far inside the margin).
#![forbid(unsafe_code)]

#[cfg(all(target_arch = "x86", not(target_feature = "sse2")))]
compile_error!(
    "xcd-cpumath needs f64 arithmetic rounded to binary64 at each operation: build for a target with SSE2 (i686), not x87 (i586)"
);

mod angle;
mod atan;
mod exp;
mod fma;
mod hyperbolic;
mod log;
mod pow;
mod round;
mod rsqrt;
mod sincos;
mod tables;

pub use angle::{degrees, ldexp, radians, remainder};
pub use atan::{acos, asin, atan, atan2};
pub use exp::{exp, exp2};
pub use fma::fma;
pub use hyperbolic::{acosh, asinh, atanh, cosh, sinh, tanh};
pub use log::{log, log2};
pub use pow::pow;
pub use rsqrt::inverse_sqrt;
pub use sincos::{cos, sin, tan};

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
        // The one NaN every form stores.
        assert_eq!((log(-1.0).map(f32::to_bits), log2(-inf).map(f32::to_bits)), (Some(0x7fc0_0000), Some(0x7fc0_0000)));
        for e in -149i32..128 {
            let two_to_e =
                if e < -126 { f32::from_bits(1 << (e + 149)) } else { f32::from_bits(((e + 127) as u32) << 23) };
            assert_eq!(log2(two_to_e), Some(e as f32), "log2(2^{e})");
            assert_eq!(exp2(e as f32), if e < -126 { None } else { Some(two_to_e) }, "exp2({e})");
        }
    }

    #[test]
    fn sin_and_cos_keep_signed_zeros_and_leave_the_rest_to_the_fallback() {
        assert_eq!((sin(0.0).map(f32::to_bits), sin(-0.0).map(f32::to_bits)), (Some(0), Some(0x8000_0000)));
        assert_eq!((cos(0.0), cos(-0.0), cos(1e-5)), (Some(1.0), Some(1.0), Some(1.0)));
        assert_eq!(sin(-1e-5), Some(-1e-5));
        for x in [f32::NAN, f32::INFINITY, -f32::INFINITY, 1_048_576.0, -f32::MAX] {
            assert_eq!((sin(x), cos(x)), (None, None), "{x}");
        }
    }

    #[test]
    fn fma_rounds_once() {
        let (inf, nan) = (f32::INFINITY, 0x7fc0_0000);
        // (1 + 2^-23)(1 - 2^-23) = 1 - 2^-46: unfused it rounds to 1, and minus 1 gives 0.
        let (u, v) = (f32::from_bits(0x3f80_0001), f32::from_bits(0x3f7f_fffe));
        assert_eq!(fma(u, v, -1.0), Some(-(2f32.powi(-46))));
        // Products far below c move only its rounding: a tie broken by the product's sign.
        assert_eq!(fma(1e-30, 1e-30, 1.0), Some(1.0));
        assert_eq!(fma(2f32.powi(-24), 1.0 + 2f32.powi(-23), 1.0), Some(1.0 + 2f32.powi(-23)));
        assert_eq!(fma(2f32.powi(-24), 1.0, 1.0), Some(1.0));
        assert_eq!(
            (fma(2.0, -0.0, 0.0).map(f32::to_bits), fma(2.0, -0.0, -0.0).map(f32::to_bits)),
            (Some(0), Some(0x8000_0000))
        );
        assert_eq!(fma(3.0, 2.0, -6.0).map(f32::to_bits), Some(0));
        assert_eq!((fma(f32::MAX, 2.0, -f32::MAX), fma(inf, 2.0, 1.0)), (Some(f32::MAX), Some(inf)));
        assert_eq!(fma(f32::from_bits(1), 0.5, 0.0), Some(0.0));
        assert_eq!(fma(f32::from_bits(3), 0.5, 0.0), Some(f32::from_bits(2)));
        for (a, b, c) in [(inf, 0.0, 1.0), (inf, 1.0, -inf), (f32::NAN, 1.0, 1.0), (1.0, 1.0, f32::NAN)] {
            assert_eq!(fma(a, b, c).map(f32::to_bits), Some(nan), "fma({a}, {b}, {c})");
        }
    }

    #[test]
    fn subnormal_results_are_left_to_the_fallback() {
        assert_eq!((exp(-100.0), exp2(-140.5), radians(1e-37)), (None, None, None));
        assert!(log(f32::from_bits(1)).is_some() && exp(-86.5).is_some() && radians(1e-35).is_some());
    }

    #[test]
    fn inverse_sqrt_degrees_radians_ldexp_and_remainder_keep_ieee_s_special_values() {
        let (inf, nan) = (f32::INFINITY, 0x7fc0_0000);
        assert_eq!((inverse_sqrt(0.0), inverse_sqrt(-0.0), inverse_sqrt(inf)), (Some(inf), Some(-inf), Some(0.0)));
        assert_eq!(
            (inverse_sqrt(4.0), inverse_sqrt(f32::from_bits(2))),
            (Some(0.5), Some(f32::from_bits(0x6480_0000)))
        );
        for x in [-1.0, -inf, f32::NAN] {
            assert_eq!(inverse_sqrt(x).map(f32::to_bits), Some(nan), "{x}");
        }
        assert_eq!(
            (degrees(-0.0).map(f32::to_bits), degrees(1e37), radians(-inf)),
            (Some(0x8000_0000), Some(inf), Some(-inf))
        );
        assert_eq!(
            (ldexp(1.0, -149), ldexp(1.0, -150), ldexp(1.5, -150)),
            (Some(f32::from_bits(1)), Some(0.0), Some(f32::from_bits(1)))
        );
        assert_eq!(
            (ldexp(1.0, 128), ldexp(-3.0, i32::MIN), ldexp(f32::MAX, i32::MIN)),
            (Some(inf), Some(-0.0), Some(0.0))
        );
        assert_eq!(
            (remainder(7.5, 2.0), remainder(-7.5, 2.0), remainder(1.0, inf)),
            (Some(1.5), Some(-1.5), Some(1.0))
        );
        assert_eq!(remainder(-4.0, 2.0).map(f32::to_bits), Some(0x8000_0000));
        for (x, y) in [(inf, 1.0), (1.0, 0.0), (f32::NAN, 1.0), (1.0, f32::NAN)] {
            assert_eq!(remainder(x, y).map(f32::to_bits), Some(nan), "{x} % {y}");
        }
    }
}
