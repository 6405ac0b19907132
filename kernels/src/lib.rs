//! The example blocks: `escape` (the tutorial's program), `saxpy` (per-item input and
//! input-output arrays, a float parameter) and `poly` (a whole array shared by every tile).
//!
//! Each block is its WGSL in `wgsl/` and nothing else: `build.rs` hands the files to xcd-build,
//! which writes a module per block (`escape`, `saxpy`, `poly`) with its description, every GPU
//! form, its CPU form written from the same IR, and a typed `run`. This crate owns the kernels
//! only; it must not run anything.
#![forbid(unsafe_code)]

use xcd_runtime::Block;

xcd_runtime::include_blocks!();

/// The escape block: `counts[i]` = iterations until pixel `i` of a width×height image escapes.
/// Parameters: width, height, max_iter (all u32). Arrays: counts (out, u32).
pub fn escape() -> Block {
    escape::block()
}

/// The saxpy block: `y[i] = a * x[i] + y[i]`. Parameter: a (f32). Arrays: x (in, f32), y (inout, f32).
pub fn saxpy() -> Block {
    saxpy::block()
}

/// The poly block: `y[i] = Σ coef[k] x[i]^k` for k < terms, by Horner's rule; coefficients past
/// the array read as 0. Parameter: terms (u32). Arrays: x (in, f32), coef (whole, f32), y (out, f32).
pub fn poly() -> Block {
    poly::block()
}

/// Every example block.
pub fn all() -> Vec<Block> {
    vec![escape(), saxpy(), poly()]
}

/// One pixel's iteration count computed in plain Rust, apart from every form, with the
/// tutorial's arithmetic (IEEE binary32, every operation rounded on its own, left to right):
/// the reference tests check the forms against.
pub fn escape_pixel(item: u32, width: u32, height: u32, max_iter: u32) -> u32 {
    let cx = (item % width) as f32 * 3.0 / width as f32 - 2.0;
    let cy = (item / width) as f32 * 3.0 / height as f32 - 1.5;
    let mut x = 0.0f32;
    let mut y = 0.0f32;
    let mut n = 0u32;
    while n < max_iter && x * x + y * y < 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        n += 1;
    }
    n
}
