//! WGSL's math functions, correctly rounded, as WGSL of our own: the library the exactness
//! pass links into a kernel in place of the device's own `exp` and friends.
//!
//! A correctly rounded result is unique, so every form that computes it gives the same bits
//! whatever device runs it (DESIGN.md section 4). The functions are written in WGSL from
//! operations every form already makes exact (IEEE `+ - * /`, integer and bit operations,
//! bitcasts, selects), in double-f32 where precision needs it (`df.wgsl`), so SPIR-V, MSL and
//! PTX get them with no code of their own. The CPU form gets them too, and calls first the f64
//! fast path a function has in `xcd-cpumath` (named here, [`Linked::natives`]), which leaves
//! to the WGSL the arguments it cannot round. Each is proven on every argument it can take,
//! in both codes, by `scripts/math-proof` (docs/kernels.md, "Math functions").
//!
//! This module owns the library's source, which builtins it implements and with what, and
//! copying its functions into a kernel's module ([`link`]); it must not rewrite the kernel's
//! own expressions (the exactness pass turns each call of a builtin into a call of what
//! [`link`] returns).

use std::collections::HashMap;
use std::sync::OnceLock;

use naga::valid::ModuleInfo;
use naga::{Block, Expression, Function, Handle, MathFunction, Module, Span, Statement, Type, TypeInner};

use crate::FormsError;

/// The library's WGSL: one file per function, and the double-f32 helpers they share. It keeps
/// to the exact subset itself (forms/tests/subset.rs).
pub const SOURCE: &str = concat!(
    include_str!("df.wgsl"),
    "\n",
    include_str!("wide.wgsl"),
    "\n",
    include_str!("exp.wgsl"),
    "\n",
    include_str!("exp2.wgsl"),
    "\n",
    include_str!("log.wgsl"),
    "\n",
    include_str!("log2.wgsl"),
    "\n",
    include_str!("pow.wgsl"),
    "\n",
    include_str!("ln128.wgsl"),
    "\n",
    include_str!("sincos.wgsl"),
    "\n",
    include_str!("tan.wgsl"),
    "\n",
    include_str!("sinh.wgsl"),
    "\n",
    include_str!("tanh.wgsl"),
    "\n",
    include_str!("asinh.wgsl"),
    "\n",
    include_str!("atan.wgsl"),
    "\n",
    include_str!("asin.wgsl"),
    "\n",
    include_str!("rsqrt.wgsl"),
    "\n",
    include_str!("angle.wgsl"),
    "\n",
    include_str!("exact.wgsl"),
    "\n",
    include_str!("fma.wgsl"),
    "\n",
    include_str!("packing.wgsl"),
);

/// A builtin the library implements: the library's WGSL function for it (on scalars: one f32,
/// for `ldexp` an i32 beside it, for `atan2` and `pow` two f32, for `fma` three; the packing
/// builtins on their whole values, [`takes_whole`]), and the CPU form's f64 fast path, if it
/// has one (a function of `xcd-cpumath` taking the same arguments and returning `Option<f32>`,
/// as the runtime re-exports it, saying `None` where the WGSL must decide).
struct Implemented {
    builtin: Builtin,
    wgsl: &'static str,
    fast: Option<&'static str>,
}

/// What a kernel writes that the library computes: a math builtin, or `%` on floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Builtin {
    Math(MathFunction),
    FloatRemainder,
}

/// The builtins the library implements.
const FUNCTIONS: &[Implemented] = &[
    Implemented {
        builtin: Builtin::Math(MathFunction::Exp),
        wgsl: "xcm_exp",
        fast: Some("::xcd_runtime::cpumath::exp"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Exp2),
        wgsl: "xcm_exp2",
        fast: Some("::xcd_runtime::cpumath::exp2"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Log),
        wgsl: "xcm_log",
        fast: Some("::xcd_runtime::cpumath::log"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Log2),
        wgsl: "xcm_log2",
        fast: Some("::xcd_runtime::cpumath::log2"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Sin),
        wgsl: "xcm_sin",
        fast: Some("::xcd_runtime::cpumath::sin"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Cos),
        wgsl: "xcm_cos",
        fast: Some("::xcd_runtime::cpumath::cos"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Tan),
        wgsl: "xcm_tan",
        fast: Some("::xcd_runtime::cpumath::tan"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Atan),
        wgsl: "xcm_atan",
        fast: Some("::xcd_runtime::cpumath::atan"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Atan2),
        wgsl: "xcm_atan2",
        fast: Some("::xcd_runtime::cpumath::atan2"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Asin),
        wgsl: "xcm_asin",
        fast: Some("::xcd_runtime::cpumath::asin"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Acos),
        wgsl: "xcm_acos",
        fast: Some("::xcd_runtime::cpumath::acos"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Sinh),
        wgsl: "xcm_sinh",
        fast: Some("::xcd_runtime::cpumath::sinh"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Cosh),
        wgsl: "xcm_cosh",
        fast: Some("::xcd_runtime::cpumath::cosh"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Tanh),
        wgsl: "xcm_tanh",
        fast: Some("::xcd_runtime::cpumath::tanh"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Asinh),
        wgsl: "xcm_asinh",
        fast: Some("::xcd_runtime::cpumath::asinh"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Acosh),
        wgsl: "xcm_acosh",
        fast: Some("::xcd_runtime::cpumath::acosh"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Atanh),
        wgsl: "xcm_atanh",
        fast: Some("::xcd_runtime::cpumath::atanh"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::InverseSqrt),
        wgsl: "xcm_inverse_sqrt",
        fast: Some("::xcd_runtime::cpumath::inverse_sqrt"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Degrees),
        wgsl: "xcm_degrees",
        fast: Some("::xcd_runtime::cpumath::degrees"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Radians),
        wgsl: "xcm_radians",
        fast: Some("::xcd_runtime::cpumath::radians"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Ldexp),
        wgsl: "xcm_ldexp",
        fast: Some("::xcd_runtime::cpumath::ldexp"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Fma),
        wgsl: "xcm_fma",
        fast: Some("::xcd_runtime::cpumath::fma"),
    },
    Implemented {
        builtin: Builtin::Math(MathFunction::Pow),
        wgsl: "xcm_pow",
        fast: Some("::xcd_runtime::cpumath::pow"),
    },
    exact(MathFunction::Frexp, "xcm_frexp"),
    exact(MathFunction::Modf, "xcm_modf"),
    exact(MathFunction::QuantizeToF16, "xcm_quantize_to_f16"),
    exact(MathFunction::Pack4x8snorm, "xcm_pack4x8snorm"),
    exact(MathFunction::Pack4x8unorm, "xcm_pack4x8unorm"),
    exact(MathFunction::Pack2x16snorm, "xcm_pack2x16snorm"),
    exact(MathFunction::Pack2x16unorm, "xcm_pack2x16unorm"),
    exact(MathFunction::Pack2x16float, "xcm_pack2x16float"),
    exact(MathFunction::Unpack4x8snorm, "xcm_unpack4x8snorm"),
    exact(MathFunction::Unpack4x8unorm, "xcm_unpack4x8unorm"),
    exact(MathFunction::Unpack2x16snorm, "xcm_unpack2x16snorm"),
    exact(MathFunction::Unpack2x16unorm, "xcm_unpack2x16unorm"),
    exact(MathFunction::Unpack2x16float, "xcm_unpack2x16float"),
    exact(MathFunction::Pack4xI8, "xcm_pack4xI8"),
    exact(MathFunction::Pack4xU8, "xcm_pack4xU8"),
    exact(MathFunction::Pack4xI8Clamp, "xcm_pack4xI8Clamp"),
    exact(MathFunction::Pack4xU8Clamp, "xcm_pack4xU8Clamp"),
    exact(MathFunction::Unpack4xI8, "xcm_unpack4xI8"),
    exact(MathFunction::Unpack4xU8, "xcm_unpack4xU8"),
    exact(MathFunction::Dot4I8Packed, "xcm_dot4I8Packed"),
    exact(MathFunction::Dot4U8Packed, "xcm_dot4U8Packed"),
    Implemented {
        builtin: Builtin::FloatRemainder,
        wgsl: "xcm_remainder",
        fast: Some("::xcd_runtime::cpumath::remainder"),
    },
];

/// A builtin the library computes exactly in integers, with no fast path of the CPU form's.
const fn exact(fun: MathFunction, wgsl: &'static str) -> Implemented {
    Implemented { builtin: Builtin::Math(fun), wgsl, fast: None }
}

/// Whether the library's function for `fun` takes its arguments and gives its result whole
/// (the packing builtins and the packed dot products, whose vectors are the packed values),
/// rather than one component at a time.
pub(crate) fn takes_whole(fun: MathFunction) -> bool {
    use MathFunction as M;
    matches!(
        fun,
        M::Pack4x8snorm
            | M::Pack4x8unorm
            | M::Pack2x16snorm
            | M::Pack2x16unorm
            | M::Pack2x16float
            | M::Unpack4x8snorm
            | M::Unpack4x8unorm
            | M::Unpack2x16snorm
            | M::Unpack2x16unorm
            | M::Unpack2x16float
            | M::Pack4xI8
            | M::Pack4xU8
            | M::Pack4xI8Clamp
            | M::Pack4xU8Clamp
            | M::Unpack4xI8
            | M::Unpack4xU8
            | M::Dot4I8Packed
            | M::Dot4U8Packed
    )
}

/// The builtins the library implements.
pub(crate) fn functions() -> impl Iterator<Item = MathFunction> {
    FUNCTIONS.iter().filter_map(|f| match f.builtin {
        Builtin::Math(fun) => Some(fun),
        Builtin::FloatRemainder => None,
    })
}

/// Whether the library implements builtin `fun` (on f32 and vectors of f32).
pub(crate) fn implements(fun: MathFunction) -> bool {
    FUNCTIONS.iter().any(|f| f.builtin == Builtin::Math(fun))
}

/// The library's module, parsed once per process.
fn library() -> Result<&'static Module, FormsError> {
    static LIBRARY: OnceLock<Result<Module, String>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| naga::front::wgsl::parse_str(SOURCE).map_err(|e| e.emit_to_string(SOURCE)))
        .as_ref()
        .map_err(|e| FormsError::Internal(format!("the math library does not parse: {e}")))
}

/// Where each builtin's library function is in a kernel's module, after [`link`].
#[derive(Debug, Default, Clone)]
pub(crate) struct Linked(HashMap<Builtin, Handle<Function>>);

impl Linked {
    /// The function to call in place of `fun` on one f32, if the library implements it.
    pub(crate) fn get(&self, fun: MathFunction) -> Option<Handle<Function>> {
        self.0.get(&Builtin::Math(fun)).copied()
    }

    /// The function to call in place of `%` on two f32.
    pub(crate) fn remainder(&self) -> Option<Handle<Function>> {
        self.0.get(&Builtin::FloatRemainder).copied()
    }

    /// Whether the kernel needed none of the library.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each linked function that the CPU form may call natively, with the Rust path to call.
    pub(crate) fn natives(&self) -> Vec<(Handle<Function>, &'static str)> {
        let fast = |fun: Builtin| FUNCTIONS.iter().find(|f| f.builtin == fun)?.fast;
        self.0.iter().filter_map(|(&fun, &handle)| Some((handle, fast(fun)?))).collect()
    }
}

/// Copies into `module` the library functions that its kernel's builtins need, with the
/// functions they call, named so that no WGSL name can clash with them (`__` starts no WGSL
/// identifier).
pub(crate) fn link(module: &mut Module, info: &ModuleInfo) -> Result<Linked, FormsError> {
    let used = used(module, info);
    if used.is_empty() {
        return Ok(Linked::default());
    }
    let library = library()?;
    let kernel_functions = module.functions.len();
    let mut copier = Copier { library, types: HashMap::new(), functions: HashMap::new() };
    let mut linked = Linked::default();
    for f in FUNCTIONS.iter().filter(|f| used.contains(&f.builtin)) {
        let Some((handle, _)) = library.functions.iter().find(|(_, lf)| lf.name.as_deref() == Some(f.wgsl)) else {
            return Err(FormsError::Internal(format!("the math library has no {}", f.wgsl)));
        };
        linked.0.insert(f.builtin, copier.function(module, handle)?);
    }
    let moved = library_first(module, kernel_functions);
    for handle in linked.0.values_mut() {
        *handle = moved[handle.index()];
    }
    Ok(linked)
}

/// Reorders `module`'s functions so the library's (appended after the kernel's first `kernel`
/// ones) come first, as a function may call only those before it; returns each old handle's
/// new one, after rewriting every call to match.
fn library_first(module: &mut Module, kernel: usize) -> Vec<Handle<Function>> {
    let old = std::mem::take(&mut module.functions);
    let total = old.len();
    let library = total - kernel;
    let new_index = |i: usize| if i < kernel { i + library } else { i - kernel };
    let mut functions: Vec<Option<(Function, Span)>> = (0..total).map(|_| None).collect();
    for (handle, fun) in old.iter() {
        functions[new_index(handle.index())] = Some((fun.clone(), old.get_span(handle)));
    }
    for (fun, span) in functions.into_iter().flatten() {
        module.functions.append(fun, span);
    }
    let handles: Vec<Handle<Function>> = module.functions.iter().map(|(h, _)| h).collect();
    let moved: Vec<Handle<Function>> = (0..total).map(|i| handles[new_index(i)]).collect();
    let mut recall = |f: &mut Handle<Function>| {
        *f = moved[f.index()];
        Ok(())
    };
    for (_, fun) in module.functions.iter_mut() {
        // Infallible: `recall` never fails.
        let _ = each_callee(fun, &mut recall);
    }
    for ep in &mut module.entry_points {
        let _ = each_callee(&mut ep.function, &mut recall);
    }
    moved
}

/// Calls `f` on every function handle `fun` names (its calls and their results).
fn each_callee(
    fun: &mut Function,
    f: &mut dyn FnMut(&mut Handle<Function>) -> Result<(), FormsError>,
) -> Result<(), FormsError> {
    for (_, e) in fun.expressions.iter_mut() {
        if let Expression::CallResult(callee) = e {
            f(callee)?;
        }
    }
    each_call(&mut fun.body, f)
}

fn each_call(
    block: &mut Block,
    f: &mut dyn FnMut(&mut Handle<Function>) -> Result<(), FormsError>,
) -> Result<(), FormsError> {
    for (statement, _) in block.span_iter_mut() {
        match statement {
            Statement::Call { function, .. } => f(function)?,
            Statement::Block(inner) => each_call(inner, f)?,
            Statement::If { accept, reject, .. } => {
                each_call(accept, f)?;
                each_call(reject, f)?;
            }
            Statement::Switch { cases, .. } => {
                for case in cases {
                    each_call(&mut case.body, f)?;
                }
            }
            Statement::Loop { body, continuing, .. } => {
                each_call(body, f)?;
                each_call(continuing, f)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The builtins of `module` that the library implements (`info` is `module`'s, to tell a float
/// `%` from an integer one).
fn used(module: &Module, info: &ModuleInfo) -> Vec<Builtin> {
    let functions = module
        .functions
        .iter()
        .map(|(h, f)| (f, &info[h]))
        .chain(module.entry_points.iter().enumerate().map(|(i, ep)| (&ep.function, info.get_entry_point(i))));
    let mut used = Vec::new();
    for (fun, fun_info) in functions {
        for (_, e) in fun.expressions.iter() {
            let builtin = match *e {
                Expression::Math { fun, .. } if implements(fun) => Builtin::Math(fun),
                Expression::Binary { op: naga::BinaryOperator::Modulo, left, .. }
                    if fun_info[left].ty.inner_with(&module.types).scalar_kind() == Some(naga::ScalarKind::Float) =>
                {
                    Builtin::FloatRemainder
                }
                _ => continue,
            };
            if !used.contains(&builtin) {
                used.push(builtin);
            }
        }
    }
    used
}

/// Copies library functions into a module, each once, with the types they name.
struct Copier<'l> {
    library: &'l Module,
    types: HashMap<Handle<Type>, Handle<Type>>,
    functions: HashMap<Handle<Function>, Handle<Function>>,
}

impl Copier<'_> {
    fn ty(&mut self, module: &mut Module, old: Handle<Type>) -> Result<Handle<Type>, FormsError> {
        if let Some(&new) = self.types.get(&old) {
            return Ok(new);
        }
        let ty = &self.library.types[old];
        let inner = match ty.inner {
            ref inner @ (TypeInner::Scalar(_) | TypeInner::Vector { .. }) => inner.clone(),
            TypeInner::Array { base, size: size @ naga::ArraySize::Constant(_), stride } => {
                TypeInner::Array { base: self.ty(module, base)?, size, stride }
            }
            ref other => {
                return Err(FormsError::Internal(format!(
                    "the math library uses a type the linker cannot copy: {other:?}"
                )));
            }
        };
        let new = module.types.insert(Type { name: ty.name.clone(), inner }, Span::UNDEFINED);
        self.types.insert(old, new);
        Ok(new)
    }

    /// Copies library function `old` (and, first, what it calls) into `module`.
    fn function(&mut self, module: &mut Module, old: Handle<Function>) -> Result<Handle<Function>, FormsError> {
        if let Some(&new) = self.functions.get(&old) {
            return Ok(new);
        }
        let mut fun = self.library.functions[old].clone();
        fun.name = fun.name.map(|n| format!("__{n}"));
        for arg in &mut fun.arguments {
            arg.ty = self.ty(module, arg.ty)?;
        }
        if let Some(result) = &mut fun.result {
            result.ty = self.ty(module, result.ty)?;
        }
        for (_, local) in fun.local_variables.iter_mut() {
            local.ty = self.ty(module, local.ty)?;
        }
        for (_, e) in fun.expressions.iter_mut() {
            self.expression(module, e)?;
        }
        each_callee(&mut fun, &mut |callee| {
            *callee = self.function(module, *callee)?;
            Ok(())
        })?;
        let new = module.functions.append(fun, Span::UNDEFINED);
        self.functions.insert(old, new);
        Ok(new)
    }

    fn expression(&mut self, module: &mut Module, e: &mut Expression) -> Result<(), FormsError> {
        match e {
            Expression::Compose { ty, .. } | Expression::ZeroValue(ty) => *ty = self.ty(module, *ty)?,
            Expression::Constant(_)
            | Expression::Override(_)
            | Expression::GlobalVariable(_)
            | Expression::AtomicResult { .. }
            | Expression::WorkGroupUniformLoadResult { .. }
            | Expression::SubgroupOperationResult { .. } => {
                return Err(FormsError::Internal(format!(
                    "the math library uses an expression the linker cannot copy: {e:?}"
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Kernel, make_forms};

    const KERNEL: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

fn helper(v: f32) -> f32 {
    return exp(v) + 1.0;
}

@compute @workgroup_size(64)
fn k(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = exp(vec4<f32>(x[i], helper(x[i]), -x[i], 2.0 * x[i]));
}
"#;

    #[test]
    fn a_kernel_calling_exp_on_scalars_and_vectors_makes_every_form() {
        let forms = make_forms(KERNEL, "k").expect("forms");
        assert!(
            !forms.spirv.is_empty() && forms.msl.contains("xcm_exp") && forms.ptx.contains(".entry"),
            "{}",
            forms.msl
        );
        let kernel = Kernel::from_wgsl(KERNEL, "k").expect("kernel");
        let rust = kernel.rust(&[true, true]).expect("the CPU form");
        // The f64 fast path first, the WGSL's function where it says None; five calls (one in
        // `helper`, four for the vector's components).
        assert_eq!(rust.matches("match ::xcd_runtime::cpumath::exp(").count(), 5, "{rust}");
        assert!(rust.contains("None => xc_fn___xcm_exp(xc, "), "{rust}");
        let alone = kernel.rust_library_as_wgsl(&[true, true]).expect("the CPU form, WGSL alone");
        assert!(alone.contains("xc_fn___xcm_exp(xc, ") && !alone.contains("cpumath"), "{alone}");
    }

    #[test]
    fn float_remainders_and_ldexp_on_vectors_and_scalars_make_every_form() {
        let kernel = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(64)
fn k(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    let v = x[i] % 2.5 + 7.0 % x[i] + x[i] % x[i].yzwx;
    y[i] = ldexp(v, vec4<i32>(i32(i), -3, 200, -200)) + vec4<f32>(x[i].x % x[i].y, 0.0, 0.0, 0.0);
    let n = i32(i) % 7;
    y[i].y = f32(n);
}
"#;
        let forms = make_forms(kernel, "k").expect("forms");
        assert!(forms.msl.contains("xcm_remainder") && forms.msl.contains("xcm_ldexp"), "{}", forms.msl);
        let rust = Kernel::from_wgsl(kernel, "k").expect("kernel").rust(&[true, true]).expect("the CPU form");
        // Three vec4 remainders and one scalar one, each component a call; the integer % stays.
        assert_eq!(rust.matches("match ::xcd_runtime::cpumath::remainder(").count(), 13, "{rust}");
        assert_eq!(rust.matches("match ::xcd_runtime::cpumath::ldexp(").count(), 4, "{rust}");
        assert!(rust.contains("xc_rem_i32("), "{rust}");
    }

    #[test]
    fn a_kernel_without_library_functions_links_nothing() {
        let plain = KERNEL.replace("exp(v)", "v").replace("exp(vec4", "(vec4");
        let mut module = naga::front::wgsl::parse_str(&plain).expect("parses");
        let before = module.functions.len();
        let info = crate::validate(&module, None).expect("validates");
        assert!(super::link(&mut module, &info).expect("links").is_empty());
        assert_eq!(module.functions.len(), before);
    }
}
