//! NVIDIA devices through the CUDA driver API (cudarc), loaded at run time.
//!
//! The driver library is opened when discovery runs, never at link time, so the engine builds
//! and runs where no CUDA is installed and reports "no CUDA driver" instead of failing. Kernels
//! are PTX that xcd-forms writes from the block's WGSL (or, with `-trust-forms`, the block's own
//! PTX), which the driver compiles for its GPU. Arguments follow the ABI of `docs/kernels.md`
//! ([`ptx_args`]): the tile header and parameters as 32-bit words by value, then for each array
//! in binding order its pointer and its length in elements.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg};
use xcd_wire::{ArrayRole, BackendKind, BlockDesc, BlockId, DeviceInfo};

use crate::forms::{FormPolicy, Source};
use crate::whole::WholeCache;
use crate::{Backend, EngineError, Found, TileJob, TileOutput};

/// Threads per CUDA block; any size works, the kernels index with blockDim.
pub const THREADS: u32 = 256;

/// One argument of a PTX kernel's launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtxArg {
    /// A 32-bit word by value: a header word or a parameter.
    Word(u32),
    /// Array `index`'s device pointer, then its length in elements as a word.
    Array {
        /// The array's position in the block's binding order.
        index: usize,
        /// Its length in elements: the tile's item count, or a whole array's own.
        len: u32,
    },
}

/// The arguments of one tile's launch, in order (docs/kernels.md): the tile header with
/// `first` 0, the parameters, then each array's pointer and length.
pub fn ptx_args(desc: &BlockDesc, job: &TileJob) -> Vec<PtxArg> {
    let mut args: Vec<PtxArg> =
        job.tile.header(0).into_iter().chain(job.params.iter().copied()).map(PtxArg::Word).collect();
    let mut wholes = job.whole.iter();
    for (index, array) in desc.arrays.iter().enumerate() {
        let len = match array.role {
            ArrayRole::PerItem(_) => job.tile.count,
            ArrayRole::Whole => wholes.next().map_or(0, |w| (w.data.len() / array.elem_size as usize) as u32),
        };
        args.push(PtxArg::Array { index, len });
    }
    args
}

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
    let mut found = Found { devices: Vec::new(), notes: Vec::new() };
    // SAFETY: only tries to open the driver library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        // The driver's library is nvcuda.dll on Windows, libcuda.so.1 elsewhere.
        let library = if cfg!(windows) { "nvcuda.dll" } else { "libcuda" };
        found.notes.push(format!("cuda: no CUDA driver ({library} not found)"));
        return found;
    }
    let count = match CudaContext::device_count() {
        Ok(count) => count,
        Err(e) => {
            found.notes.push(format!("cuda: the driver reports no usable device ({e})"));
            return found;
        }
    };
    for ordinal in 0..count.max(0) as usize {
        match CudaDevice::open(ordinal, policy, whole_bytes) {
            Ok(device) => found.devices.push(Box::new(device)),
            Err(e) => found.notes.push(format!("cuda: device {ordinal} cannot be opened ({e})")),
        }
    }
    found
}

/// One CUDA device and what it keeps between tiles.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    kernels: HashMap<BlockId, Kernel>,
    /// Whole arrays by content hash, bounded (`crate::whole`).
    whole: WholeCache<CudaSlice<u8>>,
    /// Where kernels come from.
    policy: FormPolicy,
}

struct Kernel {
    function: CudaFunction,
    /// One device buffer per per-item array (None for whole arrays), `capacity` items long.
    per_item: Vec<Option<CudaSlice<u8>>>,
    capacity: u32,
}

impl CudaDevice {
    fn open(ordinal: usize, policy: FormPolicy, whole_bytes: u64) -> Result<Self, DriverError> {
        let ctx = CudaContext::new(ordinal)?;
        let name = ctx.name()?;
        let total = ctx.total_mem()? as u64;
        let free = ctx.mem_get_info().ok().map(|(free, _)| free as u64);
        let stream = ctx.default_stream();
        let info = DeviceInfo {
            id: DeviceInfo::make_id(BackendKind::Cuda, &name),
            backend: BackendKind::Cuda,
            name,
            cpu: false,
            memory_total: Some(total),
            memory_free: free,
            max_buffer_bytes: total,
            lost: None,
        };
        Ok(CudaDevice { ctx, stream, info, kernels: HashMap::new(), whole: WholeCache::new(whole_bytes), policy })
    }

    fn error(&self, block: &str, e: DriverError) -> EngineError {
        driver_error(&self.info.id, block, e)
    }

    fn whole_buffer(&mut self, block: &str, array: &crate::WholeArray) -> Result<(), EngineError> {
        if self.whole.get(&array.hash).is_some() {
            return Ok(());
        }
        let bytes = array.data.len() as u64;
        if bytes > self.info.max_buffer_bytes {
            let (device, max) = (self.info.id.clone(), self.info.max_buffer_bytes);
            return Err(EngineError::WholeTooLarge { device, bytes, max });
        }
        self.whole.make_room(bytes);
        let buffer = self.stream.clone_htod(&array.data[..]).map_err(|e| self.error(block, e))?;
        self.whole.insert(array.hash, buffer, bytes);
        Ok(())
    }
}

impl Backend for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn recover(&mut self) -> Result<(), String> {
        let ordinal = self.ctx.ordinal();
        let device = self.ctx.cu_device();
        // The old context holds the faulted or never-ending kernel: its buffers and modules are
        // let go without a drop (which would call into it), and the primary context is reset,
        // which ends its work and frees its memory.
        std::mem::forget(std::mem::take(&mut self.kernels));
        std::mem::forget(self.whole.take());
        // SAFETY: resets the primary context of a device this process enumerated; nothing of
        // the old context is used after this (its buffers and modules were forgotten above).
        let reset = unsafe { cudarc::driver::sys::cuDevicePrimaryCtxReset_v2(device) };
        if reset != CUresult::CUDA_SUCCESS {
            return Err(format!("the primary context could not be reset ({reset:?})"));
        }
        let fresh = CudaDevice::open(ordinal, self.policy, self.whole.kept()).map_err(|e| e.to_string())?;
        let old = std::mem::replace(self, fresh);
        std::mem::forget(old);
        Ok(())
    }

    fn memory_free(&mut self) -> Option<u64> {
        self.ctx.mem_get_info().ok().map(|(free, _)| free as u64)
    }

    fn load(&mut self, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let ptx = ptx_form(&self.info.id, desc, self.policy)?;
        let fail = |e: DriverError| EngineError::Load {
            device: self.info.id.clone(),
            block: desc.name.clone(),
            reason: e.to_string(),
        };
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(fail)?;
        let function = module.load_function(&desc.entry).map_err(fail)?;
        self.kernels.insert(id, Kernel { function, per_item: Vec::new(), capacity: 0 });
        Ok(())
    }

    fn run(&mut self, desc: &BlockDesc, job: &TileJob, deadline: Duration) -> Result<TileOutput, EngineError> {
        let count = job.tile.count;
        for array in &job.whole {
            self.whole_buffer(&desc.name, array)?;
        }
        let stream = self.stream.clone();
        let kernel = self.kernels.get(&job.block).ok_or_else(|| EngineError::NotLoaded(job.block.to_string()))?;
        if kernel.capacity < count {
            let capacity = count.checked_next_power_of_two().unwrap_or(count);
            let mut per_item = Vec::new();
            for array in &desc.arrays {
                per_item.push(match array.role {
                    ArrayRole::PerItem(_) => {
                        let bytes = array.elem_size as usize * capacity as usize;
                        Some(stream.alloc_zeros::<u8>(bytes).map_err(|e| self.error(&desc.name, e))?)
                    }
                    ArrayRole::Whole => None,
                });
            }
            let kernel =
                self.kernels.get_mut(&job.block).ok_or_else(|| EngineError::NotLoaded(job.block.to_string()))?;
            kernel.per_item = per_item;
            kernel.capacity = capacity;
        }
        let device_id = self.info.id.clone();
        let err = |e: DriverError| driver_error(&device_id, &desc.name, e);
        let kernel = self.kernels.get_mut(&job.block).ok_or_else(|| EngineError::NotLoaded(job.block.to_string()))?;

        for (index, data) in desc.tile_inputs().zip(&job.inputs) {
            if let Some(buffer) = kernel.per_item[index].as_mut() {
                stream.memcpy_htod(&data[..], &mut buffer.slice_mut(0..data.len())).map_err(err)?;
            }
        }
        let args = ptx_args(desc, job);
        let words: Vec<u32> = args.iter().map(|a| if let PtxArg::Word(w) = a { *w } else { 0 }).collect();
        let lens: Vec<u32> = args.iter().map(|a| if let PtxArg::Array { len, .. } = a { *len } else { 0 }).collect();
        {
            let mut launch = stream.launch_builder(&kernel.function);
            let mut wholes = job.whole.iter();
            for (k, arg) in args.iter().enumerate() {
                match *arg {
                    PtxArg::Word(_) => {
                        launch.arg(&words[k]);
                    }
                    PtxArg::Array { index, .. } => {
                        match kernel.per_item.get(index).and_then(Option::as_ref) {
                            Some(buffer) => {
                                launch.arg(buffer);
                            }
                            None => {
                                let buffer = wholes.next().and_then(|w| self.whole.peek(&w.hash));
                                let Some(buffer) = buffer else {
                                    return Err(EngineError::BadJob("a whole array was not uploaded".into()));
                                };
                                launch.arg(buffer);
                            }
                        }
                        launch.arg(&lens[k]);
                    }
                }
            }
            let config = LaunchConfig {
                grid_dim: (count.div_ceil(THREADS), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the arguments follow the ABI the PTX forms are written to (header words,
            // parameters, then each array's pointer and length), every per-item buffer holds at
            // least `count` elements, and the forms xcd-forms writes check every access against
            // those lengths.
            unsafe { launch.launch(config) }.map_err(err)?;
        }
        // Wait for the kernels with the deadline before any copy back, which would wait forever.
        let done = stream.record_event(None).map_err(err)?;
        let started = Instant::now();
        while !done.try_is_complete().map_err(err)? {
            let waited = started.elapsed();
            if waited > deadline {
                return Err(EngineError::Deadline {
                    device: self.info.id.clone(),
                    block: desc.name.clone(),
                    seconds: deadline.as_secs().max(1),
                });
            }
            // Yield for the first milliseconds (most tiles end then), then sleep in short steps.
            if waited < Duration::from_millis(2) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        let mut outputs = Vec::new();
        for index in desc.tile_outputs() {
            let bytes = desc.arrays[index].elem_size as usize * count as usize;
            let mut out = vec![0u8; bytes];
            if let Some(buffer) = kernel.per_item[index].as_ref() {
                stream.memcpy_dtoh(&buffer.slice(0..bytes), &mut out[..]).map_err(err)?;
            }
            outputs.push(out);
        }
        stream.synchronize().map_err(err)?;
        Ok(TileOutput { outputs })
    }
}

/// What a driver error means for the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The device has no room: the caller may try a smaller tile or another device.
    OutOfMemory,
    /// The context is unusable (a faulting or killed kernel, a hardware error): every later
    /// call on it fails, so the device goes out of service until it is brought back.
    Lost,
    /// This launch or load failed; the device stays in service.
    Failed,
}

/// Sorts a driver error. A code that leaves the context unusable must be `Lost`, or every later
/// tile fails with no recovery: the display watchdog's timeout (702; about 2 s on Windows),
/// a device-side assert (710), a bad program counter (718) or address space (717), a destroyed
/// context (709), NVLink and ECC errors, and an unknown error (999), besides the faults.
fn outcome(code: CUresult) -> Outcome {
    match code {
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => Outcome::OutOfMemory,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
        | CUresult::CUDA_ERROR_LAUNCH_FAILED
        | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
        | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
        | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
        | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
        | CUresult::CUDA_ERROR_ASSERT
        | CUresult::CUDA_ERROR_INVALID_PC
        | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
        | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
        | CUresult::CUDA_ERROR_NVLINK_UNCORRECTABLE
        | CUresult::CUDA_ERROR_UNKNOWN => Outcome::Lost,
        _ => Outcome::Failed,
    }
}

/// Maps a driver error to what a caller can act on ([`outcome`]).
fn driver_error(device: &str, block: &str, e: DriverError) -> EngineError {
    let device = device.to_owned();
    match outcome(e.0) {
        Outcome::OutOfMemory => EngineError::OutOfMemory(device),
        Outcome::Lost => EngineError::DeviceLost { device, reason: e.to_string() },
        Outcome::Failed => EngineError::Launch { device, block: block.to_owned(), reason: e.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_errors_that_kill_the_context_take_the_device_out_of_service() {
        use CUresult as R;
        let table = [
            (R::CUDA_ERROR_OUT_OF_MEMORY, Outcome::OutOfMemory),
            (R::CUDA_ERROR_ILLEGAL_ADDRESS, Outcome::Lost),
            (R::CUDA_ERROR_LAUNCH_FAILED, Outcome::Lost),
            (R::CUDA_ERROR_ILLEGAL_INSTRUCTION, Outcome::Lost),
            (R::CUDA_ERROR_MISALIGNED_ADDRESS, Outcome::Lost),
            (R::CUDA_ERROR_HARDWARE_STACK_ERROR, Outcome::Lost),
            (R::CUDA_ERROR_ECC_UNCORRECTABLE, Outcome::Lost),
            (R::CUDA_ERROR_LAUNCH_TIMEOUT, Outcome::Lost),
            (R::CUDA_ERROR_ASSERT, Outcome::Lost),
            (R::CUDA_ERROR_INVALID_PC, Outcome::Lost),
            (R::CUDA_ERROR_INVALID_ADDRESS_SPACE, Outcome::Lost),
            (R::CUDA_ERROR_CONTEXT_IS_DESTROYED, Outcome::Lost),
            (R::CUDA_ERROR_NVLINK_UNCORRECTABLE, Outcome::Lost),
            (R::CUDA_ERROR_UNKNOWN, Outcome::Lost),
            (R::CUDA_ERROR_INVALID_PTX, Outcome::Failed),
            (R::CUDA_ERROR_NOT_FOUND, Outcome::Failed),
            (R::CUDA_ERROR_INVALID_VALUE, Outcome::Failed),
            (R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, Outcome::Failed),
        ];
        for (code, want) in table {
            assert_eq!(outcome(code), want, "{code:?}");
        }
    }
}
