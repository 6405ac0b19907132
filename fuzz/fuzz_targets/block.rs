//! Block registration as the daemon does it before any driver sees a block: the body of
//! `POST /v1/blocks` read as a description, validated and addressed, then each kernel form the
//! daemon would load checked (SPIR-V parsed, validated, matched to the bindings and written
//! again; WGSL parsed, validated and made into forms).
#![no_main]

mod naga_panics;

use libfuzzer_sys::fuzz_target;
use xcd_wire::{BlockDesc, WORKGROUP_SIZE};

fuzz_target!(|data: &[u8]| {
    naga_panics::tolerate_caught_naga_panics();
    let Ok(desc) = serde_json::from_slice::<BlockDesc>(data) else { return };
    if desc.validate().is_err() {
        return;
    }
    let _ = desc.id();
    let _ = desc.uniform_words();
    if let Some(words) = &desc.forms.spirv {
        let _ = xcd_forms::admit_spirv(words, &desc.entry, WORKGROUP_SIZE, &xcd_forms::bindings(&desc));
    }
    if let Some(wgsl) = &desc.forms.wgsl {
        let _ = xcd_forms::make_forms(wgsl, &desc.entry);
    }
});
