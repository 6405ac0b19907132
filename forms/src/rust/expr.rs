//! Expressions as Rust: each naga operator, math function and conversion with WGSL's (and the
//! PTX form's) result for every input, component by component on vectors, and places (what a
//! pointer points at) read and written with naga's `ReadZeroSkipWrite` checks.

use naga::{BinaryOperator as Bo, Expression, Handle, Literal, MathFunction as Mf, ScalarKind, TypeInner};

use super::frame::Frame;
use super::{Writer, internal, member_name};
use crate::FormsError;

/// The largest f32 values naga clamps to before converting to i32 and u32 (as the PTX form).
const I32_RANGE: (&str, &str) = ("-2147483648.0f32", "2147483520.0f32");
const U32_RANGE: (&str, &str) = ("0.0f32", "4294967040.0f32");

/// A literal as Rust: exact (finite floats print their shortest round-trip digits).
pub(crate) fn literal(lit: Literal) -> Result<String, FormsError> {
    Ok(match lit {
        Literal::F32(v) if v.is_finite() && v.is_sign_negative() => format!("({v:?}f32)"),
        Literal::F32(v) if v.is_finite() => format!("{v:?}f32"),
        Literal::F32(v) => format!("f32::from_bits(0x{:08x})", v.to_bits()),
        Literal::U32(v) => format!("{v}u32"),
        Literal::I32(i32::MIN) => "i32::MIN".to_owned(),
        Literal::I32(v) if v < 0 => format!("({v}i32)"),
        Literal::I32(v) => format!("{v}i32"),
        Literal::Bool(v) => v.to_string(),
        other => return Err(internal(format!("the literal {other:?}"))),
    })
}

/// A module-level constant expression as Rust.
pub(crate) fn constant(w: &Writer<'_>, h: Handle<Expression>) -> Result<String, FormsError> {
    let module = w.module;
    Ok(match module.global_expressions[h] {
        Expression::Literal(lit) => literal(lit)?,
        Expression::Constant(c) => constant(w, module.constants[c].init)?,
        Expression::ZeroValue(ty) => w.zero(ty)?,
        Expression::Compose { ty, ref components } => {
            let parts: Vec<String> = components.iter().map(|&c| constant(w, c)).collect::<Result<_, _>>()?;
            compose(w, ty, &parts, |k| match module.global_expressions[components[k]] {
                Expression::Compose { ty, .. } | Expression::ZeroValue(ty) => match module.types[ty].inner {
                    TypeInner::Vector { size, .. } => size as usize,
                    _ => 1,
                },
                Expression::Splat { size, .. } => size as usize,
                _ => 1,
            })?
        }
        Expression::Splat { size, value } => format!("[{}; {}]", constant(w, value)?, size as u32),
        _ => return Err(internal("a constant of an unexpected form")),
    })
}

/// A composite of type `ty` from its parts; `width(k)` is how many components part `k`
/// gives a vector (vectors may be built from smaller vectors).
fn compose(
    w: &Writer<'_>,
    ty: Handle<naga::Type>,
    parts: &[String],
    width: impl Fn(usize) -> usize,
) -> Result<String, FormsError> {
    Ok(match w.module.types[ty].inner {
        TypeInner::Struct { ref members, .. } => {
            let fields: Vec<String> = members
                .iter()
                .enumerate()
                .zip(parts)
                .map(|((k, m), p)| format!("{}: {p}", member_name(m, k)))
                .collect();
            format!("{} {{ {} }}", w.ty(ty)?, fields.join(", "))
        }
        TypeInner::Vector { .. } => {
            let mut out = Vec::new();
            for (k, p) in parts.iter().enumerate() {
                match width(k) {
                    1 => out.push(p.clone()),
                    n => out.extend((0..n).map(|i| format!("{p}[{i}]"))),
                }
            }
            format!("[{}]", out.join(", "))
        }
        _ => format!("[{}]", parts.join(", ")),
    })
}

/// One step from a place to a part of it.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// A struct member.
    Field(String),
    /// A constant index, in range by validation.
    Const(u32),
    /// A computed index (a u32 or i32 expression), checked.
    Dyn(String),
}

/// Where a pointer points: a root (a local, `xc.u`, `xc.aK`, `xc.pK`, `(*arg)`) and the steps
/// into it.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) root: String,
    pub(crate) steps: Vec<Step>,
}

impl Place {
    /// The path up to the first computed index, and the steps from it.
    fn split(&self) -> (String, &[Step]) {
        let mut path = self.root.clone();
        for (k, step) in self.steps.iter().enumerate() {
            match step {
                Step::Field(f) => path.push_str(&format!(".{f}")),
                Step::Const(i) => path.push_str(&format!("[{i}]")),
                Step::Dyn(_) => return (path, &self.steps[k..]),
            }
        }
        (path, &[])
    }

    /// The chain of checked steps from a path: `Option<&T>` (or `&mut T`).
    fn chain(path: String, steps: &[Step], mutable: bool) -> String {
        let (get, amp) = if mutable { ("get_mut", "&mut ") } else { ("get", "&") };
        let mut out = path;
        let mut first = true;
        for step in steps {
            match step {
                Step::Dyn(i) if first => out.push_str(&format!(".{get}({i} as usize)")),
                Step::Dyn(i) => out.push_str(&format!(".and_then(|e| e.{get}({i} as usize))")),
                Step::Const(i) => out.push_str(&format!(".map(|e| {amp}e[{i}])")),
                Step::Field(f) => out.push_str(&format!(".map(|e| {amp}e.{f})")),
            }
            first = false;
        }
        out
    }

    /// Reads the place; `zero` is the pointee's zero, for a read past an end.
    pub(crate) fn read(&self, zero: impl FnOnce() -> Result<String, FormsError>) -> Result<String, FormsError> {
        let (path, rest) = self.split();
        if rest.is_empty() {
            return Ok(path);
        }
        Ok(format!("{}.copied().unwrap_or({})", Self::chain(path, rest, false), zero()?))
    }

    /// Writes `value` (a name or a constant) to the place.
    pub(crate) fn write(&self, value: &str) -> String {
        let (path, rest) = self.split();
        if rest.is_empty() {
            return format!("{path} = {value};");
        }
        format!("if let Some(xc_at) = {} {{ *xc_at = {value}; }}", Self::chain(path, rest, true))
    }

    /// `&mut` of the place, for a pointer argument; None where it goes through a computed index.
    pub(crate) fn borrow(&self) -> Option<String> {
        let (path, rest) = self.split();
        rest.is_empty().then(|| format!("&mut {path}"))
    }
}

impl Frame<'_> {
    /// An expression's value: its name once emitted, else the expression itself (constants,
    /// arguments and other expressions that need no emitting).
    pub(crate) fn value(&mut self, w: &Writer<'_>, h: Handle<Expression>) -> Result<String, FormsError> {
        if let Some(name) = &self.names[h.index()] {
            return Ok(name.clone());
        }
        if matches!(self.fun.expressions[h], Expression::Load { .. } | Expression::CallResult(_)) {
            return Err(internal("a load or call result used before it was emitted"));
        }
        self.compute(w, h)
    }

    /// The scalar kind of an expression's value (of its elements, for a vector).
    pub(crate) fn kind(&self, w: &Writer<'_>, h: Handle<Expression>) -> ScalarKind {
        self.inner(w, h).scalar_kind().unwrap_or(ScalarKind::Uint)
    }

    /// An expression's vector size, or None for a scalar.
    fn size(&self, w: &Writer<'_>, h: Handle<Expression>) -> Option<usize> {
        match self.inner(w, h) {
            TypeInner::Vector { size, .. } => Some(size as usize),
            _ => None,
        }
    }

    /// A vector or composite value put together: from its components, one value repeated, or
    /// another vector's components in a new order.
    fn composite(&mut self, w: &Writer<'_>, h: Handle<Expression>) -> Result<String, FormsError> {
        Ok(match self.fun.expressions[h] {
            Expression::Compose { ty, ref components } => {
                let mut parts = Vec::new();
                let mut widths = Vec::new();
                for &c in components {
                    parts.push(self.value(w, c)?);
                    widths.push(self.size(w, c).unwrap_or(1));
                }
                compose(w, ty, &parts, |k| widths[k])?
            }
            Expression::Splat { size, value } => format!("[{}; {}]", self.value(w, value)?, size as u32),
            Expression::Swizzle { size, vector, pattern } => {
                let v = self.value(w, vector)?;
                let parts: Vec<String> =
                    pattern[..size as usize].iter().map(|&c| format!("{v}[{}]", c as u32)).collect();
                format!("[{}]", parts.join(", "))
            }
            _ => return Err(internal("a composite that is not one")),
        })
    }

    /// Member `index` of a struct value, or component `index` of a vector or array value.
    fn member(&mut self, w: &Writer<'_>, base: Handle<Expression>, index: u32) -> Result<String, FormsError> {
        let v = self.value(w, base)?;
        Ok(match self.inner(w, base) {
            TypeInner::Struct { ref members, .. } => {
                let m = members.get(index as usize).ok_or_else(|| internal("a member past the end"))?;
                format!("{v}.{}", member_name(m, index as usize))
            }
            _ => format!("{v}[{index}]"),
        })
    }

    /// Element `index` (an expression) of a vector or array value: zero past its end.
    fn element(
        &mut self,
        w: &Writer<'_>,
        base: Handle<Expression>,
        index: Handle<Expression>,
    ) -> Result<String, FormsError> {
        let v = self.value(w, base)?;
        let i = self.value(w, index)?;
        let zero = match self.inner(w, base) {
            TypeInner::Vector { scalar, .. } => w.zero_inner(&TypeInner::Scalar(scalar))?,
            TypeInner::Array { base, .. } => w.zero(base)?,
            _ => return Err(internal("indexing a scalar value")),
        };
        Ok(format!("{v}.get({i} as usize).copied().unwrap_or({zero})"))
    }

    /// `select(reject, accept, condition)`, lane by lane where the condition is a vector.
    fn select(
        &mut self,
        w: &Writer<'_>,
        condition: Handle<Expression>,
        accept: Handle<Expression>,
        reject: Handle<Expression>,
    ) -> Result<String, FormsError> {
        let (c, a, r) = (self.value(w, condition)?, self.value(w, accept)?, self.value(w, reject)?);
        Ok(match self.size(w, condition) {
            None => format!("(if {c} {{ {a} }} else {{ {r} }})"),
            Some(n) => self.lanes(&[(c, Some(n)), (a, self.size(w, accept)), (r, self.size(w, reject))], |x| {
                Ok(format!("(if {} {{ {} }} else {{ {} }})", x[0], x[1], x[2]))
            })?,
        })
    }

    /// `all` or `any` of a vector of booleans.
    fn relational(
        &mut self,
        w: &Writer<'_>,
        fun: naga::RelationalFunction,
        argument: Handle<Expression>,
    ) -> Result<String, FormsError> {
        let v = self.value(w, argument)?;
        let n = self.size(w, argument).unwrap_or(1);
        let join = match fun {
            naga::RelationalFunction::All => " && ",
            naga::RelationalFunction::Any => " || ",
            other => return Err(internal(format!("{other:?}"))),
        };
        let parts: Vec<String> = (0..n).map(|i| format!("{v}[{i}]")).collect();
        Ok(format!("({})", parts.join(join)))
    }

    /// Computes an expression's value as Rust text.
    pub(crate) fn compute(&mut self, w: &Writer<'_>, h: Handle<Expression>) -> Result<String, FormsError> {
        use Expression as E;
        let module = w.module;
        Ok(match self.fun.expressions[h] {
            E::Literal(lit) => literal(lit)?,
            E::Constant(c) => constant(w, module.constants[c].init)?,
            E::ZeroValue(ty) => w.zero(ty)?,
            E::Compose { .. } | E::Splat { .. } | E::Swizzle { .. } => self.composite(w, h)?,
            E::FunctionArgument(i) => self.arg_name(i)?,
            E::AccessIndex { base, index } => self.member(w, base, index)?,
            E::Access { base, index } => self.element(w, base, index)?,
            E::Load { pointer } => {
                let place = self.place(w, pointer)?;
                let pointee = self.pointee(w, pointer)?;
                place.read(|| match pointee {
                    Pointee::Handle(t) => w.zero(t),
                    Pointee::Inner(ref inner) => w.zero_inner(inner),
                })?
            }
            E::Unary { op, expr } => {
                let kind = self.kind(w, expr);
                let v = self.value(w, expr)?;
                self.lanes(&[(v, self.size(w, expr))], |a| {
                    Ok(match (op, kind) {
                        (naga::UnaryOperator::Negate, ScalarKind::Float) => format!("(-{})", a[0]),
                        (naga::UnaryOperator::Negate, _) => format!("{}.wrapping_neg()", a[0]),
                        (naga::UnaryOperator::LogicalNot | naga::UnaryOperator::BitwiseNot, _) => {
                            format!("(!{})", a[0])
                        }
                    })
                })?
            }
            E::Binary { op, left, right } => {
                let kind = self.kind(w, left);
                let (l, r) = (self.value(w, left)?, self.value(w, right)?);
                self.lanes(&[(l, self.size(w, left)), (r, self.size(w, right))], |a| binary(op, kind, &a[0], &a[1]))?
            }
            E::Select { condition, accept, reject } => self.select(w, condition, accept, reject)?,
            E::Relational { fun, argument } => self.relational(w, fun, argument)?,
            E::Math { fun, arg, arg1, arg2, arg3 } => {
                let kind = self.kind(w, arg);
                let mut args = vec![(self.value(w, arg)?, self.size(w, arg))];
                for a in [arg1, arg2, arg3].into_iter().flatten() {
                    args.push((self.value(w, a)?, self.size(w, a)));
                }
                self.lanes(&args, |a| math(fun, kind, a))?
            }
            E::As { expr, kind, convert } => {
                let from = self.kind(w, expr);
                let v = self.value(w, expr)?;
                self.lanes(&[(v, self.size(w, expr))], |a| convert_scalar(from, kind, convert.is_none(), &a[0]))?
            }
            E::ArrayLength(pointer) => {
                let place = self.place(w, pointer)?;
                format!("({}.len() as u32)", place.root)
            }
            E::CallResult(_) => return Err(internal("a call's result before the call")),
            E::GlobalVariable(_) | E::LocalVariable(_) => return Err(internal("a pointer where a value belongs")),
            _ => return Err(internal("an expression outside the exact subset")),
        })
    }

    /// Applies `op` lane by lane: to the scalars themselves, or to each component where any
    /// operand is a vector (a scalar operand repeats).
    fn lanes(
        &self,
        operands: &[(String, Option<usize>)],
        op: impl Fn(&[String]) -> Result<String, FormsError>,
    ) -> Result<String, FormsError> {
        let Some(n) = operands.iter().filter_map(|(_, s)| *s).max() else {
            let names: Vec<String> = operands.iter().map(|(v, _)| v.clone()).collect();
            return op(&names);
        };
        // A vector operand is taken apart by a pattern rather than indexed: clippy's constant
        // folder follows `let` bindings of a name into their values, and a chain of these
        // blocks, each naming its operands several times, made it take exponential time (a
        // kernel with `smoothstep` kept `cargo clippy` busy for over twenty minutes). It does
        // not see through a pattern's bindings.
        let mut text = String::from("{ ");
        for (k, (v, s)) in operands.iter().enumerate() {
            match s {
                Some(size) => {
                    let parts: Vec<String> = (0..*size).map(|i| format!("xc_{k}_{i}")).collect();
                    text.push_str(&format!("let [{}] = {v}; ", parts.join(", ")));
                }
                None => text.push_str(&format!("let xc_{k} = {v}; ")),
            }
        }
        let mut lanes = Vec::new();
        for i in 0..n {
            let names: Vec<String> = operands
                .iter()
                .enumerate()
                .map(|(k, (_, s))| if s.is_some() { format!("xc_{k}_{i}") } else { format!("xc_{k}") })
                .collect();
            lanes.push(op(&names)?);
        }
        text.push_str(&format!("[{}] }}", lanes.join(", ")));
        Ok(text)
    }

    /// Where a pointer expression points.
    pub(crate) fn place(&mut self, w: &Writer<'_>, h: Handle<Expression>) -> Result<Place, FormsError> {
        use Expression as E;
        match self.fun.expressions[h] {
            E::LocalVariable(l) => Ok(Place { root: self.local_name(l)?, steps: Vec::new() }),
            E::FunctionArgument(i) => Ok(Place { root: format!("(*{})", self.arg_name(i)?), steps: Vec::new() }),
            E::GlobalVariable(g) => {
                let root = if Some(g) == w.uniform {
                    "xc.u".to_owned()
                } else if let Some(k) = w.arrays.iter().position(|&a| a == g) {
                    format!("xc.a{k}")
                } else if let Some(k) = w.privates.iter().position(|&p| p == g) {
                    format!("xc.p{k}")
                } else {
                    return Err(internal("a global outside the ABI"));
                };
                Ok(Place { root, steps: Vec::new() })
            }
            E::AccessIndex { base, index } => {
                let mut place = self.place(w, base)?;
                let step = match self.pointee(w, base)? {
                    Pointee::Handle(t) => match w.module.types[t].inner {
                        TypeInner::Struct { ref members, .. } => {
                            let m = members.get(index as usize).ok_or_else(|| internal("a member past the end"))?;
                            Step::Field(member_name(m, index as usize))
                        }
                        TypeInner::Array { size: naga::ArraySize::Dynamic, .. } => Step::Dyn(format!("{index}u32")),
                        _ => Step::Const(index),
                    },
                    Pointee::Inner(_) => Step::Const(index),
                };
                place.steps.push(step);
                Ok(place)
            }
            E::Access { base, index } => {
                let mut place = self.place(w, base)?;
                let i = self.value(w, index)?;
                place.steps.push(Step::Dyn(i));
                Ok(place)
            }
            _ => Err(internal("a pointer of an unexpected form")),
        }
    }

    /// The type a pointer expression points at.
    pub(crate) fn pointee(&self, w: &Writer<'_>, h: Handle<Expression>) -> Result<Pointee, FormsError> {
        match *self.types.get(h, &w.module.types) {
            TypeInner::Pointer { base, .. } => Ok(Pointee::Handle(base)),
            TypeInner::ValuePointer { size: Some(size), scalar, .. } => {
                Ok(Pointee::Inner(TypeInner::Vector { size, scalar }))
            }
            TypeInner::ValuePointer { size: None, scalar, .. } => Ok(Pointee::Inner(TypeInner::Scalar(scalar))),
            _ => Err(internal("a pointer of no pointer type")),
        }
    }
}

/// What a pointer points at.
pub(crate) enum Pointee {
    Handle(Handle<naga::Type>),
    Inner(TypeInner),
}

/// `a op b` on scalars of `kind`.
fn binary(op: Bo, kind: ScalarKind, a: &str, b: &str) -> Result<String, FormsError> {
    let t = Writer::scalar(kind);
    let compare = match op {
        Bo::Equal => Some("=="),
        Bo::NotEqual => Some("!="),
        Bo::Less => Some("<"),
        Bo::LessEqual => Some("<="),
        Bo::Greater => Some(">"),
        Bo::GreaterEqual => Some(">="),
        _ => None,
    };
    if let Some(cmp) = compare {
        return Ok(format!("({a} {cmp} {b})"));
    }
    Ok(match (op, kind) {
        (Bo::LogicalAnd, _) => format!("({a} && {b})"),
        (Bo::LogicalOr, _) => format!("({a} || {b})"),
        (Bo::And, _) => format!("({a} & {b})"),
        (Bo::InclusiveOr, _) => format!("({a} | {b})"),
        (Bo::ExclusiveOr, _) => format!("({a} ^ {b})"),
        (Bo::Add, ScalarKind::Float) => format!("({a} + {b})"),
        (Bo::Subtract, ScalarKind::Float) => format!("({a} - {b})"),
        (Bo::Multiply, ScalarKind::Float) => format!("({a} * {b})"),
        (Bo::Divide, ScalarKind::Float) => format!("({a} / {b})"),
        (Bo::Add, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::wrapping_add({a}, {b})"),
        (Bo::Subtract, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::wrapping_sub({a}, {b})"),
        (Bo::Multiply, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::wrapping_mul({a}, {b})"),
        (Bo::Divide, ScalarKind::Uint | ScalarKind::Sint) => format!("xc_div_{t}({a}, {b})"),
        (Bo::Modulo, ScalarKind::Uint | ScalarKind::Sint) => format!("xc_rem_{t}({a}, {b})"),
        // The exactness pass has taken the amount modulo 32 already.
        (Bo::ShiftLeft, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::wrapping_shl({a}, {b})"),
        (Bo::ShiftRight, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::wrapping_shr({a}, {b})"),
        (other, kind) => return Err(internal(format!("{other:?} on {kind:?}"))),
    })
}

/// A math function of the exact subset (what the exactness pass has left), on scalars.
fn math(fun: Mf, kind: ScalarKind, a: &[String]) -> Result<String, FormsError> {
    let t = Writer::scalar(kind);
    let arg = |k: usize| a.get(k).cloned().ok_or_else(|| internal(format!("{fun:?} without argument {k}")));
    let x = arg(0)?;
    Ok(match (fun, kind) {
        (Mf::Abs, ScalarKind::Uint) => x,
        (Mf::Abs, ScalarKind::Sint) => format!("i32::wrapping_abs({x})"),
        (Mf::Abs, _) => format!("f32::abs({x})"),
        (Mf::Min, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::min({x}, {})", arg(1)?),
        (Mf::Max, ScalarKind::Uint | ScalarKind::Sint) => format!("{t}::max({x}, {})", arg(1)?),
        (Mf::Floor, _) => format!("f32::floor({x})"),
        (Mf::Ceil, _) => format!("f32::ceil({x})"),
        (Mf::Trunc, _) => format!("f32::trunc({x})"),
        (Mf::Round, _) => format!("f32::round_ties_even({x})"),
        (Mf::Sqrt, _) => format!("f32::sqrt({x})"),
        (Mf::CountOneBits, _) => format!("({t}::count_ones({x}) as {t})"),
        (Mf::CountLeadingZeros, _) => format!("({t}::leading_zeros({x}) as {t})"),
        (Mf::CountTrailingZeros, _) => format!("({t}::trailing_zeros({x}) as {t})"),
        (Mf::ReverseBits, _) => format!("{t}::reverse_bits({x})"),
        (Mf::FirstTrailingBit, _) => format!("(xc_first_trailing_bit_u32({x} as u32) as {t})"),
        (Mf::FirstLeadingBit, _) => format!("xc_first_leading_bit_{t}({x})"),
        // The exactness pass has clamped offset and count as WGSL says.
        (Mf::ExtractBits, _) => format!("xc_extract_bits_{t}({x}, {}, {})", arg(1)?, arg(2)?),
        (Mf::InsertBits, _) => {
            format!("(xc_insert_bits_u32({x} as u32, {} as u32, {}, {}) as {t})", arg(1)?, arg(2)?, arg(3)?)
        }
        (other, kind) => return Err(internal(format!("{other:?} on {kind:?}"))),
    })
}

/// `As { kind: to, convert }` of a scalar of kind `from`.
fn convert_scalar(from: ScalarKind, to: ScalarKind, bitcast: bool, a: &str) -> Result<String, FormsError> {
    use ScalarKind as S;
    let t = Writer::scalar(to);
    Ok(match (from, to) {
        (S::Bool, S::Bool) | (S::Float, S::Float) => a.to_owned(),
        (S::Sint | S::Uint, S::Sint | S::Uint) => format!("({a} as {t})"),
        (S::Float, S::Sint | S::Uint) if bitcast => format!("(f32::to_bits({a}) as {t})"),
        (S::Sint | S::Uint, S::Float) if bitcast => format!("f32::from_bits({a} as u32)"),
        (S::Float, S::Sint | S::Uint) => {
            let (lo, hi) = if to == S::Sint { I32_RANGE } else { U32_RANGE };
            format!("(f32::min(f32::max({a}, {lo}), {hi}) as {t})")
        }
        (S::Sint | S::Uint, S::Float) => format!("({a} as f32)"),
        (S::Sint | S::Uint, S::Bool) => format!("({a} != 0)"),
        (S::Float, S::Bool) => format!("({a} != 0.0f32)"),
        (S::Bool, S::Sint | S::Uint) => format!("({a} as {t})"),
        (S::Bool, S::Float) => format!("(if {a} {{ 1.0f32 }} else {{ 0.0f32 }})"),
        (from, to) => return Err(internal(format!("a conversion from {from:?} to {to:?}"))),
    })
}
