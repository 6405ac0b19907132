//! The reference: a generated kernel run here, item by item, with xcd's exact semantics — what
//! every form of the kernel must give bit for bit (docs/kernels.md, "The exact subset").
//!
//! Floats are Rust's f32 (IEEE binary32, round to nearest even, subnormals kept, never fused);
//! the rest follows WGSL as xcd-forms fixes it: integer `/` by 0 gives the dividend, `%` by 0
//! gives 0, `MIN / -1` gives `MIN`; shifts take their amount modulo 32; float to integer clamps
//! to the range naga clamps to and gives 0 for NaN; float `min(a, b)` is `b < a ? b : a`; a NaN
//! stored or bitcast is `0x7fc00000`.

use super::{Bin, Cmp, E, Fun, HELPER_VARS, Kernel, S, T};

/// A value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum V {
    U(u32),
    I(i32),
    F(f32),
    B(bool),
}

impl V {
    fn u(self) -> u32 {
        match self {
            V::U(x) => x,
            V::I(x) => x as u32,
            V::F(x) => x.to_bits(),
            V::B(x) => u32::from(x),
        }
    }
    fn i(self) -> i32 {
        self.u() as i32
    }
    fn f(self) -> f32 {
        match self {
            V::F(x) => x,
            other => f32::from_bits(other.u()),
        }
    }
    fn b(self) -> bool {
        match self {
            V::B(x) => x,
            other => other.u() != 0,
        }
    }
}

/// The one NaN a form stores.
pub const CANONICAL_NAN: u32 = 0x7fc0_0000;

fn canonical(x: f32) -> u32 {
    if x.is_nan() { CANONICAL_NAN } else { x.to_bits() }
}

/// A tile's inputs.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The per-item u32 array, for the whole run.
    pub a: Vec<u32>,
    /// The per-item f32 array (bits), for the whole run.
    pub b: Vec<u32>,
    /// The whole i32 array.
    pub w: Vec<i32>,
    /// The parameters: u32, i32 and f32 bits.
    pub p: [u32; 3],
}

enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

struct Item<'a> {
    k: &'a Kernel,
    inputs: &'a Inputs,
    start: usize,
    count: u32,
    i: u32,
    vars: Vec<V>,
}

fn min_f(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}
fn max_f(a: f32, b: f32) -> f32 {
    if a < b { b } else { a }
}

/// WGSL's float-to-integer conversion as naga writes it (clamp, then truncate), with NaN → 0.
fn f_to_u(x: f32) -> u32 {
    if x.is_nan() { 0 } else { x.clamp(0.0, 4_294_967_040.0) as u32 }
}
fn f_to_i(x: f32) -> i32 {
    if x.is_nan() { 0 } else { x.clamp(-2_147_483_648.0, 2_147_483_520.0) as i32 }
}

fn extract(e: u32, signed: bool, offset: u32, count: u32) -> u32 {
    let o = offset.min(32);
    let c = count.min(32 - o);
    if c == 0 {
        return 0;
    }
    let v = e.checked_shr(o).unwrap_or(0);
    let mask = if c == 32 { u32::MAX } else { (1 << c) - 1 };
    let v = v & mask;
    if signed && c < 32 && (v >> (c - 1)) & 1 == 1 { v | !mask } else { v }
}

fn insert(e: u32, new: u32, offset: u32, count: u32) -> u32 {
    let o = offset.min(32);
    let c = count.min(32 - o);
    if c == 0 {
        return e;
    }
    let mask = (if c == 32 { u32::MAX } else { (1 << c) - 1 }) << o;
    (e & !mask) | (new.checked_shl(o).unwrap_or(0) & mask)
}

impl Item<'_> {
    fn load_a(&self, idx: u32) -> u32 {
        if idx < self.count { self.inputs.a[self.start + idx as usize] } else { 0 }
    }

    fn expr(&mut self, e: &E) -> V {
        match e {
            E::Lit(t, bits) => typed(*t, *bits),
            E::Var(k) => self.vars[*k],
            E::Param(k) => typed([T::U, T::I, T::F][*k], self.inputs.p[*k]),
            E::Item => V::U(self.i),
            E::A(x) => {
                let idx = self.expr(x).u();
                V::U(self.load_a(idx))
            }
            E::B(x) => {
                let idx = self.expr(x).u();
                V::F(f32::from_bits(if idx < self.count { self.inputs.b[self.start + idx as usize] } else { 0 }))
            }
            E::W(x) => {
                let idx = self.expr(x).u() as usize;
                V::I(self.inputs.w.get(idx).copied().unwrap_or(0))
            }
            E::WLen => V::U(self.inputs.w.len() as u32),
            E::Neg(t, x) => {
                let v = self.expr(x);
                match t {
                    T::F => V::F(-v.f()),
                    _ => V::I(v.i().wrapping_neg()),
                }
            }
            E::Not(t, x) => {
                let v = self.expr(x);
                match t {
                    T::B => V::B(!v.b()),
                    _ => typed(*t, !v.u()),
                }
            }
            E::Bin(op, t, l, r) => {
                let (l, r) = (self.expr(l), self.expr(r));
                binary(*op, *t, l, r)
            }
            E::Cmp(c, t, l, r) => {
                let (l, r) = (self.expr(l), self.expr(r));
                V::B(compare(*c, *t, l, r))
            }
            E::Select(_, no, yes, c) => {
                let (no, yes, c) = (self.expr(no), self.expr(yes), self.expr(c));
                if c.b() { yes } else { no }
            }
            E::Conv(to, from, x) => {
                let v = self.expr(x);
                convert(*to, *from, v)
            }
            E::Bitcast(to, from, x) => {
                let v = self.expr(x);
                let bits = if *from == T::F { canonical(v.f()) } else { v.u() };
                typed(*to, bits)
            }
            E::Helper(x, y) => {
                let (x, y) = (self.expr(x), self.expr(y));
                self.helper(x, y)
            }
            E::Call(f, t, args) => {
                let a: Vec<V> = args.iter().map(|x| self.expr(x)).collect();
                call(*f, *t, &a)
            }
        }
    }

    /// The kernel's helper function called with `x` and `y`, on variables of its own.
    fn helper(&mut self, x: V, y: V) -> V {
        let saved = std::mem::replace(&mut self.vars, vec![x, y, y]);
        let c = self.expr(&self.k.helper_if);
        if c.b() {
            let t = self.expr(&self.k.helper_t);
            self.vars[2] = t;
        }
        let out = self.expr(&self.k.helper_ret);
        self.vars = saved;
        let _ = HELPER_VARS;
        out
    }

    fn block(&mut self, body: &[S]) -> Flow {
        for s in body {
            match self.statement(s) {
                Flow::Normal => {}
                other => return other,
            }
        }
        Flow::Normal
    }

    fn statement(&mut self, s: &S) -> Flow {
        match s {
            S::Assign(k, e) => {
                self.vars[*k] = self.expr(e);
                Flow::Normal
            }
            S::If(c, yes, no) => {
                if self.expr(c).b() {
                    self.block(yes)
                } else {
                    self.block(no)
                }
            }
            S::For(_, bound, body) => {
                let mut j = 0u32;
                while j < self.expr(bound).u() {
                    match self.block(body) {
                        Flow::Break => break,
                        Flow::Return => return Flow::Return,
                        Flow::Normal | Flow::Continue => {}
                    }
                    j += 1;
                }
                Flow::Normal
            }
            S::Switch(sel, cases, default) => {
                let v = self.expr(sel).u();
                let body = cases.iter().find(|(values, _)| values.contains(&v)).map_or(default.as_slice(), |(_, b)| b);
                match self.block(body) {
                    Flow::Break => Flow::Normal,
                    other => other,
                }
            }
            S::Break => Flow::Break,
            S::Continue => Flow::Continue,
            S::StorePastEnd(at, v) => {
                self.expr(at);
                self.expr(v);
                Flow::Normal
            }
            S::Return => Flow::Return,
        }
    }
}

fn typed(t: T, bits: u32) -> V {
    match t {
        T::U => V::U(bits),
        T::I => V::I(bits as i32),
        T::F => V::F(f32::from_bits(bits)),
        T::B => V::B(bits != 0),
    }
}

fn binary(op: Bin, t: T, l: V, r: V) -> V {
    if t == T::F {
        let (a, b) = (l.f(), r.f());
        return V::F(match op {
            Bin::Add => a + b,
            Bin::Sub => a - b,
            Bin::Mul => a * b,
            // The exact remainder (C's fmod), as the math library's `%` is.
            Bin::Rem => a % b,
            _ => a / b,
        });
    }
    if t == T::B {
        return V::B(match op {
            Bin::LogicalAnd | Bin::And => l.b() && r.b(),
            _ => l.b() || r.b(),
        });
    }
    let (a, b) = (l.u(), r.u());
    let signed = t == T::I;
    let bits = match op {
        Bin::Add => a.wrapping_add(b),
        Bin::Sub => a.wrapping_sub(b),
        Bin::Mul => a.wrapping_mul(b),
        Bin::Div | Bin::Rem => {
            let overflow = signed && a == 0x8000_0000 && b == u32::MAX;
            let d = if b == 0 || overflow { 1 } else { b };
            match (op, signed) {
                (Bin::Div, true) => ((a as i32).wrapping_div(d as i32)) as u32,
                (Bin::Div, false) => a / d,
                (_, true) => (a as i32).wrapping_sub((a as i32).wrapping_div(d as i32).wrapping_mul(d as i32)) as u32,
                (_, false) => a % d,
            }
        }
        Bin::And => a & b,
        Bin::Or => a | b,
        Bin::Xor => a ^ b,
        Bin::Shl => a << (b & 31),
        Bin::Shr if signed => ((a as i32) >> (b & 31)) as u32,
        Bin::Shr => a >> (b & 31),
        Bin::LogicalAnd | Bin::LogicalOr => 0,
    };
    typed(t, bits)
}

fn compare(c: Cmp, t: T, l: V, r: V) -> bool {
    match t {
        T::F => {
            let (a, b) = (l.f(), r.f());
            match c {
                Cmp::Eq => a == b,
                Cmp::Ne => a != b,
                Cmp::Lt => a < b,
                Cmp::Le => a <= b,
                Cmp::Gt => a > b,
                Cmp::Ge => a >= b,
            }
        }
        T::I => ord(c, l.i().cmp(&r.i())),
        T::U | T::B => ord(c, l.u().cmp(&r.u())),
    }
}

fn ord(c: Cmp, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match c {
        Cmp::Eq => o == Equal,
        Cmp::Ne => o != Equal,
        Cmp::Lt => o == Less,
        Cmp::Le => o != Greater,
        Cmp::Gt => o == Greater,
        Cmp::Ge => o != Less,
    }
}

/// x (hi + lo) rounded once to f32: x hi as p + q (q by a fused multiply-add, to about 2^-104),
/// and p's rounding, which differs from the sum's only where p is itself an f32 midpoint.
fn times(x: f32, hi: f64, lo: f64) -> f32 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let x = f64::from(x);
    let p = x * hi;
    let q = x.mul_add(hi, -p) + x * lo;
    let r = p as f32;
    let (below, above) = if f64::from(r) <= p { (r, r.next_up()) } else { (r.next_down(), r) };
    if above.is_finite() && p == (f64::from(below) + f64::from(above)) / 2.0 && q != 0.0 {
        return if q > 0.0 { above } else { below };
    }
    r
}

/// A float built-in's value, as WGSL computes it (min and max as the exact subset writes them).
fn call_float(f: Fun, a: &[V]) -> f32 {
    let fl = |k: usize| a[k].f();
    let len3 = |x: f32, y: f32, z: f32| (x * x + y * y + z * z).sqrt();
    match f {
        Fun::Abs => fl(0).abs(),
        Fun::Min => min_f(fl(0), fl(1)),
        Fun::Max => max_f(fl(0), fl(1)),
        Fun::Clamp => min_f(max_f(fl(0), fl(1)), fl(2)),
        Fun::Saturate => min_f(max_f(fl(0), 0.0), 1.0),
        Fun::Floor => fl(0).floor(),
        Fun::Ceil => fl(0).ceil(),
        Fun::Trunc => fl(0).trunc(),
        Fun::Round => fl(0).round_ties_even(),
        Fun::Fract => fl(0) - fl(0).floor(),
        Fun::Sqrt => fl(0).sqrt(),
        // Correctly rounded, as the math library's is (CORE-MATH's, proven so).
        Fun::Exp => core_math::expf(fl(0)),
        Fun::Exp2 => core_math::exp2f(fl(0)),
        Fun::Log => core_math::logf(fl(0)),
        Fun::Log2 => core_math::log2f(fl(0)),
        Fun::Sin => core_math::sinf(fl(0)),
        Fun::Cos => core_math::cosf(fl(0)),
        Fun::Tan => core_math::tanf(fl(0)),
        Fun::Asin => core_math::asinf(fl(0)),
        Fun::Acos => core_math::acosf(fl(0)),
        Fun::Atan => core_math::atanf(fl(0)),
        Fun::Atan2 => core_math::atan2f(fl(0), fl(1)),
        Fun::Pow => core_math::powf(fl(0), fl(1)),
        // Rounded to nearest even, subnormal halves kept, past 65520 infinite: the `half` crate's.
        Fun::QuantizeToF16 => half::f16::from_f32(fl(0)).to_f32(),
        Fun::Sinh => core_math::sinhf(fl(0)),
        Fun::Cosh => core_math::coshf(fl(0)),
        Fun::Tanh => core_math::tanhf(fl(0)),
        Fun::Asinh => core_math::asinhf(fl(0)),
        Fun::Acosh => core_math::acoshf(fl(0)),
        Fun::Atanh => core_math::atanhf(fl(0)),
        Fun::InverseSqrt => core_math::rsqrtf(fl(0)),
        // x 180/pi and x pi/180 to within 2^-104, rounded once: correct wherever the exact value
        // is not within that of a midpoint, which no f32 is (docs/kernels.md).
        Fun::Degrees => times(fl(0), f64::from_bits(0x404c_a5dc_1a63_c1f8), f64::from_bits(0xbce1_e7ab_4564_05f9)),
        Fun::Radians => times(fl(0), f64::from_bits(0x3f91_df46_a252_9d39), f64::from_bits(0x3c15_c1d8_becd_d291)),
        // Exact in f64 once n is clamped, then rounded once.
        Fun::Ldexp => (f64::from(fl(0)) * 2f64.powi(a[1].i().clamp(-300, 300))) as f32,
        // Rust's is IEEE's fused multiply-add, rounded once.
        Fun::Fma => fl(0).mul_add(fl(1), fl(2)),
        Fun::Sign => {
            let s = if fl(0) > 0.0 { 1.0 } else { 0.0 };
            if fl(0) < 0.0 { -1.0 } else { s }
        }
        Fun::Step => {
            if fl(0) <= fl(1) {
                1.0
            } else {
                0.0
            }
        }
        Fun::Mix => fl(0) * (1.0 - fl(2)) + fl(1) * fl(2),
        Fun::Dot2 => fl(0) * fl(2) + fl(1) * fl(3),
        Fun::Length3 => len3(fl(0), fl(1), fl(2)),
        Fun::Distance2 => {
            let (x, y) = (fl(0) - fl(2), fl(1) - fl(3));
            (x * x + y * y).sqrt()
        }
        Fun::NormalizeX => fl(0) / len3(fl(0), fl(1), fl(2)),
        Fun::CrossY => fl(2) * fl(3) - fl(0) * fl(5),
        _ => f32::NAN,
    }
}

fn call(f: Fun, t: T, a: &[V]) -> V {
    if t == T::F {
        return V::F(call_float(f, a));
    }
    let signed = t == T::I;
    let x = a[0].u();
    let bits = match f {
        Fun::Abs if signed => (x as i32).wrapping_abs() as u32,
        Fun::Abs => x,
        Fun::Min if signed => (x as i32).min(a[1].i()) as u32,
        Fun::Max if signed => (x as i32).max(a[1].i()) as u32,
        Fun::Min => x.min(a[1].u()),
        Fun::Max => x.max(a[1].u()),
        Fun::Clamp if signed => (x as i32).max(a[1].i()).min(a[2].i()) as u32,
        Fun::Clamp => x.max(a[1].u()).min(a[2].u()),
        Fun::Sign => {
            let s = if (x as i32) > 0 { 1 } else { 0 };
            if (x as i32) < 0 { u32::MAX } else { s }
        }
        Fun::CountOneBits => x.count_ones(),
        Fun::CountLeadingZeros => x.leading_zeros(),
        Fun::CountTrailingZeros => x.trailing_zeros(),
        Fun::ReverseBits => x.reverse_bits(),
        Fun::FirstLeadingBit => {
            let v = if signed && (x as i32) < 0 { !x } else { x };
            if v == 0 { u32::MAX } else { 31 - v.leading_zeros() }
        }
        Fun::FirstTrailingBit => {
            if x == 0 {
                u32::MAX
            } else {
                x.trailing_zeros()
            }
        }
        Fun::ExtractBits => extract(x, signed, a[1].u(), a[2].u()),
        Fun::InsertBits => insert(x, a[1].u(), a[2].u(), a[3].u()),
        _ => 0,
    };
    typed(t, bits)
}

/// Runs one tile (`start`, `count`) of the kernel; returns `o` and `g` (float bits) for it.
pub fn run(k: &Kernel, inputs: &Inputs, start: usize, count: u32) -> (Vec<u32>, Vec<u32>) {
    let mut o = Vec::with_capacity(count as usize);
    let mut g = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut item = Item { k, inputs, start, count, i, vars: Vec::new() };
        item.vars = k
            .vars
            .iter()
            .enumerate()
            .map(|(n, t)| match t {
                T::U => V::U(item.load_a(i)),
                T::F => V::F(f32::from_bits(inputs.b[start + i as usize])),
                T::I => V::I(inputs.w.get((i % (3 + n as u32)) as usize).copied().unwrap_or(0)),
                T::B => V::B(item.load_a(i) & 1 == 1),
            })
            .collect();
        item.block(&k.body);
        let u = item.expr(&k.out_u).u();
        let f = item.expr(&k.out_f).f();
        o.push(u);
        g.push(canonical(f));
    }
    (o, g)
}

/// WGSL's conversion of `v` from type `from` to `to` (floats to integers clamped, as naga writes).
fn convert(to: T, from: T, v: V) -> V {
    match (to, from) {
        (T::U, T::F) => V::U(f_to_u(v.f())),
        (T::I, T::F) => V::I(f_to_i(v.f())),
        (T::F, T::U) => V::F(v.u() as f32),
        (T::F, T::I) => V::F(v.i() as f32),
        (T::F, T::B) => V::F(if v.b() { 1.0 } else { 0.0 }),
        (T::B, T::F) => V::B(v.f() != 0.0),
        (T::B, _) => V::B(v.u() != 0),
        (_, T::B) => typed(to, u32::from(v.b())),
        _ => typed(to, v.u()),
    }
}
