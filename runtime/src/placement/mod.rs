//! Placement: which kinds of worker (this machine's CPU, its GPUs, the daemons' GPUs) run a
//! block, measured on the block's first run and remembered for later ones.
//!
//! Measuring happens while the run computes, not by running the block once per choice. Every
//! candidate (each non-empty set of the kinds present) takes turns running a piece of the run
//! alone, so that the rate of "all together" is its real contended rate, not the sum of rates
//! measured side by side (llvmpipe and the CPU form share this machine's cores). A piece is a comb
//! of [`TEETH`] short stretches, one in each of as many equal strata of the run: a block's cost
//! per item can vary wildly along the run (escape's pixels inside the set cost the full iteration
//! count, those outside a few), so every candidate must sample the whole run alike, or the one
//! measured on cheap items wins. Round 0 calibrates each kind alone, on pieces that at least
//! double until the rate settles ([`SETTLED`]), since a GPU is not full on a small one. A round
//! gives each candidate about
//! [`SLICE_MIN`]–[`SLICE_MAX`] of work; clearly slower candidates drop out after each round, and
//! measuring stops once it has used [`BUDGET`] of the best candidate's estimated time for the
//! whole run. The rest of the run goes to the fastest. A run whose budget could not hold two
//! sets' pieces (under about a quarter of a second) measures no sets: every kind runs the rest,
//! the report says so, and nothing is kept.
//!
//! Owns the candidates, the measuring rounds (`Run::measure`) and the settings key
//! (`placement.<block>.<id>.<log2 n>`); the sets of kinds are [`Kinds`] (`kinds`); the policy
//! that remembers, measures and falls back is `Run::place` with `Placements` (`policy`).
//! Cutting pieces into tiles is [`crate::schedule`]'s business; this module must not read or
//! write the settings file except through [`crate::home::Home`].

use std::time::{Duration, Instant};

use xcd_wire::BlockId;

mod kinds;
mod policy;

pub use kinds::Kinds;
pub(crate) use policy::Placements;

use crate::schedule::{MIN_TILE, Run, Work};

/// The shortest time a candidate's piece should take to count as a measurement.
const SLICE_MIN: Duration = Duration::from_millis(12);
/// The longest.
const SLICE_MAX: Duration = Duration::from_millis(40);
/// A piece aims at this share of the best candidate's estimated whole-run time.
const SLICE_SHARE: f64 = 1.0 / 80.0;
/// Share of the best candidate's estimated whole-run time that measuring may take.
const BUDGET: f64 = 0.1;
/// After round `r`, a candidate slower than `KEEP[r]` of the best stops being measured (round 0
/// calibrates each kind alone; its figures only size pieces and drop hopeless kinds).
const KEEP: [f64; 4] = [0.5, 0.8, 0.9, 1.0];
/// A set of kinds is measured only if the sum of its members' rates beats the best single kind
/// by this factor: otherwise it cannot be worth its members' contention and tail.
const WORTH: f64 = 1.1;
/// A calibration piece's rate has settled when it is at most this much above the previous one.
const SETTLED: f64 = 1.25;
/// A calibration piece this many slices long counts even if its rate has not settled.
const SLICE_CAP: f64 = 4.0;
/// Stretches in one measuring piece, one per stratum of the run.
const TEETH: u32 = 8;

/// The settings key of a block's placement at a problem size: by name (for people), id (so a
/// changed kernel measures again) and the size's power of two.
pub(crate) fn key(block: &str, id: &BlockId, n: u32) -> String {
    let name: String =
        block.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let id = id.to_string();
    format!("placement.{name}.{}.{}", &id[..12.min(id.len())], n.max(1).ilog2())
}

/// What measuring found.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The fastest candidate, if any could be measured.
    pub best: Option<Kinds>,
    /// Each candidate's rate in items per second, where it was measured.
    pub rates: Vec<(Kinds, Option<f64>)>,
    /// Each kind's rate alone from calibration (shorter pieces, so only roughly comparable).
    pub calibrated: Vec<(Kinds, f64)>,
    /// The estimated seconds of the whole run, where that was too short to measure sets after
    /// calibrating: every kind present ran the rest.
    pub too_short: Option<f64>,
    /// A worker failed while measuring: the figures say little about a later run.
    pub broken: bool,
    /// Seconds spent measuring.
    pub seconds: f64,
    /// Items computed while measuring.
    pub items: u64,
}

struct Candidate {
    kinds: Kinds,
    members: Vec<usize>,
    /// Items its next piece holds.
    size: u32,
    items: u64,
    secs: f64,
    dropped: bool,
    broken: bool,
    /// Whether it has run a piece yet: the first one (a device's first tile compiles pipelines
    /// and grows buffers) never counts.
    warm: bool,
    /// Its rate from calibration (round 0), which sizes its pieces but is not compared: a
    /// calibration piece is shorter than the measured ones, so fixed costs weigh more in it.
    guess: Option<f64>,
    /// The rate of its last calibration piece, to tell whether its pieces still fill it.
    last_rate: Option<f64>,
}

impl Candidate {
    fn rate(&self) -> Option<f64> {
        (self.secs > 0.0).then(|| self.items as f64 / self.secs)
    }

    fn in_play(&self) -> bool {
        !self.dropped && !self.broken
    }
}

/// A well-mixed 64-bit value from `x` (splitmix64's finaliser): where a tooth goes.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Carves a comb of about `size` items out of `work`: [`TEETH`] stretches, one in each stratum
/// of `0..n`, at the first item left from a random place in it (`seed` picks the places). The
/// combs of one measuring run share the places, so each stratum loses one growing stretch to
/// measuring rather than many scattered ones: the rest of the run stays in long stretches,
/// which make long tiles.
fn comb<'a>(work: &mut Work<'a>, n: u32, size: u32, seed: u64, elem: &[u32]) -> Work<'a> {
    let tooth = (size / TEETH).max(MIN_TILE);
    let stratum = u64::from(n).div_ceil(u64::from(TEETH)).max(1);
    let mut piece = Work::default();
    for j in 0..u64::from(TEETH) {
        let at = j * stratum + mix(seed.wrapping_mul(u64::from(TEETH)).wrapping_add(j)) % stratum;
        piece.absorb(work.carve(u32::try_from(at).unwrap_or(u32::MAX), tooth, elem));
    }
    piece
}

/// What one measuring piece came to.
enum Piece {
    /// It took long enough to count, and was counted.
    Counted,
    /// Too short to count (or the candidate's first): go again with the size it suggests.
    Again,
    /// A worker failed, or no work is left: stop measuring this candidate.
    Stop,
    /// No work is left at all.
    Finished,
}

/// The state of one measuring run: what every piece needs.
struct Measuring<'m, 'r, 'a> {
    run: &'m mut Run<'r>,
    work: &'m mut Work<'a>,
    /// Picks where the combs' teeth go.
    seed: u64,
    /// Items computed while measuring.
    items: u64,
}

impl Measuring<'_, '_, '_> {
    /// Round 0: each kind alone, calibrated on pieces of at least [`SLICE_MIN`]; the best
    /// calibrated rate.
    fn calibrate(&mut self, candidates: &mut [Candidate]) -> f64 {
        let mut singles: Vec<usize> = (0..candidates.len()).filter(|&c| candidates[c].kinds.len() == 1).collect();
        singles.sort_by_key(|&c| candidates[c].kinds.to_string());
        for c in singles {
            if !self.sample(candidates, c, SLICE_MIN, true) {
                break;
            }
        }
        candidates.iter().filter(|c| !c.broken).filter_map(|c| c.guess).fold(0.0, f64::max)
    }

    /// The rounds after calibration: each candidate still in play measured on a piece of
    /// `slice`, the most promising first, then those far behind the best dropped ([`KEEP`]);
    /// until one is left, the run is done, or the time spent passes [`BUDGET`] of the run's.
    fn rounds(&mut self, candidates: &mut [Candidate], slice: Duration, best_guess: f64, started: Instant) {
        let n = f64::from(self.run.ctx().items);
        let estimate = |candidates: &[Candidate]| {
            let best = best_rate(candidates);
            n / if best > 0.0 { best } else { best_guess.max(f64::MIN_POSITIVE) }
        };
        for &keep in &KEEP[1..] {
            let mut playing: Vec<usize> = (0..candidates.len()).filter(|&c| candidates[c].in_play()).collect();
            if playing.len() < 2 || self.work.is_empty() {
                return;
            }
            // The most promising first (by measured rate, else its expected one), so that the
            // budget, when it runs out, cuts the least likely.
            let promise = |c: &Candidate| c.rate().unwrap_or(f64::from(c.size) / slice.as_secs_f64());
            playing.sort_by(|&a, &b| promise(&candidates[b]).total_cmp(&promise(&candidates[a])));
            for c in playing {
                // The budget binds once two candidates have figures to compare.
                let compared = candidates.iter().filter(|c| c.rate().is_some()).count();
                if compared >= 2 && started.elapsed().as_secs_f64() > BUDGET * estimate(candidates) {
                    return;
                }
                if !self.sample(candidates, c, slice, false) {
                    return;
                }
            }
            let best = best_rate(candidates);
            for candidate in candidates.iter_mut().filter(|c| c.in_play()) {
                if candidate.rate().is_some_and(|r| r < keep * best) {
                    candidate.dropped = true;
                }
            }
        }
    }

    /// Runs one comb on `candidates[c]` alone and records it if it counts.
    fn piece(&mut self, candidates: &mut [Candidate], c: usize, slice: Duration, calibrating: bool) -> Piece {
        let piece = comb(self.work, self.run.ctx().items, candidates[c].size, self.seed, self.run.elem());
        if piece.is_empty() {
            return Piece::Finished;
        }
        let items = piece.items();
        let t0 = Instant::now();
        let left = self.run.run_on(&candidates[c].members, piece);
        let secs = t0.elapsed().as_secs_f64().max(1e-6);
        let ran = items - left.items();
        self.items += ran;
        let lost = !left.is_empty();
        self.work.absorb(left);
        // A failed worker spoils the figures of every candidate it belongs to.
        for candidate in candidates.iter_mut() {
            if candidate.members.iter().any(|&i| self.run.stats()[i].failure.is_some()) {
                candidate.broken = true;
            }
        }
        if lost || candidates[c].broken {
            return Piece::Stop;
        }
        let candidate = &mut candidates[c];
        let rate = ran as f64 / secs;
        // While calibrating, a piece counts only once the rate has settled: a wide device (a GPU,
        // llvmpipe's threads) is not full on a small piece, and a rate taken there is a fraction
        // of its real one. Until then the next piece is at least twice as large, and a piece of
        // several slices counts whatever its rate did.
        let settled = !calibrating
            || candidate.last_rate.is_some_and(|last| rate <= SETTLED * last)
            || secs >= SLICE_CAP * slice.as_secs_f64();
        candidate.last_rate = Some(rate);
        let counts = candidate.warm && secs >= slice.as_secs_f64() / 2.0 && settled;
        let grow = calibrating && !counts;
        candidate.warm = true;
        // Grow at most eightfold while calibrating: a rate from a tiny piece is mostly overhead.
        let limit = if counts { f64::from(u32::MAX) } else { f64::from(candidate.size) * 8.0 };
        let least = if grow { 2.0 * f64::from(candidate.size) } else { f64::from(MIN_TILE) };
        candidate.size = (rate * slice.as_secs_f64()).clamp(least.min(limit), limit) as u32;
        if counts {
            if calibrating {
                candidate.guess = Some(ran as f64 / secs);
            } else {
                candidate.items += ran;
                candidate.secs += secs;
            }
            return Piece::Counted;
        }
        Piece::Again
    }

    /// Pieces on `candidates[c]` until one counts; false when no work is left.
    fn sample(&mut self, candidates: &mut [Candidate], c: usize, slice: Duration, calibrating: bool) -> bool {
        loop {
            match self.piece(candidates, c, slice, calibrating) {
                Piece::Counted | Piece::Stop => return true,
                Piece::Again => {}
                Piece::Finished => return false,
            }
        }
    }
}

/// The best rate among candidates still in play.
fn best_rate(candidates: &[Candidate]) -> f64 {
    candidates.iter().filter(|c| c.in_play()).filter_map(Candidate::rate).fold(0.0, f64::max)
}

impl Run<'_> {
    /// Measures the candidates on pieces of `work` (which shrinks by what they computed) and returns
    /// which was fastest. Workers with a failure recorded sit out.
    ///
    /// Round 0 calibrates each kind alone. From round 1 every candidate still in play is measured on
    /// pieces of the same duration (a set of several kinds only when it could beat the best single
    /// kind by [`WORTH`] even if its members added up perfectly); each round drops the candidates
    /// under `KEEP[round]` of the best, until one is left or the budget is spent, the most promising
    /// measured first.
    pub(crate) fn measure(&mut self, work: &mut Work<'_>) -> Measured {
        let (present, mut candidates) = self.candidates();
        let started = Instant::now();
        if present.len() < 2 {
            let rates = candidates.iter().map(|c| (c.kinds, None)).collect();
            return Measured {
                best: None,
                rates,
                calibrated: Vec::new(),
                too_short: None,
                broken: false,
                seconds: 0.0,
                items: 0,
            };
        }
        let n = f64::from(self.ctx().items);
        let seed = u64::from_le_bytes(self.ctx().id.0[..8].try_into().unwrap_or_default());
        self.ctx().timeline.measuring(true);
        let mut m = Measuring { run: self, work, seed, items: 0 };
        let best_guess = m.calibrate(&mut candidates);
        // From here on, pieces are sized to the run: long enough to time well, short enough to
        // stay cheap; and only what could win is measured.
        let slice = if best_guess > 0.0 {
            Duration::from_secs_f64(n / best_guess * SLICE_SHARE).clamp(SLICE_MIN, SLICE_MAX)
        } else {
            SLICE_MIN
        };
        // A run whose measuring budget cannot hold two sets' pieces is decided without measuring
        // sets: every kind present runs the rest, as a run without placement would.
        // One that ended while calibrating was shorter still.
        let estimate = n / best_guess;
        let too_short = if m.work.is_empty() {
            Some(started.elapsed().as_secs_f64())
        } else {
            (best_guess > 0.0 && BUDGET * estimate < 2.0 * SLICE_MIN.as_secs_f64()).then_some(estimate)
        };
        if too_short.is_none() {
            size_to_the_run(&mut candidates, best_guess, slice);
            m.rounds(&mut candidates, slice, best_guess, started);
        }
        m.run.ctx().timeline.measuring(false);
        let best = if too_short.is_some() { Some(present) } else { fastest(&candidates) };
        Measured {
            best,
            too_short,
            rates: candidates.iter().map(|c| (c.kinds, c.rate())).collect(),
            calibrated: candidates.iter().filter_map(|c| c.guess.map(|g| (c.kinds, g))).collect(),
            broken: candidates.iter().any(|c| c.broken),
            seconds: started.elapsed().as_secs_f64(),
            items: m.items,
        }
    }

    /// The kinds of worker present (with no failure) and a candidate for each set of them.
    fn candidates(&self) -> (Kinds, Vec<Candidate>) {
        let (workers, stats) = (self.workers(), self.stats());
        let live = |i: usize| stats[i].failure.is_none();
        let present = (0..workers.len())
            .filter(|&i| live(i))
            .fold(Kinds::default(), |k, i| k.union(Kinds::of(workers[i].id().kind)));
        let candidates = present
            .subsets()
            .into_iter()
            .map(|kinds| {
                let members: Vec<usize> = (0..workers.len())
                    .filter(|&i| live(i) && kinds.contains(Kinds::of(workers[i].id().kind)))
                    .collect();
                let lanes: usize = members.iter().map(|&i| workers[i].lanes().max(1)).sum();
                let size = (TEETH * MIN_TILE).saturating_mul(u32::try_from(lanes).unwrap_or(u32::MAX));
                Candidate {
                    kinds,
                    members,
                    size,
                    items: 0,
                    secs: 0.0,
                    dropped: false,
                    broken: false,
                    warm: false,
                    guess: None,
                    last_rate: None,
                }
            })
            .collect();
        (present, candidates)
    }
}

/// The fastest candidate measured; where the run ended before any was, the fastest calibrated.
fn fastest(candidates: &[Candidate]) -> Option<Kinds> {
    let by = |rate: fn(&Candidate) -> Option<f64>| {
        candidates
            .iter()
            .filter(|c| !c.broken)
            .filter_map(|c| rate(c).map(|r| (c.kinds, r)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k)
    };
    by(Candidate::rate).or_else(|| by(|c| c.guess))
}

/// Sizes each candidate's pieces to `slice` at what its kinds' calibrated rates add up to, and
/// drops those that could not win even so.
fn size_to_the_run(candidates: &mut [Candidate], best_guess: f64, slice: Duration) {
    let guesses: Vec<(Kinds, f64)> = candidates.iter().filter_map(|c| c.guess.map(|g| (c.kinds, g))).collect();
    for candidate in candidates.iter_mut() {
        let parts: Vec<f64> = guesses.iter().filter(|(k, _)| candidate.kinds.contains(*k)).map(|(_, g)| *g).collect();
        let at_most: f64 = parts.iter().sum();
        let hopeless = if candidate.kinds.len() == 1 { KEEP[0] * best_guess } else { WORTH * best_guess };
        if parts.len() < candidate.kinds.len() as usize || at_most < hopeless {
            candidate.dropped = true;
        }
        candidate.size = (at_most * slice.as_secs_f64()).min(f64::from(u32::MAX)) as u32;
        // Its members are warm: the first piece of the right size counts.
        candidate.warm = true;
    }
}

/// Why a measured placement was not kept.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotKept {
    /// A worker failed while measuring, so the figures say little about a later run.
    #[error("a worker failed while measuring")]
    Broken,
    /// The run was too short to measure sets of kinds: every kind ran it.
    #[error("the run, about {0:.2} s, is too short to measure sets of kinds; every kind ran it")]
    TooShort(f64),
    /// No candidate could be measured.
    #[error("nothing could be measured")]
    NothingMeasured,
    /// The settings file could not be written.
    #[error(transparent)]
    Unwritten(std::sync::Arc<crate::home::HomeError>),
}

/// How a run's workers were chosen, for the report.
#[derive(Debug, Clone)]
pub enum Choice {
    /// Measured on this run.
    Measured {
        /// The settings key.
        key: String,
        /// What measuring found.
        measured: Measured,
        /// Where the choice was kept (the settings file), or why it was not.
        kept: Result<String, NotKept>,
    },
    /// Taken from the settings.
    Remembered {
        /// The settings key.
        key: String,
        /// The remembered kinds.
        kinds: Kinds,
        /// Kinds remembered but not here now.
        missing: Kinds,
    },
}

impl Choice {
    /// The report's line.
    pub(crate) fn line(&self, block: &str, items: u64) -> String {
        let size = format!("2^{} items", items.max(1).ilog2());
        match self {
            Choice::Measured { key, measured, kept } => {
                let rates: Vec<String> =
                    measured.rates.iter().filter_map(|(k, r)| r.map(|r| format!("{k} {:.2}", r / 1e6))).collect();
                let verdict = match (&measured.best, kept) {
                    (None, _) => "nothing measured; every worker ran the rest".to_owned(),
                    (Some(best), Ok(file)) => format!("keeping {best} as {key} in {file}"),
                    (Some(best), Err(why)) => format!("using {best}, not kept ({why})"),
                };
                let calibrated: Vec<String> =
                    measured.calibrated.iter().map(|(k, r)| format!("{k} {:.2}", r / 1e6)).collect();
                if measured.calibrated.is_empty() || measured.items >= items {
                    let rates = if calibrated.is_empty() {
                        String::new()
                    } else {
                        format!("; {} M items/s", calibrated.join(", "))
                    };
                    return format!(
                        "par: placement of {block} at {size}: the run ended while calibrating ({:.3} s{rates}); nothing kept",
                        measured.seconds
                    );
                }
                format!(
                    "par: placement of {block} at {size}: calibrated {} M items/s, measured {} in {:.3} s ({:.0}% of the items); {verdict}",
                    calibrated.join(", "),
                    if rates.is_empty() { "no set".to_owned() } else { format!("{} M items/s", rates.join(", ")) },
                    measured.seconds,
                    100.0 * measured.items as f64 / items.max(1) as f64
                )
            }
            Choice::Remembered { key, kinds, missing } => {
                let gone = if missing.is_empty() { String::new() } else { format!(" ({missing} not here now)") };
                format!("par: placement of {block} at {size}: {kinds}, remembered as {key}{gone}")
            }
        }
    }
}

#[cfg(test)]
mod tests;
