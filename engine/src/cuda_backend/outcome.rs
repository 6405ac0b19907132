//! What a CUDA driver error means for the device: out of memory, a context that is gone, or
//! one failed call. Owns the table only; the backend acts on it.

use cudarc::driver::DriverError;
use cudarc::driver::sys::CUresult;

use crate::EngineError;

/// What a driver error means for the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
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
pub(super) fn outcome(code: CUresult) -> Outcome {
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

/// Whether a driver error is the device running out of memory.
pub(super) fn out_of_memory(e: &DriverError) -> bool {
    outcome(e.0) == Outcome::OutOfMemory
}

/// Maps a driver error met while running a tile that needs `needed` bytes to what a caller can
/// act on ([`outcome`]); `free` tells the device's bytes free for work, asked only when it ran out.
pub(super) fn run_error(
    device: &str,
    block: &str,
    e: DriverError,
    needed: u64,
    free: impl FnOnce() -> u64,
) -> EngineError {
    let device = device.to_owned();
    match outcome(e.0) {
        Outcome::OutOfMemory => EngineError::OutOfMemory { device, needed, free: free() },
        Outcome::Lost => EngineError::DeviceLost { device, reason: e.to_string() },
        Outcome::Failed => EngineError::Launch { device, block: block.to_owned(), reason: e.to_string() },
    }
}

/// Maps a driver error met while loading a block: the device is lost or the block is refused.
pub(super) fn load_error(device: &str, block: &str, e: DriverError) -> EngineError {
    let device = device.to_owned();
    match outcome(e.0) {
        Outcome::Lost => EngineError::DeviceLost { device, reason: e.to_string() },
        _ => EngineError::Load { device, block: block.to_owned(), reason: e.to_string() },
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
