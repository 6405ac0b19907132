//! Devices and kernels: everything that touches a GPU API.
//!
//! Owns discovery ([`discover`]), the [`Backend`] trait that each GPU API implements (wgpu for
//! Vulkan, Metal and DX12, llvmpipe included; CUDA through cudarc, loaded at run time), one owner
//! thread per device, and the cheap [`DeviceHandle`] that callers clone. It must not touch HTTP,
//! the scheduler or settings: the daemon and the program side both drive devices through it.
//!
//! Layout:
//! - [`job`]: a tile's inputs ([`TileJob`]) and results ([`TileOutput`]), checked against a block;
//! - [`owner`]: the owner thread, the [`Backend`] trait and [`DeviceHandle`];
//! - [`forms`]: which form a device loads (under the wire's `FormPolicy`: made from WGSL by
//!   default);
//! - [`wgpu_backend`]: Vulkan / Metal / DX12 devices through wgpu, with passthrough forms, and
//!   `vulkan_hal`, what it reads of a Vulkan device through wgpu's HAL (memory, float controls);
//! - [`cuda_backend`]: NVIDIA devices through the CUDA driver API, with the PTX form;
//! - [`whole`]: the whole arrays each device keeps, bounded by count and bytes, and `memory`,
//!   a device's buffers held to a byte budget (CUDA's);
//! - `probe`: the small kernel a device must run right before it serves again;
//! - [`error`]: [`EngineError`], small and actionable.

pub mod cuda_backend;
pub mod error;
pub mod forms;
pub mod job;
mod memory;
pub mod owner;
mod probe;
mod vulkan_hal;
pub mod wgpu_backend;
pub mod whole;

pub use error::{EngineError, RecoverError};
pub use job::{CheckedJob, Loaded, TileJob, TileOutput};
pub use owner::{Backend, DEFAULT_TILE_DEADLINE, DeviceHandle};
use xcd_wire::FormPolicy;

use std::cell::{Cell, RefCell};

/// Every device this machine can serve, and why others are absent.
#[derive(Debug, Default)]
pub struct Inventory {
    /// One handle per device, CUDA first.
    pub devices: Vec<DeviceHandle>,
    /// Lines that explain what was not found, e.g. `cuda: no CUDA driver (libcuda not found)`.
    pub notes: Vec<String>,
}

/// How devices are opened.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How long one tile may run before its device is taken out of service (see [`owner`]).
    pub tile_deadline: std::time::Duration,
    /// Where each device's form of a block comes from.
    pub forms: FormPolicy,
    /// Open CUDA devices (default). Without CUDA, an NVIDIA GPU is served through Vulkan,
    /// which is how its Vulkan driver is checked (scripts/gpu-check).
    pub cuda: bool,
    /// Bytes of whole arrays each device keeps at once.
    pub whole_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tile_deadline: owner::DEFAULT_TILE_DEADLINE,
            forms: FormPolicy::Remake,
            cuda: true,
            whole_bytes: whole::WHOLE_BYTES_KEPT,
        }
    }
}

/// Finds every device ([`discover_with`]) with the default options.
pub fn discover() -> Inventory {
    discover_with(Options::default())
}

/// Finds every device: CUDA devices, then wgpu adapters.
///
/// An NVIDIA adapter that CUDA already serves is not served again through Vulkan, and a device
/// that computes on the CPU (llvmpipe) is served only when there is no real GPU.
pub fn discover_with(options: Options) -> Inventory {
    let tile_deadline = options.tile_deadline;
    let mut inventory = Inventory::default();
    let cuda = if options.cuda {
        unpanicked("cuda", || cuda_backend::discover(options.forms, options.whole_bytes))
    } else {
        Discovered::default()
    };
    inventory.notes.extend(cuda.notes);
    let have_cuda = !cuda.devices.is_empty();
    let gpus = unpanicked("wgpu", || wgpu_backend::discover(&cuda.served, options.forms, options.whole_bytes));
    inventory.notes.extend(gpus.notes);

    let mut backends: Vec<Box<dyn Backend>> = cuda.devices;
    let real_gpu = have_cuda || gpus.devices.iter().any(|d| !d.info().cpu);
    for device in gpus.devices {
        if real_gpu && device.info().cpu {
            inventory.notes.push(format!("{}: not served, this machine has a GPU", device.info().id));
            continue;
        }
        backends.push(device);
    }
    inventory.devices = backends.into_iter().map(|b| owner::spawn_with(b, tile_deadline)).collect();
    inventory
}

thread_local! {
    /// Whether this thread is finding devices, and where a panic there happened: the panic hook
    /// keeps the place here instead of printing it, since the note says it ([`unpanicked`]).
    static DISCOVERING: Cell<bool> = const { Cell::new(false) };
    static PANICKED_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Puts a panic hook before whatever hook the program has: a panic on a thread that is finding
/// devices is kept quiet (its place noted for [`unpanicked`]), every other goes to the program's.
fn quiet_while_discovering() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if DISCOVERING.with(Cell::get) {
                let place = info.location().map(|l| {
                    let file: Vec<&str> = l.file().rsplit('/').take(4).collect();
                    format!("{}:{}", file.into_iter().rev().collect::<Vec<_>>().join("/"), l.line())
                });
                PANICKED_AT.with(|p| *p.borrow_mut() = place);
            } else {
                previous(info);
            }
        }));
    });
}

/// One backend's discovery, which never takes the program down: a panic in a driver binding
/// (cudarc reading what a driver wrote, a wgpu backend) leaves that backend out, with a note that
/// says what and where in place of the panic's own message.
fn unpanicked(backend: &str, discover: impl FnOnce() -> Discovered) -> Discovered {
    quiet_while_discovering();
    DISCOVERING.with(|d| d.set(true));
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(discover));
    DISCOVERING.with(|d| d.set(false));
    match found {
        Ok(found) => found,
        Err(panic) => {
            let words = panic_words(&*panic).unwrap_or_else(|| "no words".to_owned());
            let place = PANICKED_AT.with(|p| p.borrow_mut().take()).map(|at| format!(" at {at}")).unwrap_or_default();
            Discovered {
                notes: vec![format!(
                    "{backend}: skipped: its driver binding panicked while finding devices ({words}{place}); the other devices are served"
                )],
                ..Discovered::default()
            }
        }
    }
}

/// What a panic said, where it said it in words.
pub(crate) fn panic_words(panic: &(dyn std::any::Any + Send)) -> Option<String> {
    panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
}

/// Discovery's result for one backend.
#[derive(Default)]
pub(crate) struct Discovered {
    pub(crate) devices: Vec<Box<dyn Backend>>,
    pub(crate) notes: Vec<String>,
    /// The GPUs it serves, so that another backend leaves them alone.
    pub(crate) served: Vec<Served>,
}

/// A GPU that one backend serves: its name and PCI address (`dddd:bb:dd.f`, where told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Served {
    pub(crate) name: String,
    pub(crate) pci_bus: Option<String>,
}
