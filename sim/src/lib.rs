//! A test-only interpreter for the PTX that xcd-forms writes, so the CUDA form is checked bit
//! for bit where no NVIDIA GPU is: in the conformance suite beside the CPU and llvmpipe, and in
//! the differential tests of generated kernels.
//!
//! It reads only the PTX subset the emitter uses ([`parse`]) and runs each thread on its own
//! ([`Program::run`]), as a GPU without shared memory or barriers would; [`SimDevice`] wraps it
//! as an engine device that takes blocks as the CUDA backend does (same form, same arguments).
//! It is never shipped and never serves a daemon: real GPUs run the real driver.
//!
//! Layout: `parse` (text → instructions), `exec` (instructions → results), `device` (the
//! engine's `Backend`), [`kernelgen`] (random kernels and their reference results, for the
//! differential tests), [`ptxas`] (NVIDIA's assembler, where it is installed).
#![forbid(unsafe_code)]

mod device;
mod exec;
pub mod kernelgen;
mod parse;
pub mod ptxas;

pub use device::SimDevice;
use std::sync::atomic::AtomicBool;

pub use parse::{Program, parse};

/// Why a kernel could not be read or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The text is not PTX the emitter writes.
    #[error("line {line}: cannot read {what}")]
    Parse {
        /// 1-based line (0: the whole text).
        line: usize,
        /// What could not be read.
        what: String,
    },
    /// An instruction read a register no instruction had written.
    #[error("instruction {pc} reads a register that was never set")]
    Unset {
        /// The instruction's index.
        pc: usize,
    },
    /// A load or store outside every buffer: a missing bounds check.
    #[error("instruction {pc} reaches address {addr:#x}, outside every buffer")]
    OutOfBounds {
        /// The instruction's index.
        pc: usize,
        /// The address.
        addr: u64,
    },
    /// An integer division by zero (or MIN / -1), which PTX leaves undefined.
    #[error("instruction {pc} divides by zero (or MIN by -1), which PTX leaves undefined")]
    DivideByZero {
        /// The instruction's index.
        pc: usize,
    },
    /// Execution ran past the last instruction.
    #[error("execution ran past the last instruction")]
    RanOff,
    /// A thread ran more instructions than it was given.
    #[error("a thread ran past its instruction budget")]
    TooLong,
    /// A thread executed `trap`.
    #[error("instruction {pc} is a trap")]
    Trap {
        /// The instruction's index.
        pc: usize,
    },
    /// The run was stopped from outside ([`Program::run_until`]).
    #[error("the run was stopped")]
    Stopped,
    /// The arguments do not match the entry's parameters.
    #[error("the arguments do not match the entry's parameters")]
    Args,
    /// An instruction form the interpreter does not model.
    #[error("{0} is not modelled")]
    Unsupported(String),
}

/// One argument of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// A 32-bit word (an integer or a float's bits).
    Word(u32),
    /// A pointer to buffer `k` of the launch.
    Buffer(usize),
}

impl Program {
    /// Runs `grid` blocks of `block` threads over `buffers`; each thread may run `budget`
    /// instructions.
    pub fn run(
        &self,
        grid: u32,
        block: u32,
        args: &[Arg],
        buffers: &mut [Vec<u8>],
        budget: u64,
    ) -> Result<(), SimError> {
        self.run_until(grid, block, args, buffers, budget, &AtomicBool::new(false))
    }

    /// [`run`](Self::run), ending with [`SimError::Stopped`] soon after `stop` is set (for a
    /// kernel that never ends, as the stand-in driver library runs them).
    pub fn run_until(
        &self,
        grid: u32,
        block: u32,
        args: &[Arg],
        buffers: &mut [Vec<u8>],
        budget: u64,
        stop: &AtomicBool,
    ) -> Result<(), SimError> {
        let raw: Vec<u64> = args
            .iter()
            .map(|a| match *a {
                Arg::Word(w) => u64::from(w),
                Arg::Buffer(k) => exec::buffer_base(k),
            })
            .collect();
        exec::launch(self, grid, block, &raw, buffers, budget, stop)
    }

    /// The bytes of each of the entry's parameters, in order (4 for a word, 8 for a pointer).
    pub fn param_bytes(&self) -> Vec<usize> {
        self.params.iter().map(|t| t.bytes()).collect()
    }
}
