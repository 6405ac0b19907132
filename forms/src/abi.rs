//! The kernel ABI as a module must follow it (docs/kernels.md), and the interface read from it.
//!
//! [`interface`] reads what a kernel binds (the uniform's parameters after the tile header, the
//! storage arrays in binding order) and refuses a module that breaks the ABI, saying how: a
//! missing tile header, a binding out of order, a parameter that is not one 32-bit word.
//! [`Interface::check_against`] compares it with a block description, so a daemon never loads a
//! kernel whose bindings differ from the pipeline it builds for the block.
//!
//! It reads the module only; it makes no form.

use naga::{AddressSpace, Module, ScalarKind, StorageAccess, TypeInner};
use xcd_wire::block::MAX_PARAMS;
use xcd_wire::{BlockDesc, ParamKind, TILE_HEADER_WORDS, WORKGROUP_SIZE};

use crate::FormsError;
use crate::subset::{Location, locate};

/// One storage array a kernel binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayBinding {
    /// The variable's name in the source.
    pub name: String,
    /// True for `var<storage, read>`.
    pub read_only: bool,
    /// Bytes from one element to the next.
    pub stride: u32,
    /// True when some function of the kernel loads from the array (for a `read_write` array:
    /// the block reads it as well as writing it).
    pub loaded: bool,
    /// The 1-based source line of its declaration, where the source is text.
    pub line: Option<u32>,
}

/// What a kernel binds, read from its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// The parameters after the tile header, with their names.
    pub params: Vec<(String, ParamKind)>,
    /// The arrays, in binding order (binding 1 onwards).
    pub arrays: Vec<ArrayBinding>,
}

fn abi(at: Option<crate::Location>, what: String) -> FormsError {
    FormsError::Abi { at, what }
}

/// Reads the interface of entry point `entry`, refusing a module that breaks the ABI.
pub fn interface(module: &Module, entry: &str, source: Option<&str>) -> Result<Interface, FormsError> {
    check_entry(module, entry)?;
    let (uniform, mut storage) = globals(module, source)?;
    let params = uniform_params(module, uniform)?;
    storage.sort_by_key(|(b, ..)| *b);
    let mut arrays = Vec::new();
    for (k, (binding, handle, var, access, at, name)) in storage.into_iter().enumerate() {
        if binding as usize != k + 1 {
            return Err(abi(
                at,
                format!(
                    "{name} is at @binding({binding}), but arrays bind in order from @binding(1) with no gaps: it should be @binding({})",
                    k + 1
                ),
            ));
        }
        // SPIR-V wraps a storage array in a struct of one member; WGSL binds the array itself.
        let ty = match module.types[var.ty].inner {
            TypeInner::Struct { ref members, .. } if members.len() == 1 => &module.types[members[0].ty].inner,
            ref other => other,
        };
        let TypeInner::Array { size: naga::ArraySize::Dynamic, stride, .. } = *ty else {
            return Err(abi(at, format!("{name} must be a runtime-sized array, var<storage> {name}: array<T>")));
        };
        let loaded = loads_from(module, handle);
        let line = at.map(|a| a.line);
        arrays.push(ArrayBinding { name, read_only: !access.contains(StorageAccess::STORE), stride, loaded, line });
    }
    Ok(Interface { params, arrays })
}

/// A binding of the ABI's arrays: its binding number, variable, access, place and name.
type Storage<'m> =
    (u32, naga::Handle<naga::GlobalVariable>, &'m naga::GlobalVariable, StorageAccess, Option<Location>, String);

/// The module's uniform (at @binding(0), with its place) and storage arrays, each checked
/// against the ABI's layout: everything in @group(0), one uniform at binding 0, arrays after it.
#[allow(clippy::type_complexity)]
fn globals<'m>(
    module: &'m Module,
    source: Option<&str>,
) -> Result<(Option<(&'m naga::GlobalVariable, Option<Location>)>, Vec<Storage<'m>>), FormsError> {
    let mut uniform = None;
    let mut storage = Vec::new();
    for (handle, var) in module.global_variables.iter() {
        let at = locate(module.global_variables.get_span(handle), source);
        let name = var.name.clone().unwrap_or_else(|| "an unnamed variable".into());
        let Some(binding) = &var.binding else { continue };
        if binding.group != 0 {
            return Err(abi(
                at,
                format!("{name} is in @group({}); the ABI binds everything in @group(0)", binding.group),
            ));
        }
        match var.space {
            AddressSpace::Uniform if binding.binding == 0 => uniform = Some((var, at)),
            AddressSpace::Uniform => {
                return Err(abi(
                    at,
                    format!("{name} is a second uniform; the only uniform is the tile header at @binding(0)"),
                ));
            }
            AddressSpace::Storage { access } if binding.binding > 0 => {
                storage.push((binding.binding, handle, var, access, at, name));
            }
            _ => {
                return Err(abi(
                    at,
                    format!(
                        "@binding({}) is {name}; binding 0 is the uniform tile header and arrays follow from 1",
                        binding.binding
                    ),
                ));
            }
        }
    }
    Ok((uniform, storage))
}

/// Checks the entry point: a compute shader of the ABI's workgroup size whose one argument is
/// the global invocation id.
fn check_entry(module: &Module, entry: &str) -> Result<(), FormsError> {
    let ep = module
        .entry_points
        .iter()
        .find(|ep| ep.name == entry && ep.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| FormsError::NoEntry(entry.to_owned()))?;
    if ep.workgroup_size != [WORKGROUP_SIZE, 1, 1] {
        return Err(abi(
            None,
            format!(
                "entry point {entry} has @workgroup_size{:?}; the ABI needs @workgroup_size({WORKGROUP_SIZE})",
                ep.workgroup_size
            ),
        ));
    }
    for arg in &ep.function.arguments {
        let gid = matches!(arg.binding, Some(naga::Binding::BuiltIn(naga::BuiltIn::GlobalInvocationId)));
        let vec3u = matches!(
            module.types[arg.ty].inner,
            TypeInner::Vector { size: naga::VectorSize::Tri, scalar } if scalar.kind == ScalarKind::Uint
        );
        if !gid || !vec3u {
            return Err(abi(
                None,
                format!(
                    "entry point {entry} takes an argument other than @builtin(global_invocation_id) gid: vec3<u32>"
                ),
            ));
        }
    }
    Ok(())
}

/// Whether any function of the module loads through a pointer into global `g`.
fn loads_from(module: &Module, g: naga::Handle<naga::GlobalVariable>) -> bool {
    let functions = module.functions.iter().map(|(_, f)| f).chain(module.entry_points.iter().map(|ep| &ep.function));
    functions.into_iter().any(|fun| {
        fun.expressions.iter().any(|(_, e)| {
            let naga::Expression::Load { pointer } = *e else { return false };
            let mut at = pointer;
            loop {
                match fun.expressions[at] {
                    naga::Expression::Access { base, .. } | naga::Expression::AccessIndex { base, .. } => at = base,
                    naga::Expression::GlobalVariable(v) => return v == g,
                    _ => return false,
                }
            }
        })
    })
}

/// The parameters a uniform tile header declares after `start`, `count` and `first`.
fn uniform_params(
    module: &Module,
    uniform: Option<(&naga::GlobalVariable, Option<crate::Location>)>,
) -> Result<Vec<(String, ParamKind)>, FormsError> {
    const HEADER: &str = "the ABI needs var<uniform> at @binding(0) holding a struct that starts with start: u32, count: u32, first: u32 (the tile header), then the block's parameters";
    let Some((var, at)) = uniform else { return Err(abi(None, format!("a missing tile header: {HEADER}"))) };
    let TypeInner::Struct { ref members, .. } = module.types[var.ty].inner else {
        return Err(abi(at, format!("the uniform is not a struct: {HEADER}")));
    };
    // SPIR-V wraps the uniform struct in a block struct of one member.
    let members = match members.as_slice() {
        [only] => match module.types[only.ty].inner {
            TypeInner::Struct { ref members, .. } => members,
            _ => members,
        },
        _ => members,
    };
    let mut params = Vec::new();
    for (i, member) in members.iter().enumerate() {
        let name = member.name.clone().unwrap_or_else(|| format!("member {i}"));
        let kind = match module.types[member.ty].inner {
            TypeInner::Scalar(s) if s.width == 4 => match s.kind {
                ScalarKind::Uint => ParamKind::U32,
                ScalarKind::Sint => ParamKind::I32,
                ScalarKind::Float => ParamKind::F32,
                _ => return Err(abi(at, format!("uniform field {name} is not one 32-bit word (u32, i32 or f32)"))),
            },
            _ => return Err(abi(at, format!("uniform field {name} is not one 32-bit word (u32, i32 or f32)"))),
        };
        if i < TILE_HEADER_WORDS {
            if kind != ParamKind::U32 {
                return Err(abi(at, format!("a broken tile header: field {i} ({name}) is not u32; {HEADER}")));
            }
            continue;
        }
        params.push((name, kind));
    }
    if members.len() < TILE_HEADER_WORDS {
        return Err(abi(at, format!("a missing tile header: the uniform has {} fields; {HEADER}", members.len())));
    }
    if params.len() > MAX_PARAMS {
        return Err(abi(at, format!("{} parameters; at most {MAX_PARAMS} fit the uniform", params.len())));
    }
    Ok(params)
}

impl Interface {
    /// Checks that a block description declares exactly what the kernel binds.
    pub fn check_against(&self, desc: &BlockDesc) -> Result<(), FormsError> {
        let refuse = |what: String| Err(FormsError::Mismatch(what));
        if self.params.len() != desc.params.len() {
            return refuse(format!(
                "the kernel's uniform declares {} parameters after the tile header, the block {}",
                self.params.len(),
                desc.params.len()
            ));
        }
        for ((name, kind), spec) in self.params.iter().zip(&desc.params) {
            if *kind != spec.kind {
                return refuse(format!(
                    "parameter {} is {} in the block and {name}: {} in the kernel",
                    spec.name,
                    kind_name(spec.kind),
                    kind_name(*kind)
                ));
            }
        }
        if self.arrays.len() != desc.arrays.len() {
            return refuse(format!(
                "the kernel binds {} arrays, the block declares {}",
                self.arrays.len(),
                desc.arrays.len()
            ));
        }
        for (k, (array, spec)) in self.arrays.iter().zip(&desc.arrays).enumerate() {
            let binding = k + 1;
            if array.read_only != spec.role.read_only() {
                let (kernel, block) = if array.read_only { ("read", "written") } else { ("read_write", "read-only") };
                return refuse(format!(
                    "@binding({binding}) {} is var<storage, {kernel}> in the kernel and array {} is {block} in the block",
                    array.name, spec.name
                ));
            }
            if array.stride != spec.elem_size {
                return refuse(format!(
                    "@binding({binding}) {} has elements of {} bytes in the kernel and array {} of {} bytes in the block",
                    array.name, array.stride, spec.name, spec.elem_size
                ));
            }
        }
        Ok(())
    }
}

fn kind_name(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::U32 => "u32",
        ParamKind::I32 => "i32",
        ParamKind::F32 => "f32",
    }
}
