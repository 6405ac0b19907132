//! The CPU form as Rust source, written from naga's IR: the same kernel the GPU forms are made
//! from, so a tile gives the same bits on a CPU core.
//!
//! The module has passed the subset check and the exactness pass, so this writer meets only
//! u32, i32, f32 and bool values (in scalars, vectors, fixed arrays and structs), storage and
//! uniform access, locals, structured control flow and calls. Rust rounds every f32 operation
//! on its own and never fuses a multiply and an add, so the arithmetic is the kernel's as
//! written, but for one thing: a call of the math library calls its f64 fast path first
//! (`xcd_runtime::cpumath`, given as `native`), and the library's WGSL only where that says
//! `None`; both are correctly rounded, so the bits are the same; what Rust would do differently from WGSL is spelled out: integer arithmetic wraps,
//! division by zero gives the dividend (and `MIN / -1` gives `MIN`), float-to-integer
//! conversion clamps to naga's range, and every access through a computed index is checked as
//! naga's `ReadZeroSkipWrite` checks it (a read past the end gives zero, a write is dropped).
//!
//! What it writes (the items of one module, which `xcd-build` writes to `xcd-build/NAME.rs` and
//! includes in `pub mod NAME`): one Rust
//! struct per WGSL struct, `XcCtx` (the uniform's value, the tile's arrays as slices, the
//! `var<private>` values), one function per WGSL function, `xc_item` (the entry's body for one
//! item) and `pub fn cpu(&mut xcd_runtime::CpuTile)`, which runs every item of a tile.
//!
//! Layout: this file holds names, types and the module's frame; `expr` writes expressions and
//! `flow` statements. It reads the module only and touches no device.

mod expr;
mod flow;
mod frame;

use std::collections::HashSet;
use std::fmt::Write as _;

use naga::{Handle, Module, ScalarKind, Type, TypeInner};

use crate::FormsError;

pub(crate) fn internal(what: impl std::fmt::Display) -> FormsError {
    FormsError::Internal(format!("the Rust writer met {what}"))
}

/// Words Rust reserves: a WGSL name equal to one gets a trailing underscore.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract",
    "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
    "union", "Some", "None", "Ok", "Err", "Option", "Result", "Default", "Copy", "Clone", "Debug", "Send",
];

/// A Rust identifier for a WGSL name: the name itself where Rust can take it, else `fallback`.
/// Names of this writer's own items start with `xc`, so a WGSL name that does gets a suffix.
pub fn ident(name: Option<&str>, fallback: String) -> String {
    let Some(name) = name else { return fallback };
    let ascii = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name != "_";
    if !ascii {
        return fallback;
    }
    if KEYWORDS.contains(&name) || name.starts_with("xc") { format!("{name}_") } else { name.to_owned() }
}

/// The text being written.
pub(crate) struct Writer<'m> {
    pub(crate) module: &'m Module,
    pub(crate) out: String,
    pub(crate) indent: usize,
    /// The Rust name of each WGSL struct type.
    struct_names: Vec<(Handle<Type>, String)>,
    /// The Rust name of each WGSL function.
    pub(crate) fn_names: Vec<String>,
    /// For each storage binding (binding - 1): its global variable.
    pub(crate) arrays: Vec<Handle<naga::GlobalVariable>>,
    /// The uniform's global variable.
    pub(crate) uniform: Option<Handle<naga::GlobalVariable>>,
    /// The `var<private>` globals, in order.
    pub(crate) privates: Vec<Handle<naga::GlobalVariable>>,
    /// The math library's functions to call natively first: each function's handle and the
    /// Rust path of its fast path, which returns `Option<f32>` (`None`: call the WGSL's).
    pub(crate) native: &'m [(Handle<naga::Function>, &'static str)],
}

impl Writer<'_> {
    /// Writes one line at the current indent.
    pub(crate) fn line(&mut self, text: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text.as_ref());
        self.out.push('\n');
    }

    /// The Rust type of a scalar.
    pub(crate) fn scalar(kind: ScalarKind) -> &'static str {
        match kind {
            ScalarKind::Float => "f32",
            ScalarKind::Sint => "i32",
            ScalarKind::Bool => "bool",
            _ => "u32",
        }
    }

    /// The Rust type of a type.
    pub(crate) fn ty(&self, h: Handle<Type>) -> Result<String, FormsError> {
        if let Some((_, name)) = self.struct_names.iter().find(|(t, _)| *t == h) {
            return Ok(name.clone());
        }
        self.inner(&self.module.types[h].inner)
    }

    /// The Rust type of a type given by value (no structs, which always have handles).
    pub(crate) fn inner(&self, inner: &TypeInner) -> Result<String, FormsError> {
        Ok(match *inner {
            TypeInner::Scalar(s) => Self::scalar(s.kind).to_owned(),
            TypeInner::Vector { size, scalar } => format!("[{}; {}]", Self::scalar(scalar.kind), size as u32),
            TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } => format!("[{}; {n}]", self.ty(base)?),
            TypeInner::Array { base, size: naga::ArraySize::Dynamic, .. } => format!("[{}]", self.ty(base)?),
            ref other => return Err(internal(format!("the type {other:?}"))),
        })
    }

    /// The zero value of a type, as Rust.
    pub(crate) fn zero(&self, h: Handle<Type>) -> Result<String, FormsError> {
        if let TypeInner::Struct { ref members, .. } = self.module.types[h].inner {
            let name = self.ty(h)?;
            let mut fields = Vec::new();
            for (k, m) in members.iter().enumerate() {
                fields.push(format!("{}: {}", member_name(m, k), self.zero(m.ty)?));
            }
            return Ok(format!("{name} {{ {} }}", fields.join(", ")));
        }
        self.zero_inner(&self.module.types[h].inner)
    }

    pub(crate) fn zero_inner(&self, inner: &TypeInner) -> Result<String, FormsError> {
        Ok(match *inner {
            TypeInner::Scalar(s) => zero_scalar(s.kind).to_owned(),
            TypeInner::Vector { size, scalar } => format!("[{}; {}]", zero_scalar(scalar.kind), size as u32),
            TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } => format!("[{}; {n}]", self.zero(base)?),
            ref other => return Err(internal(format!("a zero of {other:?}"))),
        })
    }
}

fn zero_scalar(kind: ScalarKind) -> &'static str {
    match kind {
        ScalarKind::Float => "0.0f32",
        ScalarKind::Sint => "0i32",
        ScalarKind::Bool => "false",
        _ => "0u32",
    }
}

/// The Rust name of a struct member.
pub(crate) fn member_name(m: &naga::StructMember, k: usize) -> String {
    ident(m.name.as_deref(), format!("m{k}"))
}

/// Writes the CPU form of entry point `entry` of a checked, exact module: the items described
/// in the module's doc, for `pub mod NAME { ... }`.
/// `per_item[k]` says whether array `k` is per-item (sliced to the tile: exactly `count` long)
/// rather than whole; knowing the length lets the compiler drop the checks of `i < count`.
/// `native` names the math library's functions with a fast path in the runtime (a path to a
/// `fn(f32) -> Option<f32>`): a call of one calls that first, and the WGSL's on `None`.
pub fn write(
    module: &Module,
    entry: &str,
    per_item: &[bool],
    native: &[(Handle<naga::Function>, &'static str)],
) -> Result<String, FormsError> {
    let ep = module
        .entry_points
        .iter()
        .find(|ep| ep.name == entry && ep.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| FormsError::NoEntry(entry.to_owned()))?;
    let mut w = Writer::new(module, native);
    w.structs()?;
    w.context()?;
    w.helpers()?;
    for (h, fun) in module.functions.iter() {
        flow::function(&mut w, fun, Some(h))?;
    }
    flow::function(&mut w, &ep.function, None)?;
    w.cpu(per_item)?;
    Ok(w.out)
}

/// The Rust element type of each storage array of a checked module, in binding order.
pub fn array_types(module: &Module) -> Result<Vec<String>, FormsError> {
    let w = Writer::new(module, &[]);
    (0..w.arrays.len()).map(|k| w.array_elem(k).map(|(elem, _)| elem)).collect()
}

impl<'m> Writer<'m> {
    /// A writer for `module`, its items named.
    fn new(module: &'m Module, native: &'m [(Handle<naga::Function>, &'static str)]) -> Self {
        let mut w = Writer {
            module,
            out: String::new(),
            indent: 0,
            struct_names: Vec::new(),
            fn_names: Vec::new(),
            arrays: Vec::new(),
            uniform: None,
            privates: Vec::new(),
            native,
        };
        w.name_items();
        w
    }

    fn name_items(&mut self) {
        let mut taken: HashSet<String> = ["XcCtx".to_owned()].into();
        for (h, ty) in self.module.types.iter() {
            if let TypeInner::Struct { .. } = ty.inner {
                let mut name = ident(ty.name.as_deref(), format!("XcStruct{}", h.index()));
                if taken.contains(&name) {
                    name = format!("{name}{}", h.index());
                }
                taken.insert(name.clone());
                self.struct_names.push((h, name));
            }
        }
        // Two functions may share a name (SPIR-V allows it, and `ident` maps some names alike):
        // the later one gets its index too.
        let mut fn_taken = HashSet::new();
        for (h, fun) in self.module.functions.iter() {
            let mut name = format!("xc_fn_{}", ident(fun.name.as_deref(), format!("{}", h.index())));
            while fn_taken.contains(&name) {
                name = format!("{name}_{}", h.index());
            }
            fn_taken.insert(name.clone());
            self.fn_names.push(name);
        }
        let mut storage = Vec::new();
        for (h, var) in self.module.global_variables.iter() {
            match (var.space, &var.binding) {
                (naga::AddressSpace::Uniform, Some(_)) => self.uniform = Some(h),
                (naga::AddressSpace::Storage { .. }, Some(b)) => storage.push((b.binding, h)),
                (naga::AddressSpace::Private, _) => self.privates.push(h),
                _ => {}
            }
        }
        storage.sort_by_key(|(b, _)| *b);
        self.arrays = storage.into_iter().map(|(_, h)| h).collect();
    }

    fn structs(&mut self) -> Result<(), FormsError> {
        let module = self.module;
        for (h, name) in self.struct_names.clone() {
            let TypeInner::Struct { ref members, .. } = module.types[h].inner else { continue };
            if let Some(wgsl) = &module.types[h].name {
                self.line(format!("/// WGSL `struct {wgsl}`."));
            }
            self.line("#[derive(Clone, Copy, Debug, PartialEq)]");
            self.line(format!("struct {name} {{"));
            for (k, m) in members.iter().enumerate() {
                let ty = self.ty(m.ty)?;
                self.line(format!("    {}: {ty},", member_name(m, k)));
            }
            self.line("}");
            self.line("");
        }
        Ok(())
    }

    /// The Rust element type of storage binding `k` (binding k + 1) and whether it is written.
    pub(crate) fn array_elem(&self, k: usize) -> Result<(String, bool), FormsError> {
        let var = &self.module.global_variables[self.arrays[k]];
        let written =
            matches!(var.space, naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE));
        let TypeInner::Array { base, .. } = self.module.types[var.ty].inner else {
            return Err(internal("a storage binding that is not an array"));
        };
        let elem = match self.module.types[base].inner {
            ref inner @ TypeInner::Scalar(s) if s.kind != ScalarKind::Bool => self.inner(inner)?,
            ref inner @ TypeInner::Vector { size: naga::VectorSize::Bi | naga::VectorSize::Quad, scalar }
                if scalar.kind != ScalarKind::Bool =>
            {
                self.inner(inner)?
            }
            _ => {
                let name = var.name.clone().unwrap_or_default();
                return Err(FormsError::Unsupported {
                    at: None,
                    construct: format!("the storage array {name} of {}", self.ty(base)?),
                    why: "the CPU form reads arrays of u32, i32 or f32, or of vec2 or vec4 of them".into(),
                });
            }
        };
        Ok((elem, written))
    }

    fn context(&mut self) -> Result<(), FormsError> {
        self.line("/// What every item of a tile sees: the uniform, the arrays, the private variables.");
        self.line("struct XcCtx<'t> {");
        if let Some(u) = self.uniform {
            let ty = self.ty(self.module.global_variables[u].ty)?;
            self.line(format!("    u: {ty},"));
        }
        for k in 0..self.arrays.len() {
            let (elem, written) = self.array_elem(k)?;
            let name = self.module.global_variables[self.arrays[k]].name.clone().unwrap_or_default();
            let m = if written { "mut " } else { "" };
            self.line(format!("    /// `{name}`, @binding({}).", k + 1));
            self.line(format!("    a{k}: &'t {m}[{elem}],"));
        }
        for (k, &p) in self.privates.clone().iter().enumerate() {
            let ty = self.ty(self.module.global_variables[p].ty)?;
            self.line(format!("    p{k}: {ty},"));
        }
        if self.arrays.is_empty() {
            self.line("    _tile: std::marker::PhantomData<&'t ()>,");
        }
        self.line("}");
        self.line("");
        Ok(())
    }

    /// The operations whose WGSL meaning Rust spells differently, as small functions.
    fn helpers(&mut self) -> Result<(), FormsError> {
        self.out.push_str(HELPERS);
        self.line("");
        Ok(())
    }

    fn cpu(&mut self, per_item: &[bool]) -> Result<(), FormsError> {
        let module = self.module;
        self.line("/// The CPU form: runs every item of one tile, as the GPU forms do.");
        self.line("pub fn cpu(t: &mut ::xcd_runtime::CpuTile<'_>) {");
        self.indent += 1;
        self.line("let count = t.tile.count;");
        let mut fields = Vec::new();
        if let Some(u) = self.uniform {
            let ty = module.global_variables[u].ty;
            let TypeInner::Struct { ref members, .. } = module.types[ty].inner else {
                return Err(internal("a uniform that is not a struct"));
            };
            let mut words = Vec::new();
            for (k, m) in members.iter().enumerate() {
                let value = match k {
                    0 => "t.tile.start".to_owned(),
                    1 => "count".to_owned(),
                    2 => "0".to_owned(),
                    _ => {
                        let p = k - xcd_wire::TILE_HEADER_WORDS;
                        match module.types[m.ty].inner {
                            TypeInner::Scalar(s) if s.kind == ScalarKind::Float => format!("t.param_f32({p})"),
                            TypeInner::Scalar(s) if s.kind == ScalarKind::Sint => format!("t.param_i32({p})"),
                            _ => format!("t.param_u32({p})"),
                        }
                    }
                };
                words.push(format!("{}: {value}", member_name(m, k)));
            }
            let name = self.ty(ty)?;
            fields.push(format!("u: {name} {{ {} }}", words.join(", ")));
        }
        for k in 0..self.arrays.len() {
            let (elem, written) = self.array_elem(k)?;
            let get = if written { "take_write" } else { "read" };
            // A per-item array is the tile's slice, `count` long: saying so lets the compiler
            // see that the kernel's own `i < count` check covers every access (2x on saxpy).
            let slice = if per_item.get(k).copied().unwrap_or(false) { "[..count as usize]" } else { "" };
            fields.push(format!("a{k}: &{}t.{get}::<{elem}>({k}){slice}", if written { "mut " } else { "" }));
        }
        let mut resets = Vec::new();
        for (k, &p) in self.privates.clone().iter().enumerate() {
            let var = &module.global_variables[p];
            let init = match var.init {
                Some(init) => expr::constant(self, init)?,
                None => self.zero(var.ty)?,
            };
            fields.push(format!("p{k}: {init}"));
            resets.push(format!("xc.p{k} = {init};"));
        }
        if self.arrays.is_empty() {
            fields.push("_tile: std::marker::PhantomData".to_owned());
        }
        self.line("let mut xc = XcCtx {");
        for f in fields {
            self.line(format!("    {f},"));
        }
        self.line("};");
        self.line("for x in 0..count {");
        for r in resets {
            self.line(format!("    {r}"));
        }
        self.line("    xc_item(&mut xc, [x, 0, 0]);");
        self.line("}");
        self.indent -= 1;
        self.line("}");
        let _ = writeln!(self.out);
        Ok(())
    }
}

/// Integer division and remainder as WGSL defines them, and the bit operations Rust has no
/// single method for; each the same as the PTX form's instruction.
const HELPERS: &str = r#"#[inline(always)]
fn xc_div_u32(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { a / b }
}

#[inline(always)]
fn xc_rem_u32(a: u32, b: u32) -> u32 {
    if b == 0 { 0 } else { a % b }
}

#[inline(always)]
fn xc_div_i32(a: i32, b: i32) -> i32 {
    if b == 0 || (a == i32::MIN && b == -1) { a } else { a / b }
}

#[inline(always)]
fn xc_rem_i32(a: i32, b: i32) -> i32 {
    if b == 0 || (a == i32::MIN && b == -1) { 0 } else { a % b }
}

#[inline(always)]
fn xc_first_leading_bit_u32(a: u32) -> u32 {
    if a == 0 { u32::MAX } else { 31 - a.leading_zeros() }
}

#[inline(always)]
fn xc_first_leading_bit_i32(a: i32) -> i32 {
    let b = if a < 0 { !a } else { a };
    if b == 0 { -1 } else { 31 - b.leading_zeros() as i32 }
}

#[inline(always)]
fn xc_first_trailing_bit_u32(a: u32) -> u32 {
    if a == 0 { u32::MAX } else { a.trailing_zeros() }
}

#[inline(always)]
fn xc_extract_bits_u32(a: u32, offset: u32, count: u32) -> u32 {
    if count == 0 { 0 } else { a.wrapping_shl(32 - offset - count) >> (32 - count) }
}

#[inline(always)]
fn xc_extract_bits_i32(a: i32, offset: u32, count: u32) -> i32 {
    if count == 0 { 0 } else { a.wrapping_shl(32 - offset - count) >> (32 - count) }
}

#[inline(always)]
fn xc_insert_bits_u32(a: u32, b: u32, offset: u32, count: u32) -> u32 {
    if count == 0 {
        return a;
    }
    let mask = (u32::MAX >> (32 - count)) << offset;
    (a & !mask) | (b.wrapping_shl(offset) & mask)
}
"#;

#[cfg(test)]
mod tests {
    #[test]
    fn functions_that_share_a_name_get_rust_names_of_their_own() {
        let wgsl = "fn f(v: f32) -> f32 { return v + 1.0; }\nfn g(v: f32) -> f32 { return f(v) * 2.0; }\n\
                    @group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
                    @compute @workgroup_size(64) fn k(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = g(y[gid.x]); }";
        let mut module = naga::front::wgsl::parse_str(wgsl).expect("parses");
        // As a SPIR-V module may name them (the library's own names included).
        for (_, fun) in module.functions.iter_mut() {
            fun.name = Some("__xcm_exp".into());
        }
        let w = super::Writer::new(&module, &[]);
        assert_eq!(w.fn_names, ["xc_fn___xcm_exp", "xc_fn___xcm_exp_1"]);
    }
}
