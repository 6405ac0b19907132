//! A device's memory as a byte budget: the per-item buffers of each loaded block and the whole
//! arrays a device keeps, held together to a number of bytes set when the device is opened.
//!
//! Buffers are grown on demand; a block's old buffers are let go **before** its larger ones are
//! made, so growing never holds twice the peak. Room is made by letting go the least recently run
//! blocks' buffers first, then the least recently used whole arrays (never one the tile at hand
//! binds). Where the driver itself runs out (another process took the memory), everything else is
//! let go and the allocation tried once more. What is short is told in bytes ([`Short`]).
//!
//! Owns the bookkeeping only, over any kind of buffer `B` and an allocation that may fail: the
//! CUDA backend makes its buffers through it. It must not call a driver itself.

use std::collections::HashMap;

use xcd_wire::{ArrayHash, BlockId};

use crate::whole::WholeCache;

/// Why a buffer could not be had.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Short<E> {
    /// The buffers would pass the device's budget even with everything else let go.
    Budget {
        /// The bytes the tile's buffers need.
        needed: u64,
        /// Bytes the budget has room for, with everything else let go.
        room: u64,
    },
    /// The driver had no room, even with everything else let go.
    Driver {
        /// The bytes the tile's buffers need.
        needed: u64,
    },
    /// The driver failed otherwise.
    Failed(E),
}

/// One block's per-item buffers.
struct Tiles<B> {
    /// One per array of the block: `None` for whole arrays.
    buffers: Vec<Option<B>>,
    /// Items each buffer holds.
    capacity: u32,
    bytes: u64,
    /// When it last ran (the device's count of runs).
    used: u64,
}

/// A device's buffers, held to a budget.
pub(crate) struct Memory<B> {
    budget: u64,
    tiles: HashMap<BlockId, Tiles<B>>,
    whole: WholeCache<B>,
    runs: u64,
}

impl<B> Memory<B> {
    /// Buffers of at most `budget` bytes, whole arrays among them of at most `whole_bytes`.
    pub(crate) fn new(budget: u64, whole_bytes: u64) -> Self {
        Memory { budget, tiles: HashMap::new(), whole: WholeCache::new(whole_bytes.min(budget)), runs: 0 }
    }

    /// The budget, in bytes.
    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// Raises the budget to `bytes` where that is more: the device has more room than when its
    /// budget was set (an old context's memory given back).
    pub(crate) fn grow_budget(&mut self, bytes: u64) {
        self.budget = self.budget.max(bytes);
    }

    /// Bytes held now.
    pub(crate) fn held(&self) -> u64 {
        self.tiles.values().map(|t| t.bytes).sum::<u64>() + self.whole.bytes()
    }

    /// Lets go of one block's buffers (it is no longer loaded).
    pub(crate) fn forget(&mut self, block: &BlockId) {
        self.tiles.remove(block);
    }

    /// Lets go of the least recently used buffer other than `block`'s and the whole arrays in
    /// `keep`; false when nothing is left to let go.
    fn let_go_one(&mut self, block: &BlockId, keep: &[ArrayHash]) -> bool {
        let oldest = self.tiles.iter().filter(|(k, _)| *k != block).min_by_key(|(_, t)| t.used).map(|(k, _)| *k);
        match oldest {
            Some(oldest) => self.tiles.remove(&oldest).is_some(),
            None => self.whole.drop_oldest(keep),
        }
    }

    /// Makes `bytes` of room within the budget, or says how much there can be.
    fn make_room(&mut self, bytes: u64, block: &BlockId, keep: &[ArrayHash]) -> Result<(), u64> {
        while self.held() + bytes > self.budget {
            if !self.let_go_one(block, keep) {
                return Err(self.budget.saturating_sub(self.held()));
            }
        }
        Ok(())
    }

    /// Makes one buffer of `bytes` with `make`, letting go of everything else and trying once
    /// more when the driver is out of memory (`oom` tells).
    fn make_buffer<E>(
        &mut self,
        bytes: u64,
        block: &BlockId,
        keep: &[ArrayHash],
        make: &mut dyn FnMut(u64) -> Result<B, E>,
        oom: fn(&E) -> bool,
    ) -> Result<B, Short<E>> {
        match make(bytes) {
            Ok(buffer) => Ok(buffer),
            Err(e) if oom(&e) => {
                while self.let_go_one(block, keep) {}
                make(bytes).map_err(|e| if oom(&e) { Short::Driver { needed: bytes } } else { Short::Failed(e) })
            }
            Err(e) => Err(Short::Failed(e)),
        }
    }

    /// `block`'s per-item buffers, holding at least `count` items of the element sizes in
    /// `sizes` (one per array; `None` for a whole array), grown with `make` where they are
    /// smaller. `keep` names the whole arrays the tile binds, which are not let go.
    pub(crate) fn tile_buffers<E>(
        &mut self,
        block: BlockId,
        sizes: &[Option<u32>],
        count: u32,
        keep: &[ArrayHash],
        make: &mut dyn FnMut(u64) -> Result<B, E>,
        oom: fn(&E) -> bool,
    ) -> Result<&mut [Option<B>], Short<E>> {
        self.runs += 1;
        let runs = self.runs;
        let fits = self.tiles.get(&block).is_some_and(|t| t.capacity >= count);
        if !fits {
            // The old buffers go first: growing never holds both.
            self.tiles.remove(&block);
            let bytes_for = |items: u32| sizes.iter().flatten().map(|s| u64::from(*s) * u64::from(items)).sum::<u64>();
            // Room for the next power of two, so that a run of growing tiles grows a few times;
            // where that could not fit the budget, room for the tile itself.
            let doubled = count.checked_next_power_of_two().unwrap_or(count);
            let floor = self.whole.bytes_of(keep);
            let capacity = if floor + bytes_for(doubled) <= self.budget { doubled } else { count };
            let needed = bytes_for(capacity);
            self.make_room(needed, &block, keep).map_err(|room| Short::Budget { needed, room })?;
            let mut buffers = Vec::with_capacity(sizes.len());
            for size in sizes {
                buffers.push(match size {
                    Some(size) => {
                        Some(self.make_buffer(u64::from(*size) * u64::from(capacity), &block, keep, make, oom)?)
                    }
                    None => None,
                });
            }
            self.tiles.insert(block, Tiles { buffers, capacity, bytes: bytes_for(capacity), used: runs });
        }
        match self.tiles.get_mut(&block) {
            Some(tiles) => {
                tiles.used = runs;
                Ok(&mut tiles.buffers)
            }
            None => Err(Short::Budget { needed: 0, room: 0 }),
        }
    }

    /// Keeps the whole array `hash` of `bytes`, made (and filled) with `make` unless already
    /// kept. `keep` names the other whole arrays the tile binds.
    pub(crate) fn whole<E>(
        &mut self,
        block: BlockId,
        hash: ArrayHash,
        bytes: u64,
        keep: &[ArrayHash],
        make: &mut dyn FnMut(u64) -> Result<B, E>,
        oom: fn(&E) -> bool,
    ) -> Result<(), Short<E>> {
        if self.whole.get(&hash).is_some() {
            return Ok(());
        }
        self.whole.make_room_keeping(bytes, keep);
        self.make_room(bytes, &block, keep).map_err(|room| Short::Budget { needed: bytes, room })?;
        let buffer = self.make_buffer(bytes, &block, keep, make, oom)?;
        self.whole.insert(hash, buffer, bytes);
        Ok(())
    }

    /// The buffers a tile of `block` binds: its per-item buffers and the whole arrays `hashes`,
    /// in order (`None` for one not kept).
    pub(crate) fn bound(&self, block: &BlockId, hashes: &[ArrayHash]) -> (Option<&[Option<B>]>, Vec<Option<&B>>) {
        let tiles = self.tiles.get(block).map(|t| t.buffers.as_slice());
        (tiles, hashes.iter().map(|h| self.whole.peek(h)).collect())
    }
}

#[cfg(test)]
mod tests {
    //! The budget against a fake allocator that counts the bytes its live buffers hold and
    //! refuses past a device's memory, as a driver does.

    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    /// A buffer of the fake device: gives its bytes back when dropped.
    struct Fake {
        bytes: u64,
        live: Rc<Cell<u64>>,
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.live.set(self.live.get() - self.bytes);
        }
    }

    #[derive(Debug, PartialEq)]
    enum FakeError {
        OutOfMemory,
    }

    /// A device of `total` bytes; its allocator records the most ever live.
    struct Device {
        total: Rc<Cell<u64>>,
        live: Rc<Cell<u64>>,
        peak: Rc<Cell<u64>>,
    }

    impl Device {
        fn new(total: u64) -> Self {
            Device { total: Rc::new(Cell::new(total)), live: Rc::new(Cell::new(0)), peak: Rc::new(Cell::new(0)) }
        }
        fn alloc(&self) -> impl FnMut(u64) -> Result<Fake, FakeError> + use<> {
            let (total, live, peak) = (self.total.clone(), self.live.clone(), self.peak.clone());
            move |bytes| {
                if live.get() + bytes > total.get() {
                    return Err(FakeError::OutOfMemory);
                }
                live.set(live.get() + bytes);
                peak.set(peak.get().max(live.get()));
                Ok(Fake { bytes, live: live.clone() })
            }
        }
    }

    fn oom(e: &FakeError) -> bool {
        *e == FakeError::OutOfMemory
    }

    fn block(n: u8) -> BlockId {
        BlockId([n; 32])
    }

    const KIB: u64 = 1024;

    #[test]
    fn a_block_grows_without_holding_its_old_buffers() {
        let device = Device::new(64 * KIB);
        let mut memory = Memory::new(64 * KIB, 0);
        let mut alloc = device.alloc();
        // Two arrays of 4-byte elements: 8 bytes an item.
        let sizes = [Some(4), Some(4)];
        memory.tile_buffers(block(1), &sizes, 2048, &[], &mut alloc, oom).expect("16 KiB");
        assert_eq!(device.live.get(), 16 * KIB);
        // 8192 items need 64 KiB: the whole device, which fits only if the 16 KiB went first.
        memory.tile_buffers(block(1), &sizes, 8192, &[], &mut alloc, oom).expect("64 KiB");
        assert_eq!((device.live.get(), device.peak.get()), (64 * KIB, 64 * KIB));
        assert_eq!(memory.held(), 64 * KIB);
    }

    #[test]
    fn blocks_are_held_to_the_budget_least_recently_run_first() {
        let device = Device::new(1 << 30);
        let mut memory = Memory::new(48 * KIB, 0);
        let mut alloc = device.alloc();
        for n in 1..=3 {
            memory.tile_buffers(block(n), &[Some(4)], 4096, &[], &mut alloc, oom).expect("16 KiB each");
        }
        memory.tile_buffers(block(1), &[Some(4)], 10, &[], &mut alloc, oom).expect("block 1 runs again");
        memory.tile_buffers(block(4), &[Some(4)], 4096, &[], &mut alloc, oom).expect("room made");
        assert!(device.peak.get() <= 48 * KIB, "never past the budget: peak {}", device.peak.get());
        let kept: Vec<bool> = (1..=4).map(|n| memory.tiles.contains_key(&block(n))).collect();
        assert_eq!(kept, [true, false, true, true], "block 2 ran least recently");
    }

    #[test]
    fn a_tile_over_the_budget_is_told_in_bytes_and_a_smaller_capacity_is_tried_first() {
        let device = Device::new(1 << 30);
        let mut memory = Memory::new(40 * KIB, 0);
        let mut alloc = device.alloc();
        // 9000 items of 4 bytes: the power of two (16384 items, 64 KiB) does not fit, 36000 does.
        memory.tile_buffers(block(1), &[Some(4)], 9000, &[], &mut alloc, oom).expect("the tile itself fits");
        assert_eq!(memory.held(), 36000);
        let short = memory.tile_buffers(block(2), &[Some(4), Some(4)], 3000, &[], &mut alloc, oom).err();
        assert!(short.is_none(), "block 1's buffers were let go for block 2's 24000 bytes");
        let short = memory.tile_buffers(block(3), &[Some(8)], 8192, &[], &mut alloc, oom).err();
        assert_eq!(short, Some(Short::Budget { needed: 65536, room: 40 * KIB }));
    }

    #[test]
    fn whole_arrays_the_tile_binds_are_kept_while_room_is_made() {
        let device = Device::new(1 << 30);
        let mut memory = Memory::new(40 * KIB, 40 * KIB);
        let mut alloc = device.alloc();
        let (a, b, c) = (ArrayHash([1; 32]), ArrayHash([2; 32]), ArrayHash([3; 32]));
        memory.whole(block(1), a, 16 * KIB, &[a, b], &mut alloc, oom).expect("a");
        memory.whole(block(1), b, 16 * KIB, &[a, b], &mut alloc, oom).expect("b");
        // A tile that binds b and c: a goes (the least recently used not bound), b stays.
        memory.whole(block(2), c, 16 * KIB, &[b, c], &mut alloc, oom).expect("c");
        let (_, bound) = memory.bound(&block(2), &[a, b, c]);
        assert_eq!(bound.iter().map(Option::is_some).collect::<Vec<_>>(), [false, true, true]);
        // Per-item buffers make room by letting whole arrays go, but not those the tile binds.
        let short = memory.tile_buffers(block(2), &[Some(4)], 4096, &[b, c], &mut alloc, oom).err();
        assert_eq!(short, Some(Short::Budget { needed: 16 * KIB, room: 8 * KIB }));
        memory.tile_buffers(block(2), &[Some(4)], 4096, &[c], &mut alloc, oom).expect("b let go");
        assert!(device.peak.get() <= 40 * KIB);
    }

    #[test]
    fn when_the_driver_runs_out_everything_else_is_let_go_and_tried_once_more() {
        let device = Device::new(64 * KIB);
        let mut memory = Memory::new(64 * KIB, 64 * KIB);
        let mut alloc = device.alloc();
        memory.tile_buffers(block(1), &[Some(4)], 4096, &[], &mut alloc, oom).expect("16 KiB");
        memory.whole(block(1), ArrayHash([7; 32]), 16 * KIB, &[], &mut alloc, oom).expect("16 KiB");
        // Another process takes 24 KiB of the device: 8 KiB are left for the 32 KiB asked.
        device.total.set(40 * KIB);
        memory.tile_buffers(block(2), &[Some(4)], 8192, &[], &mut alloc, oom).expect("room after letting go");
        assert_eq!(memory.held(), 32 * KIB);
        device.total.set(16 * KIB);
        let short = memory.tile_buffers(block(3), &[Some(4)], 8192, &[], &mut alloc, oom).err();
        assert_eq!(short, Some(Short::Driver { needed: 32 * KIB }));
    }
}
