//! Measuring with simulated workers: each computes its tiles on the CPU (so the answer can be
//! checked) and then sleeps for the time its simulated device would take, so rates, item costs
//! and contention are set by the test, not by this machine's load.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::args::ArrayArg;
use crate::schedule::{RunOptions, WorkerStats};
use crate::testing::{cpu, ctx, expected};
use crate::worker::{CpuWorker, RunCtx, TileSlices, Worker, WorkerError, WorkerId};

/// A device by rate (items of unit cost per second); items toward the end of the run cost
/// up to ten times more. Under contention, devices running at once share one machine.
struct Sim {
    id: WorkerId,
    rate: f64,
    cpu: CpuWorker,
    running: &'static AtomicUsize,
    contended: bool,
    n: u32,
    /// A fixed cost per tile, as a wide device's dispatch.
    per_tile: Duration,
}

impl Worker for Sim {
    fn id(&self) -> &WorkerId {
        &self.id
    }
    fn prepare(&self, _ctx: &RunCtx) -> Result<(), WorkerError> {
        Ok(())
    }
    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
        let others = self.running.fetch_add(1, Ordering::SeqCst);
        let n = f64::from(self.n);
        let t = tile.tile;
        let mid = f64::from(t.start) + f64::from(t.count) / 2.0;
        let cost = f64::from(t.count) * (1.0 + 9.0 * mid / n);
        let share = if self.contended { (others + 1) as f64 } else { 1.0 };
        std::thread::sleep(Duration::from_secs_f64(cost / self.rate * share) + self.per_tile);
        let result = self.cpu.run_tile(ctx, tile);
        self.running.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

fn sims(n: u32, contended: bool) -> (Sim, Sim) {
    let running: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
    let sim = |id, rate| Sim { id, rate, cpu: cpu(), running, contended, n, per_tile: Duration::ZERO };
    (sim(WorkerId::cpu(), 4e6), sim(WorkerId::gpu("sim"), 8e6))
}

/// Measures, then runs the rest on the best, as a program's first run does.
fn first_run(workers: &[&dyn Worker], n: u32) -> (Measured, Vec<WorkerStats>) {
    let x: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut y = vec![0u32; n as usize];
    let arrays = vec![ArrayArg::In(bytemuck::cast_slice(&x)), ArrayArg::Out(bytemuck::cast_slice_mut(&mut y))];
    let mut ctx = ctx();
    ctx.items = n;
    let options = RunOptions::default();
    let mut run = Run::new(ctx, workers.to_vec(), &options);
    let mut work = Work::new(arrays, n);
    let measured = run.measure(&mut work);
    let members: Vec<usize> = (0..workers.len())
        .filter(|&i| measured.best.unwrap_or(Kinds::ALL).contains(Kinds::of(workers[i].id().kind)))
        .collect();
    let left = run.run_on(&members, work);
    assert!(left.is_empty());
    assert_eq!(run.items_done(), u64::from(n));
    let (_, stats) = run.finish();
    assert_eq!(y, expected(n), "every item computed once, in place");
    (measured, stats)
}

/// Runs `attempt` up to three times, until it holds: measuring times real sleeps, and on a
/// machine loaded by other tests a thread can wait tens of milliseconds to run, which skews
/// the few-millisecond pieces of one attempt. A wrong choice made every time still fails.
fn holds_within_three_tries(attempt: impl Fn() -> Result<(), String>) {
    let mut failures = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => failures.push(e),
        }
    }
    panic!("three tries, each failed:\n{}", failures.join("\n"));
}

/// The best set's name, or an error with what was measured.
fn chose(measured: &Measured, want: &str) -> Result<(), String> {
    match measured.best.map(|k| k.to_string()) {
        Some(best) if best == want => Ok(()),
        best => Err(format!("chose {best:?}, not {want}: {measured:?}")),
    }
}

#[test]
fn devices_that_do_not_contend_are_used_together() {
    holds_within_three_tries(|| {
        let n = 1 << 20;
        let (a, b) = sims(n, false);
        let (measured, stats) = first_run(&[&a, &b], n);
        assert!(!measured.broken);
        chose(&measured, "cpu+gpu")?;
        assert!(stats.iter().all(|s| s.items > 0));
        Ok(())
    });
}

#[test]
fn devices_that_share_one_machine_are_not_used_together() {
    // Together each runs at half speed: 5 M/s, against 8 M/s for the GPU alone. Rates taken
    // while both ran would add up to the former and favour both; measuring each alone does not.
    holds_within_three_tries(|| {
        let n = 1 << 20;
        let (mut a, b) = sims(n, true);
        a.rate = 2e6;
        let (measured, stats) = first_run(&[&a, &b], n);
        chose(&measured, "gpu")?;
        // The CPU ran its measuring pieces only.
        assert!(stats[0].items < u64::from(n) / 4, "{stats:?}");
        Ok(())
    });
}

#[test]
fn calibration_grows_a_piece_until_the_rate_settles() {
    // 2 ms per tile: small pieces are mostly that. Counted as soon as a piece took 6 ms, the
    // GPU calibrated at a few percent of its rate and sat out every set; now the pieces grow
    // until the rate stops climbing.
    holds_within_three_tries(|| {
        let n = 3 << 20;
        let (a, mut b) = sims(n, false);
        b.per_tile = Duration::from_millis(2);
        let (measured, _) = first_run(&[&a, &b], n);
        let gpu = measured.calibrated.iter().find(|(k, _)| k.to_string() == "gpu").map(|(_, r)| *r);
        // Its rate on this run's items in large tiles, which cost 5.5 on average: 8 M / 5.5.
        // A piece of at most four slices in eight stretches still pays 2 ms a tile: about 0.4
        // of that (it was 0.02), enough to measure it in sets.
        let real = 8e6 / 5.5;
        if !gpu.is_some_and(|r| r > 0.3 * real) {
            return Err(format!("calibrated {gpu:?} against {real}: {measured:?}"));
        }
        chose(&measured, "cpu+gpu")
    });
}

#[test]
fn a_run_too_short_to_measure_sets_runs_on_every_kind() {
    // About 0.1 s: its 10% cannot hold two pieces of 12 ms.
    holds_within_three_tries(|| {
        let n = 1 << 17;
        let (a, b) = sims(n, true);
        let (measured, stats) = first_run(&[&a, &b], n);
        if !measured.too_short.is_some_and(|s| s < 0.24) {
            return Err(format!("not found too short: {measured:?}"));
        }
        assert!(measured.rates.iter().all(|(_, r)| r.is_none()), "no set measured: {measured:?}");
        assert!(stats.iter().all(|s| s.items > 0));
        chose(&measured, "cpu+gpu")
    });
}

#[test]
fn one_kind_of_worker_leaves_nothing_to_measure() {
    let n = 1 << 16;
    let (a, _) = sims(n, false);
    let (measured, _) = first_run(&[&a], n);
    assert_eq!(measured.best, None);
    assert_eq!(measured.rates.len(), 1);
}

#[test]
fn a_comb_has_a_tooth_in_every_stratum() {
    let n = 1_600_000;
    let mut y = vec![0u32; n as usize];
    let mut work = Work::new(vec![ArrayArg::Out(bytemuck::cast_slice_mut(&mut y))], n);
    let piece = comb(&mut work, n, 16_000, 1, &[4]);
    assert_eq!(piece.items(), 16_000);
    let starts = piece.starts();
    assert_eq!(starts.len(), TEETH as usize);
    for (j, start) in starts.iter().enumerate() {
        assert_eq!(*start / (n / TEETH), j as u32, "tooth {j} in its stratum: {starts:?}");
    }
    // The next comb of the same run grows the same stretches: the work stays in few pieces.
    let other = comb(&mut work, n, 16_000, 1, &[4]);
    let ends: Vec<u32> = starts.iter().map(|s| s + 16_000 / TEETH).collect();
    assert_eq!(other.starts(), ends);
    assert_eq!(work.starts().len(), TEETH as usize + 1);
    // Tiny combs still have workgroup-sized teeth; another seed lands elsewhere.
    let tiny = comb(&mut work, n, 10, 3, &[4]);
    assert!(tiny.items() > 10 && tiny.items() <= u64::from(TEETH * MIN_TILE));
    assert_ne!(tiny.starts(), ends);
    assert_eq!(work.items() + piece.items() + other.items() + tiny.items(), u64::from(n));
}

#[test]
fn keys_name_block_id_and_size() {
    let id = BlockId([0xab; 32]);
    assert_eq!(key("escape", &id, 1 << 24), "placement.escape.abababababab.24");
    assert_eq!(key("my block.v2", &id, 1_000), "placement.my_block_v2.abababababab.9");
    assert_eq!(key("x", &id, 0), "placement.x.abababababab.0");
}

#[test]
fn the_report_line_says_when_a_run_was_too_short() {
    let cpu = Kinds::parse("cpu").expect("a kind");
    let every = Kinds::parse("cpu+gpu").expect("kinds");
    let measured = |items: u64, too_short: Option<f64>| Measured {
        best: Some(every),
        rates: vec![(cpu, None), (every, None)],
        calibrated: vec![(cpu, 2.15e6)],
        too_short,
        broken: false,
        seconds: 0.078,
        items,
    };
    let line = |m: Measured, kept: Result<String, NotKept>| {
        Choice::Measured { key: "placement.escape.x.18".into(), measured: m, kept }.line("escape", 1 << 18)
    };
    // Every item went while calibrating: nothing was decided.
    let ended = line(measured(1 << 18, Some(0.08)), Err(NotKept::TooShort(0.08)));
    assert_eq!(
        ended,
        "par: placement of escape at 2^18 items: the run ended while calibrating (0.078 s; cpu 2.15 M items/s); nothing kept"
    );
    // Too short to measure sets: every kind ran the rest, and the line says why.
    let why = "the run, about 0.12 s, is too short to measure sets of kinds; every kind ran it";
    let short = line(measured(30_000, Some(0.12)), Err(NotKept::TooShort(0.12)));
    assert!(
        short.ends_with(&format!("measured no set in 0.078 s (11% of the items); using cpu+gpu, not kept ({why})")),
        "{short}"
    );
}
