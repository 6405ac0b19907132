//! `fma(a, b, c)`: a * b + c rounded once, from f64 arithmetic. Owns this function alone.

/// `fma(a, b, c)` correctly rounded, for every argument (never `None`).
///
/// The product of two f32 has at most 48 significant bits and an exponent f64 holds, so
/// `a * b` in f64 is exact. Its sum with `c` is `s + e` exactly (Knuth's TwoSum: `s` the
/// rounded sum, `e` its error; exact as f64 neither overflows nor underflows on these values).
/// `s + e` is then rounded to f64 by rounding to odd (`s`'s last bit set where `e` is not 0 and
/// it is clear: `s` moved one unit towards `e`) and to f32 by `as`: with 29 bits beyond f32's
/// 24 (more below f32's normal range), rounding to odd and then to nearest is rounding to
/// nearest once. Zeros, infinities and NaN come out as IEEE 754 says, f64 giving them the same
/// way (an exact zero sum is +0, -0 only from two -0).
#[inline]
pub fn fma(a: f32, b: f32, c: f32) -> Option<f32> {
    let p = f64::from(a) * f64::from(b);
    let c = f64::from(c);
    let s = p + c;
    if !s.is_finite() {
        return Some(if s.is_nan() { f32::from_bits(0x7fc0_0000) } else { s as f32 });
    }
    let t = s - p;
    let e = (p - (s - t)) + (c - t);
    let bits = s.to_bits();
    if e == 0.0 || bits & 1 == 1 {
        return Some(s as f32);
    }
    // s is not 0 here (a zero sum is exact); towards e: up in magnitude where e has s's sign.
    let odd = if (e > 0.0) == (s > 0.0) { bits + 1 } else { bits - 1 };
    Some(f64::from_bits(odd) as f32)
}
