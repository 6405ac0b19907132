//! The stand-in driver's state: contexts (in slots whose handles are given out again once a
//! context is destroyed, as a real driver's freed addresses are), modules and their functions,
//! streams and events, behind one lock. Owns which context a call works in and when a call on
//! one fails; memory is `memory`'s, running work `stream`'s.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use xcd_ptxsim::Program;

use crate::code;
use crate::context::{Context, current, push};
use crate::memory::memory;
use crate::stream::Stream;

/// A context slot: the context living in it, and how many have lived there.
#[derive(Debug, Default)]
struct Slot {
    generation: u64,
    context: Option<Arc<Context>>,
}

/// A loaded module's function.
#[derive(Debug)]
pub(crate) struct Function {
    pub(crate) program: Arc<Program>,
    pub(crate) owner: (usize, u64),
}

/// An event: the stream it was recorded on and how much of that stream's work came before it.
#[derive(Debug, Default)]
pub(crate) struct Event {
    pub(crate) recorded: Option<(Arc<Stream>, u64)>,
}

/// Everything the driver holds.
#[derive(Debug, Default)]
pub(crate) struct Driver {
    pub(crate) initialized: bool,
    slots: Vec<Slot>,
    /// Context creations asked for so far in this process.
    pub(crate) asked: u64,
    /// Each device's primary context (the one a program's runtime shares), with its references.
    pub(crate) primary: HashMap<i32, (Arc<Context>, u32)>,
    /// Modules: their functions' handles, and whose they are.
    pub(crate) modules: HashMap<usize, (Vec<usize>, (usize, u64))>,
    pub(crate) functions: HashMap<usize, Function>,
    pub(crate) streams: HashMap<usize, Arc<Stream>>,
    pub(crate) events: HashMap<usize, Event>,
    next_handle: usize,
}

/// The driver, locked.
pub(crate) fn driver() -> MutexGuard<'static, Driver> {
    static DRIVER: OnceLock<Mutex<Driver>> = OnceLock::new();
    DRIVER.get_or_init(Mutex::default).lock()
}

impl Driver {
    /// A fresh handle for a module, function, stream or event.
    pub(crate) fn handle(&mut self) -> usize {
        self.next_handle += 1;
        0x10_0000 + self.next_handle * 16
    }

    /// The live context with handle `handle`.
    pub(crate) fn context(&self, handle: usize) -> Result<Arc<Context>, i32> {
        let slot = (handle >> 8).checked_sub(1).and_then(|i| self.slots.get(i));
        slot.and_then(|s| s.context.clone()).ok_or(code::INVALID_CONTEXT)
    }

    /// The context current on this thread, if it is usable: a destroyed one (even one whose
    /// handle now names another context) gives `CONTEXT_IS_DESTROYED`, a faulted one its fault.
    pub(crate) fn current(&self) -> Result<Arc<Context>, i32> {
        let (handle, generation) = current();
        if handle == 0 {
            return Err(code::INVALID_CONTEXT);
        }
        let context = self.context(handle).map_err(|_| code::CONTEXT_IS_DESTROYED)?;
        if context.generation != generation {
            return Err(code::CONTEXT_IS_DESTROYED);
        }
        context.check()?;
        Ok(context)
    }

    /// Live contexts on `device`.
    pub(crate) fn contexts_on(&self, device: i32) -> usize {
        self.slots.iter().filter_map(|s| s.context.as_ref()).filter(|c| c.device == device).count()
    }

    /// Makes a context on `device` in the first free slot, pushed onto this thread's stack.
    pub(crate) fn create(&mut self, device: i32) -> Arc<Context> {
        let context = self.make(device);
        push(&context);
        context
    }

    /// Makes a context on `device` in the first free slot.
    pub(crate) fn make(&mut self, device: i32) -> Arc<Context> {
        let index = match self.slots.iter().position(|s| s.context.is_none()) {
            Some(index) => index,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[index];
        slot.generation += 1;
        let context = Arc::new(Context::new((index + 1) << 8, slot.generation, device));
        slot.context = Some(context.clone());
        context
    }

    /// Forgets a destroyed context and everything made on it; its memory is free again.
    pub(crate) fn forget(&mut self, context: &Context) {
        let owner = context.owner();
        if let Some(slot) = (context.handle >> 8).checked_sub(1).and_then(|i| self.slots.get_mut(i))
            && slot.generation == context.generation
        {
            slot.context = None;
        }
        let freed = memory().forget(owner);
        self.modules.retain(|_, (_, o)| *o != owner);
        self.functions.retain(|_, f| f.owner != owner);
        self.streams.retain(|_, s| s.owner() != owner);
        crate::log(format_args!("context {:#x} destroyed, {freed} allocations with it", context.handle));
    }
}
