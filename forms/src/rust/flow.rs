//! Functions and statements as Rust: each WGSL function becomes one (`#[inline(always)]`; WGSL
//! has no recursion; a math library function with an f64 fast path is `#[cold]` and out of
//! line instead, as only the fast path's `None` calls it), each emitted expression a `let`,
//! structured control flow Rust's own, with labels where naga's `break` and `continue` need them.

use std::collections::HashSet;

use naga::{Expression, Function, Handle, Statement, TypeInner};

use super::frame::Frame;
use super::{Writer, internal};
use crate::FormsError;
use crate::walk::{self, Flow, Target};

fn is_pointer(inner: &TypeInner) -> bool {
    matches!(inner, TypeInner::Pointer { .. } | TypeInner::ValuePointer { .. })
}

/// Writes one function: a WGSL function (`handle`), or the entry point's body as `xc_item`.
pub(crate) fn function(w: &mut Writer<'_>, fun: &Function, handle: Option<Handle<Function>>) -> Result<(), FormsError> {
    let types = walk::typify(w.module, fun).map_err(|e| internal(format!("typing an expression: {e}")))?;
    let mut frame = Frame {
        fun,
        types,
        names: vec![None; fun.expressions.len()],
        locals: Vec::new(),
        args: Vec::new(),
        taken: ["xc", "xc_gid", "xc_at"].iter().map(|s| s.to_string()).collect(),
        labels: 0,
        targets: Vec::new(),
        hoisted: std::collections::HashMap::new(),
    };
    let mut params = vec!["xc: &mut XcCtx<'_>".to_owned()];
    for (i, arg) in fun.arguments.iter().enumerate() {
        let name = frame.fresh(arg.name.as_deref(), format!("xc_arg{i}"));
        if handle.is_some() {
            let ty = match w.module.types[arg.ty].inner {
                TypeInner::Pointer { base, .. } => format!("&mut {}", w.ty(base)?),
                _ => w.ty(arg.ty)?,
            };
            params.push(format!("{name}: {ty}"));
        }
        frame.args.push(name);
    }
    let result = match (&fun.result, handle) {
        (Some(r), Some(_)) => format!(" -> {}", w.ty(r.ty)?),
        _ => String::new(),
    };
    signature(w, fun, handle, &params, &result);
    w.indent += 1;
    if handle.is_none() {
        for name in frame.args.clone() {
            w.line(format!("let {name}: [u32; 3] = xc_gid;"));
        }
    }
    for (h, local) in fun.local_variables.iter() {
        let name = frame.fresh(local.name.as_deref(), format!("xc_v{}", h.index()));
        let ty = w.ty(local.ty)?;
        let init = match local.init {
            Some(init) => frame.value(w, init)?,
            None => w.zero(local.ty)?,
        };
        w.line(format!("let mut {name}: {ty} = {init};"));
        frame.locals.push(name);
    }
    walk::walk_block(&mut frame, w, &fun.body)?;
    w.indent -= 1;
    w.line("}");
    w.line("");
    Ok(())
}

impl<'f> Frame<'f> {
    /// A nested block in braces.
    fn braced(&mut self, w: &mut Writer<'_>, head: String, block: &'f naga::Block) -> Result<(), FormsError> {
        w.line(format!("{head}{{"));
        w.indent += 1;
        walk::walk_block(self, w, block)?;
        w.indent -= 1;
        w.line("}");
        Ok(())
    }

    /// Declares, before a loop body wrapped in a labelled block, the values the body computes at
    /// its top level that the continuing block or `break if` reads: out of the block they would
    /// be out of scope. (WGSL lets continuing read the body's `let`s that no `continue` skips.)
    fn hoist(
        &mut self,
        w: &mut Writer<'_>,
        body: &naga::Block,
        continuing: &naga::Block,
        break_if: Option<Handle<Expression>>,
    ) -> Result<(), FormsError> {
        let in_body: Vec<Handle<Expression>> = body
            .iter()
            .filter_map(|s| match s {
                Statement::Emit(range) => Some(range.clone()),
                _ => None,
            })
            .flatten()
            .filter(|&h| !is_pointer(&self.inner(w, h)))
            .collect();
        // What continuing reads, through pointers and inline expressions, up to the body's
        // values (each a name of its own, whatever it was computed from).
        let mut wanted = HashSet::new();
        let mut roots: Vec<Handle<Expression>> = break_if.into_iter().collect();
        statement_roots(continuing, &mut roots);
        while let Some(h) = roots.pop() {
            if wanted.insert(h) && !in_body.contains(&h) {
                roots.extend(operands(&self.fun.expressions[h]));
            }
        }
        for h in in_body.into_iter().filter(|h| wanted.contains(h)) {
            let ty = self.type_of(w, h)?;
            let zero = match self.types[h] {
                naga::proc::TypeResolution::Handle(t) => w.zero(t)?,
                naga::proc::TypeResolution::Value(ref inner) => w.zero_inner(inner)?,
            };
            let wgsl = self.fun.named_expressions.get(&h).map(String::as_str);
            let name = self.fresh(wgsl, format!("xc_e{}", h.index()));
            w.line(format!("let mut {name}: {ty} = {zero};"));
            self.hoisted.insert(h, name);
        }
        Ok(())
    }
}

impl<'f, 'm> Flow<'f, Writer<'m>> for Frame<'f> {
    type Value = String;
    /// The statement that jumps: `break 'xc_loop1;`, `continue 'xc_loop1;`.
    type Jump = String;
    type If = ();
    /// The loop's label, and its body's where a `continue` must still run the continuing block.
    type Loop = (String, Option<String>);

    fn internal(what: &str) -> FormsError {
        internal(what)
    }

    fn targets(&mut self) -> &mut Vec<Target<String>> {
        &mut self.targets
    }

    fn eval(&mut self, w: &mut Writer<'m>, h: Handle<Expression>) -> Result<String, FormsError> {
        self.value(w, h)
    }

    /// An emitted expression as a `let` (or, hoisted, an assignment); pointers are not values.
    fn emit(&mut self, w: &mut Writer<'m>, h: Handle<Expression>) -> Result<(), FormsError> {
        if is_pointer(&self.inner(w, h)) {
            return Ok(());
        }
        let value = self.compute(w, h)?;
        if let Some(name) = self.hoisted.remove(&h) {
            w.line(format!("{name} = {value};"));
            self.names[h.index()] = Some(name);
            return Ok(());
        }
        let ty = self.type_of(w, h)?;
        let wgsl = self.fun.named_expressions.get(&h).map(String::as_str);
        let name = self.fresh(wgsl, format!("xc_e{}", h.index()));
        w.line(format!("let {name}: {ty} = {value};"));
        self.names[h.index()] = Some(name);
        Ok(())
    }

    fn block_begin(&mut self, w: &mut Writer<'m>) {
        w.line("{");
        w.indent += 1;
    }

    fn block_end(&mut self, w: &mut Writer<'m>) {
        w.indent -= 1;
        w.line("}");
    }

    /// An if, with its else where it has one.
    fn if_begin(&mut self, w: &mut Writer<'m>, condition: String) -> Self::If {
        w.line(format!("if {condition} {{"));
        w.indent += 1;
    }

    fn if_else(&mut self, w: &mut Writer<'m>, _: &Self::If, reject: &'f naga::Block) {
        w.indent -= 1;
        if !reject.is_empty() {
            w.line("} else {");
            w.indent += 1;
        }
    }

    fn if_end(&mut self, w: &mut Writer<'m>, _: Self::If, reject: &'f naga::Block) {
        if !reject.is_empty() {
            w.indent -= 1;
        }
        w.line("}");
    }

    /// A switch: a labelled block around a `match`, its empty fall-through cases sharing the
    /// next case's arm (WGSL's `case 1, 2:`), the default arm last, as Rust needs.
    fn switch(&mut self, w: &mut Writer<'m>, s: String, cases: &'f [naga::SwitchCase]) -> Result<(), FormsError> {
        let label = self.label("switch");
        w.line(format!("{label}: {{"));
        w.indent += 1;
        w.line(format!("match {s} {{"));
        w.indent += 1;
        self.targets.push(Target::Switch { brk: format!("break {label};") });
        // Cases that fall through with empty bodies share the next case's arm (WGSL's
        // `case 1, 2:`); the default arm goes last, as Rust needs.
        let mut arms: Vec<(Vec<String>, bool, &'f naga::Block)> = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        let mut pending_default = false;
        for case in cases {
            match case.value {
                naga::SwitchValue::I32(v) => pending.push(super::expr::literal(naga::Literal::I32(v))?),
                naga::SwitchValue::U32(v) => pending.push(format!("{v}u32")),
                naga::SwitchValue::Default => pending_default = true,
            }
            if case.fall_through {
                if !case.body.is_empty() {
                    return Err(internal("a case that falls through after a body"));
                }
                continue;
            }
            arms.push((std::mem::take(&mut pending), std::mem::take(&mut pending_default), &case.body));
        }
        let mut default = None;
        for (values, is_default, body) in arms {
            if is_default {
                default = Some(body);
                continue;
            }
            let pattern = values.iter().map(|v| v.trim_start_matches('(').trim_end_matches(')')).collect::<Vec<_>>();
            self.braced(w, format!("{} => ", pattern.join(" | ")), body)?;
        }
        match default {
            Some(body) => self.braced(w, "_ => ".to_owned(), body)?,
            None => w.line("_ => {}"),
        }
        self.targets.pop();
        w.indent -= 1;
        w.line("}");
        w.indent -= 1;
        w.line("}");
        Ok(())
    }

    /// A loop, labelled; its body in a labelled block of its own where a `continue` must still
    /// reach the continuing block (values the continuing block reads declared before it).
    fn loop_begin(
        &mut self,
        w: &mut Writer<'m>,
        body: &'f naga::Block,
        continuing: &'f naga::Block,
        break_if: Option<Handle<Expression>>,
    ) -> Result<(Self::Loop, Target<String>), FormsError> {
        let label = self.label("loop");
        let needs_body_label = (!continuing.is_empty() || break_if.is_some()) && continues(body);
        let body_label = needs_body_label.then(|| self.label("body"));
        w.line(format!("{label}: loop {{"));
        w.indent += 1;
        if let Some(b) = &body_label {
            self.hoist(w, body, continuing, break_if)?;
            w.line(format!("{b}: {{"));
            w.indent += 1;
        }
        let cont = match &body_label {
            Some(b) => format!("break {b};"),
            None => format!("continue {label};"),
        };
        let target = Target::Loop { brk: format!("break {label};"), cont };
        Ok(((label, body_label), target))
    }

    fn loop_continuing(&mut self, w: &mut Writer<'m>, (label, body_label): &Self::Loop) -> Target<String> {
        if body_label.is_some() {
            w.indent -= 1;
            w.line("}");
        }
        Target::Loop { brk: format!("break {label};"), cont: format!("continue {label};") }
    }

    fn loop_end(&mut self, w: &mut Writer<'m>, (label, _): Self::Loop, break_if: Option<String>) {
        if let Some(c) = break_if {
            w.line(format!("if {c} {{ break {label}; }}"));
        }
        w.indent -= 1;
        w.line("}");
    }

    fn jump(&mut self, w: &mut Writer<'m>, to: String) {
        w.line(to);
    }

    fn ret(&mut self, w: &mut Writer<'m>, value: Option<Handle<Expression>>) -> Result<(), FormsError> {
        match value {
            Some(v) => {
                let v = self.value(w, v)?;
                w.line(format!("return {v};"));
            }
            None => w.line("return;"),
        }
        Ok(())
    }

    fn store(
        &mut self,
        w: &mut Writer<'m>,
        pointer: Handle<Expression>,
        value: Handle<Expression>,
    ) -> Result<(), FormsError> {
        let place = self.place(w, pointer)?;
        let v = self.value(w, value)?;
        w.line(place.write(&v));
        Ok(())
    }

    /// A call of a function of the module: locals passed by pointer, values by value.
    fn call(
        &mut self,
        w: &mut Writer<'m>,
        function: Handle<naga::Function>,
        arguments: &[Handle<Expression>],
        result: Option<Handle<Expression>>,
    ) -> Result<(), FormsError> {
        let mut args = vec!["xc".to_owned()];
        for &a in arguments {
            if is_pointer(&self.inner(w, a)) {
                let place = self.place(w, a)?;
                if place.root.starts_with("xc.") {
                    return Err(FormsError::Unsupported {
                        at: None,
                        construct: "a pointer to a global passed to a function".into(),
                        why: "the CPU form passes locals by pointer only; copy the value into a local var, pass that, and store it back".into(),
                    });
                }
                args.push(place.borrow().ok_or_else(|| FormsError::Unsupported {
                    at: None,
                    construct: "a pointer to an element at a computed index passed to a function".into(),
                    why: "the CPU form passes whole locals or constant-indexed parts by pointer; copy the element into a local var first".into(),
                })?);
            } else {
                args.push(self.value(w, a)?);
            }
        }
        let mut call = format!("{}({})", w.fn_names[function.index()], args.join(", "));
        if let Some(&(_, fast)) = w.native.iter().find(|(h, _)| *h == function) {
            // The f64 fast path, and the library's WGSL where it cannot say (same bits).
            call = format!("match {fast}({}) {{ Some(xc_v) => xc_v, None => {call} }}", args[1..].join(", "));
        }
        match result {
            Some(r) => {
                let ty = self.type_of(w, r)?;
                let name = self.fresh(None, format!("xc_e{}", r.index()));
                w.line(format!("let {name}: {ty} = {call};"));
                self.names[r.index()] = Some(name);
            }
            None => w.line(format!("{call};")),
        }
        Ok(())
    }
}

/// Whether a loop body holds a `continue` for this loop (not one of a loop inside it).
fn continues(block: &naga::Block) -> bool {
    block.iter().any(|s| match s {
        Statement::Continue => true,
        Statement::Block(b) => continues(b),
        Statement::If { accept, reject, .. } => continues(accept) || continues(reject),
        Statement::Switch { cases, .. } => cases.iter().any(|c| continues(&c.body)),
        _ => false,
    })
}

/// The expressions a block's statements use directly (emitted ones included).
fn statement_roots(block: &naga::Block, out: &mut Vec<Handle<Expression>>) {
    for statement in block {
        match *statement {
            Statement::Emit(ref range) => out.extend(range.clone()),
            Statement::Block(ref b) => statement_roots(b, out),
            Statement::If { condition, ref accept, ref reject } => {
                out.push(condition);
                statement_roots(accept, out);
                statement_roots(reject, out);
            }
            Statement::Switch { selector, ref cases } => {
                out.push(selector);
                cases.iter().for_each(|c| statement_roots(&c.body, out));
            }
            Statement::Loop { ref body, ref continuing, break_if } => {
                statement_roots(body, out);
                statement_roots(continuing, out);
                out.extend(break_if);
            }
            Statement::Return { value } => out.extend(value),
            Statement::Store { pointer, value } => out.extend([pointer, value]),
            Statement::Call { ref arguments, .. } => out.extend(arguments.iter().copied()),
            _ => {}
        }
    }
}

/// The expressions an expression reads.
fn operands(e: &Expression) -> Vec<Handle<Expression>> {
    use Expression as E;
    match *e {
        E::Access { base, index } => vec![base, index],
        E::AccessIndex { base, .. } => vec![base],
        E::Splat { value, .. } => vec![value],
        E::Swizzle { vector, .. } => vec![vector],
        E::Compose { ref components, .. } => components.clone(),
        E::Load { pointer } => vec![pointer],
        E::Unary { expr, .. } | E::As { expr, .. } => vec![expr],
        E::Binary { left, right, .. } => vec![left, right],
        E::Select { condition, accept, reject } => vec![condition, accept, reject],
        E::Relational { argument, .. } => vec![argument],
        E::Math { arg, arg1, arg2, arg3, .. } => [Some(arg), arg1, arg2, arg3].into_iter().flatten().collect(),
        E::ArrayLength(pointer) => vec![pointer],
        _ => Vec::new(),
    }
}

/// The doc, attributes and first line of a function (`handle`) or of the entry's body (`None`).
fn signature(w: &mut Writer<'_>, fun: &Function, handle: Option<Handle<Function>>, params: &[String], result: &str) {
    let Some(h) = handle else {
        w.line("/// The entry point's body for one item.");
        w.line("#[inline(always)]");
        w.line("fn xc_item(xc: &mut XcCtx<'_>, xc_gid: [u32; 3]) {");
        return;
    };
    if let Some(name) = &fun.name {
        w.line(format!("/// WGSL `fn {name}`."));
    }
    if w.native.iter().any(|(n, _)| *n == h) {
        // Called only where the fast path cannot say: kept out of the hot loop.
        w.line("#[cold]");
        w.line("#[inline(never)]");
    } else {
        w.line("#[inline(always)]");
    }
    w.line(format!("fn {}({}){result} {{", w.fn_names[h.index()], params.join(", ")));
}
