//! The kernel forms a block carries: one per kind of GPU API.
//!
//! WGSL is the one source; SPIR-V, MSL and PTX are made from it by the `xcd-forms` crate (naga,
//! and our own PTX writer), at build time for programs. A daemon makes its own GPU's form from a
//! block's WGSL (or SPIR-V) again, so the other forms a block carries are used only where the
//! operator trusts them (`xcd -trust-forms`).

use std::fmt;

use serde::{Deserialize, Serialize};

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
