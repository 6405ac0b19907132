//! Reads the PTX that xcd-forms writes into instructions the interpreter runs.
//!
//! It knows the subset of PTX the emitter uses and refuses anything else by name, so a new
//! instruction in the emitter fails loudly here instead of running wrongly.

use std::collections::HashMap;

use crate::SimError;

/// An instruction's operand `k`, or why it has none.
type Operand<'o> = dyn Fn(usize) -> Result<&'o str, SimError> + 'o;

/// A register slot, or an immediate value (its bits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Src {
    Reg(usize),
    Imm(u64),
}

/// A special register.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Special {
    Tid,
    Ntid,
    Ctaid,
}

/// The type an instruction works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    U32,
    S32,
    F32,
    B32,
    B64,
    S64,
    U64,
    Pred,
}

impl Ty {
    /// Its width in bytes as a parameter (a predicate is never one).
    pub(crate) fn bytes(self) -> usize {
        match self {
            Ty::B64 | Ty::S64 | Ty::U64 => 8,
            _ => 4,
        }
    }
}

/// A comparison of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unordered not-equal: true when either side is NaN.
    Neu,
}

/// A rounding mode of `cvt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    /// Nearest even.
    Rn,
    /// Toward zero (integer result).
    Rzi,
    /// Down (integer result).
    Rmi,
    /// Up (integer result).
    Rpi,
    /// Nearest even (integer result).
    Rni,
    /// No rounding (same-width moves).
    None,
}

/// Where a load or store goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Global,
    Local,
}

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    LdParam {
        ty: Ty,
        d: usize,
        param: usize,
    },
    Mov {
        d: usize,
        a: Src,
    },
    MovSpecial {
        d: usize,
        s: Special,
    },
    MovDepot {
        d: usize,
    },
    Cvta {
        d: usize,
        a: Src,
    },
    Bin {
        op: &'static str,
        ty: Ty,
        d: usize,
        a: Src,
        b: Src,
    },
    Mad {
        d: usize,
        a: Src,
        b: Src,
        c: Src,
    },
    MulWide {
        d: usize,
        a: Src,
        b: Src,
    },
    Un {
        op: &'static str,
        ty: Ty,
        d: usize,
        a: Src,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        d: usize,
        a: Src,
        b: Src,
    },
    Selp {
        d: usize,
        a: Src,
        b: Src,
        c: Src,
    },
    Cvt {
        round: Round,
        to: Ty,
        from: Ty,
        d: usize,
        a: Src,
    },
    Bfe {
        signed: bool,
        d: usize,
        a: Src,
        pos: Src,
        len: Src,
    },
    Bfi {
        d: usize,
        a: Src,
        b: Src,
        pos: Src,
        len: Src,
    },
    Ld {
        space: Space,
        ty: Ty,
        d: usize,
        addr: usize,
        off: u64,
    },
    St {
        space: Space,
        ty: Ty,
        addr: usize,
        off: u64,
        a: Src,
    },
    Bra {
        to: usize,
    },
    Ret,
    /// `trap`: the kernel stops with an error, and the context with it.
    Trap,
}

/// An instruction with its guard (`@%p` or `@!%p`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Instr {
    pub(crate) guard: Option<(usize, bool)>,
    pub(crate) op: Op,
}

/// A parsed kernel.
#[derive(Debug, Clone)]
pub struct Program {
    /// The entry's name.
    pub entry: String,
    /// Its parameters' types, in order.
    pub(crate) params: Vec<Ty>,
    pub(crate) code: Vec<Instr>,
    /// Registers in all.
    pub(crate) regs: usize,
    /// Bytes of per-thread local memory.
    pub(crate) depot: usize,
}

fn bad(line: usize, what: impl Into<String>) -> SimError {
    SimError::Parse { line, what: what.into() }
}

fn ty(name: &str) -> Option<Ty> {
    Some(match name {
        "u32" => Ty::U32,
        "s32" => Ty::S32,
        "f32" => Ty::F32,
        "b32" => Ty::B32,
        "b64" => Ty::B64,
        "s64" => Ty::S64,
        "u64" => Ty::U64,
        "pred" => Ty::Pred,
        _ => return None,
    })
}

struct Parser {
    regs: HashMap<String, usize>,
    params: HashMap<String, usize>,
    labels: HashMap<String, usize>,
    line: usize,
}

impl Parser {
    fn reg(&mut self, name: &str) -> usize {
        let next = self.regs.len();
        *self.regs.entry(name.to_owned()).or_insert(next)
    }

    fn src(&mut self, text: &str) -> Result<Src, SimError> {
        let text = text.trim();
        if text.starts_with('%') {
            return Ok(Src::Reg(self.reg(text)));
        }
        if let Some(hex) = text.strip_prefix("0f") {
            return u32::from_str_radix(hex, 16).map(|v| Src::Imm(u64::from(v))).map_err(|_| bad(self.line, text));
        }
        if let Some(hex) = text.strip_prefix("0x") {
            return u64::from_str_radix(hex, 16).map(Src::Imm).map_err(|_| bad(self.line, text));
        }
        if let Ok(v) = text.parse::<i64>() {
            return Ok(Src::Imm(v as u64));
        }
        Err(bad(self.line, format!("an operand {text:?}")))
    }

    fn dst(&mut self, text: &str) -> Result<usize, SimError> {
        match self.src(text)? {
            Src::Reg(r) => Ok(r),
            Src::Imm(_) => Err(bad(self.line, format!("an immediate destination {text}"))),
        }
    }

    /// `[%rd4+12]` → (register, offset).
    fn address(&mut self, text: &str) -> Result<(usize, u64), SimError> {
        let inner =
            text.trim().strip_prefix('[').and_then(|t| t.strip_suffix(']')).ok_or_else(|| bad(self.line, text))?;
        let (reg, off) = match inner.split_once('+') {
            Some((r, o)) => (r, o.trim().parse::<u64>().map_err(|_| bad(self.line, text))?),
            None => (inner, 0),
        };
        Ok((self.dst(reg)?, off))
    }

    /// An instruction's guard predicate (`@p` or `@!p`), if any, and the rest of its text.
    #[allow(clippy::type_complexity)]
    fn guard<'t>(&mut self, text: &'t str) -> Result<(Option<(usize, bool)>, &'t str), SimError> {
        Ok(match text.strip_prefix('@') {
            Some(rest) => {
                let (g, rest) = rest.split_once(' ').ok_or_else(|| bad(self.line, text))?;
                let (neg, g) = match g.strip_prefix('!') {
                    Some(g) => (true, g),
                    None => (false, g),
                };
                (Some((self.reg(g), neg)), rest.trim())
            }
            None => (None, text),
        })
    }

    /// A two-operand arithmetic instruction; float add, sub, mul and div must round to nearest
    /// (`.rn`), which ptxas never contracts into a fused multiply-add.
    fn binary(&mut self, parts: &[&str], n: &Operand<'_>, text: &str, opcode: &str) -> Result<Op, SimError> {
        let name: &'static str = match parts[0] {
            "add" => "add",
            "sub" => "sub",
            "mul" => "mul",
            "div" => "div",
            "rem" => "rem",
            "and" => "and",
            "or" => "or",
            "xor" => "xor",
            "shl" => "shl",
            "shr" => "shr",
            "min" => "min",
            _ => "max",
        };
        let t = parts.last().and_then(|t| ty(t)).ok_or_else(|| bad(self.line, text))?;
        if t == Ty::F32 && matches!(name, "add" | "sub" | "mul" | "div") && parts.get(1) != Some(&"rn") {
            return Err(bad(self.line, format!("{opcode} without .rn (ptxas could contract it)")));
        }
        Ok(Op::Bin { op: name, ty: t, d: self.dst(n(0)?)?, a: self.src(n(1)?)?, b: self.src(n(2)?)? })
    }

    /// A one-operand instruction; `sqrt` must round to nearest.
    fn unary(&mut self, parts: &[&str], n: &Operand<'_>, text: &str) -> Result<Op, SimError> {
        let name: &'static str = match parts[0] {
            "neg" => "neg",
            "abs" => "abs",
            "not" => "not",
            "sqrt" => "sqrt",
            "popc" => "popc",
            "clz" => "clz",
            "brev" => "brev",
            _ => "bfind",
        };
        if name == "sqrt" && parts.get(1) != Some(&"rn") {
            return Err(bad(self.line, "sqrt without .rn"));
        }
        Ok(Op::Un {
            op: name,
            ty: parts.last().and_then(|t| ty(t)).ok_or_else(|| bad(self.line, text))?,
            d: self.dst(n(0)?)?,
            a: self.src(n(1)?)?,
        })
    }

    /// A load or store in global or local memory.
    fn memory(&mut self, parts: &[&str], n: &Operand<'_>, text: &str, opcode: &str) -> Result<Op, SimError> {
        let space = match parts.get(1) {
            Some(&"global") => Space::Global,
            Some(&"local") => Space::Local,
            _ => return Err(bad(self.line, format!("the state space of {opcode}"))),
        };
        let t = parts.last().and_then(|t| ty(t)).ok_or_else(|| bad(self.line, text))?;
        Ok(if parts[0] == "ld" {
            let (addr, off) = self.address(n(1)?)?;
            Op::Ld { space, ty: t, d: self.dst(n(0)?)?, addr, off }
        } else {
            let (addr, off) = self.address(n(0)?)?;
            Op::St { space, ty: t, addr, off, a: self.src(n(1)?)? }
        })
    }

    /// A comparison setting a predicate.
    fn comparison(&mut self, parts: &[&str], n: &Operand<'_>, text: &str, opcode: &str) -> Result<Op, SimError> {
        let cmp = match parts.get(1) {
            Some(&"eq") => Cmp::Eq,
            Some(&"ne") => Cmp::Ne,
            Some(&"lt") => Cmp::Lt,
            Some(&"le") => Cmp::Le,
            Some(&"gt") => Cmp::Gt,
            Some(&"ge") => Cmp::Ge,
            Some(&"neu") => Cmp::Neu,
            _ => return Err(bad(self.line, format!("the comparison of {opcode}"))),
        };
        Ok(Op::Setp {
            cmp,
            ty: parts.last().and_then(|t| ty(t)).ok_or_else(|| bad(self.line, text))?,
            d: self.dst(n(0)?)?,
            a: self.src(n(1)?)?,
            b: self.src(n(2)?)?,
        })
    }

    /// A conversion, with its rounding and its two types, none flushing subnormals.
    fn conversion(&mut self, parts: &[&str], n: &Operand<'_>, text: &str, opcode: &str) -> Result<Op, SimError> {
        let (round, types) = match parts.get(1).copied() {
            Some("rn") => (Round::Rn, &parts[2..]),
            Some("rzi") => (Round::Rzi, &parts[2..]),
            Some("rmi") => (Round::Rmi, &parts[2..]),
            Some("rpi") => (Round::Rpi, &parts[2..]),
            Some("rni") => (Round::Rni, &parts[2..]),
            _ => (Round::None, &parts[1..]),
        };
        if types.len() != 2 || types.contains(&"ftz") {
            return Err(bad(self.line, format!("the conversion {opcode}")));
        }
        let (to, from) = (ty(types[0]), ty(types[1]));
        let (Some(to), Some(from)) = (to, from) else { return Err(bad(self.line, text)) };
        Ok(Op::Cvt { round, to, from, d: self.dst(n(0)?)?, a: self.src(n(1)?)? })
    }

    fn instruction(&mut self, text: &str, pending: &mut Vec<(usize, String)>, at: usize) -> Result<Instr, SimError> {
        let (guard, rest) = self.guard(text)?;
        let (opcode, operands) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let ops: Vec<&str> = if operands.trim().is_empty() { Vec::new() } else { split_operands(operands) };
        let parts: Vec<&str> = opcode.split('.').collect();
        let last_ty = |p: &[&str]| p.last().and_then(|t| ty(t));
        let line = self.line;
        let n = |k: usize| -> Result<&str, SimError> { ops.get(k).copied().ok_or_else(|| bad(line, text)) };
        let op = match parts[0] {
            "ld" if parts.get(1) == Some(&"param") => {
                let name = n(1)?.trim_matches(|c| c == '[' || c == ']');
                let param =
                    *self.params.get(name).ok_or_else(|| bad(self.line, format!("an unknown parameter {name}")))?;
                Op::LdParam { ty: last_ty(&parts).ok_or_else(|| bad(self.line, text))?, d: self.dst(n(0)?)?, param }
            }
            "ld" | "st" => self.memory(&parts, &n, text, opcode)?,
            "mov" => {
                let d = self.dst(n(0)?)?;
                match n(1)? {
                    "%tid.x" => Op::MovSpecial { d, s: Special::Tid },
                    "%ntid.x" => Op::MovSpecial { d, s: Special::Ntid },
                    "%ctaid.x" => Op::MovSpecial { d, s: Special::Ctaid },
                    "xc_depot" => Op::MovDepot { d },
                    other => Op::Mov { d, a: self.src(other)? },
                }
            }
            "cvta" => Op::Cvta { d: self.dst(n(0)?)?, a: self.src(n(1)?)? },
            "mul" if parts.get(1) == Some(&"wide") => {
                return Ok(Instr {
                    guard,
                    op: Op::MulWide { d: self.dst(n(0)?)?, a: self.src(n(1)?)?, b: self.src(n(2)?)? },
                });
            }
            "add" | "sub" | "mul" | "div" | "rem" | "and" | "or" | "xor" | "shl" | "shr" | "min" | "max" => {
                self.binary(&parts, &n, text, opcode)?
            }
            "mad" => Op::Mad { d: self.dst(n(0)?)?, a: self.src(n(1)?)?, b: self.src(n(2)?)?, c: self.src(n(3)?)? },
            "neg" | "abs" | "not" | "sqrt" | "popc" | "clz" | "brev" | "bfind" => self.unary(&parts, &n, text)?,
            "setp" => self.comparison(&parts, &n, text, opcode)?,
            "selp" => Op::Selp { d: self.dst(n(0)?)?, a: self.src(n(1)?)?, b: self.src(n(2)?)?, c: self.src(n(3)?)? },
            "cvt" => self.conversion(&parts, &n, text, opcode)?,
            "bfe" => Op::Bfe {
                signed: parts.get(1) == Some(&"s32"),
                d: self.dst(n(0)?)?,
                a: self.src(n(1)?)?,
                pos: self.src(n(2)?)?,
                len: self.src(n(3)?)?,
            },
            "bfi" => Op::Bfi {
                d: self.dst(n(0)?)?,
                a: self.src(n(1)?)?,
                b: self.src(n(2)?)?,
                pos: self.src(n(3)?)?,
                len: self.src(n(4)?)?,
            },
            "bra" => {
                pending.push((at, n(0)?.to_owned()));
                Op::Bra { to: 0 }
            }
            "ret" => Op::Ret,
            "trap" => Op::Trap,
            other => return Err(bad(self.line, format!("the instruction {other} (not one the emitter writes)"))),
        };
        if parts.contains(&"ftz") || parts.contains(&"approx") || parts.contains(&"full") || parts[0] == "fma" {
            return Err(bad(self.line, format!("{opcode}: not exact")));
        }
        Ok(Instr { guard, op })
    }
}

fn split_operands(text: &str) -> Vec<&str> {
    text.split(',').map(str::trim).collect()
}

/// Parses a kernel's PTX.
pub fn parse(text: &str) -> Result<Program, SimError> {
    let mut p = Parser { regs: HashMap::new(), params: HashMap::new(), labels: HashMap::new(), line: 0 };
    let mut entry = None;
    let mut params = Vec::new();
    let mut code = Vec::new();
    let mut pending = Vec::new();
    let mut depot = 0;
    let mut in_params = false;
    for (index, raw) in text.lines().enumerate() {
        p.line = index + 1;
        let line = raw.split("//").next().unwrap_or("").trim();
        if line.is_empty()
            || line.starts_with(".version")
            || line.starts_with(".target")
            || line.starts_with(".address_size")
        {
            continue;
        }
        if let Some(rest) = line.strip_prefix(".visible .entry ") {
            // `name(` opens a parameter list on the lines after; `name()` has none.
            in_params = !rest.ends_with("()");
            entry = Some(rest.trim_end_matches("()").trim_end_matches('(').to_owned());
            continue;
        }
        if in_params {
            if line == ")" {
                in_params = false;
                continue;
            }
            let decl = line.trim_end_matches(',');
            let fields: Vec<&str> = decl.split_whitespace().collect();
            let [".param", t, name] = fields.as_slice() else { return Err(bad(p.line, decl)) };
            let t = ty(t.trim_start_matches('.')).ok_or_else(|| bad(p.line, decl))?;
            p.params.insert((*name).to_owned(), params.len());
            params.push(t);
            continue;
        }
        if line == "{" || line == "}" || line.starts_with(".reg") {
            continue;
        }
        if let Some(rest) = line.strip_prefix(".local .align 16 .b8 xc_depot[") {
            depot = rest.trim_end_matches("];").parse().map_err(|_| bad(p.line, line))?;
            continue;
        }
        if let Some(label) = line.strip_suffix(':') {
            p.labels.insert(label.to_owned(), code.len());
            continue;
        }
        let text = line.strip_suffix(';').ok_or_else(|| bad(p.line, "a line without ;"))?;
        let at = code.len();
        code.push(p.instruction(text, &mut pending, at)?);
    }
    for (at, label) in pending {
        let to = *p.labels.get(&label).ok_or_else(|| bad(0, format!("a branch to an unknown label {label}")))?;
        code[at].op = Op::Bra { to };
    }
    let entry = entry.ok_or_else(|| bad(0, "no .entry"))?;
    Ok(Program { entry, params, code, regs: p.regs.len(), depot })
}
