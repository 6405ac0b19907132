//! Streams, modules and their functions, launches and events. A module is PTX the interpreter
//! reads (its JIT): what it cannot read fails as `CUDA_ERROR_INVALID_PTX`, with the reason in the
//! error log a caller asks for. A launch reads as many arguments as the kernel declares, as the
//! real driver does.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Arc;

use super::{Handle, code_of, put, ready};
use crate::code;
use crate::driver::{Event, Function, driver};
use crate::stream::{Param, Stream, Work};

/// `CU_JIT_ERROR_LOG_BUFFER` and `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`.
const ERROR_LOG: c_int = 5;
const ERROR_LOG_SIZE: c_int = 6;

#[unsafe(no_mangle)]
unsafe extern "C" fn cuStreamCreate(stream: *mut Handle, _flags: c_uint) -> c_int {
    let mut driver = driver();
    let made = ready(&driver).and_then(|()| driver.current()).and_then(Stream::start);
    let result = made.map(|s| {
        let handle = driver.handle();
        driver.streams.insert(handle, s);
        handle
    });
    // SAFETY: the caller passes a place for a handle.
    code_of(result.and_then(|h| unsafe { put(stream, h as Handle) }))
}

#[unsafe(no_mangle)]
extern "C" fn cuStreamDestroy_v2(stream: Handle) -> c_int {
    // Its queued work goes on by itself, as on a GPU (`Stream`).
    code_of(driver().streams.remove(&(stream as usize)).map(drop).ok_or(code::INVALID_HANDLE))
}

#[unsafe(no_mangle)]
extern "C" fn cuStreamSynchronize(stream: Handle) -> c_int {
    let found = driver().streams.get(&(stream as usize)).cloned();
    code_of(found.ok_or(code::INVALID_HANDLE).and_then(|s| s.finish()))
}

/// Where a caller wants the JIT's error log: its buffer and size.
struct LogBuffer {
    at: *mut u8,
    len: usize,
}

/// Reads the JIT options a caller passed, keeping the error log's buffer.
///
/// # Safety
/// `options` and `values` hold `count` entries each.
unsafe fn log_buffer(count: c_uint, options: *const c_int, values: *const *mut c_void) -> Option<LogBuffer> {
    if options.is_null() || values.is_null() {
        return None;
    }
    let (mut at, mut len) = (std::ptr::null_mut(), 0);
    for k in 0..count as usize {
        // SAFETY: both arrays hold `count` entries.
        let (option, value) = unsafe { (*options.add(k), *values.add(k)) };
        match option {
            ERROR_LOG => at = value.cast::<u8>(),
            ERROR_LOG_SIZE => len = value as usize,
            _ => {}
        }
    }
    (!at.is_null() && len > 0).then_some(LogBuffer { at, len })
}

/// Loads PTX as a module of the current context: the interpreter's reading is the JIT.
///
/// # Safety
/// `image` is a NUL-terminated text; `log` points where the caller said.
unsafe fn load(module: *mut Handle, image: *const c_void, log: Option<LogBuffer>) -> c_int {
    if image.is_null() {
        return code::INVALID_VALUE;
    }
    let mut driver = driver();
    let context = match ready(&driver).and_then(|()| driver.current()) {
        Ok(context) => context,
        Err(e) => return e,
    };
    // SAFETY: a NUL-terminated text, by the caller's promise.
    let text = unsafe { CStr::from_ptr(image.cast::<c_char>()) }.to_string_lossy();
    let program = match xcd_ptxsim::parse(&text) {
        Ok(program) => program,
        Err(e) => {
            if let Some(log) = log {
                let words = format!("ptxas application ptx input, {e}\n");
                let n = words.len().min(log.len - 1);
                // SAFETY: the caller's buffer holds `log.len` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(words.as_ptr(), log.at, n);
                    *log.at.add(n) = 0;
                }
            }
            return code::INVALID_PTX;
        }
    };
    let owner = (context.handle, context.generation);
    let function = driver.handle();
    driver.functions.insert(function, Function { program: Arc::new(program), owner });
    let handle = driver.handle();
    driver.modules.insert(handle, (vec![function], owner));
    // SAFETY: the caller passes a place for a handle.
    code_of(unsafe { put(module, handle as Handle) })
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> c_int {
    // SAFETY: the caller's promises are load's.
    unsafe { load(module, image, None) }
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    count: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
) -> c_int {
    // SAFETY: the caller's promises are log_buffer's and load's.
    unsafe { load(module, image, log_buffer(count, options, values)) }
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuModuleGetFunction(function: *mut Handle, module: Handle, name: *const c_char) -> c_int {
    if name.is_null() {
        return code::INVALID_VALUE;
    }
    // SAFETY: a NUL-terminated name, by the caller's promise.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let driver = driver();
    let Some((functions, _)) = driver.modules.get(&(module as usize)) else { return code::INVALID_HANDLE };
    match functions.iter().find(|f| driver.functions.get(f).is_some_and(|f| f.program.entry == name)) {
        // SAFETY: the caller passes a place for a handle.
        Some(f) => code_of(unsafe { put(function, *f as Handle) }),
        None => code::NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
extern "C" fn cuModuleUnload(module: Handle) -> c_int {
    let mut driver = driver();
    match driver.modules.remove(&(module as usize)) {
        Some((functions, _)) => {
            for f in functions {
                driver.functions.remove(&f);
            }
            code::SUCCESS
        }
        None => code::INVALID_HANDLE,
    }
}

/// The arguments a kernel declares, read from the caller's array of pointers to them.
///
/// # Safety
/// `params` holds a pointer per declared parameter, each to a value of that parameter's size.
unsafe fn arguments(bytes: &[usize], params: *mut *mut c_void) -> Result<Vec<Param>, i32> {
    if params.is_null() {
        return if bytes.is_empty() { Ok(Vec::new()) } else { Err(code::INVALID_VALUE) };
    }
    let mut read = Vec::with_capacity(bytes.len());
    for (k, size) in bytes.iter().enumerate() {
        // SAFETY: the caller's array holds one pointer per declared parameter.
        let at = unsafe { *params.add(k) };
        if at.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: each points to a value of the declared size.
        read.push(unsafe {
            if *size == 8 {
                Param::Pointer(at.cast::<u64>().read_unaligned())
            } else {
                Param::Word(at.cast::<u32>().read_unaligned())
            }
        });
    }
    Ok(read)
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn cuLaunchKernel(
    function: Handle,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    _shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) -> c_int {
    let (program, stream) = {
        let driver = driver();
        let Some(f) = driver.functions.get(&(function as usize)) else { return code::INVALID_HANDLE };
        let Some(s) = driver.streams.get(&(stream as usize)).cloned() else { return code::INVALID_HANDLE };
        if f.owner != s.owner() {
            return code::INVALID_HANDLE;
        }
        (f.program.clone(), s)
    };
    if let Err(e) = stream.context().check() {
        return e;
    }
    if [grid_y, grid_z, block_y, block_z] != [1; 4] {
        return code::NOT_SUPPORTED;
    }
    // SAFETY: the caller's array holds the kernel's arguments.
    match unsafe { arguments(&program.param_bytes(), params) } {
        Ok(params) => {
            stream.push(Work::Launch { program, grid: grid_x, block: block_x, params });
            code::SUCCESS
        }
        Err(e) => e,
    }
}

#[unsafe(no_mangle)]
unsafe extern "C" fn cuEventCreate(event: *mut Handle, _flags: c_uint) -> c_int {
    let mut driver = driver();
    let result = ready(&driver).and_then(|()| driver.current()).map(|_| {
        let handle = driver.handle();
        driver.events.insert(handle, Event::default());
        handle
    });
    // SAFETY: the caller passes a place for a handle.
    code_of(result.and_then(|h| unsafe { put(event, h as Handle) }))
}

#[unsafe(no_mangle)]
extern "C" fn cuEventRecord(event: Handle, stream: Handle) -> c_int {
    let mut driver = driver();
    let Some(stream) = driver.streams.get(&(stream as usize)).cloned() else { return code::INVALID_HANDLE };
    if let Err(e) = stream.context().check() {
        return e;
    }
    let upto = stream.queued();
    match driver.events.get_mut(&(event as usize)) {
        Some(event) => {
            event.recorded = Some((stream, upto));
            code::SUCCESS
        }
        None => code::INVALID_HANDLE,
    }
}

#[unsafe(no_mangle)]
extern "C" fn cuEventQuery(event: Handle) -> c_int {
    let recorded = match driver().events.get(&(event as usize)) {
        Some(event) => event.recorded.clone(),
        None => return code::INVALID_HANDLE,
    };
    let Some((stream, upto)) = recorded else { return code::SUCCESS };
    let result =
        stream.context().check().and_then(|()| if stream.reached(upto) { Ok(()) } else { Err(code::NOT_READY) });
    code_of(result)
}

#[unsafe(no_mangle)]
extern "C" fn cuEventDestroy_v2(event: Handle) -> c_int {
    code_of(driver().events.remove(&(event as usize)).map(drop).ok_or(code::INVALID_HANDLE))
}
