//! `atan`, `atan2`, `asin` and `acos`: musl's f64 functions (the `libm` crate, within one unit
//! of f64's last place), rounded to f32 with the usual margin. Owns these four functions.

use crate::round::{NAN, finite, rounded};

/// `atan(x)` correctly rounded, or `None` near a midpoint.
#[inline]
pub fn atan(x: f32) -> Option<f32> {
    if x.is_nan() {
        return Some(NAN);
    }
    rounded(libm::atan(f64::from(x)))
}

/// `asin(x)` correctly rounded, or `None` near a midpoint (NaN outside [-1, 1]).
#[inline]
pub fn asin(x: f32) -> Option<f32> {
    // |x| < 2^-12: asin(x) rounds to x (as the WGSL), subnormal results included.
    if x.abs() < f32::from_bits(0x3980_0000) {
        return Some(x);
    }
    finite(libm::asin(f64::from(x)))
}

/// `acos(x)` correctly rounded, or `None` near a midpoint (NaN outside [-1, 1]).
#[inline]
pub fn acos(x: f32) -> Option<f32> {
    finite(libm::acos(f64::from(x)))
}

/// `atan2(y, x)` correctly rounded, or `None` near a midpoint and where the result is subnormal
/// (f32 rounds those at a coarser place: left to the fallback).
#[inline]
pub fn atan2(y: f32, x: f32) -> Option<f32> {
    if y.is_nan() || x.is_nan() {
        return Some(NAN);
    }
    let v = libm::atan2(f64::from(y), f64::from(x));
    // Zero only where y is (an exact ±0); just above 2^-126 too, so that no value rounding up
    // to it slips through.
    if v != 0.0 && v.abs() < f64::from_bits(0x3810_0000_0000_0000) {
        return None;
    }
    rounded(v)
}
