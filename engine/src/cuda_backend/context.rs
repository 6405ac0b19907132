//! Contexts and what the driver keeps per thread and per device: a context of this process's own
//! made with `cuCtxCreate_v2` (every CUDA driver has it; cudarc's `new_non_primary` calls
//! `cuCtxCreate_v4`, which drivers before CUDA 12.5 lack, and panics there), the context current
//! on a thread (set when one is taken, cleared when one is let go, and put back after discovery,
//! so that a program's own CUDA calls never land in ours), the device's memory pool trimmed, and
//! the JIT's error log of a module that does not load. Owns these raw driver calls; what a device
//! does with a context is the parent module's.

use std::ffi::{CString, c_void};
use std::sync::Arc;

use cudarc::driver::sys::{self, CUjit_option, CUresult};
use cudarc::driver::{CudaContext, DriverError, result};

/// Makes a context of this process's own on GPU `ordinal`, current on this thread, destroyed
/// when the last handle to it drops. (cudarc's bindings for CUDA 13 have no `cuCtxCreate_v2`,
/// CUDA 13's headers naming `_v4` `cuCtxCreate`: a move to them must choose the entry point by
/// `cuDriverGetVersion`.)
pub(super) fn create(ordinal: usize) -> Result<Arc<CudaContext>, DriverError> {
    result::init()?;
    let device = result::device::get(ordinal as i32)?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the driver writes a context handle into `raw` when it succeeds; flags 0 is
    // CU_CTX_SCHED_AUTO.
    unsafe { sys::cuCtxCreate_v2(&mut raw, 0, device) }.result()?;
    // cuCtxCreate pushes the context onto this thread's context stack: it is popped at once, and
    // cudarc's bind below replaces the stack's top instead, as every later bind does, so that
    // `KeepCurrent` puts the caller's own context back however many devices were opened.
    let mut popped = std::ptr::null_mut();
    // SAFETY: the driver writes the popped handle into `popped`.
    let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    // from_raw_context reads an attribute and then owns `raw`, destroying it itself if its bind
    // fails: the one failure before it owns `raw` is met here first, so `raw` is destroyed once.
    // SAFETY: `device` came from the driver just above.
    let pools = unsafe {
        result::device::get_attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
    };
    if let Err(e) = pools {
        // SAFETY: `raw` was made above and nothing else holds it.
        let _ = unsafe { sys::cuCtxDestroy_v2(raw) };
        return Err(e);
    }
    // SAFETY: `raw` is a context just made on `device`, owned from here by the CudaContext, which
    // destroys it (cuCtxDestroy_v2) when dropped.
    unsafe { CudaContext::from_raw_context(ordinal, device, raw) }
}

/// Makes `ctx` current on this thread, whatever was current before: a context taken by the
/// device's owner thread after a fresh one was made on another.
pub(super) fn make_current(ctx: &CudaContext) -> Result<(), DriverError> {
    // SAFETY: `ctx` is alive for the call; cudarc's own calls bind it the same way.
    unsafe { result::ctx::set_current(ctx.cu_ctx()) }
}

/// Leaves no context current on this thread: the owner thread's, when it lets its context go.
/// Otherwise the thread keeps a destroyed context current, and cudarc, which sets a context only
/// when the current one differs, would take a fresh context given the old one's handle (drivers
/// reuse them) for already current, and fail on every call.
pub(super) fn clear_current() {
    // SAFETY: a null context is the driver's "none".
    let _ = unsafe { result::ctx::set_current(std::ptr::null_mut()) };
}

/// The context current on this thread when made, current again when dropped: discovery opens
/// each device's context on the caller's thread and must leave that thread as it found it.
pub(super) struct KeepCurrent(Option<sys::CUcontext>);

impl KeepCurrent {
    /// Remembers this thread's current context (none when the driver cannot say).
    pub(super) fn new() -> KeepCurrent {
        KeepCurrent(result::ctx::get_current().ok().flatten())
    }
}

impl Drop for KeepCurrent {
    fn drop(&mut self) {
        let previous = self.0.unwrap_or(std::ptr::null_mut());
        // SAFETY: `previous` was current on this thread when this was made, or null; a context the
        // caller destroyed meanwhile is theirs to have left current.
        let _ = unsafe { result::ctx::set_current(previous) };
    }
}

/// Gives back to the system the memory the device's default pool holds unused: what the
/// buffers of a context that was let go left there once it is gone. Needs a context current.
pub(super) fn trim_pool(device: sys::CUdevice) {
    let mut pool = std::ptr::null_mut();
    // SAFETY: the driver writes the device's pool handle into `pool`.
    if unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device) } == CUresult::CUDA_SUCCESS {
        // SAFETY: `pool` is the device's default pool, which lives as long as the process.
        let _ = unsafe { sys::cuMemPoolTrimTo(pool, 0) };
    }
}

/// The JIT's error log for `ptx`, which did not load: the module is loaded again, asking for the
/// log this time (cudarc's load asks for none). Needs the context current.
pub(super) fn jit_log(ptx: &str) -> Option<String> {
    let text = CString::new(ptx).ok()?;
    let mut log = vec![0u8; 16 << 10];
    let mut options = [CUjit_option::CU_JIT_ERROR_LOG_BUFFER, CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    // The driver's convention: a size is passed as the pointer's value.
    let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
    let mut module = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated; `options` and `values` hold two entries each, the log
    // buffer its stated size.
    let loaded = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            text.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if loaded == CUresult::CUDA_SUCCESS {
        // SAFETY: the module was just loaded and nothing else holds it.
        let _ = unsafe { sys::cuModuleUnload(module) };
        return None;
    }
    let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
    let words = String::from_utf8_lossy(&log[..end]).trim().to_owned();
    (!words.is_empty()).then_some(words)
}
