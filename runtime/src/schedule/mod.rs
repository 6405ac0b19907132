//! The tile scheduler: runs a set of items on a set of workers, handing out tiles dynamically,
//! sized to each worker's speed.
//!
//! The items not yet computed are a [`Work`] (`work`): tiles that own their slices of the
//! program's arrays, in item order. Tiles are carved from its front, so each owns its slice and
//! results land in place with no copy back. A worker that fails gives its tile back untouched
//! and stops; the tile then runs on another worker. Tile sizes follow each worker's measured
//! rate (aiming at [`TARGET_TILE`] of work) and shrink toward the end, each worker taking at most
//! half of its fair share of what remains, so all workers finish close together. Those decisions
//! are the `Board`'s (`board`), which has no threads and no clock: [`Run::run_on`] drives it
//! with a thread per lane (a remote worker has its daemon's depth of lanes, so that many tiles
//! are in flight), and [`sim`] drives the same board in virtual time, with hundreds of made-up
//! workers. A run is a value, [`Run`] (`run`): its workers and their statistics live there, so
//! that a run made of several calls (placement measuring) keeps each worker's rate from one to
//! the next. Which workers run a block is [`crate::placement`]'s business, not this module's.

mod board;
mod run;
pub mod sim;
mod work;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

pub(crate) use run::Run;
pub(crate) use work::Work;

use crate::worker::{Worker, WorkerKind};

/// How long one tile should keep a worker busy once its rate is known.
pub(crate) const TARGET_TILE: Duration = Duration::from_millis(40);
/// Smallest tile handed out while more items remain (one GPU workgroup).
pub(crate) const MIN_TILE: u32 = 64;
/// How much busy time a worker's pace remembers (older tiles fade by e each time this passes).
const PACE_MEMORY: Duration = Duration::from_millis(250);
/// A worker's first, unmeasured tile is an equal share of the items over this: small, so that
/// a worker far slower than the rest cannot hold the run with it (at 1/32 it did, in the
/// simulation of docs/performance.md); tiles then at most double.
const FIRST_TILE_SHARE: u32 = 1024;

/// What one worker did in a run.
#[derive(Debug, Clone, Default)]
pub struct WorkerStats {
    /// Worker name, e.g. `cpu` or `gpu:vulkan:llvmpipe (…)`.
    pub name: String,
    /// Its kind.
    pub kind: WorkerKind,
    /// What the worker is, for the report: `remote worker remote:…, depth 3, round trip …`.
    pub about: String,
    /// Tiles it runs at once.
    pub lanes: usize,
    /// Items it computed.
    pub items: u64,
    /// Tiles it computed.
    pub tiles: u64,
    /// Time it spent running tiles.
    pub busy: Duration,
    /// Why it stopped early, if it did; its tiles ran elsewhere.
    pub failure: Option<String>,
    /// What else the report should say of how it ran its tiles (e.g. some on the CPU form).
    pub note: Option<String>,
    /// Its round trip (see [`Worker::round_trip`]), left out of its pace.
    round_trip: Duration,
    /// Items in its last tile: the next may be at most twice as large.
    last_tile: u32,
    /// Items and busy seconds of its recent tiles, older ones fading with [`PACE_MEMORY`] of
    /// busy time: its pace, which sizes its next tile. Unlike the whole-run rate it forgets the
    /// tiny tiles measuring starts with, whose fixed costs would keep every later tile small.
    recent: (f64, f64),
}

impl WorkerStats {
    /// Items per second lately (see `recent`), once it has run a tile.
    fn pace(&self) -> Option<f64> {
        (self.recent.1 > 0.0).then(|| self.recent.0 / self.recent.1)
    }

    /// How long its tiles should keep its device busy: [`TARGET_TILE`], or longer where a round
    /// trip would otherwise leave the device idle. With `lanes` tiles in flight the device stays
    /// busy while a tile's time is at least the round trip over `lanes - 1`; twice that is aimed
    /// at. One lane cannot hide it, so four round trips keep such a device busy four fifths of
    /// the time.
    fn tile_time(&self) -> Duration {
        let hide = match self.lanes {
            0 | 1 => 4.0,
            lanes => 2.0 / (lanes - 1) as f64,
        };
        TARGET_TILE.max(self.round_trip.mul_f64(hide))
    }

    /// Stats for a worker that has done nothing yet.
    pub(crate) fn new(name: &str) -> WorkerStats {
        WorkerStats { name: name.to_owned(), lanes: 1, ..WorkerStats::default() }
    }

    /// Stats for `worker` before a run.
    pub(crate) fn of(worker: &dyn Worker) -> WorkerStats {
        WorkerStats {
            kind: worker.id().kind,
            about: worker.about(),
            lanes: worker.lanes().max(1),
            round_trip: worker.round_trip(),
            ..WorkerStats::new(worker.name())
        }
    }

    /// Counts a tile of `count` items that kept the worker busy for `busy`.
    fn record(&mut self, count: u32, busy: Duration) {
        self.last_tile = self.last_tile.max(count);
        // The pace leaves out the round trip, which lanes overlap: counted in, a daemon whose
        // round trip exceeds TARGET_TILE would be handed ever smaller tiles (down to MIN_TILE,
        // with its device idle between them). At least a quarter of the busy time counts, in
        // case the round trip was measured high.
        let computing = busy.saturating_sub(self.round_trip).max(busy / 4);
        let fade = (-computing.as_secs_f64() / PACE_MEMORY.as_secs_f64()).exp();
        let (items, secs) = self.recent;
        self.recent = (items * fade + f64::from(count), secs * fade + computing.as_secs_f64());
        self.items += u64::from(count);
        self.tiles += 1;
        self.busy += busy;
    }

    /// Items per second while it was running tiles (its lanes overlap, so busy time counts once
    /// per lane).
    pub fn throughput(&self) -> Option<f64> {
        self.rate().map(|r| r * self.lanes.max(1) as f64)
    }

    /// Items per second of busy time, once it has run a tile.
    pub fn rate(&self) -> Option<f64> {
        (self.items > 0 && !self.busy.is_zero()).then(|| self.items as f64 / self.busy.as_secs_f64())
    }
}

/// Options that change how a run is split.
#[derive(Default)]
pub struct RunOptions<'p> {
    /// Every tile this many items (the last one shorter); for tests and benchmarks.
    pub tile_items: Option<u32>,
    /// Called with the number of items done after each tile.
    pub progress: Option<&'p (dyn Fn(u64) + Sync)>,
}

/// Items done so far in a whole run, across calls to [`Run::run_on`], for the progress callback.
pub(crate) type ItemsDone = AtomicU64;

#[cfg(test)]
mod tests {
    //! The scheduler with the real CPU worker beside a worker that fails on purpose (a device
    //! cannot be made to fail on demand here); results must equal a plain sequential loop.

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::args::ArrayArg;
    use crate::testing::{cpu, ctx, expected, test_id};
    use crate::worker::{CpuWorker, RunCtx, TileSlices, WorkerError, WorkerId};

    /// Runs tiles on the CPU until its `fail_at`-th tile, which it refuses.
    struct Flaky {
        id: WorkerId,
        cpu: CpuWorker,
        fail_at: usize,
        seen: AtomicUsize,
        max_tile: u32,
    }

    impl Worker for Flaky {
        fn id(&self) -> &WorkerId {
            &self.id
        }
        fn max_tile(&self, _ctx: &RunCtx) -> u32 {
            self.max_tile
        }
        fn prepare(&self, _ctx: &RunCtx) -> Result<(), WorkerError> {
            Ok(())
        }
        fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
            assert!(tile.tile.count <= self.max_tile, "a tile over the worker's limit");
            if self.seen.fetch_add(1, Ordering::SeqCst) + 1 >= self.fail_at {
                return Err(WorkerError::Engine(xcd_engine::EngineError::OutOfMemory {
                    device: "flaky".into(),
                    needed: 1,
                    free: 0,
                }));
            }
            self.cpu.run_tile(ctx, tile)
        }
    }

    fn flaky(fail_at: usize, max_tile: u32) -> Flaky {
        Flaky { id: test_id("flaky"), cpu: cpu(), fail_at, seen: AtomicUsize::new(0), max_tile }
    }

    fn run_with(
        workers: &[&dyn Worker],
        n: u32,
        tile: Option<u32>,
    ) -> (Vec<u32>, Result<Vec<WorkerStats>, Vec<WorkerStats>>) {
        let x: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let mut y = vec![0u32; n as usize];
        let arrays = vec![ArrayArg::In(bytemuck::cast_slice(&x)), ArrayArg::Out(bytemuck::cast_slice_mut(&mut y))];
        let options = RunOptions { tile_items: tile, progress: None };
        let mut run = Run::new(ctx(), workers.to_vec(), &options);
        let all: Vec<usize> = (0..workers.len()).collect();
        let left = run.run_on(&all, Work::new(arrays, n));
        let (_, stats) = run.finish();
        let result = if left.is_empty() { Ok(stats) } else { Err(stats) };
        (y, result)
    }

    #[test]
    fn a_failing_worker_s_tiles_run_elsewhere_with_the_same_answer() {
        for fail_at in [1, 2, 5] {
            // The healthy worker takes 5 ms a tile, so the flaky one surely gets its turns.
            let cpu =
                Laned { id: test_id("cpu"), cpu: cpu(), lanes: 1, now: AtomicUsize::new(0), most: AtomicUsize::new(0) };
            let flaky = flaky(fail_at, u32::MAX);
            let (y, result) = run_with(&[&flaky, &cpu], 100_003, Some(997));
            let stats = result.expect("the CPU finishes the run");
            assert_eq!(y, expected(100_003));
            assert!(stats[0].failure.as_deref().is_some_and(|f| f.contains("has no room for 1 bytes")), "{stats:?}");
            assert_eq!(stats.iter().map(|s| s.items).sum::<u64>(), 100_003);
        }
    }

    #[test]
    fn when_every_worker_fails_the_run_says_so() {
        let (a, b) = (flaky(1, u32::MAX), flaky(3, u32::MAX));
        let (_, result) = run_with(&[&a, &b], 10_000, None);
        let stats = result.expect_err("nobody can finish");
        assert!(stats.iter().all(|s| s.failure.is_some()));
    }

    #[test]
    fn tiles_respect_each_worker_s_limit_and_returned_tiles_are_cut() {
        // The first worker fails holding a large tile; the limited worker must take it in pieces.
        let big = flaky(1, u32::MAX);
        let small = flaky(usize::MAX, 100);
        let (y, result) = run_with(&[&big, &small], 50_000, Some(40_000));
        result.expect("the limited worker finishes");
        assert_eq!(y, expected(50_000));
    }

    /// Counts how many of its tiles run at once.
    struct Laned {
        id: WorkerId,
        cpu: CpuWorker,
        lanes: usize,
        now: AtomicUsize,
        most: AtomicUsize,
    }

    impl Worker for Laned {
        fn id(&self) -> &WorkerId {
            &self.id
        }
        fn lanes(&self) -> usize {
            self.lanes
        }
        fn prepare(&self, _ctx: &RunCtx) -> Result<(), WorkerError> {
            Ok(())
        }
        fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            let result = self.cpu.run_tile(ctx, tile);
            self.now.fetch_sub(1, Ordering::SeqCst);
            result
        }
    }

    #[test]
    fn a_worker_with_lanes_keeps_that_many_tiles_in_flight() {
        let laned =
            Laned { id: test_id("laned"), cpu: cpu(), lanes: 3, now: AtomicUsize::new(0), most: AtomicUsize::new(0) };
        let (y, result) = run_with(&[&laned], 30_000, Some(1_000));
        let stats = result.expect("completes");
        assert_eq!(y, expected(30_000));
        assert_eq!(stats.len(), 1, "lanes share one worker's statistics");
        assert_eq!(stats[0].tiles, 30);
        assert_eq!(laned.most.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn adaptive_sizes_cover_every_item_exactly_once() {
        let (a, b) = (cpu(), flaky(usize::MAX, 3_000));
        for n in [1, 63, 64, 65, 1_000, 123_457] {
            let (y, result) = run_with(&[&a, &b], n, None);
            let stats = result.expect("completes");
            assert_eq!(y, expected(n), "n = {n}");
            assert_eq!(stats.iter().map(|s| s.items).sum::<u64>(), u64::from(n));
        }
    }

    #[test]
    fn a_run_over_carved_pieces_fills_each_in_place() {
        let n: u32 = 10_000;
        let x: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let mut y = vec![0u32; n as usize];
        let elem = [4u32, 4];
        let mut work =
            Work::new(vec![ArrayArg::In(bytemuck::cast_slice(&x)), ArrayArg::Out(bytemuck::cast_slice_mut(&mut y))], n);
        let worker = cpu();
        let options = RunOptions::default();
        let mut run = Run::new(ctx(), vec![&worker as &dyn Worker], &options);
        for at in [5_000, 2_500, 7_500, 1_250] {
            let piece = work.carve(at, 700, &elem);
            let left = run.run_on(&[0], piece);
            assert!(left.is_empty());
        }
        assert_eq!(run.items_done(), 2_800);
        let left = run.run_on(&[0], work);
        assert!(left.is_empty());
        assert_eq!(run.stats()[0].items, u64::from(n));
        drop(run);
        assert_eq!(y, expected(n));
    }
}
