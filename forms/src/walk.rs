//! One walk of naga's statement IR for the writers of our own forms (PTX, Rust): which statement
//! comes next, where `break` and `continue` go, and what is outside the exact subset. Each
//! writer says through [`Flow`] what it writes for each statement; what differs between them
//! (a switch's lowering, a call inlined or called, expressions) stays in the writer.
//!
//! The walk calls the hooks in the order the writers wrote before it existed, so the names,
//! registers and labels they hand out, and so the forms, are the same byte for byte.

use naga::{Block, Expression, Function, Handle, Statement, SwitchCase};

use crate::FormsError;

/// Where `break` and `continue` go; `J` is how a writer jumps there (a PTX label, a Rust
/// statement).
#[derive(Debug, Clone)]
pub(crate) enum Target<J> {
    /// A loop: where `break` and `continue` go.
    Loop { brk: J, cont: J },
    /// A switch: where `break` goes (a `continue` goes to the loop around it).
    Switch { brk: J },
}

/// What a writer writes for each statement, with `W` its text so far (`ptx::Writer<'m>`,
/// `rust::Writer<'m>`): a type parameter, since the writer's lifetime must appear in the impl.
pub(crate) trait Flow<'f, W> {
    /// An evaluated expression: registers (PTX), Rust text.
    type Value;
    /// A jump's destination as [`Flow::jump`] writes it.
    type Jump: Clone;
    /// What an `if` keeps from its start to its end.
    type If;
    /// What a loop keeps from its start to its end.
    type Loop;

    /// A bug met while walking, in the writer's words.
    fn internal(what: &str) -> FormsError;
    /// The targets of `break` and `continue`, innermost last.
    fn targets(&mut self) -> &mut Vec<Target<Self::Jump>>;
    /// An expression's value.
    fn eval(&mut self, w: &mut W, h: Handle<Expression>) -> Result<Self::Value, FormsError>;
    /// An emitted expression, computed where the function computes it.
    fn emit(&mut self, w: &mut W, h: Handle<Expression>) -> Result<(), FormsError>;
    /// Before a nested block.
    fn block_begin(&mut self, _w: &mut W) {}
    /// After a nested block.
    fn block_end(&mut self, _w: &mut W) {}
    /// An `if` on `condition`, before its `accept` block.
    fn if_begin(&mut self, w: &mut W, condition: Self::Value) -> Self::If;
    /// Between `accept` and `reject` (called even when `reject` is empty).
    fn if_else(&mut self, w: &mut W, mark: &Self::If, reject: &'f Block);
    /// After `reject`.
    fn if_end(&mut self, w: &mut W, mark: Self::If, reject: &'f Block);
    /// A whole switch on `selector`; walks its case bodies itself ([`within`] a
    /// [`Target::Switch`]), in the order its lowering needs.
    fn switch(&mut self, w: &mut W, selector: Self::Value, cases: &'f [SwitchCase]) -> Result<(), FormsError>;
    /// Before a loop's body: what the loop keeps, and where the body's `break` and `continue` go.
    fn loop_begin(
        &mut self,
        w: &mut W,
        body: &'f Block,
        continuing: &'f Block,
        break_if: Option<Handle<Expression>>,
    ) -> Result<(Self::Loop, Target<Self::Jump>), FormsError>;
    /// Between a loop's body and its continuing block: where the continuing block's jumps go.
    fn loop_continuing(&mut self, w: &mut W, mark: &Self::Loop) -> Target<Self::Jump>;
    /// After the continuing block, with the `break if` condition's value where there is one.
    fn loop_end(&mut self, w: &mut W, mark: Self::Loop, break_if: Option<Self::Value>);
    /// A `break` or `continue`, to `to`.
    fn jump(&mut self, w: &mut W, to: Self::Jump);
    /// A `return`, with its value where there is one.
    fn ret(&mut self, w: &mut W, value: Option<Handle<Expression>>) -> Result<(), FormsError>;
    /// A store of `value` through `pointer`.
    fn store(&mut self, w: &mut W, pointer: Handle<Expression>, value: Handle<Expression>) -> Result<(), FormsError>;
    /// A call of a function of the module.
    fn call(
        &mut self,
        w: &mut W,
        function: Handle<Function>,
        arguments: &[Handle<Expression>],
        result: Option<Handle<Expression>>,
    ) -> Result<(), FormsError>;
}

/// Walks each statement of `block`.
pub(crate) fn walk_block<'f, W, F: Flow<'f, W>>(f: &mut F, w: &mut W, block: &'f Block) -> Result<(), FormsError> {
    block.iter().try_for_each(|s| walk_statement(f, w, s))
}

/// Walks `block` with `target` the innermost target of `break` and `continue`.
pub(crate) fn within<'f, W, F: Flow<'f, W>>(
    f: &mut F,
    w: &mut W,
    target: Target<F::Jump>,
    block: &'f Block,
) -> Result<(), FormsError> {
    f.targets().push(target);
    walk_block(f, w, block)?;
    f.targets().pop();
    Ok(())
}

fn walk_statement<'f, W, F: Flow<'f, W>>(f: &mut F, w: &mut W, statement: &'f Statement) -> Result<(), FormsError> {
    match *statement {
        Statement::Emit(ref range) => range.clone().try_for_each(|h| f.emit(w, h))?,
        Statement::Block(ref inner) => {
            f.block_begin(w);
            walk_block(f, w, inner)?;
            f.block_end(w);
        }
        Statement::If { condition, ref accept, ref reject } => {
            let condition = f.eval(w, condition)?;
            let mark = f.if_begin(w, condition);
            walk_block(f, w, accept)?;
            f.if_else(w, &mark, reject);
            walk_block(f, w, reject)?;
            f.if_end(w, mark, reject);
        }
        Statement::Switch { selector, ref cases } => {
            let selector = f.eval(w, selector)?;
            f.switch(w, selector, cases)?;
        }
        Statement::Loop { ref body, ref continuing, break_if } => {
            let (mark, target) = f.loop_begin(w, body, continuing, break_if)?;
            within(f, w, target, body)?;
            let target = f.loop_continuing(w, &mark);
            // WGSL allows no `break` or `continue` in a continuing block: `break if` is its way out.
            within(f, w, target, continuing)?;
            let condition = break_if.map(|b| f.eval(w, b)).transpose()?;
            f.loop_end(w, mark, condition);
        }
        Statement::Break => {
            let to = match f.targets().last() {
                Some(Target::Loop { brk, .. } | Target::Switch { brk }) => brk.clone(),
                None => return Err(F::internal("a break outside a loop or switch")),
            };
            f.jump(w, to);
        }
        Statement::Continue => {
            let to = f.targets().iter().rev().find_map(|t| match t {
                Target::Loop { cont, .. } => Some(cont.clone()),
                Target::Switch { .. } => None,
            });
            f.jump(w, to.ok_or_else(|| F::internal("a continue outside a loop"))?);
        }
        Statement::Return { value } => f.ret(w, value)?,
        Statement::Store { pointer, value } => f.store(w, pointer, value)?,
        Statement::Call { function, ref arguments, result } => f.call(w, function, arguments, result)?,
        _ => return Err(F::internal("a statement outside the exact subset")),
    }
    Ok(())
}

/// The types of a function's expressions.
pub(crate) fn typify(module: &naga::Module, fun: &Function) -> Result<naga::front::Typifier, naga::proc::ResolveError> {
    let mut types = naga::front::Typifier::new();
    let ctx = naga::proc::ResolveContext::with_locals(module, &fun.local_variables, &fun.arguments);
    for (h, _) in fun.expressions.iter() {
        types.grow(h, &fun.expressions, &ctx)?;
    }
    Ok(types)
}
