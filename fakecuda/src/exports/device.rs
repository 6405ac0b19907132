//! Initialising, the driver's version, the GPUs and what they are, and the words for a code.

use std::ffi::{c_char, c_int, c_uint};

use super::{DEVICES, code_of, device_ok, put, ready};
use crate::config::{Shape, config};
use crate::driver::driver;
use crate::{code, describe};

const COMPUTE_MODE: c_int = 20;
const CAPABILITY_MAJOR: c_int = 75;
const CAPABILITY_MINOR: c_int = 76;
const MEMORY_POOLS_SUPPORTED: c_int = 115;

#[unsafe(no_mangle)]
extern "C" fn cuInit(_flags: c_uint) -> c_int {
    if config().shape == Shape::Stub {
        return code::STUB_LIBRARY;
    }
    driver().initialized = true;
    code::SUCCESS
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> c_int {
    // SAFETY: the caller passes a place for an int.
    code_of(unsafe { put(version, config().version) })
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> c_int {
    let ready = ready(&driver());
    // SAFETY: the caller passes a place for an int.
    code_of(ready.and_then(|()| unsafe { put(count, DEVICES) }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> c_int {
    let ready = ready(&driver()).and_then(|()| device_ok(ordinal));
    // SAFETY: the caller passes a place for a device.
    code_of(ready.and_then(|()| unsafe { put(device, ordinal) }))
}

/// Copies `text` into the caller's `len` bytes, with a NUL unless `terminate` is false.
///
/// # Safety
/// `out` is valid for `len` bytes.
unsafe fn copy_text(out: *mut c_char, len: c_int, text: &str, terminate: bool) -> Result<(), i32> {
    if out.is_null() || len <= 0 {
        return Err(code::INVALID_VALUE);
    }
    let len = len as usize;
    // SAFETY: `out` holds `len` bytes, by the caller's promise.
    let out = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), len) };
    if terminate {
        let n = text.len().min(len - 1);
        out[..n].copy_from_slice(&text.as_bytes()[..n]);
        out[n] = 0;
    } else {
        out.fill(b'A');
    }
    Ok(())
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> c_int {
    let shape = config().shape;
    let text = if shape == Shape::Old { "Tesla M40" } else { "NVIDIA H200" };
    let ready = ready(&driver()).and_then(|()| device_ok(device));
    // SAFETY: the caller passes `len` bytes.
    code_of(ready.and_then(|()| unsafe { copy_text(name, len, text, shape != Shape::Unterminated) }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceGetAttribute(value: *mut c_int, attribute: c_int, device: c_int) -> c_int {
    let old = config().shape == Shape::Old;
    let answer = match attribute {
        CAPABILITY_MAJOR if old => 5,
        CAPABILITY_MINOR if old => 2,
        CAPABILITY_MAJOR => 9,
        CAPABILITY_MINOR => 0,
        MEMORY_POOLS_SUPPORTED => i32::from(!config().no_pools),
        COMPUTE_MODE => config().compute_mode,
        _ => 0,
    };
    let ready = ready(&driver()).and_then(|()| device_ok(device));
    // SAFETY: the caller passes a place for an int.
    code_of(ready.and_then(|()| unsafe { put(value, answer) }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, device: c_int) -> c_int {
    let ready = ready(&driver()).and_then(|()| device_ok(device));
    // SAFETY: the caller passes a place for a size.
    code_of(ready.and_then(|()| unsafe { put(bytes, config().memory as usize) }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuDeviceGetPCIBusId(bus: *mut c_char, len: c_int, device: c_int) -> c_int {
    let text = if device == 0 { "00000000:1B:00.0" } else { "00000000:43:00.0" };
    let ready = ready(&driver()).and_then(|()| device_ok(device));
    // SAFETY: the caller passes `len` bytes.
    code_of(ready.and_then(|()| unsafe { copy_text(bus, len, text, true) }))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuGetErrorString(error: c_int, text: *mut *const c_char) -> c_int {
    // SAFETY: the caller passes a place for a pointer; the words are static.
    code_of(unsafe { put(text, describe(error).1.as_ptr()) })
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuGetErrorName(error: c_int, text: *mut *const c_char) -> c_int {
    // SAFETY: as above.
    code_of(unsafe { put(text, describe(error).0.as_ptr()) })
}
