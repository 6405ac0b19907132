//! The scheduler's decisions, with no threads and no clock of its own: which tile a worker gets
//! next and how large, and what a finished or failed tile changes. The threads of a real run
//! ([`super::Run::run_on`]) and the simulation's virtual time ([`super::sim`]) both drive this one
//! [`Board`], so what the simulation shows is what a run does. Time comes in as the busy time
//! each tile took; nothing here reads a clock or touches a worker.

use std::time::Duration;

use super::work::Work;
use super::{FIRST_TILE_SHARE, MIN_TILE, WorkerStats};
use crate::worker::TileSlices;

/// The shared state of one call to [`super::Run::run_on`] (or of one simulated run).
pub(crate) struct Board<'w, 'a> {
    work: Work<'a>,
    /// Items in the work when the call began.
    total: u64,
    /// Tiles handed out and not yet finished or given back.
    in_flight: usize,
    pub(crate) stats: &'w mut [WorkerStats],
}

/// What a worker's lane does next.
pub(crate) enum Next<'a> {
    /// Runs this tile.
    Tile(TileSlices<'a>),
    /// Waits: nothing is left to hand out, but tiles in flight may yet be given back.
    Wait,
    /// Stops: the run is over, or the worker has failed.
    Stop,
}

impl<'w, 'a> Board<'w, 'a> {
    /// A board for running `work` on the workers of `stats`.
    pub(crate) fn new(work: Work<'a>, stats: &'w mut [WorkerStats]) -> Self {
        Board { total: work.items(), work, in_flight: 0, stats }
    }

    /// What is left: nothing, once every tile has finished.
    pub(crate) fn into_work(self) -> Work<'a> {
        self.work
    }

    /// The next tile size for worker `w`, `fixed` when the caller fixes it.
    fn size_for(&self, w: usize, fixed: Option<u32>) -> u32 {
        if let Some(fixed) = fixed {
            return fixed.max(1);
        }
        let live = || self.stats.iter().filter(|s| s.failure.is_none());
        let workers = live().count().max(1) as f64;
        let Some(rate) = self.stats[w].pace() else {
            let first = self.total / (u64::from(FIRST_TILE_SHARE) * workers as u64);
            return u32::try_from(first).unwrap_or(u32::MAX).max(MIN_TILE);
        };
        let (known, sum) = live().filter_map(WorkerStats::pace).fold((0usize, 0.0), |(n, s), p| (n + 1, s + p));
        let average = sum / known.max(1) as f64;
        let total_rate: f64 = live().map(|s| s.pace().unwrap_or(average)).sum();
        let share = self.work.items() as f64 * rate / total_rate.max(f64::MIN_POSITIVE);
        let by_time = rate * self.stats[w].tile_time().as_secs_f64();
        // A rate measured on cheap items (escape's outer pixels) would hand out a tile of costly
        // ones far too large; growing at most twofold per tile bounds that mistake.
        let grown = 2.0 * f64::from(self.stats[w].last_tile.max(MIN_TILE));
        (by_time.min(share / 2.0).min(grown).max(f64::from(MIN_TILE)).min(f64::from(u32::MAX))) as u32
    }

    /// The next tile for worker `w`: of [`Board::size_for`] items (`fixed`: the caller's size)
    /// and at most `max_tile`; `elem` is each array's element size. Sizing is skipped when
    /// nothing is left, as it is for every lane that wakes at the end of a run.
    pub(crate) fn next(&mut self, w: usize, fixed: Option<u32>, max_tile: u32, elem: &[u32]) -> Next<'a> {
        if self.stats[w].failure.is_some() {
            return Next::Stop;
        }
        if self.work.is_empty() {
            return if self.in_flight == 0 { Next::Stop } else { Next::Wait };
        }
        let size = self.size_for(w, fixed).min(max_tile);
        match self.work.take_front(size, elem) {
            Some(tile) => {
                self.in_flight += 1;
                Next::Tile(tile)
            }
            None => Next::Stop,
        }
    }

    /// Worker `w` finished a tile of `count` items in `busy`.
    pub(crate) fn finished(&mut self, w: usize, count: u32, busy: Duration) {
        self.in_flight -= 1;
        self.stats[w].record(count, busy);
    }

    /// Worker `w` failed (the first lane to fail says why; the others fail for the same
    /// reason) and gives back `tile`, which it had not written.
    pub(crate) fn failed(&mut self, w: usize, error: &str, tile: Option<TileSlices<'a>>) {
        if self.stats[w].failure.is_none() {
            tracing::warn!(worker = %self.stats[w].name, "worker stopped: {error}");
            self.stats[w].failure = Some(error.to_owned());
        }
        if let Some(tile) = tile {
            self.in_flight -= 1;
            self.work.put(tile);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_grow_at_most_twofold() {
        let n = 2_000_000;
        let mut stats = vec![WorkerStats::new("a"), WorkerStats::new("b")];
        let board = Board::new(Work::new(Vec::new(), n), &mut stats);
        // A first tile that ran absurdly fast: the next is still at most twice its size.
        board.stats[0].record(1_000, Duration::from_nanos(1));
        assert_eq!(board.size_for(0, None), 2_000);
    }

    #[test]
    fn a_failed_worker_stops_and_its_tile_goes_back_in_order() {
        let mut stats = vec![WorkerStats::new("a"), WorkerStats::new("b")];
        let mut board = Board::new(Work::new(Vec::new(), 1_000), &mut stats);
        let Next::Tile(a) = board.next(0, Some(100), u32::MAX, &[]) else { panic!("a tile") };
        let Next::Tile(b) = board.next(1, Some(900), u32::MAX, &[]) else { panic!("a tile") };
        assert!(matches!(board.next(1, Some(100), u32::MAX, &[]), Next::Wait), "tiles are in flight");
        board.failed(0, "gone", Some(a));
        assert!(matches!(board.next(0, Some(100), u32::MAX, &[]), Next::Stop), "a failed worker stops");
        board.finished(1, b.tile.count, Duration::from_millis(1));
        let Next::Tile(again) = board.next(1, Some(1_000), u32::MAX, &[]) else { panic!("the given-back tile") };
        assert_eq!((again.tile.start, again.tile.count), (0, 100));
        board.finished(1, 100, Duration::from_millis(1));
        assert!(matches!(board.next(1, Some(100), u32::MAX, &[]), Next::Stop), "the run is over");
        assert_eq!(board.stats[0].failure.as_deref(), Some("gone"));
    }
}
