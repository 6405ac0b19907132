//! What every function shares: the rounding to f32 that says `None` near a midpoint, exact
//! powers of two, and rounding an f64 to an integer without a library call. Owns no function.

/// How near, in units in the last place of the f64 value, an f32 midpoint may be before the
/// rounding is left to the fallback: 4 times the error bound (2^14 units).
const MARGIN: u64 = 1 << 16;

/// 1.5 * 2^52: adding it rounds an f64 below 2^51 to an integer, ties to even, held in the low
/// 32 bits of the sum (no call to `rint`, which a CPU without SSE4.1 makes a library call).
pub(crate) const SHIFT: f64 = 6755399441055744.0;

/// `y` rounded to f32, if `y` (within 2^14 f64 units of the exact value) is far enough from an
/// f32 midpoint for that to be the exact value's rounding too. `y` must round to a normal f32
/// or to zero or infinity.
#[inline]
pub(crate) fn rounded(y: f64) -> Option<f32> {
    // The 29 bits f64 has beyond f32's 23: 2^28 is the midpoint. (Near an f32 itself, at 0 or
    // 2^29, both sides round to that f32, even across a binade; and f32::MAX's upper midpoint,
    // where rounding overflows, is a midpoint like the rest.)
    let below = y.to_bits() & 0x1fff_ffff;
    if below.abs_diff(1 << 28) <= MARGIN { None } else { Some(y as f32) }
}

/// The one NaN every form stores.
pub(crate) const NAN: f32 = f32::from_bits(0x7fc0_0000);

/// `v` rounded as [`rounded`] does, NaN as the one NaN every form stores.
#[inline]
pub(crate) fn finite(v: f64) -> Option<f32> {
    if v.is_nan() { Some(NAN) } else { rounded(v) }
}

/// 2^e as f64, for e in [-1022, 1023].
#[inline]
pub(crate) fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}
