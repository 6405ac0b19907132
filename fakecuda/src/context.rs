//! A context as the stand-in keeps it, and each thread's context stack, whose top is its current
//! context: making a context pushes it, `cuCtxSetCurrent` replaces the top (NULL pops it),
//! `cuCtxPopCurrent` pops it, and destroying a context pops it where it is current. A thread keeps
//! a context current until it sets another, even once another thread destroyed it: calls through
//! it then fail (`driver`), as they do on a real driver. Owns only these; the contexts' slots are
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

/// How deep a thread's context stack may grow here (xcd's own use needs one).
const DEPTH: usize = 16;

thread_local! {
    /// This thread's context stack, (handle, generation) each, and how many are on it; the top
    /// is the current context.
    static STACK: Cell<[(usize, u64); DEPTH]> = const { Cell::new([(0, 0); DEPTH]) };
    static DEPTH_NOW: Cell<usize> = const { Cell::new(0) };
}

/// The context current on this thread as (handle, generation), destroyed or not; (0, 0) for none.
pub(crate) fn current() -> (usize, u64) {
    match DEPTH_NOW.with(Cell::get) {
        0 => (0, 0),
        depth => STACK.with(Cell::get)[depth - 1],
    }
}

/// Pushes a context onto this thread's stack, as making one does; false when the stack is full.
pub(crate) fn push(context: &Context) -> bool {
    let depth = DEPTH_NOW.with(Cell::get);
    if depth == DEPTH {
        return false;
    }
    let mut stack = STACK.with(Cell::get);
    stack[depth] = context.owner();
    STACK.with(|s| s.set(stack));
    DEPTH_NOW.with(|d| d.set(depth + 1));
    true
}

/// Pops this thread's current context; what was popped, (0, 0) for none.
pub(crate) fn pop() -> (usize, u64) {
    let popped = current();
    DEPTH_NOW.with(|d| d.set(d.get().saturating_sub(1)));
    popped
}

/// `cuCtxSetCurrent`: replaces the top of this thread's stack with `context` (pushes it on an
/// empty one); `None` pops the top.
pub(crate) fn set_current(context: Option<&Context>) {
    match context {
        None => {
            pop();
        }
        Some(context) => {
            let depth = DEPTH_NOW.with(Cell::get);
            if depth == 0 {
                push(context);
            } else {
                let mut stack = STACK.with(Cell::get);
                stack[depth - 1] = context.owner();
                STACK.with(|s| s.set(stack));
            }
        }
    }
}
