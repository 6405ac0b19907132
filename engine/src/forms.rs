//! Which form of a block a device loads, and where it comes from.
//!
//! By default ([`FormPolicy::Remake`]) a device makes its own form from the block's WGSL (or,
//! when a block carries no WGSL, from its SPIR-V, parsed and written again) with xcd-forms: a
//! driver never receives a program's own SPIR-V, PTX or MSL words, every buffer access is
//! bounds-checked, and the arithmetic is exact. [`FormPolicy::Trust`] (`xcd -trust-forms`) loads
//! a carried form of the device's own kind as sent, which skips that work and that protection
//! (docs/security.md). The policy itself is the wire's (`xcd_wire::forms`), so that a program
//! can tell which form a daemon's device would take; this module decides what a device loads,
//! and the backends load it.

use xcd_wire::{BackendKind, BlockDesc, FormKind, FormPolicy, form_for, forms_taken, native_form};

use crate::EngineError;

/// What a backend loads for a block.
pub(crate) enum Source {
    /// The block's own form of the device's kind, as sent (trusted).
    Carried,
    /// A kernel made exact by xcd-forms, to write the device's form from.
    Made(Box<xcd_forms::Kernel>),
}

/// Decides what `device` (of `backend`) loads for `desc` under `policy`.
pub(crate) fn source(
    device: &str,
    backend: BackendKind,
    desc: &BlockDesc,
    policy: FormPolicy,
) -> Result<Source, EngineError> {
    match form_for(backend, &desc.forms, policy) {
        Some(kind) if policy == FormPolicy::Trust && kind == native_form(backend) && kind != FormKind::Wgsl => {
            Ok(Source::Carried)
        }
        Some(_) => xcd_forms::Kernel::for_block(desc).map(|k| Source::Made(Box::new(k))).map_err(|e| {
            EngineError::Load { device: device.to_owned(), block: desc.name.clone(), reason: e.to_string() }
        }),
        None => Err(EngineError::NoForm {
            device: device.to_owned(),
            block: desc.name.clone(),
            wanted: forms_taken(backend, policy)[0],
        }),
    }
}

/// A form that xcd-forms could not write: a fault of xcd-forms, reported as a load failure.
pub(crate) fn write_failed(device: &str, desc: &BlockDesc, e: xcd_forms::FormsError) -> EngineError {
    EngineError::Load { device: device.to_owned(), block: desc.name.clone(), reason: e.to_string() }
}
