//! Makes random kernels that are valid WGSL (see the module above for the rules).

use super::{Bin, Cmp, E, Fun, HELPER_VARS, Kernel, S, T};

/// The float builtins a kernel may call on one float (`ldexp` with an `i32` beside it).
const ONE_FLOAT: &[Fun] = &[
    Fun::Abs,
    Fun::Floor,
    Fun::Ceil,
    Fun::Trunc,
    Fun::Round,
    Fun::Fract,
    Fun::Sqrt,
    Fun::Exp,
    Fun::Exp2,
    Fun::Log,
    Fun::Log2,
    Fun::Sin,
    Fun::Cos,
    Fun::Tan,
    Fun::Asin,
    Fun::Acos,
    Fun::Atan,
    Fun::Sinh,
    Fun::Cosh,
    Fun::Tanh,
    Fun::Asinh,
    Fun::Acosh,
    Fun::Atanh,
    Fun::InverseSqrt,
    Fun::QuantizeToF16,
    Fun::Degrees,
    Fun::Radians,
    Fun::Ldexp,
    Fun::Sign,
    Fun::Saturate,
];

/// The float builtins a kernel may call on several floats (vector ones take their lanes as floats).
const MANY_FLOATS: &[Fun] = &[
    Fun::Min,
    Fun::Max,
    Fun::Clamp,
    Fun::Step,
    Fun::Mix,
    Fun::Dot2,
    Fun::Length3,
    Fun::Distance2,
    Fun::NormalizeX,
    Fun::CrossY,
    Fun::Atan2,
    Fun::Fma,
    Fun::Pow,
];

/// splitmix64: small, seedable, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<X: Copy>(&mut self, from: &[X]) -> X {
        from[self.below(from.len())]
    }
}

/// Edge values of each type, as bits (finite floats only: a literal may not be NaN or ±inf).
pub(crate) fn edge(rng_bits: u64, t: T) -> u32 {
    let k = (rng_bits % 16) as usize;
    let random = (rng_bits >> 8) as u32;
    match t {
        T::U => [
            0,
            1,
            2,
            3,
            7,
            31,
            32,
            33,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_fffe,
            u32::MAX,
            255,
            65536,
            random,
            random % 1000,
        ][k],
        T::I => [
            0,
            1,
            u32::MAX,
            2,
            31,
            32,
            0x8000_0000,
            0x7fff_ffff,
            0xffff_fffe,
            100,
            (-7i32) as u32,
            random,
            random % 50,
            5,
            9,
            64,
        ][k],
        T::F => {
            let finite = f32::from_bits(random);
            let v = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                2.0,
                3.0,
                1e-40,
                -3e-39,
                f32::MAX,
                f32::MIN_POSITIVE,
                1e10,
                0.1,
                -2.5,
                4.0,
                0.0,
            ][k];
            if k == 15 && finite.is_finite() { finite.to_bits() } else { f32::to_bits(v) }
        }
        T::B => random & 1,
    }
}

struct Gen {
    rng: Rng,
    /// Whether values may be subnormal (half the seeds): a device that flushes them declines such
    /// tiles, so the other half keep that device computing.
    subnormals: bool,
    vars: Vec<T>,
    /// Loops around the statement being made.
    loops: usize,
    /// Whether the helper's body is being made (its variables differ).
    helper: bool,
}

impl Gen {
    fn vars_of(&self, t: T) -> Vec<usize> {
        let vars: &[T] = if self.helper { &HELPER_VARS } else { &self.vars };
        vars.iter().enumerate().filter(|(_, v)| **v == t).map(|(k, _)| k).collect()
    }

    fn lit(&mut self, t: T) -> E {
        let bits = self.rng.next();
        let value = edge(bits, t);
        E::Lit(t, if t == T::F && !self.subnormals { moderate(value) } else { value })
    }

    /// An index: usually near the item (in bounds), sometimes anything (often past the end).
    fn index(&mut self, depth: usize) -> E {
        match self.rng.below(4) {
            0 => E::Item,
            1 => E::Bin(Bin::Add, T::U, Box::new(E::Item), Box::new(self.lit(T::U))),
            2 => E::Bin(Bin::And, T::U, Box::new(self.expr(T::U, depth)), Box::new(E::Lit(T::U, 0xff))),
            _ => self.expr(T::U, depth),
        }
    }

    /// A value that is not a constant expression.
    fn leaf(&mut self, t: T) -> E {
        let vars = self.vars_of(t);
        if !vars.is_empty() && self.rng.chance(55) {
            return E::Var(self.rng.pick(&vars));
        }
        if self.helper {
            // The helper reads its own variables and the inputs only.
            return match t {
                T::B => E::Cmp(Cmp::Lt, T::F, Box::new(E::Var(1)), Box::new(E::Var(2))),
                T::I => E::W(Box::new(E::Var(0))),
                T::F => E::B(Box::new(E::Var(0))),
                T::U => E::A(Box::new(E::Var(0))),
            };
        }
        match t {
            T::U => match self.rng.below(5) {
                0 => E::Item,
                1 => E::Param(0),
                2 => E::WLen,
                _ => E::A(Box::new(self.index(0))),
            },
            T::I => match self.rng.below(3) {
                0 => E::Param(1),
                _ => E::W(Box::new(self.index(0))),
            },
            T::F => match self.rng.below(3) {
                0 => E::Param(2),
                _ => E::B(Box::new(self.index(0))),
            },
            T::B => {
                let (l, r) = (self.leaf(T::U), self.lit(T::U));
                E::Cmp(Cmp::Lt, T::U, Box::new(l), Box::new(r))
            }
        }
    }

    /// The right operand of a binary operator: a literal now and then.
    fn operand(&mut self, t: T, depth: usize) -> E {
        if self.rng.chance(30) { self.lit(t) } else { self.expr(t, depth) }
    }

    fn expr(&mut self, t: T, depth: usize) -> E {
        if depth == 0 || self.rng.chance(20) {
            return self.leaf(t);
        }
        let d = depth - 1;
        match t {
            T::U | T::I => self.integer(t, d),
            T::F => self.float(d),
            T::B => self.boolean(d),
        }
    }

    /// An integer expression of type `t` whose operands are of depth `d` at most.
    fn integer(&mut self, t: T, d: usize) -> E {
        let b = |e: E| Box::new(e);
        match self.rng.below(12) {
            0..=3 => {
                let op = self.rng.pick(&[Bin::Add, Bin::Sub, Bin::Mul, Bin::And, Bin::Or, Bin::Xor]);
                E::Bin(op, t, b(self.expr(t, d)), b(self.operand(t, d)))
            }
            4 => {
                // Divisors are never constant: WGSL refuses a constant zero.
                let op = self.rng.pick(&[Bin::Div, Bin::Rem]);
                E::Bin(op, t, b(self.expr(t, d)), b(self.expr(t, d)))
            }
            5 => {
                let op = self.rng.pick(&[Bin::Shl, Bin::Shr]);
                E::Bin(op, t, b(self.expr(t, d)), b(self.expr(T::U, d)))
            }
            6 => E::Select(t, b(self.expr(t, d)), b(self.expr(t, d)), b(self.expr(T::B, d))),
            7 => {
                let from = self.rng.pick(&[T::U, T::I, T::F, T::B]);
                E::Conv(t, from, b(self.expr(from, d)))
            }
            8 => {
                let from = self.rng.pick(&[T::U, T::I, T::F]);
                E::Bitcast(t, from, b(self.expr(from, d)))
            }
            9 if t == T::I => E::Neg(t, b(self.expr(t, d))),
            9 => E::Not(t, b(self.expr(t, d))),
            10 => {
                let f = self.rng.pick(&[Fun::Abs, Fun::Min, Fun::Max, Fun::Clamp, Fun::Sign]);
                let f = if f == Fun::Sign && t == T::U { Fun::Abs } else { f };
                let n = match f {
                    Fun::Min | Fun::Max => 2,
                    Fun::Clamp => 3,
                    _ => 1,
                };
                E::Call(f, t, (0..n).map(|_| self.expr(t, d)).collect())
            }
            _ => {
                let f = self.rng.pick(&[
                    Fun::CountOneBits,
                    Fun::CountLeadingZeros,
                    Fun::CountTrailingZeros,
                    Fun::ReverseBits,
                    Fun::FirstLeadingBit,
                    Fun::FirstTrailingBit,
                    Fun::ExtractBits,
                    Fun::InsertBits,
                ]);
                let args = match f {
                    Fun::ExtractBits => vec![self.expr(t, d), self.expr(T::U, d), self.expr(T::U, d)],
                    Fun::InsertBits => {
                        vec![self.expr(t, d), self.expr(t, d), self.expr(T::U, d), self.expr(T::U, d)]
                    }
                    _ => vec![self.expr(t, d)],
                };
                E::Call(f, t, args)
            }
        }
    }

    /// A float expression whose operands are of depth `d` at most.
    fn float(&mut self, d: usize) -> E {
        let (t, b) = (T::F, |e: E| Box::new(e));
        match self.rng.below(12) {
            0..=3 => {
                let op = self.rng.pick(&[Bin::Add, Bin::Sub, Bin::Mul, Bin::Div, Bin::Rem]);
                E::Bin(op, t, b(self.expr(t, d)), b(self.operand(t, d)))
            }
            4 => E::Neg(t, b(self.expr(t, d))),
            5 => E::Select(t, b(self.expr(t, d)), b(self.expr(t, d)), b(self.expr(T::B, d))),
            6 => {
                let from = self.rng.pick(&[T::U, T::I, T::B]);
                E::Conv(t, from, b(self.expr(from, d)))
            }
            7 => {
                let from = self.rng.pick(&[T::U, T::I]);
                let x = self.expr(from, d);
                // Without subnormals: exponent bits set, so the value is never tiny (at least 1 in size).
                let x = if self.subnormals { x } else { E::Bin(Bin::Or, from, b(x), b(E::Lit(from, 0x3f80_0000))) };
                E::Bitcast(t, from, b(x))
            }
            8 if !self.helper => E::Helper(b(self.expr(T::U, d)), b(self.expr(T::F, d))),
            8 | 9 => {
                let f = self.rng.pick(ONE_FLOAT);
                match f {
                    Fun::Ldexp => E::Call(f, t, vec![self.expr(t, d), self.expr(T::I, d)]),
                    _ => E::Call(f, t, vec![self.expr(t, d)]),
                }
            }
            _ => {
                let f = self.rng.pick(MANY_FLOATS);
                let n = match f {
                    Fun::Min | Fun::Max | Fun::Step | Fun::Atan2 | Fun::Pow => 2,
                    Fun::Clamp | Fun::Mix | Fun::Length3 | Fun::NormalizeX | Fun::Fma => 3,
                    Fun::Dot2 | Fun::Distance2 => 4,
                    _ => 6,
                };
                E::Call(f, t, (0..n).map(|_| self.expr(t, d)).collect())
            }
        }
    }

    /// A boolean expression whose operands are of depth `d` at most.
    fn boolean(&mut self, d: usize) -> E {
        let (t, b) = (T::B, |e: E| Box::new(e));
        match self.rng.below(5) {
            0 | 1 => {
                let over = self.rng.pick(&[T::U, T::I, T::F, T::F, T::B]);
                let ops: &[Cmp] = if over == T::B {
                    &[Cmp::Eq, Cmp::Ne]
                } else {
                    &[Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge]
                };
                let c = self.rng.pick(ops);
                E::Cmp(c, over, b(self.expr(over, d)), b(self.operand(over, d)))
            }
            2 => E::Not(t, b(self.expr(t, d))),
            3 => {
                let op = self.rng.pick(&[Bin::LogicalAnd, Bin::LogicalOr]);
                E::Bin(op, t, b(self.expr(t, d)), b(self.expr(t, d)))
            }
            _ => {
                let from = self.rng.pick(&[T::U, T::I, T::F]);
                E::Conv(t, from, b(self.expr(from, d)))
            }
        }
    }

    fn block(&mut self, depth: usize, n: usize) -> Vec<S> {
        (0..n).map(|_| self.statement(depth)).collect()
    }

    fn statement(&mut self, depth: usize) -> S {
        let roll = self.rng.below(20);
        match roll {
            0..=2 if depth > 0 => {
                let c = self.expr(T::B, 2);
                let (yes, no) = (self.block(depth - 1, 2), self.block(depth - 1, 1));
                S::If(c, yes, no)
            }
            3 | 4 if depth > 0 && self.loops < 2 => {
                let bound = E::Bin(Bin::And, T::U, Box::new(self.expr(T::U, 2)), Box::new(E::Lit(T::U, 7)));
                let level = self.loops;
                self.loops += 1;
                let body = self.block(depth - 1, 3);
                self.loops -= 1;
                S::For(level, bound, body)
            }
            5 if depth > 0 => {
                let sel = E::Bin(Bin::And, T::U, Box::new(self.expr(T::U, 2)), Box::new(E::Lit(T::U, 3)));
                let cases = vec![(vec![0], self.block(depth - 1, 2)), (vec![1, 2], self.block(depth - 1, 1))];
                S::Switch(sel, cases, self.block(depth - 1, 1))
            }
            6 if self.loops > 0 => {
                let c = self.expr(T::B, 1);
                let exit = if self.rng.chance(50) { S::Break } else { S::Continue };
                S::If(c, vec![exit], Vec::new())
            }
            7 => {
                let (at, v) = (self.expr(T::U, 2), self.expr(T::U, 2));
                S::StorePastEnd(at, v)
            }
            8 if self.rng.chance(20) => {
                let c = self.expr(T::B, 2);
                S::If(c, vec![S::Return], Vec::new())
            }
            _ => {
                let var = self.rng.below(self.vars.len());
                let t = self.vars[var];
                S::Assign(var, self.expr(t, 3))
            }
        }
    }
}

/// Float bits of moderate size: a finite nonzero value under 1e-10 or over 1e10 in size becomes
/// 1.5 of its sign (zeros, infinities and NaNs stay). Kernels of such values seldom reach a
/// subnormal, so a device that flushes them keeps computing.
pub fn moderate(bits: u32) -> u32 {
    let v = f32::from_bits(bits);
    let size = v.abs();
    if v.is_finite() && v != 0.0 && !(1e-10..=1e10).contains(&size) {
        (bits & 0x8000_0000) | 1.5f32.to_bits()
    } else {
        bits
    }
}

/// Whether seed `seed`'s kernel and inputs may hold subnormal floats.
pub fn with_subnormals(seed: u64) -> bool {
    seed.is_multiple_of(2)
}

/// The kernel of seed `seed`.
pub fn generate(seed: u64) -> Kernel {
    let vars = vec![T::U, T::U, T::I, T::I, T::F, T::F, T::F, T::B];
    let mut g = Gen { rng: Rng(seed), subnormals: with_subnormals(seed), vars, loops: 0, helper: true };
    let helper_if = g.expr(T::B, 2);
    let helper_t = g.expr(T::F, 3);
    let helper_ret = g.expr(T::F, 3);
    g.helper = false;
    let body = g.block(3, 6);
    let out_u = g.expr(T::U, 3);
    let out_f = g.expr(T::F, 3);
    Kernel { vars: g.vars, body, out_u, out_f, helper_if, helper_t, helper_ret }
}
