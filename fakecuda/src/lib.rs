//! A stand-in for NVIDIA's driver library, `libcuda.so`, for tests on machines without an NVIDIA
//! GPU. It exports the driver entry points xcd calls (and no others), and behaves as an R535
//! driver (CUDA 12.2) by default: no `cuCtxCreate_v4`, two identical H200s in different slots.
//! Contexts, streams, device memory and modules are real objects here; kernels run on a thread
//! per stream through the PTX interpreter (`xcd-ptxsim`), so xcd's CUDA backend runs end to end:
//! tiles compute, a `trap` faults the context, a kernel that never ends runs until its context
//! goes. `FAKE_CUDA*` variables make it another driver or make it misbehave ([`config`]).
//!
//! What it models of the real driver, because xcd depends on it: errors that stick to a faulted
//! context; a context current per thread, which stays current (and destroyed) on other threads
//! when one thread destroys it, with handles of destroyed contexts given out again; stream order;
//! asynchronous faults, seen at the next event query or copy; the JIT's error log; exclusive-
//! process compute mode. It is never shipped: tests put it on `LD_LIBRARY_PATH` as `libcuda.so`.
//!
//! Layout: `config` (the variables), `context` (a context, and the one current on each thread),
//! `driver` (contexts' slots, modules, streams, events), `memory` (device memory), `stream` (a
//! stream's worker thread), `exports` (the C entry points, by group).
#![allow(unsafe_code)]

mod config;
mod context;
mod driver;
mod exports;
mod memory;
mod stream;

use std::ffi::CStr;
use std::io::Write as _;

/// Driver result codes the stand-in gives (the values of `cuda.h`).
pub(crate) mod code {
    pub(crate) const SUCCESS: i32 = 0;
    pub(crate) const INVALID_VALUE: i32 = 1;
    pub(crate) const OUT_OF_MEMORY: i32 = 2;
    pub(crate) const NOT_INITIALIZED: i32 = 3;
    pub(crate) const STUB_LIBRARY: i32 = 34;
    pub(crate) const DEVICE_UNAVAILABLE: i32 = 46;
    pub(crate) const INVALID_DEVICE: i32 = 101;
    pub(crate) const INVALID_CONTEXT: i32 = 201;
    pub(crate) const CONTEXT_IS_DESTROYED: i32 = 709;
    pub(crate) const INVALID_PTX: i32 = 218;
    pub(crate) const INVALID_HANDLE: i32 = 400;
    pub(crate) const NOT_FOUND: i32 = 500;
    pub(crate) const NOT_READY: i32 = 600;
    pub(crate) const ILLEGAL_ADDRESS: i32 = 700;
    pub(crate) const LAUNCH_FAILED: i32 = 719;
    pub(crate) const NOT_SUPPORTED: i32 = 801;
}

/// A code's name and the driver's words for it.
pub(crate) fn describe(result: i32) -> (&'static CStr, &'static CStr) {
    match result {
        code::SUCCESS => (c"CUDA_SUCCESS", c"no error"),
        code::INVALID_VALUE => (c"CUDA_ERROR_INVALID_VALUE", c"invalid argument"),
        code::OUT_OF_MEMORY => (c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory"),
        code::NOT_INITIALIZED => (c"CUDA_ERROR_NOT_INITIALIZED", c"initialization error"),
        code::STUB_LIBRARY => (c"CUDA_ERROR_STUB_LIBRARY", c"CUDA driver is a stub library"),
        code::DEVICE_UNAVAILABLE => {
            (c"CUDA_ERROR_DEVICE_UNAVAILABLE", c"CUDA-capable device(s) is/are busy or unavailable")
        }
        code::INVALID_DEVICE => (c"CUDA_ERROR_INVALID_DEVICE", c"invalid device ordinal"),
        code::INVALID_CONTEXT => (c"CUDA_ERROR_INVALID_CONTEXT", c"invalid device context"),
        code::CONTEXT_IS_DESTROYED => (c"CUDA_ERROR_CONTEXT_IS_DESTROYED", c"context is destroyed"),
        code::INVALID_PTX => (c"CUDA_ERROR_INVALID_PTX", c"a PTX JIT compilation failed"),
        code::INVALID_HANDLE => (c"CUDA_ERROR_INVALID_HANDLE", c"invalid resource handle"),
        code::NOT_FOUND => (c"CUDA_ERROR_NOT_FOUND", c"named symbol not found"),
        code::NOT_READY => (c"CUDA_ERROR_NOT_READY", c"device not ready"),
        code::ILLEGAL_ADDRESS => (c"CUDA_ERROR_ILLEGAL_ADDRESS", c"an illegal memory access was encountered"),
        code::LAUNCH_FAILED => (c"CUDA_ERROR_LAUNCH_FAILED", c"unspecified launch failure"),
        code::NOT_SUPPORTED => (c"CUDA_ERROR_NOT_SUPPORTED", c"operation not supported"),
        _ => (c"CUDA_ERROR_UNKNOWN", c"unknown error"),
    }
}

/// Appends a line to `FAKE_CUDA_LOG`, if it names a file: `thread-name: what`.
pub(crate) fn log(what: impl std::fmt::Display) {
    let Some(path) = &config::config().log else { return };
    let thread = std::thread::current();
    let line = format!("{}: {what}\n", thread.name().unwrap_or("unnamed"));
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = file.write_all(line.as_bytes());
    }
}
