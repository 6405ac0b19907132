//! The whole arrays a device keeps between tiles, by content hash: at most [`WHOLE_ARRAYS_KEPT`]
//! of them and a number of bytes (`Options::whole_bytes`, by default [`WHOLE_BYTES_KEPT`]), the
//! least recently used dropped first to make room.
//! Owns the bookkeeping only ([`WholeCache`]); each backend owns its kind of buffer and uploads
//! it. The daemon keeps the host bytes of the arrays it was sent in the same type.

use std::collections::HashMap;
use xcd_wire::ArrayHash;

/// Whole arrays kept on a device at once.
pub const WHOLE_ARRAYS_KEPT: usize = 64;
/// Bytes of whole arrays kept on a device at once unless told otherwise (on a CPU device, host
/// memory).
pub const WHOLE_BYTES_KEPT: u64 = 1 << 30;

/// Buffers of type `B` by content hash, the least recently used dropped first to make room.
pub struct WholeCache<B> {
    held: HashMap<ArrayHash, Held<B>>,
    /// Bytes kept at most.
    kept: u64,
    /// Arrays kept at most.
    count: usize,
    bytes: u64,
    uses: u64,
}

struct Held<B> {
    buffer: B,
    bytes: u64,
    last: u64,
}

impl<B> WholeCache<B> {
    /// A cache that keeps at most `kept` bytes in at most [`WHOLE_ARRAYS_KEPT`] arrays.
    pub fn new(kept: u64) -> Self {
        WholeCache::with_count(kept, WHOLE_ARRAYS_KEPT)
    }

    /// A cache that keeps at most `kept` bytes in at most `count` arrays.
    pub fn with_count(kept: u64, count: usize) -> Self {
        WholeCache { held: HashMap::new(), kept, count, bytes: 0, uses: 0 }
    }

    /// The buffer for `hash`, if held, counted as used now.
    pub fn get(&mut self, hash: &ArrayHash) -> Option<&B> {
        self.uses += 1;
        let uses = self.uses;
        self.held.get_mut(hash).map(|held| {
            held.last = uses;
            &held.buffer
        })
    }

    /// The buffer for `hash`, if held, without counting a use.
    pub(crate) fn peek(&self, hash: &ArrayHash) -> Option<&B> {
        self.held.get(hash).map(|held| &held.buffer)
    }

    /// Drops the least recently used until one more array of `bytes` fits.
    pub(crate) fn make_room(&mut self, bytes: u64) {
        self.make_room_keeping(bytes, &[]);
    }

    /// Drops the least recently used other than those in `keep` until one more array of `bytes`
    /// fits, or only those are left.
    pub(crate) fn make_room_keeping(&mut self, bytes: u64, keep: &[ArrayHash]) {
        while self.held.len() >= self.count || self.bytes + bytes > self.kept {
            if !self.drop_oldest(keep) {
                return;
            }
        }
    }

    /// Drops the least recently used array not in `keep`; false when there is none.
    pub(crate) fn drop_oldest(&mut self, keep: &[ArrayHash]) -> bool {
        let oldest = self
            .held
            .iter()
            .filter(|(hash, _)| !keep.contains(hash))
            .min_by_key(|(_, held)| held.last)
            .map(|(hash, _)| *hash);
        match oldest.and_then(|hash| self.held.remove(&hash)) {
            Some(held) => {
                self.bytes -= held.bytes;
                true
            }
            None => false,
        }
    }

    /// Bytes held of the arrays in `hashes`.
    pub(crate) fn bytes_of(&self, hashes: &[ArrayHash]) -> u64 {
        hashes.iter().filter_map(|h| self.held.get(h)).map(|held| held.bytes).sum()
    }

    /// Keeps `buffer` for `hash` (after [`WholeCache::make_room`]).
    pub(crate) fn insert(&mut self, hash: ArrayHash, buffer: B, bytes: u64) {
        self.uses += 1;
        if let Some(old) = self.held.insert(hash, Held { buffer, bytes, last: self.uses }) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
    }

    /// Keeps `buffer` for `hash` unless one is held already, making room for it first; true
    /// when it was kept.
    pub fn keep(&mut self, hash: ArrayHash, buffer: B, bytes: u64) -> bool {
        if self.held.contains_key(&hash) {
            return false;
        }
        self.make_room(bytes);
        self.insert(hash, buffer, bytes);
        true
    }

    /// Everything held, leaving this cache empty (its bounds as they were).
    pub(crate) fn take(&mut self) -> Self {
        std::mem::replace(self, WholeCache::with_count(self.kept, self.count))
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_by_count_and_bytes_least_recently_used_first() {
        let mut cache = WholeCache::new(WHOLE_BYTES_KEPT);
        let gib = 1u64 << 30;
        for i in 0..4u8 {
            cache.make_room(gib / 4);
            cache.insert(ArrayHash([i; 32]), i, gib / 4);
        }
        assert_eq!(cache.bytes(), gib);
        assert_eq!(cache.get(&ArrayHash([0; 32])), Some(&0), "used again: now the most recent");
        cache.make_room(gib / 4);
        cache.insert(ArrayHash([9; 32]), 9, gib / 4);
        assert_eq!(cache.bytes(), gib, "held to its bytes");
        assert!(cache.peek(&ArrayHash([1; 32])).is_none(), "the least recently used went");
        assert!(cache.peek(&ArrayHash([0; 32])).is_some() && cache.peek(&ArrayHash([9; 32])).is_some());
        for i in 0..200u8 {
            cache.make_room(1);
            cache.insert(ArrayHash([i; 32]), i, 1);
        }
        assert!(cache.held.len() <= WHOLE_ARRAYS_KEPT, "held to its count");
    }

    #[test]
    fn a_cache_with_a_count_of_its_own_holds_that_many() {
        let mut cache = WholeCache::with_count(1 << 20, usize::MAX);
        for i in 0..200u8 {
            assert!(cache.keep(ArrayHash([i; 32]), i, 1));
        }
        assert_eq!(cache.held.len(), 200, "bounded by bytes only");
        assert_eq!(cache.take().bytes(), 200);
        assert_eq!(cache.bytes(), 0);
        for i in 0..200u8 {
            cache.keep(ArrayHash([i; 32]), i, 1);
        }
        assert_eq!(cache.held.len(), 200, "its count survives take");
    }

    #[test]
    fn keeping_a_held_hash_changes_nothing() {
        let mut cache = WholeCache::with_count(10, usize::MAX);
        assert!(cache.keep(ArrayHash([1; 32]), "first", 4));
        assert!(cache.keep(ArrayHash([2; 32]), "second", 4));
        assert!(!cache.keep(ArrayHash([1; 32]), "again", 4), "already held");
        assert_eq!((cache.peek(&ArrayHash([1; 32])), cache.bytes()), (Some(&"first"), 8));
        // Not counted as a use: [1] is still the least recently used, so it goes first.
        assert!(cache.keep(ArrayHash([3; 32]), "third", 4));
        assert!(cache.peek(&ArrayHash([1; 32])).is_none() && cache.peek(&ArrayHash([2; 32])).is_some());
        assert_eq!(cache.bytes(), 8);
    }
}
