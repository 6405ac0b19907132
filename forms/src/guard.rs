//! The loop-cut detector, for the SPIR-V that software Vulkan devices run.
//!
//! Mesa's llvmpipe ends loops silently once a group of 8 invocations has run about 65,535 loop
//! iterations in all (DEPENDENCIES.md): the loop is left without taking any of its own exits
//! and the code after it runs on with whatever values it had. That would be a wrong answer in
//! silence. So every loop gets a flag, set on each of its exits (`break`, `break if`), and
//! after the loop an item whose flag is unset records the cut in one more storage binding,
//! after the block's arrays, and returns. The device reads that word after each tile and fails
//! a tile that has it set, so the tile runs elsewhere.
//!
//! It rewrites the IR of an exact kernel only; the engine binds the extra word.

use naga::{
    AddressSpace, Block, Expression, Handle, LocalVariable, Module, ResourceBinding, Scalar, Span, Statement,
    StorageAccess, Type, TypeInner,
};

/// Adds the detector to every function of `module`, binding its word at `binding`.
pub(crate) fn guard_loops(module: &mut Module, binding: u32) {
    let u32_ty = module.types.insert(Type { name: None, inner: TypeInner::Scalar(Scalar::U32) }, Span::UNDEFINED);
    let bool_ty = module.types.insert(Type { name: None, inner: TypeInner::Scalar(Scalar::BOOL) }, Span::UNDEFINED);
    let array_ty = module.types.insert(
        Type { name: None, inner: TypeInner::Array { base: u32_ty, size: naga::ArraySize::Dynamic, stride: 4 } },
        Span::UNDEFINED,
    );
    let cut = module.global_variables.append(
        naga::GlobalVariable {
            name: Some("xc_loop_cut".into()),
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
        let result = module.functions[h].result.as_ref().map(|r| r.ty);
        guard_function(&mut module.functions[h], cut, bool_ty, result);
    }
    for ep in &mut module.entry_points {
        guard_function(&mut ep.function, cut, bool_ty, None);
    }
}

/// What a `break` leaves.
enum Target {
    Loop(Handle<LocalVariable>),
    Switch,
}

struct Guard<'a> {
    fun: &'a mut naga::Function,
    cut: Handle<naga::GlobalVariable>,
    bool_ty: Handle<Type>,
    result: Option<Handle<Type>>,
    targets: Vec<Target>,
}

fn guard_function(
    fun: &mut naga::Function,
    cut: Handle<naga::GlobalVariable>,
    bool_ty: Handle<Type>,
    result: Option<Handle<Type>>,
) {
    let body = std::mem::take(&mut fun.body);
    let mut g = Guard { fun, cut, bool_ty, result, targets: Vec::new() };
    let body = g.block(body);
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

    fn set(&mut self, out: &mut Block, flag: Handle<LocalVariable>, value: Handle<Expression>) {
        let pointer = self.expr(Expression::LocalVariable(flag));
        out.push(Statement::Store { pointer, value }, Span::UNDEFINED);
    }

    fn literal(&mut self, value: bool) -> Handle<Expression> {
        self.expr(Expression::Literal(naga::Literal::Bool(value)))
    }

    fn block(&mut self, block: Block) -> Block {
        let mut out = Block::new();
        for (statement, span) in block.span_into_iter() {
            match statement {
                Statement::Loop { body, continuing, break_if } => {
                    let flag = self.fun.local_variables.append(
                        LocalVariable { name: Some("xc_left".into()), ty: self.bool_ty, init: None },
                        Span::UNDEFINED,
                    );
                    let no = self.literal(false);
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
                Statement::Break => {
                    if let Some(Target::Loop(flag)) = self.targets.last() {
                        let (flag, yes) = (*flag, self.literal(true));
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
                other => out.push(other, span),
            }
        }
        out
    }

    /// `if !left { xc_loop_cut[0] = 1u; return; }` after a loop.
    fn after_loop(&mut self, out: &mut Block, flag: Handle<LocalVariable>) {
        let pointer = self.expr(Expression::LocalVariable(flag));
        let [left] = self.emitted(out, vec![Expression::Load { pointer }])[..] else { return };
        let [cut_short] =
            self.emitted(out, vec![Expression::Unary { op: naga::UnaryOperator::LogicalNot, expr: left }])[..]
        else {
            return;
        };
        let mut accept = Block::new();
        let global = self.expr(Expression::GlobalVariable(self.cut));
        let [word] = self.emitted(&mut accept, vec![Expression::AccessIndex { base: global, index: 0 }])[..] else {
            return;
        };
        let one = self.expr(Expression::Literal(naga::Literal::U32(1)));
        accept.push(Statement::Store { pointer: word, value: one }, Span::UNDEFINED);
        let value = self.result.map(|ty| self.expr(Expression::ZeroValue(ty)));
        accept.push(Statement::Return { value }, Span::UNDEFINED);
        out.push(Statement::If { condition: cut_short, accept, reject: Block::new() }, Span::UNDEFINED);
    }
}
