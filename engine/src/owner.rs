//! One owner thread per device; callers hold a cheap [`DeviceHandle`].
//!
//! A GPU API's device state (queues, pipelines, buffers) is driven from one thread only, the
//! owner, which takes commands from a channel in order. Handles are clones of the channel's
//! sender plus the device's description, so the daemon's tasks and the program's workers can
//! share a device without locks.
//!
//! A device goes **out of service** when a tile runs past the tile deadline (a kernel that never
//! ends), when the driver reports it lost (a faulting kernel on CUDA), or when its backend
//! panics; every later command then says why, and [`DeviceHandle::status`] reports it in
//! `lost`. The owner then tries to bring it back ([`Backend::recover`]) after 5 s, then 10 s, …
//! up to every 5 minutes; a recovered device loads again every block it had and serves as before.
//!
//! When the last handle is dropped, the drop closes the channel and waits for the owner thread
//! to finish destroying the device (one out of service is let go instead: destroying it would
//! wait for the kernel that never ends). Without that wait the process could exit while a driver is
//! still tearing a device down, and drivers' exit-time destructors crash on that (seen with
//! llvmpipe: a segfault after `main` returned, in about one run of three under load).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use xcd_wire::{BlockDesc, BlockId, DeviceInfo};

use crate::{EngineError, TileJob, TileOutput};

/// One device of one GPU API, as its owner thread drives it.
///
/// Implementations keep their own compiled kernels and buffers between calls, and may assume
/// that a job has been checked against its block ([`TileJob::check`]) before `run` is called.
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
    fn recover(&mut self) -> Result<(), String> {
        Err("this kind of device cannot be reopened".into())
    }
}

/// How long a tile may run on a device before the device is taken out of service, unless the
/// caller says otherwise ([`spawn_with`]).
pub const DEFAULT_TILE_DEADLINE: Duration = Duration::from_secs(60);
/// The first wait before trying to bring a device back; it doubles after each failed try.
const RECOVER_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between tries.
const RECOVER_MOST: Duration = Duration::from_secs(300);

enum Command {
    Status(oneshot::Sender<DeviceInfo>),
    Load(Arc<BlockDesc>, oneshot::Sender<Result<BlockId, EngineError>>),
    Run(TileJob, oneshot::Sender<Result<TileOutput, EngineError>>),
    /// Sent by the owner's own timer while the device is out of service.
    Recover,
}

/// A cheap, cloneable way to reach one device's owner thread.
#[derive(Clone, Debug)]
pub struct DeviceHandle {
    /// The device as discovered; `status` gives fresh memory figures.
    info: Arc<DeviceInfo>,
    /// The channel to the owner thread; the last clone to drop stops the thread and waits.
    owner: Arc<Owner>,
    /// Why the device is out of service, while it is: written by the owner thread.
    lost: Arc<Mutex<Option<String>>>,
}

/// The sending end of an owner thread's channel, and the thread, joined on drop.
#[derive(Debug)]
struct Owner {
    /// Commands to the owner thread, served in order; taken on drop to close the channel.
    tx: Option<mpsc::UnboundedSender<Command>>,
    /// The owner thread, joined on drop so the device is gone before the drop returns.
    thread: Option<std::thread::JoinHandle<()>>,
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
    let (tx, rx) = mpsc::unbounded_channel();
    let name = format!("xc-device {}", info.id);
    let thread_info = info.clone();
    let timer = tx.downgrade();
    let lost = Arc::new(Mutex::new(None));
    let shared = lost.clone();
    let thread = match std::thread::Builder::new().name(name).spawn(move || serve(backend, rx, timer, deadline, shared))
    {
        Ok(thread) => Some(thread),
        Err(e) => {
            // Without a thread the receiver is dropped and every command reports the device lost.
            tracing::error!(device = %thread_info.id, "cannot start the device's thread: {e}");
            None
        }
    };
    DeviceHandle { info, owner: Arc::new(Owner { tx: Some(tx), thread }), lost }
}

/// What the owner thread keeps besides the backend.
struct State {
    loaded: HashMap<BlockId, Arc<BlockDesc>>,
    /// Why the device is out of service, while it is.
    lost: Option<String>,
    /// The wait before the next try to bring it back.
    next_wait: Duration,
    /// Whether a try is already scheduled.
    scheduled: bool,
    /// The owner's own sender, held weakly so it never keeps the channel open.
    timer: mpsc::WeakUnboundedSender<Command>,
}

impl State {
    /// Schedules a try to bring the device back, unless one is pending.
    fn schedule_recovery(&mut self) {
        if self.lost.is_none() || self.scheduled {
            return;
        }
        self.scheduled = true;
        let wait = self.next_wait;
        self.next_wait = (wait * 2).min(RECOVER_MOST);
        let timer = self.timer.clone();
        let spawned = std::thread::Builder::new().name("xc-device recovery".into()).spawn(move || {
            std::thread::sleep(wait);
            if let Some(tx) = timer.upgrade() {
                let _ = tx.send(Command::Recover);
            }
        });
        if spawned.is_err() {
            self.scheduled = false;
        }
    }
}

fn serve(
    mut backend: Box<dyn Backend>,
    mut rx: mpsc::UnboundedReceiver<Command>,
    timer: mpsc::WeakUnboundedSender<Command>,
    deadline: Duration,
    shared: Arc<Mutex<Option<String>>>,
) {
    let mut state = State { loaded: HashMap::new(), lost: None, next_wait: RECOVER_FIRST, scheduled: false, timer };
    while let Some(command) = rx.blocking_recv() {
        let device = backend.info().id.clone();
        let gone = |reason: &str| EngineError::DeviceLost { device: device.clone(), reason: reason.to_owned() };
        let lost = &mut state.lost;
        match command {
            Command::Status(reply) => {
                let _ = reply.send(status(backend.as_mut(), lost));
            }
            Command::Load(desc, reply) => {
                let result = match &*lost {
                    Some(reason) => Err(gone(reason)),
                    None => {
                        let id = desc.id();
                        match state.loaded.entry(id) {
                            Entry::Occupied(_) => Ok(id),
                            Entry::Vacant(slot) => desc
                                .validate()
                                .map_err(|e| EngineError::BadJob(e.to_string()))
                                .and_then(|()| guarded(lost, || backend.load(id, &desc), &gone))
                                .map(|()| {
                                    slot.insert(desc.clone());
                                    id
                                }),
                        }
                    }
                };
                let _ = reply.send(result);
            }
            Command::Run(job, reply) => {
                let result = match (&*lost, state.loaded.get(&job.block)) {
                    (Some(reason), _) => Err(gone(reason)),
                    (None, None) => Err(EngineError::NotLoaded(job.block.to_string())),
                    (None, Some(desc)) => {
                        let desc = desc.clone();
                        job.check(&desc).and_then(|()| guarded(lost, || backend.run(&desc, &job, deadline), &gone))
                    }
                };
                let _ = reply.send(result);
            }
            Command::Recover => {
                state.scheduled = false;
                if state.lost.is_some() {
                    recover(backend.as_mut(), &mut state);
                }
            }
        }
        state.schedule_recovery();
        let mut told = shared.lock().unwrap_or_else(|e| e.into_inner());
        if *told != state.lost {
            told.clone_from(&state.lost);
        }
    }
    if state.lost.is_some() {
        // Destroying a device that still runs a kernel waits for the kernel, which may never
        // end: an out-of-service device is let go as the process ends, not destroyed.
        std::mem::forget(backend);
    }
}

/// The device as it is: fresh memory figures while it serves, why not while it does not.
fn status(backend: &mut dyn Backend, lost: &Option<String>) -> DeviceInfo {
    let mut info = backend.info().clone();
    if lost.is_none() {
        info.memory_free = catch_unwind(AssertUnwindSafe(|| backend.memory_free())).unwrap_or(None);
    }
    info.lost = lost.clone();
    info
}

/// One try to bring the device back, loading again every block it had.
fn recover(backend: &mut dyn Backend, state: &mut State) {
    let device = backend.info().id.clone();
    let reopened = catch_unwind(AssertUnwindSafe(|| backend.recover()))
        .unwrap_or_else(|_| Err("the driver wrapper panicked while reopening it".into()));
    let reloaded = reopened.and_then(|()| {
        state.loaded.iter().try_for_each(|(id, desc)| {
            catch_unwind(AssertUnwindSafe(|| backend.load(*id, desc)))
                .map_err(|_| "the driver wrapper panicked".to_owned())?
                .map_err(|e| format!("block {} does not load again: {e}", desc.name))
        })
    });
    match reloaded {
        Ok(()) => {
            tracing::warn!(device = %device, "device back in service after: {}", state.lost.take().unwrap_or_default());
            state.next_wait = RECOVER_FIRST;
        }
        Err(why) => tracing::warn!(device = %device, "device still out of service: {why}"),
    }
}

/// Runs a backend call, turning a panic into a lost device.
fn guarded<T>(
    lost: &mut Option<String>,
    call: impl FnOnce() -> Result<T, EngineError>,
    gone: &dyn Fn(&str) -> EngineError,
) -> Result<T, EngineError> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(result) => {
            match &result {
                Err(EngineError::DeviceLost { reason, .. }) => *lost = Some(reason.clone()),
                Err(e @ EngineError::Deadline { block, seconds, .. }) => {
                    tracing::error!("{e}");
                    *lost = Some(format!("a tile of block {block} ran past the {seconds} s tile deadline"));
                }
                _ => {}
            }
            result
        }
        Err(panic) => {
            let reason = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "the driver wrapper panicked".to_owned());
            tracing::error!("device lost: {reason}");
            *lost = Some(reason.clone());
            Err(gone(&reason))
        }
    }
}

impl DeviceHandle {
    /// The device as discovered (memory free as it was then).
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Why the device is out of service, while it is (the owner's last word, without a wait).
    pub fn out_of_service(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn lost(&self) -> EngineError {
        EngineError::DeviceLost { device: self.info.id.clone(), reason: "its thread has stopped".into() }
    }

    fn send<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<oneshot::Receiver<T>, EngineError> {
        let (reply, rx) = oneshot::channel();
        let tx = self.owner.tx.as_ref().ok_or_else(|| self.lost())?;
        tx.send(make(reply)).map_err(|_| self.lost())?;
        Ok(rx)
    }

    /// The device with fresh memory figures.
    pub async fn status(&self) -> Result<DeviceInfo, EngineError> {
        self.send(Command::Status)?.await.map_err(|_| self.lost())
    }

    /// Loads a block (compiles its kernel) unless already loaded; returns its id.
    pub async fn load(&self, desc: Arc<BlockDesc>) -> Result<BlockId, EngineError> {
        self.send(|r| Command::Load(desc, r))?.await.map_err(|_| self.lost())?
    }

    /// Runs one tile of a loaded block.
    pub async fn run(&self, job: TileJob) -> Result<TileOutput, EngineError> {
        self.send(|r| Command::Run(job, r))?.await.map_err(|_| self.lost())?
    }

    /// [`status`](Self::status) for callers outside an async runtime.
    pub fn status_blocking(&self) -> Result<DeviceInfo, EngineError> {
        self.send(Command::Status)?.blocking_recv().map_err(|_| self.lost())
    }

    /// [`load`](Self::load) for callers outside an async runtime.
    pub fn load_blocking(&self, desc: Arc<BlockDesc>) -> Result<BlockId, EngineError> {
        self.send(|r| Command::Load(desc, r))?.blocking_recv().map_err(|_| self.lost())?
    }

    /// [`run`](Self::run) for callers outside an async runtime.
    pub fn run_blocking(&self, job: TileJob) -> Result<TileOutput, EngineError> {
        self.send(|r| Command::Run(job, r))?.blocking_recv().map_err(|_| self.lost())?
    }
}

#[cfg(test)]
mod tests {
    //! Owner-thread mechanics with a backend that only records what happens to it (the real
    //! backends are exercised in tests/vulkan_device.rs).

    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use xcd_wire::BackendKind;

    use super::*;

    struct Recorder {
        info: DeviceInfo,
        destroyed: Arc<AtomicBool>,
        panic_on_load: bool,
    }

    impl Drop for Recorder {
        fn drop(&mut self) {
            // A driver takes a while to tear a device down.
            std::thread::sleep(Duration::from_millis(200));
            self.destroyed.store(true, Ordering::SeqCst);
        }
    }

    impl Backend for Recorder {
        fn info(&self) -> &DeviceInfo {
            &self.info
        }
        fn memory_free(&mut self) -> Option<u64> {
            Some(7)
        }
        fn load(&mut self, _id: BlockId, _desc: &BlockDesc) -> Result<(), EngineError> {
            if self.panic_on_load {
                panic!("driver wrapper bug");
            }
            Ok(())
        }
        fn run(&mut self, _desc: &BlockDesc, _job: &TileJob, _deadline: Duration) -> Result<TileOutput, EngineError> {
            Ok(TileOutput { outputs: Vec::new() })
        }
    }

    fn recorder(panic_on_load: bool) -> (DeviceHandle, Arc<AtomicBool>) {
        let destroyed = Arc::new(AtomicBool::new(false));
        let info = DeviceInfo {
            id: "vulkan:recorder".into(),
            backend: BackendKind::Vulkan,
            name: "recorder".into(),
            cpu: true,
            memory_total: None,
            memory_free: None,
            max_buffer_bytes: 1 << 20,
            lost: None,
        };
        let backend = Recorder { info, destroyed: destroyed.clone(), panic_on_load };
        (spawn(Box::new(backend)), destroyed)
    }

    fn block() -> Arc<BlockDesc> {
        use xcd_wire::{Access, ArrayRole, ArraySpec, Forms};
        Arc::new(BlockDesc {
            name: "b".into(),
            entry: "b".into(),
            arrays: vec![ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) }],
            params: Vec::new(),
            forms: Forms { wgsl: Some(String::new()), ..Forms::default() },
        })
    }

    #[test]
    fn dropping_the_last_handle_waits_until_the_device_is_destroyed() {
        let (handle, destroyed) = recorder(false);
        let clone = handle.clone();
        drop(handle);
        assert!(!destroyed.load(Ordering::SeqCst), "a clone still holds the device");
        assert_eq!(clone.status_blocking().expect("status").memory_free, Some(7));
        drop(clone);
        assert!(destroyed.load(Ordering::SeqCst), "drop returned before the device was destroyed");
    }

    #[test]
    fn a_panicking_backend_is_reported_lost_and_the_caller_lives_on() {
        let (handle, _) = recorder(true);
        let error = handle.load_blocking(block()).expect_err("the load panics");
        assert!(
            matches!(&error, EngineError::DeviceLost { reason, .. } if reason.contains("driver wrapper bug")),
            "{error}"
        );
        let again = handle.load_blocking(block()).expect_err("the device stays lost");
        assert!(matches!(again, EngineError::DeviceLost { .. }));
        let status = handle.status_blocking().expect("status still answers");
        assert_eq!(status.memory_free, None, "a lost device reports no memory");
    }
}
