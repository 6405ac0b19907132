//! `exp` and `exp2` in f64: x = k/32 (in units of ln2 for `exp`) + r with |r| <= ln2/64, so the
//! result is 2^(k>>5) * 2^((k&31)/32) * e^r, the middle factor from a table and e^r - 1 from
//! its Taylor polynomial to r^4 (the r^5 term is below 2^-39.6). The polynomial's truncation
//! is the error that matters (roundings add under 2^-51); the margin covers 2^-37.

use crate::round::{SHIFT, pow2, rounded};
use crate::tables::{EXP2_32, EXP2_POLY, INV_LN2_32, LN2_32_HI, LN2_32_LO};

/// `exp(x)` correctly rounded, or `None` where the fallback must say: near a midpoint, or x in
/// (-103.97, -87], whose results are subnormal or nearly so.
#[inline]
pub fn exp(x: f32) -> Option<f32> {
    // Below -87.3 the result is subnormal; from 0x42b17218 (88.72…) up it rounds to infinity.
    if !(x > -87.0 && x < f32::from_bits(0x42b1_7218)) {
        // exp(x) rounds to 0 from 0xc2cff1b5 (-103.97…) down.
        return edge(x, f32::from_bits(0xc2cf_f1b5));
    }
    let x = f64::from(x);
    let shifted = x * INV_LN2_32 + SHIFT;
    let k = shifted.to_bits() as i32;
    let kf = shifted - SHIFT;
    // |k| < 2^13, so kf * LN2_32_HI is exact, and x - kf * LN2_32_HI too (Sterbenz).
    let r = (x - kf * LN2_32_HI) - kf * LN2_32_LO;
    // Estrin's scheme: two short chains rather than one long one.
    let r2 = r * r;
    let p = r + r2 * (0.5 + r * (1.0 / 6.0)) + r2 * r2 * (1.0 / 24.0);
    scaled(k, p)
}

/// `exp2(x)` correctly rounded, or `None` where the fallback must say: near a midpoint, or x in
/// (-150, -126), whose results are subnormal.
#[inline]
pub fn exp2(x: f32) -> Option<f32> {
    if !(-126.0..128.0).contains(&x) {
        // 2^-150 is the midpoint between 0 and the least subnormal: it rounds to 0 (even).
        return edge(x, -150.0);
    }
    // 32x and its fraction f are exact (x has 24 bits and |32x| < 2^13).
    let t = f64::from(x) * 32.0;
    let shifted = t + SHIFT;
    let k = shifted.to_bits() as i32;
    let f = t - (shifted - SHIFT);
    let [c1, c2, c3, c4] = EXP2_POLY;
    let f2 = f * f;
    let p = f * c1 + f2 * (c2 + f * c3) + f2 * f2 * c4;
    scaled(k, p)
}

/// The result outside the range the polynomial serves: NaN stays, a large x overflows, an x
/// at or below `zero` rounds to 0, and the subnormal results between are the fallback's.
#[cold]
fn edge(x: f32, zero: f32) -> Option<f32> {
    if x.is_nan() {
        Some(x)
    } else if x > 0.0 {
        Some(f32::INFINITY)
    } else if x <= zero {
        Some(0.0)
    } else {
        None
    }
}

/// 2^(k/32) * (1 + p), rounded.
#[inline]
fn scaled(k: i32, p: f64) -> Option<f32> {
    let s = EXP2_32[(k & 31) as usize];
    rounded((s + s * p) * pow2(k >> 5))
}
