//! Vulkan, Metal and DX12 devices through wgpu, llvmpipe included.
//!
//! Kernels are loaded by passthrough where the adapter allows it (SPIR-V on Vulkan, MSL on
//! Metal), so the `NoContraction` decorations that make results exact reach the driver. The
//! form given to the driver is written by xcd-forms from the block's WGSL (or from its SPIR-V,
//! parsed, checked and written again), with every buffer access bounds-checked; only under
//! `-trust-forms` does a carried SPIR-V or MSL form reach the driver as sent. Plain WGSL through
//! wgpu's own translation is the last resort, for backends without passthrough (DX12).
//!
//! The SPIR-V asks the driver to keep signed zeros, infinities, NaNs and subnormals where it
//! can (float controls). Where it cannot, or on a device that computes on the CPU (llvmpipe,
//! which also ends long loops in silence), the SPIR-V carries xcd-forms' detectors: one more
//! storage word, bound after the block's arrays, zeroed before each tile and read back after
//! it. A tile that met what the device gets wrong fails with [`EngineError::Inexact`], so it
//! runs on another worker.
//!
//! Per loaded block the device keeps its pipeline, a uniform buffer of 256-byte slots (one per
//! dispatch of a tile), one storage buffer per per-item array and one read-back buffer, all grown
//! on demand and reused across tiles, to [`TILE_BUFFERS_KEPT`] bytes across blocks: growing one
//! block's buffers past that drops the least recently run blocks' (they grow again when next
//! run). Whole arrays are kept by content hash across blocks, to a bound of count and bytes
//! ([`crate::whole`]).
//!
//! Layout: this file opens devices and loads blocks; `buffers` grows and drops buffers;
//! `dispatch` runs a tile in steps (buffers ready, dispatches planned, commands submitted,
//! results read back within the deadline).

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use xcd_wire::{BackendKind, BlockDesc, BlockId, DeviceInfo, FormKind, WORKGROUP_SIZE};

use crate::forms::Source;
use crate::vulkan_hal::{FloatControls, float_controls, memory};
use crate::whole::WholeCache;
use crate::{Backend, Discovered, EngineError, RecoverError, Served, TileJob, TileOutput};
use xcd_wire::FormPolicy;

/// Bytes per uniform slot: the header and parameters of one dispatch.
const SLOT_BYTES: u64 = 256;

mod buffers;
mod dispatch;
pub use buffers::TILE_BUFFERS_KEPT;

/// Finds wgpu adapters, leaving to CUDA the NVIDIA GPUs it serves (`cuda`).
pub(crate) fn discover(cuda: &[Served], policy: FormPolicy, whole_bytes: u64) -> Discovered {
    let mut found = Discovered::default();
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::PRIMARY,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    if adapters.is_empty() {
        found.notes.push("vulkan: no adapter (install a Vulkan driver, e.g. mesa-vulkan-drivers)".into());
    }
    let adapters: Vec<(wgpu::Adapter, wgpu::AdapterInfo, BackendKind)> = adapters
        .into_iter()
        .filter_map(|adapter| {
            let info = adapter.get_info();
            backend_kind(info.backend).map(|backend| (adapter, info, backend))
        })
        .collect();
    let names: Vec<xcd_wire::device::Naming<'_>> = adapters
        .iter()
        .map(|(_, info, backend)| xcd_wire::device::Naming {
            backend: *backend,
            name: &info.name,
            pci_bus: Some(info.device_pci_bus_id.as_str()),
        })
        .collect();
    let ids = DeviceInfo::ids(&names);
    for ((adapter, info, backend), id) in adapters.into_iter().zip(ids) {
        if served_by_cuda(info.vendor, &info.name, &info.device_pci_bus_id, cuda) {
            found.notes.push(format!("{id}: not served, CUDA serves this GPU"));
            continue;
        }
        match WgpuDevice::open(adapter, id.clone(), backend, policy, whole_bytes) {
            Ok(device) => found.devices.push(Box::new(device)),
            Err(e) => found.notes.push(format!("{id}: cannot open: {e}")),
        }
    }
    found
}

/// Whether CUDA already serves an adapter: an NVIDIA one at a PCI address that CUDA serves, or,
/// where either side tells no address, of a name that CUDA serves. A GPU that CUDA did not open
/// (too old for its PTX, say) is served through Vulkan instead.
fn served_by_cuda(vendor: u32, name: &str, pci_bus: &str, cuda: &[Served]) -> bool {
    const NVIDIA: u32 = 0x10de;
    if vendor != NVIDIA {
        return false;
    }
    let bus = xcd_wire::pci_address(pci_bus);
    cuda.iter().any(|served| match (&bus, &served.pci_bus) {
        (Some(bus), Some(theirs)) => bus == theirs,
        _ => served.name == name,
    })
}

/// The bindings of a block's kernel: the uniform slot (dynamic offset), each array (read-only
/// where the block only reads it), then the detectors' word where the kernel has one.
fn layout_entries(desc: &BlockDesc, guarded: bool) -> Vec<wgpu::BindGroupLayoutEntry> {
    let entry = |binding: u32, ty: wgpu::BufferBindingType, has_dynamic_offset: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset, min_binding_size: None },
        count: None,
    };
    let mut entries = vec![entry(0, wgpu::BufferBindingType::Uniform, true)];
    for (index, array) in desc.arrays.iter().enumerate() {
        let storage = wgpu::BufferBindingType::Storage { read_only: array.role.read_only() };
        entries.push(entry(index as u32 + 1, storage, false));
    }
    if guarded {
        let storage = wgpu::BufferBindingType::Storage { read_only: false };
        entries.push(entry(desc.arrays.len() as u32 + 1, storage, false));
    }
    entries
}

fn backend_kind(backend: wgpu::Backend) -> Option<BackendKind> {
    match backend {
        wgpu::Backend::Vulkan => Some(BackendKind::Vulkan),
        wgpu::Backend::Metal => Some(BackendKind::Metal),
        wgpu::Backend::Dx12 => Some(BackendKind::Dx12),
        _ => None,
    }
}

/// One wgpu device and what it keeps between tiles.
pub struct WgpuDevice {
    /// Kept for memory queries through the HAL.
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: DeviceInfo,
    /// Whether the device takes passthrough shader modules.
    passthrough: bool,
    /// Dispatch size limit in workgroups.
    max_workgroups: u32,
    /// Required alignment of dynamic uniform offsets.
    slot_bytes: u64,
    kernels: HashMap<BlockId, Kernel>,
    /// Tiles run so far, to tell which block ran least recently.
    runs: u64,
    /// Bytes of tile buffers kept across blocks ([`TILE_BUFFERS_KEPT`]).
    tile_buffers_kept: u64,
    /// Whole arrays by content hash, bounded (`crate::whole`).
    whole: WholeCache<wgpu::Buffer>,
    /// Where kernels come from.
    policy: FormPolicy,
    /// What the driver keeps of f32 when a kernel asks (Vulkan float controls).
    floats: FloatControls,
}

/// A block's shader module as a device takes it.
struct Shader {
    module: wgpu::ShaderModule,
    /// Whether it carries the loop-cut word's binding.
    guarded: bool,
    /// The kernel's name in it: the block's entry, or for MSL the text forms' name for it.
    entry: String,
}

/// A loaded block on one device.
struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// Header and parameters, one slot per dispatch.
    uniform: wgpu::Buffer,
    /// One storage buffer per array binding that is per-item (None for whole arrays).
    per_item: Vec<Option<wgpu::Buffer>>,
    /// Read-back buffer for all written arrays.
    readback: wgpu::Buffer,
    /// Items the per-item buffers hold.
    capacity: u32,
    /// Bytes of its per-item and read-back buffers.
    held: u64,
    /// When it last ran (the device's count of runs).
    used: u64,
    /// The loop-cut word, on a device that ends long loops (see the module's doc).
    cut: Option<wgpu::Buffer>,
}

impl WgpuDevice {
    fn open(
        adapter: wgpu::Adapter,
        id: String,
        backend: BackendKind,
        policy: FormPolicy,
        whole_bytes: u64,
    ) -> Result<Self, String> {
        let info = adapter.get_info();
        let features = adapter.features() & wgpu::Features::PASSTHROUGH_SHADERS;
        let limits = adapter.limits();
        let (device, queue) = request_device(&adapter)?;
        let (memory_total, memory_free) = memory(&adapter);
        let floats = float_controls(&adapter);
        let info = DeviceInfo {
            id,
            backend,
            name: info.name.clone(),
            cpu: info.device_type == wgpu::DeviceType::Cpu,
            memory_total,
            memory_free,
            max_buffer_bytes: limits.max_buffer_size.min(limits.max_storage_buffer_binding_size),
            lost: None,
        };
        Ok(WgpuDevice {
            adapter,
            device,
            queue,
            info,
            passthrough: !features.is_empty(),
            max_workgroups: limits.max_compute_workgroups_per_dimension,
            slot_bytes: SLOT_BYTES.max(u64::from(limits.min_uniform_buffer_offset_alignment)),
            kernels: HashMap::new(),
            runs: 0,
            tile_buffers_kept: TILE_BUFFERS_KEPT,
            whole: WholeCache::new(whole_bytes),
            policy,
            floats,
        })
    }

    /// The shader module for a block, whether it carries the loop-cut word, and its kernel's name.
    fn module(&self, desc: &BlockDesc) -> Result<Shader, EngineError> {
        let device = &self.info.id;
        let source = crate::forms::source(device, self.info.backend, desc, self.policy)?;
        let failed = |e| crate::forms::write_failed(device, desc, e);
        // A driver may crash on SPIR-V that is malformed or does not match the pipeline layout,
        // and a program's own SPIR-V need not bounds-check its buffers: unless the operator
        // trusts carried forms, the driver gets what xcd-forms writes, never the program's words.
        let guarded = (self.info.cpu || !self.floats.denorms)
            && matches!(source, Source::Made(_))
            && self.info.backend == BackendKind::Vulkan;
        let (spirv, msl) = match (&source, self.info.backend) {
            (Source::Carried, BackendKind::Vulkan) => (desc.forms.spirv.clone(), None),
            (Source::Carried, BackendKind::Metal) => (None, desc.forms.msl.clone()),
            (Source::Made(k), BackendKind::Vulkan) => {
                let options = xcd_forms::SpirvOptions {
                    preserve_signed_zero_inf_nan: self.floats.signed_zero_inf_nan,
                    preserve_denorms: self.floats.denorms,
                    guard_loops: self.info.cpu,
                    guard_subnormals: !self.floats.denorms,
                    opaque_constants: self.info.cpu,
                };
                (Some(k.spirv_for(options).map_err(failed)?), None)
            }
            (Source::Made(k), BackendKind::Metal) => (None, Some(k.msl().map_err(failed)?)),
            _ => (None, None),
        };
        if self.passthrough && (spirv.is_some() || msl.is_some()) {
            // SPIR-V names the kernel as the block does; MSL by the one rule of the text forms.
            let entry_name = if msl.is_some() { xcd_forms::entry_symbol(&desc.entry) } else { desc.entry.clone() };
            let entry = wgpu::wgt::PassthroughShaderEntryPoint {
                name: Cow::Owned(entry_name.clone()),
                workgroup_size: (WORKGROUP_SIZE, 1, 1),
            };
            let source = wgpu::ShaderModuleDescriptorPassthrough {
                label: Some(&desc.name),
                entry_points: Cow::Owned(vec![entry]),
                spirv: spirv.map(Cow::Owned),
                msl: msl.map(Cow::Owned),
                ..Default::default()
            };
            #[allow(unsafe_code)]
            // SAFETY: the SPIR-V or MSL is written by xcd-forms (from WGSL, or from a program's
            // SPIR-V it parsed, validated and checked) with every buffer access bounds-checked
            // (ReadZeroSkipWrite), and its bindings were checked against the block description
            // that the pipeline layout below is built from. Under -trust-forms it is the
            // program's own form, as the operator chose (docs/security.md).
            let module = unsafe { self.device.create_shader_module_passthrough(source) };
            return Ok(Shader { module, guarded, entry: entry_name });
        }
        match desc.forms.wgsl.as_deref() {
            Some(wgsl) => Ok(Shader {
                module: self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(&desc.name),
                    source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(wgsl)),
                }),
                guarded: false,
                entry: desc.entry.clone(),
            }),
            None => Err(EngineError::NoForm {
                device: self.info.id.clone(),
                block: desc.name.clone(),
                wanted: FormKind::Wgsl,
            }),
        }
    }

    /// Bytes this device keeps that it would let go for work: tile buffers and whole arrays.
    fn kept(&self) -> u64 {
        self.kernels.values().map(|k| k.held).sum::<u64>() + self.whole.bytes()
    }

    /// Runs `f`, which needs `needed` bytes of buffers at once, inside error scopes, and turns
    /// what the device reports into an [`EngineError`].
    fn scoped<T>(
        &self,
        needed: u64,
        f: impl FnOnce() -> T,
        fail: impl Fn(String) -> EngineError,
    ) -> Result<T, EngineError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let value = f();
        let internal = pollster::block_on(internal.pop());
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if oom.is_some() {
            let free = memory(&self.adapter).1.unwrap_or(0) + self.kept();
            return Err(EngineError::OutOfMemory { device: self.info.id.clone(), needed, free });
        }
        match validation.or(internal) {
            Some(error) => Err(fail(error.to_string())),
            None => Ok(value),
        }
    }
}

fn request_device(adapter: &wgpu::Adapter) -> Result<(wgpu::Device, wgpu::Queue), String> {
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("xcd"),
        required_features: adapter.features() & wgpu::Features::PASSTHROUGH_SHADERS,
        required_limits: adapter.limits(),
        // wgpu's allocator sub-allocates buffers from blocks it keeps while any buffer lives in
        // them: 128-256 MiB with the default hints, 8-64 MiB with these. The device's byte budget
        // (crate::whole, the tile buffers) counts buffers, so the smaller blocks keep what the
        // device really holds near that count; on llvmpipe, whose memory is the process's,
        // about 120 MiB of freed whole arrays stayed resident with the default (docs/reliability.md).
        memory_hints: wgpu::MemoryHints::MemoryUsage,
        ..Default::default()
    }))
    .map_err(|e| e.to_string())
}

impl WgpuDevice {
    /// Runs the probe ([`crate::probe`]) on this device: the check that it computes again.
    fn probe(&mut self) -> Result<(), String> {
        let desc = crate::probe::block();
        let job = crate::probe::job(&desc);
        self.load(job.block, &desc).map_err(|e| e.to_string())?;
        // On failure the device is stuck, and the caller lets its kernels go without a drop.
        crate::probe::check(self.run(&desc, &job, crate::probe::DEADLINE))
            .map(|()| drop(self.kernels.remove(&job.block)))
    }
}

impl Backend for WgpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn memory_free(&mut self) -> Option<u64> {
        memory(&self.adapter).1.map(|free| free + self.kept())
    }

    fn any_thread(&self) -> bool {
        // wgpu's device and queue are `Send + Sync`; error scopes are per thread, and each call
        // pushes and pops its own on the thread it runs on.
        true
    }

    fn recover(&mut self) -> Result<(), RecoverError> {
        let (device, queue) = request_device(&self.adapter).map_err(RecoverError::reopen)?;
        // The old device may still be running the kernel that never ended: destroying it would
        // wait for that kernel, so it and everything made on it are let go without a drop.
        let old_device = std::mem::replace(&mut self.device, device);
        let old_queue = std::mem::replace(&mut self.queue, queue);
        let old_kernels = std::mem::take(&mut self.kernels);
        let old_whole = self.whole.take();
        std::mem::forget((old_device, old_queue, old_kernels, old_whole));
        self.probe().map_err(RecoverError::reopen).inspect_err(|_| {
            // The new device is stuck too (a CPU device whose threads all run the old kernel):
            // its probe is let go the same way, and the next try replaces the device.
            std::mem::forget(std::mem::take(&mut self.kernels));
        })
    }

    fn load(&mut self, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let fail =
            |reason: String| EngineError::Load { device: self.info.id.clone(), block: desc.name.clone(), reason };
        let Shader { module, guarded, entry } = self.module(desc)?;
        let entries = layout_entries(desc, guarded);
        let (pipeline, layout) = self.scoped(
            SLOT_BYTES,
            || {
                let layout = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some(&desc.name),
                    entries: &entries,
                });
                let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some(&desc.name),
                    bind_group_layouts: &[Some(&layout)],
                    immediate_size: 0,
                });
                let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&desc.name),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some(&entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (pipeline, layout)
            },
            fail,
        )?;
        let uniform =
            self.buffer("uniform", self.slot_bytes, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
        let readback = self.buffer("readback", 4, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        let cut = guarded.then(|| {
            let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
            self.buffer("inexact", 8, usage)
        });
        let kernel =
            Kernel { pipeline, layout, uniform, per_item: Vec::new(), readback, capacity: 0, held: 0, used: 0, cut };
        self.kernels.insert(id, kernel);
        Ok(())
    }

    fn run(&mut self, desc: &BlockDesc, job: &TileJob, deadline: Duration) -> Result<TileOutput, EngineError> {
        let wholes = self.ready(desc, job)?;
        let plan = self.plan(desc, job);
        self.ensure_uniform(job.block, plan.uniform.len() as u64)?;
        let kernel = self.kernels.get(&job.block).ok_or(EngineError::NotLoaded(job.block))?;
        let needed = kernel.held + job.whole.iter().map(|w| w.data.len() as u64).sum::<u64>();
        let submitted =
            self.scoped(needed, || self.submit(kernel, desc, job, &wholes, &plan), |e| self.failed(desc, e))?;
        let Some(submitted) = submitted else {
            return Err(EngineError::BadJob("the tile carries fewer whole arrays than the block binds".into()));
        };
        self.read_back(kernel, desc, submitted, deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(name: &str, pci_bus: Option<&str>) -> Served {
        Served { name: name.into(), pci_bus: pci_bus.map(Into::into) }
    }

    #[test]
    fn only_the_nvidia_gpus_that_cuda_serves_are_left_to_it() {
        const NVIDIA: u32 = 0x10de;
        let cuda = [served("NVIDIA H200", Some("0000:1b:00.0")), served("NVIDIA H200", Some("0000:43:00.0"))];
        assert!(served_by_cuda(NVIDIA, "NVIDIA H200", "0000:1b:00.0", &cuda));
        assert!(!served_by_cuda(NVIDIA, "NVIDIA H200", "0000:52:00.0", &cuda), "a GPU CUDA did not open");
        assert!(!served_by_cuda(0x1002, "NVIDIA H200", "0000:1b:00.0", &cuda), "not NVIDIA's");
        // A Pascal card that CUDA refused (too old for the PTX) is served through Vulkan.
        assert!(!served_by_cuda(NVIDIA, "NVIDIA GeForce GTX 1080", "0000:02:00.0", &[]));
        // Without an address on one side, the name decides.
        assert!(served_by_cuda(NVIDIA, "NVIDIA H200", "", &cuda));
        assert!(served_by_cuda(NVIDIA, "NVIDIA L4", "0000:07:00.0", &[served("NVIDIA L4", None)]));
        assert!(!served_by_cuda(NVIDIA, "NVIDIA L4", "", &[served("NVIDIA T4", None)]));
    }
}
