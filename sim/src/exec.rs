//! Runs a parsed kernel, thread by thread, as an NVIDIA GPU would compute each instruction.
//!
//! Float arithmetic is IEEE binary32 with round-to-nearest-even and subnormals kept (what PTX
//! without `.ftz` promises), and every NaN an instruction makes is NVIDIA's canonical NaN
//! `0x7fffffff`, so a form that lets a NaN's bits reach memory differs here as it would on a
//! GPU. Integer division by zero, reading a register never written, a branch to nowhere and a
//! memory access outside every buffer are errors: the emitter must never let them happen.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::SimError;
use crate::parse::{Cmp, Instr, Op, Program, Round, Space, Special, Src, Ty};

/// Where global buffer `k`'s bytes start in the address space the kernel sees.
pub(crate) fn buffer_base(k: usize) -> u64 {
    (k as u64 + 1) << 40
}
const LOCAL_BASE: u64 = 0xFF << 40;
const OFFSET_MASK: u64 = (1 << 40) - 1;

/// NVIDIA's canonical NaN.
const CANONICAL_NAN: u32 = 0x7fff_ffff;

fn f(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

fn canon(v: f32) -> u64 {
    u64::from(if v.is_nan() { CANONICAL_NAN } else { v.to_bits() })
}

/// Counts one instruction against a thread's budget; the stop flag is read every 65536
/// instructions: cheap, and soon enough.
fn tick(budget: &mut u64, stop: &AtomicBool) -> Result<(), SimError> {
    if *budget == 0 {
        return Err(SimError::TooLong);
    }
    *budget -= 1;
    if *budget & 0xFFFF == 0 && stop.load(Ordering::Relaxed) {
        return Err(SimError::Stopped);
    }
    Ok(())
}

struct Thread<'a> {
    program: &'a Program,
    regs: Vec<Option<u64>>,
    local: Vec<u8>,
    tid: u32,
    ntid: u32,
    ctaid: u32,
}

impl Thread<'_> {
    fn get(&self, s: Src, pc: usize) -> Result<u64, SimError> {
        match s {
            Src::Imm(v) => Ok(v),
            Src::Reg(r) => self.regs[r].ok_or(SimError::Unset { pc }),
        }
    }

    fn mem<'b>(
        &'b mut self,
        buffers: &'b mut [Vec<u8>],
        space: Space,
        addr: u64,
        pc: usize,
    ) -> Result<&'b mut [u8], SimError> {
        let offset = (addr & OFFSET_MASK) as usize;
        let bytes: &mut [u8] = match space {
            Space::Local if addr & !OFFSET_MASK == LOCAL_BASE => &mut self.local,
            Space::Global => {
                let k = ((addr >> 40) as usize).checked_sub(1).ok_or(SimError::OutOfBounds { pc, addr })?;
                buffers.get_mut(k).ok_or(SimError::OutOfBounds { pc, addr })?
            }
            _ => return Err(SimError::OutOfBounds { pc, addr }),
        };
        bytes.get_mut(offset..offset + 4).ok_or(SimError::OutOfBounds { pc, addr })
    }

    /// The value of a special register.
    fn special(&self, s: Special) -> u32 {
        match s {
            Special::Tid => self.tid,
            Special::Ntid => self.ntid,
            Special::Ctaid => self.ctaid,
        }
    }

    fn run(
        &mut self,
        args: &[u64],
        buffers: &mut [Vec<u8>],
        budget: &mut u64,
        stop: &AtomicBool,
    ) -> Result<(), SimError> {
        let code: &[Instr] = &self.program.code;
        let mut pc = 0;
        loop {
            let Some(instr) = code.get(pc) else { return Err(SimError::RanOff) };
            tick(budget, stop)?;
            if let Some((g, neg)) = instr.guard {
                let p = self.regs[g].ok_or(SimError::Unset { pc })? != 0;
                if p == neg {
                    pc += 1;
                    continue;
                }
            }
            let (d, v) = match instr.op {
                Op::Bra { to } => {
                    pc = to;
                    continue;
                }
                Op::Ret => return Ok(()),
                Op::Trap => return Err(SimError::Trap { pc }),
                Op::St { space, addr, off, a, .. } => {
                    let at = self.get(Src::Reg(addr), pc)?.wrapping_add(off);
                    let v = self.get(a, pc)? as u32;
                    self.mem(buffers, space, at, pc)?.copy_from_slice(&v.to_le_bytes());
                    pc += 1;
                    continue;
                }
                Op::Ld { space, d, addr, off, .. } => {
                    let at = self.get(Src::Reg(addr), pc)?.wrapping_add(off);
                    let bytes = self.mem(buffers, space, at, pc)?;
                    (d, u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])))
                }
                Op::LdParam { d, param, .. } => (d, *args.get(param).ok_or(SimError::Args)?),
                Op::Mov { d, a } | Op::Cvta { d, a } => (d, self.get(a, pc)?),
                Op::MovSpecial { d, s } => (d, u64::from(self.special(s))),
                Op::MovDepot { d } => (d, LOCAL_BASE),
                Op::Bin { op, ty, d, a, b } => (d, binary(op, ty, self.get(a, pc)?, self.get(b, pc)?, pc)?),
                Op::Mad { d, a, b, c } => {
                    let (a, b, c) = (self.get(a, pc)? as u32, self.get(b, pc)? as u32, self.get(c, pc)? as u32);
                    (d, u64::from(a.wrapping_mul(b).wrapping_add(c)))
                }
                Op::MulWide { d, a, b } => (d, (self.get(a, pc)? as u32 as u64) * (self.get(b, pc)? as u32 as u64)),
                Op::Un { op, ty, d, a } => (d, unary(op, ty, self.get(a, pc)?)),
                Op::Setp { cmp, ty, d, a, b } => (d, u64::from(compare(cmp, ty, self.get(a, pc)?, self.get(b, pc)?))),
                Op::Selp { d, a, b, c } => {
                    let c = self.get(c, pc)? != 0;
                    (d, if c { self.get(a, pc)? } else { self.get(b, pc)? })
                }
                Op::Cvt { round, to, from, d, a } => (d, convert(round, to, from, self.get(a, pc)?)?),
                Op::Bfe { signed, d, a, pos, len } => {
                    let (a, pos, len) = (self.get(a, pc)? as u32, self.get(pos, pc)? as u32, self.get(len, pc)? as u32);
                    (d, u64::from(bfe(signed, a, pos, len)))
                }
                Op::Bfi { d, a, b, pos, len } => {
                    let (a, b) = (self.get(a, pc)? as u32, self.get(b, pc)? as u32);
                    (d, u64::from(bfi(a, b, self.get(pos, pc)? as u32, self.get(len, pc)? as u32)))
                }
            };
            self.regs[d] = Some(v);
            pc += 1;
        }
    }
}

/// PTX's `bfi.b32`: `len` bits of `a` inserted into `b` at `pos` (each taken mod 256), bits past
/// 31 dropped.
fn bfi(a: u32, b: u32, pos: u32, len: u32) -> u32 {
    let (pos, len) = (pos & 0xff, len & 0xff);
    let mut out = b;
    for i in 0..len {
        if pos + i > 31 {
            break;
        }
        let bit = (a >> i) & 1;
        out = (out & !(1 << (pos + i))) | (bit << (pos + i));
    }
    out
}

fn binary(op: &str, ty: Ty, a: u64, b: u64, pc: usize) -> Result<u64, SimError> {
    let (x, y) = (a as u32, b as u32);
    Ok(match ty {
        Ty::F32 => {
            let (a, b) = (f(a), f(b));
            match op {
                "add" => canon(a + b),
                "sub" => canon(a - b),
                "mul" => canon(a * b),
                "div" => canon(a / b),
                // PTX: a NaN operand gives the other; two give NaN.
                "min" | "max" => {
                    if a.is_nan() && b.is_nan() {
                        u64::from(CANONICAL_NAN)
                    } else if a.is_nan() {
                        canon(b)
                    } else if b.is_nan() || (op == "min") == (a < b || (a == b && a.is_sign_negative())) {
                        canon(a)
                    } else {
                        canon(b)
                    }
                }
                _ => return Err(SimError::Unsupported(format!("{op}.f32"))),
            }
        }
        Ty::Pred => {
            let (a, b) = (a != 0, b != 0);
            u64::from(match op {
                "and" => a & b,
                "or" => a | b,
                "xor" => a ^ b,
                _ => return Err(SimError::Unsupported(format!("{op}.pred"))),
            })
        }
        Ty::S64 | Ty::U64 | Ty::B64 => match op {
            "add" => a.wrapping_add(b),
            _ => return Err(SimError::Unsupported(format!("{op} on 64 bits"))),
        },
        _ => {
            let signed = ty == Ty::S32;
            u64::from(match op {
                "add" => x.wrapping_add(y),
                "sub" => x.wrapping_sub(y),
                "mul" => x.wrapping_mul(y),
                "div" | "rem" if y == 0 => return Err(SimError::DivideByZero { pc }),
                "div" | "rem" if signed && x == 0x8000_0000 && y == u32::MAX => {
                    return Err(SimError::DivideByZero { pc });
                }
                "div" if signed => ((x as i32) / (y as i32)) as u32,
                "div" => x / y,
                "rem" if signed => ((x as i32) % (y as i32)) as u32,
                "rem" => x % y,
                "and" => x & y,
                "or" => x | y,
                "xor" => x ^ y,
                "shl" => x.checked_shl(y).unwrap_or(0),
                "shr" if signed => (x as i32).checked_shr(y).unwrap_or(if (x as i32) < 0 { -1 } else { 0 }) as u32,
                "shr" => x.checked_shr(y).unwrap_or(0),
                "min" if signed => (x as i32).min(y as i32) as u32,
                "max" if signed => (x as i32).max(y as i32) as u32,
                "min" => x.min(y),
                "max" => x.max(y),
                _ => return Err(SimError::Unsupported(format!("{op} on 32 bits"))),
            })
        }
    })
}

fn unary(op: &str, ty: Ty, a: u64) -> u64 {
    let x = a as u32;
    match (op, ty) {
        ("neg", Ty::F32) => canon(-f(a)),
        ("abs", Ty::F32) => canon(f(a).abs()),
        ("sqrt", _) => canon(f(a).sqrt()),
        ("neg", _) => u64::from((x as i32).wrapping_neg() as u32),
        ("abs", _) => u64::from((x as i32).wrapping_abs() as u32),
        ("not", Ty::Pred) => u64::from(a == 0),
        ("not", _) => u64::from(!x),
        ("popc", _) => u64::from(x.count_ones()),
        ("clz", _) => u64::from(x.leading_zeros()),
        ("brev", _) => u64::from(x.reverse_bits()),
        ("bfind", Ty::S32) => {
            let v = if (x as i32) < 0 { !x } else { x };
            u64::from(if v == 0 { u32::MAX } else { 31 - v.leading_zeros() })
        }
        ("bfind", _) => u64::from(if x == 0 { u32::MAX } else { 31 - x.leading_zeros() }),
        _ => 0,
    }
}

fn compare(cmp: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    match ty {
        Ty::F32 => {
            let (a, b) = (f(a), f(b));
            match cmp {
                Cmp::Eq => a == b,
                Cmp::Ne => a != b && !a.is_nan() && !b.is_nan(),
                Cmp::Neu => a != b,
                Cmp::Lt => a < b,
                Cmp::Le => a <= b,
                Cmp::Gt => a > b,
                Cmp::Ge => a >= b,
            }
        }
        Ty::S32 => ordered(cmp, (a as u32 as i32).cmp(&(b as u32 as i32))),
        _ => ordered(cmp, (a as u32).cmp(&(b as u32))),
    }
}

/// An integer comparison from the operands' order.
fn ordered(cmp: Cmp, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match cmp {
        Cmp::Eq => o == Equal,
        Cmp::Ne | Cmp::Neu => o != Equal,
        Cmp::Lt => o == Less,
        Cmp::Le => o != Greater,
        Cmp::Gt => o == Greater,
        Cmp::Ge => o != Less,
    }
}

fn convert(round: Round, to: Ty, from: Ty, a: u64) -> Result<u64, SimError> {
    Ok(match (to, from) {
        (Ty::F32, Ty::U32) => canon(a as u32 as f32),
        (Ty::F32, Ty::S32) => canon(a as u32 as i32 as f32),
        // Saturating, NaN to 0: what cvt.rzi does, and what Rust's `as` does.
        (Ty::S32, Ty::F32) if round == Round::Rzi => u64::from(f(a) as i32 as u32),
        (Ty::U32, Ty::F32) if round == Round::Rzi => u64::from(f(a) as u32),
        (Ty::F32, Ty::F32) => canon(match round {
            Round::Rmi => f(a).floor(),
            Round::Rpi => f(a).ceil(),
            Round::Rzi => f(a).trunc(),
            Round::Rni => f(a).round_ties_even(),
            _ => f(a),
        }),
        _ => return Err(SimError::Unsupported(format!("cvt {round:?} {to:?} {from:?}"))),
    })
}

fn bfe(signed: bool, a: u32, pos: u32, len: u32) -> u32 {
    let (pos, len) = (pos & 0xff, len & 0xff);
    let sbit = if !signed || len == 0 { 0 } else { (a >> (pos + len - 1).min(31)) & 1 };
    let mut d = 0u32;
    for i in 0..32 {
        let bit = if i < len && pos + i <= 31 { (a >> (pos + i)) & 1 } else { sbit };
        d |= bit << i;
    }
    d
}

/// Runs `grid` blocks of `block` threads; `args` are the parameters' raw values in order
/// (a pointer parameter holds [`buffer_base`] of its buffer). Each thread may run `budget`
/// instructions.
pub(crate) fn launch(
    program: &Program,
    grid: u32,
    block: u32,
    args: &[u64],
    buffers: &mut [Vec<u8>],
    budget: u64,
    stop: &AtomicBool,
) -> Result<(), SimError> {
    if args.len() != program.params.len() {
        return Err(SimError::Args);
    }
    for ctaid in 0..grid {
        for tid in 0..block {
            let mut thread = Thread {
                program,
                regs: vec![None; program.regs],
                local: vec![0xA5; program.depot],
                tid,
                ntid: block,
                ctaid,
            };
            let mut left = budget;
            thread.run(args, buffers, &mut left, stop)?;
        }
    }
    Ok(())
}
