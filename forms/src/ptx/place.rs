//! Where a pointer points: registers (locals, the uniform's words) or memory (storage arrays,
//! local arrays indexed by a computed value), and the guarded loads and stores through it.
//!
//! A pointer into registers is a list of alternatives: the registers it names when its guard
//! holds. A constant index narrows every alternative; a computed index splits each into one per
//! element, guarded by `index == k`, so an index past the end selects none: a load gives zero
//! and a store changes nothing, as naga's `ReadZeroSkipWrite` does. A pointer into memory is an
//! address, a constant offset and a guard that every index check joined.

use naga::{ArraySize, ScalarKind, TypeInner};

use super::{Kind, Reg, Writer, kind_of, leaf_count};
use crate::FormsError;

/// One alternative of a pointer into registers.
#[derive(Debug, Clone)]
pub(crate) struct Alt {
    /// When this alternative is the one pointed at (None: always).
    pub(crate) guard: Option<Reg>,
    /// The pointee's leaf registers.
    pub(crate) leaves: Vec<Reg>,
}

/// A pointer into memory.
#[derive(Debug, Clone)]
pub(crate) struct Mem {
    /// Per-thread local memory (true) or a global storage array.
    pub(crate) local: bool,
    /// A read-only storage array (loads may take the non-coherent path).
    pub(crate) read_only: bool,
    /// The address of the pointee's start, less `konst`.
    pub(crate) addr: Reg,
    /// A constant byte offset to add.
    pub(crate) konst: u32,
    /// Every index check on the way here, joined.
    pub(crate) guard: Option<Reg>,
    /// The storage array (binding - 1) while the pointer is to the whole runtime array.
    pub(crate) array: Option<usize>,
}

/// Where a pointer expression points.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    Regs(Vec<Alt>),
    Mem(Mem),
}

/// The element of an indexable type: (element type, element count if fixed, stride).
fn element(w: &Writer<'_>, ty: &TypeInner) -> Option<(TypeInner, Option<u32>, u32)> {
    match *ty {
        TypeInner::Vector { size, scalar } => Some((TypeInner::Scalar(scalar), Some(size as u32), scalar.width as u32)),
        TypeInner::Array { base, size, stride } => {
            let n = match size {
                ArraySize::Constant(n) => Some(n.get()),
                _ => None,
            };
            Some((w.module.types[base].inner.clone(), n, stride))
        }
        _ => None,
    }
}

impl Writer<'_> {
    /// The byte offset and scalar kind of each leaf of a type, in leaf order.
    pub(crate) fn leaf_offsets(&self, ty: &TypeInner, at: u32, out: &mut Vec<(u32, ScalarKind)>) {
        match *ty {
            TypeInner::Scalar(s) => out.push((at, s.kind)),
            TypeInner::Vector { size, scalar } => {
                for i in 0..size as u32 {
                    out.push((at + i * scalar.width as u32, scalar.kind));
                }
            }
            TypeInner::Array { base, size: ArraySize::Constant(n), stride } => {
                for i in 0..n.get() {
                    self.leaf_offsets(&self.module.types[base].inner, at + i * stride, out);
                }
            }
            TypeInner::Struct { ref members, .. } => {
                for m in members {
                    self.leaf_offsets(&self.module.types[m.ty].inner, at + m.offset, out);
                }
            }
            _ => {}
        }
    }

    /// `place.member` / `place[index]` with a constant index; `pointee` is the type pointed at.
    pub(crate) fn place_index(&mut self, place: &Place, pointee: &TypeInner, index: u32) -> Result<Place, FormsError> {
        let module = self.module;
        match place {
            Place::Regs(alts) => {
                let (start, len) = match *pointee {
                    TypeInner::Struct { ref members, .. } => {
                        let start = members[..index as usize]
                            .iter()
                            .map(|m| leaf_count(module, &module.types[m.ty].inner))
                            .sum();
                        let len = members.get(index as usize).map(|m| leaf_count(module, &module.types[m.ty].inner));
                        (start, len.ok_or_else(|| FormsError::Internal("a member past a struct's end".into()))?)
                    }
                    _ => {
                        let (elem, _, _) =
                            element(self, pointee).ok_or_else(|| FormsError::Internal("indexing a scalar".into()))?;
                        let m = leaf_count(module, &elem);
                        (index as usize * m, m)
                    }
                };
                let mut out = Vec::new();
                for alt in alts {
                    if let Some(leaves) = alt.leaves.get(start..start + len) {
                        out.push(Alt { guard: alt.guard, leaves: leaves.to_vec() });
                    }
                }
                Ok(Place::Regs(out))
            }
            Place::Mem(mem) => {
                let mut mem = mem.clone();
                match *pointee {
                    TypeInner::Struct { ref members, .. } => {
                        let member = members
                            .get(index as usize)
                            .ok_or_else(|| FormsError::Internal("a member past a struct's end".into()))?;
                        mem.konst += member.offset;
                        // A storage array wrapped in a struct (as SPIR-V binds it) stays the array.
                        let runtime =
                            matches!(module.types[member.ty].inner, TypeInner::Array { size: ArraySize::Dynamic, .. });
                        if !runtime {
                            mem.array = None;
                        }
                        return Ok(Place::Mem(mem));
                    }
                    _ => {
                        let (_, n, stride) =
                            element(self, pointee).ok_or_else(|| FormsError::Internal("indexing a scalar".into()))?;
                        if n.is_none() {
                            let len = self.array_len(&mem)?;
                            let ok = self.reg(Kind::Pred);
                            self.op(format!("setp.gt.u32 {ok}, {len}, {index}"));
                            mem.guard = Some(self.and_guard(mem.guard, ok));
                        }
                        mem.konst += index * stride;
                    }
                }
                mem.array = None;
                Ok(Place::Mem(mem))
            }
        }
    }

    fn array_len(&self, mem: &Mem) -> Result<Reg, FormsError> {
        mem.array
            .and_then(|k| self.arrays.get(k))
            .map(|a| a.len)
            .ok_or_else(|| FormsError::Internal("a runtime-sized array that is not a storage binding".into()))
    }

    /// `place[index]` with a computed index (a u32 or i32 register).
    pub(crate) fn place_access(&mut self, place: &Place, pointee: &TypeInner, index: Reg) -> Result<Place, FormsError> {
        let (elem, n, stride) =
            element(self, pointee).ok_or_else(|| FormsError::Internal("indexing a scalar".into()))?;
        match place {
            Place::Regs(alts) => {
                let m = leaf_count(self.module, &elem);
                let n = n.ok_or_else(|| FormsError::Internal("a runtime-sized array in registers".into()))?;
                let mut out = Vec::new();
                for alt in alts {
                    for j in 0..n {
                        let hit = self.reg(Kind::Pred);
                        self.op(format!("setp.eq.u32 {hit}, {index}, {j}"));
                        let guard = self.and_guard(alt.guard, hit);
                        let leaves = alt.leaves[(j as usize * m)..((j as usize + 1) * m)].to_vec();
                        out.push(Alt { guard: Some(guard), leaves });
                    }
                }
                Ok(Place::Regs(out))
            }
            Place::Mem(mem) => {
                let mut mem = mem.clone();
                let ok = self.reg(Kind::Pred);
                match n {
                    Some(n) => self.op(format!("setp.lt.u32 {ok}, {index}, {n}")),
                    None => {
                        let len = self.array_len(&mem)?;
                        self.op(format!("setp.lt.u32 {ok}, {index}, {len}"));
                    }
                }
                mem.guard = Some(self.and_guard(mem.guard, ok));
                let (wide, addr) = (self.reg(Kind::B64), self.reg(Kind::B64));
                self.op(format!("mul.wide.u32 {wide}, {index}, {stride}"));
                self.op(format!("add.s64 {addr}, {}, {wide}", mem.addr));
                mem.addr = addr;
                mem.array = None;
                Ok(Place::Mem(mem))
            }
        }
    }

    /// Loads the value a place points at.
    pub(crate) fn load(&mut self, place: &Place, pointee: &TypeInner) -> Vec<Reg> {
        match place {
            Place::Regs(alts) => {
                if let [Alt { guard: None, leaves }] = alts.as_slice() {
                    return leaves.iter().map(|&r| self.copy(r)).collect();
                }
                let mut kinds = Vec::new();
                super::leaves(self.module, pointee, &mut kinds);
                let out: Vec<Reg> = kinds.iter().map(|&k| self.zero(kind_of(k))).collect();
                for alt in alts {
                    for (&to, &from) in out.iter().zip(&alt.leaves) {
                        self.mov(alt.guard, to, from);
                    }
                }
                out
            }
            Place::Mem(mem) => {
                let mut offsets = Vec::new();
                self.leaf_offsets(pointee, mem.konst, &mut offsets);
                let space = if mem.local {
                    "local"
                } else if mem.read_only {
                    "global.nc"
                } else {
                    "global"
                };
                let g = mem.guard.map(|g| format!("@{g} ")).unwrap_or_default();
                let mut out = Vec::new();
                for (off, kind) in offsets {
                    let (ty, reg_kind) = match kind {
                        ScalarKind::Float => ("f32", Kind::F32),
                        _ => ("u32", Kind::B32),
                    };
                    let r = if mem.guard.is_some() { self.zero(reg_kind) } else { self.reg(reg_kind) };
                    self.op(format!("{g}ld.{space}.{ty} {r}, [{}+{off}]", mem.addr));
                    out.push(if kind == ScalarKind::Bool {
                        let p = self.reg(Kind::Pred);
                        self.op(format!("setp.ne.u32 {p}, {r}, 0"));
                        p
                    } else {
                        r
                    });
                }
                out
            }
        }
    }

    /// Stores `value` where a place points.
    pub(crate) fn store(&mut self, place: &Place, pointee: &TypeInner, value: &[Reg]) {
        match place {
            Place::Regs(alts) => {
                for alt in alts {
                    for (&to, &from) in alt.leaves.iter().zip(value) {
                        self.mov(alt.guard, to, from);
                    }
                }
            }
            Place::Mem(mem) => {
                let mut offsets = Vec::new();
                self.leaf_offsets(pointee, mem.konst, &mut offsets);
                let space = if mem.local { "local" } else { "global" };
                let g = mem.guard.map(|g| format!("@{g} ")).unwrap_or_default();
                for ((off, kind), &v) in offsets.into_iter().zip(value) {
                    let (ty, v) = match kind {
                        ScalarKind::Float => ("f32", v),
                        ScalarKind::Bool => {
                            let word = self.reg(Kind::B32);
                            self.op(format!("selp.u32 {word}, 1, 0, {v}"));
                            ("u32", word)
                        }
                        _ => ("u32", v),
                    };
                    self.op(format!("{g}st.{space}.{ty} [{}+{off}], {v}", mem.addr));
                }
            }
        }
    }

    /// A place in fresh per-thread local memory for a value of type `ty`.
    pub(crate) fn local_memory(&mut self, ty: naga::Handle<naga::Type>) -> Place {
        let layout = self.layouter[ty];
        let align = (layout.alignment * 1).max(4);
        let at = self.depot.next_multiple_of(align);
        self.depot = at + layout.size;
        let base = self.reg(Kind::B64);
        self.op(format!("mov.u64 {base}, xc_depot"));
        Place::Mem(Mem { local: true, read_only: false, addr: base, konst: at, guard: None, array: None })
    }

    /// A place in fresh registers for a value of type `ty`.
    pub(crate) fn local_registers(&mut self, ty: &TypeInner) -> Place {
        let mut kinds = Vec::new();
        super::leaves(self.module, ty, &mut kinds);
        let leaves = kinds.into_iter().map(|k| self.reg(kind_of(k))).collect();
        Place::Regs(vec![Alt { guard: None, leaves }])
    }
}
