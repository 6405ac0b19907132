//! Makes every kernel form of a block from its WGSL source, so that each gives the same bits.
//!
//! WGSL is the one source of a block (DESIGN.md section 4). A [`Kernel`] is a WGSL (or SPIR-V)
//! module that naga has parsed and validated, that follows the kernel ABI ([`abi`]), that stays
//! within the exact subset ([`subset`]), and that the exactness pass (`exact`) has rewritten so
//! no writer is left a choice. From it come SPIR-V (naga, every float operation decorated
//! `NoContraction`, [`no_contraction`]), MSL (naga, bounds-checked), and PTX ([`ptx`], our own
//! writer). It runs at build time (from a `build.rs`) and in the daemon when a block is
//! registered; it must not touch devices, the network or the runtime: it only turns text into
//! forms and says why it cannot.
//!
//! Why the exactness work exists: WGSL lets an implementation reassociate and fuse float
//! operations, and Mesa's llvmpipe does (it turns `x*x - y*y + cx` into `(x*x + cx) - y*y`);
//! it also leaves NaNs, float `min`/`max` of NaN, the precision of `exp` and friends, and
//! shifts by 32 or more to the implementation. A form that kept any of that freedom would give
//! a device-dependent answer, and a tile may run on any device.
#![forbid(unsafe_code)]

pub mod abi;
mod check;
pub mod describe;
mod exact;
mod guard;
mod mathlib;
pub mod ptx;
pub mod rust;
mod spirv;
pub mod subset;
mod symbol;
mod walk;

pub use abi::{ArrayBinding, Interface};
pub use check::{Binding, admit_spirv, bindings, check_spirv};
pub use describe::{Marks, describe};
pub use exact::CANONICAL_NAN;
pub use guard::{CUT_LOOP, CUT_SUBNORMAL};
pub use mathlib::SOURCE as MATH_LIBRARY;
pub use spirv::{FLOAT_ARITHMETIC_OPCODES, float_controls, no_contraction};
pub use subset::Location;
pub use symbol::entry_symbol;

use naga::back::{msl, spv};
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// The forms made from one WGSL kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeForms {
    /// SPIR-V 1.0 words, every float operation decorated `NoContraction`.
    pub spirv: Vec<u32>,
    /// Metal Shading Language 2.4 source, to be compiled with fast math off.
    pub msl: String,
    /// PTX for sm_60 and later, written by [`ptx::write`].
    pub ptx: String,
}

/// Why a kernel could not be turned into forms.
#[derive(Debug, thiserror::Error)]
pub enum FormsError {
    /// The WGSL does not parse.
    #[error("the WGSL does not parse: {0}")]
    Parse(String),
    /// The kernel (WGSL or SPIR-V) reads but is not a valid module, or its SPIR-V does not read.
    #[error("the kernel is not valid: {0}")]
    Invalid(String),
    /// The entry point is missing.
    #[error("the WGSL has no compute entry point named {0}")]
    NoEntry(String),
    /// A construct outside the exact subset.
    #[error("{}{construct} is not in the exact subset: {why} (docs/kernels.md lists what is)", at.map(|a| format!("{a}: ")).unwrap_or_default())]
    Unsupported {
        /// Where it is, when the source is text.
        at: Option<Location>,
        /// What it is, as the kernel writes it.
        construct: String,
        /// Why it is out, and what to write instead.
        why: String,
    },
    /// The kernel breaks the ABI of docs/kernels.md.
    #[error("{}the kernel breaks the ABI: {what}", at.map(|a| format!("{a}: ")).unwrap_or_default())]
    Abi {
        /// Where, when known.
        at: Option<Location>,
        /// What the kernel does that the ABI does not allow, and what to do instead.
        what: String,
    },
    /// The kernel's bindings differ from the block description's.
    #[error("the kernel does not match the block description: {0}")]
    Mismatch(String),
    /// naga failed to write SPIR-V.
    #[error("writing SPIR-V failed: {0}")]
    Spirv(String),
    /// naga failed to write MSL.
    #[error("writing MSL failed: {0}")]
    Msl(String),
    /// naga itself failed (panicked) on this input: a bug in naga, reported as a refusal.
    #[error("{0} failed inside naga (a bug there, not in the kernel): change the kernel, and report the kernel to xcd")]
    Reader(&'static str),
    /// A step of xcd-forms met something it should not have: a bug here, not in the kernel.
    #[error("{0} (a bug in xcd-forms: please report the kernel)")]
    Internal(String),
}

/// Runs a naga step on input from the network, turning a panic inside naga into a refusal: the
/// daemon loads forms on a device's thread, where a panic would take the device out of service.
fn unpanicked<T>(what: &'static str, step: impl FnOnce() -> T) -> Result<T, FormsError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).map_err(|_| FormsError::Reader(what))
}

/// The stack naga's steps run on. Its WGSL front end recurses once per operator of an
/// expression (measured: a chain of 5,000 `+` overflows 2 MiB, a thread's default); with the
/// source bounded by [`subset::check_source`], this leaves a wide margin even in debug builds.
const NAGA_STACK: usize = 64 << 20;

/// Runs `step` on a thread of its own with [`NAGA_STACK`] of stack, so a kernel from outside can
/// never overflow the caller's (a daemon's) stack; only the pages used are ever touched.
fn on_big_stack<T: Send>(step: impl FnOnce() -> Result<T, FormsError> + Send) -> Result<T, FormsError> {
    std::thread::scope(|scope| {
        match std::thread::Builder::new().name("xcd-forms".into()).stack_size(NAGA_STACK).spawn_scoped(scope, step) {
            Ok(thread) => thread.join().unwrap_or(Err(FormsError::Reader("a step of xcd-forms"))),
            Err(e) => Err(FormsError::Internal(format!("cannot start a thread to read the kernel: {e}"))),
        }
    })
}

/// Out-of-range reads give zero and out-of-range writes are dropped, in every form, so a kernel
/// with an indexing bug can never touch memory outside its buffers on a daemon.
fn bounds_checks() -> BoundsCheckPolicies {
    BoundsCheckPolicies {
        index: BoundsCheckPolicy::ReadZeroSkipWrite,
        buffer: BoundsCheckPolicy::ReadZeroSkipWrite,
        ..BoundsCheckPolicies::default()
    }
}

fn validate(module: &naga::Module, source: Option<&str>) -> Result<naga::valid::ModuleInfo, FormsError> {
    // `quantizeToF16`, `pack2x16float` and `unpack2x16float` need f16 conversions, a capability
    // of their own: the math library computes them in integers instead, so no form needs it.
    let capabilities = Capabilities::default() | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    unpanicked("validating the kernel", || {
        Validator::new(ValidationFlags::all(), capabilities).validate(module).map_err(|e| match source {
            Some(text) => FormsError::Invalid(e.emit_to_string(text)),
            None => {
                let e = e.into_inner();
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(inner) = source {
                    text.push_str(&format!(": {inner}"));
                    source = inner.source();
                }
                FormsError::Invalid(text)
            }
        })
    })?
}

/// What a device's SPIR-V form carries beyond the kernel itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpirvOptions {
    /// Declare `SignedZeroInfNanPreserve` for f32 (where the device reports it), so its
    /// compiler keeps signed zeros, infinities and NaNs through every operation.
    pub preserve_signed_zero_inf_nan: bool,
    /// Declare `DenormPreserve` for f32 (where the device reports it), so it keeps subnormals.
    pub preserve_denorms: bool,
    /// Detect loops cut short (`guard`), for a software Vulkan device that ends long loops in
    /// silence: the word at [`Kernel::cut_binding`] becomes [`CUT_LOOP`].
    pub guard_loops: bool,
    /// Detect subnormal floats (`guard`), for a device that flushes them: the word at
    /// [`Kernel::cut_binding`] becomes [`CUT_SUBNORMAL`].
    pub guard_subnormals: bool,
    /// Hide float constants that are operands of `+ - * /` from the device's compiler (llvmpipe
    /// folds `x * 0.0` to `0.0`), reading the second word at [`Kernel::cut_binding`], which the
    /// device keeps 0. Needs one of the guards, which bind those words.
    pub opaque_constants: bool,
}

/// A kernel checked against the ABI and the exact subset, and made exact: every form written
/// from it gives the same bits.
#[derive(Debug)]
pub struct Kernel {
    module: naga::Module,
    info: naga::valid::ModuleInfo,
    entry: String,
    interface: Interface,
    /// Where the math library's functions are in `module`.
    linked: mathlib::Linked,
}

impl Kernel {
    /// Reads a kernel from WGSL source.
    pub fn from_wgsl(wgsl: &str, entry: &str) -> Result<Kernel, FormsError> {
        subset::check_source(wgsl)?;
        on_big_stack(|| {
            let module = unpanicked("reading the WGSL", || {
                naga::front::wgsl::parse_str(wgsl).map_err(|e| FormsError::Parse(e.emit_to_string(wgsl)))
            })??;
            subset::check_unfolded(wgsl, &module)?;
            Kernel::prepare(module, Some(wgsl), entry)
        })
    }

    /// Reads a kernel from SPIR-V words (a program's form, when it carries no WGSL).
    pub fn from_spirv(words: &[u32], entry: &str) -> Result<Kernel, FormsError> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let options = naga::front::spv::Options { strict_capabilities: true, ..naga::front::spv::Options::default() };
        on_big_stack(|| {
            let module = unpanicked("reading the SPIR-V", || {
                naga::front::spv::parse_u8_slice(&bytes, &options)
                    .map_err(|e| FormsError::Invalid(format!("its SPIR-V does not read: {e}")))
            })??;
            Kernel::prepare(module, None, entry)
        })
    }

    /// Reads the kernel a block carries (its WGSL, or else its SPIR-V) and checks it against
    /// the block's description.
    pub fn for_block(desc: &xcd_wire::BlockDesc) -> Result<Kernel, FormsError> {
        let kernel = match (&desc.forms.wgsl, &desc.forms.spirv) {
            (Some(wgsl), _) => Kernel::from_wgsl(wgsl, &desc.entry)?,
            (None, Some(words)) => Kernel::from_spirv(words, &desc.entry)?,
            (None, None) => {
                return Err(FormsError::Mismatch(format!(
                    "block {} carries neither WGSL nor SPIR-V to make forms from",
                    desc.name
                )));
            }
        };
        kernel.interface.check_against(desc)?;
        Ok(kernel)
    }

    fn prepare(mut module: naga::Module, source: Option<&str>, entry: &str) -> Result<Kernel, FormsError> {
        let info = validate(&module, source)?;
        let interface = abi::interface(&module, entry, source)?;
        subset::check(&module, source)?;
        let linked = unpanicked("linking the math library", || mathlib::link(&mut module, &info))??;
        let info = if linked.is_empty() {
            info
        } else {
            validate(&module, None)
                .map_err(|e| FormsError::Internal(format!("the kernel with the math library does not validate: {e}")))?
        };
        unpanicked("rewriting the kernel", || exact::exact(&mut module, &info, &linked))??;
        let info = validate(&module, None)
            .map_err(|e| FormsError::Internal(format!("the exact kernel does not validate: {e}")))?;
        Ok(Kernel { module, info, entry: entry.to_owned(), interface, linked })
    }

    /// What the kernel binds.
    pub fn interface(&self) -> &Interface {
        &self.interface
    }

    /// The SPIR-V form: bounds-checked, every float operation `NoContraction`.
    pub fn spirv(&self) -> Result<Vec<u32>, FormsError> {
        self.spirv_for(SpirvOptions::default())
    }

    /// The SPIR-V form for a device with what it needs (see [`SpirvOptions`]).
    pub fn spirv_for(&self, options: SpirvOptions) -> Result<Vec<u32>, FormsError> {
        on_big_stack(|| self.spirv_here(options))
    }

    fn spirv_here(&self, options: SpirvOptions) -> Result<Vec<u32>, FormsError> {
        let mut words = if options.guard_loops || options.guard_subnormals || options.opaque_constants {
            let mut module = self.module.clone();
            let detect = guard::Detect { loops: options.guard_loops, subnormals: options.guard_subnormals };
            let word = guard::guard(&mut module, self.cut_binding(), detect);
            let internal = |e| FormsError::Internal(format!("the guarded kernel does not validate: {e}"));
            let mut info = validate(&module, None).map_err(internal)?;
            if options.opaque_constants {
                unpanicked("hiding constants", || exact::opaque_constants(&mut module, &info, word))??;
                info = validate(&module, None).map_err(internal)?;
            }
            write_spirv(&module, &info, &self.entry)?
        } else {
            write_spirv(&self.module, &self.info, &self.entry)?
        };
        float_controls(&mut words, options.preserve_signed_zero_inf_nan, options.preserve_denorms);
        Ok(words)
    }

    /// The binding of the detectors' words ([`SpirvOptions::guard_loops`],
    /// [`SpirvOptions::guard_subnormals`], [`SpirvOptions::opaque_constants`]): the one after
    /// the block's arrays. It holds two u32: the detectors' result, then a zero.
    pub fn cut_binding(&self) -> u32 {
        self.interface.arrays.len() as u32 + 1
    }

    /// The MSL form: bounds-checked, asking the Metal compiler for safe math with no contraction.
    pub fn msl(&self) -> Result<String, FormsError> {
        on_big_stack(|| self.msl_here())
    }

    fn msl_here(&self) -> Result<String, FormsError> {
        let options =
            msl::Options { lang_version: (2, 4), bounds_check_policies: bounds_checks(), ..msl::Options::default() };
        // The kernel is named by the one rule every loader follows (`entry_symbol`).
        let symbol = entry_symbol(&self.entry);
        let mut renamed = None;
        if symbol != self.entry {
            let mut module = self.module.clone();
            for ep in module.entry_points.iter_mut().filter(|ep| ep.name == self.entry) {
                ep.name.clone_from(&symbol);
            }
            renamed = Some(module);
        }
        let module = renamed.as_ref().unwrap_or(&self.module);
        let pipeline = msl::PipelineOptions {
            entry_point: Some((naga::ShaderStage::Compute, symbol.clone())),
            ..msl::PipelineOptions::default()
        };
        let (text, written) = unpanicked("writing MSL", || msl::write_string(module, &self.info, &options, &pipeline))?
            .map_err(|e| FormsError::Msl(e.to_string()))?;
        match written.entry_point_names.first() {
            Some(Ok(name)) if *name == symbol => {}
            other => {
                return Err(FormsError::Msl(format!(
                    "naga named the kernel {other:?}, not {symbol}: another name in the kernel clashes with it; rename that one"
                )));
            }
        }
        // wgpu compiles passthrough MSL with Metal's default options, which allow fast math:
        // the source asks for IEEE arithmetic itself (Metal 3.2; older compilers ignore these).
        Ok(format!("#pragma METAL fp math_mode(safe)\n#pragma METAL fp contract(off)\n{text}"))
    }

    /// The CPU form as Rust source ([`rust`]): the items of a module whose `cpu` function runs
    /// one tile for `xcd_runtime`; `per_item[k]` says array `k` is per-item (not whole). It
    /// calls the math library's f64 fast path (`xcd_runtime::cpumath`) where there is one,
    /// falling back to the library's WGSL, which gives the same (correctly rounded) bits.
    pub fn rust(&self, per_item: &[bool]) -> Result<String, FormsError> {
        self.rust_with(per_item, &self.linked.natives())
    }

    /// The CPU form with the math library's WGSL alone, never its f64 fast path: the code the
    /// GPU forms run, transcribed, which is how `scripts/math-proof` proves that code on every
    /// argument. Not for programs ([`Kernel::rust`] gives the same bits, faster).
    pub fn rust_library_as_wgsl(&self, per_item: &[bool]) -> Result<String, FormsError> {
        self.rust_with(per_item, &[])
    }

    fn rust_with(
        &self,
        per_item: &[bool],
        native: &[(naga::Handle<naga::Function>, &'static str)],
    ) -> Result<String, FormsError> {
        on_big_stack(|| {
            unpanicked("writing the CPU form", || rust::write(&self.module, &self.entry, per_item, native))?
        })
    }

    /// The Rust element type of each array the CPU form binds (`f32`, `[u32; 4]`, …), in
    /// binding order: what a typed call takes.
    pub fn rust_array_types(&self) -> Result<Vec<String>, FormsError> {
        rust::array_types(&self.module)
    }

    /// The PTX form, for sm_60 and later.
    pub fn ptx(&self) -> Result<String, FormsError> {
        on_big_stack(|| unpanicked("writing PTX", || ptx::write(&self.module, &self.entry))?)
    }
}

/// Parses and checks `wgsl`, then writes its SPIR-V, MSL and PTX forms for entry point `entry`.
pub fn make_forms(wgsl: &str, entry: &str) -> Result<MadeForms, FormsError> {
    let kernel = Kernel::from_wgsl(wgsl, entry)?;
    Ok(MadeForms { spirv: kernel.spirv()?, msl: kernel.msl()?, ptx: kernel.ptx()? })
}

/// Writes a validated module's SPIR-V for `entry`: bounds-checked, every float operation exact.
fn write_spirv(module: &naga::Module, info: &naga::valid::ModuleInfo, entry: &str) -> Result<Vec<u32>, FormsError> {
    let spv_options = spv::Options {
        lang_version: (1, 0),
        // No debug names: the same source gives the same words in debug and release builds.
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: bounds_checks(),
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: entry.to_owned() };
    let mut spirv = unpanicked("writing SPIR-V", || spv::write_vec(module, info, &spv_options, Some(&pipeline)))?
        .map_err(|e| FormsError::Spirv(e.to_string()))?;
    no_contraction(&mut spirv);
    Ok(spirv)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = r#"
struct Tile { start: u32, count: u32, first: u32, a: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = tile.a * x[i] + y[i] - x[i] / 3.0;
}
"#;

    #[test]
    fn every_float_operation_is_decorated() {
        let forms = make_forms(KERNEL, "main").expect("kernel makes forms");
        let (ops, decorated) = spirv::count_float_ops_and_decorations(&forms.spirv);
        assert!(ops >= 4, "expected the kernel's float operations, found {ops}");
        assert_eq!(ops, decorated);
        // `main` is a keyword to the MSL writer: every text form names the kernel by the one rule.
        assert!(forms.msl.contains("kernel void xc_main_k("), "{}", forms.msl);
        assert!(forms.ptx.contains(".entry xc_main_k("), "{}", forms.ptx);
    }

    #[test]
    fn forms_are_deterministic() {
        assert_eq!(make_forms(KERNEL, "main").ok(), make_forms(KERNEL, "main").ok());
    }

    #[test]
    fn bad_sources_say_why() {
        assert!(matches!(make_forms("fn (", "main"), Err(FormsError::Parse(_))));
        assert!(matches!(make_forms(KERNEL, "other"), Err(FormsError::NoEntry(_))));
    }
}
