//! `log` and `log2` in f64: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), m in one of 91 buckets
//! of width 1/128 with c close to 1/m (28 bits), so r = m * c - 1 is exact with |r| < 2^-7.4,
//! and log(x) = e ln2 - log(c) + log(1 + r), the last from its Taylor polynomial to r^5 (the
//! r^6 term is below 2^-40 of r). The bucket around 1 has c = 1, so near x = 1 the result is
//! the polynomial's alone, with no cancellation; elsewhere |log(x)| is at least 0.7 times the
//! polynomial's value. Relative error below 2^-39, nearly all of it the truncation.

use crate::round::{SHIFT, rounded};
use crate::tables::{INV_LN2, LN2_HI, LN2_LO, LOG, LOG_FIRST};

/// The bits of sqrt(1/2) as f64, rounded down.
const SQRT_HALF: u64 = 0x3fe6_a09e_667f_3bcc;

/// A positive, finite x as (e, -log(c) and -log2(c) of m's bucket, r); `None` where the
/// bucket is out of the table, which a positive finite x never gives.
#[inline]
fn reduce(x: f32) -> Option<(f64, (f64, f64), f64)> {
    // In f64 a subnormal f32 is normal. Subtracting sqrt(1/2)'s bits leaves e in the exponent
    // field, and m is what is left with e taken away.
    let bits = f64::from(x).to_bits();
    let t = bits.wrapping_sub(SQRT_HALF);
    let e = (t as i64 >> 52) as f64;
    let m = f64::from_bits(bits.wrapping_sub(t & 0xfff0_0000_0000_0000));
    // The nearest integer to 128m, in the low bits.
    let i = (m * 128.0 + SHIFT).to_bits() as u32 as usize;
    let bucket = LOG.get(i.wrapping_sub(LOG_FIRST));
    debug_assert!(bucket.is_some(), "m = {m} gave bucket {i}");
    let &(c, logc, log2c) = bucket?;
    // m has 24 bits and c 28, so m * c is exact, and within 2^-7 of 1 (Sterbenz).
    Some((e, (logc, log2c), m * c - 1.0))
}

/// log(1 + r) for |r| < 2^-7.4, to r^5 (Estrin's scheme: short chains).
#[inline]
fn log1p(r: f64) -> f64 {
    let r2 = r * r;
    r + r2 * ((-0.5 + r * (1.0 / 3.0)) + r2 * (-0.25 + r * 0.2))
}

/// The result for an x that is not positive and finite: NaN stays, +inf stays, ±0 gives -inf
/// and a negative x NaN.
#[cold]
fn edge(x: f32) -> Option<f32> {
    Some(if x.is_nan() || x == f32::INFINITY {
        x
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else {
        // The one NaN every form stores (f32::NAN's bits are not promised).
        f32::from_bits(0x7fc0_0000)
    })
}

/// `log(x)` (the natural logarithm) correctly rounded, or `None` where the fallback must say.
#[inline]
pub fn log(x: f32) -> Option<f32> {
    if !(x > 0.0 && x < f32::INFINITY) {
        return edge(x);
    }
    let (e, (logc, _), r) = reduce(x)?;
    // e * LN2_HI is exact (|e| <= 150); it and -log(c) are the large terms.
    rounded((e * LN2_HI + logc) + (log1p(r) + e * LN2_LO))
}

/// `log2(x)` correctly rounded, or `None` where the fallback must say.
#[inline]
pub fn log2(x: f32) -> Option<f32> {
    if !(x > 0.0 && x < f32::INFINITY) {
        return edge(x);
    }
    let (e, (_, log2c), r) = reduce(x)?;
    rounded(e + (log2c + log1p(r) * INV_LN2))
}
