//! The items of a run not yet computed: tiles that own their slices of the program's arrays,
//! in item order. Tiles are carved from the front (or, for placement's measuring, at a
//! position), and given back in order. It knows nothing of workers, rates or time.

use std::collections::VecDeque;

use xcd_wire::Tile;

use crate::args::ArrayArg;
use crate::worker::{TileArray, TileSlices};

/// Items not yet computed: tiles owning their slices of the program's arrays, in item order.
#[derive(Debug, Default)]
pub(crate) struct Work<'a> {
    segments: VecDeque<TileSlices<'a>>,
}

impl<'a> Work<'a> {
    /// All `n` items of a run over the program's arrays.
    pub(crate) fn new(arrays: Vec<ArrayArg<'a>>, n: u32) -> Work<'a> {
        let arrays = arrays
            .into_iter()
            .map(|a| match a {
                ArrayArg::In(d) => TileArray::In(d),
                ArrayArg::Out(d) => TileArray::Out(d),
                ArrayArg::InOut(d) => TileArray::InOut(d),
                ArrayArg::Whole(_) => TileArray::Whole,
            })
            .collect();
        let mut segments = VecDeque::new();
        if n > 0 {
            segments.push_back(TileSlices { tile: Tile { start: 0, count: n }, arrays });
        }
        Work { segments }
    }

    /// Items left.
    pub(crate) fn items(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.tile.count)).sum()
    }

    /// True when nothing is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Where each stretch left starts, in order.
    #[cfg(test)]
    pub(crate) fn starts(&self) -> Vec<u32> {
        self.segments.iter().map(|s| s.tile.start).collect()
    }

    /// Takes up to `count` (at least one) items from the front.
    pub(crate) fn take_front(&mut self, count: u32, elem: &[u32]) -> Option<TileSlices<'a>> {
        let first = self.segments.pop_front()?;
        let count = count.max(1);
        if first.tile.count <= count {
            return Some(first);
        }
        let (head, rest) = first.split(count, elem);
        self.segments.push_front(rest);
        Some(head)
    }

    /// Carves up to `count` items out of one stretch, starting at the first item left at or
    /// after `at` (or the first item left, when none is).
    pub(crate) fn carve(&mut self, at: u32, count: u32, elem: &[u32]) -> Work<'a> {
        let Some(i) = self.segments.iter().position(|s| s.tile.start + s.tile.count > at).or(
            // Nothing at or after `at`: wrap to the front.
            if self.segments.is_empty() { None } else { Some(0) },
        ) else {
            return Work::default();
        };
        let Some(mut segment) = self.segments.remove(i) else { return Work::default() };
        if segment.tile.start < at && at < segment.tile.start + segment.tile.count {
            let offset = at - segment.tile.start;
            let (left, right) = segment.split(offset, elem);
            self.segments.insert(i, left);
            segment = right;
        }
        let mut piece = Work::default();
        let count = count.max(1);
        if segment.tile.count > count {
            let (head, rest) = segment.split(count, elem);
            self.put(rest);
            piece.segments.push_back(head);
        } else {
            piece.segments.push_back(segment);
        }
        piece
    }

    /// Puts a tile back in item order.
    pub(crate) fn put(&mut self, tile: TileSlices<'a>) {
        let at = self.segments.partition_point(|s| s.tile.start < tile.tile.start);
        self.segments.insert(at, tile);
    }

    /// Takes back everything `other` holds.
    pub(crate) fn absorb(&mut self, other: Work<'a>) {
        for tile in other.segments {
            self.put(tile);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The items a work holds, as (start, count) stretches.
    fn stretches(work: &Work<'_>) -> Vec<(u32, u32)> {
        work.segments.iter().map(|s| (s.tile.start, s.tile.count)).collect()
    }

    #[test]
    fn carving_takes_one_stretch_at_the_position_and_absorbing_restores_the_rest() {
        let elem = [4u32];
        let mut y = vec![0u32; 1_000];
        let mut work = Work::new(vec![ArrayArg::Out(bytemuck::cast_slice_mut(&mut y))], 1_000);
        let a = work.carve(500, 100, &elem);
        assert_eq!(stretches(&a), [(500, 100)]);
        assert_eq!(stretches(&work), [(0, 500), (600, 400)]);
        // A piece that runs into the end of a stretch stops there.
        let b = work.carve(450, 100, &elem);
        assert_eq!(stretches(&b), [(450, 50)]);
        // A position inside a gap starts at the next item left; past the end wraps to the front.
        let c = work.carve(520, 10, &elem);
        assert_eq!(stretches(&c), [(600, 10)]);
        let d = work.carve(2_000, 10, &elem);
        assert_eq!(stretches(&d), [(0, 10)]);
        assert_eq!(work.items(), 1_000 - 170);
        for piece in [c, a, d, b] {
            work.absorb(piece);
        }
        assert_eq!(stretches(&work), [(0, 10), (10, 440), (450, 50), (500, 100), (600, 10), (610, 390)]);
        assert_eq!(work.items(), 1_000);
        // Each stretch still owns exactly its slice of the array.
        for s in &work.segments {
            let TileArray::Out(d) = &s.arrays[0] else { panic!("an output array") };
            assert_eq!(d.len(), s.tile.count as usize * 4);
        }
        assert!(Work::default().carve(0, 10, &elem).is_empty());
    }
}
