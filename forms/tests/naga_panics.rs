//! Inputs on which naga itself panics are refused with a reason, not passed up as a panic: the
//! daemon checks forms on a device's thread, where a panic takes the device out of service.

use xcd_forms::{Binding, FormsError};

const POLY: [Binding; 4] = [
    Binding::Uniform,
    Binding::Storage { read_only: true },
    Binding::Storage { read_only: true },
    Binding::Storage { read_only: false },
];

#[test]
fn spirv_that_panics_naga_is_refused() {
    // Found by `scripts/fuzz` (target block_spirv) against naga 30.0.2: an `unwrap` in
    // front/spv/function.rs. Kept here and in fuzz/corpus/block_spirv.
    let bytes = include_bytes!("data/naga-spv-panic.bin");
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let error = xcd_forms::admit_spirv(&words, "poly", 64, &POLY).expect_err("refused");
    assert!(matches!(error, FormsError::Reader(_) | FormsError::Invalid(_)), "{error}");
    assert!(error.to_string().contains("naga") || error.to_string().contains("SPIR-V"), "{error}");
}
