//! Operations on values: each naga operator, math function and conversion as PTX, component by
//! component, with WGSL's (and naga's SPIR-V writer's) results for every input: integer
//! division by zero gives the dividend, `MIN / -1` gives `MIN`, `%` follows, float `!=` is true
//! for NaN, and float-to-integer conversion clamps to the range naga clamps to.

use naga::{BinaryOperator as Bo, Literal, MathFunction as Mf, ScalarKind, UnaryOperator};

use super::{Kind, Reg, Writer};
use crate::FormsError;

/// The largest f32 values naga clamps to before converting to i32 and u32 (the values nearest
/// the integer range that f32 can hold).
const I32_RANGE: (u32, u32) = (0xCF00_0000, 0x4EFF_FFFF); // -2147483648.0, 2147483520.0
const U32_RANGE: (u32, u32) = (0x0000_0000, 0x4F7F_FFFF); // 0.0, 4294967040.0

fn unsupported(what: String) -> FormsError {
    FormsError::Internal(format!("the PTX writer met {what}"))
}

/// PTX's name for a scalar kind in arithmetic.
fn ty(kind: ScalarKind) -> &'static str {
    match kind {
        ScalarKind::Float => "f32",
        ScalarKind::Sint => "s32",
        _ => "u32",
    }
}

/// Pairs two operand lists, repeating a scalar against a vector.
fn pairs(l: &[Reg], r: &[Reg]) -> Vec<(Reg, Reg)> {
    let n = l.len().max(r.len());
    (0..n).map(|i| (l[if l.len() == 1 { 0 } else { i }], r[if r.len() == 1 { 0 } else { i }])).collect()
}

impl Writer<'_> {
    /// A literal in a fresh register.
    pub(crate) fn literal(&mut self, lit: Literal) -> Result<Reg, FormsError> {
        Ok(match lit {
            Literal::F32(v) => self.imm(Kind::F32, v.to_bits()),
            Literal::U32(v) => self.imm(Kind::B32, v),
            Literal::I32(v) => self.imm(Kind::B32, v as u32),
            Literal::Bool(v) => self.imm(Kind::Pred, u32::from(v)),
            other => return Err(unsupported(format!("the literal {other:?}"))),
        })
    }

    /// `l op r`, where `kind` is the operands' scalar kind.
    pub(crate) fn binary(&mut self, op: Bo, kind: ScalarKind, l: &[Reg], r: &[Reg]) -> Result<Vec<Reg>, FormsError> {
        let mut out = Vec::new();
        for (a, b) in pairs(l, r) {
            out.push(self.binary1(op, kind, a, b)?);
        }
        Ok(out)
    }

    fn binary1(&mut self, op: Bo, kind: ScalarKind, a: Reg, b: Reg) -> Result<Reg, FormsError> {
        let float = kind == ScalarKind::Float;
        if kind == ScalarKind::Bool {
            let d = self.reg(Kind::Pred);
            match op {
                Bo::And | Bo::LogicalAnd => self.op(format!("and.pred {d}, {a}, {b}")),
                Bo::InclusiveOr | Bo::LogicalOr => self.op(format!("or.pred {d}, {a}, {b}")),
                Bo::NotEqual | Bo::ExclusiveOr => self.op(format!("xor.pred {d}, {a}, {b}")),
                Bo::Equal => {
                    let t = self.reg(Kind::Pred);
                    self.op(format!("xor.pred {t}, {a}, {b}"));
                    self.op(format!("not.pred {d}, {t}"));
                }
                other => return Err(unsupported(format!("{other:?} on bool"))),
            }
            return Ok(d);
        }
        let t = ty(kind);
        let compare = match op {
            Bo::Equal => Some("eq"),
            Bo::NotEqual => Some(if float { "neu" } else { "ne" }),
            Bo::Less => Some("lt"),
            Bo::LessEqual => Some("le"),
            Bo::Greater => Some("gt"),
            Bo::GreaterEqual => Some("ge"),
            _ => None,
        };
        if let Some(cmp) = compare {
            let d = self.reg(Kind::Pred);
            self.op(format!("setp.{cmp}.{t} {d}, {a}, {b}"));
            return Ok(d);
        }
        let d = self.reg(if float { Kind::F32 } else { Kind::B32 });
        match (op, float) {
            (Bo::Add, true) => self.op(format!("add.rn.f32 {d}, {a}, {b}")),
            (Bo::Subtract, true) => self.op(format!("sub.rn.f32 {d}, {a}, {b}")),
            (Bo::Multiply, true) => self.op(format!("mul.rn.f32 {d}, {a}, {b}")),
            (Bo::Divide, true) => self.op(format!("div.rn.f32 {d}, {a}, {b}")),
            (Bo::Add, false) => self.op(format!("add.s32 {d}, {a}, {b}")),
            (Bo::Subtract, false) => self.op(format!("sub.s32 {d}, {a}, {b}")),
            (Bo::Multiply, false) => self.op(format!("mul.lo.s32 {d}, {a}, {b}")),
            (Bo::Divide | Bo::Modulo, false) => {
                let divisor = self.safe_divisor(kind, a, b);
                match (op, kind) {
                    (Bo::Divide, _) => self.op(format!("div.{t} {d}, {a}, {divisor}")),
                    (_, ScalarKind::Sint) => {
                        // a - b * (a / b), as naga writes it: OpSRem is poison for negative operands.
                        let (q, m) = (self.reg(Kind::B32), self.reg(Kind::B32));
                        self.op(format!("div.s32 {q}, {a}, {divisor}"));
                        self.op(format!("mul.lo.s32 {m}, {q}, {divisor}"));
                        self.op(format!("sub.s32 {d}, {a}, {m}"));
                    }
                    _ => self.op(format!("rem.u32 {d}, {a}, {divisor}")),
                }
            }
            (Bo::And, false) => self.op(format!("and.b32 {d}, {a}, {b}")),
            (Bo::InclusiveOr, false) => self.op(format!("or.b32 {d}, {a}, {b}")),
            (Bo::ExclusiveOr, false) => self.op(format!("xor.b32 {d}, {a}, {b}")),
            // The exactness pass has taken the amount modulo 32 already.
            (Bo::ShiftLeft, false) => self.op(format!("shl.b32 {d}, {a}, {b}")),
            (Bo::ShiftRight, false) => self.op(format!("shr.{t} {d}, {a}, {b}")),
            (other, _) => return Err(unsupported(format!("{other:?} on {kind:?}"))),
        }
        Ok(d)
    }

    /// WGSL's divisor: 1 where `b` is 0 (and, signed, where `a` is MIN and `b` is -1).
    fn safe_divisor(&mut self, kind: ScalarKind, a: Reg, b: Reg) -> Reg {
        let zero = self.reg(Kind::Pred);
        self.op(format!("setp.eq.u32 {zero}, {b}, 0"));
        let replace = if kind == ScalarKind::Sint {
            let (min, neg, both, either) =
                (self.reg(Kind::Pred), self.reg(Kind::Pred), self.reg(Kind::Pred), self.reg(Kind::Pred));
            self.op(format!("setp.eq.u32 {min}, {a}, 0x80000000"));
            self.op(format!("setp.eq.u32 {neg}, {b}, 0xFFFFFFFF"));
            self.op(format!("and.pred {both}, {min}, {neg}"));
            self.op(format!("or.pred {either}, {zero}, {both}"));
            either
        } else {
            zero
        };
        let (one, d) = (self.imm(Kind::B32, 1), self.reg(Kind::B32));
        self.op(format!("selp.b32 {d}, {one}, {b}, {replace}"));
        d
    }

    pub(crate) fn unary(&mut self, op: UnaryOperator, kind: ScalarKind, v: &[Reg]) -> Result<Vec<Reg>, FormsError> {
        let mut out = Vec::new();
        for &a in v {
            let d = self.reg(a.kind);
            match (op, kind) {
                (UnaryOperator::Negate, ScalarKind::Float) => self.op(format!("neg.f32 {d}, {a}")),
                (UnaryOperator::Negate, _) => self.op(format!("neg.s32 {d}, {a}")),
                (UnaryOperator::LogicalNot, _) | (UnaryOperator::BitwiseNot, ScalarKind::Bool) => {
                    self.op(format!("not.pred {d}, {a}"))
                }
                (UnaryOperator::BitwiseNot, _) => self.op(format!("not.b32 {d}, {a}")),
            }
            out.push(d);
        }
        Ok(out)
    }

    /// `condition ? accept : reject`, component-wise where the condition is a vector.
    pub(crate) fn select(&mut self, c: &[Reg], accept: &[Reg], reject: &[Reg]) -> Vec<Reg> {
        let mut out = Vec::new();
        for (i, (&a, &b)) in accept.iter().zip(reject).enumerate() {
            let p = c[if c.len() == 1 { 0 } else { i }];
            let d = self.reg(a.kind);
            match a.kind {
                Kind::Pred => {
                    let (t, n, e) = (self.reg(Kind::Pred), self.reg(Kind::Pred), self.reg(Kind::Pred));
                    self.op(format!("and.pred {t}, {p}, {a}"));
                    self.op(format!("not.pred {n}, {p}"));
                    self.op(format!("and.pred {e}, {n}, {b}"));
                    self.op(format!("or.pred {d}, {t}, {e}"));
                }
                Kind::F32 => self.op(format!("selp.f32 {d}, {a}, {b}, {p}")),
                _ => self.op(format!("selp.b32 {d}, {a}, {b}, {p}")),
            }
            out.push(d);
        }
        out
    }

    /// `all` (true) or `any` (false) of a bool vector.
    pub(crate) fn all_any(&mut self, all: bool, v: &[Reg]) -> Reg {
        let mut acc = v[0];
        for &b in &v[1..] {
            let d = self.reg(Kind::Pred);
            self.op(format!("{}.pred {d}, {acc}, {b}", if all { "and" } else { "or" }));
            acc = d;
        }
        self.copy(acc)
    }

    /// A math function of the exact subset (what the exactness pass has left).
    pub(crate) fn math(&mut self, fun: Mf, kind: ScalarKind, args: &[Vec<Reg>]) -> Result<Vec<Reg>, FormsError> {
        let t = ty(kind);
        let n = args[0].len();
        let arg = |k: usize, i: usize| -> Reg {
            let v = &args[k];
            v[if v.len() == 1 { 0 } else { i }]
        };
        let mut out = Vec::new();
        for i in 0..n {
            let a = arg(0, i);
            let d = self.reg(a.kind);
            match fun {
                Mf::Abs if kind == ScalarKind::Uint => self.mov(None, d, a),
                Mf::Abs => self.op(format!("abs.{t} {d}, {a}")),
                Mf::Min | Mf::Max if kind != ScalarKind::Float => {
                    let name = if fun == Mf::Min { "min" } else { "max" };
                    self.op(format!("{name}.{t} {d}, {a}, {}", arg(1, i)));
                }
                Mf::Floor => self.op(format!("cvt.rmi.f32.f32 {d}, {a}")),
                Mf::Ceil => self.op(format!("cvt.rpi.f32.f32 {d}, {a}")),
                Mf::Trunc => self.op(format!("cvt.rzi.f32.f32 {d}, {a}")),
                Mf::Round => self.op(format!("cvt.rni.f32.f32 {d}, {a}")),
                Mf::Sqrt => self.op(format!("sqrt.rn.f32 {d}, {a}")),
                Mf::CountOneBits => self.op(format!("popc.b32 {d}, {a}")),
                Mf::CountLeadingZeros => self.op(format!("clz.b32 {d}, {a}")),
                Mf::ReverseBits => self.op(format!("brev.b32 {d}, {a}")),
                Mf::CountTrailingZeros | Mf::FirstTrailingBit => {
                    let r = self.reg(Kind::B32);
                    self.op(format!("brev.b32 {r}, {a}"));
                    if fun == Mf::CountTrailingZeros {
                        self.op(format!("clz.b32 {d}, {r}"));
                    } else {
                        let (c, z, none) = (self.reg(Kind::B32), self.reg(Kind::Pred), self.imm(Kind::B32, u32::MAX));
                        self.op(format!("clz.b32 {c}, {r}"));
                        self.op(format!("setp.eq.u32 {z}, {a}, 0"));
                        self.op(format!("selp.b32 {d}, {none}, {c}, {z}"));
                    }
                }
                Mf::FirstLeadingBit => self.op(format!("bfind.{t} {d}, {a}")),
                // The exactness pass has clamped offset and count as WGSL says.
                Mf::ExtractBits => self.op(format!("bfe.{t} {d}, {a}, {}, {}", arg(1, i), arg(2, i))),
                Mf::InsertBits => self.op(format!("bfi.b32 {d}, {}, {a}, {}, {}", arg(1, i), arg(2, i), arg(3, i))),
                other => return Err(unsupported(format!("{other:?} on {kind:?}"))),
            }
            out.push(d);
        }
        Ok(out)
    }

    /// `As { kind, convert }` of a value whose scalar kind is `from`.
    pub(crate) fn convert(
        &mut self,
        from: ScalarKind,
        to: ScalarKind,
        bitcast: bool,
        v: &[Reg],
    ) -> Result<Vec<Reg>, FormsError> {
        use ScalarKind as S;
        let mut out = Vec::new();
        for &a in v {
            let d = self.reg(super::kind_of(to));
            match (from, to) {
                (S::Bool, S::Bool) | (S::Float, S::Float) | (S::Sint | S::Uint, S::Sint | S::Uint) => {
                    self.mov(None, d, a)
                }
                (S::Float, S::Sint | S::Uint) if bitcast => self.op(format!("mov.b32 {d}, {a}")),
                (S::Sint | S::Uint, S::Float) if bitcast => self.op(format!("mov.b32 {d}, {a}")),
                (S::Float, S::Sint | S::Uint) => {
                    let (lo, hi) = if to == S::Sint { I32_RANGE } else { U32_RANGE };
                    let (lo, hi) = (self.imm(Kind::F32, lo), self.imm(Kind::F32, hi));
                    let (m, c) = (self.reg(Kind::F32), self.reg(Kind::F32));
                    self.op(format!("max.f32 {m}, {a}, {lo}"));
                    self.op(format!("min.f32 {c}, {m}, {hi}"));
                    self.op(format!("cvt.rzi.{}.f32 {d}, {c}", ty(to)));
                }
                (S::Sint | S::Uint, S::Float) => self.op(format!("cvt.rn.f32.{} {d}, {a}", ty(from))),
                (S::Sint | S::Uint, S::Bool) => self.op(format!("setp.ne.u32 {d}, {a}, 0")),
                (S::Float, S::Bool) => self.op(format!("setp.neu.f32 {d}, {a}, 0f00000000")),
                (S::Bool, S::Sint | S::Uint) => {
                    let (one, zero) = (self.imm(Kind::B32, 1), self.zero(Kind::B32));
                    self.op(format!("selp.b32 {d}, {one}, {zero}, {a}"));
                }
                (S::Bool, S::Float) => {
                    let (one, zero) = (self.imm(Kind::F32, 1.0f32.to_bits()), self.zero(Kind::F32));
                    self.op(format!("selp.f32 {d}, {one}, {zero}, {a}"));
                }
                (from, to) => return Err(unsupported(format!("a conversion from {from:?} to {to:?}"))),
            }
            out.push(d);
        }
        Ok(out)
    }
}
