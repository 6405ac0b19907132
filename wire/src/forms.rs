//! The kernel forms a block carries: one per kind of GPU API.
//!
//! WGSL is the one source; SPIR-V, MSL and PTX are made from it by the `xcd-forms` crate (naga,
//! and our own PTX writer), at build time for programs. A daemon makes its own GPU's form from a
//! block's WGSL (or SPIR-V) again, so the other forms a block carries are used only where the
//! operator trusts them (`xcd -trust-forms`): the [`FormPolicy`], and which form a device of
//! each backend takes under it ([`form_for`]), which a program reads to tell what a daemon's
//! device would load.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::BackendKind;

/// Every form of one kernel. A block built for every device carries all four.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Forms {
    /// WGSL source, the form all others are made from.
    pub wgsl: Option<String>,
    /// SPIR-V words, every float operation decorated `NoContraction`.
    pub spirv: Option<Vec<u32>>,
    /// Metal Shading Language source, asking for safe math.
    pub msl: Option<String>,
    /// PTX assembly for sm_60 and later: `.rn` on every float operation, no FMA, no `.ftz`.
    pub ptx: Option<String>,
}

/// The kinds of kernel form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FormKind {
    /// WGSL source.
    Wgsl,
    /// SPIR-V binary.
    Spirv,
    /// Metal Shading Language source.
    Msl,
    /// NVIDIA PTX assembly.
    Ptx,
}

impl Forms {
    /// The kinds of form present, in a fixed order.
    pub fn kinds(&self) -> Vec<FormKind> {
        let mut kinds = Vec::new();
        if self.wgsl.is_some() {
            kinds.push(FormKind::Wgsl);
        }
        if self.spirv.is_some() {
            kinds.push(FormKind::Spirv);
        }
        if self.msl.is_some() {
            kinds.push(FormKind::Msl);
        }
        if self.ptx.is_some() {
            kinds.push(FormKind::Ptx);
        }
        kinds
    }
}

impl fmt::Display for FormKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FormKind::Wgsl => "WGSL",
            FormKind::Spirv => "SPIR-V",
            FormKind::Msl => "MSL",
            FormKind::Ptx => "PTX",
        })
    }
}

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
