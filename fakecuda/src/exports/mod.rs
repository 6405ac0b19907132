//! The C entry points, grouped as the driver API's manual groups them: `device` (initialising,
//! the GPUs, error words), `context`, `memory` (device memory, copies, the memory pool) and
//! `work` (streams, modules, launches, events). Each checks its pointers, takes the driver's
//! lock only as long as it must, and never waits on a stream while holding it.

mod context;
mod device;
mod memory;
mod work;

use std::ffi::c_void;

use crate::code;
use crate::config::{Shape, config};
use crate::driver::Driver;

/// The GPUs the stand-in has.
const DEVICES: i32 = 2;

/// A handle as the C side holds it.
pub(crate) type Handle = *mut c_void;

/// The code for a result.
fn code_of(result: Result<(), i32>) -> i32 {
    match result {
        Ok(()) => code::SUCCESS,
        Err(code) => code,
    }
}

/// Writes `value` where the caller asked, unless it passed no place for it.
///
/// # Safety
/// `place` is null or valid for a write of `T`.
unsafe fn put<T>(place: *mut T, value: T) -> Result<(), i32> {
    if place.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: not null, and valid by the caller's promise.
    unsafe { place.write(value) };
    Ok(())
}

/// Whether the driver takes calls: the stub never does, the rest once `cuInit` has run.
fn ready(driver: &Driver) -> Result<(), i32> {
    if config().shape == Shape::Stub {
        return Err(code::STUB_LIBRARY);
    }
    if !driver.initialized {
        return Err(code::NOT_INITIALIZED);
    }
    Ok(())
}

/// Whether `device` is one of the stand-in's GPUs.
fn device_ok(device: i32) -> Result<(), i32> {
    if (0..DEVICES).contains(&device) { Ok(()) } else { Err(code::INVALID_DEVICE) }
}
