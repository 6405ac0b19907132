//! `sinh`, `cosh`, `tanh`, `asinh`, `acosh` and `atanh`: musl's f64 functions (the `libm`
//! crate, within a few units of f64's last place), rounded to f32 with the usual margin. Owns
//! these six functions.

use crate::round::{NAN, finite};

/// 2^-12: below it `sinh`, `asinh` and `atanh` round to x (as the WGSL does), subnormal
/// results included, which `finite` must not be given.
const TINY: f32 = f32::from_bits(0x3980_0000);

/// `sinh(x)` correctly rounded, or `None` near a midpoint.
#[inline]
pub fn sinh(x: f32) -> Option<f32> {
    if x.abs() < TINY {
        return Some(x);
    }
    finite(libm::sinh(f64::from(x)))
}

/// `cosh(x)` correctly rounded, or `None` near a midpoint.
#[inline]
pub fn cosh(x: f32) -> Option<f32> {
    finite(libm::cosh(f64::from(x)))
}

/// `tanh(x)` correctly rounded, or `None` near a midpoint.
#[inline]
pub fn tanh(x: f32) -> Option<f32> {
    // Below 2^-13 tanh(x) rounds to x (the gap below a power of 2 is half the gap above).
    if x.abs() < f32::from_bits(0x3900_0000) {
        return Some(x);
    }
    finite(libm::tanh(f64::from(x)))
}

/// `asinh(x)` correctly rounded, or `None` near a midpoint.
#[inline]
pub fn asinh(x: f32) -> Option<f32> {
    if x.abs() < TINY {
        return Some(x);
    }
    finite(libm::asinh(f64::from(x)))
}

/// `acosh(x)` correctly rounded, or `None` near a midpoint (NaN below 1).
#[inline]
pub fn acosh(x: f32) -> Option<f32> {
    // musl's acosh reads only the exponent, so a negative x would give a number.
    if x < 1.0 {
        return Some(NAN);
    }
    finite(libm::acosh(f64::from(x)))
}

/// `atanh(x)` correctly rounded, or `None` near a midpoint (NaN outside [-1, 1], infinite at
/// ±1).
#[inline]
pub fn atanh(x: f32) -> Option<f32> {
    if x.abs() < TINY {
        return Some(x);
    }
    finite(libm::atanh(f64::from(x)))
}
