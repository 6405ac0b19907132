//! Contexts: made (`cuCtxCreate_v2`, the entry point every CUDA driver has; there is no `_v4`, as
//! on an R535 driver), destroyed, and current per thread. Compute modes and a driver that hangs
//! making or destroying one are modelled here.

use std::ffi::{c_int, c_uint};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Handle, code_of, device_ok, put, ready};
use crate::code;
use crate::config::config;
use crate::context::{current, set_current};
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

#[unsafe(no_mangle)]
extern "C" fn cuCtxDestroy_v2(context: Handle) -> c_int {
    let Ok(context) = driver().context(context as usize) else { return code::INVALID_CONTEXT };
    context.stop.store(true, Ordering::Release);
    if context.running.load(Ordering::Acquire) > 0 && config().destroy_hangs {
        hang(&format!("destroying context {:#x} while its kernel runs", context.handle));
    }
    // Its kernels see the stop flag within 65536 instructions.
    while context.running.load(Ordering::Acquire) > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    driver().forget(&context);
    if current() == context.owner() {
        set_current(None);
    }
    code::SUCCESS
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
