//! `degrees`, `radians` and `ldexp`: a product by a constant, in f64, rounded to f32; and `%`
//! on floats, which is exact. Owns these four functions.

use crate::round::rounded;

/// 180/pi and pi/180, each the f64 nearest it (`scripts/mathlib-tables angle`).
const DEGREES_PER_RADIAN: f64 = f64::from_bits(0x404c_a5dc_1a63_c1f8);
const RADIANS_PER_DEGREE: f64 = f64::from_bits(0x3f91_df46_a252_9d39);

/// `degrees(x)` = x 180/pi correctly rounded, or `None` near a midpoint. The constant and the
/// product are each within half a unit of f64's last place, so the value is within 2 units
/// of the exact one; every result is normal, zero or infinite (|x 180/pi| >= 2^-149 * 57).
#[inline]
pub fn degrees(x: f32) -> Option<f32> {
    if x.is_nan() {
        return Some(f32::from_bits(0x7fc0_0000));
    }
    rounded(f64::from(x) * DEGREES_PER_RADIAN)
}

/// `radians(x)` = x pi/180 correctly rounded, or `None` near a midpoint and where the result
/// is subnormal (|x| below about 2^-120: f32 rounds those at a coarser place, left to the
/// fallback).
#[inline]
pub fn radians(x: f32) -> Option<f32> {
    if x.is_nan() {
        return Some(f32::from_bits(0x7fc0_0000));
    }
    let y = f64::from(x) * RADIANS_PER_DEGREE;
    // Just above 2^-126 too, so that no value rounding up to it slips through.
    if y != 0.0 && y.abs() < 1.000_001 * f64::from(f32::MIN_POSITIVE) {
        return None;
    }
    rounded(y)
}

/// `ldexp(x, n)` = x 2^n correctly rounded (C's ldexpf): the product is exact in f64 for every
/// f32 x once n is clamped to where the result is infinite or zero anyway, and converting it
/// to f32 is its one rounding, subnormal results included.
#[inline]
pub fn ldexp(x: f32, n: i32) -> Option<f32> {
    if x.is_nan() {
        return Some(f32::from_bits(0x7fc0_0000));
    }
    let n = n.clamp(-300, 300);
    Some((f64::from(x) * f64::from_bits(((n + 1023) as u64) << 52)) as f32)
}

/// `x % y` on floats: C's fmod, exact (WGSL's x - y trunc(x / y) with no rounding on the way),
/// which Rust's `%` on f32 is; NaN (x infinite, y zero, either NaN) as the one NaN every form
/// stores.
#[inline]
pub fn remainder(x: f32, y: f32) -> Option<f32> {
    let r = x % y;
    Some(if r.is_nan() { f32::from_bits(0x7fc0_0000) } else { r })
}
