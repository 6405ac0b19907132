//! The exactness pass: rewrites a checked module so that every form made from it gives the
//! same bits on every device.
//!
//! WGSL leaves a few results to the implementation even within the exact subset, and naga's
//! writers pass that freedom on. This pass removes it from the IR itself, before any writer
//! runs, so SPIR-V, MSL, PTX (and the CPU form made from the same IR) agree by construction:
//!
//! - float `min`, `max`, `clamp`, `saturate` become selects with WGSL's own definitions
//!   (`min(a, b)` is `b < a ? b : a`), so NaN and signed zeros give one answer everywhere;
//! - `dot`, `length`, `distance`, `normalize`, `cross`, `mix`, `step`, `sign`, `fract` are
//!   written out with `+ - * /`, `sqrt` and selects, summing left to right;
//! - float to integer conversion gives 0 for NaN (its range clamp is naga's, written the same
//!   way by every writer and by the PTX emitter);
//! - shift amounts are taken modulo 32, as WGSL says (naga's SPIR-V shifts by them as given);
//! - float `a != b` is `!(a == b)`, true for NaN (naga's SPIR-V uses the ordered not-equal);
//! - `extractBits` / `insertBits` get WGSL's clamped offset and count;
//! - a float NaN stored to a storage array, or bitcast to an integer, is the one canonical NaN
//!   `0x7fc00000`: devices make NaNs with different payloads, and this is where they would show.
//!
//! It touches only the IR: no device, no writer. This file holds the rewriting itself (a new
//! expression arena, `Emit` ranges, statements); `lower` holds what each construct becomes.

mod lower;

use naga::{
    Arena, Block, Expression, Function, Handle, Range, ScalarKind, Span, Statement, Type, TypeInner, UniqueArena,
    VectorSize,
};

use crate::FormsError;
use crate::mathlib::Linked;

/// The NaN every form stores: a quiet NaN with no payload and the sign bit clear.
pub const CANONICAL_NAN: u32 = 0x7fc0_0000;

/// Rewrites every function of `module` (which `info` describes) in place; the caller validates
/// the result again.
pub(crate) fn exact(
    module: &mut naga::Module,
    info: &naga::valid::ModuleInfo,
    linked: &Linked,
) -> Result<(), FormsError> {
    rewrite_all(module, info, linked, None)
}

/// For llvmpipe: hides every operand of a float `+ - * /` that its compiler could fold to a
/// constant, as `bitcast<f32>(bitcast<u32>(x) | zero)` with `zero` the second word of storage
/// array `word` (always 0, and unknown to the compiler). llvmpipe's code builder folds
/// `x * 0.0` to `0.0`, `0.0 / x` to `0.0` and `x + 0.0` to `x` whatever the SPIR-V asks, which
/// is wrong for NaN, infinities and signed zeros (measured: `b * 0.0` gave +0 for -1, inf, -0
/// and NaN), and its NIR folds values such as `f32(x < x)` to constants first. An operand that
/// is itself a hidden `+ - * /` needs no hiding.
pub(crate) fn opaque_constants(
    module: &mut naga::Module,
    info: &naga::valid::ModuleInfo,
    word: Handle<naga::GlobalVariable>,
) -> Result<(), FormsError> {
    rewrite_all(module, info, &Linked::default(), Some(word))
}

fn rewrite_all(
    module: &mut naga::Module,
    info: &naga::valid::ModuleInfo,
    linked: &Linked,
    opaque: Option<Handle<naga::GlobalVariable>>,
) -> Result<(), FormsError> {
    let handles: Vec<Handle<Function>> = module.functions.iter().map(|(h, _)| h).collect();
    for handle in handles {
        let fun = &mut module.functions[handle];
        rewrite(fun, &mut module.types, &info[handle], linked, opaque)?;
    }
    for (index, ep) in module.entry_points.iter_mut().enumerate() {
        rewrite(&mut ep.function, &mut module.types, info.get_entry_point(index), linked, opaque)?;
    }
    Ok(())
}

fn rewrite(
    fun: &mut Function,
    types: &mut UniqueArena<Type>,
    info: &naga::valid::FunctionInfo,
    linked: &Linked,
    opaque: Option<Handle<naga::GlobalVariable>>,
) -> Result<(), FormsError> {
    let old = std::mem::take(&mut fun.expressions);
    let body = std::mem::take(&mut fun.body);
    let mut r = Rewriter {
        types,
        info,
        map: vec![None; old.len()],
        old,
        new: Arena::new(),
        pending: None,
        outs: Vec::new(),
        opaque: None,
        linked,
    };
    // The zero word is loaded once, at the top of the function, and every hidden operand ORs
    // with that one value (a load per use cost 6x on escape's loop).
    let mut prelude = None;
    if let Some(word) = opaque {
        let global = r.new.append(Expression::GlobalVariable(word), Span::UNDEFINED);
        let first = r.new.len() as u32;
        let at = r.new.append(Expression::AccessIndex { base: global, index: 1 }, Span::UNDEFINED);
        let zero = r.new.append(Expression::Load { pointer: at }, Span::UNDEFINED);
        r.opaque = Some(zero);
        prelude = Some(Range::from_index_range(first..first + 2, &r.new));
    }
    let locals: Vec<_> = fun.local_variables.iter().map(|(h, l)| (h, l.init)).collect();
    for (handle, init) in locals {
        if let Some(init) = init {
            let copied = r.const_copy(init)?;
            fun.local_variables[handle].init = Some(copied);
        }
    }
    fun.body = r.block(body)?;
    if let Some(range) = prelude {
        let body = std::mem::take(&mut fun.body);
        fun.body.push(Statement::Emit(range), Span::UNDEFINED);
        fun.body.append(&mut { body });
    }
    let named = std::mem::take(&mut fun.named_expressions);
    for (old, name) in named {
        if let Some(new) = r.map[old.index()] {
            fun.named_expressions.insert(new, name);
        }
    }
    fun.expressions = r.new;
    Ok(())
}

struct Rewriter<'a> {
    types: &'a mut UniqueArena<Type>,
    /// Types of the old expressions, from validation.
    info: &'a naga::valid::FunctionInfo,
    old: Arena<Expression>,
    new: Arena<Expression>,
    /// Old expression handle → its rewritten handle.
    map: Vec<Option<Handle<Expression>>>,
    /// Start of the new expressions not yet covered by an `Emit`.
    pending: Option<u32>,
    /// The blocks being written, innermost last.
    outs: Vec<Block>,
    /// Only hide operands ([`opaque_constants`]), with this zero, loaded at the function's top.
    opaque: Option<Handle<Expression>>,
    /// The math library's functions in this module, which builtins become calls of.
    linked: &'a Linked,
}

fn internal(what: &str) -> FormsError {
    FormsError::Internal(format!("the exactness pass met {what}"))
}

impl Rewriter<'_> {
    fn ty(&self, old: Handle<Expression>) -> TypeInner {
        self.info[old].ty.inner_with(self.types).clone()
    }

    fn kind(&self, old: Handle<Expression>) -> Option<ScalarKind> {
        self.ty(old).scalar_kind()
    }

    fn size(&self, old: Handle<Expression>) -> Option<VectorSize> {
        match self.ty(old) {
            TypeInner::Vector { size, .. } => Some(size),
            _ => None,
        }
    }

    /// The type of an old expression as a handle, adding it to the arena if it has none.
    fn type_handle(&mut self, old: Handle<Expression>) -> Handle<Type> {
        match self.info[old].ty {
            naga::proc::TypeResolution::Handle(h) => h,
            naga::proc::TypeResolution::Value(ref inner) => {
                let inner = inner.clone();
                self.types.insert(Type { name: None, inner }, Span::UNDEFINED)
            }
        }
    }

    /// Appends an expression, covering it with an `Emit` unless it needs none.
    fn push(&mut self, e: Expression, span: Span) -> Handle<Expression> {
        if e.needs_pre_emit() {
            self.flush();
        } else if self.pending.is_none() {
            self.pending = Some(self.new.len() as u32);
        }
        self.new.append(e, span)
    }

    /// Writes an `Emit` for the expressions appended since the last one.
    fn flush(&mut self) {
        if let Some(start) = self.pending.take() {
            let end = self.new.len() as u32;
            if end > start {
                let range = Range::from_index_range(start..end, &self.new);
                if let Some(out) = self.outs.last_mut() {
                    out.push(Statement::Emit(range), Span::UNDEFINED);
                }
            }
        }
    }

    /// Calls `function` with `arguments` (new handles), returning its result.
    fn call(
        &mut self,
        function: Handle<Function>,
        arguments: Vec<Handle<Expression>>,
        span: Span,
    ) -> Handle<Expression> {
        self.flush();
        let result = self.new.append(Expression::CallResult(function), span);
        self.stmt(Statement::Call { function, arguments, result: Some(result) }, span);
        result
    }

    fn stmt(&mut self, s: Statement, span: Span) {
        self.flush();
        if let Some(out) = self.outs.last_mut() {
            out.push(s, span);
        }
    }

    /// The new handle of an old expression; pre-emitted ones are copied on first use.
    fn get(&mut self, old: Handle<Expression>) -> Result<Handle<Expression>, FormsError> {
        if let Some(h) = self.map[old.index()] {
            return Ok(h);
        }
        let e = self.old[old].clone();
        if !e.needs_pre_emit() {
            return Err(internal("an expression used before it was emitted"));
        }
        let h = self.push(e, self.old.get_span(old));
        self.map[old.index()] = Some(h);
        Ok(h)
    }

    /// Copies a constant expression tree (a local variable's initializer) without emitting it.
    fn const_copy(&mut self, old: Handle<Expression>) -> Result<Handle<Expression>, FormsError> {
        if let Some(h) = self.map[old.index()] {
            return Ok(h);
        }
        let e = match self.old[old].clone() {
            Expression::Compose { ty, components } => {
                let components = components.into_iter().map(|c| self.const_copy(c)).collect::<Result<_, _>>()?;
                Expression::Compose { ty, components }
            }
            Expression::Splat { size, value } => Expression::Splat { size, value: self.const_copy(value)? },
            e @ (Expression::Literal(_) | Expression::Constant(_) | Expression::ZeroValue(_)) => e,
            _ => return Err(internal("a local variable initialised with something other than a constant")),
        };
        let h = self.new.append(e, self.old.get_span(old));
        self.map[old.index()] = Some(h);
        Ok(h)
    }

    /// An old expression with its operands mapped to new handles.
    fn remap(&mut self, e: Expression) -> Result<Expression, FormsError> {
        use Expression as E;
        Ok(match e {
            E::Compose { ty, components } => {
                E::Compose { ty, components: components.into_iter().map(|c| self.get(c)).collect::<Result<_, _>>()? }
            }
            E::Access { base, index } => E::Access { base: self.get(base)?, index: self.get(index)? },
            E::AccessIndex { base, index } => E::AccessIndex { base: self.get(base)?, index },
            E::Splat { size, value } => E::Splat { size, value: self.get(value)? },
            E::Swizzle { size, vector, pattern } => E::Swizzle { size, vector: self.get(vector)?, pattern },
            E::Load { pointer } => E::Load { pointer: self.get(pointer)? },
            E::Unary { op, expr } => E::Unary { op, expr: self.get(expr)? },
            E::Binary { op, left, right } => E::Binary { op, left: self.get(left)?, right: self.get(right)? },
            E::Select { condition, accept, reject } => {
                E::Select { condition: self.get(condition)?, accept: self.get(accept)?, reject: self.get(reject)? }
            }
            E::Relational { fun, argument } => E::Relational { fun, argument: self.get(argument)? },
            E::Math { fun, arg, arg1, arg2, arg3 } => E::Math {
                fun,
                arg: self.get(arg)?,
                arg1: arg1.map(|a| self.get(a)).transpose()?,
                arg2: arg2.map(|a| self.get(a)).transpose()?,
                arg3: arg3.map(|a| self.get(a)).transpose()?,
            },
            E::As { expr, kind, convert } => E::As { expr: self.get(expr)?, kind, convert },
            E::ArrayLength(e) => E::ArrayLength(self.get(e)?),
            e @ (E::Literal(_)
            | E::Constant(_)
            | E::ZeroValue(_)
            | E::FunctionArgument(_)
            | E::GlobalVariable(_)
            | E::LocalVariable(_)) => e,
            _ => return Err(internal("an expression outside the exact subset")),
        })
    }

    /// Stores `value` (new handles) through `pointer`, canonicalising floats when the pointer
    /// reaches a storage array; `ty` is the stored type.
    fn store(&mut self, pointer: Handle<Expression>, value: Handle<Expression>, ty: &TypeInner, span: Span) {
        match *ty {
            TypeInner::Scalar(s) if s.kind == ScalarKind::Float => {
                let v = self.canonical(value, None, span);
                self.stmt(Statement::Store { pointer, value: v }, span);
            }
            TypeInner::Vector { size, scalar } if scalar.kind == ScalarKind::Float => {
                let v = self.canonical(value, Some(size), span);
                self.stmt(Statement::Store { pointer, value: v }, span);
            }
            TypeInner::Struct { ref members, .. } if contains_float(self.types, ty) => {
                let members: Vec<_> = members.iter().map(|m| self.types[m.ty].inner.clone()).collect();
                for (i, member) in members.iter().enumerate() {
                    let p = self.push(Expression::AccessIndex { base: pointer, index: i as u32 }, span);
                    let v = self.push(Expression::AccessIndex { base: value, index: i as u32 }, span);
                    self.store(p, v, member, span);
                }
            }
            TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } if contains_float(self.types, ty) => {
                let element = self.types[base].inner.clone();
                for i in 0..n.get() {
                    let p = self.push(Expression::AccessIndex { base: pointer, index: i }, span);
                    let v = self.push(Expression::AccessIndex { base: value, index: i }, span);
                    self.store(p, v, &element, span);
                }
            }
            _ => self.stmt(Statement::Store { pointer, value }, span),
        }
    }

    /// A store: into storage, through [`Self::store`] (which writes floats canonically), else
    /// as it was.
    fn lower_store(
        &mut self,
        pointer: Handle<Expression>,
        value: Handle<Expression>,
        span: naga::Span,
    ) -> Result<(), FormsError> {
        let pointee = match self.ty(pointer) {
            TypeInner::Pointer { base, space: naga::AddressSpace::Storage { .. } } => {
                Some(self.types[base].inner.clone())
            }
            TypeInner::ValuePointer { size, scalar, space: naga::AddressSpace::Storage { .. } } => Some(match size {
                Some(size) => TypeInner::Vector { size, scalar },
                None => TypeInner::Scalar(scalar),
            }),
            _ => None,
        };
        let (p, v) = (self.get(pointer)?, self.get(value)?);
        match pointee {
            Some(ty) if self.opaque.is_none() => self.store(p, v, &ty, span),
            _ => self.stmt(Statement::Store { pointer: p, value: v }, span),
        }
        Ok(())
    }

    fn block(&mut self, old: Block) -> Result<Block, FormsError> {
        self.outs.push(Block::new());
        for (statement, span) in old.span_into_iter() {
            match statement {
                Statement::Emit(range) => {
                    for h in range {
                        self.lower(h)?;
                    }
                    self.flush();
                }
                Statement::Block(inner) => {
                    let inner = self.block(inner)?;
                    self.stmt(Statement::Block(inner), span);
                }
                Statement::If { condition, accept, reject } => {
                    let condition = self.get(condition)?;
                    self.flush();
                    let (accept, reject) = (self.block(accept)?, self.block(reject)?);
                    self.stmt(Statement::If { condition, accept, reject }, span);
                }
                Statement::Switch { selector, cases } => {
                    let selector = self.get(selector)?;
                    self.flush();
                    let mut new_cases = Vec::with_capacity(cases.len());
                    for case in cases {
                        new_cases.push(naga::SwitchCase { body: self.block(case.body)?, ..case });
                    }
                    self.stmt(Statement::Switch { selector, cases: new_cases }, span);
                }
                Statement::Loop { body, continuing, break_if } => {
                    self.flush();
                    let body = self.block(body)?;
                    let continuing = self.block(continuing)?;
                    let break_if = break_if.map(|h| self.get(h)).transpose()?;
                    self.stmt(Statement::Loop { body, continuing, break_if }, span);
                }
                s @ (Statement::Break | Statement::Continue | Statement::Kill) => self.stmt(s, span),
                Statement::Return { value } => {
                    let value = value.map(|v| self.get(v)).transpose()?;
                    self.stmt(Statement::Return { value }, span);
                }
                Statement::Store { pointer, value } => self.lower_store(pointer, value, span)?,
                Statement::Call { function, arguments, result } => {
                    let arguments = arguments.into_iter().map(|a| self.get(a)).collect::<Result<_, _>>()?;
                    self.flush();
                    let result = result.map(|old| {
                        let new = self.new.append(Expression::CallResult(function), self.old.get_span(old));
                        self.map[old.index()] = Some(new);
                        new
                    });
                    self.stmt(Statement::Call { function, arguments, result }, span);
                }
                _ => return Err(internal("a statement outside the exact subset")),
            }
        }
        self.flush();
        Ok(self.outs.pop().unwrap_or_default())
    }
}

fn contains_float(types: &UniqueArena<Type>, ty: &TypeInner) -> bool {
    match *ty {
        TypeInner::Scalar(s) | TypeInner::Vector { scalar: s, .. } => s.kind == ScalarKind::Float,
        TypeInner::Array { base, .. } => contains_float(types, &types[base].inner),
        TypeInner::Struct { ref members, .. } => members.iter().any(|m| contains_float(types, &types[m.ty].inner)),
        _ => false,
    }
}
