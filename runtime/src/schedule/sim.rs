//! The scheduler in virtual time: made-up workers (a device rate, a round trip, lanes, a fixed
//! cost per tile, and a fate: healthy, dies, or stalls) run the real [`Board`] with an event
//! queue instead of threads and a clock, so that runs of 4 to 256 workers, seconds long, take a
//! fraction of a second and come out the same every time. What a run does with the board's
//! answers (how long a tile takes, when a stalled worker is given up) follows the real workers:
//! a lane sends a tile, the device runs its tiles one at a time, the result comes back half a
//! round trip later, and a stall is noticed after the remote worker's own deadline
//! (`crate::worker::remote::stall_deadline`), which fails every tile in flight on it.
//!
//! It reports the run's length against the ideal (every worker busy from start to end, or
//! until it died or stalled, with no round trips and no fixed costs) and the real time the board
//! took per tile. `xcd-bench sim` prints the table in docs/performance.md; the tests hold the
//! efficiency goal. It must not touch devices, threads or the wall clock beyond timing the board.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use super::board::{Board, Next};
use super::{Work, WorkerStats};
use crate::worker::TileSlices;
use crate::worker::remote::stall_deadline;

/// What becomes of a simulated worker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fate {
    /// It runs every tile it is given.
    Healthy,
    /// Its daemon dies at this time: tiles in flight fail at once (the connection closes).
    Dies(Duration),
    /// It stops answering at this time, connection open: tiles in flight fail only when the
    /// first of them passes its deadline.
    Stalls(Duration),
}

/// One simulated worker.
#[derive(Debug, Clone, PartialEq)]
pub struct SimWorker {
    /// Items per second its device computes (items of cost 1).
    pub rate: f64,
    /// Time to its device and back; zero for a local one.
    pub round_trip: Duration,
    /// Tiles it has in flight at once (a daemon's depth).
    pub lanes: usize,
    /// The device's fixed cost per tile (a dispatch).
    pub per_tile: Duration,
    /// What becomes of it.
    pub fate: Fate,
}

/// A simulated run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sim {
    /// Its workers.
    pub workers: Vec<SimWorker>,
    /// Items in the run.
    pub items: u32,
    /// When true, the middle third of the items costs ten times the rest (as escape's inner
    /// pixels do), so rates measured early mislead.
    pub uneven: bool,
}

/// What a simulated run came to.
#[derive(Debug, Clone)]
pub struct SimOutcome {
    /// Virtual time from the first tile handed out to the last one back.
    pub makespan: Duration,
    /// The ideal length: every worker computing from the start until the end (or its death or
    /// stall), with no round trips, fixed costs or idle time.
    pub ideal: Duration,
    /// Tiles handed out, including those that failed and ran again.
    pub tiles: u64,
    /// Real time spent in the board's decisions (sizing, handing out, recording).
    pub board_time: Duration,
    /// Whether every item was computed.
    pub complete: bool,
    /// Each worker's statistics, as a real run reports them.
    pub stats: Vec<WorkerStats>,
}

impl SimOutcome {
    /// Ideal over actual length: 1.0 is a perfect split.
    pub fn efficiency(&self) -> f64 {
        self.ideal.as_secs_f64() / self.makespan.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The board's real time per tile handed out.
    pub fn board_per_tile(&self) -> Duration {
        self.board_time / u32::try_from(self.tiles.max(1)).unwrap_or(u32::MAX)
    }
}

impl Sim {
    /// The mix of the performance table: `workers` workers with device rates spread 100:1
    /// (log-uniform), round trips from 10 µs to 50 ms (log-uniform; those over 1 ms are daemons
    /// with 3 lanes), 100 µs per tile, and items enough for an ideal run of `seconds`. With
    /// `faults`, one worker in eight (at least one) dies and one in eight stalls, each at a
    /// time between a tenth and six tenths of the ideal run. `seed` makes it repeatable.
    pub fn spread(workers: usize, seconds: f64, faults: bool, seed: u64) -> Sim {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut list: Vec<SimWorker> = (0..workers)
            .map(|_| {
                let round_trip = Duration::from_secs_f64(1e-5 * 5_000f64.powf(rng.f64()));
                SimWorker {
                    rate: 10_000.0 * 100f64.powf(rng.f64()),
                    lanes: if round_trip > Duration::from_millis(1) { 3 } else { 1 },
                    round_trip,
                    per_tile: Duration::from_micros(100),
                    fate: Fate::Healthy,
                }
            })
            .collect();
        let total_rate: f64 = list.iter().map(|w| w.rate).sum();
        let items = (total_rate * seconds).min(f64::from(u32::MAX)) as u32;
        if faults {
            let each = (workers / 8).max(1);
            let mut when = || Duration::from_secs_f64(seconds * (0.1 + 0.5 * rng.f64()));
            for (i, w) in list.iter_mut().enumerate().take(2 * each) {
                w.fate = if i < each { Fate::Dies(when()) } else { Fate::Stalls(when()) };
            }
        }
        Sim { workers: list, items, uneven: false }
    }

    /// Items `a..b` in units of cost 1.
    fn cost(&self, a: u32, b: u32) -> f64 {
        let (a, b) = (f64::from(a), f64::from(b));
        if !self.uneven {
            return b - a;
        }
        let n = f64::from(self.items);
        let (lo, hi) = (n / 3.0, 2.0 * n / 3.0);
        let costly = (b.min(hi) - a.max(lo)).max(0.0);
        (b - a) + 9.0 * costly
    }

    /// The ideal run's length (see [`SimOutcome::ideal`]).
    fn ideal(&self) -> Duration {
        let alive = |w: &SimWorker| match w.fate {
            Fate::Healthy => f64::INFINITY,
            Fate::Dies(t) | Fate::Stalls(t) => t.as_secs_f64(),
        };
        let done_by = |t: f64| self.workers.iter().map(|w| w.rate * t.min(alive(w))).sum::<f64>();
        let need = self.cost(0, self.items);
        let (mut lo, mut hi) = (0.0, 1.0);
        while done_by(hi) < need && hi < 1e9 {
            hi *= 2.0;
        }
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if done_by(mid) < need { lo = mid } else { hi = mid }
        }
        Duration::from_secs_f64(hi)
    }

    /// Runs it.
    pub fn run(&self) -> SimOutcome {
        let mut stats: Vec<WorkerStats> =
            (0..self.workers.len()).map(|i| WorkerStats::new(&format!("sim:{i}"))).collect();
        for (s, w) in stats.iter_mut().zip(&self.workers) {
            s.lanes = w.lanes.max(1);
            s.round_trip = w.round_trip;
        }
        let mut run = Running {
            sim: self,
            board: Board::new(Work::new(Vec::new(), self.items), &mut stats),
            events: BinaryHeap::new(),
            flights: Vec::new(),
            device_free: vec![0.0; self.workers.len()],
            waiting: Vec::new(),
            seq: 0,
            now: 0.0,
            tiles: 0,
            board_time: Duration::ZERO,
        };
        for (w, worker) in self.workers.iter().enumerate() {
            for _ in 0..worker.lanes.max(1) {
                run.push(0.0, Event::Ready(w));
            }
        }
        run.go();
        let (makespan, tiles, board_time) = (run.now, run.tiles, run.board_time);
        let complete = run.board.into_work().is_empty();
        SimOutcome {
            makespan: Duration::from_secs_f64(makespan),
            ideal: self.ideal(),
            tiles,
            board_time,
            complete,
            stats,
        }
    }
}

/// Something that happens at a virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A lane of this worker asks for a tile.
    Ready(usize),
    /// The tile in this slot of `flights` comes back (or fails).
    Back(usize),
}

/// A tile in flight.
struct Flight<'a> {
    worker: usize,
    tile: TileSlices<'a>,
    sent: f64,
    /// Whether it comes back with a result, or fails.
    ok: bool,
}

/// A simulated run under way.
struct Running<'s, 'w, 'a> {
    sim: &'s Sim,
    board: Board<'w, 'a>,
    /// (time in ns, sequence, event), earliest first.
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    /// Tiles in flight by slot; `None` once back (or failed with their worker).
    flights: Vec<Option<Flight<'a>>>,
    /// When each worker's device is next free, in seconds.
    device_free: Vec<f64>,
    /// Lanes waiting for a tile in flight to finish or come back.
    waiting: Vec<usize>,
    seq: u64,
    now: f64,
    tiles: u64,
    board_time: Duration,
}

impl<'a> Running<'_, '_, 'a> {
    fn push(&mut self, at: f64, event: Event) {
        self.seq += 1;
        self.events.push(Reverse(((at * 1e9) as u64, self.seq, event)));
    }

    fn go(&mut self) {
        while let Some(Reverse((at, _, event))) = self.events.pop() {
            self.now = self.now.max(at as f64 / 1e9);
            match event {
                Event::Ready(w) => self.ready(w),
                Event::Back(slot) => self.back(slot),
            }
        }
    }

    /// A lane of worker `w` asks for its next tile.
    fn ready(&mut self, w: usize) {
        let started = Instant::now();
        let next = self.board.next(w, None, u32::MAX, &[]);
        self.board_time += started.elapsed();
        match next {
            Next::Tile(tile) => self.send(w, tile),
            Next::Wait => self.waiting.push(w),
            Next::Stop => {}
        }
    }

    /// Sends `tile` to worker `w` and schedules what becomes of it.
    fn send(&mut self, w: usize, tile: TileSlices<'a>) {
        self.tiles += 1;
        let worker = &self.sim.workers[w];
        let half = worker.round_trip.as_secs_f64() / 2.0;
        let compute = worker.per_tile.as_secs_f64()
            + self.sim.cost(tile.tile.start, tile.tile.start + tile.tile.count) / worker.rate;
        let start = (self.now + half).max(self.device_free[w]);
        let back = start + compute + half;
        let (at, ok) = match worker.fate {
            Fate::Dies(d) if back > d.as_secs_f64() => (self.now.max(d.as_secs_f64()), false),
            Fate::Stalls(s) if back > s.as_secs_f64() => {
                let per_item = self.board.stats[w].pace().map_or(0.0, |p| 1.0 / p);
                (self.now + stall_deadline(per_item, tile.tile.count).as_secs_f64(), false)
            }
            _ => {
                self.device_free[w] = start + compute;
                (back, true)
            }
        };
        self.flights.push(Some(Flight { worker: w, tile, sent: self.now, ok }));
        self.push(at, Event::Back(self.flights.len() - 1));
    }

    /// The tile in `slot` comes back, or fails (with every other tile in flight on its worker).
    fn back(&mut self, slot: usize) {
        let Some(flight) = self.flights[slot].take() else { return };
        let w = flight.worker;
        let started = Instant::now();
        if flight.ok {
            self.board.finished(w, flight.tile.tile.count, Duration::from_secs_f64(self.now - flight.sent));
        } else {
            self.board.failed(w, "simulated failure", Some(flight.tile));
            for other in &mut self.flights {
                if other.as_ref().is_some_and(|f| f.worker == w) {
                    let f = other.take().map(|f| f.tile);
                    self.board.failed(w, "simulated failure", f);
                }
            }
        }
        self.board_time += started.elapsed();
        if flight.ok {
            self.push(self.now, Event::Ready(w));
        }
        for lane in std::mem::take(&mut self.waiting) {
            self.push(self.now, Event::Ready(lane));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the table's mix for each worker count and two seeds; returns the worst efficiency.
    fn worst(seconds: f64, faults: bool, uneven: bool) -> f64 {
        let mut worst = f64::INFINITY;
        for workers in [4, 16, 64, 256] {
            for seed in 1..=2 {
                let mut sim = Sim::spread(workers, seconds, faults, seed);
                sim.uneven = uneven;
                let outcome = sim.run();
                assert!(outcome.complete, "{workers} workers, seed {seed}: items left over");
                let items: u64 = outcome.stats.iter().map(|s| s.items).sum();
                assert_eq!(items, u64::from(sim.items), "every item exactly once");
                worst = worst.min(outcome.efficiency());
            }
        }
        worst
    }

    #[test]
    fn a_healthy_spread_splits_within_five_percent_of_ideal() {
        let worst = worst(10.0, false, false);
        assert!(worst >= 0.95, "worst efficiency {worst:.3}");
    }

    #[test]
    fn uneven_items_split_within_five_percent_of_ideal() {
        let worst = worst(10.0, false, true);
        assert!(worst >= 0.95, "worst efficiency {worst:.3}");
    }

    #[test]
    fn workers_that_die_or_stall_cost_their_work_only() {
        let worst = worst(10.0, true, false);
        assert!(worst >= 0.95, "worst efficiency {worst:.3}");
    }

    #[test]
    fn a_daemon_whose_round_trip_exceeds_a_tile_still_keeps_its_device_busy() {
        // Its pace counted the round trip once: tiles shrank to MIN_TILE and the device idled.
        let daemon = SimWorker {
            rate: 1e6,
            round_trip: Duration::from_millis(100),
            lanes: 3,
            per_tile: Duration::from_micros(100),
            fate: Fate::Healthy,
        };
        // Now 0.94 of a 10 s run: the rest is the first half second, while tiles double once a
        // round trip from the first (a thousandth of the run) to a round trip of work each.
        let outcome = Sim { workers: vec![daemon], items: 10_000_000, uneven: false }.run();
        assert!(outcome.efficiency() >= 0.9, "efficiency {:.3}", outcome.efficiency());
    }

    #[test]
    fn the_same_seed_gives_the_same_run() {
        let a = Sim::spread(16, 5.0, true, 7).run();
        let b = Sim::spread(16, 5.0, true, 7).run();
        assert_eq!((a.makespan, a.tiles), (b.makespan, b.tiles));
    }

    #[test]
    fn the_ideal_counts_what_dead_workers_did_before_dying() {
        let worker =
            |fate| SimWorker { rate: 100.0, round_trip: Duration::ZERO, lanes: 1, per_tile: Duration::ZERO, fate };
        let sim = Sim {
            workers: vec![worker(Fate::Healthy), worker(Fate::Dies(Duration::from_secs(1)))],
            items: 300,
            uneven: false,
        };
        // 100 items by both in the first second, then 100 more by one: 2 s.
        assert!((sim.ideal().as_secs_f64() - 2.0).abs() < 1e-6);
    }
}
