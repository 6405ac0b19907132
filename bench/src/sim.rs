//! `sim`: the tile scheduler with many workers, in virtual time (`xcd_runtime::schedule::sim`).
//! For 4, 16, 64 and 256 made-up workers (rates spread 100:1, round trips 10 µs–50 ms, daemons
//! with 3 lanes), each mix runs with three seeds against its ideal length (every worker busy to
//! the end, nothing lost to round trips or fixed costs). Prints the worst and mean split
//! efficiency and the board's real time per tile, which is the scheduler's own CPU per tile.

use std::fmt::Write;

use xcd_runtime::schedule::sim::{Sim, SimOutcome};

use crate::Options;

/// A mix of the table: its name, ideal seconds, whether workers die and stall, uneven items.
struct Mix {
    name: &'static str,
    seconds: f64,
    faults: bool,
    uneven: bool,
}

const MIXES: [Mix; 5] = [
    Mix { name: "healthy, 0.3 s", seconds: 0.3, faults: false, uneven: false },
    Mix { name: "healthy, 2 s", seconds: 2.0, faults: false, uneven: false },
    Mix { name: "healthy, 30 s", seconds: 30.0, faults: false, uneven: false },
    Mix { name: "uneven items, 30 s", seconds: 30.0, faults: false, uneven: true },
    Mix { name: "1 in 8 dies, 1 in 8 stalls, 30 s", seconds: 30.0, faults: true, uneven: false },
];

pub(crate) fn run(o: &Options) -> Result<String, String> {
    let counts: &[usize] = if o.quick { &[4, 16] } else { &[4, 16, 64, 256] };
    let seeds = if o.quick { 1..=1 } else { 1..=3 };
    let mut text = String::from(
        "## sim: the scheduler with many workers, in virtual time\n\n\
         | mix | workers | efficiency, worst / mean | tiles | scheduler per tile |\n|---|---|---|---|---|\n",
    );
    for mix in MIXES.iter().filter(|m| !o.quick || m.seconds <= 2.0) {
        for &workers in counts {
            let outcomes: Vec<SimOutcome> = seeds
                .clone()
                .map(|seed| {
                    let mut sim = Sim::spread(workers, mix.seconds, mix.faults, seed);
                    sim.uneven = mix.uneven;
                    sim.run()
                })
                .collect();
            if let Some(bad) = outcomes.iter().find(|o| !o.complete) {
                return Err(format!("{} with {workers} workers left items undone: {bad:?}", mix.name));
            }
            let effs: Vec<f64> = outcomes.iter().map(SimOutcome::efficiency).collect();
            let worst = effs.iter().copied().fold(f64::INFINITY, f64::min);
            let mean = effs.iter().sum::<f64>() / effs.len() as f64;
            let tiles = outcomes.iter().map(|o| o.tiles).sum::<u64>() / outcomes.len() as u64;
            let board: f64 = outcomes.iter().map(|o| o.board_time.as_secs_f64()).sum::<f64>()
                / outcomes.iter().map(|o| o.tiles as f64).sum::<f64>().max(1.0);
            let _ = writeln!(
                text,
                "| {} | {workers} | {worst:.3} / {mean:.3} | {tiles} | {:.2} µs |",
                mix.name,
                board * 1e6
            );
        }
    }
    Ok(text)
}
