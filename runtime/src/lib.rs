//! The program side of xcd: runs par blocks across this machine's CPU and GPUs and the GPUs of
//! daemons on other machines.
//!
//! Owns the workers (CPU, local GPU, remote), the dynamic tile scheduler, the settings a program
//! reads from its environment (`XC_PAR_WORKERS`, `XC_PAR_REMOTE`, `XC_PAR_SECRET`,
//! `XC_PAR_REPORT`, …), certificate pins, and the `par:` report. It drives local devices only
//! through the engine's handles and daemons only through their HTTP/2 API; it must not touch a
//! GPU API itself.
//!
//! Layout:
//! - [`block`]: [`Block`] (description + CPU form) and [`CpuTile`]; [`include_blocks!`] brings in
//!   the block modules `xcd-build` writes, which name [`wire`]'s types;
//! - [`args`]: [`Args`], a run's parameters and arrays;
//! - [`worker`]: the `Worker` trait, [`worker::WorkerId`], and the CPU, GPU and remote workers;
//! - [`roster`]: which workers exist: start-up, daemons joining and leaving, retries;
//! - [`schedule`]: tiles sized to each worker's rate, carved from the program's arrays;
//! - [`placement`]: which kinds of worker run a block, measured once and remembered;
//! - [`remote`]: the daemon client, for daemons in `XC_PAR_REMOTE` or found by mDNS, pinned;
//! - [`home`]: the settings file under `XCC_HOME` (pins, placements), the `xcd-home` crate;
//! - [`settings`]: [`Settings`] from the environment;
//! - [`report`]: [`RunReport`] and the `par:` lines;
//! - [`trace`]: each run's record sent to `XC_PAR_TRACE`'s monitor, with its `timeline`: when
//!   each tile ran, on which worker and lane.
#![forbid(unsafe_code)]

pub mod args;
pub mod block;
/// The math library's f64 fast path, which generated CPU forms call (`xcd-cpumath`).
pub use xcd_cpumath as cpumath;
pub use xcd_home as home;
/// The wire types, for code `xcd-build` generates.
pub use xcd_wire as wire;
pub mod placement;
pub mod remote;
pub mod report;
pub mod roster;
pub mod schedule;
pub mod settings;
#[cfg(test)]
mod testing;
mod timeline;
mod trace;
pub mod worker;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Instant;

pub use args::Args;
pub use block::{Block, CpuArg, CpuKernel, CpuTile, canonical, to_i32, to_u32};
pub use report::RunReport;
pub use schedule::{RunOptions, WorkerStats};
pub use settings::{ParMode, Settings, WorkerChoice};

use xcd_engine::WholeArray;
use xcd_wire::DescError;

use crate::args::ArrayArg;
use crate::placement::{Choice, Kinds};
use crate::roster::Roster;
use crate::schedule::{ItemsDone, Work};
use crate::worker::{RunCtx, Worker};

/// Includes the blocks `xcd-build` made in this crate's `build.rs`: one module per WGSL file,
/// each with `block()`, `desc()`, the typed `run` and `run_with`, and the CPU form `cpu`.
#[macro_export]
macro_rules! include_blocks {
    () => {
        include!(concat!(env!("OUT_DIR"), "/xcd_blocks.rs"));
    };
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A setting in the environment is wrong.
    #[error("{0}")]
    Settings(String),
    /// The block's description is not usable.
    #[error(transparent)]
    Desc(#[from] DescError),
    /// The run's arguments do not fit the block.
    #[error("block {block}: {msg}")]
    Args {
        /// Block name.
        block: String,
        /// What does not fit.
        msg: String,
    },
    /// The settings leave no worker to run tiles.
    #[error("no worker can run tiles: {0}")]
    NoWorkers(String),
    /// Every worker failed before the block completed.
    #[error("block {block} did not complete: every worker failed ({reasons})")]
    Failed {
        /// Block name.
        block: String,
        /// Each worker's failure.
        reasons: String,
    },
}

/// A program's par context: its workers and settings, made once and used for every run.
pub struct Par {
    settings: Settings,
    /// The workers that may run tiles; daemons of a pool join and leave between runs.
    roster: Roster,
    home: home::Home,
    /// Placements read or measured so far, by settings key.
    placements: Mutex<HashMap<String, Kinds>>,
    /// Sends each run's record to `XC_PAR_TRACE`'s monitor.
    tracer: Option<trace::Tracer>,
}

impl Par {
    /// Reads the settings from the environment and finds this machine's devices.
    pub fn from_env() -> Result<Par, RunError> {
        Par::new(Settings::from_env()?)
    }

    /// Finds this machine's devices and keeps the workers `settings` allow.
    pub fn new(settings: Settings) -> Result<Par, RunError> {
        // Opening devices costs time (and llvmpipe's threads): skip it when no GPU may run tiles.
        let wants_gpu = settings.workers.is_empty()
            || settings
                .workers
                .iter()
                .any(|w| matches!(w, WorkerChoice::Local | WorkerChoice::Gpu | WorkerChoice::Named { .. }));
        let inventory = if wants_gpu { xcd_engine::discover() } else { xcd_engine::Inventory::default() };
        Par::with_inventory(settings, inventory)
    }

    /// Keeps the workers `settings` allow among devices the caller opened (with
    /// `xcd_engine::discover_with`, or a device of its own behind `xcd_engine::owner::spawn`).
    pub fn with_inventory(settings: Settings, inventory: xcd_engine::Inventory) -> Result<Par, RunError> {
        let home = home::Home::from_env(settings.home.clone());
        let roster = Roster::start(&settings, inventory, home.clone())?;
        let tracer = match settings.trace.clone().map(trace::Tracer::start) {
            Some(Ok(tracer)) => Some(tracer),
            Some(Err(e)) => {
                eprintln!("par: cannot start sending runs to {}: {e}; runs are not traced", settings::XC_PAR_TRACE);
                None
            }
            None => None,
        };
        Ok(Par { settings, roster, home, placements: Mutex::default(), tracer })
    }

    /// The names of the workers that may run tiles.
    pub fn worker_names(&self) -> Vec<String> {
        self.roster.names()
    }

    /// Runs `block` over items `0..n`; results land in the arrays `args` lends. The report
    /// names the caller's source line.
    #[track_caller]
    pub fn run(&self, block: &Block, n: u32, args: Args<'_>) -> Result<RunReport, RunError> {
        self.run_with(block, n, args, &RunOptions::default())
    }

    /// [`run`](Self::run) with options (fixed tile size, progress).
    #[track_caller]
    pub fn run_with(
        &self,
        block: &Block,
        n: u32,
        args: Args<'_>,
        options: &RunOptions<'_>,
    ) -> Result<RunReport, RunError> {
        let caller = std::panic::Location::caller();
        block.desc.validate()?;
        args.check(&block.desc, n)?;
        let started = Instant::now();
        let wall = std::time::SystemTime::now();
        let whole = args
            .arrays
            .iter()
            .filter_map(|a| match a {
                ArrayArg::Whole(d) => Some(WholeArray::new(d.clone())),
                _ => None,
            })
            .collect();
        let ctx = RunCtx {
            block: block.clone(),
            id: block.desc.id(),
            items: n,
            params: args.params.iter().map(|&(_, word)| word).collect(),
            whole,
            timeline: timeline::Timeline::default(),
        };
        let current = self.roster.current(&self.settings);
        let workers: Vec<&dyn Worker> = current.iter().map(|w| &**w as &dyn Worker).collect();
        let mut stats: Vec<WorkerStats> = workers.iter().map(|w| WorkerStats::of(*w)).collect();
        let mut report = RunReport {
            block: block.desc.name.clone(),
            source: format!("{}:{}", caller.file(), caller.line()),
            items: u64::from(n),
            elapsed: Default::default(),
            workers: Vec::new(),
            placement: None,
        };
        let work = Work::new(args.arrays, n);
        if n > 0 {
            let (left, choice) = self.schedule(&workers, &mut stats, &ctx, work, options);
            report.placement = choice;
            if !left.is_empty() {
                let reasons = stats
                    .iter()
                    .filter_map(|s| s.failure.as_ref().map(|f| format!("{}: {f}", s.name)))
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(RunError::Failed { block: block.desc.name.clone(), reasons });
            }
        }
        for (stat, worker) in stats.iter_mut().zip(&workers) {
            stat.note = worker.note();
        }
        report.workers = stats;
        report.elapsed = started.elapsed();
        if self.settings.report {
            for line in report.lines() {
                eprintln!("{line}");
            }
        }
        if let Some(tracer) = &self.tracer {
            tracer.send(&report, wall, &ctx.timeline);
        }
        Ok(report)
    }

    /// Chooses the run's workers (measuring or remembering a placement where `XC_PAR=auto` leaves
    /// a choice) and runs `work` on them; whatever they leave when they fail runs on every other
    /// worker. Returns what is left (only when every worker failed) and how the choice was made.
    fn schedule<'a>(
        &self,
        workers: &[&dyn Worker],
        stats: &mut [WorkerStats],
        ctx: &RunCtx,
        mut work: Work<'a>,
        options: &RunOptions<'_>,
    ) -> (Work<'a>, Option<Choice>) {
        let done = ItemsDone::new(0);
        let mut prepared = vec![false; workers.len()];
        let mut prepare = |stats: &mut [WorkerStats], members: &[usize]| {
            let todo: Vec<usize> = members.iter().copied().filter(|&i| !prepared[i]).collect();
            schedule::with_members(workers, stats, &todo, |chosen, taken| schedule::prepare(chosen, taken, ctx));
            for i in todo {
                prepared[i] = true;
            }
        };
        let kinds_of =
            |members: &[usize]| members.iter().fold(Kinds::default(), |k, &i| k.union(Kinds::of(workers[i].id().kind)));
        let members_of = |stats: &[WorkerStats], kinds: Kinds| -> Vec<usize> {
            (0..workers.len())
                .filter(|&i| stats[i].failure.is_none() && kinds.contains(Kinds::of(workers[i].id().kind)))
                .collect()
        };
        let all: Vec<usize> = (0..workers.len()).collect();
        let mut choice = None;
        let mut members = all.clone();
        if self.settings.measures() && kinds_of(&all).len() > 1 {
            let key = placement::key(&ctx.block.desc.name, &ctx.id, ctx.items);
            let present = kinds_of(&all);
            match self.remembered(&key) {
                Some(kinds) if !kinds.intersection(present).is_empty() => {
                    let using = kinds.intersection(present);
                    let missing = kinds.without(present);
                    members = members_of(stats, using);
                    choice = Some(Choice::Remembered { key, kinds, missing });
                }
                _ => {
                    prepare(stats, &all);
                    let measured = placement::measure(workers, stats, ctx, &mut work, options, &done);
                    let kept = match (measured.best, measured.too_short) {
                        _ if measured.broken => Err("a worker failed while measuring".to_owned()),
                        (_, Some(secs)) => Err(format!(
                            "the run, about {secs:.2} s, is too short to measure sets of kinds; every kind ran it"
                        )),
                        (None, None) => Err("nothing could be measured".to_owned()),
                        (Some(best), None) => self.remember(&key, best),
                    };
                    if let Some(best) = measured.best {
                        members = members_of(stats, best);
                    }
                    choice = Some(Choice::Measured { key, measured, kept });
                }
            }
        }
        prepare(stats, &members);
        work = placement::run_members(workers, stats, &members, ctx, work, options, &done);
        if !work.is_empty() {
            // The chosen workers failed: the rest of the run goes to every other worker.
            prepare(stats, &all);
            let live = members_of(stats, Kinds::ALL);
            work = placement::run_members(workers, stats, &live, ctx, work, options, &done);
        }
        (work, choice)
    }

    /// The remembered placement under `key`, if any.
    fn remembered(&self, key: &str) -> Option<Kinds> {
        let mut cache = self.placements.lock();
        if let Some(kinds) = cache.get(key) {
            return Some(*kinds);
        }
        let kinds = self.home.get(key).ok().flatten().and_then(|v| Kinds::parse(&v))?;
        cache.insert(key.to_owned(), kinds);
        Some(kinds)
    }

    /// Keeps a measured placement; says where, or why not.
    fn remember(&self, key: &str, kinds: Kinds) -> Result<String, String> {
        self.placements.lock().insert(key.to_owned(), kinds);
        self.home.set(key, Some(&kinds.to_string())).map_err(|e| e.to_string())?;
        Ok(self.home.path().display().to_string())
    }
}
