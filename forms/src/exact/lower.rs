//! What each construct becomes in the exactness pass (see the module above), and the hiding of
//! constants for llvmpipe.

use naga::{BinaryOperator as Bo, Expression, Handle, Literal, MathFunction as Mf, ScalarKind, Span, VectorSize};

use super::{CANONICAL_NAN, Rewriter, internal};
use crate::FormsError;

impl Rewriter<'_> {
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

    /// A call of the math library's `function` in place of a builtin: once for a scalar, once
    /// per component (the arguments' components) for a vector, composed again.
    fn library_call(
        &mut self,
        old: Handle<Expression>,
        function: Handle<naga::Function>,
        args: &[Handle<Expression>],
        size: Option<VectorSize>,
        span: Span,
    ) -> Handle<Expression> {
        let Some(size) = size else { return self.call(function, args.to_vec(), span) };
        let components = (0..size as u32)
            .map(|i| {
                let parts = args.iter().map(|&a| self.component(a, i, span)).collect();
                self.call(function, parts, span)
            })
            .collect();
        let ty = self.type_handle(old);
        self.push(Expression::Compose { ty, components }, span)
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
    pub(super) fn canonical(
        &mut self,
        x: Handle<Expression>,
        size: Option<VectorSize>,
        span: Span,
    ) -> Handle<Expression> {
        let bits = self.canonical_bits(x, size, span);
        self.push(Expression::As { expr: bits, kind: ScalarKind::Float, convert: None }, span)
    }

    /// `bitcast<f32>(bitcast<u32>(x) | zero)`, with `zero` the word loaded at the function's top.
    fn opaque(
        &mut self,
        x: Handle<Expression>,
        zero: Handle<Expression>,
        size: Option<VectorSize>,
        span: Span,
    ) -> Handle<Expression> {
        let zero = self.splat(zero, size, span);
        let bits = self.push(Expression::As { expr: x, kind: ScalarKind::Uint, convert: None }, span);
        let hidden = self.bin(Bo::InclusiveOr, bits, zero, span);
        self.push(Expression::As { expr: hidden, kind: ScalarKind::Float, convert: None }, span)
    }

    /// [`opaque_constants`]'s rewrite of one emitted expression.
    fn lower_opaque(
        &mut self,
        old: Handle<Expression>,
        word: Handle<Expression>,
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
            // A float select of constants is a pattern NIR rewrites into its own operations
            // (`x < 0 ? -1 : (0 < x ? 1 : 0)` became its fsign, which keeps -0): its arms are
            // hidden too.
            Expression::Select { condition, accept, reject } if self.kind(old) == Some(ScalarKind::Float) => {
                let c = self.get(condition)?;
                let mut arms = [accept, reject].map(|h| (h, None));
                for (h, new) in arms.iter_mut() {
                    let value = self.get(*h)?;
                    let computed = matches!(self.old[*h], Expression::Binary { .. } | Expression::Select { .. });
                    *new = Some(if computed { value } else { self.opaque(value, word, self.size(*h), span) });
                }
                let [(_, Some(yes)), (_, Some(no))] = arms else { return Err(internal("an arm that did not map")) };
                Ok(self.select(c, yes, no, span))
            }
            ref other => {
                let e = self.remap(other.clone())?;
                Ok(self.push(e, span))
            }
        }
    }

    /// A packing builtin as one call of the library's function on its whole arguments.
    fn whole_call(
        &mut self,
        fun: Mf,
        arg: Handle<Expression>,
        arg1: Option<Handle<Expression>>,
        span: Span,
    ) -> Result<Handle<Expression>, FormsError> {
        let args = [Some(arg), arg1].into_iter().flatten().map(|a| self.get(a)).collect::<Result<Vec<_>, _>>()?;
        let function = self.linked.get(fun).ok_or_else(|| internal("a library function not linked"))?;
        Ok(self.call(function, args, span))
    }

    /// `left % right` on floats: the library's exact remainder, a scalar operand splatted first.
    fn float_remainder(
        &mut self,
        old: Handle<Expression>,
        left: Handle<Expression>,
        right: Handle<Expression>,
        span: Span,
    ) -> Result<Handle<Expression>, FormsError> {
        let size = self.size(old);
        let mut operands = [left, right].map(|h| (h, None));
        for (h, new) in operands.iter_mut() {
            let value = self.get(*h)?;
            *new = Some(if self.size(*h).is_none() { self.splat(value, size, span) } else { value });
        }
        let [(_, Some(l)), (_, Some(r))] = operands else {
            return Err(internal("an operand that did not map"));
        };
        let function = self.linked.remainder().ok_or_else(|| internal("the remainder not linked"))?;
        Ok(self.library_call(old, function, &[l, r], size, span))
    }

    /// Rewrites one emitted expression.
    pub(super) fn lower(&mut self, old: Handle<Expression>) -> Result<(), FormsError> {
        if let Some(word) = self.opaque {
            let new = self.lower_opaque(old, word)?;
            self.map[old.index()] = Some(new);
            return Ok(());
        }
        let span = self.old.get_span(old);
        let e = self.old[old].clone();
        let new = match e {
            // The packing builtins: one call on the whole values.
            Expression::Math { fun, arg, arg1, .. }
                if crate::mathlib::takes_whole(fun) && self.linked.get(fun).is_some() =>
            {
                self.whole_call(fun, arg, arg1, span)?
            }
            Expression::Math { fun, arg, arg1, arg2, .. }
                if self.kind(old) == Some(ScalarKind::Float) && self.linked.get(fun).is_some() =>
            {
                let args = [Some(arg), arg1, arg2]
                    .into_iter()
                    .flatten()
                    .map(|a| self.get(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let function = self.linked.get(fun).ok_or_else(|| internal("a library function not linked"))?;
                self.library_call(old, function, &args, self.size(old), span)
            }
            Expression::Math { fun: fun @ (Mf::Frexp | Mf::Modf), arg, .. } if self.linked.get(fun).is_some() => {
                self.lower_split(old, fun, arg, span)?
            }
            Expression::Math { fun, arg, arg1, arg2, .. } => self.lower_math(old, fun, arg, arg1, arg2, span)?,
            Expression::As { expr, kind: kind @ (ScalarKind::Sint | ScalarKind::Uint), convert }
                if self.kind(expr) == Some(ScalarKind::Float) =>
            {
                self.float_to_int(expr, kind, convert, span)?
            }
            // `%` on floats: the library's exact remainder, a scalar operand splatted first.
            Expression::Binary { op: Bo::Modulo, left, right }
                if self.kind(old) == Some(ScalarKind::Float) && self.linked.remainder().is_some() =>
            {
                self.float_remainder(old, left, right, span)?
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

    /// Rewrites a math function the exact subset writes out: min, max and clamp of floats as
    /// comparisons (NaN and signed zeros as WGSL says), saturate, sign, fract, step, mix, and
    /// the bit fields with their counts clamped; the geometric ones in [`Self::lower_geometric`].
    fn lower_math(
        &mut self,
        old: Handle<Expression>,
        fun: Mf,
        arg: Handle<Expression>,
        arg1: Option<Handle<Expression>>,
        arg2: Option<Handle<Expression>>,
        span: naga::Span,
    ) -> Result<Handle<Expression>, FormsError> {
        let float = self.kind(old) == Some(ScalarKind::Float);
        let size = self.size(old);
        let a = self.get(arg)?;
        let b = arg1.map(|h| self.get(h)).transpose()?;
        let c = arg2.map(|h| self.get(h)).transpose()?;
        let arg_size = self.size(arg);
        Ok(match (fun, b, c) {
            (Mf::Min | Mf::Max, Some(b), _) if float => self.min_max(fun, a, b, span),
            (Mf::Clamp, Some(lo), Some(hi)) => self.clamp(float, a, lo, hi, span),
            (Mf::Saturate, _, _) => {
                let (zero, one) = self.zero_one(size, span);
                self.clamp(true, a, zero, one, span)
            }
            (Mf::Sign, _, _) => self.sign(old, a, size, span),
            (Mf::Fract, _, _) => {
                let f = self.math(Mf::Floor, &[a], span);
                self.bin(Bo::Subtract, a, f, span)
            }
            (Mf::Step, Some(x), _) => {
                let (zero, one) = self.zero_one(size, span);
                let le = self.bin(Bo::LessEqual, a, x, span);
                self.select(le, one, zero, span)
            }
            (Mf::Mix, Some(b), Some(t)) => {
                let t = if self.size(arg2.unwrap_or(arg)).is_none() { self.splat(t, arg_size, span) } else { t };
                self.mix(a, b, t, arg_size, span)
            }
            (Mf::ExtractBits | Mf::InsertBits, Some(b), Some(c)) => self.lower_bits(old, fun, a, b, c, span)?,
            (Mf::Dot | Mf::Length | Mf::Distance | Mf::Normalize | Mf::Cross, _, _) => {
                self.lower_geometric(old, fun, a, b, arg_size, span)?
            }
            (Mf::SmoothStep, Some(high), Some(x)) => self.smoothstep(a, high, x, size, span),
            (Mf::Reflect | Mf::Refract | Mf::FaceForward, Some(b), c) => {
                self.lower_facing(old, fun, a, b, c, arg_size, span)?
            }
            _ => {
                let e = self.remap(self.old[old].clone())?;
                self.push(e, span)
            }
        })
    }

    /// Float literals 0 and 1 of `size`.
    fn zero_one(
        &mut self,
        size: Option<naga::VectorSize>,
        span: naga::Span,
    ) -> (Handle<Expression>, Handle<Expression>) {
        (self.literal(ScalarKind::Float, 0.0, size, span), self.literal(ScalarKind::Float, 1.0, size, span))
    }

    /// `clamp(a, lo, hi)`: floats through the exact min and max, integers through the native ones.
    fn clamp(
        &mut self,
        float: bool,
        a: Handle<Expression>,
        lo: Handle<Expression>,
        hi: Handle<Expression>,
        span: naga::Span,
    ) -> Handle<Expression> {
        if float {
            let m = self.min_max(Mf::Max, a, lo, span);
            self.min_max(Mf::Min, m, hi, span)
        } else {
            let m = self.math(Mf::Max, &[a, lo], span);
            self.math(Mf::Min, &[m, hi], span)
        }
    }

    /// `mix(a, b, t)` as WGSL defines it: `a * (1 - t) + b * t`.
    fn mix(
        &mut self,
        a: Handle<Expression>,
        b: Handle<Expression>,
        t: Handle<Expression>,
        size: Option<naga::VectorSize>,
        span: naga::Span,
    ) -> Handle<Expression> {
        let one = self.literal(ScalarKind::Float, 1.0, size, span);
        let rest = self.bin(Bo::Subtract, one, t, span);
        let l = self.bin(Bo::Multiply, a, rest, span);
        let r = self.bin(Bo::Multiply, b, t, span);
        self.bin(Bo::Add, l, r, span)
    }

    /// `sign(a)` as comparisons: 1, 0 or -1 of `a`'s kind (0 for a NaN).
    fn sign(
        &mut self,
        old: Handle<Expression>,
        a: Handle<Expression>,
        size: Option<naga::VectorSize>,
        span: naga::Span,
    ) -> Handle<Expression> {
        let kind = self.kind(old).unwrap_or(ScalarKind::Float);
        let zero = self.literal(kind, 0.0, size, span);
        let one = self.literal(kind, 1.0, size, span);
        let minus = self.literal(kind, -1.0, size, span);
        let gt = self.bin(Bo::Greater, a, zero, span);
        let lt = self.bin(Bo::Less, a, zero, span);
        let s = self.select(gt, one, zero, span);
        self.select(lt, minus, s, span)
    }

    /// Rewrites `extractBits(a, offset, count)` and `insertBits(a, bits, offset, count)` with
    /// the offset and count clamped as WGSL says ([`Self::clamp_bits`]).
    fn lower_bits(
        &mut self,
        old: Handle<Expression>,
        fun: Mf,
        a: Handle<Expression>,
        b: Handle<Expression>,
        c: Handle<Expression>,
        span: naga::Span,
    ) -> Result<Handle<Expression>, FormsError> {
        if fun == Mf::ExtractBits {
            let (o, c) = self.clamp_bits(b, c, span);
            return Ok(self.math(Mf::ExtractBits, &[a, o, c], span));
        }
        let count = match self.old[old] {
            Expression::Math { arg3: Some(count), .. } => self.get(count)?,
            _ => return Err(internal("insertBits without a count")),
        };
        let (o, count) = self.clamp_bits(c, count, span);
        Ok(self.math(Mf::InsertBits, &[a, b, o, count], span))
    }

    /// Rewrites dot, length, distance, normalize and cross as arithmetic in a fixed order.
    fn lower_geometric(
        &mut self,
        old: Handle<Expression>,
        fun: Mf,
        a: Handle<Expression>,
        b: Option<Handle<Expression>>,
        arg_size: Option<naga::VectorSize>,
        span: naga::Span,
    ) -> Result<Handle<Expression>, FormsError> {
        Ok(match (fun, b) {
            (Mf::Dot, Some(b)) => self.dot(a, b, arg_size.map_or(1, |s| s as u32), span),
            (Mf::Length, _) => self.length(a, arg_size, span),
            (Mf::Distance, Some(b)) => {
                let d = self.bin(Bo::Subtract, a, b, span);
                self.length(d, arg_size, span)
            }
            (Mf::Normalize, _) => {
                let len = self.length(a, arg_size, span);
                let len = self.splat(len, arg_size, span);
                self.bin(Bo::Divide, a, len, span)
            }
            (Mf::Cross, Some(b)) => {
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
            _ => {
                let e = self.remap(self.old[old].clone())?;
                self.push(e, span)
            }
        })
    }

    /// `frexp(x)` and `modf(x)`, whose results are structs of two fields: the library's function
    /// gives both fields of one f32 as a vec2<f32> (frexp's exponent as an f32, which holds it
    /// exactly), called once per component and gathered into the struct WGSL declares.
    fn lower_split(
        &mut self,
        old: Handle<Expression>,
        fun: Mf,
        arg: Handle<Expression>,
        span: Span,
    ) -> Result<Handle<Expression>, FormsError> {
        let function = self.linked.get(fun).ok_or_else(|| internal("a library function not linked"))?;
        let (x, size) = (self.get(arg)?, self.size(arg));
        let ty = self.type_handle(old);
        let naga::TypeInner::Struct { ref members, .. } = self.types[ty].inner else {
            return Err(internal("frexp or modf without a struct result"));
        };
        let field_types: Vec<_> = members.iter().map(|m| m.ty).collect();
        let pairs: Vec<_> = (0..size.map_or(1, |s| s as u32))
            .map(|i| {
                let c = if size.is_some() { self.component(x, i, span) } else { x };
                self.call(function, vec![c], span)
            })
            .collect();
        let mut fields = Vec::new();
        for (k, &field_ty) in field_types.iter().enumerate() {
            let parts: Vec<_> = pairs
                .iter()
                .map(|&pair| {
                    let v = self.component(pair, k as u32, span);
                    if fun == Mf::Frexp && k == 1 {
                        self.push(Expression::As { expr: v, kind: ScalarKind::Sint, convert: Some(4) }, span)
                    } else {
                        v
                    }
                })
                .collect();
            fields.push(match size {
                Some(_) => self.push(Expression::Compose { ty: field_ty, components: parts }, span),
                None => parts[0],
            });
        }
        Ok(self.push(Expression::Compose { ty, components: fields }, span))
    }

    /// `smoothstep(low, high, x)` as WGSL defines it, each operation rounded once in its order:
    /// `t = clamp((x - low) / (high - low), 0, 1)`, then `t * t * (3 - 2 * t)`.
    fn smoothstep(
        &mut self,
        low: Handle<Expression>,
        high: Handle<Expression>,
        x: Handle<Expression>,
        size: Option<VectorSize>,
        span: Span,
    ) -> Handle<Expression> {
        let (zero, one) =
            (self.literal(ScalarKind::Float, 0.0, size, span), self.literal(ScalarKind::Float, 1.0, size, span));
        let (two, three) =
            (self.literal(ScalarKind::Float, 2.0, size, span), self.literal(ScalarKind::Float, 3.0, size, span));
        let (over, under) = (self.bin(Bo::Subtract, x, low, span), self.bin(Bo::Subtract, high, low, span));
        let t = self.bin(Bo::Divide, over, under, span);
        let t = self.min_max(Mf::Max, t, zero, span);
        let t = self.min_max(Mf::Min, t, one, span);
        let tt = self.bin(Bo::Multiply, t, t, span);
        let twice = self.bin(Bo::Multiply, two, t, span);
        let rest = self.bin(Bo::Subtract, three, twice, span);
        self.bin(Bo::Multiply, tt, rest, span)
    }

    /// `reflect(e1, e2) = e1 - 2 * dot(e2, e1) * e2`; `refract(e1, e2, eta)`: with
    /// `k = 1 - eta * eta * (1 - dot(e2, e1) * dot(e2, e1))`, zero where `k < 0`, else
    /// `eta * e1 - (eta * dot(e2, e1) + sqrt(k)) * e2`; `faceForward(e1, e2, e3)`: `e1` where
    /// `dot(e2, e3) < 0`, else `-e1`. As WGSL writes them, each operation rounded once in order.
    #[allow(clippy::too_many_arguments)]
    fn lower_facing(
        &mut self,
        old: Handle<Expression>,
        fun: Mf,
        e1: Handle<Expression>,
        e2: Handle<Expression>,
        e3: Option<Handle<Expression>>,
        size: Option<VectorSize>,
        span: Span,
    ) -> Result<Handle<Expression>, FormsError> {
        let n = size.map_or(1, |s| s as u32);
        let float = |s: &mut Self, v: f64, size| s.literal(ScalarKind::Float, v, size, span);
        Ok(match (fun, e3) {
            (Mf::Reflect, _) => {
                let d = self.dot(e2, e1, n, span);
                let two = float(self, 2.0, None);
                let scale = self.bin(Bo::Multiply, two, d, span);
                let scale = self.splat(scale, size, span);
                let along = self.bin(Bo::Multiply, scale, e2, span);
                self.bin(Bo::Subtract, e1, along, span)
            }
            (Mf::Refract, Some(eta)) => {
                let d = self.dot(e2, e1, n, span);
                let (one, zero) = (float(self, 1.0, None), float(self, 0.0, size));
                let dd = self.bin(Bo::Multiply, d, d, span);
                let rest = self.bin(Bo::Subtract, one, dd, span);
                let eta2 = self.bin(Bo::Multiply, eta, eta, span);
                let k = self.bin(Bo::Multiply, eta2, rest, span);
                let k = self.bin(Bo::Subtract, one, k, span);
                let root = self.math(Mf::Sqrt, &[k], span);
                let eta_d = self.bin(Bo::Multiply, eta, d, span);
                let scale = self.bin(Bo::Add, eta_d, root, span);
                let (eta_v, scale) = (self.splat(eta, size, span), self.splat(scale, size, span));
                let l = self.bin(Bo::Multiply, eta_v, e1, span);
                let r = self.bin(Bo::Multiply, scale, e2, span);
                let refracted = self.bin(Bo::Subtract, l, r, span);
                let nought = float(self, 0.0, None);
                let below = self.bin(Bo::Less, k, nought, span);
                let below = self.splat(below, size, span);
                self.select(below, zero, refracted, span)
            }
            (Mf::FaceForward, Some(e3)) => {
                let d = self.dot(e2, e3, n, span);
                let nought = float(self, 0.0, None);
                let negative = self.bin(Bo::Less, d, nought, span);
                let negative = self.splat(negative, size, span);
                let flipped = self.push(Expression::Unary { op: naga::UnaryOperator::Negate, expr: e1 }, span);
                self.select(negative, e1, flipped, span)
            }
            _ => {
                let e = self.remap(self.old[old].clone())?;
                self.push(e, span)
            }
        })
    }

    /// A float converted to an integer: clamped as naga writes it, NaN to 0 (a `bitcast` of a
    /// float: its canonical bits).
    fn float_to_int(
        &mut self,
        expr: Handle<Expression>,
        kind: ScalarKind,
        convert: Option<u8>,
        span: naga::Span,
    ) -> Result<Handle<Expression>, FormsError> {
        let x = self.get(expr)?;
        let size = self.size(expr);
        Ok(match convert {
            Some(_) => {
                let converted = self.push(Expression::As { expr: x, kind, convert }, span);
                // Not `x != x`: naga writes that as the ordered not-equal, false for NaN.
                let same = self.bin(Bo::Equal, x, x, span);
                let nan = self.push(Expression::Unary { op: naga::UnaryOperator::LogicalNot, expr: same }, span);
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
        })
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
}
