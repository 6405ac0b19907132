//! Shrinks a failing generated kernel to a small one that still fails, so a mismatch reads as
//! a few lines of WGSL rather than a page.
//!
//! Each step tries one simplification (drop a statement, keep one branch of an `if` or one case
//! of a `switch`, replace an expression by an operand of its type or by a plain value of its
//! type) and keeps it when the caller's test still fails; it stops when none does.

use super::{Bin, E, HELPER_VARS, Kernel, S, T};

/// A plain value of each type that is not a constant expression.
fn plain(t: T) -> E {
    match t {
        T::U => E::Item,
        T::I => E::Param(1),
        T::F => E::Param(2),
        T::B => E::Cmp(super::Cmp::Lt, T::U, Box::new(E::Item), Box::new(E::Lit(T::U, 1))),
    }
}

/// The type of an expression, given the variables' types.
fn ty(e: &E, vars: &[T]) -> T {
    match e {
        E::Lit(t, _) | E::Neg(t, _) | E::Not(t, _) | E::Bin(_, t, ..) | E::Select(t, ..) | E::Call(_, t, _) => *t,
        E::Var(k) => vars.get(*k).copied().unwrap_or(T::U),
        E::Param(k) => [T::U, T::I, T::F][*k],
        E::Item | E::A(_) | E::WLen => T::U,
        E::B(_) | E::Helper(..) => T::F,
        E::W(_) => T::I,
        E::Cmp(..) => T::B,
        E::Conv(to, ..) | E::Bitcast(to, ..) => *to,
    }
}

/// The operands of an expression that have its own type.
fn same_typed_children(e: &E) -> Vec<&E> {
    match e {
        E::Neg(_, x) | E::Not(_, x) => vec![x],
        E::Bin(Bin::Shl | Bin::Shr, _, l, _) => vec![l],
        E::Bin(_, _, l, r) => vec![l, r],
        E::Select(_, no, yes, _) => vec![no, yes],
        E::Call(super::Fun::Ldexp, _, args) => args.iter().take(1).collect(),
        E::Call(_, t, args) if *t == T::F => args.iter().collect(),
        E::Call(_, _, args) => args.iter().take(1).collect(),
        _ => Vec::new(),
    }
}

/// Every expression of a kernel, mutably, with the variables it sees.
fn for_each_expr(k: &mut Kernel, f: &mut dyn FnMut(&mut E, &[T])) {
    fn walk(e: &mut E, vars: &[T], f: &mut dyn FnMut(&mut E, &[T])) {
        f(e, vars);
        match e {
            E::A(x) | E::B(x) | E::W(x) | E::Neg(_, x) | E::Not(_, x) | E::Conv(_, _, x) | E::Bitcast(_, _, x) => {
                walk(x, vars, f)
            }
            E::Bin(_, _, l, r) | E::Cmp(_, _, l, r) | E::Helper(l, r) => {
                walk(l, vars, f);
                walk(r, vars, f);
            }
            E::Select(_, a, b, c) => {
                walk(a, vars, f);
                walk(b, vars, f);
                walk(c, vars, f);
            }
            E::Call(_, _, args) => args.iter_mut().for_each(|a| walk(a, vars, f)),
            _ => {}
        }
    }
    fn block(body: &mut [S], vars: &[T], f: &mut dyn FnMut(&mut E, &[T])) {
        for s in body {
            match s {
                S::Assign(_, e) => walk(e, vars, f),
                S::If(c, yes, no) => {
                    walk(c, vars, f);
                    block(yes, vars, f);
                    block(no, vars, f);
                }
                S::For(_, bound, body) => {
                    walk(bound, vars, f);
                    block(body, vars, f);
                }
                S::Switch(sel, cases, default) => {
                    walk(sel, vars, f);
                    cases.iter_mut().for_each(|(_, b)| block(b, vars, f));
                    block(default, vars, f);
                }
                S::StorePastEnd(a, v) => {
                    walk(a, vars, f);
                    walk(v, vars, f);
                }
                S::Break | S::Continue | S::Return => {}
            }
        }
    }
    let vars = k.vars.clone();
    block(&mut k.body, &vars, f);
    walk(&mut k.out_u, &vars, f);
    walk(&mut k.out_f, &vars, f);
    for e in [&mut k.helper_if, &mut k.helper_t, &mut k.helper_ret] {
        walk(e, &HELPER_VARS, f);
    }
}

/// Every statement list of a kernel, mutably.
fn for_each_block(body: &mut Vec<S>, f: &mut dyn FnMut(&mut Vec<S>)) {
    f(body);
    for s in body.iter_mut() {
        match s {
            S::If(_, yes, no) => {
                for_each_block(yes, f);
                for_each_block(no, f);
            }
            S::For(_, _, b) => for_each_block(b, f),
            S::Switch(_, cases, default) => {
                cases.iter_mut().for_each(|(_, b)| for_each_block(b, f));
                for_each_block(default, f);
            }
            _ => {}
        }
    }
}

/// The kernels one simplification away from `k`.
fn variants(k: &Kernel) -> Vec<Kernel> {
    let mut out = statement_variants(k);
    out.extend(expression_variants(k));
    out
}

/// The kernel with one statement dropped, or one branch of an if (one body of a switch) in its
/// place.
fn statement_variants(k: &Kernel) -> Vec<Kernel> {
    let mut out = Vec::new();
    let mut blocks = 0;
    for_each_block(&mut k.clone().body, &mut |_| blocks += 1);
    for target in 0..blocks {
        let mut len = 0;
        let mut n = 0;
        for_each_block(&mut k.clone().body, &mut |b| {
            if n == target {
                len = b.len();
            }
            n += 1;
        });
        for at in 0..len {
            for replace in 0..4 {
                let mut v = k.clone();
                let mut n = 0;
                let mut changed = false;
                for_each_block(&mut v.body, &mut |b| {
                    if n == target && !changed {
                        let inner = match (&b[at], replace) {
                            (_, 0) => Some(Vec::new()),
                            (S::If(_, yes, _), 1) => Some(yes.clone()),
                            (S::If(_, _, no), 2) => Some(no.clone()),
                            (S::Switch(_, _, default), 1) => Some(default.clone()),
                            (S::Switch(_, cases, _), 2) => cases.first().map(|(_, b)| b.clone()),
                            (S::Switch(_, cases, _), 3) => cases.get(1).map(|(_, b)| b.clone()),
                            _ => None,
                        };
                        if let Some(inner) = inner {
                            b.splice(at..=at, inner);
                            changed = true;
                        }
                    }
                    n += 1;
                });
                if changed {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// The kernel with one expression replaced by an operand of the same type, or a plain value.
fn expression_variants(k: &Kernel) -> Vec<Kernel> {
    let mut out = Vec::new();
    let mut count = 0;
    for_each_expr(&mut k.clone(), &mut |_, _| count += 1);
    for target in 0..count {
        for choice in 0..6 {
            let mut v = k.clone();
            let mut n = 0;
            let mut changed = false;
            for_each_expr(&mut v, &mut |e, vars| {
                if n == target && !changed {
                    let replacement = match choice {
                        0 => Some(plain(ty(e, vars))),
                        c => same_typed_children(e).get(c - 1).map(|x| (*x).clone()),
                    };
                    if let Some(r) = replacement {
                        if r != *e && !matches!(e, E::Item | E::Param(_)) {
                            *e = r;
                            changed = true;
                        }
                    }
                }
                n += 1;
            });
            if changed {
                out.push(v);
            }
        }
    }
    out
}

/// Shrinks `k` while `fails` holds, trying at most `tries` kernels.
pub fn shrink(k: &Kernel, tries: usize, fails: &mut dyn FnMut(&Kernel) -> bool) -> Kernel {
    let mut best = k.clone();
    let mut left = tries;
    'outer: loop {
        for v in variants(&best) {
            if left == 0 {
                break 'outer;
            }
            left -= 1;
            if fails(&v) {
                best = v;
                continue 'outer;
            }
        }
        break;
    }
    best
}
