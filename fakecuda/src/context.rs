//! A context as the stand-in keeps it, and the context current on each thread. A thread keeps a
//! context current until it sets another, even once the context is destroyed: calls through it
//! then fail (`driver`), as they do on a real driver. Owns only these; the contexts' slots are
//! `driver`'s.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// A context: its device, the error that stuck to it, and its kernels' stop flag.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) handle: usize,
    /// How many contexts had lived in its slot, itself included: a handle given out again names
    /// a later generation.
    pub(crate) generation: u64,
    pub(crate) device: i32,
    /// The code of the fault that made it unusable, or 0.
    pub(crate) fault: AtomicI32,
    /// Set when it is destroyed: its kernels stop.
    pub(crate) stop: AtomicBool,
    /// Kernels of its streams running now.
    pub(crate) running: AtomicUsize,
}

impl Context {
    /// A fresh context.
    pub(crate) fn new(handle: usize, generation: u64, device: i32) -> Context {
        Context {
            handle,
            generation,
            device,
            fault: AtomicI32::new(0),
            stop: AtomicBool::new(false),
            running: AtomicUsize::new(0),
        }
    }

    /// Whose things are its: (handle, generation).
    pub(crate) fn owner(&self) -> (usize, u64) {
        (self.handle, self.generation)
    }

    /// The error every call on it gives once it faulted.
    pub(crate) fn check(&self) -> Result<(), i32> {
        match self.fault.load(Ordering::Acquire) {
            0 => Ok(()),
            fault => Err(fault),
        }
    }

    /// Makes it unusable with `fault`, unless it already is.
    pub(crate) fn set_fault(&self, fault: i32, why: &str) {
        if self.fault.compare_exchange(0, fault, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            crate::log(format_args!("context {:#x} faulted ({fault}): {why}", self.handle));
        }
    }
}

thread_local! {
    /// The context current on this thread: (handle, generation), (0, 0) for none.
    static CURRENT: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// The context current on this thread as (handle, generation), destroyed or not; (0, 0) for none.
pub(crate) fn current() -> (usize, u64) {
    CURRENT.with(Cell::get)
}

/// Sets the context current on this thread (`None` for none).
pub(crate) fn set_current(context: Option<&Context>) {
    let value = context.map_or((0, 0), Context::owner);
    CURRENT.with(|c| c.set(value));
}
