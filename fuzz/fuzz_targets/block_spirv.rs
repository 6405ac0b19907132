//! A block's SPIR-V form, fuzzed as words rather than inside JSON: the check and rewrite the
//! daemon applies before a Vulkan driver is given a kernel, against the bindings of the example
//! `poly` block (a uniform, a per-item input, a whole array and a per-item output).
#![no_main]

mod naga_panics;

use libfuzzer_sys::fuzz_target;
use xcd_forms::Binding;
use xcd_wire::WORKGROUP_SIZE;

const BINDINGS: [Binding; 4] = [
    Binding::Uniform,
    Binding::Storage { read_only: true },
    Binding::Storage { read_only: true },
    Binding::Storage { read_only: false },
];

fuzz_target!(|data: &[u8]| {
    naga_panics::tolerate_caught_naga_panics();
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if let Ok(admitted) = xcd_forms::admit_spirv(&words, "poly", WORKGROUP_SIZE, &BINDINGS) {
        // What the daemon gives the driver must itself pass the same check.
        assert!(
            xcd_forms::check_spirv(&admitted, "poly", WORKGROUP_SIZE, &BINDINGS).is_ok(),
            "admitted SPIR-V passes its own check"
        );
    }
});
