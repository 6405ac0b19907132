//! Device memory: host memory here, each allocation filled with 0xA5 when made (a GPU's fresh
//! memory holds whatever was there), owned by the context that made it and gone with it. Behind
//! a lock of its own, which a stream's worker takes to run its work (after the driver's lock,
//! whoever takes both). Owns the allocations only.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::OnceLock;

/// One allocation: its bytes (taken out while a kernel uses them), its size, whose it is.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub(crate) bytes: Vec<u8>,
    pub(crate) size: usize,
    pub(crate) device: i32,
    /// The context that made it: (handle, generation).
    pub(crate) owner: (usize, u64),
}

/// Every allocation, by its device address.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    pub(crate) allocations: HashMap<u64, Allocation>,
    next_pointer: u64,
}

/// The memory, locked.
pub(crate) fn memory() -> MutexGuard<'static, Memory> {
    static MEMORY: OnceLock<Mutex<Memory>> = OnceLock::new();
    MEMORY.get_or_init(Mutex::default).lock()
}

impl Memory {
    /// Bytes in use on `device`.
    pub(crate) fn used(&self, device: i32) -> u64 {
        self.allocations.values().filter(|a| a.device == device).map(|a| a.size as u64).sum()
    }

    /// Makes `size` bytes on `device` for context `owner`, within `total`; its address.
    pub(crate) fn allocate(&mut self, device: i32, owner: (usize, u64), size: usize, total: u64) -> Result<u64, i32> {
        if size == 0 {
            return Err(crate::code::INVALID_VALUE);
        }
        if self.used(device).checked_add(size as u64).is_none_or(|used| used > total) {
            return Err(crate::code::OUT_OF_MEMORY);
        }
        if self.next_pointer == 0 {
            self.next_pointer = 0x7_0000_0000;
        }
        let pointer = self.next_pointer;
        self.next_pointer += (size as u64).next_multiple_of(256) + 256;
        self.allocations.insert(pointer, Allocation { bytes: vec![0xA5; size], size, device, owner });
        Ok(pointer)
    }

    /// Frees every allocation of context `owner`; how many there were.
    pub(crate) fn forget(&mut self, owner: (usize, u64)) -> usize {
        let before = self.allocations.len();
        self.allocations.retain(|_, a| a.owner != owner);
        before - self.allocations.len()
    }
}
