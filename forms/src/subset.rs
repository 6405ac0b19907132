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
                        span,
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

    fn function(&self, fun: &naga::Function, fun_info: &naga::valid::FunctionInfo) -> Result<(), FormsError> {
        for (handle, expr) in fun.expressions.iter() {
            self.expression(fun, fun_info, handle, expr)?;
        }
        self.block(&fun.body)
    }

    fn expression(
        &self,
        fun: &naga::Function,
        fun_info: &naga::valid::FunctionInfo,
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
            Expression::Binary { op: naga::BinaryOperator::Modulo, left, .. }
                if fun_info[left].ty.inner_with(&self.module.types).scalar_kind() == Some(ScalarKind::Float) =>
            {
                refuse(
                    "% on floats",
                    "WGSL leaves its precision to each device; write x - y * trunc(x / y) to get the same bits everywhere",
                )
            }
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
            M::Fma => Err(self.refuse(
                span,
                "fma()",
                "WGSL lets each device fuse it or not; write a * b + c, which every device rounds the same way",
            )),
            other => Err(self.refuse(
                span,
                format!("{}()", math_name(other)),
                "WGSL leaves its precision to each device, so devices give different bits; compute it from + - * / and sqrt, or before the block",
            )),
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

/// Checks that `module` (validated) stays within the exact subset; `source` is its WGSL text,
/// for line numbers in the refusal.
pub fn check(module: &Module, info: &naga::valid::ModuleInfo, source: Option<&str>) -> Result<(), FormsError> {
    let checker = Checker { module, source };
    checker.types()?;
    checker.globals()?;
    for (handle, fun) in module.functions.iter() {
        checker.function(fun, &info[handle])?;
    }
    for (index, ep) in module.entry_points.iter().enumerate() {
        checker.function(&ep.function, info.get_entry_point(index))?;
    }
    Ok(())
}
