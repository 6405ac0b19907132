//! One owner thread per device; callers hold a cheap [`DeviceHandle`].
//!
//! A GPU API's device state (queues, pipelines, buffers) is driven by one thread at a time, under
//! one lock (`device::Core`). The owner thread takes commands from a channel in order and runs
//! each with the lock held; handles are clones of the channel's sender plus the device's
//! description, so the daemon's tasks and the program's workers share a device freely.
//!
//! A caller that blocks for its tile anyway ([`DeviceHandle::run_blocking`]: the program's GPU
//! worker) runs it on its own thread instead, when the backend allows any thread
//! ([`Backend::any_thread`]), nothing waits for the owner and the lock is free: that saves the
//! owner's wake-up and the caller's, about a tenth of a small tile on llvmpipe. Async callers
//! (the daemon's streams) always go through the owner, so a tile that hangs never holds a worker
//! thread of their runtime, and a stream goes on reading frames while its tiles run.
//!
//! A device goes **out of service** when a tile runs past the tile deadline (a kernel that never
//! ends), when the driver reports it lost (a faulting kernel on CUDA), or when its backend
//! panics; every later command then says why, and [`DeviceHandle::status`] reports it in
//! `lost`. The owner then tries to bring it back ([`Backend::recover`]) after 5 s, then 10 s, …
//! up to every 5 minutes; a recovered device loads again every block it had and serves as before.
//! A tile that hangs on a blocking caller's thread holds it until the deadline, just as waiting
//! for the owner's answer would.
//!
//! When the last handle is dropped, the drop closes the channel and waits for the owner thread
//! to finish destroying the device (one out of service is let go instead: destroying it would
//! wait for the kernel that never ends). Without that wait the process could exit while a driver is
//! still tearing a device down, and drivers' exit-time destructors crash on that (seen with
//! llvmpipe: a segfault after `main` returned, in about one run of three under load).

mod device;
#[cfg(test)]
mod tests;

use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use xcd_wire::{BlockDesc, BlockId, DeviceInfo};

use self::device::Core;
use crate::{CheckedJob, EngineError, Loaded, RecoverError, TileJob, TileOutput};

/// One device of one GPU API, driven by one thread at a time.
///
/// Implementations keep their own compiled kernels and buffers between calls, and may assume
/// that a job fits its block ([`TileJob::fits`]: checked at the daemon's edge or by the owner)
/// before `run` is called. The owner does not look a checked job's block up: `run` must still
/// refuse a block it has not loaded ([`EngineError::NotLoaded`]) before it touches memory.
pub trait Backend: Send + 'static {
    /// The device's description, as discovered.
    fn info(&self) -> &DeviceInfo;
    /// Device memory free for work now, in bytes, where the driver tells: what the driver says
    /// is free, and what the device keeps between tiles that it would let go for work.
    fn memory_free(&mut self) -> Option<u64>;
    /// Compiles the block's kernel for this device from the form it takes.
    fn load(&mut self, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError>;
    /// Runs one tile of a loaded block and reads its results back, giving up with
    /// [`EngineError::Deadline`] once the device has worked on it for `deadline`.
    fn run(&mut self, desc: &BlockDesc, job: &TileJob, deadline: Duration) -> Result<TileOutput, EngineError>;
    /// Brings an out-of-service device back: a fresh device on the same hardware, checked with
    /// a small kernel of its own, with nothing loaded. Work stuck on the old device is left to
    /// the driver, never waited for. The default cannot.
    fn recover(&mut self) -> Result<(), RecoverError> {
        Err(RecoverError::Unsupported)
    }
    /// Whether `run` may be called from any thread (one at a time), not only the owner's. The
    /// default is no: the owner thread alone drives the device.
    fn any_thread(&self) -> bool {
        false
    }
}

/// How long a tile may run on a device before the device is taken out of service, unless the
/// caller says otherwise ([`spawn_with`]).
pub const DEFAULT_TILE_DEADLINE: Duration = Duration::from_secs(60);

/// A tile for the owner: checked at the caller's edge against its loaded block, or to be checked
/// here (a program's, whose block the engine finds).
pub(super) enum Job {
    Checked(CheckedJob),
    Unchecked(TileJob),
}

enum Command {
    Status(oneshot::Sender<DeviceInfo>),
    Load(Arc<BlockDesc>, oneshot::Sender<Result<Loaded, EngineError>>),
    Run(Job, oneshot::Sender<Result<TileOutput, EngineError>>),
    /// Sent by the owner's own timer while the device is out of service.
    Recover,
}

/// A cheap, cloneable way to reach one device.
#[derive(Clone, Debug)]
pub struct DeviceHandle {
    /// The device as discovered; `status` gives fresh memory figures.
    info: Arc<DeviceInfo>,
    /// The channel to the owner thread and the device's lock; the last clone to drop stops the
    /// thread and waits.
    owner: Arc<Owner>,
    /// Why the device is out of service, while it is: written under the device's lock.
    lost: Arc<Mutex<Option<String>>>,
}

/// What the owner thread and the handles share.
struct Shared {
    /// The device, locked for each command.
    core: Mutex<Core>,
    /// Commands sent to the owner thread and not yet served: while any wait, tiles go to it too.
    queued: AtomicUsize,
    /// Whether the backend lets callers run tiles on their own threads.
    any_thread: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock()
    }
}

/// The sending end of an owner thread's channel, and the thread, joined on drop.
struct Owner {
    /// Commands to the owner thread, served in order; taken on drop to close the channel.
    tx: Option<mpsc::UnboundedSender<Command>>,
    /// The owner thread, joined on drop so the device is gone before the drop returns.
    thread: Option<std::thread::JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner").field("queued", &self.shared.queued.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the owner thread for `backend` with the default tile deadline.
pub fn spawn(backend: Box<dyn Backend>) -> DeviceHandle {
    spawn_with(backend, DEFAULT_TILE_DEADLINE)
}

/// Starts the owner thread for `backend`, whose tiles may each run for `deadline`.
pub fn spawn_with(backend: Box<dyn Backend>, deadline: Duration) -> DeviceHandle {
    let info = Arc::new(backend.info().clone());
    let any_thread = backend.any_thread();
    let (tx, rx) = mpsc::unbounded_channel();
    let name = format!("xc-device {}", info.id);
    let lost = Arc::new(Mutex::new(None));
    let core = Core::new(backend, tx.downgrade(), deadline, lost.clone());
    let shared = Arc::new(Shared { core: Mutex::new(core), queued: AtomicUsize::new(0), any_thread });
    let served = shared.clone();
    let thread = match std::thread::Builder::new().name(name).spawn(move || serve(&served, rx)) {
        Ok(thread) => Some(thread),
        Err(e) => {
            // Without a thread the receiver is dropped and every command reports the device lost.
            tracing::error!(device = %info.id, "cannot start the device's thread: {e}");
            None
        }
    };
    DeviceHandle { info, owner: Arc::new(Owner { tx: Some(tx), thread, shared }), lost }
}

/// The owner thread: serves commands in order, then destroys the device.
fn serve(shared: &Shared, mut rx: mpsc::UnboundedReceiver<Command>) {
    // A command is done once the device is settled and unlocked: only then is its caller
    // answered, so that the caller's next tile finds the owner idle.
    let done = |mut core: MutexGuard<'_, Core>| {
        core.settle();
        drop(core);
        shared.queued.fetch_sub(1, Ordering::AcqRel);
    };
    while let Some(command) = rx.blocking_recv() {
        let mut core = shared.lock();
        match command {
            Command::Status(reply) => {
                let info = core.status();
                done(core);
                if let Some(info) = info {
                    let _ = reply.send(info);
                }
            }
            Command::Load(desc, reply) => {
                let result = core.load(&desc);
                done(core);
                let _ = reply.send(result);
            }
            Command::Run(job, reply) => {
                let result = core.run(&job);
                done(core);
                let _ = reply.send(result);
            }
            Command::Recover => {
                // Sent by the timer, not counted among the callers' commands.
                core.recover();
                core.settle();
            }
        }
    }
    let mut core = shared.lock();
    if let Some(backend) = core.backend.take() {
        if core.lost.is_some() {
            // Destroying a device that still runs a kernel waits for the kernel, which may never
            // end: an out-of-service device is let go as the process ends, not destroyed.
            std::mem::forget(backend);
        } else {
            drop(backend);
        }
    }
}

impl DeviceHandle {
    /// The device as discovered (memory free as it was then).
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Why the device is out of service, while it is (the last word on it, without a wait).
    pub fn out_of_service(&self) -> Option<String> {
        self.lost.lock().clone()
    }

    fn lost(&self) -> EngineError {
        EngineError::DeviceLost { device: self.info.id.clone(), reason: "its thread has stopped".into() }
    }

    fn send<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<oneshot::Receiver<T>, EngineError> {
        let (reply, rx) = oneshot::channel();
        let tx = self.owner.tx.as_ref().ok_or_else(|| self.lost())?;
        self.owner.shared.queued.fetch_add(1, Ordering::AcqRel);
        tx.send(make(reply)).map_err(|_| {
            self.owner.shared.queued.fetch_sub(1, Ordering::AcqRel);
            self.lost()
        })?;
        Ok(rx)
    }

    /// Runs `job` on this thread if it may (see the module's doc); `None` if it must go to the
    /// owner.
    fn run_here(&self, job: &Job) -> Option<Result<TileOutput, EngineError>> {
        let shared = &self.owner.shared;
        if !shared.any_thread || shared.queued.load(Ordering::Acquire) != 0 {
            return None;
        }
        let mut core = shared.core.try_lock()?;
        let result = core.run(job);
        core.settle();
        Some(result)
    }

    /// The device as discovered, with why it is out of service, while it is: answered here, since
    /// the owner may be busy trying to bring it back (a driver that hangs never hangs status).
    fn status_while_lost(&self) -> Option<DeviceInfo> {
        let reason = self.out_of_service()?;
        Some(DeviceInfo { lost: Some(reason), memory_free: None, ..(*self.info).clone() })
    }

    /// The device with fresh memory figures; while it is out of service, at once, with why.
    pub async fn status(&self) -> Result<DeviceInfo, EngineError> {
        if let Some(info) = self.status_while_lost() {
            return Ok(info);
        }
        self.send(Command::Status)?.await.map_err(|_| self.lost())
    }

    /// Loads a block (compiles its kernel) unless already loaded; returns it as loaded, to check
    /// its tiles against ([`TileJob::check`]).
    pub async fn load(&self, desc: Arc<BlockDesc>) -> Result<Loaded, EngineError> {
        self.send(|r| Command::Load(desc, r))?.await.map_err(|_| self.lost())?
    }

    /// Runs one checked tile of a loaded block on the owner thread, neither checking it again nor
    /// finding its block (the backend finds its kernel).
    pub async fn run(&self, job: CheckedJob) -> Result<TileOutput, EngineError> {
        self.send(|r| Command::Run(Job::Checked(job), r))?.await.map_err(|_| self.lost())?
    }

    /// [`status`](Self::status) for callers outside an async runtime.
    pub fn status_blocking(&self) -> Result<DeviceInfo, EngineError> {
        if let Some(info) = self.status_while_lost() {
            return Ok(info);
        }
        self.send(Command::Status)?.blocking_recv().map_err(|_| self.lost())
    }

    /// [`load`](Self::load) for callers outside an async runtime; returns the block's id.
    pub fn load_blocking(&self, desc: Arc<BlockDesc>) -> Result<BlockId, EngineError> {
        let loaded = self.send(|r| Command::Load(desc, r))?.blocking_recv().map_err(|_| self.lost())??;
        Ok(loaded.id())
    }

    /// [`run`](Self::run) for callers outside an async runtime, with a job the engine checks
    /// against its loaded block: on this thread when the device allows it and is idle, else on
    /// the owner thread.
    pub fn run_blocking(&self, job: TileJob) -> Result<TileOutput, EngineError> {
        let job = Job::Unchecked(job);
        if let Some(result) = self.run_here(&job) {
            return result;
        }
        self.send(|r| Command::Run(job, r))?.blocking_recv().map_err(|_| self.lost())?
    }
}
