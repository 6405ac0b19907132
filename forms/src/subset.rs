//! The exact subset: what a kernel may use so that every form gives the same bits.
//!
//! WGSL leaves some results to each implementation (the precision of `exp`, `sin`, `pow`, float
//! `%`, whether `fma` is fused, what a workgroup's shared memory sees) and has constructs the
//! kernel ABI has no place for (textures, atomics, workgroup memory, pipeline overrides). A
//! kernel that used them would give different bits on different devices, so [`check`] refuses
//! it with the construct and its line, at build time and when a daemon registers the block.
//!
//! It reads a validated module only; it rewrites nothing (that is `exact`'s job) and knows
//! nothing of devices.

use naga::{AddressSpace, Expression, Handle, MathFunction, Module, ScalarKind, Statement, TypeInner};

use crate::FormsError;

/// The only invocation builtin a kernel may take: its item is `first + global_invocation_id.x`.
/// The others depend on how a device groups invocations, which differs between forms.
const BUILTIN_HINT: &str =
    "take only @builtin(global_invocation_id): workgroup and local ids depend on how each device groups items";

/// Where in the source a construct sits, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}:{}", self.line, self.column)
    }
}

/// Turns a span into a location in `source` (None where naga kept no span, e.g. SPIR-V input).
pub(crate) fn locate(span: naga::Span, source: Option<&str>) -> Option<Location> {
    let source = source?;
    span.to_range()?;
    let at = span.location(source);
    Some(Location { line: at.line_number, column: at.line_position })
}

/// The most WGSL one kernel may be.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;
/// The most operators one statement may hold. naga's WGSL front end recurses once per operator
/// of an expression, so a long enough chain would overflow any stack; real kernels stay far
/// below this.
pub const MAX_OPERATORS_PER_STATEMENT: usize = 1000;

/// Bounds a WGSL source before naga reads it: its size, and the operators of each statement
/// (counted between `;`, `{` and `}`, outside comments).
pub fn check_source(wgsl: &str) -> Result<(), FormsError> {
    if wgsl.len() > MAX_SOURCE_BYTES {
        return Err(FormsError::Parse(format!(
            "the kernel is {} bytes of WGSL; at most {MAX_SOURCE_BYTES} are read",
            wgsl.len()
        )));
    }
    let (mut operators, mut statement_start) = (0usize, 0usize);
    let bytes = wgsl.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at += 2;
                while at + 1 < bytes.len() && !(bytes[at] == b'*' && bytes[at + 1] == b'/') {
                    at += 1;
                }
                at += 1;
            }
            b';' | b'{' | b'}' => {
                operators = 0;
                statement_start = at + 1;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>' | b'!' | b'~' | b'=' | b',' => {
                operators += 1;
                if operators > MAX_OPERATORS_PER_STATEMENT {
                    let first = (statement_start..at).find(|&k| !bytes[k].is_ascii_whitespace()).unwrap_or(at);
                    let at = locate(naga::Span::new(first as u32, first as u32 + 1), Some(wgsl));
                    return Err(FormsError::Unsupported {
                        at,
                        construct: format!("a statement of more than {MAX_OPERATORS_PER_STATEMENT} operators"),
                        why: "split the expression across statements with let".into(),
                    });
                }
            }
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

struct Checker<'a> {
    module: &'a Module,
    source: Option<&'a str>,
}

impl Checker<'_> {
    fn refuse(&self, span: naga::Span, construct: impl Into<String>, why: &str) -> FormsError {
        FormsError::Unsupported { at: locate(span, self.source), construct: construct.into(), why: why.to_owned() }
    }

    fn scalar(&self, kind: ScalarKind, width: u8, span: naga::Span) -> Result<(), FormsError> {
        match (kind, width) {
            (ScalarKind::Bool, _) | (ScalarKind::Uint | ScalarKind::Sint | ScalarKind::Float, 4) => Ok(()),
            _ => Err(self.refuse(
                span,
                format!("a {}-bit {kind:?} value", u32::from(width) * 8),
                "kernels compute with u32, i32, f32 and bool (and vectors, arrays and structs of them)",
            )),
        }
    }

    fn types(&self) -> Result<(), FormsError> {
        for (handle, ty) in self.module.types.iter() {
            let span = self.module.types.get_span(handle);
            match ty.inner {
                TypeInner::Scalar(s) => self.scalar(s.kind, s.width, span)?,
                TypeInner::Vector { scalar, .. } => self.scalar(scalar.kind, scalar.width, span)?,
                TypeInner::Array { size: naga::ArraySize::Constant(_) | naga::ArraySize::Dynamic, .. }
                | TypeInner::Struct { .. }
                | TypeInner::Pointer { .. }
                | TypeInner::ValuePointer { .. } => {}
                TypeInner::Matrix { .. } => {
                    return Err(self.refuse(
                        self.first_use(handle).unwrap_or(span),
                        "a matrix type",
                        "matrix products sum in an order each device chooses; write the sums out with vectors",
                    ));
                }
                TypeInner::Atomic(_) => {
                    return Err(self.refuse(
                        span,
                        "an atomic type",
                        "atomics make a result depend on the order items run in, which differs between devices and tiles",
                    ));
                }
                _ => {
                    return Err(self.refuse(
                        span,
                        format!("the type {}", type_name(self.module, handle)),
                        "kernels compute on storage arrays only: no textures, samplers or other resources",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Where a function first builds a value of type `ty` or declares a variable of it: naga
    /// keeps no span for a type itself.
    fn first_use(&self, ty: Handle<naga::Type>) -> Option<naga::Span> {
        let functions = self.module.functions.iter().map(|(_, f)| f);
        let mut all = functions.chain(self.module.entry_points.iter().map(|ep| &ep.function));
        all.find_map(|fun| {
            let built = fun.expressions.iter().find_map(|(h, e)| match *e {
                Expression::Compose { ty: t, .. } | Expression::ZeroValue(t) if t == ty => {
                    Some(fun.expressions.get_span(h))
                }
                _ => None,
            });
            let declared = || {
                let local = fun.local_variables.iter().find(|(_, v)| v.ty == ty);
                local.map(|(h, _)| fun.local_variables.get_span(h))
            };
            built.or_else(declared).filter(|span| span.to_range().is_some())
        })
    }

    fn globals(&self) -> Result<(), FormsError> {
        if let Some((handle, _)) = self.module.overrides.iter().next() {
            return Err(self.refuse(
                self.module.overrides.get_span(handle),
                "a pipeline-overridable constant (override)",
                "pass the value as a block parameter in the uniform struct instead",
            ));
        }
        for (handle, var) in self.module.global_variables.iter() {
            let span = self.module.global_variables.get_span(handle);
            match var.space {
                // Private variables are per item, like locals (SPIR-V input holds its builtins there).
                AddressSpace::Uniform | AddressSpace::Storage { .. } | AddressSpace::Private => {}
                AddressSpace::WorkGroup => {
                    return Err(self.refuse(
                        span,
                        "var<workgroup>",
                        "items of a block are independent and may run on different devices; workgroup memory would tie them together",
                    ));
                }
                space => {
                    return Err(self.refuse(
                        span,
                        format!("a variable in the {space:?} address space"),
                        "kernels bind a uniform struct and storage arrays only",
                    ));
                }
            }
        }
        Ok(())
    }

    fn function(&self, fun: &naga::Function) -> Result<(), FormsError> {
        for (handle, expr) in fun.expressions.iter() {
            self.expression(fun, handle, expr)?;
        }
        self.block(&fun.body)
    }

    fn expression(
        &self,
        fun: &naga::Function,
        handle: Handle<Expression>,
        expr: &Expression,
    ) -> Result<(), FormsError> {
        let span = fun.expressions.get_span(handle);
        let refuse = |construct: &str, why: &str| Err(self.refuse(span, construct, why));
        match *expr {
            Expression::Override(_) => refuse("a pipeline-overridable constant", "pass it as a block parameter"),
            Expression::ImageSample { .. }
            | Expression::ImageLoad { .. }
            | Expression::ImageQuery { .. }
            | Expression::RayQueryVertexPositions { .. }
            | Expression::RayQueryProceedResult
            | Expression::RayQueryGetIntersection { .. } => {
                refuse("a texture or ray query", "kernels compute on storage arrays only")
            }
            Expression::Derivative { .. } => refuse("a derivative", "derivatives exist in fragment shaders only"),
            Expression::AtomicResult { .. } => {
                refuse("an atomic operation", "atomics make a result depend on the order items run in")
            }
            Expression::WorkGroupUniformLoadResult { .. } => {
                refuse("workgroupUniformLoad", "items of a block are independent: there is no workgroup to share with")
            }
            Expression::SubgroupBallotResult | Expression::SubgroupOperationResult { .. } => {
                refuse("a subgroup operation", "subgroup sizes differ between devices, so results would too")
            }
            Expression::CooperativeLoad { .. } | Expression::CooperativeMultiplyAdd { .. } => {
                refuse("a cooperative matrix operation", "matrix products sum in an order each device chooses")
            }
            Expression::Relational {
                fun: naga::RelationalFunction::IsNan | naga::RelationalFunction::IsInf, ..
            } => refuse("isNan/isInf", "compare instead: x != x is true for NaN only"),
            Expression::Math { fun: f, .. } => self.math(f, span),
            Expression::FunctionArgument(index) => {
                let Some(arg) = fun.arguments.get(index as usize) else { return Ok(()) };
                match arg.binding {
                    None | Some(naga::Binding::BuiltIn(naga::BuiltIn::GlobalInvocationId)) => Ok(()),
                    Some(naga::Binding::BuiltIn(builtin)) => {
                        Err(self.refuse(span, format!("@builtin({builtin:?})"), BUILTIN_HINT))
                    }
                    Some(naga::Binding::Location { .. }) => {
                        Err(self.refuse(span, "an argument with @location", "compute kernels take builtins only"))
                    }
                }
            }
            _ => Ok(()),
        }
    }

    fn math(&self, f: MathFunction, span: naga::Span) -> Result<(), FormsError> {
        use MathFunction as M;
        match f {
            M::Abs
            | M::Min
            | M::Max
            | M::Clamp
            | M::Saturate
            | M::Ceil
            | M::Floor
            | M::Round
            | M::Fract
            | M::Trunc
            | M::Sqrt
            | M::Sign
            | M::Step
            | M::Mix
            | M::Dot
            | M::Cross
            | M::Length
            | M::Distance
            | M::Normalize
            | M::SmoothStep
            | M::Reflect
            | M::Refract
            | M::FaceForward
            | M::CountTrailingZeros
            | M::CountLeadingZeros
            | M::CountOneBits
            | M::ReverseBits
            | M::ExtractBits
            | M::InsertBits
            | M::FirstTrailingBit
            | M::FirstLeadingBit => Ok(()),
            // Ours, correctly rounded (`mathlib`): the same bits on every device.
            f if crate::mathlib::implements(f) => Ok(()),
            other => Err(self.refuse(span, format!("{}()", math_name(other)), OPEN_PRECISION)),
        }
    }

    fn block(&self, block: &naga::Block) -> Result<(), FormsError> {
        for (statement, span) in block.span_iter() {
            let refuse = |construct: &str, why: &str| Err(self.refuse(*span, construct, why));
            match statement {
                Statement::Block(inner) => self.block(inner)?,
                Statement::If { accept, reject, .. } => {
                    self.block(accept)?;
                    self.block(reject)?;
                }
                Statement::Switch { cases, .. } => {
                    for case in cases {
                        self.block(&case.body)?;
                    }
                }
                Statement::Loop { body, continuing, .. } => {
                    self.block(body)?;
                    self.block(continuing)?;
                }
                Statement::Emit(_)
                | Statement::Break
                | Statement::Continue
                | Statement::Return { .. }
                | Statement::Store { .. }
                | Statement::Call { .. } => {}
                Statement::Kill => return refuse("discard", "compute kernels cannot discard"),
                Statement::ControlBarrier(_) | Statement::MemoryBarrier(_) => {
                    return refuse("a barrier", "items of a block are independent: there is nothing to wait for");
                }
                Statement::Atomic { .. } | Statement::ImageAtomic { .. } => {
                    return refuse("an atomic operation", "atomics make a result depend on the order items run in");
                }
                Statement::WorkGroupUniformLoad { .. } => {
                    return refuse("workgroupUniformLoad", "items of a block are independent");
                }
                Statement::SubgroupBallot { .. }
                | Statement::SubgroupGather { .. }
                | Statement::SubgroupCollectiveOperation { .. } => {
                    return refuse("a subgroup operation", "subgroup sizes differ between devices");
                }
                _ => return refuse("this statement", "kernels compute on storage arrays only"),
            }
        }
        Ok(())
    }
}

fn type_name(module: &Module, handle: Handle<naga::Type>) -> String {
    module.types[handle].name.clone().unwrap_or_else(|| format!("{:?}", module.types[handle].inner))
}

/// The WGSL name of a math function, for messages.
fn math_name(f: MathFunction) -> String {
    let debug = format!("{f:?}");
    let mut name = String::new();
    for (i, c) in debug.chars().enumerate() {
        if i == 0 { name.extend(c.to_lowercase()) } else { name.push(c) }
    }
    match f {
        MathFunction::InverseSqrt => "inverseSqrt".into(),
        MathFunction::Atan2 => "atan2".into(),
        _ => name,
    }
}

/// Why a builtin whose precision WGSL leaves open is refused.
const OPEN_PRECISION: &str = "WGSL leaves its precision to each device, so devices give different bits; compute it from + - * / and sqrt, or before the block";

/// Refuses a call of a math-library function that naga's WGSL reader evaluated itself: a call
/// whose arguments are known when the kernel is read (literals, or `const`s of them)
/// is computed then, with the host's own `f32::exp`, and leaves only its value in the module, so
/// the library never sees it. Found by the calls the source makes that left no builtin behind.
pub(crate) fn check_unfolded(source: &str, module: &Module) -> Result<(), FormsError> {
    use MathFunction as M;
    // Every builtin whose precision WGSL leaves open is the library's. naga folds the packed dot
    // products in integers, exactly, so a constant call of one is fine.
    for fun in crate::mathlib::functions().filter(|f| !matches!(f, M::Dot4I8Packed | M::Dot4U8Packed)) {
        let name = math_name(fun);
        let calls = calls_in_source(source, &name);
        let functions =
            module.functions.iter().map(|(_, f)| f).chain(module.entry_points.iter().map(|ep| &ep.function));
        let kept: Vec<usize> = functions
            .flat_map(|f| {
                f.expressions.iter().filter_map(move |(h, e)| match *e {
                    Expression::Math { fun: f2, .. } if f2 == fun => {
                        f.expressions.get_span(h).to_range().map(|r| r.start)
                    }
                    _ => None,
                })
            })
            .collect();
        if kept.len() >= calls.len() {
            continue;
        }
        let at = calls
            .iter()
            .find(|c| !kept.contains(c))
            .and_then(|&c| locate(naga::Span::new(c as u32, (c + name.len()) as u32), Some(source)));
        return Err(FormsError::Unsupported {
            at,
            construct: format!("{name}() of a value known when the kernel is read"),
            why: "the WGSL reader computes it then, with the host's own math library, which is not correctly rounded; pass the value as a parameter or in an array, or compute it before the block".into(),
        });
    }
    Ok(())
}

/// Where `source` calls `name(`: byte offsets, outside comments; none if it declares a function
/// of that name (its calls are then its own).
fn calls_in_source(source: &str, name: &str) -> Vec<usize> {
    let bytes = source.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let (mut at, mut depth, mut previous, mut calls) = (0, 0usize, "", Vec::new());
    while at < bytes.len() {
        if bytes[at..].starts_with(b"/*") {
            depth += 1;
            at += 2;
        } else if depth > 0 && bytes[at..].starts_with(b"*/") {
            depth -= 1;
            at += 2;
        } else if depth > 0 {
            at += 1;
        } else if bytes[at..].starts_with(b"//") {
            while at < bytes.len() && bytes[at] != b'\n' {
                at += 1;
            }
        } else if ident(bytes[at]) && !bytes[at].is_ascii_digit() {
            let start = at;
            while at < bytes.len() && ident(bytes[at]) {
                at += 1;
            }
            let word = &source[start..at];
            if word == name {
                if previous == "fn" {
                    return Vec::new();
                }
                let next = bytes[at..].iter().find(|b| !b.is_ascii_whitespace());
                if next == Some(&b'(') {
                    calls.push(start);
                }
            }
            previous = word;
        } else {
            if !bytes[at].is_ascii_whitespace() {
                previous = "";
            }
            at += 1;
        }
    }
    calls
}

/// Checks that `module` (validated) stays within the exact subset; `source` is its WGSL text,
/// for line numbers in the refusal.
pub fn check(module: &Module, source: Option<&str>) -> Result<(), FormsError> {
    let checker = Checker { module, source };
    checker.types()?;
    checker.globals()?;
    for (_, fun) in module.functions.iter() {
        checker.function(fun)?;
    }
    for ep in &module.entry_points {
        checker.function(&ep.function)?;
    }
    Ok(())
}
