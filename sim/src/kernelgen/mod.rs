//! Random kernels for differential testing: each is a small program over u32, i32, f32 and
//! bool (edge values, nested loops with breaks and continues, branches, switches, a helper
//! call, reads past the ends of arrays, writes past them), written out as WGSL ([`Kernel::wgsl`])
//! and evaluated here with xcd's exact semantics ([`eval`]), which is what every form must give.
//!
//! The generator keeps every program valid WGSL: no constant expression can overflow, divide by
//! zero or make a NaN (WGSL refuses those at creation), loops are bounded, and the only stores
//! are to the item's own slots or past the end of an array (so items never race).
//!
//! Layout: this file holds the AST and the WGSL writer; `random` makes kernels; `eval` runs them;
//! `shrink` makes a failing kernel small.

pub mod eval;
mod random;
mod shrink;

pub use random::{generate, moderate, with_subnormals};
pub use shrink::shrink;

/// A value's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum T {
    /// u32.
    U,
    /// i32.
    I,
    /// f32.
    F,
    /// bool.
    B,
}

impl T {
    fn wgsl(self) -> &'static str {
        match self {
            T::U => "u32",
            T::I => "i32",
            T::F => "f32",
            T::B => "bool",
        }
    }
}

/// Operators on two values of one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    LogicalAnd,
    LogicalOr,
}

/// Comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Built-in functions the exact subset keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Fun {
    Abs,
    Min,
    Max,
    Clamp,
    Floor,
    Ceil,
    Trunc,
    Round,
    Fract,
    Sqrt,
    /// The math library's, correctly rounded (forms/src/mathlib).
    Exp,
    /// The math library's, correctly rounded.
    Exp2,
    /// The math library's, correctly rounded.
    Log,
    /// The math library's, correctly rounded.
    Log2,
    /// The math library's, correctly rounded.
    Sin,
    /// The math library's, correctly rounded.
    Cos,
    /// The math library's, correctly rounded.
    Tan,
    /// The math library's, correctly rounded.
    Asin,
    /// The math library's, correctly rounded.
    Acos,
    /// The math library's, correctly rounded.
    Atan,
    /// The math library's, correctly rounded: `atan2(y, x)`.
    Atan2,
    /// The math library's, correctly rounded.
    Sinh,
    /// The math library's, correctly rounded.
    Cosh,
    /// The math library's, correctly rounded.
    Tanh,
    /// The math library's, correctly rounded.
    Asinh,
    /// The math library's, correctly rounded.
    Acosh,
    /// The math library's, correctly rounded.
    Atanh,
    /// The math library's, correctly rounded.
    InverseSqrt,
    /// The math library's, correctly rounded.
    Degrees,
    /// The math library's, correctly rounded.
    Radians,
    /// The math library's, correctly rounded: `ldexp(f32, i32)`.
    Ldexp,
    /// The math library's: `fma(a, b, c)`, rounded once.
    Fma,
    /// The math library's, correctly rounded: `pow(x, y)`.
    Pow,
    /// The math library's, exact: `x` rounded to binary16 and back.
    QuantizeToF16,
    Sign,
    Saturate,
    Step,
    Mix,
    CountOneBits,
    CountLeadingZeros,
    CountTrailingZeros,
    ReverseBits,
    FirstLeadingBit,
    FirstTrailingBit,
    ExtractBits,
    InsertBits,
    /// `dot(vec2(a, b), vec2(c, d))`.
    Dot2,
    /// `length(vec3(a, b, c))`.
    Length3,
    /// `distance(vec2(a, b), vec2(c, d))`.
    Distance2,
    /// `normalize(vec3(a, b, c)).x`.
    NormalizeX,
    /// `cross(vec3(a, b, c), vec3(d, e, f)).y`.
    CrossY,
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum E {
    /// A literal: its type and bits (bool: 0 or 1).
    Lit(T, u32),
    /// A local variable.
    Var(usize),
    /// Parameter 0 (u32), 1 (i32) or 2 (f32).
    Param(usize),
    /// The item's tile-local index.
    Item,
    /// `a[index]`: the per-item u32 input.
    A(Box<E>),
    /// `b[index]`: the per-item f32 input.
    B(Box<E>),
    /// `w[index]`: the whole i32 array.
    W(Box<E>),
    /// `arrayLength(&w)`.
    WLen,
    Neg(T, Box<E>),
    Not(T, Box<E>),
    Bin(Bin, T, Box<E>, Box<E>),
    Cmp(Cmp, T, Box<E>, Box<E>),
    /// `select(no, yes, c)`.
    Select(T, Box<E>, Box<E>, Box<E>),
    /// A value conversion `to(e)`.
    Conv(T, T, Box<E>),
    /// `bitcast<to>(e)`.
    Bitcast(T, T, Box<E>),
    /// A built-in on values of type T.
    Call(Fun, T, Vec<E>),
    /// `helper(u32, f32) -> f32`.
    Helper(Box<E>, Box<E>),
}

/// A statement.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum S {
    Assign(usize, E),
    If(E, Vec<S>, Vec<S>),
    /// `for (var jN = 0u; jN < bound; jN++)`, with `bound` already small; N is the depth.
    For(usize, E, Vec<S>),
    /// `switch (e) { case …: {…} default: {…} }`.
    Switch(E, Vec<(Vec<u32>, Vec<S>)>, Vec<S>),
    Break,
    Continue,
    /// `o[tile.count + (e & 0xffffu)] = v`: a write past the end, which must be dropped.
    StorePastEnd(E, E),
    /// Store the outputs and return.
    Return,
}

/// A generated kernel.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The type of each local variable (`v0`, `v1`, …).
    pub vars: Vec<T>,
    /// The statements after the variables are set from the inputs.
    pub body: Vec<S>,
    /// What `o[i]` (u32) and `g[i]` (f32) get at the end (or at a return).
    pub out_u: E,
    /// See `out_u`.
    pub out_f: E,
    /// The helper's body: `t` gets `helper_t` if `helper_if`, then it returns `helper_ret`
    /// (over `x: u32`, `y: f32`, `t: f32`, as variables 0, 1, 2).
    pub helper_if: E,
    /// See `helper_if`.
    pub helper_t: E,
    /// See `helper_if`.
    pub helper_ret: E,
}

/// Variables of the helper, by index.
pub const HELPER_VARS: [T; 3] = [T::U, T::F, T::F];

fn lit(t: T, bits: u32) -> String {
    match t {
        T::U => format!("{bits}u"),
        T::I if bits == 0x8000_0000 => "bitcast<i32>(0x80000000u)".into(),
        T::I => format!("{}i", bits as i32),
        T::F => format!("bitcast<f32>({bits:#x}u)"),
        T::B => (bits != 0).to_string(),
    }
}

fn write_e(e: &E, helper: bool, out: &mut String) {
    let var = |k: usize| if helper { ["x", "y", "t"][k.min(2)].to_owned() } else { format!("v{k}") };
    let mut w = |s: &str| out.push_str(s);
    match e {
        E::Lit(t, bits) => w(&lit(*t, *bits)),
        E::Var(k) => w(&var(*k)),
        E::Param(k) => w(["tile.p0", "tile.p1", "tile.p2"][*k]),
        E::Item => w("i"),
        E::A(x) | E::B(x) | E::W(x) => {
            w(match e {
                E::A(_) => "a[",
                E::B(_) => "b[",
                _ => "w[",
            });
            write_e(x, helper, out);
            out.push(']');
        }
        E::WLen => w("arrayLength(&w)"),
        E::Neg(_, x) => {
            w("(-(");
            write_e(x, helper, out);
            out.push_str("))");
        }
        E::Not(t, x) => {
            w(if *t == T::B { "(!(" } else { "(~(" });
            write_e(x, helper, out);
            out.push_str("))");
        }
        E::Bin(op, _, l, r) => infix(bin_op(*op), l, r, helper, out),
        E::Cmp(c, _, l, r) => infix(cmp_op(*c), l, r, helper, out),
        E::Select(_, no, yes, c) => call("select", &[no, yes, c], helper, out),
        E::Conv(to, _, x) => call(to.wgsl(), &[x], helper, out),
        E::Bitcast(to, _, x) => call(&format!("bitcast<{}>", to.wgsl()), &[x], helper, out),
        E::Helper(x, y) => call("helper", &[x, y], helper, out),
        E::Call(f, _, args) => write_call(*f, args, helper, out),
    }
}

/// `(l o r)`.
fn infix(o: &str, l: &E, r: &E, helper: bool, out: &mut String) {
    out.push('(');
    write_e(l, helper, out);
    out.push_str(&format!(" {o} "));
    write_e(r, helper, out);
    out.push(')');
}

/// A binary operator's WGSL.
fn bin_op(op: Bin) -> &'static str {
    match op {
        Bin::Add => "+",
        Bin::Sub => "-",
        Bin::Mul => "*",
        Bin::Div => "/",
        Bin::Rem => "%",
        Bin::And => "&",
        Bin::Or => "|",
        Bin::Xor => "^",
        Bin::Shl => "<<",
        Bin::Shr => ">>",
        Bin::LogicalAnd => "&&",
        Bin::LogicalOr => "||",
    }
}

/// A comparison's WGSL.
fn cmp_op(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "==",
        Cmp::Ne => "!=",
        Cmp::Lt => "<",
        Cmp::Le => "<=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
    }
}

/// A built-in's WGSL name, and how its arguments are wrapped: "" for none, else the vectors
/// they are gathered into (`v2v2`, `v3`, …) and the field of the result taken (`.x`).
fn wgsl_name(f: Fun) -> (&'static str, &'static str) {
    match f {
        Fun::Abs => ("abs", ""),
        Fun::Min => ("min", ""),
        Fun::Max => ("max", ""),
        Fun::Clamp => ("clamp", ""),
        Fun::Floor => ("floor", ""),
        Fun::Ceil => ("ceil", ""),
        Fun::Trunc => ("trunc", ""),
        Fun::Round => ("round", ""),
        Fun::Fract => ("fract", ""),
        Fun::Sqrt => ("sqrt", ""),
        Fun::Exp => ("exp", ""),
        Fun::Exp2 => ("exp2", ""),
        Fun::Log => ("log", ""),
        Fun::Log2 => ("log2", ""),
        Fun::Sin => ("sin", ""),
        Fun::Cos => ("cos", ""),
        Fun::Tan => ("tan", ""),
        Fun::Asin => ("asin", ""),
        Fun::Acos => ("acos", ""),
        Fun::Atan => ("atan", ""),
        Fun::Atan2 => ("atan2", ""),
        Fun::Sinh => ("sinh", ""),
        Fun::Cosh => ("cosh", ""),
        Fun::Tanh => ("tanh", ""),
        Fun::Asinh => ("asinh", ""),
        Fun::Acosh => ("acosh", ""),
        Fun::Atanh => ("atanh", ""),
        Fun::InverseSqrt => ("inverseSqrt", ""),
        Fun::Degrees => ("degrees", ""),
        Fun::Radians => ("radians", ""),
        Fun::Ldexp => ("ldexp", ""),
        Fun::Fma => ("fma", ""),
        Fun::Pow => ("pow", ""),
        Fun::QuantizeToF16 => ("quantizeToF16", ""),
        Fun::Sign => ("sign", ""),
        Fun::Saturate => ("saturate", ""),
        Fun::Step => ("step", ""),
        Fun::Mix => ("mix", ""),
        Fun::CountOneBits => ("countOneBits", ""),
        Fun::CountLeadingZeros => ("countLeadingZeros", ""),
        Fun::CountTrailingZeros => ("countTrailingZeros", ""),
        Fun::ReverseBits => ("reverseBits", ""),
        Fun::FirstLeadingBit => ("firstLeadingBit", ""),
        Fun::FirstTrailingBit => ("firstTrailingBit", ""),
        Fun::ExtractBits => ("extractBits", ""),
        Fun::InsertBits => ("insertBits", ""),
        Fun::Dot2 => ("dot", "v2v2"),
        Fun::Length3 => ("length", "v3"),
        Fun::Distance2 => ("distance", "v2v2"),
        Fun::NormalizeX => ("normalize", "v3.x"),
        Fun::CrossY => ("cross", "v3v3.y"),
    }
}

/// A call of a WGSL built-in; the geometric ones take their arguments as vectors.
fn write_call(f: Fun, args: &[E], helper: bool, out: &mut String) {
    let a: Vec<&E> = args.iter().collect();
    let (name, wrap) = wgsl_name(f);
    match wrap {
        "" => call(name, &a, helper, out),
        _ => {
            let n = if wrap.starts_with("v2") { 2 } else { 3 };
            out.push_str(name);
            out.push('(');
            for (g, chunk) in a.chunks(n).enumerate() {
                if g > 0 {
                    out.push_str(", ");
                }
                out.push_str(&format!("vec{n}<f32>("));
                for (k, x) in chunk.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    write_e(x, helper, out);
                }
                out.push(')');
            }
            out.push(')');
            if let Some(field) = wrap.split('.').nth(1) {
                out.push('.');
                out.push_str(field);
            }
        }
    }
}

fn call(name: &str, args: &[&E], helper: bool, out: &mut String) {
    out.push_str(name);
    out.push('(');
    for (k, a) in args.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        write_e(a, helper, out);
    }
    out.push(')');
}

fn write_s(s: &S, depth: usize, out: &mut String) {
    let pad = "    ".repeat(depth + 1);
    let e = |e: &E| {
        let mut t = String::new();
        write_e(e, false, &mut t);
        t
    };
    match s {
        S::Assign(k, x) => out.push_str(&format!("{pad}v{k} = {};\n", e(x))),
        S::If(c, yes, no) => {
            out.push_str(&format!("{pad}if ({}) {{\n", e(c)));
            yes.iter().for_each(|s| write_s(s, depth + 1, out));
            out.push_str(&format!("{pad}}} else {{\n"));
            no.iter().for_each(|s| write_s(s, depth + 1, out));
            out.push_str(&format!("{pad}}}\n"));
        }
        S::For(level, bound, body) => {
            out.push_str(&format!(
                "{pad}for (var j{level} = 0u; j{level} < {}; j{level} = j{level} + 1u) {{\n",
                e(bound)
            ));
            body.iter().for_each(|s| write_s(s, depth + 1, out));
            out.push_str(&format!("{pad}}}\n"));
        }
        S::Switch(sel, cases, default) => {
            out.push_str(&format!("{pad}switch ({}) {{\n", e(sel)));
            for (values, body) in cases {
                let list: Vec<String> = values.iter().map(|v| format!("{v}u")).collect();
                out.push_str(&format!("{pad}    case {}: {{\n", list.join(", ")));
                body.iter().for_each(|s| write_s(s, depth + 2, out));
                out.push_str(&format!("{pad}    }}\n"));
            }
            out.push_str(&format!("{pad}    default: {{\n"));
            default.iter().for_each(|s| write_s(s, depth + 2, out));
            out.push_str(&format!("{pad}    }}\n{pad}}}\n"));
        }
        S::Break => out.push_str(&format!("{pad}break;\n")),
        S::Continue => out.push_str(&format!("{pad}continue;\n")),
        S::StorePastEnd(at, v) => out.push_str(&format!("{pad}o[tile.count + ({} & 0xffffu)] = {};\n", e(at), e(v))),
        S::Return => out.push_str(&format!("{pad}o[i] = out_u(); g[i] = out_f();\n{pad}return;\n")),
    }
}

/// The block description every generated kernel follows: per-item inputs `a` (u32) and `b`
/// (f32), whole `w` (i32), outputs `o` (u32) and `g` (f32); parameters u32, i32, f32.
pub fn block_desc(wgsl: String) -> xcd_wire::BlockDesc {
    use xcd_wire::{Access, ArrayRole, ArraySpec, ParamKind, ParamSpec};
    let array = |name: &str, role| ArraySpec { name: name.into(), elem_size: 4, role };
    let param = |name: &str, kind| ParamSpec { name: name.into(), kind };
    xcd_wire::BlockDesc {
        name: "diff".into(),
        entry: "k".into(),
        arrays: vec![
            array("a", ArrayRole::PerItem(Access::In)),
            array("b", ArrayRole::PerItem(Access::In)),
            array("w", ArrayRole::Whole),
            array("o", ArrayRole::PerItem(Access::Out)),
            array("g", ArrayRole::PerItem(Access::Out)),
        ],
        params: vec![param("p0", ParamKind::U32), param("p1", ParamKind::I32), param("p2", ParamKind::F32)],
        forms: xcd_wire::Forms { wgsl: Some(wgsl), ..xcd_wire::Forms::default() },
    }
}

impl Kernel {
    /// The kernel as WGSL, with entry point `k`.
    pub fn wgsl(&self) -> String {
        let mut out = String::from(
            "struct Tile { start: u32, count: u32, first: u32, p0: u32, p1: i32, p2: f32 }\n\
             @group(0) @binding(0) var<uniform> tile: Tile;\n\
             @group(0) @binding(1) var<storage, read> a: array<u32>;\n\
             @group(0) @binding(2) var<storage, read> b: array<f32>;\n\
             @group(0) @binding(3) var<storage, read> w: array<i32>;\n\
             @group(0) @binding(4) var<storage, read_write> o: array<u32>;\n\
             @group(0) @binding(5) var<storage, read_write> g: array<f32>;\n\n",
        );
        let h = |e: &E| {
            let mut t = String::new();
            write_e(e, true, &mut t);
            t
        };
        out.push_str(&format!(
            "fn helper(x: u32, y: f32) -> f32 {{\n    var t = y;\n    if ({}) {{\n        t = {};\n    }}\n    return {};\n}}\n\n",
            h(&self.helper_if),
            h(&self.helper_t),
            h(&self.helper_ret)
        ));
        // The outputs are written where the kernel returns as well as at its end; a function of
        // the variables keeps each expression in one place.
        let var_params: Vec<String> =
            self.vars.iter().enumerate().map(|(k, t)| format!("v{k}: {}", t.wgsl())).collect();
        let var_args: Vec<String> = (0..self.vars.len()).map(|k| format!("v{k}")).collect();
        for (name, t, e) in [("u", T::U, &self.out_u), ("f", T::F, &self.out_f)] {
            let mut body = String::new();
            write_e(e, false, &mut body);
            out.push_str(&format!(
                "fn out_{name}_of(i: u32, {}) -> {} {{\n    return {body};\n}}\n\n",
                var_params.join(", "),
                t.wgsl()
            ));
        }
        out.push_str("@compute @workgroup_size(64)\nfn k(@builtin(global_invocation_id) gid: vec3<u32>) {\n");
        out.push_str("    let i = tile.first + gid.x;\n    if (i >= tile.count) {\n        return;\n    }\n");
        for (k, t) in self.vars.iter().enumerate() {
            let init = match t {
                T::U => "a[i]".to_owned(),
                T::F => "b[i]".to_owned(),
                T::I => format!("w[i % {}u]", 3 + k),
                T::B => "(a[i] & 1u) == 1u".to_owned(),
            };
            out.push_str(&format!("    var v{k}: {} = {init};\n", t.wgsl()));
        }
        let mut body = String::new();
        self.body.iter().for_each(|s| write_s(s, 0, &mut body));
        let args = var_args.join(", ");
        let body = body
            .replace("out_u()", &format!("out_u_of(i, {args})"))
            .replace("out_f()", &format!("out_f_of(i, {args})"));
        out.push_str(&body);
        out.push_str(&format!("    o[i] = out_u_of(i, {args});\n    g[i] = out_f_of(i, {args});\n}}\n"));
        out
    }
}

/// An edge value of type `t` (bits), drawn with `random`, for inputs; of moderate size
/// ([`moderate`]) when `subnormals` is false.
pub fn eval_edge(random: u64, t: T, subnormals: bool) -> u32 {
    let v = random::edge(random, t);
    if t == T::F && !subnormals { random::moderate(v) } else { v }
}

/// Inputs for `items` items of the kernel of `seed`, full of edge values: NaNs with payloads,
/// infinities, signed zeros, subnormals (where the seed's kernel takes them).
pub fn inputs(seed: u64, items: usize) -> eval::Inputs {
    let mut state = seed ^ 0x5DEE_CE66_D1CE_4E5B;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let sub = with_subnormals(seed);
    let special_f = [
        0x7fc0_0000,
        0xffc0_0000,
        0x7fc0_0001,
        0x7f80_0001,
        0x7f80_0000,
        0xff80_0000,
        0x8000_0000,
        0x0000_0001,
        0x807f_ffff,
        0x3f80_0000,
        0x4f80_0000,
        0xcf00_0000,
    ];
    let a = (0..items)
        .map(|_| {
            let r = next();
            eval_edge(r, T::U, sub)
        })
        .collect();
    let b = (0..items)
        .map(|_| {
            let r = next();
            let bits =
                if r % 4 == 0 { special_f[(r >> 8) as usize % special_f.len()] } else { eval_edge(r >> 3, T::F, sub) };
            if sub { bits } else { moderate(bits) }
        })
        .collect();
    let w_len = 1 + (next() % 20) as usize;
    let w = (0..w_len).map(|_| eval_edge(next(), T::I, sub) as i32).collect();
    let p = [eval_edge(next(), T::U, sub), eval_edge(next(), T::I, sub), eval_edge(next(), T::F, sub)];
    eval::Inputs { a, b, w, p }
}
