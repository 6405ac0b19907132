//! Which form of a block a device loads, and where it comes from.
//!
//! By default ([`FormPolicy::Remake`]) a device makes its own form from the block's WGSL (or,
//! when a block carries no WGSL, from its SPIR-V, parsed and written again) with xcd-forms: a
//! driver never receives a program's own SPIR-V, PTX or MSL words, every buffer access is
//! bounds-checked, and the arithmetic is exact. [`FormPolicy::Trust`] (`xcd -trust-forms`) loads
//! a carried form of the device's own kind as sent, which skips that work and that protection
//! (docs/security.md). This module decides; the backends load.

use xcd_wire::{BackendKind, BlockDesc, FormKind, Forms};

use crate::EngineError;

/// How a device gets its form of a block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FormPolicy {
    /// Make the form from the block's WGSL (or SPIR-V) with xcd-forms. The default.
    #[default]
    Remake,
    /// Load the block's own form of the device's kind as sent, when it carries one.
    Trust,
}

/// The form a device of this backend loads as sent under [`FormPolicy::Trust`].
pub fn native_form(backend: BackendKind) -> FormKind {
    match backend {
        BackendKind::Cuda => FormKind::Ptx,
        BackendKind::Vulkan => FormKind::Spirv,
        BackendKind::Metal => FormKind::Msl,
        BackendKind::Dx12 => FormKind::Wgsl,
    }
}

/// The forms a device of this backend takes under `policy`, best first.
pub fn forms_taken(backend: BackendKind, policy: FormPolicy) -> Vec<FormKind> {
    let mut kinds = Vec::new();
    if policy == FormPolicy::Trust {
        kinds.push(native_form(backend));
    }
    for kind in [FormKind::Wgsl, FormKind::Spirv] {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// The form a device of this backend would start from, given the forms a block carries.
pub fn form_for(backend: BackendKind, forms: &Forms, policy: FormPolicy) -> Option<FormKind> {
    let carried = forms.kinds();
    forms_taken(backend, policy).into_iter().find(|k| carried.contains(k))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_takes_wgsl_and_only_trust_takes_carried_native_forms() {
        let ptx_only = Forms { ptx: Some("// ptx".into()), ..Forms::default() };
        let wgsl_only = Forms { wgsl: Some("// wgsl".into()), ..Forms::default() };
        for backend in [BackendKind::Cuda, BackendKind::Vulkan, BackendKind::Metal, BackendKind::Dx12] {
            assert_eq!(form_for(backend, &wgsl_only, FormPolicy::Remake), Some(FormKind::Wgsl));
            assert_eq!(form_for(backend, &wgsl_only, FormPolicy::Trust), Some(FormKind::Wgsl));
        }
        assert_eq!(form_for(BackendKind::Cuda, &ptx_only, FormPolicy::Remake), None);
        assert_eq!(form_for(BackendKind::Cuda, &ptx_only, FormPolicy::Trust), Some(FormKind::Ptx));
        assert_eq!(form_for(BackendKind::Vulkan, &ptx_only, FormPolicy::Trust), None);
        assert_eq!(forms_taken(BackendKind::Cuda, FormPolicy::Remake), vec![FormKind::Wgsl, FormKind::Spirv]);
    }
}
