//! One function being written as Rust ([`Frame`]): the names its expressions, locals and
//! arguments are bound to, the labels `break` and `continue` go to, and the values a loop's
//! continuing block reads. `flow` walks statements over it and `expr` computes values in it;
//! this module only keeps the state, so that both can use it without using each other.

use std::collections::HashSet;

use naga::{Expression, Function, Handle, TypeInner};

use super::{Writer, ident, internal};
use crate::FormsError;
use crate::walk::Target;

/// One function being written.
pub(crate) struct Frame<'f> {
    pub(crate) fun: &'f Function,
    /// Types of the function's expressions.
    pub(crate) types: naga::front::Typifier,
    /// The Rust name each expression is bound to, once emitted.
    pub(super) names: Vec<Option<String>>,
    pub(super) locals: Vec<String>,
    pub(super) args: Vec<String>,
    pub(super) taken: HashSet<String>,
    pub(super) labels: u32,
    /// Where `break` and `continue` go: the statement each writes (`break 'xc_loop1;`; a
    /// `continue` that must still run the continuing block leaves the body's labelled block).
    pub(super) targets: Vec<Target<String>>,
    /// Values of a loop body that its continuing block reads, declared before the body's
    /// labelled block (which `continue` leaves) and assigned where the body computes them.
    pub(super) hoisted: std::collections::HashMap<Handle<Expression>, String>,
}

impl Frame<'_> {
    pub(crate) fn inner(&self, w: &Writer<'_>, h: Handle<Expression>) -> TypeInner {
        self.types.get(h, &w.module.types).clone()
    }

    pub(crate) fn arg_name(&self, i: u32) -> Result<String, FormsError> {
        self.args.get(i as usize).cloned().ok_or_else(|| internal("a missing argument"))
    }

    pub(crate) fn local_name(&self, l: Handle<naga::LocalVariable>) -> Result<String, FormsError> {
        self.locals.get(l.index()).cloned().ok_or_else(|| internal("a missing local"))
    }

    /// A fresh Rust name for a WGSL name.
    pub(super) fn fresh(&mut self, name: Option<&str>, fallback: String) -> String {
        let base = ident(name, fallback);
        let mut name = base.clone();
        let mut n = 1;
        while self.taken.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.taken.insert(name.clone());
        name
    }

    pub(super) fn label(&mut self, kind: &str) -> String {
        self.labels += 1;
        format!("'xc_{kind}{}", self.labels)
    }

    /// The Rust type of an expression's value.
    pub(super) fn type_of(&self, w: &Writer<'_>, h: Handle<Expression>) -> Result<String, FormsError> {
        match self.types[h] {
            naga::proc::TypeResolution::Handle(t) => w.ty(t),
            naga::proc::TypeResolution::Value(ref inner) => w.inner(inner),
        }
    }
}
