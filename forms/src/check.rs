//! Checks a SPIR-V form against the ABI before a daemon passes it to a driver.
//!
//! A driver given SPIR-V that is malformed, or whose resources do not match the pipeline layout
//! built from the block description, may crash the process: Vulkan calls that undefined
//! behaviour. So a form is parsed and validated with naga, and its compute entry point, workgroup
//! size and bindings are compared with what the block declares.
//!
//! Validation alone does not stop a kernel from indexing past its buffers, and a program's own
//! SPIR-V need not bounds-check anything: on a CPU device (llvmpipe) such a read or write lands in
//! the daemon's own memory. So the driver is never given the program's words: [`admit_spirv`]
//! writes the parsed module out again with every buffer access bounds-checked
//! (`ReadZeroSkipWrite`) and every float operation `NoContraction`, the same as forms made here.

use naga::valid::{Capabilities, ValidationFlags, Validator};
use naga::{AddressSpace, StorageAccess};
use xcd_wire::BlockDesc;

use crate::FormsError;

/// What the block declares at one binding of group 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// Binding 0: the tile header and parameters.
    Uniform,
    /// An array: read-only or read-write storage.
    Storage {
        /// True for arrays the kernel only reads.
        read_only: bool,
    },
}

/// The bindings a block declares: the uniform, then one storage buffer per array.
pub fn bindings(desc: &BlockDesc) -> Vec<Binding> {
    std::iter::once(Binding::Uniform)
        .chain(desc.arrays.iter().map(|a| Binding::Storage { read_only: a.role.read_only() }))
        .collect()
}

/// Checks that `words` is valid SPIR-V with a compute entry point `entry` of workgroup size
/// `(workgroup, 1, 1)` whose resources all sit in group 0 at the bindings `bindings` declares.
pub fn check_spirv(words: &[u32], entry: &str, workgroup: u32, bindings: &[Binding]) -> Result<(), FormsError> {
    crate::on_big_stack(|| parse_checked(words, entry, workgroup, bindings).map(|_| ()))
}

/// Checks `words` as [`check_spirv`] does and returns the SPIR-V to give a driver: the same
/// kernel checked against the exact subset and written again by naga, bounds-checked and exact
/// (see the module's doc).
pub fn admit_spirv(words: &[u32], entry: &str, workgroup: u32, bindings: &[Binding]) -> Result<Vec<u32>, FormsError> {
    crate::on_big_stack(|| {
        let (module, _) = parse_checked(words, entry, workgroup, bindings)?;
        crate::Kernel::prepare(module, None, entry)?.spirv()
    })
}

fn parse_checked(
    words: &[u32],
    entry: &str,
    workgroup: u32,
    bindings: &[Binding],
) -> Result<(naga::Module, naga::valid::ModuleInfo), FormsError> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let options = naga::front::spv::Options { strict_capabilities: true, ..naga::front::spv::Options::default() };
    let module = crate::unpanicked("reading the SPIR-V", || {
        naga::front::spv::parse_u8_slice(&bytes, &options)
            .map_err(|e| FormsError::Invalid(format!("its SPIR-V does not read: {e}")))
    })??;
    let info = crate::unpanicked("validating the SPIR-V", || {
        Validator::new(ValidationFlags::all(), Capabilities::default())
            .validate(&module)
            .map_err(|e| FormsError::Invalid(e.into_inner().to_string()))
    })??;
    let ep = module
        .entry_points
        .iter()
        .find(|ep| ep.name == entry && ep.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| FormsError::NoEntry(entry.to_owned()))?;
    if ep.workgroup_size != [workgroup, 1, 1] {
        return Err(FormsError::Invalid(format!(
            "entry point {entry} has workgroup size {:?}; the ABI needs ({workgroup}, 1, 1)",
            ep.workgroup_size
        )));
    }
    for (_, var) in module.global_variables.iter() {
        let Some(at) = &var.binding else { continue };
        let declared = (at.group == 0).then(|| bindings.get(at.binding as usize)).flatten().ok_or_else(|| {
            FormsError::Invalid(format!(
                "the form binds group {} binding {}, which the block does not declare",
                at.group, at.binding
            ))
        })?;
        let matches = match (declared, var.space) {
            (Binding::Uniform, AddressSpace::Uniform) => true,
            (Binding::Storage { read_only }, AddressSpace::Storage { access }) => {
                *read_only != access.contains(StorageAccess::STORE)
            }
            _ => false,
        };
        if !matches {
            return Err(FormsError::Invalid(format!(
                "binding {} is {:?} in the form and {declared:?} in the block",
                at.binding, var.space
            )));
        }
    }
    Ok((module, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn k(@builtin(global_invocation_id) gid: vec3<u32>) { let i = tile.first + gid.x; if (i >= tile.count) { return; } y[i] = x[i]; }
"#;

    const RIGHT: [Binding; 3] =
        [Binding::Uniform, Binding::Storage { read_only: true }, Binding::Storage { read_only: false }];

    #[test]
    fn made_forms_pass() {
        let forms = crate::make_forms(KERNEL, "k").expect("forms");
        check_spirv(&forms.spirv, "k", 64, &RIGHT).expect("the made form checks");
    }

    #[test]
    fn wrong_bindings_entry_and_garbage_are_refused() {
        let forms = crate::make_forms(KERNEL, "k").expect("forms");
        let writable_input =
            [Binding::Uniform, Binding::Storage { read_only: false }, Binding::Storage { read_only: false }];
        assert!(check_spirv(&forms.spirv, "k", 64, &writable_input).is_err());
        assert!(check_spirv(&forms.spirv, "k", 64, &RIGHT[..2]).is_err(), "an undeclared binding");
        assert!(check_spirv(&forms.spirv, "main", 64, &RIGHT).is_err());
        assert!(check_spirv(&forms.spirv, "k", 32, &RIGHT).is_err());
        assert!(check_spirv(&[0x0723_0203, 1, 2, 3], "k", 64, &RIGHT).is_err());
        assert!(check_spirv(&[], "k", 64, &RIGHT).is_err());
        let mut cut = forms.spirv.clone();
        cut.truncate(cut.len() / 2);
        assert!(check_spirv(&cut, "k", 64, &RIGHT).is_err());
    }
}
