//! A device's live context and what is made on it: its stream, its loaded kernels and its
//! buffers held to a byte budget. Owns opening one (a context of this process's own, the device's
//! memory pool trimmed of what an old context left, the budget), loading a block (the JIT's own
//! words when it refuses), the probe a fresh context must pass, and letting one go; running a
//! tile is `run`'s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError};
use xcd_wire::{BlockDesc, BlockId};

use super::discover::{Gpu, too_new};
use super::{Setup, context, outcome, ptx_form};
use crate::EngineError;
use crate::memory::Memory;

/// At most this much of the JIT's log goes into an error.
const LOG_CHARS: usize = 4000;

/// A context of this process's own on the device, and everything made on it.
pub(super) struct Live {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) kernels: HashMap<BlockId, CudaFunction>,
    pub(super) memory: Memory<CudaSlice<u8>>,
}

/// Bytes of a device's free memory left to the driver (its own allocations, kernels' local
/// memory): 256 MiB or 1/32 of the device, whichever is more.
fn reserve(total: u64) -> u64 {
    (256 << 20u64).max(total / 32)
}

/// Why a device's context could not be made, in words that say what to do when the compute
/// mode is the reason.
pub(super) fn open_failure(gpu: &Gpu, e: &DriverError) -> String {
    if gpu.exclusive && e.0 == CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE {
        return format!(
            "{e}: the GPU is in exclusive-process compute mode, so it takes one context at a time, and another holds it (another program, or in this one another user of the GPU or a context not yet let go): run one xcd or program per GPU, or allow sharing it (as root, `nvidia-smi -i {} -c DEFAULT`)",
            gpu.ordinal
        );
    }
    e.to_string()
}

impl Live {
    /// A fresh context and stream on the GPU, with a budget of what is free less the reserve.
    pub(super) fn open(setup: &Setup) -> Result<Live, DriverError> {
        let ctx = context::create(setup.gpu.ordinal)?;
        // SAFETY: every buffer of this context is made, used and freed on its one stream, in
        // order, so cudarc's events that order work between streams are not needed.
        unsafe { ctx.disable_event_tracking() };
        // (Event tracking is off before the stream is made: with it on, cudarc would call
        // cuCtxSynchronize here and cuStreamWaitEvent on each buffer, which ENTRY_POINTS leaves out.)
        let stream = ctx.new_stream()?;
        let free = ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(setup.gpu.total);
        let budget = free.saturating_sub(reserve(setup.gpu.total));
        Ok(Live { ctx, stream, kernels: HashMap::new(), memory: Memory::new(budget, setup.whole_bytes) })
    }

    /// Bytes free for work: what the driver says is free and what this device keeps, to its
    /// budget.
    pub(super) fn free_for_work(&self) -> u64 {
        let free = self.ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(0);
        (free + self.memory.held()).min(self.memory.budget())
    }

    /// Compiles a block's PTX and finds its kernel by the name every form gives it.
    pub(super) fn load(&mut self, setup: &Setup, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let ptx = ptx_form(&setup.id, desc, setup.policy)?;
        if let Some(reason) = too_new(&ptx, setup.gpu.capability) {
            return Err(EngineError::Load { device: setup.id.clone(), block: desc.name.clone(), reason });
        }
        let module = match self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx.clone())) {
            Ok(module) => module,
            Err(e) => return Err(self.refused(setup, desc, &ptx, e)),
        };
        let symbol = xcd_forms::entry_symbol(&desc.entry);
        let function = module.load_function(&symbol).map_err(|e| outcome::load_error(&setup.id, &desc.name, e))?;
        self.kernels.insert(id, function);
        Ok(())
    }

    /// What a module that did not load means: a lost device, or the block refused with the
    /// JIT's own words.
    fn refused(&self, setup: &Setup, desc: &BlockDesc, ptx: &str, e: DriverError) -> EngineError {
        let mut error = outcome::load_error(&setup.id, &desc.name, e);
        if let EngineError::Load { reason, .. } = &mut error
            && let Some(log) = context::jit_log(ptx)
        {
            let long = log.chars().count() > LOG_CHARS;
            let mut log: String = log.chars().take(LOG_CHARS).collect();
            if long {
                log.push('…');
            }
            reason.push_str(&format!("; the driver's PTX compiler says: {log}"));
        }
        error
    }

    /// Takes back what an old context left once it is gone: the device's memory pool trimmed
    /// of the memory its buffers held, and the budget raised to what is now free.
    pub(super) fn reclaim(&mut self, setup: &Setup) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        context::trim_pool(self.ctx.cu_device());
        if let Ok((free, _)) = self.ctx.mem_get_info() {
            self.memory.grow_budget((free as u64 + self.memory.held()).saturating_sub(reserve(setup.gpu.total)));
        }
    }

    /// Runs the probe ([`crate::probe`]): the check that a fresh context computes.
    pub(super) fn probe(mut self, setup: &Setup) -> Result<Live, String> {
        let desc = crate::probe::block();
        let job = crate::probe::job(&desc);
        self.load(setup, job.block, &desc).map_err(|e| e.to_string())?;
        crate::probe::check(self.run(setup, &desc, &job, crate::probe::DEADLINE))?;
        self.kernels.remove(&job.block);
        self.memory.forget(&job.block);
        Ok(self)
    }
}

/// Lets a context go: this thread keeps it current no longer, and it is destroyed on a thread of
/// its own (destroying it may wait for a kernel that never ends; without a thread it is kept,
/// never destroyed here). The flag is set once it is gone.
pub(super) fn let_go(old: Live, device: &str) -> Arc<AtomicBool> {
    context::clear_current();
    let gone = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Live>();
    let done = gone.clone();
    let spawned = std::thread::Builder::new().name("xc-cuda let go".into()).spawn(move || {
        if let Ok(old) = rx.recv() {
            drop(old);
            done.store(true, Ordering::Release);
        }
    });
    let kept = match spawned {
        Ok(_) => tx.send(old).err().map(|back| back.0),
        Err(e) => {
            tracing::warn!(device = %device, "the old context is kept, no thread to let it go: {e}");
            Some(old)
        }
    };
    std::mem::forget(kept);
    gone
}
