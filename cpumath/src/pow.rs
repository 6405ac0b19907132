//! `pow`: musl's f64 `pow` (the `libm` crate, within one unit of f64's last place), rounded to
//! f32 with the usual margin, for a positive finite `x`, a finite `y` and a normal result (or
//! zero or infinity). Everything else (special values, a negative `x`, subnormal results, and
//! the results near a midpoint, exact midpoints included) is the WGSL's. Owns this function.

use crate::round::rounded;

/// `pow(x, y)` correctly rounded, or `None` where the WGSL decides.
#[inline]
pub fn pow(x: f32, y: f32) -> Option<f32> {
    if !(x > 0.0 && x.is_finite() && y.is_finite()) {
        return None;
    }
    let v = libm::pow(f64::from(x), f64::from(y));
    // Below 2^-126 but not 0: a subnormal result, rounded at its own place by the WGSL.
    if v != 0.0 && v < f64::from(f32::MIN_POSITIVE) {
        return None;
    }
    rounded(v)
}
