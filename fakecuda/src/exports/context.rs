//! Contexts: made (`cuCtxCreate_v2`, the entry point every CUDA driver has; there is no `_v4`, as
//! on an R535 driver), destroyed, current per thread (`context`'s stack), and the primary context
//! a program's own CUDA use retains. Compute modes and a driver that hangs making or destroying one
//! are modelled here.

use std::ffi::{c_int, c_uint};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Handle, code_of, device_ok, put, ready};
use crate::code;
use crate::config::config;
use crate::context::{Context, current, pop, set_current};
use crate::driver::driver;

/// Never returns: a driver call that hangs. The thread sleeps rather than spins.
fn hang(what: &str) -> ! {
    crate::log(format_args!("{what}: never returns"));
    loop {
        std::thread::park();
    }
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuCtxCreate_v2(context: *mut Handle, _flags: c_uint, device: c_int) -> c_int {
    let asked = {
        let mut driver = driver();
        if let Err(e) = ready(&driver).and_then(|()| device_ok(device)) {
            return e;
        }
        driver.asked += 1;
        driver.asked
    };
    if config().hang_create.contains(&asked) {
        hang(&format!("context creation {asked}"));
    }
    let mut driver = driver();
    let mode = config().compute_mode;
    if mode == 2 || (mode == 3 && driver.contexts_on(device) > 0) {
        crate::log(format_args!("context creation {asked} refused: compute mode {mode}"));
        return code::DEVICE_UNAVAILABLE;
    }
    let made = driver.create(device);
    crate::log(format_args!("context {:#x} made on device {device}", made.handle));
    // SAFETY: the caller passes a place for a handle.
    code_of(unsafe { put(context, made.handle as Handle) })
}

/// Destroys a context: its kernels are stopped (or, as `FAKE_CUDA_DESTROY_HANGS` asks, the call
/// never returns once they are told to stop: a driver that waits for a kernel that never ends;
/// the kernel itself stops so that it does not hold the CPU), then it and everything made on it
/// go, and it is popped from this thread's stack where it is current.
fn destroy(context: &Context) -> c_int {
    context.stop.store(true, Ordering::Release);
    if context.running.load(Ordering::Acquire) > 0 && config().destroy_hangs {
        hang(&format!("destroying context {:#x} while its kernel runs", context.handle));
    }
    // Its kernels see the stop flag within 65536 instructions.
    while context.running.load(Ordering::Acquire) > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    driver().forget(context);
    if current() == context.owner() {
        pop();
    }
    code::SUCCESS
}

#[unsafe(no_mangle)]
extern "C" fn cuCtxDestroy_v2(context: Handle) -> c_int {
    let found = driver().context(context as usize);
    match found {
        Ok(context) => destroy(&context),
        Err(_) => code::INVALID_CONTEXT,
    }
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuCtxPopCurrent_v2(context: *mut Handle) -> c_int {
    let (handle, _) = pop();
    if context.is_null() {
        return code::SUCCESS;
    }
    // SAFETY: the caller passes a place for a handle.
    code_of(unsafe { put(context, handle as Handle) })
}

/// What a program's own CUDA use needs that xcd never calls (the tests play such a program): the
/// device's primary context, shared by whoever retains it, made current by the caller.
#[unsafe(no_mangle)]
unsafe extern "C" fn cuDevicePrimaryCtxRetain(context: *mut Handle, device: c_int) -> c_int {
    let mut driver = driver();
    if let Err(e) = ready(&driver).and_then(|()| device_ok(device)) {
        return e;
    }
    let handle = match driver.primary.get_mut(&device) {
        Some((primary, references)) => {
            *references += 1;
            primary.handle
        }
        None => {
            let primary = driver.make(device);
            crate::log(format_args!("primary context {:#x} made on device {device}", primary.handle));
            let handle = primary.handle;
            driver.primary.insert(device, (primary, 1));
            handle
        }
    };
    // SAFETY: the caller passes a place for a handle.
    code_of(unsafe { put(context, handle as Handle) })
}

#[unsafe(no_mangle)]
extern "C" fn cuDevicePrimaryCtxRelease_v2(device: c_int) -> c_int {
    let last = {
        let mut driver = driver();
        let Some((_, references)) = driver.primary.get_mut(&device) else { return code::INVALID_CONTEXT };
        *references -= 1;
        if *references > 0 {
            return code::SUCCESS;
        }
        driver.primary.remove(&device).map(|(primary, _)| primary)
    };
    last.map_or(code::SUCCESS, |primary| destroy(&primary))
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuCtxGetCurrent(context: *mut Handle) -> c_int {
    // SAFETY: the caller passes a place for a handle.
    code_of(unsafe { put(context, current().0 as Handle) })
}

#[unsafe(no_mangle)]
extern "C" fn cuCtxSetCurrent(context: Handle) -> c_int {
    if context.is_null() {
        set_current(None);
        return code::SUCCESS;
    }
    match driver().context(context as usize) {
        Ok(live) => {
            set_current(Some(&live));
            crate::log(format_args!("context {:#x} made current", live.handle));
            code::SUCCESS
        }
        Err(e) => e,
    }
}
