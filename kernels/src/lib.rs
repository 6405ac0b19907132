//! The example blocks, each in every kernel form: `escape` (the tutorial's program), `saxpy`
//! (per-item input and input-output arrays, a float parameter) and `poly` (a whole array shared
//! by every tile).
//!
//! Each block's WGSL in `wgsl/` is the one source: SPIR-V, MSL and PTX are made from it at
//! build time (`build.rs`, with xcd-forms); its CPU form is the plain Rust below, written to the
//! same arithmetic and the exact subset's rules (a stored NaN is the canonical one). This crate
//! owns the kernels only; it must not run anything.
#![forbid(unsafe_code)]

use std::sync::Arc;

use xcd_runtime::{Block, CpuTile, canonical};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec};

macro_rules! forms {
    ($name:literal) => {
        Forms {
            wgsl: Some(include_str!(concat!("../wgsl/", $name, ".wgsl")).to_owned()),
            spirv: Some(words(include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".spv")))),
            msl: Some(include_str!(concat!(env!("OUT_DIR"), "/", $name, ".msl")).to_owned()),
            ptx: Some(include_str!(concat!(env!("OUT_DIR"), "/", $name, ".ptx")).to_owned()),
        }
    };
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn array(name: &str, role: ArrayRole) -> ArraySpec {
    ArraySpec { name: name.to_owned(), elem_size: 4, role }
}

fn param(name: &str, kind: ParamKind) -> ParamSpec {
    ParamSpec { name: name.to_owned(), kind }
}

/// The escape block: `counts[i]` = iterations until pixel `i` of a width×height image escapes.
/// Parameters: width, height, max_iter (all u32). Arrays: counts (out, u32).
pub fn escape() -> Block {
    Block {
        desc: Arc::new(BlockDesc {
            name: "escape".into(),
            entry: "escape".into(),
            arrays: vec![array("counts", ArrayRole::PerItem(Access::Out))],
            params: vec![
                param("width", ParamKind::U32),
                param("height", ParamKind::U32),
                param("max_iter", ParamKind::U32),
            ],
            forms: forms!("escape"),
        }),
        cpu: escape_cpu,
    }
}

/// One pixel's iteration count, with the tutorial's arithmetic: IEEE binary32, every operation
/// rounded on its own, left to right.
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

fn escape_cpu(t: &mut CpuTile<'_>) {
    let (width, height, max_iter) = (t.param_u32(0), t.param_u32(1), t.param_u32(2));
    let start = t.tile.start;
    for (i, count) in t.take_write::<u32>(0).iter_mut().enumerate() {
        *count = escape_pixel(start + i as u32, width, height, max_iter);
    }
}

/// The saxpy block: `y[i] = a * x[i] + y[i]`. Parameter: a (f32). Arrays: x (in, f32), y (inout, f32).
pub fn saxpy() -> Block {
    Block {
        desc: Arc::new(BlockDesc {
            name: "saxpy".into(),
            entry: "saxpy".into(),
            arrays: vec![array("x", ArrayRole::PerItem(Access::In)), array("y", ArrayRole::PerItem(Access::InOut))],
            params: vec![param("a", ParamKind::F32)],
            forms: forms!("saxpy"),
        }),
        cpu: saxpy_cpu,
    }
}

fn saxpy_cpu(t: &mut CpuTile<'_>) {
    let a = t.param_f32(0);
    let x = t.read::<f32>(0);
    for (y, &x) in t.take_write::<f32>(1).iter_mut().zip(x) {
        // Written in the kernel's order (a * x, then + y) so the three forms read alike.
        #[allow(clippy::assign_op_pattern)]
        {
            *y = canonical(a * x + *y);
        }
    }
}

/// The poly block: `y[i] = Σ coef[k] x[i]^k` for k < terms, by Horner's rule; coefficients past
/// the array read as 0. Parameter: terms (u32). Arrays: x (in, f32), coef (whole, f32), y (out, f32).
pub fn poly() -> Block {
    Block {
        desc: Arc::new(BlockDesc {
            name: "poly".into(),
            entry: "poly".into(),
            arrays: vec![
                array("x", ArrayRole::PerItem(Access::In)),
                array("coef", ArrayRole::Whole),
                array("y", ArrayRole::PerItem(Access::Out)),
            ],
            params: vec![param("terms", ParamKind::U32)],
            forms: forms!("poly"),
        }),
        cpu: poly_cpu,
    }
}

fn poly_cpu(t: &mut CpuTile<'_>) {
    let terms = t.param_u32(0);
    let x = t.read::<f32>(0);
    let coef = t.read::<f32>(1);
    for (y, &v) in t.take_write::<f32>(2).iter_mut().zip(x) {
        let mut acc = 0.0f32;
        for k in (0..terms as usize).rev() {
            acc = acc * v + coef.get(k).copied().unwrap_or(0.0);
        }
        *y = canonical(acc);
    }
}

/// Every example block.
pub fn all() -> Vec<Block> {
    vec![escape(), saxpy(), poly()]
}
