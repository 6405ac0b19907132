//! A device's backend and what is known of it (blocks loaded, whether it is out of service),
//! behind one lock ([`Core`]): every command on a device runs with it held, whether on the owner
//! thread or on a blocking caller's own thread ([`super::DeviceHandle::run_blocking`]), so calls
//! to one device never overlap. Owns turning panics and deadlines into an out-of-service
//! device and trying to bring it back; must not know about channels or callers.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use xcd_wire::{BlockDesc, BlockId, DeviceInfo};

use super::{Backend, Command, Job};
use crate::{EngineError, Loaded, RecoverError, TileOutput};

/// The first wait before trying to bring a device back; it doubles after each failed try.
const RECOVER_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between tries.
const RECOVER_MOST: Duration = Duration::from_secs(300);

/// One device: its backend and its state, locked as one.
pub(super) struct Core {
    /// The device; taken by the owner thread when it ends, to destroy it there.
    pub(super) backend: Option<Box<dyn Backend>>,
    loaded: HashMap<BlockId, Arc<BlockDesc>>,
    /// Why the device is out of service, while it is.
    pub(super) lost: Option<String>,
    /// The wait before the next try to bring it back.
    next_wait: Duration,
    /// Whether a try is already scheduled.
    scheduled: bool,
    /// The owner's own sender, held weakly so it never keeps the channel open.
    timer: mpsc::WeakUnboundedSender<Command>,
    /// How long a tile may run before the device is taken out of service.
    deadline: Duration,
    /// Why the device is out of service, as callers read it without taking the lock.
    told: Arc<Mutex<Option<String>>>,
}

impl Core {
    pub(super) fn new(
        backend: Box<dyn Backend>,
        timer: mpsc::WeakUnboundedSender<Command>,
        deadline: Duration,
        told: Arc<Mutex<Option<String>>>,
    ) -> Core {
        Core {
            backend: Some(backend),
            loaded: HashMap::new(),
            lost: None,
            next_wait: RECOVER_FIRST,
            scheduled: false,
            timer,
            deadline,
            told,
        }
    }

    fn gone(&self, reason: &str) -> EngineError {
        let device = self.backend.as_ref().map(|b| b.info().id.clone()).unwrap_or_default();
        EngineError::DeviceLost { device, reason: reason.to_owned() }
    }

    /// The device with fresh memory figures while it serves, why not while it does not.
    pub(super) fn status(&mut self) -> Option<DeviceInfo> {
        let backend = self.backend.as_mut()?;
        let mut info = backend.info().clone();
        if self.lost.is_none() {
            info.memory_free = catch_unwind(AssertUnwindSafe(|| backend.memory_free())).unwrap_or(None);
        }
        info.lost = self.lost.clone();
        Some(info)
    }

    /// Loads a block unless it is loaded already.
    pub(super) fn load(&mut self, desc: &Arc<BlockDesc>) -> Result<Loaded, EngineError> {
        if let Some(reason) = &self.lost {
            return Err(self.gone(reason));
        }
        let id = desc.id();
        if let Some(loaded) = self.loaded.get(&id) {
            return Ok(Loaded::new(id, loaded.clone()));
        }
        desc.validate().map_err(|e| EngineError::BadJob(e.to_string()))?;
        self.guarded(|backend| backend.load(id, desc))?;
        self.loaded.insert(id, desc.clone());
        Ok(Loaded::new(id, desc.clone()))
    }

    /// Runs one tile of a loaded block: a checked job as it is, an unchecked one once its block
    /// is found and it fits.
    pub(super) fn run(&mut self, job: &Job) -> Result<TileOutput, EngineError> {
        if let Some(reason) = &self.lost {
            return Err(self.gone(reason));
        }
        let (desc, job) = match job {
            Job::Checked(checked) => (checked.desc().clone(), checked.job()),
            Job::Unchecked(job) => {
                let desc = self.loaded.get(&job.block).cloned().ok_or(EngineError::NotLoaded(job.block))?;
                job.fits(&desc)?;
                (desc, job)
            }
        };
        let deadline = self.deadline;
        self.guarded(|backend| backend.run(&desc, job, deadline))
    }

    /// One try to bring the device back, loading again every block it had.
    pub(super) fn recover(&mut self) {
        self.scheduled = false;
        let Some(backend) = self.backend.as_mut().filter(|_| self.lost.is_some()) else { return };
        let device = backend.info().id.clone();
        let reopened = catch_unwind(AssertUnwindSafe(|| backend.recover())).unwrap_or(Err(RecoverError::Panicked));
        let reloaded = reopened.and_then(|()| {
            self.loaded.iter().try_for_each(|(id, desc)| {
                catch_unwind(AssertUnwindSafe(|| backend.load(*id, desc)))
                    .map_err(|_| RecoverError::Panicked)?
                    .map_err(|reason| RecoverError::Reload { block: desc.name.clone(), reason })
            })
        });
        match reloaded {
            Ok(()) => {
                // Taken outside the log line: tracing does not evaluate the arguments of a line no
                // subscriber takes, and a program without one would keep the device out forever.
                let was = self.lost.take().unwrap_or_default();
                tracing::warn!(device = %device, "device back in service after: {was}");
                self.next_wait = RECOVER_FIRST;
            }
            Err(why) => tracing::warn!(device = %device, "device still out of service: {why}"),
        }
    }

    /// After each command: a try to bring an out-of-service device back is scheduled, and
    /// callers are told whether it serves.
    pub(super) fn settle(&mut self) {
        self.schedule_recovery();
        let mut told = self.told.lock();
        if *told != self.lost {
            told.clone_from(&self.lost);
        }
    }

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

    /// Runs a backend call, turning a panic, a lost device or a tile past its deadline into a
    /// device out of service.
    fn guarded<T>(&mut self, call: impl FnOnce(&mut dyn Backend) -> Result<T, EngineError>) -> Result<T, EngineError> {
        let Some(backend) = self.backend.as_mut() else {
            return Err(self.gone("its thread has stopped"));
        };
        match catch_unwind(AssertUnwindSafe(|| call(backend.as_mut()))) {
            Ok(result) => {
                match &result {
                    Err(EngineError::DeviceLost { reason, .. }) => self.lost = Some(reason.clone()),
                    Err(e @ EngineError::Deadline { block, seconds, .. }) => {
                        tracing::error!("{e}");
                        self.lost = Some(format!("a tile of block {block} ran past the {seconds} s tile deadline"));
                    }
                    _ => {}
                }
                result
            }
            Err(panic) => {
                let reason = crate::panic_words(&*panic).unwrap_or_else(|| "the driver wrapper panicked".to_owned());
                tracing::error!("device lost: {reason}");
                self.lost = Some(reason.clone());
                Err(self.gone(&reason))
            }
        }
    }
}
