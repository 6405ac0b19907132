//! Detectors for devices that cannot compute every tile exactly, so that a tile they would get
//! wrong fails and runs elsewhere instead of giving a wrong answer in silence.
//!
//! Both write one storage word, bound after the block's arrays, that the device zeroes before
//! a tile and reads after it:
//!
//! - **Loops cut short** ([`CUT_LOOP`]). Mesa's llvmpipe ends loops silently once a group of 8
//!   invocations has run about 65,535 loop iterations in all (DEPENDENCIES.md): the loop is left
//!   without taking any of its exits. Every loop gets a flag, set on each of its exits (`break`,
//!   `break if`); after the loop, an item whose flag is unset records the cut and returns.
//! - **Subnormal floats** ([`CUT_SUBNORMAL`]). llvmpipe runs with denormals flushed to zero
//!   (`shaderDenormPreserveFloat32` is false), so an operation that meets a subnormal operand,
//!   or whose exact result is subnormal, gives another answer than IEEE arithmetic. Every float
//!   value is checked where it is made: one that comes from outside the kernel's arithmetic (a
//!   load from a storage array or the uniform, a bitcast, a component taken from a value) on
//!   its bits (a subnormal has a zero exponent and a nonzero fraction), and every `+ - * /` on
//!   its result's bits and, when the result is zero, on whether the exact result was zero too.
//!   Values made from checked values by anything else (`sqrt`, `floor`, selects, conversions
//!   from integers, …) cannot become subnormal. A subnormal literal marks the item at once. An
//!   item that met one records it before it returns.
//!
//! The array holds a second word, always 0, that `exact::opaque_constants` reads to hide float
//! constants from llvmpipe's code builder.
//!
//! It rewrites the IR of an exact kernel only; the engine binds the words and reads the first.

use naga::{
    AddressSpace, BinaryOperator as Bo, Block, Expression, Handle, LocalVariable, Module, ResourceBinding, Scalar,
    ScalarKind, Span, Statement, StorageAccess, Type, TypeInner, VectorSize,
};

/// The word's value when a loop was cut short.
pub const CUT_LOOP: u32 = 1;
/// The word's value when a float operation met a subnormal.
pub const CUT_SUBNORMAL: u32 = 2;

/// What to detect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Detect {
    pub(crate) loops: bool,
    pub(crate) subnormals: bool,
}

/// Adds the detectors to every function of `module`, binding the words at `binding`; returns
/// the words' variable.
pub(crate) fn guard(module: &mut Module, binding: u32, detect: Detect) -> Handle<naga::GlobalVariable> {
    let u32_ty = module.types.insert(Type { name: None, inner: TypeInner::Scalar(Scalar::U32) }, Span::UNDEFINED);
    let bool_ty = module.types.insert(Type { name: None, inner: TypeInner::Scalar(Scalar::BOOL) }, Span::UNDEFINED);
    let array_ty = module.types.insert(
        Type { name: None, inner: TypeInner::Array { base: u32_ty, size: naga::ArraySize::Dynamic, stride: 4 } },
        Span::UNDEFINED,
    );
    let word = module.global_variables.append(
        naga::GlobalVariable {
            name: Some("xc_inexact".into()),
            space: AddressSpace::Storage { access: StorageAccess::LOAD | StorageAccess::STORE },
            binding: Some(ResourceBinding { group: 0, binding }),
            ty: array_ty,
            init: None,
            memory_decorations: Default::default(),
        },
        Span::UNDEFINED,
    );
    let handles: Vec<_> = module.functions.iter().map(|(h, _)| h).collect();
    for h in handles {
        let kinds = float_kinds(module, &module.functions[h]);
        let literal = has_subnormal_literal(module, &module.functions[h]);
        let result = module.functions[h].result.as_ref().map(|r| r.ty);
        guard_function(&mut module.functions[h], word, bool_ty, result, (kinds, literal), detect);
    }
    for i in 0..module.entry_points.len() {
        let kinds = float_kinds(module, &module.entry_points[i].function);
        let literal = has_subnormal_literal(module, &module.entry_points[i].function);
        guard_function(&mut module.entry_points[i].function, word, bool_ty, None, (kinds, literal), detect);
    }
    word
}

/// What the subnormal detector needs to know of one expression.
#[derive(Debug, Clone, Copy, Default)]
struct Kind {
    /// `Some(size)` when the expression is a float value (size for vectors).
    float: Option<Option<VectorSize>>,
    /// Whether that value comes from outside the kernel's arithmetic, so it is checked where
    /// it is made: a load from a storage array or the uniform, a bitcast to float, a component
    /// taken from a value.
    source: bool,
}

/// The [`Kind`] of every expression of a function.
fn float_kinds(module: &Module, fun: &naga::Function) -> Vec<Kind> {
    let mut typifier = naga::front::Typifier::new();
    let ctx = naga::proc::ResolveContext::with_locals(module, &fun.local_variables, &fun.arguments);
    let mut out: Vec<Kind> = Vec::with_capacity(fun.expressions.len());
    for (h, e) in fun.expressions.iter() {
        if typifier.grow(h, &fun.expressions, &ctx).is_err() {
            out.push(Kind::default());
            continue;
        }
        let float = match *typifier.get(h, &module.types) {
            TypeInner::Scalar(s) if s.kind == ScalarKind::Float => Some(None),
            TypeInner::Vector { size, scalar } if scalar.kind == ScalarKind::Float => Some(Some(size)),
            _ => None,
        };
        let is_pointer = |p: Handle<Expression>| {
            matches!(typifier.get(p, &module.types), TypeInner::Pointer { .. } | TypeInner::ValuePointer { .. })
        };
        let space = |p: Handle<Expression>| match *typifier.get(p, &module.types) {
            TypeInner::Pointer { space, .. } | TypeInner::ValuePointer { space, .. } => Some(space),
            _ => None,
        };
        let source = float.is_some()
            && match *e {
                Expression::Load { pointer } => {
                    !matches!(space(pointer), Some(AddressSpace::Function | AddressSpace::Private))
                }
                Expression::As { convert: None, .. } => true,
                Expression::Access { base, .. } | Expression::AccessIndex { base, .. } => !is_pointer(base),
                _ => false,
            };
        out.push(Kind { float, source });
    }
    out
}

/// Whether a function holds a subnormal float literal, or uses a module constant that holds one.
fn has_subnormal_literal(module: &Module, fun: &naga::Function) -> bool {
    fn subnormal(module: &Module, arena: &naga::Arena<Expression>, e: &Expression) -> bool {
        match *e {
            Expression::Literal(naga::Literal::F32(v)) => v.is_subnormal(),
            Expression::Constant(c) => {
                let init = module.constants[c].init;
                subnormal(module, &module.global_expressions, &module.global_expressions[init])
            }
            Expression::Compose { ref components, .. } => {
                components.iter().any(|&h| subnormal(module, arena, &arena[h]))
            }
            Expression::Splat { value, .. } => subnormal(module, arena, &arena[value]),
            _ => false,
        }
    }
    fun.expressions.iter().any(|(_, e)| subnormal(module, &fun.expressions, e))
}

/// What a `break` leaves.
enum Target {
    Loop(Handle<LocalVariable>),
    Switch,
}

struct Guard<'a> {
    fun: &'a mut naga::Function,
    word: Handle<naga::GlobalVariable>,
    bool_ty: Handle<Type>,
    result: Option<Handle<Type>>,
    targets: Vec<Target>,
    /// What the original expressions are.
    kinds: Vec<Kind>,
    /// Set when an operation met a subnormal (with `Detect::subnormals`).
    met: Option<Handle<LocalVariable>>,
    detect: Detect,
}

fn guard_function(
    fun: &mut naga::Function,
    word: Handle<naga::GlobalVariable>,
    bool_ty: Handle<Type>,
    result: Option<Handle<Type>>,
    (kinds, literal): (Vec<Kind>, bool),
    detect: Detect,
) {
    let body = std::mem::take(&mut fun.body);
    let met = detect.subnormals.then(|| {
        // A subnormal literal is met whenever the function runs.
        let init = fun.expressions.append(Expression::Literal(naga::Literal::Bool(literal)), Span::UNDEFINED);
        fun.local_variables
            .append(LocalVariable { name: Some("xc_met".into()), ty: bool_ty, init: Some(init) }, Span::UNDEFINED)
    });
    let mut g = Guard { fun, word, bool_ty, result, targets: Vec::new(), kinds, met, detect };
    let mut body = g.block(body);
    g.record_met(&mut body);
    g.fun.body = body;
}

impl Guard<'_> {
    fn expr(&mut self, e: Expression) -> Handle<Expression> {
        self.fun.expressions.append(e, Span::UNDEFINED)
    }

    /// Appends emitted expressions to `out` with the `Emit` that covers them.
    fn emitted(&mut self, out: &mut Block, exprs: Vec<Expression>) -> Vec<Handle<Expression>> {
        let start = self.fun.expressions.len() as u32;
        let handles: Vec<_> = exprs.into_iter().map(|e| self.expr(e)).collect();
        let end = self.fun.expressions.len() as u32;
        out.push(Statement::Emit(naga::Range::from_index_range(start..end, &self.fun.expressions)), Span::UNDEFINED);
        handles
    }

    /// One emitted expression.
    fn one(&mut self, out: &mut Block, e: Expression) -> Handle<Expression> {
        self.emitted(out, vec![e])[0]
    }

    fn set(&mut self, out: &mut Block, flag: Handle<LocalVariable>, value: Handle<Expression>) {
        let pointer = self.expr(Expression::LocalVariable(flag));
        out.push(Statement::Store { pointer, value }, Span::UNDEFINED);
    }

    fn literal(&mut self, lit: naga::Literal) -> Handle<Expression> {
        self.expr(Expression::Literal(lit))
    }

    /// `xc_inexact[0] = value;`
    fn write_word(&mut self, out: &mut Block, value: u32) {
        let global = self.expr(Expression::GlobalVariable(self.word));
        let at = self.one(out, Expression::AccessIndex { base: global, index: 0 });
        let v = self.literal(naga::Literal::U32(value));
        out.push(Statement::Store { pointer: at, value: v }, Span::UNDEFINED);
    }

    /// `if xc_met { xc_inexact[0] = 2u; }`, before a return or the end of the function.
    fn record_met(&mut self, out: &mut Block) {
        let Some(met) = self.met else { return };
        let pointer = self.expr(Expression::LocalVariable(met));
        let value = self.one(out, Expression::Load { pointer });
        let mut accept = Block::new();
        self.write_word(&mut accept, CUT_SUBNORMAL);
        out.push(Statement::If { condition: value, accept, reject: Block::new() }, Span::UNDEFINED);
    }

    fn block(&mut self, block: Block) -> Block {
        let mut out = Block::new();
        for (statement, span) in block.span_into_iter() {
            match statement {
                Statement::Emit(range) => {
                    out.push(Statement::Emit(range.clone()), span);
                    if self.detect.subnormals {
                        for h in range {
                            self.check_subnormals(&mut out, h);
                        }
                    }
                }
                Statement::Loop { body, continuing, break_if } if self.detect.loops => {
                    let flag = self.fun.local_variables.append(
                        LocalVariable { name: Some("xc_left".into()), ty: self.bool_ty, init: None },
                        Span::UNDEFINED,
                    );
                    let no = self.literal(naga::Literal::Bool(false));
                    self.set(&mut out, flag, no);
                    self.targets.push(Target::Loop(flag));
                    let body = self.block(body);
                    let mut continuing = self.block(continuing);
                    self.targets.pop();
                    if let Some(condition) = break_if {
                        self.set(&mut continuing, flag, condition);
                    }
                    out.push(Statement::Loop { body, continuing, break_if }, span);
                    self.after_loop(&mut out, flag);
                }
                Statement::Loop { body, continuing, break_if } => {
                    self.targets.push(Target::Switch);
                    let (body, continuing) = (self.block(body), self.block(continuing));
                    self.targets.pop();
                    out.push(Statement::Loop { body, continuing, break_if }, span);
                }
                Statement::Break => {
                    if let Some(Target::Loop(flag)) = self.targets.last() {
                        let (flag, yes) = (*flag, self.literal(naga::Literal::Bool(true)));
                        self.set(&mut out, flag, yes);
                    }
                    out.push(Statement::Break, span);
                }
                Statement::Switch { selector, cases } => {
                    self.targets.push(Target::Switch);
                    let cases = cases.into_iter().map(|c| naga::SwitchCase { body: self.block(c.body), ..c }).collect();
                    self.targets.pop();
                    out.push(Statement::Switch { selector, cases }, span);
                }
                Statement::If { condition, accept, reject } => {
                    let (accept, reject) = (self.block(accept), self.block(reject));
                    out.push(Statement::If { condition, accept, reject }, span);
                }
                Statement::Block(inner) => {
                    let inner = self.block(inner);
                    out.push(Statement::Block(inner), span);
                }
                Statement::Return { value } => {
                    self.record_met(&mut out);
                    out.push(Statement::Return { value }, span);
                }
                other => out.push(other, span),
            }
        }
        out
    }

    /// `if !left { xc_inexact[0] = 1u; return; }` after a loop.
    fn after_loop(&mut self, out: &mut Block, flag: Handle<LocalVariable>) {
        let pointer = self.expr(Expression::LocalVariable(flag));
        let left = self.one(out, Expression::Load { pointer });
        let cut_short = self.one(out, Expression::Unary { op: naga::UnaryOperator::LogicalNot, expr: left });
        let mut accept = Block::new();
        self.write_word(&mut accept, CUT_LOOP);
        let value = self.result.map(|ty| self.expr(Expression::ZeroValue(ty)));
        accept.push(Statement::Return { value }, Span::UNDEFINED);
        out.push(Statement::If { condition: cut_short, accept, reject: Block::new() }, Span::UNDEFINED);
    }

    fn float(&self, h: Handle<Expression>) -> Option<Option<VectorSize>> {
        self.kinds.get(h.index()).and_then(|k| k.float)
    }

    /// A u32 (vector) literal of `value`.
    fn word_literal(&mut self, out: &mut Block, value: u32, size: Option<VectorSize>) -> Handle<Expression> {
        let lit = self.literal(naga::Literal::U32(value));
        match size {
            Some(size) => self.one(out, Expression::Splat { size, value: lit }),
            None => lit,
        }
    }

    /// A bool that is true when any component of float `x` is subnormal (on its bits, which no
    /// flushing touches).
    fn is_subnormal(&mut self, out: &mut Block, x: Handle<Expression>, size: Option<VectorSize>) -> Handle<Expression> {
        let (magnitude, one, below) = (
            self.word_literal(out, 0x7fff_ffff, size),
            self.word_literal(out, 1, size),
            self.word_literal(out, 0x007f_ffff, size),
        );
        let bits = self.one(out, Expression::As { expr: x, kind: ScalarKind::Uint, convert: None });
        let abs = self.one(out, Expression::Binary { op: Bo::And, left: bits, right: magnitude });
        let less = self.one(out, Expression::Binary { op: Bo::Subtract, left: abs, right: one });
        let sub = self.one(out, Expression::Binary { op: Bo::Less, left: less, right: below });
        self.any(out, sub, size)
    }

    fn any(&mut self, out: &mut Block, v: Handle<Expression>, size: Option<VectorSize>) -> Handle<Expression> {
        match size {
            Some(_) => self.one(out, Expression::Relational { fun: naga::RelationalFunction::Any, argument: v }),
            None => v,
        }
    }

    fn float_literal(&mut self, out: &mut Block, value: f32, size: Option<VectorSize>) -> Handle<Expression> {
        let lit = self.literal(naga::Literal::F32(value));
        match size {
            Some(size) => self.one(out, Expression::Splat { size, value: lit }),
            None => lit,
        }
    }

    /// Whether `r = a op b` came out zero where the exact result was not (an underflow that a
    /// flushing device made zero).
    fn flushed(
        &mut self,
        out: &mut Block,
        op: Bo,
        r: Handle<Expression>,
        a: Handle<Expression>,
        b: Handle<Expression>,
        size: Option<VectorSize>,
    ) -> Option<Handle<Expression>> {
        let zero = self.float_literal(out, 0.0, size);
        let r_zero = self.one(out, Expression::Binary { op: Bo::Equal, left: r, right: zero });
        let legitimate = match op {
            // a + b is zero exactly when a == -b; a - b when a == b.
            Bo::Add => {
                let minus_b = self.one(out, Expression::Unary { op: naga::UnaryOperator::Negate, expr: b });
                self.one(out, Expression::Binary { op: Bo::Equal, left: a, right: minus_b })
            }
            Bo::Subtract => self.one(out, Expression::Binary { op: Bo::Equal, left: a, right: b }),
            // a * b is zero exactly when a or b is; a / b when a is, or b is infinite.
            Bo::Multiply | Bo::Divide => {
                let a_zero = self.one(out, Expression::Binary { op: Bo::Equal, left: a, right: zero });
                let other = if op == Bo::Multiply {
                    self.one(out, Expression::Binary { op: Bo::Equal, left: b, right: zero })
                } else {
                    let inf = self.float_literal(out, f32::MAX, size);
                    let magnitude = self.one(
                        out,
                        Expression::Math { fun: naga::MathFunction::Abs, arg: b, arg1: None, arg2: None, arg3: None },
                    );
                    self.one(out, Expression::Binary { op: Bo::Greater, left: magnitude, right: inf })
                };
                self.one(out, Expression::Binary { op: Bo::InclusiveOr, left: a_zero, right: other })
            }
            _ => return None,
        };
        let not = self.one(out, Expression::Unary { op: naga::UnaryOperator::LogicalNot, expr: legitimate });
        let both = self.one(out, Expression::Binary { op: Bo::And, left: r_zero, right: not });
        Some(self.any(out, both, size))
    }

    /// After expression `h` is emitted: note in `xc_met` whether it made a subnormal (see the
    /// module's doc for which expressions are checked).
    fn check_subnormals(&mut self, out: &mut Block, h: Handle<Expression>) {
        let Some(met) = self.met else { return };
        let Some(size) = self.float(h) else { return };
        let source = self.kinds.get(h.index()).is_some_and(|k| k.source);
        let arithmetic = match self.fun.expressions[h] {
            Expression::Binary { op: op @ (Bo::Add | Bo::Subtract | Bo::Multiply | Bo::Divide), left, right } => {
                Some((op, left, right))
            }
            _ => None,
        };
        if !source && arithmetic.is_none() {
            return;
        }
        let mut check = self.is_subnormal(out, h, size);
        if let Some((op, left, right)) = arithmetic {
            if let Some(flushed) = self.flushed(out, op, h, left, right, size) {
                check = self.one(out, Expression::Binary { op: Bo::LogicalOr, left: check, right: flushed });
            }
        }
        let pointer = self.expr(Expression::LocalVariable(met));
        let before = self.one(out, Expression::Load { pointer });
        let acc = self.one(out, Expression::Binary { op: Bo::LogicalOr, left: before, right: check });
        self.set(out, met, acc);
    }
}
