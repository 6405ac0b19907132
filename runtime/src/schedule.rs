//! The tile scheduler: hands out tiles to workers dynamically, sized to each worker's speed.
//!
//! Tiles are carved from the front of the run: every per-item array the block writes is split
//! as tiles are taken, so each tile owns its slice of the program's arrays and results land in
//! place with no copy back. A worker that fails gives its tile back untouched and stops; the
//! tile then runs on another worker. Tile sizes follow each worker's measured rate (aiming at
//! [`TARGET_TILE`] of work) and shrink toward the end, each worker taking at most half of its
//! fair share of what remains, so all workers finish close together. A worker runs as many
//! threads as it has lanes (a remote worker: its daemon's depth, so that many tiles are in
//! flight), all sharing the worker's statistics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use xcd_wire::Tile;

use crate::args::ArrayArg;
use crate::worker::{RunCtx, TileArray, TileSlices, Worker, WorkerError};

/// How long one tile should keep a worker busy once its rate is known.
pub(crate) const TARGET_TILE: Duration = Duration::from_millis(40);
/// Smallest tile handed out while more items remain (one GPU workgroup).
const MIN_TILE: u32 = 64;
/// Tiles per worker the first, unmeasured tile aims at.
const FIRST_TILE_SHARE: u32 = 32;

/// What one worker did in a run.
#[derive(Debug, Clone, Default)]
pub struct WorkerStats {
    /// Worker name, e.g. `cpu` or `gpu:vulkan:llvmpipe (…)`.
    pub name: String,
    /// Items it computed.
    pub items: u64,
    /// Tiles it computed.
    pub tiles: u64,
    /// Time it spent running tiles.
    pub busy: Duration,
    /// Why it stopped early, if it did; its tiles ran elsewhere.
    pub failure: Option<String>,
    /// Items in its last tile: the next may be at most twice as large.
    last_tile: u32,
}

impl WorkerStats {
    fn rate(&self) -> Option<f64> {
        (self.items > 0 && !self.busy.is_zero()).then(|| self.items as f64 / self.busy.as_secs_f64())
    }
}

/// Tiles not yet computed: the uncarved rest of the run, and tiles given back by failed workers.
struct Pool<'a> {
    next: u32,
    n: u32,
    /// Per binding: the whole per-item input, or the uncarved tail of a written array.
    arrays: Vec<Rest<'a>>,
    returned: Vec<TileSlices<'a>>,
    in_flight: usize,
    stats: Vec<WorkerStats>,
}

enum Rest<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
    InOut(&'a mut [u8]),
    Whole,
}

impl<'a> Pool<'a> {
    fn take(&mut self, count: u32, elem: &[u32]) -> Option<TileSlices<'a>> {
        if let Some(tile) = self.returned.pop() {
            // A tile given back by a failed worker is cut to the size this worker asked for.
            if tile.tile.count > count.max(1) {
                let (head, rest) = tile.split(count.max(1), elem);
                self.returned.push(rest);
                return Some(head);
            }
            return Some(tile);
        }
        let remaining = self.n - self.next;
        if remaining == 0 {
            return None;
        }
        let count = count.clamp(1, remaining);
        let tile = Tile { start: self.next, count };
        let mut arrays = Vec::with_capacity(self.arrays.len());
        for (rest, &size) in self.arrays.iter_mut().zip(elem) {
            let bytes = count as usize * size as usize;
            arrays.push(match rest {
                Rest::In(all) => {
                    let at = self.next as usize * size as usize;
                    TileArray::In(&all[at..at + bytes])
                }
                Rest::Out(tail) => {
                    let (head, rest_tail) = std::mem::take(tail).split_at_mut(bytes);
                    *tail = rest_tail;
                    TileArray::Out(head)
                }
                Rest::InOut(tail) => {
                    let (head, rest_tail) = std::mem::take(tail).split_at_mut(bytes);
                    *tail = rest_tail;
                    TileArray::InOut(head)
                }
                Rest::Whole => TileArray::Whole,
            });
        }
        self.next += count;
        Some(TileSlices { tile, arrays })
    }

    fn remaining(&self) -> u64 {
        u64::from(self.n - self.next) + self.returned.iter().map(|t| u64::from(t.tile.count)).sum::<u64>()
    }

    /// The next tile size for worker `w`.
    fn size_for(&self, w: usize, fixed: Option<u32>) -> u32 {
        if let Some(fixed) = fixed {
            return fixed.max(1);
        }
        let live: Vec<&WorkerStats> = self.stats.iter().filter(|s| s.failure.is_none()).collect();
        let workers = live.len().max(1) as f64;
        let Some(rate) = self.stats[w].rate() else {
            return (self.n / (FIRST_TILE_SHARE * workers as u32)).max(MIN_TILE);
        };
        let known: Vec<f64> = live.iter().filter_map(|s| s.rate()).collect();
        let average = known.iter().sum::<f64>() / known.len().max(1) as f64;
        let total_rate: f64 = live.iter().map(|s| s.rate().unwrap_or(average)).sum();
        let share = self.remaining() as f64 * rate / total_rate.max(f64::MIN_POSITIVE);
        let by_time = rate * TARGET_TILE.as_secs_f64();
        // A rate measured on cheap items (escape's outer pixels) would hand out a tile of costly
        // ones far too large; growing at most twofold per tile bounds that mistake.
        let grown = 2.0 * f64::from(self.stats[w].last_tile.max(MIN_TILE));
        (by_time.min(share / 2.0).min(grown).max(f64::from(MIN_TILE)).min(f64::from(u32::MAX))) as u32
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

/// Runs all `n` items of a block across `workers`; returns what each did.
pub(crate) fn run<'a>(
    workers: &[&dyn Worker],
    ctx: &RunCtx,
    n: u32,
    arrays: Vec<ArrayArg<'a>>,
    options: &RunOptions<'_>,
) -> Result<Vec<WorkerStats>, Vec<WorkerStats>> {
    let elem: Vec<u32> = ctx.block.desc.arrays.iter().map(|a| a.elem_size).collect();
    let rests = arrays
        .into_iter()
        .map(|a| match a {
            ArrayArg::In(d) => Rest::In(d),
            ArrayArg::Out(d) => Rest::Out(d),
            ArrayArg::InOut(d) => Rest::InOut(d),
            ArrayArg::Whole(_) => Rest::Whole,
        })
        .collect();
    let stats = workers.iter().map(|w| WorkerStats { name: w.name().to_owned(), ..WorkerStats::default() }).collect();
    let pool = Mutex::new(Pool { next: 0, n, arrays: rests, returned: Vec::new(), in_flight: 0, stats });
    let changed = Condvar::new();
    let done = AtomicU64::new(0);

    std::thread::scope(|scope| {
        let lanes =
            workers.iter().enumerate().flat_map(|(w, worker)| (0..worker.lanes().max(1)).map(move |_| (w, worker)));
        for (w, worker) in lanes {
            let (pool, changed, done, elem) = (&pool, &changed, &done, &elem);
            scope.spawn(move || {
                if let Err(e) = worker.prepare(ctx) {
                    fail(pool, changed, w, e, None);
                    return;
                }
                let max_tile = worker.max_tile(ctx);
                loop {
                    let mut tile = {
                        let mut p = lock(pool);
                        loop {
                            let size = p.size_for(w, options.tile_items).min(max_tile);
                            if let Some(tile) = p.take(size, elem) {
                                p.in_flight += 1;
                                break tile;
                            }
                            if p.in_flight == 0 {
                                return;
                            }
                            p = changed.wait(p).unwrap_or_else(|e| e.into_inner());
                        }
                    };
                    let started = Instant::now();
                    let result = worker.run_tile(ctx, &mut tile);
                    let busy = started.elapsed();
                    match result {
                        Ok(()) => {
                            let mut p = lock(pool);
                            p.in_flight -= 1;
                            let s = &mut p.stats[w];
                            s.last_tile = s.last_tile.max(tile.tile.count);
                            s.items += u64::from(tile.tile.count);
                            s.tiles += 1;
                            s.busy += busy;
                            drop(p);
                            changed.notify_all();
                            let total = done.fetch_add(u64::from(tile.tile.count), Ordering::Relaxed)
                                + u64::from(tile.tile.count);
                            if let Some(progress) = options.progress {
                                progress(total);
                            }
                        }
                        Err(e) => {
                            fail(pool, changed, w, e, Some(tile));
                            return;
                        }
                    }
                }
            });
        }
    });
    let pool = pool.into_inner().unwrap_or_else(|e| e.into_inner());
    if pool.remaining() > 0 { Err(pool.stats) } else { Ok(pool.stats) }
}

fn lock<'m, 'a>(pool: &'m Mutex<Pool<'a>>) -> std::sync::MutexGuard<'m, Pool<'a>> {
    pool.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records a worker's failure and gives its tile back for the others.
fn fail<'a>(pool: &Mutex<Pool<'a>>, changed: &Condvar, w: usize, error: WorkerError, tile: Option<TileSlices<'a>>) {
    let mut p = lock(pool);
    tracing::warn!(worker = %p.stats[w].name, "worker stopped: {error}");
    // The first lane to fail says why; the others fail for the same reason.
    if p.stats[w].failure.is_none() {
        p.stats[w].failure = Some(error.to_string());
    }
    if let Some(tile) = tile {
        p.in_flight -= 1;
        p.returned.push(tile);
    }
    drop(p);
    changed.notify_all();
}

#[cfg(test)]
mod tests {
    //! The scheduler with the real CPU worker beside a worker that fails on purpose (a device
    //! cannot be made to fail on demand here); results must equal a plain sequential loop.

    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec};

    use super::*;
    use crate::block::{Block, CpuTile};
    use crate::worker::CpuWorker;

    fn square_plus(t: &mut CpuTile<'_>) {
        let k = t.param_u32(0);
        let x = t.read::<u32>(0);
        for (y, &x) in t.take_write::<u32>(1).iter_mut().zip(x) {
            *y = x.wrapping_mul(x).wrapping_add(k);
        }
    }

    fn ctx() -> RunCtx {
        let desc = BlockDesc {
            name: "square_plus".into(),
            entry: "main".into(),
            arrays: vec![
                ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
                ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
            ],
            params: vec![ParamSpec { name: "k".into(), kind: ParamKind::U32 }],
            forms: Forms { wgsl: Some(String::new()), ..Forms::default() },
        };
        let id = desc.id();
        RunCtx {
            block: Block { desc: Arc::new(desc), cpu: square_plus },
            id,
            items: 0,
            params: vec![7],
            whole: Vec::new(),
        }
    }

    /// Runs tiles on the CPU until its `fail_at`-th tile, which it refuses.
    struct Flaky {
        cpu: CpuWorker,
        fail_at: usize,
        seen: AtomicUsize,
        max_tile: u32,
    }

    impl Worker for Flaky {
        fn name(&self) -> &str {
            "flaky"
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
                return Err(WorkerError::Engine(xcd_engine::EngineError::OutOfMemory("flaky".into())));
            }
            self.cpu.run_tile(ctx, tile)
        }
    }

    fn cpu() -> CpuWorker {
        CpuWorker { pool: rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("threads") }
    }

    fn flaky(fail_at: usize, max_tile: u32) -> Flaky {
        Flaky { cpu: cpu(), fail_at, seen: AtomicUsize::new(0), max_tile }
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
        let result = run(workers, &ctx(), n, arrays, &options);
        (y, result)
    }

    fn expected(n: u32) -> Vec<u32> {
        (0..n).map(|i| i.wrapping_mul(2_654_435_761)).map(|x| x.wrapping_mul(x).wrapping_add(7)).collect()
    }

    #[test]
    fn a_failing_worker_s_tiles_run_elsewhere_with_the_same_answer() {
        for fail_at in [1, 2, 5] {
            let (cpu, flaky) = (cpu(), flaky(fail_at, u32::MAX));
            let (y, result) = run_with(&[&flaky, &cpu], 100_003, Some(997));
            let stats = result.expect("the CPU finishes the run");
            assert_eq!(y, expected(100_003));
            assert!(stats[0].failure.as_deref().is_some_and(|f| f.contains("out of memory")), "{stats:?}");
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
        cpu: CpuWorker,
        lanes: usize,
        now: AtomicUsize,
        most: AtomicUsize,
    }

    impl Worker for Laned {
        fn name(&self) -> &str {
            "laned"
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
    fn tiles_grow_at_most_twofold() {
        let (a, b) = (cpu(), flaky(usize::MAX, u32::MAX));
        let n = 2_000_000;
        let mut pool = Pool {
            next: 0,
            n,
            arrays: Vec::new(),
            returned: Vec::new(),
            in_flight: 0,
            stats: vec![
                WorkerStats { name: "a".into(), ..Default::default() },
                WorkerStats { name: "b".into(), ..Default::default() },
            ],
        };
        // A first tile that ran absurdly fast: the next is still at most twice its size.
        pool.stats[0].items = 1_000;
        pool.stats[0].tiles = 1;
        pool.stats[0].busy = std::time::Duration::from_nanos(1);
        pool.stats[0].last_tile = 1_000;
        assert_eq!(pool.size_for(0, None), 2_000);
        let (y, result) = run_with(&[&a, &b], 300_000, None);
        result.expect("completes");
        assert_eq!(y, expected(300_000));
    }

    #[test]
    fn a_worker_with_lanes_keeps_that_many_tiles_in_flight() {
        let laned = Laned { cpu: cpu(), lanes: 3, now: AtomicUsize::new(0), most: AtomicUsize::new(0) };
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
}
