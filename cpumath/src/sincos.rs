//! `sin`, `cos` and `tan` in f64, for |x| < 2^20: x = k pi/2 + r with |r| <= pi/4 (Cody and
//! Waite's reduction, pi/2 in three parts), then sin(r) or cos(r) by its Taylor polynomial, to
//! r^13 and r^14 (the next terms are below 2^-44 and 2^-49 of the result), and tan(r) as their
//! quotient (within about 2^-43). Larger arguments, NaN and the infinities are left to the
//! fallback, whose integer reduction is exact for every f32.

use crate::round::{SHIFT, rounded};
use crate::tables::{FRAC_2_PI, PI_2_1, PI_2_2, PI_2_3};

/// `sin(x)` correctly rounded, or `None` where the fallback must say: near a midpoint, or
/// |x| >= 2^20, NaN or infinite.
#[inline]
pub fn sin(x: f32) -> Option<f32> {
    sin_cos(x, 0)
}

/// `cos(x)` correctly rounded, or `None` where the fallback must say: near a midpoint, or
/// |x| >= 2^20, NaN or infinite.
#[inline]
pub fn cos(x: f32) -> Option<f32> {
    sin_cos(x, 1)
}

/// `tan(x)` correctly rounded, or `None` where the fallback must say: near a midpoint, or
/// |x| >= 2^20, NaN or infinite.
#[inline]
pub fn tan(x: f32) -> Option<f32> {
    let a = x.to_bits() & 0x7fff_ffff;
    if a < 0x3980_0000 {
        // |x| < 2^-12: tan(x) = x + x^3/3 rounds to x (as the WGSL).
        return Some(x);
    }
    let (r, k) = reduce(x)?;
    let u = r * r;
    let (s, c) = (sin_poly(r, u), cos_poly(u));
    rounded(if k & 1 == 0 { s / c } else { -c / s })
}

/// sin(x) (`shift` 0) or cos(x) = sin(x + pi/2) (`shift` 1, the quadrant moved on by one).
#[inline]
fn sin_cos(x: f32, shift: u32) -> Option<f32> {
    let a = x.to_bits() & 0x7fff_ffff;
    if a < 0x3980_0000 {
        // |x| < 2^-12: sin(x) = x - x^3/6 rounds to x, cos(x) = 1 - x^2/2 to 1 (as the WGSL).
        return Some(if shift == 1 { 1.0 } else { x });
    }
    let (r, k) = reduce(x)?;
    let u = r * r;
    let q = k.wrapping_add(shift) & 3;
    let y = if q & 1 == 0 { sin_poly(r, u) } else { cos_poly(u) };
    rounded(if q & 2 == 0 { y } else { -y })
}

/// x = k pi/2 + r, |r| <= pi/4: (r, k mod 2^32), or `None` from |x| = 2^20 up (NaN and the
/// infinities included).
#[inline]
fn reduce(x: f32) -> Option<(f64, u32)> {
    if x.to_bits() & 0x7fff_ffff >= 0x4980_0000 {
        return None;
    }
    let x = f64::from(x);
    // k below 2^20, so k * PI_2_1 and k * PI_2_2 (at most 33 bits each) are exact, and so is
    // x - k * PI_2_1: a multiple of 2^-32 below 1 (x, from pi/4 up where k is not 0, is a
    // multiple of 2^-24).
    let shifted = x * FRAC_2_PI + SHIFT;
    let k = shifted.to_bits() as u32;
    let kf = shifted - SHIFT;
    Some((((x - kf * PI_2_1) - kf * PI_2_2) - kf * PI_2_3, k))
}

/// sin(r) = r + r u S(u), u = r^2, Taylor to r^13, in Estrin's scheme.
#[inline]
fn sin_poly(r: f64, u: f64) -> f64 {
    const S: [f64; 6] =
        [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362_880.0, -1.0 / 39_916_800.0, 1.0 / 6_227_020_800.0];
    let u2 = u * u;
    let s = (S[0] + u * S[1]) + u2 * ((S[2] + u * S[3]) + u2 * (S[4] + u * S[5]));
    r + r * u * s
}

/// cos(r) = 1 - u/2 + u^2 C(u), u = r^2, Taylor to r^14, in Estrin's scheme.
#[inline]
fn cos_poly(u: f64) -> f64 {
    const C: [f64; 6] =
        [1.0 / 24.0, -1.0 / 720.0, 1.0 / 40_320.0, -1.0 / 3_628_800.0, 1.0 / 479_001_600.0, -1.0 / 87_178_291_200.0];
    let u2 = u * u;
    let c = (C[0] + u * C[1]) + u2 * ((C[2] + u * C[3]) + u2 * (C[4] + u * C[5]));
    (1.0 - 0.5 * u) + u2 * c
}
