//! NVIDIA devices through the CUDA driver API (cudarc), loaded at run time.
//!
//! The driver library is opened when discovery runs, never at link time, so the engine builds
//! and runs where no CUDA is installed and reports "no CUDA driver" instead of failing. Kernels
//! are PTX that xcd-forms writes from the block's WGSL (or, with `-trust-forms`, the block's own
//! PTX), which the driver compiles for its GPU. Arguments follow the ABI of `docs/kernels.md`
//! ([`ptx_args`]): the tile header and parameters as 32-bit words by value, then for each array
//! in binding order its pointer and its length in elements.
//!
//! Each device has a **context and a stream of its own** (not the process's primary context
//! nor the legacy default stream), so several users of CUDA in one process (two `Par`s, or a
//! program that also uses CUDA itself) never share buffers, modules or a queue, and bringing one
//! device back destroys nothing of another's. Its buffers are held to a **byte budget**
//! ([`crate::memory`]): the memory free when it was opened, less a reserve for the driver.
//! **Bringing a device back** ([`Backend::recover`]) lets the old context go on a thread of its
//! own (destroying it may wait for a kernel that never ends), makes a fresh one and runs the
//! probe kernel on it, on another thread, waiting at most [`REOPEN_WAIT`]: a driver that hangs
//! never hangs the device's owner thread, and a late answer is taken at the next try.
//!
//! Layout: `discover` (the library, each GPU's facts and name, compute capability), `run` (a
//! tile's buffers, launch and wait), `outcome` (what a driver error means).
#![allow(unsafe_code)]

mod discover;
mod outcome;
mod run;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError};
use xcd_wire::{BackendKind, BlockDesc, BlockId, DeviceInfo};

pub use discover::ptx_target;
use discover::{Gpu, too_new};
pub use run::{PtxArg, THREADS, ptx_args};

use crate::forms::{FormPolicy, Source};
use crate::memory::Memory;
use crate::{Backend, EngineError, Found, Served, TileJob, TileOutput};

/// How long the owner thread waits for a fresh context and its probe when bringing a device
/// back; past that the try goes on by itself and the next try takes its answer.
pub const REOPEN_WAIT: Duration = Duration::from_secs(20);

/// The PTX a CUDA device loads for a block under `policy`: written by xcd-forms from the
/// block's WGSL (or SPIR-V), or the block's own PTX when trusted.
pub fn ptx_form(device: &str, desc: &BlockDesc, policy: FormPolicy) -> Result<String, EngineError> {
    let ptx = match crate::forms::source(device, BackendKind::Cuda, desc, policy)? {
        Source::Made(kernel) => kernel.ptx().map_err(|e| crate::forms::write_failed(device, desc, e))?,
        Source::Carried => desc.forms.ptx.clone().unwrap_or_default(),
    };
    // cudarc panics on a NUL inside the text or the entry name; a carried form may hold one.
    if ptx.contains('\0') || desc.entry.contains('\0') {
        return Err(EngineError::Load {
            device: device.to_owned(),
            block: desc.name.clone(),
            reason: "its PTX or entry name contains a NUL byte".into(),
        });
    }
    Ok(ptx)
}

/// Finds CUDA devices, or says why there are none.
pub(crate) fn discover(policy: FormPolicy, whole_bytes: u64) -> Found {
    let (gpus, notes) = discover::gpus();
    let mut found = Found { notes, ..Found::default() };
    for (gpu, id) in gpus {
        let setup = Setup { gpu, id, policy, whole_bytes };
        match CudaDevice::open(setup) {
            Ok(device) => {
                let gpu = &device.setup.gpu;
                found.served.push(Served { name: gpu.name.clone(), pci_bus: gpu.pci_bus.clone() });
                found.devices.push(Box::new(device));
            }
            Err((setup, e)) => found.notes.push(format!("{}: cannot be opened ({e})", setup.id)),
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
    /// A try to bring the device back that ran past [`REOPEN_WAIT`], still going.
    pending: Option<mpsc::Receiver<Result<Live, String>>>,
}

/// A context of this process's own on the device, and everything made on it.
struct Live {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: HashMap<BlockId, CudaFunction>,
    memory: Memory<CudaSlice<u8>>,
}

/// Bytes of a device's free memory left to the driver (its own allocations, kernels' local
/// memory): 256 MiB or 1/32 of the device, whichever is more.
fn reserve(total: u64) -> u64 {
    (256 << 20u64).max(total / 32)
}

impl Live {
    /// A fresh context and stream on the GPU, with a budget of what is free less the reserve.
    fn open(setup: &Setup) -> Result<Live, DriverError> {
        let ctx = CudaContext::new_non_primary(setup.gpu.ordinal, 0)?;
        // SAFETY: every buffer of this context is made, used and freed on its one stream, in
        // order, so cudarc's events that order work between streams are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let free = ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(setup.gpu.total);
        let budget = free.saturating_sub(reserve(setup.gpu.total));
        Ok(Live { ctx, stream, kernels: HashMap::new(), memory: Memory::new(budget, setup.whole_bytes) })
    }

    /// Bytes free for work: what the driver says is free and what this device keeps, to its
    /// budget.
    fn free_for_work(&self) -> u64 {
        let free = self.ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(0);
        (free + self.memory.held()).min(self.memory.budget())
    }

    fn load(&mut self, setup: &Setup, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let ptx = ptx_form(&setup.id, desc, setup.policy)?;
        if let Some(reason) = too_new(&ptx, setup.gpu.capability) {
            return Err(EngineError::Load { device: setup.id.clone(), block: desc.name.clone(), reason });
        }
        let fail = |e| outcome::load_error(&setup.id, &desc.name, e);
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(fail)?;
        let function = module.load_function(&desc.entry).map_err(fail)?;
        self.kernels.insert(id, function);
        Ok(())
    }

    /// Runs the probe ([`crate::probe`]): the check that a fresh context computes.
    fn probe(mut self, setup: &Setup) -> Result<Live, String> {
        let desc = crate::probe::block();
        let job = crate::probe::job(&desc);
        self.load(setup, job.block, &desc).map_err(|e| e.to_string())?;
        crate::probe::check(self.run(setup, &desc, &job, crate::probe::DEADLINE))?;
        self.kernels.remove(&job.block);
        self.memory.forget(&job.block);
        Ok(self)
    }
}

impl CudaDevice {
    fn open(setup: Setup) -> Result<Self, (Setup, DriverError)> {
        let live = match Live::open(&setup) {
            Ok(live) => live,
            Err(e) => return Err((setup, e)),
        };
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
        Ok(CudaDevice { setup, info, live: Some(live), pending: None })
    }

    /// The live context with what it is opened with, or why there is none.
    fn live(&mut self) -> Result<(&mut Live, &Setup), EngineError> {
        match self.live.as_mut() {
            Some(live) => Ok((live, &self.setup)),
            None => {
                Err(EngineError::DeviceLost { device: self.info.id.clone(), reason: "its context was let go".into() })
            }
        }
    }

    /// Starts a try to bring the device back on a thread of its own: the old context is let go
    /// (on another thread: destroying it may wait for its kernel), a fresh one made and probed.
    fn start_reopening(&mut self) -> mpsc::Receiver<Result<Live, String>> {
        if let Some(old) = self.live.take() {
            let spawned = std::thread::Builder::new().name("xc-cuda let go".into()).spawn(move || drop(old));
            if let Err(e) = spawned {
                tracing::warn!(device = %self.info.id, "the old context is kept, no thread to let it go: {e}");
            }
        }
        let (tx, rx) = mpsc::channel();
        let setup = self.setup.clone();
        let spawned = std::thread::Builder::new().name("xc-cuda reopen".into()).spawn(move || {
            let fresh = Live::open(&setup)
                .map_err(|e| format!("a fresh context could not be made ({e})"))
                .and_then(|live| live.probe(&setup));
            let _ = tx.send(fresh);
        });
        if let Err(e) = spawned {
            tracing::warn!(device = %self.info.id, "no thread to bring the device back: {e}");
        }
        rx
    }
}

impl Backend for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn recover(&mut self) -> Result<(), String> {
        let rx = match self.pending.take() {
            Some(rx) => rx,
            None => self.start_reopening(),
        };
        match rx.recv_timeout(REOPEN_WAIT) {
            Ok(Ok(live)) => {
                self.info.max_buffer_bytes = live.memory.budget();
                self.live = Some(live);
                Ok(())
            }
            Ok(Err(why)) => Err(why),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.pending = Some(rx);
                Err(format!(
                    "the driver gave no fresh context that runs a probe within {} s (the old kernel may still hold the GPU); the try goes on",
                    REOPEN_WAIT.as_secs()
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err("the thread bringing the device back stopped".into()),
        }
    }

    fn memory_free(&mut self) -> Option<u64> {
        self.live.as_ref().map(Live::free_for_work)
    }

    fn load(&mut self, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let (live, setup) = self.live()?;
        live.load(setup, id, desc)
    }

    fn run(&mut self, desc: &BlockDesc, job: &TileJob, deadline: Duration) -> Result<TileOutput, EngineError> {
        let (live, setup) = self.live()?;
        live.run(setup, desc, job, deadline)
    }
}
