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
//! It touches only the IR: no device, no writer.

use naga::{
    Arena, BinaryOperator as Bo, Block, Expression, Function, Handle, Literal, MathFunction as Mf, Range, ScalarKind,
    Span, Statement, Type, TypeInner, UniqueArena, VectorSize,
};

use crate::FormsError;

/// The NaN every form stores: a quiet NaN with no payload and the sign bit clear.
pub const CANONICAL_NAN: u32 = 0x7fc0_0000;

/// Rewrites every function of `module` (which `info` describes) in place; the caller validates
/// the result again.
pub(crate) fn exact(module: &mut naga::Module, info: &naga::valid::ModuleInfo) -> Result<(), FormsError> {
    rewrite_all(module, info, None)
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
    rewrite_all(module, info, Some(word))
}

fn rewrite_all(
    module: &mut naga::Module,
    info: &naga::valid::ModuleInfo,
    opaque: Option<Handle<naga::GlobalVariable>>,
) -> Result<(), FormsError> {
    let handles: Vec<Handle<Function>> = module.functions.iter().map(|(h, _)| h).collect();
    for handle in handles {
        let fun = &mut module.functions[handle];
        rewrite(fun, &mut module.types, &info[handle], opaque)?;
    }
    for (index, ep) in module.entry_points.iter_mut().enumerate() {
        rewrite(&mut ep.function, &mut module.types, info.get_entry_point(index), opaque)?;
    }
    Ok(())
}

fn rewrite(
    fun: &mut Function,
    types: &mut UniqueArena<Type>,
    info: &naga::valid::FunctionInfo,
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
        opaque,
    };
    let locals: Vec<_> = fun.local_variables.iter().map(|(h, l)| (h, l.init)).collect();
    for (handle, init) in locals {
        if let Some(init) = init {
            let copied = r.const_copy(init)?;
            fun.local_variables[handle].init = Some(copied);
        }
    }
    fun.body = r.block(body)?;
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
    /// Only make float constants opaque ([`opaque_constants`]), with this zero word's array.
    opaque: Option<Handle<naga::GlobalVariable>>,
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

    fn literal(&mut self, kind: ScalarKind, value: f64, size: Option<VectorSize>, span: Span) -> Handle<Expression> {
        let lit = match kind {
            ScalarKind::Float => Literal::F32(value as f32),
            ScalarKind::Sint => Literal::I32(value as i32),
            _ => Literal::U32(value as u32),
        };
        let h = self.push(Expression::Literal(lit), span);
        self.splat(h, size, span)
    }

    fn splat(&mut self, value: Handle<Expression>, size: Option<VectorSize>, span: Span) -> Handle<Expression> {
        match size {
            Some(size) => self.push(Expression::Splat { size, value }, span),
            None => value,
        }
    }

    fn bin(&mut self, op: Bo, left: Handle<Expression>, right: Handle<Expression>, span: Span) -> Handle<Expression> {
        self.push(Expression::Binary { op, left, right }, span)
    }

    fn select(
        &mut self,
        c: Handle<Expression>,
        yes: Handle<Expression>,
        no: Handle<Expression>,
        span: Span,
    ) -> Handle<Expression> {
        self.push(Expression::Select { condition: c, accept: yes, reject: no }, span)
    }

    fn math(&mut self, fun: Mf, args: &[Handle<Expression>], span: Span) -> Handle<Expression> {
        let arg = |i: usize| args.get(i).copied();
        self.push(Expression::Math { fun, arg: args[0], arg1: arg(1), arg2: arg(2), arg3: arg(3) }, span)
    }

    /// `b < a ? b : a` (WGSL's `min`) or `a < b ? b : a` (its `max`).
    fn min_max(&mut self, fun: Mf, a: Handle<Expression>, b: Handle<Expression>, span: Span) -> Handle<Expression> {
        let less = if fun == Mf::Min { self.bin(Bo::Less, b, a, span) } else { self.bin(Bo::Less, a, b, span) };
        self.select(less, b, a, span)
    }

    /// Component `i` of a vector value.
    fn component(&mut self, v: Handle<Expression>, i: u32, span: Span) -> Handle<Expression> {
        self.push(Expression::AccessIndex { base: v, index: i }, span)
    }

    /// `a.x * b.x + a.y * b.y + …`, summed left to right.
    fn dot(&mut self, a: Handle<Expression>, b: Handle<Expression>, n: u32, span: Span) -> Handle<Expression> {
        let mut sum = None;
        for i in 0..n {
            let (x, y) = (self.component(a, i, span), self.component(b, i, span));
            let product = self.bin(Bo::Multiply, x, y, span);
            sum = Some(match sum {
                None => product,
                Some(s) => self.bin(Bo::Add, s, product, span),
            });
        }
        sum.unwrap_or(a)
    }

    /// `sqrt(dot(v, v))` for a vector, `abs(v)` for a scalar.
    fn length(&mut self, v: Handle<Expression>, size: Option<VectorSize>, span: Span) -> Handle<Expression> {
        match size {
            Some(n) => {
                let d = self.dot(v, v, n as u32, span);
                self.math(Mf::Sqrt, &[d], span)
            }
            None => self.math(Mf::Abs, &[v], span),
        }
    }

    /// The bits of `x` with every NaN made [`CANONICAL_NAN`], as a u32 (vector) value.
    ///
    /// The test is on the bits, not `x != x`: LLVM (llvmpipe) treats all NaNs as one value and
    /// folds `x != x ? NaN : x` back to `x`, which would let a payload through.
    fn canonical_bits(&mut self, x: Handle<Expression>, size: Option<VectorSize>, span: Span) -> Handle<Expression> {
        let bits = self.push(Expression::As { expr: x, kind: ScalarKind::Uint, convert: None }, span);
        let magnitude = self.literal(ScalarKind::Uint, f64::from(0x7fff_ffffu32), size, span);
        let infinity = self.literal(ScalarKind::Uint, f64::from(0x7f80_0000u32), size, span);
        let canon = self.literal(ScalarKind::Uint, f64::from(CANONICAL_NAN), size, span);
        let abs = self.bin(Bo::And, bits, magnitude, span);
        let nan = self.bin(Bo::Greater, abs, infinity, span);
        self.select(nan, canon, bits, span)
    }

    /// `x` with every NaN made [`CANONICAL_NAN`], as a float (vector) value.
    fn canonical(&mut self, x: Handle<Expression>, size: Option<VectorSize>, span: Span) -> Handle<Expression> {
        let bits = self.canonical_bits(x, size, span);
        self.push(Expression::As { expr: bits, kind: ScalarKind::Float, convert: None }, span)
    }

    /// `bitcast<f32>(bitcast<u32>(x) | zero)`, with `zero` loaded from the opaque word.
    fn opaque(
        &mut self,
        x: Handle<Expression>,
        word: Handle<naga::GlobalVariable>,
        size: Option<VectorSize>,
        span: Span,
    ) -> Handle<Expression> {
        let global = self.push(Expression::GlobalVariable(word), span);
        let at = self.push(Expression::AccessIndex { base: global, index: 1 }, span);
        let zero = self.push(Expression::Load { pointer: at }, span);
        let zero = self.splat(zero, size, span);
        let bits = self.push(Expression::As { expr: x, kind: ScalarKind::Uint, convert: None }, span);
        let hidden = self.bin(Bo::InclusiveOr, bits, zero, span);
        self.push(Expression::As { expr: hidden, kind: ScalarKind::Float, convert: None }, span)
    }

    /// [`opaque_constants`]'s rewrite of one emitted expression.
    fn lower_opaque(
        &mut self,
        old: Handle<Expression>,
        word: Handle<naga::GlobalVariable>,
    ) -> Result<Handle<Expression>, FormsError> {
        let span = self.old.get_span(old);
        match self.old[old] {
            Expression::Binary { op: op @ (Bo::Add | Bo::Subtract | Bo::Multiply | Bo::Divide), left, right }
                if self.kind(old) == Some(ScalarKind::Float) =>
            {
                let mut operands = [left, right].map(|h| (h, None));
                for (h, new) in operands.iter_mut() {
                    let value = self.get(*h)?;
                    // What the compiler may fold to a constant is hidden: anything but the result
                    // of another (already hidden) float + - * /.
                    let computed = matches!(
                        self.old[*h],
                        Expression::Binary { op: Bo::Add | Bo::Subtract | Bo::Multiply | Bo::Divide, .. }
                    );
                    *new = Some(if computed { value } else { self.opaque(value, word, self.size(*h), span) });
                }
                let [(_, Some(l)), (_, Some(r))] = operands else {
                    return Err(internal("an operand that did not map"));
                };
                Ok(self.bin(op, l, r, span))
            }
            ref other => {
                let e = self.remap(other.clone())?;
                Ok(self.push(e, span))
            }
        }
    }

    /// Rewrites one emitted expression.
    fn lower(&mut self, old: Handle<Expression>) -> Result<(), FormsError> {
        if let Some(word) = self.opaque {
            let new = self.lower_opaque(old, word)?;
            self.map[old.index()] = Some(new);
            return Ok(());
        }
        let span = self.old.get_span(old);
        let e = self.old[old].clone();
        let float = self.kind(old) == Some(ScalarKind::Float);
        let size = self.size(old);
        let new = match e {
            Expression::Math { fun, arg, arg1, arg2, .. } => {
                let a = self.get(arg)?;
                let b = arg1.map(|h| self.get(h)).transpose()?;
                let c = arg2.map(|h| self.get(h)).transpose()?;
                let arg_float = self.kind(arg) == Some(ScalarKind::Float);
                let arg_size = self.size(arg);
                match (fun, b, c) {
                    (Mf::Min | Mf::Max, Some(b), _) if float => self.min_max(fun, a, b, span),
                    (Mf::Clamp, Some(lo), Some(hi)) => {
                        if float {
                            let m = self.min_max(Mf::Max, a, lo, span);
                            self.min_max(Mf::Min, m, hi, span)
                        } else {
                            let m = self.math(Mf::Max, &[a, lo], span);
                            self.math(Mf::Min, &[m, hi], span)
                        }
                    }
                    (Mf::Saturate, _, _) => {
                        let (zero, one) = (
                            self.literal(ScalarKind::Float, 0.0, size, span),
                            self.literal(ScalarKind::Float, 1.0, size, span),
                        );
                        let m = self.min_max(Mf::Max, a, zero, span);
                        self.min_max(Mf::Min, m, one, span)
                    }
                    (Mf::Dot, Some(b), _) => self.dot(a, b, arg_size.map_or(1, |s| s as u32), span),
                    (Mf::Length, _, _) => self.length(a, arg_size, span),
                    (Mf::Distance, Some(b), _) => {
                        let d = self.bin(Bo::Subtract, a, b, span);
                        self.length(d, arg_size, span)
                    }
                    (Mf::Normalize, _, _) => {
                        let len = self.length(a, arg_size, span);
                        let len = self.splat(len, arg_size, span);
                        self.bin(Bo::Divide, a, len, span)
                    }
                    (Mf::Cross, Some(b), _) => {
                        let mut parts = Vec::new();
                        for (i, j) in [(1, 2), (2, 0), (0, 1)] {
                            let (ai, bj, aj, bi) = (
                                self.component(a, i, span),
                                self.component(b, j, span),
                                self.component(a, j, span),
                                self.component(b, i, span),
                            );
                            let (l, r) = (self.bin(Bo::Multiply, ai, bj, span), self.bin(Bo::Multiply, aj, bi, span));
                            parts.push(self.bin(Bo::Subtract, l, r, span));
                        }
                        let ty = self.type_handle(old);
                        self.push(Expression::Compose { ty, components: parts }, span)
                    }
                    (Mf::Sign, _, _) => {
                        let kind = self.kind(old).unwrap_or(ScalarKind::Float);
                        let zero = self.literal(kind, 0.0, size, span);
                        let one = self.literal(kind, 1.0, size, span);
                        let minus = self.literal(kind, -1.0, size, span);
                        let gt = self.bin(Bo::Greater, a, zero, span);
                        let lt = self.bin(Bo::Less, a, zero, span);
                        let s = self.select(gt, one, zero, span);
                        self.select(lt, minus, s, span)
                    }
                    (Mf::Fract, _, _) => {
                        let f = self.math(Mf::Floor, &[a], span);
                        self.bin(Bo::Subtract, a, f, span)
                    }
                    (Mf::Step, Some(x), _) => {
                        let (zero, one) = (
                            self.literal(ScalarKind::Float, 0.0, size, span),
                            self.literal(ScalarKind::Float, 1.0, size, span),
                        );
                        let le = self.bin(Bo::LessEqual, a, x, span);
                        self.select(le, one, zero, span)
                    }
                    (Mf::Mix, Some(b), Some(t)) => {
                        let t =
                            if self.size(arg2.unwrap_or(arg)).is_none() { self.splat(t, arg_size, span) } else { t };
                        let one = self.literal(ScalarKind::Float, 1.0, arg_size, span);
                        let rest = self.bin(Bo::Subtract, one, t, span);
                        let l = self.bin(Bo::Multiply, a, rest, span);
                        let r = self.bin(Bo::Multiply, b, t, span);
                        self.bin(Bo::Add, l, r, span)
                    }
                    (Mf::ExtractBits, Some(offset), Some(count)) => {
                        let (o, c) = self.clamp_bits(offset, count, span);
                        self.math(Mf::ExtractBits, &[a, o, c], span)
                    }
                    (Mf::InsertBits, Some(bits), Some(offset)) => {
                        let count = match self.old[old] {
                            Expression::Math { arg3: Some(count), .. } => self.get(count)?,
                            _ => return Err(internal("insertBits without a count")),
                        };
                        let (o, c) = self.clamp_bits(offset, count, span);
                        self.math(Mf::InsertBits, &[a, bits, o, c], span)
                    }
                    _ => {
                        let _ = arg_float;
                        let e = self.remap(self.old[old].clone())?;
                        self.push(e, span)
                    }
                }
            }
            Expression::As { expr, kind: kind @ (ScalarKind::Sint | ScalarKind::Uint), convert }
                if self.kind(expr) == Some(ScalarKind::Float) =>
            {
                let x = self.get(expr)?;
                let size = self.size(expr);
                match convert {
                    Some(_) => {
                        let converted = self.push(Expression::As { expr: x, kind, convert }, span);
                        // Not `x != x`: naga writes that as the ordered not-equal, false for NaN.
                        let same = self.bin(Bo::Equal, x, x, span);
                        let nan =
                            self.push(Expression::Unary { op: naga::UnaryOperator::LogicalNot, expr: same }, span);
                        let zero = self.literal(kind, 0.0, size, span);
                        self.select(nan, zero, converted, span)
                    }
                    None => {
                        let bits = self.canonical_bits(x, size, span);
                        match kind {
                            ScalarKind::Uint => bits,
                            _ => self.push(Expression::As { expr: bits, kind, convert }, span),
                        }
                    }
                }
            }
            // naga writes float `!=` as SPIR-V's ordered not-equal, false for NaN; IEEE (and
            // every other form) says true: `!(a == b)` is the same everywhere.
            Expression::Binary { op: Bo::NotEqual, left, right } if self.kind(left) == Some(ScalarKind::Float) => {
                let (l, r) = (self.get(left)?, self.get(right)?);
                let equal = self.bin(Bo::Equal, l, r, span);
                self.push(Expression::Unary { op: naga::UnaryOperator::LogicalNot, expr: equal }, span)
            }
            Expression::Binary { op: op @ (Bo::ShiftLeft | Bo::ShiftRight), left, right } => {
                let (l, r) = (self.get(left)?, self.get(right)?);
                let mask = self.literal(ScalarKind::Uint, 31.0, self.size(right), span);
                let r = self.bin(Bo::And, r, mask, span);
                self.bin(op, l, r, span)
            }
            other => {
                let e = self.remap(other)?;
                self.push(e, span)
            }
        };
        self.map[old.index()] = Some(new);
        Ok(())
    }

    /// WGSL's `o = min(offset, 32u)`, `c = min(count, 32u - o)`.
    fn clamp_bits(
        &mut self,
        offset: Handle<Expression>,
        count: Handle<Expression>,
        span: Span,
    ) -> (Handle<Expression>, Handle<Expression>) {
        let w = self.literal(ScalarKind::Uint, 32.0, None, span);
        let o = self.math(Mf::Min, &[offset, w], span);
        let room = self.bin(Bo::Subtract, w, o, span);
        let c = self.math(Mf::Min, &[count, room], span);
        (o, c)
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
                Statement::Store { pointer, value } => {
                    let pointee = match self.ty(pointer) {
                        TypeInner::Pointer { base, space: naga::AddressSpace::Storage { .. } } => {
                            Some(self.types[base].inner.clone())
                        }
                        TypeInner::ValuePointer { size, scalar, space: naga::AddressSpace::Storage { .. } } => {
                            Some(match size {
                                Some(size) => TypeInner::Vector { size, scalar },
                                None => TypeInner::Scalar(scalar),
                            })
                        }
                        _ => None,
                    };
                    let (p, v) = (self.get(pointer)?, self.get(value)?);
                    match pointee {
                        Some(ty) if self.opaque.is_none() => self.store(p, v, &ty, span),
                        _ => self.stmt(Statement::Store { pointer: p, value: v }, span),
                    }
                }
                Statement::Call { function, arguments, result } => {
                    let arguments = arguments.into_iter().map(|a| self.get(a)).collect::<Result<_, _>>()?;
                    self.flush();
                    let result = match result {
                        Some(old) => {
                            let new = self.new.append(Expression::CallResult(function), self.old.get_span(old));
                            self.map[old.index()] = Some(new);
                            Some(new)
                        }
                        None => None,
                    };
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
