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
//! - [`wgpu_backend`]: Vulkan / Metal / DX12 devices through wgpu, with passthrough forms;
//! - [`cuda_backend`]: NVIDIA devices through the CUDA driver API, with the PTX form;
//! - [`error`]: [`EngineError`], small and actionable.

pub mod cuda_backend;
pub mod error;
pub mod job;
pub mod owner;
pub mod wgpu_backend;

pub use error::EngineError;
pub use job::{TileJob, TileOutput, WholeArray};
pub use owner::{Backend, DEFAULT_TILE_DEADLINE, DeviceHandle};

use xcd_wire::BackendKind;

/// Every device this machine can serve, and why others are absent.
#[derive(Debug, Default)]
pub struct Inventory {
    /// One handle per device, CUDA first.
    pub devices: Vec<DeviceHandle>,
    /// Lines that explain what was not found, e.g. `cuda: no CUDA driver (libcuda not found)`.
    pub notes: Vec<String>,
}

/// Finds every device ([`discover_with`]) with the default tile deadline.
pub fn discover() -> Inventory {
    discover_with(owner::DEFAULT_TILE_DEADLINE)
}

/// Finds every device: CUDA devices, then wgpu adapters. Each tile may run for `tile_deadline`
/// before its device is taken out of service (see [`owner`]).
///
/// An NVIDIA adapter that CUDA already serves is not served again through Vulkan, and a device
/// that computes on the CPU (llvmpipe) is served only when there is no real GPU.
pub fn discover_with(tile_deadline: std::time::Duration) -> Inventory {
    let mut inventory = Inventory::default();
    let cuda = cuda_backend::discover();
    inventory.notes.extend(cuda.notes);
    let have_cuda = !cuda.devices.is_empty();
    let gpus = wgpu_backend::discover(have_cuda);
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

/// Discovery's result for one backend.
pub(crate) struct Found {
    pub(crate) devices: Vec<Box<dyn Backend>>,
    pub(crate) notes: Vec<String>,
}

/// The forms a device of this backend takes, best first.
pub fn forms_taken(backend: BackendKind) -> &'static [xcd_wire::FormKind] {
    use xcd_wire::FormKind;
    match backend {
        BackendKind::Cuda => &[FormKind::Ptx],
        BackendKind::Vulkan => &[FormKind::Spirv, FormKind::Wgsl],
        BackendKind::Metal => &[FormKind::Msl, FormKind::Wgsl],
        BackendKind::Dx12 => &[FormKind::Wgsl],
    }
}

/// The form a device of this backend would load from these forms, if any.
pub fn form_for(backend: BackendKind, forms: &xcd_wire::Forms) -> Option<xcd_wire::FormKind> {
    let kinds = forms.kinds();
    forms_taken(backend).iter().copied().find(|k| kinds.contains(k))
}
