//! PTX from naga's IR: the CUDA form, made by our own code with no CUDA toolkit.
//!
//! The module has passed the subset check and the exactness pass, so this writer meets only
//! u32, i32, f32 and bool values (in scalars, vectors, fixed arrays and structs), storage and
//! uniform access, locals, structured control flow and calls, which it inlines. Every float
//! operation carries `.rn` (so ptxas never contracts a multiply and an add into an FMA), none
//! carries `.ftz`, division and square root are the IEEE ones (`div.rn`, `sqrt.rn`), and every
//! buffer access is guarded as naga's `ReadZeroSkipWrite` guards it: a read past an array's end
//! gives zero and a write past it is dropped.
//!
//! The entry follows docs/kernels.md: the tile header words and the parameters by value, then
//! for each array its pointer and its length in elements. Item `i` is `first + gid.x`, with
//! `gid.x = ctaid.x * ntid.x + tid.x`.
//!
//! Layout: this file holds registers, labels and the entry's text; `place` holds where values
//! live (registers, buffers, local memory); `expr` computes expressions; `flow` writes
//! statements and inlines calls. It reads the module only and touches no device.

mod expr;
mod flow;
mod place;

use std::fmt::Write as _;

use naga::{Module, ScalarKind, TypeInner};

use crate::FormsError;

/// The PTX ISA version and target every form declares: PTX for sm_60 runs on every NVIDIA GPU
/// since Pascal, the driver compiling it for newer ones.
pub const TARGET: &str = "sm_60";
const VERSION: &str = "6.0";

/// The kinds of virtual register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A predicate: WGSL's bool.
    Pred,
    /// 32 bits of an integer.
    B32,
    /// An IEEE binary32 float.
    F32,
    /// A 64-bit address.
    B64,
}

/// A virtual register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reg {
    pub(crate) kind: Kind,
    n: u32,
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefix = match self.kind {
            Kind::Pred => "%p",
            Kind::B32 => "%r",
            Kind::F32 => "%f",
            Kind::B64 => "%rd",
        };
        write!(f, "{prefix}{}", self.n)
    }
}

/// The register kind a scalar of this kind lives in.
pub(crate) fn kind_of(scalar: ScalarKind) -> Kind {
    match scalar {
        ScalarKind::Bool => Kind::Pred,
        ScalarKind::Float => Kind::F32,
        _ => Kind::B32,
    }
}

/// The scalar kinds of a type's leaves, in order (a struct's members, an array's elements, a
/// vector's components, flattened).
pub(crate) fn leaves(module: &Module, ty: &TypeInner, out: &mut Vec<ScalarKind>) {
    match *ty {
        TypeInner::Scalar(s) => out.push(s.kind),
        TypeInner::Vector { size, scalar } => out.extend(std::iter::repeat_n(scalar.kind, size as usize)),
        TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } => {
            for _ in 0..n.get() {
                leaves(module, &module.types[base].inner, out);
            }
        }
        TypeInner::Struct { ref members, .. } => {
            for m in members {
                leaves(module, &module.types[m.ty].inner, out);
            }
        }
        _ => {}
    }
}

/// How many leaves a type has.
pub(crate) fn leaf_count(module: &Module, ty: &TypeInner) -> usize {
    let mut out = Vec::new();
    leaves(module, ty, &mut out);
    out.len()
}

/// One array the entry binds: its global pointer, its length in elements, whether it is read-only.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArrayArg {
    pub(crate) base: Reg,
    pub(crate) len: Reg,
    pub(crate) read_only: bool,
}

/// The text being written and the counters behind it.
pub(crate) struct Writer<'m> {
    pub(crate) module: &'m Module,
    pub(crate) layouter: naga::proc::Layouter,
    /// Instructions of the entry's body.
    body: String,
    /// Registers used, per kind.
    counts: [u32; 4],
    labels: u32,
    /// Bytes of per-thread local memory handed out so far.
    pub(crate) depot: u32,
    /// The uniform's words (header then parameters), loaded at entry.
    pub(crate) uniform: Vec<Reg>,
    /// The arrays, by binding - 1.
    pub(crate) arrays: Vec<ArrayArg>,
    /// `global_invocation_id`: x, then 0 and 0.
    pub(crate) gid: Vec<Reg>,
    /// The registers of each `var<private>`: per item, shared by every function.
    pub(crate) private: std::collections::HashMap<naga::Handle<naga::GlobalVariable>, place::Place>,
}

impl<'m> Writer<'m> {
    pub(crate) fn reg(&mut self, kind: Kind) -> Reg {
        let slot = kind as usize;
        self.counts[slot] += 1;
        Reg { kind, n: self.counts[slot] }
    }

    pub(crate) fn label(&mut self) -> String {
        self.labels += 1;
        format!("L{}", self.labels)
    }

    /// Writes one instruction line.
    pub(crate) fn op(&mut self, line: impl AsRef<str>) {
        self.body.push('\t');
        self.body.push_str(line.as_ref());
        self.body.push_str(";\n");
    }

    pub(crate) fn place_label(&mut self, label: &str) {
        let _ = writeln!(self.body, "{label}:");
    }

    /// A fresh register holding 32 bits given in hex, of kind B32 or F32.
    pub(crate) fn imm(&mut self, kind: Kind, bits: u32) -> Reg {
        let r = self.reg(kind);
        match kind {
            Kind::F32 => self.op(format!("mov.f32 {r}, 0f{bits:08X}")),
            Kind::Pred => {
                let word = self.imm(Kind::B32, bits);
                self.op(format!("setp.ne.u32 {r}, {word}, 0"));
            }
            _ => self.op(format!("mov.b32 {r}, 0x{bits:08X}")),
        }
        r
    }

    /// A fresh register with every bit zero (false for a predicate).
    pub(crate) fn zero(&mut self, kind: Kind) -> Reg {
        self.imm(kind, 0)
    }

    /// Copies `from` into `to` (same kind), under an optional guard.
    pub(crate) fn mov(&mut self, guard: Option<Reg>, to: Reg, from: Reg) {
        let g = guard.map(|g| format!("@{g} ")).unwrap_or_default();
        let ty = match to.kind {
            Kind::Pred => "pred",
            Kind::B32 => "b32",
            Kind::F32 => "f32",
            Kind::B64 => "b64",
        };
        self.op(format!("{g}mov.{ty} {to}, {from}"));
    }

    /// A fresh copy of a register.
    pub(crate) fn copy(&mut self, from: Reg) -> Reg {
        let to = self.reg(from.kind);
        self.mov(None, to, from);
        to
    }

    /// `a && b` for two optional guards.
    pub(crate) fn and_guard(&mut self, a: Option<Reg>, b: Reg) -> Reg {
        match a {
            None => b,
            Some(a) => {
                let r = self.reg(Kind::Pred);
                self.op(format!("and.pred {r}, {a}, {b}"));
                r
            }
        }
    }
}

/// Writes the PTX of entry point `entry` of a checked, exact module.
pub fn write(module: &Module, entry: &str) -> Result<String, FormsError> {
    let ep = module
        .entry_points
        .iter()
        .find(|ep| ep.name == entry && ep.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| FormsError::NoEntry(entry.to_owned()))?;
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).map_err(|e| FormsError::Internal(format!("laying out types: {e}")))?;
    let mut w = Writer {
        module,
        layouter,
        body: String::new(),
        counts: [0; 4],
        labels: 0,
        depot: 0,
        uniform: Vec::new(),
        arrays: Vec::new(),
        gid: Vec::new(),
        private: std::collections::HashMap::new(),
    };
    let params = w.prologue()?;
    flow::private_variables(&mut w)?;
    flow::entry(&mut w, &ep.function)?;
    Ok(w.finish(&crate::entry_symbol(entry), &params))
}

impl Writer<'_> {
    /// Declares and loads the entry's parameters; returns their declarations.
    fn prologue(&mut self) -> Result<Vec<String>, FormsError> {
        let module = self.module;
        let mut decls = Vec::new();
        let mut uniform_kinds = Vec::new();
        let mut storage = Vec::new();
        for (_, var) in module.global_variables.iter() {
            match (var.space, &var.binding) {
                (naga::AddressSpace::Uniform, Some(_)) => {
                    leaves(module, &module.types[var.ty].inner, &mut uniform_kinds)
                }
                (naga::AddressSpace::Storage { access }, Some(b)) => {
                    storage.push((b.binding, !access.contains(naga::StorageAccess::STORE)))
                }
                _ => {}
            }
        }
        storage.sort_by_key(|(b, _)| *b);
        for (k, kind) in uniform_kinds.into_iter().enumerate() {
            let name = format!("xc_p{k}");
            let (decl, reg) = match kind {
                ScalarKind::Float => ("f32", self.reg(Kind::F32)),
                _ => ("u32", self.reg(Kind::B32)),
            };
            decls.push(format!(".param .{decl} {name}"));
            self.op(format!("ld.param.{decl} {reg}, [{name}]"));
            self.uniform.push(reg);
        }
        for (k, (_, read_only)) in storage.into_iter().enumerate() {
            let (ptr, len) = (format!("xc_a{k}"), format!("xc_n{k}"));
            decls.push(format!(".param .u64 {ptr}"));
            decls.push(format!(".param .u32 {len}"));
            let generic = self.reg(Kind::B64);
            let base = self.reg(Kind::B64);
            let n = self.reg(Kind::B32);
            self.op(format!("ld.param.u64 {generic}, [{ptr}]"));
            self.op(format!("cvta.to.global.u64 {base}, {generic}"));
            self.op(format!("ld.param.u32 {n}, [{len}]"));
            self.arrays.push(ArrayArg { base, len: n, read_only });
        }
        let (ctaid, ntid, tid, x) =
            (self.reg(Kind::B32), self.reg(Kind::B32), self.reg(Kind::B32), self.reg(Kind::B32));
        self.op(format!("mov.u32 {ctaid}, %ctaid.x"));
        self.op(format!("mov.u32 {ntid}, %ntid.x"));
        self.op(format!("mov.u32 {tid}, %tid.x"));
        self.op(format!("mad.lo.s32 {x}, {ctaid}, {ntid}, {tid}"));
        let zero = self.zero(Kind::B32);
        self.gid = vec![x, zero, zero];
        Ok(decls)
    }

    fn finish(self, entry: &str, params: &[String]) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "// Made by xcd-forms from WGSL: IEEE round-to-nearest, no FMA, no flush to zero,");
        let _ = writeln!(out, "// every buffer access bounds-checked. Entry ABI: docs/kernels.md.");
        let _ = writeln!(out, ".version {VERSION}\n.target {TARGET}\n.address_size 64\n");
        let _ = writeln!(out, ".visible .entry {entry}(\n\t{}\n)\n{{", params.join(",\n\t"));
        for (kind, prefix, ty) in
            [(Kind::Pred, "%p", "pred"), (Kind::B32, "%r", "b32"), (Kind::F32, "%f", "f32"), (Kind::B64, "%rd", "b64")]
        {
            let n = self.counts[kind as usize];
            if n > 0 {
                let _ = writeln!(out, "\t.reg .{ty} {prefix}<{}>;", n + 1);
            }
        }
        if self.depot > 0 {
            let _ = writeln!(out, "\t.local .align 16 .b8 xc_depot[{}];", self.depot.next_multiple_of(16));
        }
        out.push_str(&self.body);
        out.push_str("\tret;\n}\n");
        out
    }
}
