//! A stream: its work runs in order on a thread of its own, as a GPU runs a stream's work while
//! the host goes on. Copies in, memsets, frees and kernel launches queue here; a kernel runs
//! through the PTX interpreter until it ends, faults its context, or its context is destroyed.
//! Owns the order and progress of a stream's work; the memory it works on is `memory`'s.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};

use xcd_ptxsim::{Arg, Program, SimError};

use crate::code;
use crate::context::Context;
use crate::memory::memory;

/// Instructions one GPU thread may run: in effect no limit (a kernel that never ends runs until
/// its context is destroyed).
const BUDGET: u64 = 1 << 50;

/// One launch argument as the kernel declares it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param {
    Word(u32),
    Pointer(u64),
}

/// One piece of a stream's work.
#[derive(Debug)]
pub(crate) enum Work {
    Set { pointer: u64, value: u8, len: usize },
    Put { pointer: u64, data: Vec<u8> },
    Free { pointer: u64 },
    Launch { program: Arc<Program>, grid: u32, block: u32, params: Vec<Param> },
}

/// How far a stream's work has gone: pieces queued, pieces done.
#[derive(Debug, Default)]
struct Progress {
    queued: u64,
    done: u64,
}

/// What a stream and its worker share: the progress, and a signal when it moves.
#[derive(Debug, Default)]
struct Shared {
    progress: Mutex<Progress>,
    moved: Condvar,
}

impl Shared {
    fn progress(&self) -> parking_lot::MutexGuard<'_, Progress> {
        self.progress.lock()
    }
}

/// A stream and its worker thread. Its queued work goes on after it is destroyed, as on a GPU.
#[derive(Debug)]
pub(crate) struct Stream {
    context: Arc<Context>,
    tx: Mutex<mpsc::Sender<Work>>,
    shared: Arc<Shared>,
}

impl Stream {
    /// A stream of `context`, with its worker started.
    pub(crate) fn start(context: Arc<Context>) -> Result<Arc<Stream>, i32> {
        let (tx, rx) = mpsc::channel::<Work>();
        let shared = Arc::new(Shared::default());
        let (worker, ctx) = (shared.clone(), context.clone());
        std::thread::Builder::new()
            .name("fake-cuda stream".into())
            .spawn(move || {
                while let Ok(work) = rx.recv() {
                    if ctx.check().is_ok() && !ctx.stop.load(Ordering::Acquire) {
                        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&ctx, work)));
                        if ran.is_err() {
                            ctx.set_fault(code::LAUNCH_FAILED, "the interpreter panicked");
                        }
                    }
                    worker.progress().done += 1;
                    worker.moved.notify_all();
                }
            })
            .map_err(|_| code::OUT_OF_MEMORY)?;
        Ok(Arc::new(Stream { context, tx: Mutex::new(tx), shared }))
    }

    /// The context it belongs to, as (handle, generation).
    pub(crate) fn owner(&self) -> (usize, u64) {
        self.context.owner()
    }

    /// Its context.
    pub(crate) fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// Queues `work`.
    pub(crate) fn push(&self, work: Work) {
        let mut progress = self.shared.progress();
        progress.queued += 1;
        let _ = self.tx.lock().send(work);
    }

    /// Pieces queued so far.
    pub(crate) fn queued(&self) -> u64 {
        self.shared.progress().queued
    }

    /// Whether the first `upto` pieces are done.
    pub(crate) fn reached(&self, upto: u64) -> bool {
        self.shared.progress().done >= upto
    }

    /// Waits until every piece queued so far is done (forever, behind a kernel that never ends,
    /// as the real driver does), then says whether the context is still usable.
    pub(crate) fn finish(&self) -> Result<(), i32> {
        let mut progress = self.shared.progress();
        while progress.done < progress.queued {
            self.shared.moved.wait(&mut progress);
        }
        drop(progress);
        self.context.check()
    }
}

/// Runs one piece of work; a kernel's fault sticks to the context.
fn run(context: &Context, work: Work) {
    match work {
        Work::Set { pointer, value, len } => {
            write(context, pointer, |bytes| bytes.get_mut(..len).map(|b| b.fill(value)).is_some())
        }
        Work::Put { pointer, data } => {
            write(context, pointer, |bytes| bytes.get_mut(..data.len()).map(|b| b.copy_from_slice(&data)).is_some())
        }
        Work::Free { pointer } => {
            memory().allocations.remove(&pointer);
        }
        Work::Launch { program, grid, block, params } => launch(context, &program, grid, block, &params),
    }
}

/// Changes an allocation's bytes from its start; a pointer that is not one faults the context.
fn write(context: &Context, pointer: u64, change: impl FnOnce(&mut Vec<u8>) -> bool) {
    let done = memory().allocations.get_mut(&pointer).is_some_and(|a| change(&mut a.bytes));
    if !done {
        context.set_fault(code::ILLEGAL_ADDRESS, &format!("a copy or memset to {pointer:#x}"));
    }
}

/// Runs a kernel over the allocations its pointers name, taken out while it runs.
fn launch(context: &Context, program: &Program, grid: u32, block: u32, params: &[Param]) {
    let mut pointers: Vec<u64> = Vec::new();
    let mut args = Vec::new();
    for param in params {
        args.push(match *param {
            Param::Word(w) => Arg::Word(w),
            Param::Pointer(p) => match pointers.iter().position(|q| *q == p) {
                Some(k) => Arg::Buffer(k),
                None => {
                    pointers.push(p);
                    Arg::Buffer(pointers.len() - 1)
                }
            },
        });
    }
    let mut buffers = Vec::new();
    {
        let mut memory = memory();
        for pointer in &pointers {
            match memory.allocations.get_mut(pointer) {
                Some(a) => buffers.push(std::mem::take(&mut a.bytes)),
                None => buffers.push(Vec::new()),
            }
        }
    }
    context.running.fetch_add(1, Ordering::AcqRel);
    let result = program.run_until(grid, block, &args, &mut buffers, BUDGET, &context.stop);
    context.running.fetch_sub(1, Ordering::AcqRel);
    {
        let mut memory = memory();
        for (pointer, bytes) in pointers.iter().zip(buffers) {
            if let Some(a) = memory.allocations.get_mut(pointer) {
                a.bytes = bytes;
            }
        }
    }
    match result {
        Ok(()) | Err(SimError::Stopped) => {}
        Err(e @ SimError::OutOfBounds { .. }) => context.set_fault(code::ILLEGAL_ADDRESS, &e.to_string()),
        Err(e) => context.set_fault(code::LAUNCH_FAILED, &e.to_string()),
    }
}
