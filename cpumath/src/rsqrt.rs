//! `inverseSqrt`: 1/sqrt(x) in f64, rounded to f32. Owns this one function.

use crate::round::rounded;

/// `inverseSqrt(x)` correctly rounded, or `None` near a midpoint. f64's sqrt and division are
/// each correctly rounded, so the f64 value is within 2 units of its last place of the exact
/// one, well inside the margin `rounded` keeps; the result is normal for every positive x
/// (between 2^-64 and 2^75). Special values as IEEE 754's rSqrt: +-0 give +-inf, +inf gives +0,
/// below zero (and NaN) the one NaN every form stores.
#[inline]
pub fn inverse_sqrt(x: f32) -> Option<f32> {
    if x > 0.0 && x < f32::INFINITY {
        return rounded(1.0 / f64::from(x).sqrt());
    }
    Some(if x == 0.0 {
        f32::INFINITY.copysign(x)
    } else if x == f32::INFINITY {
        0.0
    } else {
        f32::from_bits(0x7fc0_0000)
    })
}
