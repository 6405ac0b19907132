//! NVIDIA devices through the CUDA driver API (cudarc), loaded at run time.
//!
//! The driver library is opened when discovery runs, never at link time, so the engine builds
//! and runs where no CUDA is installed and reports "no CUDA driver" instead of failing; a library
//! that lacks an entry point xcd calls, or a driver older than CUDA 12.0, is named and left alone
//! (`discover`). Kernels are PTX that xcd-forms writes from the block's WGSL (or, with
//! `-trust-forms`, the block's own PTX, whose parameter list is checked first: `signature`),
//! which the driver compiles for its GPU. Arguments follow the ABI of `docs/kernels.md`
//! ([`ptx_args`]): the tile header and parameters as 32-bit words by value, then for each array
//! in binding order its pointer and its length in elements.
//!
//! Each device has a **context and a stream of its own** (not the process's primary context
//! nor the legacy default stream), made with `cuCtxCreate_v2`, which every driver has (`context`),
//! so several users of CUDA in one process (two `Par`s, or a program that also uses CUDA itself)
//! never share buffers, modules or a queue, and bringing one device back destroys nothing of
//! another's. Discovery leaves the calling thread's current context as it found it. Its buffers
//! are held to a **byte budget** ([`crate::memory`]): the memory free when it was opened, less a
//! reserve for the driver. **Bringing a device back** ([`Backend::recover`]) lets the old context
//! go on a thread of its own (destroying it may wait for a kernel that never ends) after the
//! owner thread has stopped holding it current, then makes a fresh one and runs the probe kernel
//! on it, on another thread (`recover`): a driver that hangs never holds the owner thread more
//! than a few seconds, and a try it never answers is given up and another made. Once the old
//! context is gone, the device's memory pool is trimmed of what it left and the budget raised.
//!
//! Layout: `discover` (the library, each GPU's facts, compute capability and mode), `context`
//! (the raw driver calls: contexts, the current one, the memory pool, the JIT's log), `live`
//! (a device's context and what is made on it), `recover` (the tries to bring a device back),
//! `run` (a tile's buffers, launch and wait), `signature` (a PTX entry's parameters against the
//! ABI), `outcome` (what a driver error means).
#![allow(unsafe_code)]

mod context;
mod discover;
mod live;
mod outcome;
mod recover;
mod run;
mod signature;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use xcd_wire::{BackendKind, BlockDesc, BlockId, DeviceInfo};

use discover::Gpu;
pub use discover::{ENTRY_POINTS, OLDEST_DRIVER, ptx_target};
use live::{Live, open_failure};
pub use recover::{MOST_ABANDONED, REOPEN_GIVE_UP, REOPEN_WAIT};
pub use run::{PtxArg, THREADS, ptx_args};

use crate::forms::Source;
use crate::{Backend, Discovered, EngineError, RecoverError, Served, TileJob, TileOutput};
use xcd_wire::FormPolicy;

/// The PTX a CUDA device loads for a block under `policy`: written by xcd-forms from the
/// block's WGSL (or SPIR-V), or the block's own PTX when trusted; its entry's parameters are
/// checked against the launch xcd makes either way.
pub fn ptx_form(device: &str, desc: &BlockDesc, policy: FormPolicy) -> Result<String, EngineError> {
    let ptx = match crate::forms::source(device, BackendKind::Cuda, desc, policy)? {
        Source::Made(kernel) => kernel.ptx().map_err(|e| crate::forms::write_failed(device, desc, e))?,
        Source::Carried => desc.forms.ptx.clone().unwrap_or_default(),
    };
    let refused = |reason: String| EngineError::Load { device: device.to_owned(), block: desc.name.clone(), reason };
    // cudarc panics on a NUL inside the text or the entry name; a carried form may hold one.
    if ptx.contains('\0') || desc.entry.contains('\0') {
        return Err(refused("its PTX or entry name contains a NUL byte".into()));
    }
    signature::check(&ptx, &xcd_forms::entry_symbol(&desc.entry), desc).map_err(refused)?;
    Ok(ptx)
}

/// Finds CUDA devices, or says why there are none.
pub(crate) fn discover(policy: FormPolicy, whole_bytes: u64) -> Discovered {
    let (gpus, notes) = discover::gpus();
    let mut found = Discovered { notes, ..Discovered::default() };
    // Opening a device makes its context current on this thread: the caller's is put back.
    let _keep = (!gpus.is_empty()).then(context::KeepCurrent::new);
    for (gpu, id) in gpus {
        let setup = Setup { gpu, id, policy, whole_bytes };
        match CudaDevice::open(setup) {
            Ok(device) => {
                let gpu = &device.setup.gpu;
                found.served.push(Served { name: gpu.name.clone(), pci_bus: gpu.pci_bus.clone() });
                found.devices.push(Box::new(device));
            }
            Err(note) => found.notes.push(note),
        }
    }
    found
}

/// What a device is opened with, again on each try to bring it back.
#[derive(Debug, Clone)]
struct Setup {
    gpu: Gpu,
    id: String,
    policy: FormPolicy,
    whole_bytes: u64,
}

/// One CUDA device.
pub struct CudaDevice {
    setup: Setup,
    info: DeviceInfo,
    /// The context and what is made on it; `None` once let go, until brought back.
    live: Option<Live>,
    /// The tries to bring the device back, while it is out of service.
    reopening: recover::Reopening,
    /// Set once the context let go last is gone: what it left is then taken back.
    letting_go: Option<Arc<AtomicBool>>,
}

impl CudaDevice {
    /// Opens the device; why not, as a note.
    fn open(setup: Setup) -> Result<Self, String> {
        let live = Live::open(&setup)
            .map_err(|e| format!("{}: cannot be opened ({})", setup.id, open_failure(&setup.gpu, &e)))?;
        let gpu = &setup.gpu;
        let info = DeviceInfo {
            id: setup.id.clone(),
            backend: BackendKind::Cuda,
            name: gpu.name.clone(),
            cpu: false,
            memory_total: Some(gpu.total),
            memory_free: Some(live.free_for_work()),
            max_buffer_bytes: live.memory.budget(),
            lost: None,
        };
        Ok(CudaDevice { setup, info, live: Some(live), reopening: recover::Reopening::default(), letting_go: None })
    }

    /// Once the context let go last is gone (its destruction may take a while, or never end):
    /// the device's memory pool is trimmed of what its buffers held, and the budget raised.
    fn after_let_go(&mut self) {
        let Some(live) = self.live.as_mut() else { return };
        if self.letting_go.as_ref().is_some_and(|gone| gone.load(Ordering::Acquire)) {
            self.letting_go = None;
            live.reclaim(&self.setup);
            self.info.max_buffer_bytes = live.memory.budget();
        }
    }

    /// The live context with what it is opened with, or why there is none.
    fn live(&mut self) -> Result<(&mut Live, &Setup), EngineError> {
        self.after_let_go();
        match self.live.as_mut() {
            Some(live) => Ok((live, &self.setup)),
            None => {
                Err(EngineError::DeviceLost { device: self.info.id.clone(), reason: "its context was let go".into() })
            }
        }
    }
}

impl Backend for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn recover(&mut self) -> Result<(), RecoverError> {
        if let Some(old) = self.live.take() {
            self.letting_go = Some(live::let_go(old, &self.info.id));
        }
        let live = self.reopening.step(&self.setup).map_err(RecoverError::reopen)?;
        context::make_current(&live.ctx)
            .map_err(|e| RecoverError::reopen(format!("the fresh context cannot be made current ({e})")))?;
        self.info.max_buffer_bytes = live.memory.budget();
        self.live = Some(live);
        self.reopening = recover::Reopening::default();
        self.after_let_go();
        Ok(())
    }

    fn memory_free(&mut self) -> Option<u64> {
        self.after_let_go();
        self.live.as_ref().map(Live::free_for_work)
    }

    fn load(&mut self, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let (live, setup) = self.live()?;
        live.load(setup, id, desc)
    }

    fn run(
        &mut self,
        desc: &BlockDesc,
        job: &TileJob,
        deadline: std::time::Duration,
    ) -> Result<TileOutput, EngineError> {
        let (live, setup) = self.live()?;
        live.run(setup, desc, job, deadline)
    }
}
