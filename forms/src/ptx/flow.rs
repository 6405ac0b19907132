//! Statements and calls: structured control flow as branches and labels, and every call inlined
//! (WGSL has no recursion, so inlining ends), each inlined function getting fresh registers for
//! its values and locals.

use naga::{Expression, Function, Handle, TypeInner};

use super::place::{Alt, Mem, Place};
use super::{Kind, Reg, Writer};
use crate::FormsError;
use crate::walk::{self, Flow, Target};

/// What an expression evaluated to.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    Val(Vec<Reg>),
    Place(Place),
}

/// An index into a value: a constant (`AccessIndex`) or an expression (`Access`).
#[derive(Clone, Copy)]
enum Index {
    Const(u32),
    Dynamic(Handle<Expression>),
}

/// One function being written: the entry, or an inlined callee.
struct Frame<'f> {
    fun: &'f Function,
    /// Types of the function's expressions.
    types: naga::front::Typifier,
    slots: Vec<Option<Slot>>,
    args: Vec<Slot>,
    locals: Vec<Place>,
    /// For a callee: its result registers and the label after its body.
    ret: Option<(Vec<Reg>, String)>,
    /// Where `break` and `continue` go: labels.
    targets: Vec<Target<String>>,
}

fn internal(what: &str) -> FormsError {
    FormsError::Internal(format!("the PTX writer met {what}"))
}

/// Writes the entry function's body.
pub(crate) fn entry(w: &mut Writer<'_>, fun: &Function) -> Result<(), FormsError> {
    let args = fun.arguments.iter().map(|_| Slot::Val(w.gid.clone())).collect();
    let mut frame = Frame::new(w, fun, args, None)?;
    walk::walk_block(&mut frame, w, &fun.body)
}

impl<'f> Frame<'f> {
    fn new(
        w: &mut Writer<'_>,
        fun: &'f Function,
        args: Vec<Slot>,
        ret: Option<(Vec<Reg>, String)>,
    ) -> Result<Self, FormsError> {
        let types =
            walk::typify(w.module, fun).map_err(|e| FormsError::Internal(format!("typing an expression: {e}")))?;
        let in_memory = locals_in_memory(w, fun, &types);
        let mut frame = Frame {
            fun,
            types,
            slots: vec![None; fun.expressions.len()],
            args,
            locals: Vec::new(),
            ret,
            targets: Vec::new(),
        };
        for (handle, local) in fun.local_variables.iter() {
            let inner = &w.module.types[local.ty].inner;
            let place = if in_memory.contains(&handle) { w.local_memory(local.ty) } else { w.local_registers(inner) };
            let value = match local.init {
                Some(init) => frame.value(w, init)?,
                None => zeros(w, inner),
            };
            w.store(&place, inner, &value);
            frame.locals.push(place);
        }
        Ok(frame)
    }

    fn ty(&self, w: &Writer<'_>, h: Handle<Expression>) -> TypeInner {
        self.types.get(h, &w.module.types).clone()
    }

    /// The type a pointer expression points at.
    fn pointee(&self, w: &Writer<'_>, h: Handle<Expression>) -> Result<TypeInner, FormsError> {
        match self.ty(w, h) {
            TypeInner::Pointer { base, .. } => Ok(w.module.types[base].inner.clone()),
            TypeInner::ValuePointer { size: Some(size), scalar, .. } => Ok(TypeInner::Vector { size, scalar }),
            TypeInner::ValuePointer { size: None, scalar, .. } => Ok(TypeInner::Scalar(scalar)),
            _ => Err(internal("a pointer of no pointer type")),
        }
    }

    fn slot(&mut self, w: &mut Writer<'_>, h: Handle<Expression>) -> Result<Slot, FormsError> {
        if let Some(slot) = &self.slots[h.index()] {
            return Ok(slot.clone());
        }
        // Expressions that need no emitting are made where they are used: a register set inside
        // one branch would not hold its value in another.
        let slot = self.compute(w, h)?;
        if matches!(
            self.fun.expressions[h],
            Expression::GlobalVariable(_) | Expression::LocalVariable(_) | Expression::FunctionArgument(_)
        ) {
            self.slots[h.index()] = Some(slot.clone());
        }
        Ok(slot)
    }

    fn value(&mut self, w: &mut Writer<'_>, h: Handle<Expression>) -> Result<Vec<Reg>, FormsError> {
        match self.slot(w, h)? {
            Slot::Val(v) => Ok(v),
            Slot::Place(_) => Err(internal("a pointer where a value belongs")),
        }
    }

    fn place(&mut self, w: &mut Writer<'_>, h: Handle<Expression>) -> Result<Place, FormsError> {
        match self.slot(w, h)? {
            Slot::Place(p) => Ok(p),
            Slot::Val(_) => Err(internal("a value where a pointer belongs")),
        }
    }

    fn kind(&self, w: &Writer<'_>, h: Handle<Expression>) -> naga::ScalarKind {
        self.ty(w, h).scalar_kind().unwrap_or(naga::ScalarKind::Uint)
    }

    fn compute(&mut self, w: &mut Writer<'_>, h: Handle<Expression>) -> Result<Slot, FormsError> {
        use Expression as E;
        let module = w.module;
        Ok(Slot::Val(match self.fun.expressions[h] {
            E::Literal(lit) => vec![w.literal(lit)?],
            E::Constant(c) => constant(w, module.constants[c].init)?,
            E::ZeroValue(ty) => zeros(w, &module.types[ty].inner),
            E::Compose { .. } | E::Splat { .. } | E::Swizzle { .. } => self.composite(w, h)?,
            E::FunctionArgument(i) => {
                return self.args.get(i as usize).cloned().ok_or_else(|| internal("a missing argument"));
            }
            E::GlobalVariable(g) => return global(w, g),
            E::LocalVariable(l) => {
                return self.locals.get(l.index()).cloned().map(Slot::Place).ok_or_else(|| internal("a missing local"));
            }
            E::Access { base, .. } | E::AccessIndex { base, .. }
                if matches!(self.ty(w, base), TypeInner::Pointer { .. } | TypeInner::ValuePointer { .. }) =>
            {
                return self.place_within(w, h, base).map(Slot::Place);
            }
            E::AccessIndex { base, index } => self.element(w, base, Index::Const(index))?,
            E::Access { base, index } => self.element(w, base, Index::Dynamic(index))?,
            E::Load { pointer } => {
                let pointee = self.pointee(w, pointer)?;
                let place = self.place(w, pointer)?;
                w.load(&place, &pointee)
            }
            E::Unary { op, expr } => {
                let (kind, v) = (self.kind(w, expr), self.value(w, expr)?);
                w.unary(op, kind, &v)?
            }
            E::Binary { op, left, right } => {
                let kind = self.kind(w, left);
                let (l, r) = (self.value(w, left)?, self.value(w, right)?);
                w.binary(op, kind, &l, &r)?
            }
            E::Select { condition, accept, reject } => {
                let (c, a, r) = (self.value(w, condition)?, self.value(w, accept)?, self.value(w, reject)?);
                w.select(&c, &a, &r)
            }
            E::Relational { fun, argument } => {
                let v = self.value(w, argument)?;
                match fun {
                    naga::RelationalFunction::All => vec![w.all_any(true, &v)],
                    naga::RelationalFunction::Any => vec![w.all_any(false, &v)],
                    other => return Err(internal(&format!("{other:?}"))),
                }
            }
            E::Math { fun, arg, arg1, arg2, arg3 } => {
                let kind = self.kind(w, arg);
                let args = [Some(arg), arg1, arg2, arg3].into_iter().flatten();
                let args = args.map(|a| self.value(w, a)).collect::<Result<Vec<_>, _>>()?;
                w.math(fun, kind, &args)?
            }
            E::As { expr, kind, convert } => {
                let from = self.kind(w, expr);
                let v = self.value(w, expr)?;
                w.convert(from, kind, convert.is_none(), &v)?
            }
            E::ArrayLength(pointer) => vec![self.array_length(w, pointer)?],
            E::CallResult(_) => return Err(internal("a call's result before the call")),
            _ => return Err(internal("an expression outside the exact subset")),
        }))
    }

    /// A vector or composite value put together: from its components, one value repeated, or
    /// another vector's components in a new order.
    fn composite(&mut self, w: &mut Writer<'_>, h: Handle<Expression>) -> Result<Vec<Reg>, FormsError> {
        Ok(match self.fun.expressions[h] {
            Expression::Compose { ref components, .. } => {
                let mut out = Vec::new();
                for &c in components {
                    out.extend(self.value(w, c)?);
                }
                out
            }
            Expression::Splat { size, value } => {
                let v = self.value(w, value)?;
                std::iter::repeat_n(v[0], size as usize).collect()
            }
            Expression::Swizzle { size, vector, pattern } => {
                let v = self.value(w, vector)?;
                pattern[..size as usize].iter().map(|&c| v[c as usize]).collect()
            }
            _ => return Err(internal("a composite that is not one")),
        })
    }

    /// `arrayLength` of a storage array: the length the kernel was given for it.
    fn array_length(&mut self, w: &mut Writer<'_>, pointer: Handle<Expression>) -> Result<Reg, FormsError> {
        match self.place(w, pointer)? {
            Place::Mem(Mem { array: Some(k), .. }) => {
                let len = w.arrays.get(k).map(|a| a.len).ok_or_else(|| internal("a missing array"))?;
                Ok(w.copy(len))
            }
            _ => Err(internal("arrayLength of something other than a storage array")),
        }
    }

    /// The place within pointer `base` that access `h` (an `Access` or `AccessIndex`) names.
    fn place_within(
        &mut self,
        w: &mut Writer<'_>,
        h: Handle<Expression>,
        base: Handle<Expression>,
    ) -> Result<Place, FormsError> {
        let pointee = self.pointee(w, base)?;
        let place = self.place(w, base)?;
        match self.fun.expressions[h] {
            Expression::AccessIndex { index, .. } => w.place_index(&place, &pointee, index),
            Expression::Access { index, .. } => {
                let i = self.value(w, index)?[0];
                w.place_access(&place, &pointee, i)
            }
            _ => Err(internal("an access that is not one")),
        }
    }

    /// Element `index` of the value `base` (a vector, array or struct held in registers).
    fn element(&mut self, w: &mut Writer<'_>, base: Handle<Expression>, index: Index) -> Result<Vec<Reg>, FormsError> {
        let ty = self.ty(w, base);
        let v = self.value(w, base)?;
        let single = Place::Regs(vec![Alt { guard: None, leaves: v }]);
        match index {
            Index::Const(index) => match w.place_index(&single, &ty, index)? {
                Place::Regs(alts) => Ok(alts.into_iter().next().map(|a| a.leaves).unwrap_or_default()),
                Place::Mem(_) => Err(internal("a value in memory")),
            },
            Index::Dynamic(index) => {
                let i = self.value(w, index)?[0];
                let pointee_of_element = match ty {
                    TypeInner::Vector { scalar, .. } => TypeInner::Scalar(scalar),
                    TypeInner::Array { base, .. } => w.module.types[base].inner.clone(),
                    _ => return Err(internal("indexing a scalar value")),
                };
                let place = w.place_access(&single, &ty, i)?;
                Ok(w.load(&place, &pointee_of_element))
            }
        }
    }
}

impl<'f, 'm> Flow<'f, Writer<'m>> for Frame<'f> {
    type Value = Vec<Reg>;
    type Jump = String;
    /// The labels of the `else` and of the end.
    type If = (String, String);
    /// The labels of the loop's top, its continuing block and its end.
    type Loop = (String, String, String);

    fn internal(what: &str) -> FormsError {
        internal(what)
    }

    fn targets(&mut self) -> &mut Vec<Target<String>> {
        &mut self.targets
    }

    fn eval(&mut self, w: &mut Writer<'m>, h: Handle<Expression>) -> Result<Vec<Reg>, FormsError> {
        self.value(w, h)
    }

    fn emit(&mut self, w: &mut Writer<'m>, h: Handle<Expression>) -> Result<(), FormsError> {
        let slot = self.compute(w, h)?;
        self.slots[h.index()] = Some(slot);
        Ok(())
    }

    /// An if: a branch past `accept` to `reject` where the condition is false.
    fn if_begin(&mut self, w: &mut Writer<'m>, condition: Vec<Reg>) -> Self::If {
        let c = condition[0];
        let (otherwise, end) = (w.label(), w.label());
        w.op(format!("@!{c} bra {otherwise}"));
        (otherwise, end)
    }

    fn if_else(&mut self, w: &mut Writer<'m>, (otherwise, end): &Self::If, _reject: &'f naga::Block) {
        w.op(format!("bra {end}"));
        w.place_label(otherwise);
    }

    fn if_end(&mut self, w: &mut Writer<'m>, (_, end): Self::If, _reject: &'f naga::Block) {
        w.place_label(&end);
    }

    /// A switch: a comparison and branch per case value, then each case's body in order,
    /// falling through where the case says so.
    fn switch(
        &mut self,
        w: &mut Writer<'m>,
        selector: Vec<Reg>,
        cases: &'f [naga::SwitchCase],
    ) -> Result<(), FormsError> {
        let s = selector[0];
        let labels: Vec<String> = cases.iter().map(|_| w.label()).collect();
        let end = w.label();
        let mut default = end.clone();
        for (case, label) in cases.iter().zip(&labels) {
            let value = match case.value {
                naga::SwitchValue::I32(v) => v as u32,
                naga::SwitchValue::U32(v) => v,
                naga::SwitchValue::Default => {
                    default.clone_from(label);
                    continue;
                }
            };
            let hit = w.reg(Kind::Pred);
            w.op(format!("setp.eq.u32 {hit}, {s}, {value}"));
            w.op(format!("@{hit} bra {label}"));
        }
        w.op(format!("bra {default}"));
        self.targets.push(Target::Switch { brk: end.clone() });
        for (case, label) in cases.iter().zip(&labels) {
            w.place_label(label);
            walk::walk_block(self, w, &case.body)?;
            if !case.fall_through {
                w.op(format!("bra {end}"));
            }
        }
        self.targets.pop();
        w.place_label(&end);
        Ok(())
    }

    fn loop_begin(
        &mut self,
        w: &mut Writer<'m>,
        _body: &'f naga::Block,
        _continuing: &'f naga::Block,
        _break_if: Option<Handle<Expression>>,
    ) -> Result<(Self::Loop, Target<String>), FormsError> {
        let (top, cont, end) = (w.label(), w.label(), w.label());
        w.place_label(&top);
        let target = Target::Loop { brk: end.clone(), cont: cont.clone() };
        Ok(((top, cont, end), target))
    }

    fn loop_continuing(&mut self, w: &mut Writer<'m>, (_, cont, end): &Self::Loop) -> Target<String> {
        w.place_label(cont);
        Target::Loop { brk: end.clone(), cont: cont.clone() }
    }

    fn loop_end(&mut self, w: &mut Writer<'m>, (top, _, end): Self::Loop, break_if: Option<Vec<Reg>>) {
        if let Some(c) = break_if {
            let c = c[0];
            w.op(format!("@{c} bra {end}"));
        }
        w.op(format!("bra {top}"));
        w.place_label(&end);
    }

    fn jump(&mut self, w: &mut Writer<'m>, to: String) {
        w.op(format!("bra {to}"));
    }

    fn ret(&mut self, w: &mut Writer<'m>, value: Option<Handle<Expression>>) -> Result<(), FormsError> {
        match &self.ret {
            None => w.op("ret"),
            Some((regs, end)) => {
                let (regs, end) = (regs.clone(), end.clone());
                if let Some(v) = value {
                    let v = self.value(w, v)?;
                    for (&to, &from) in regs.iter().zip(&v) {
                        w.mov(None, to, from);
                    }
                }
                w.op(format!("bra {end}"));
            }
        }
        Ok(())
    }

    fn store(
        &mut self,
        w: &mut Writer<'m>,
        pointer: Handle<Expression>,
        value: Handle<Expression>,
    ) -> Result<(), FormsError> {
        let pointee = self.pointee(w, pointer)?;
        let place = self.place(w, pointer)?;
        let v = self.value(w, value)?;
        w.store(&place, &pointee, &v);
        Ok(())
    }

    /// A call, inlined: the callee's body in a frame of its own, its result in registers.
    fn call(
        &mut self,
        w: &mut Writer<'m>,
        function: Handle<naga::Function>,
        arguments: &[Handle<Expression>],
        result: Option<Handle<Expression>>,
    ) -> Result<(), FormsError> {
        let callee = &w.module.functions[function];
        let mut args = Vec::new();
        for &a in arguments {
            args.push(self.slot(w, a)?);
        }
        let regs = match &callee.result {
            Some(r) => {
                let ty = &w.module.types[r.ty].inner;
                match w.local_registers(ty) {
                    Place::Regs(alts) => alts.into_iter().next().map(|a| a.leaves).unwrap_or_default(),
                    Place::Mem(_) => Vec::new(),
                }
            }
            None => Vec::new(),
        };
        let end = w.label();
        let mut inner = Frame::new(w, callee, args, Some((regs.clone(), end.clone())))?;
        walk::walk_block(&mut inner, w, &callee.body)?;
        w.place_label(&end);
        if let Some(result) = result {
            self.slots[result.index()] = Some(Slot::Val(regs));
        }
        Ok(())
    }
}

/// Gives every `var<private>` its registers, set to its initializer or zero.
pub(crate) fn private_variables(w: &mut Writer<'_>) -> Result<(), FormsError> {
    let module = w.module;
    for (handle, var) in module.global_variables.iter() {
        if var.space != naga::AddressSpace::Private {
            continue;
        }
        let inner = &module.types[var.ty].inner;
        let place = w.local_registers(inner);
        let value = match var.init {
            Some(init) => constant(w, init)?,
            None => zeros(w, inner),
        };
        w.store(&place, inner, &value);
        w.private.insert(handle, place);
    }
    Ok(())
}

/// A storage array, the uniform or a private variable, as a place.
fn global(w: &mut Writer<'_>, g: Handle<naga::GlobalVariable>) -> Result<Slot, FormsError> {
    if let Some(place) = w.private.get(&g) {
        return Ok(Slot::Place(place.clone()));
    }
    let var = &w.module.global_variables[g];
    match (var.space, &var.binding) {
        (naga::AddressSpace::Uniform, _) => {
            Ok(Slot::Place(Place::Regs(vec![Alt { guard: None, leaves: w.uniform.clone() }])))
        }
        (naga::AddressSpace::Storage { .. }, Some(b)) => {
            let k = (b.binding as usize).checked_sub(1).ok_or_else(|| internal("a storage array at binding 0"))?;
            let array = *w.arrays.get(k).ok_or_else(|| internal("an unbound storage array"))?;
            Ok(Slot::Place(Place::Mem(Mem {
                local: false,
                read_only: array.read_only,
                addr: array.base,
                konst: 0,
                guard: None,
                array: Some(k),
            })))
        }
        _ => Err(internal("a global outside the ABI")),
    }
}

/// Zeros for every leaf of a type.
fn zeros(w: &mut Writer<'_>, ty: &TypeInner) -> Vec<Reg> {
    let mut kinds = Vec::new();
    super::leaves(w.module, ty, &mut kinds);
    kinds.into_iter().map(|k| w.zero(super::kind_of(k))).collect()
}

/// The value of a module-level constant expression.
fn constant(w: &mut Writer<'_>, h: Handle<Expression>) -> Result<Vec<Reg>, FormsError> {
    let module = w.module;
    Ok(match module.global_expressions[h] {
        Expression::Literal(lit) => vec![w.literal(lit)?],
        Expression::Constant(c) => constant(w, module.constants[c].init)?,
        Expression::ZeroValue(ty) => zeros(w, &module.types[ty].inner),
        Expression::Compose { ref components, .. } => {
            let mut out = Vec::new();
            for &c in components {
                out.extend(constant(w, c)?);
            }
            out
        }
        Expression::Splat { size, value } => {
            let v = constant(w, value)?;
            std::iter::repeat_n(v[0], size as usize).collect()
        }
        _ => return Err(internal("a constant of an unexpected form")),
    })
}

/// The locals that an index computed at run time reaches into an array of more than a few
/// elements: they live in local memory, where one guarded load does what a chain of
/// comparisons over registers would.
fn locals_in_memory(w: &Writer<'_>, fun: &Function, types: &naga::front::Typifier) -> Vec<Handle<naga::LocalVariable>> {
    let mut out = Vec::new();
    for (_, e) in fun.expressions.iter() {
        let Expression::Access { base, .. } = *e else { continue };
        let TypeInner::Pointer { base: pointee, .. } = *types.get(base, &w.module.types) else { continue };
        let TypeInner::Array { base: elem, size: naga::ArraySize::Constant(n), .. } = w.module.types[pointee].inner
        else {
            continue;
        };
        if n.get() as usize * super::leaf_count(w.module, &w.module.types[elem].inner) <= 8 {
            continue;
        }
        let mut root = base;
        loop {
            match fun.expressions[root] {
                Expression::Access { base, .. } | Expression::AccessIndex { base, .. } => root = base,
                Expression::LocalVariable(l) => {
                    if !out.contains(&l) {
                        out.push(l);
                    }
                    break;
                }
                _ => break,
            }
        }
    }
    out
}
