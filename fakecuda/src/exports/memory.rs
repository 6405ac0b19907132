//! Device memory: allocations (stream-ordered or not), frees, memsets and copies each way, what
//! is free, and the device's memory pool (`memory` holds the allocations).

use std::ffi::{c_int, c_uchar, c_void};
use std::sync::Arc;

use super::{Handle, code_of, device_ok, put, ready};
use crate::code;
use crate::config::config;
use crate::driver::{Driver, driver};
use crate::memory::memory;
use crate::stream::{Stream, Work};

/// The stream `handle` names, with its context usable.
fn stream(driver: &Driver, handle: Handle) -> Result<Arc<Stream>, i32> {
    ready(driver)?;
    let stream = driver.streams.get(&(handle as usize)).cloned().ok_or(code::INVALID_HANDLE)?;
    stream.context().check()?;
    Ok(stream)
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuMemAllocAsync(pointer: *mut u64, size: usize, on: Handle) -> c_int {
    if config().no_pools {
        return code::NOT_SUPPORTED;
    }
    let made = stream(&driver(), on).and_then(|s| {
        let context = s.context();
        memory().allocate(context.device, context.owner(), size, config().memory)
    });
    // SAFETY: the caller passes a place for a device pointer.
    code_of(made.and_then(|p| unsafe { put(pointer, p) }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuMemAlloc_v2(pointer: *mut u64, size: usize) -> c_int {
    let driver = driver();
    let made = ready(&driver)
        .and_then(|()| driver.current())
        .and_then(|c| memory().allocate(c.device, c.owner(), size, config().memory));
    // SAFETY: as above.
    code_of(made.and_then(|p| unsafe { put(pointer, p) }))
}

#[unsafe(no_mangle)]
extern "C" fn cuMemFreeAsync(pointer: u64, on: Handle) -> c_int {
    // A free on a faulted context fails, and the memory stays: the stream never gets to it.
    let found = stream(&driver(), on);
    code_of(found.map(|s| s.push(Work::Free { pointer })))
}

#[unsafe(no_mangle)]
extern "C" fn cuMemFree_v2(pointer: u64) -> c_int {
    let result = {
        let driver = driver();
        ready(&driver).and_then(|()| driver.current())
    };
    code_of(result.and_then(|_| memory().allocations.remove(&pointer).map(drop).ok_or(code::INVALID_VALUE)))
}

#[unsafe(no_mangle)]
extern "C" fn cuMemsetD8Async(pointer: u64, value: c_uchar, len: usize, on: Handle) -> c_int {
    let found = stream(&driver(), on);
    code_of(found.map(|s| s.push(Work::Set { pointer, value, len })))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuMemcpyHtoDAsync_v2(pointer: u64, from: *const c_void, len: usize, on: Handle) -> c_int {
    if from.is_null() && len > 0 {
        return code::INVALID_VALUE;
    }
    let found = stream(&driver(), on);
    code_of(found.map(|s| {
        // SAFETY: the caller's `len` bytes at `from`; pageable memory is copied before the call
        // returns, as the real driver stages it.
        let data =
            if len == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(from.cast::<u8>(), len) }.to_vec() };
        s.push(Work::Put { pointer, data });
    }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuMemcpyDtoHAsync_v2(to: *mut c_void, pointer: u64, len: usize, on: Handle) -> c_int {
    if to.is_null() && len > 0 {
        return code::INVALID_VALUE;
    }
    // A copy to pageable memory returns once it is done: after the stream's earlier work.
    let found = stream(&driver(), on);
    let result = found.and_then(|s| s.finish()).and_then(|()| {
        let memory = memory();
        let bytes = memory.allocations.get(&pointer).and_then(|a| a.bytes.get(..len)).ok_or(code::INVALID_VALUE)?;
        if len > 0 {
            // SAFETY: the caller's `len` bytes at `to`.
            unsafe { std::slice::from_raw_parts_mut(to.cast::<u8>(), len) }.copy_from_slice(bytes);
        }
        Ok(())
    });
    code_of(result)
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> c_int {
    let driver = driver();
    let result = ready(&driver).and_then(|()| driver.current()).and_then(|context| {
        let total_bytes = config().memory;
        let free_bytes = total_bytes.saturating_sub(memory().used(context.device));
        // SAFETY: the caller passes places for two sizes.
        unsafe { put(free, free_bytes as usize).and_then(|()| put(total, total_bytes as usize)) }
    });
    code_of(result)
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceGetDefaultMemPool(pool: *mut Handle, device: c_int) -> c_int {
    if config().no_pools {
        return code::NOT_SUPPORTED;
    }
    let result = ready(&driver()).and_then(|()| device_ok(device));
    // SAFETY: the caller passes a place for a handle.
    code_of(result.and_then(|()| unsafe { put(pool, (0x5000 + device as usize) as Handle) }))
}

#[unsafe(no_mangle)]
extern "C" fn cuMemPoolTrimTo(pool: Handle, keep: usize) -> c_int {
    let device = (pool as usize).wrapping_sub(0x5000);
    if device_ok(device as i32).is_err() {
        return code::INVALID_VALUE;
    }
    crate::log(format_args!("memory pool of device {device} trimmed to {keep} bytes"));
    code::SUCCESS
}
