//! One run of a block as a value ([`Run`]): its context, its workers and their statistics,
//! which of them are ready, and the items done so far. A run may be made of several calls to
//! [`Run::run_on`] (placement measures on pieces, then runs the rest, then falls back), and each
//! worker's rate carries from one call to the next because the statistics live here.
//!
//! Within one call the lanes ([`Lanes`]) share a [`Board`] behind one lock: each lane of each
//! worker is a thread that takes its next tile from the board, runs it, and reports back. Which
//! workers a call uses is the caller's choice (`crate::placement`); this module must not choose.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::board::{Board, Next};
use super::{ItemsDone, RunOptions, Work, WorkerStats};
use crate::worker::{RunCtx, TileSlices, Worker, WorkerError};

/// One run of a block on a set of workers (indexes into [`Run::workers`] name them).
pub(crate) struct Run<'r> {
    ctx: RunCtx,
    workers: Vec<&'r dyn Worker>,
    /// One per worker: what it did, and why it stopped if it did.
    stats: Vec<WorkerStats>,
    /// Which workers have been readied for the block ([`Run::prepare`]).
    prepared: Vec<bool>,
    options: &'r RunOptions<'r>,
    /// Items done across every call, for the progress callback.
    done: ItemsDone,
    /// Each array's element size, to carve tiles.
    elem: Vec<u32>,
}

impl<'r> Run<'r> {
    /// A run of `ctx`'s block on `workers`, none of them readied yet.
    pub(crate) fn new(ctx: RunCtx, workers: Vec<&'r dyn Worker>, options: &'r RunOptions<'r>) -> Self {
        let stats = workers.iter().map(|w| WorkerStats::of(*w)).collect();
        let elem = ctx.block.desc.arrays.iter().map(|a| a.elem_size).collect();
        let prepared = vec![false; workers.len()];
        Run { ctx, workers, stats, prepared, options, done: ItemsDone::new(0), elem }
    }

    /// The block, its id, items and parameters.
    pub(crate) fn ctx(&self) -> &RunCtx {
        &self.ctx
    }

    /// Every worker of the run, failed or not.
    pub(crate) fn workers(&self) -> &[&'r dyn Worker] {
        &self.workers
    }

    /// Each worker's statistics, by the same index.
    pub(crate) fn stats(&self) -> &[WorkerStats] {
        &self.stats
    }

    /// Each array's element size.
    pub(crate) fn elem(&self) -> &[u32] {
        &self.elem
    }

    /// Items done so far, across every call.
    #[cfg(test)]
    pub(crate) fn items_done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Readies those of `members` not yet readied, all at once (loading the block on devices,
    /// opening streams); one that cannot is recorded as failed and sits the run out.
    pub(crate) fn prepare(&mut self, members: &[usize]) {
        let todo: Vec<usize> = members.iter().copied().filter(|&i| !self.prepared[i]).collect();
        let (ctx, workers) = (&self.ctx, &self.workers);
        let results: Vec<Result<(), WorkerError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = todo
                .iter()
                .map(|&i| {
                    let worker = workers[i];
                    (worker.name(), scope.spawn(move || worker.prepare(ctx)))
                })
                .collect();
            handles
                .into_iter()
                .map(|(name, h)| h.join().unwrap_or_else(|_| Err(WorkerError::Panicked(name.to_owned()))))
                .collect()
        });
        for (&i, result) in todo.iter().zip(results) {
            self.prepared[i] = true;
            if let Err(e) = result {
                let stats = &mut self.stats[i];
                tracing::warn!(worker = %stats.name, "worker stopped: {e}");
                stats.failure.get_or_insert(e.to_string());
            }
        }
    }

    /// Runs `work` on the workers at `members` (readied; those that failed sit out) and returns
    /// what is left: nothing, unless every one of them failed. Each lane of each worker is a
    /// thread; the [`Board`] behind one lock decides, and a condition variable wakes lanes that
    /// wait for tiles in flight to finish or come back.
    pub(crate) fn run_on<'a>(&mut self, members: &[usize], work: Work<'a>) -> Work<'a> {
        // The board sees only the members, by their place in `members`.
        let chosen: Vec<&dyn Worker> = members.iter().map(|&i| self.workers[i]).collect();
        let mut taken: Vec<WorkerStats> = members.iter().map(|&i| std::mem::take(&mut self.stats[i])).collect();
        let live: Vec<bool> = taken.iter().map(|s| s.failure.is_none()).collect();
        let lanes = Lanes {
            board: Mutex::new(Board::new(work, &mut taken)),
            changed: Condvar::new(),
            ctx: &self.ctx,
            options: self.options,
            done: &self.done,
            elem: &self.elem,
        };
        std::thread::scope(|scope| {
            for (w, &worker) in chosen.iter().enumerate().filter(|&(w, _)| live[w]) {
                for lane in 0..worker.lanes().max(1) {
                    let lanes = &lanes;
                    scope.spawn(move || lanes.drive(w, lane, worker));
                }
            }
        });
        let left = lanes.board.into_inner().into_work();
        for (&i, s) in members.iter().zip(taken) {
            self.stats[i] = s;
        }
        left
    }

    /// Each failed worker's name and why, for an error.
    pub(crate) fn failures(&self) -> crate::Failures {
        crate::Failures(
            self.stats.iter().filter_map(|s| s.failure.as_ref().map(|f| (s.name.clone(), f.clone()))).collect(),
        )
    }

    /// Ends the run: its context back (for the trace) and each worker's statistics, with what
    /// the worker notes of how it ran.
    pub(crate) fn finish(mut self) -> (RunCtx, Vec<WorkerStats>) {
        for (stats, worker) in self.stats.iter_mut().zip(&self.workers) {
            stats.note = worker.note();
        }
        (self.ctx, self.stats)
    }
}

/// What the lanes of one [`Run::run_on`] call share.
struct Lanes<'s, 'a> {
    board: Mutex<Board<'s, 'a>>,
    /// Wakes lanes waiting for tiles in flight.
    changed: Condvar,
    ctx: &'s RunCtx,
    options: &'s RunOptions<'s>,
    done: &'s ItemsDone,
    elem: &'s [u32],
}

impl<'a> Lanes<'_, 'a> {
    /// Lane `lane` of member `w`: takes tiles and runs them until none is left or the worker fails.
    fn drive(&self, w: usize, lane: usize, worker: &dyn Worker) {
        let max_tile = worker.max_tile(self.ctx);
        while let Some(mut tile) = self.next_tile(w, max_tile) {
            let started = Instant::now();
            // A panic in a worker (a bug) fails that worker, not the run: otherwise its tile
            // would stay in flight and every other lane would wait for it forever.
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run_tile(self.ctx, &mut tile)))
                    .unwrap_or_else(|_| Err(WorkerError::Panicked(worker.name().to_owned())));
            let count = tile.tile.count;
            let failed = result.is_err();
            self.ctx.timeline.tile(worker.name(), lane, started, count, failed);
            let mut board = self.board.lock();
            match result {
                Ok(()) => board.finished(w, count, started.elapsed()),
                Err(e) => board.failed(w, &e.to_string(), Some(tile)),
            }
            drop(board);
            self.changed.notify_all();
            if failed {
                return;
            }
            let total = self.done.fetch_add(u64::from(count), Ordering::Relaxed) + u64::from(count);
            if let Some(progress) = self.options.progress {
                progress(total);
            }
        }
    }

    /// The next tile for member `w`, waiting while others are in flight; `None` once nothing is
    /// left, or once another lane of the worker has failed (so does this one).
    fn next_tile(&self, w: usize, max_tile: u32) -> Option<TileSlices<'a>> {
        let mut board = self.board.lock();
        loop {
            match board.next(w, self.options.tile_items, max_tile, self.elem) {
                Next::Tile(tile) => return Some(tile),
                Next::Stop => return None,
                Next::Wait => self.changed.wait(&mut board),
            }
        }
    }
}
