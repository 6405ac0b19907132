//! Makes every kernel form of a block from its WGSL source, so that each gives the same bits.
//!
//! Owns the translation WGSL → SPIR-V and WGSL → MSL (with naga) and the pass that makes float
//! arithmetic exact in SPIR-V ([`no_contraction`]). It runs at build time (from a `build.rs`) and
//! must not touch devices, the network or the runtime: it only turns text into forms.
//!
//! Why the pass exists: WGSL lets an implementation reassociate and fuse float operations, and
//! Mesa's llvmpipe does (it turns `x*x - y*y + cx` into `(x*x + cx) - y*y`), so a naive SPIR-V
//! form gives different answers from the CPU. Decorating the result of every float arithmetic
//! instruction `NoContraction` forbids that; the daemon loads such SPIR-V by passthrough, so no
//! later translation strips the decorations.
#![forbid(unsafe_code)]

mod check;
mod spirv;

pub use check::{Binding, admit_spirv, bindings, check_spirv};
pub use spirv::{FLOAT_ARITHMETIC_OPCODES, no_contraction};

use naga::back::{msl, spv};
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// The forms made from one WGSL kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeForms {
    /// SPIR-V 1.0 words, every float operation decorated `NoContraction`.
    pub spirv: Vec<u32>,
    /// Metal Shading Language 2.4 source, to be compiled with fast math off.
    pub msl: String,
}

/// Why a WGSL kernel could not be turned into forms.
#[derive(Debug, thiserror::Error)]
pub enum FormsError {
    /// The WGSL does not parse.
    #[error("the WGSL does not parse: {0}")]
    Parse(String),
    /// The WGSL parses but is not a valid module.
    #[error("the WGSL is not valid: {0}")]
    Invalid(String),
    /// The entry point is missing.
    #[error("the WGSL has no compute entry point named {0}")]
    NoEntry(String),
    /// naga failed to write SPIR-V.
    #[error("writing SPIR-V failed: {0}")]
    Spirv(String),
    /// naga failed to write MSL.
    #[error("writing MSL failed: {0}")]
    Msl(String),
    /// naga itself failed (panicked) on this input: a bug in naga, reported as a refusal.
    #[error("{0} failed inside naga (a bug there, not in the kernel): change the kernel, and report the kernel to xcd")]
    Reader(&'static str),
}

/// Runs a naga step on input from the network, turning a panic inside naga into a refusal: the
/// daemon loads forms on a device's thread, where a panic would take the device out of service.
fn unpanicked<T>(what: &'static str, step: impl FnOnce() -> T) -> Result<T, FormsError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).map_err(|_| FormsError::Reader(what))
}

/// Out-of-range reads give zero and out-of-range writes are dropped, in every form, so a kernel
/// with an indexing bug can never touch memory outside its buffers on a daemon.
fn bounds_checks() -> BoundsCheckPolicies {
    BoundsCheckPolicies {
        index: BoundsCheckPolicy::ReadZeroSkipWrite,
        buffer: BoundsCheckPolicy::ReadZeroSkipWrite,
        ..BoundsCheckPolicies::default()
    }
}

/// Parses and validates `wgsl`, then writes its SPIR-V and MSL forms for entry point `entry`.
pub fn make_forms(wgsl: &str, entry: &str) -> Result<MadeForms, FormsError> {
    let module = unpanicked("reading the WGSL", || {
        naga::front::wgsl::parse_str(wgsl).map_err(|e| FormsError::Parse(e.emit_to_string(wgsl)))
    })??;
    let info = unpanicked("validating the WGSL", || {
        Validator::new(ValidationFlags::all(), Capabilities::default())
            .validate(&module)
            .map_err(|e| FormsError::Invalid(e.emit_to_string(wgsl)))
    })??;
    if !module.entry_points.iter().any(|ep| ep.name == entry && ep.stage == naga::ShaderStage::Compute) {
        return Err(FormsError::NoEntry(entry.to_owned()));
    }

    let spirv = write_spirv(&module, &info, entry)?;

    let msl_options =
        msl::Options { lang_version: (2, 4), bounds_check_policies: bounds_checks(), ..msl::Options::default() };
    let msl_pipeline = msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, entry.to_owned())),
        ..msl::PipelineOptions::default()
    };
    let (msl, _) = unpanicked("writing MSL", || msl::write_string(&module, &info, &msl_options, &msl_pipeline))?
        .map_err(|e| FormsError::Msl(e.to_string()))?;
    Ok(MadeForms { spirv, msl })
}

/// Writes a validated module's SPIR-V for `entry`: bounds-checked, every float operation exact.
fn write_spirv(module: &naga::Module, info: &naga::valid::ModuleInfo, entry: &str) -> Result<Vec<u32>, FormsError> {
    let spv_options = spv::Options {
        lang_version: (1, 0),
        // No debug names: the same source gives the same words in debug and release builds.
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: bounds_checks(),
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: entry.to_owned() };
    let mut spirv = unpanicked("writing SPIR-V", || spv::write_vec(module, info, &spv_options, Some(&pipeline)))?
        .map_err(|e| FormsError::Spirv(e.to_string()))?;
    no_contraction(&mut spirv);
    Ok(spirv)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = r#"
struct Tile { start: u32, count: u32, first: u32, a: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = tile.a * x[i] + y[i] - x[i] / 3.0;
}
"#;

    #[test]
    fn every_float_operation_is_decorated() {
        let forms = make_forms(KERNEL, "main").expect("kernel makes forms");
        let (ops, decorated) = spirv::count_float_ops_and_decorations(&forms.spirv);
        assert!(ops >= 4, "expected the kernel's float operations, found {ops}");
        assert_eq!(ops, decorated);
        assert!(forms.msl.contains("kernel void main_"));
    }

    #[test]
    fn forms_are_deterministic() {
        assert_eq!(make_forms(KERNEL, "main").ok(), make_forms(KERNEL, "main").ok());
    }

    #[test]
    fn bad_sources_say_why() {
        assert!(matches!(make_forms("fn (", "main"), Err(FormsError::Parse(_))));
        assert!(matches!(make_forms(KERNEL, "other"), Err(FormsError::NoEntry(_))));
    }
}
