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
//! - [`schedule`]: a run as one value (`Run`), and tiles sized to each worker's rate, carved
//!   from the program's arrays;
//! - [`placement`]: which kinds of worker run a block, measured once and remembered: the run's
//!   policy, as methods of `Run`;
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

use std::time::Instant;

pub use args::Args;
pub use block::{Block, CpuArg, CpuKernel, CpuTile, canonical, to_i32, to_u32};
pub use report::RunReport;
pub use schedule::{RunOptions, WorkerStats};
pub use settings::{ParMode, Settings, WorkerChoice};

use xcd_wire::DescError;

use crate::placement::Placements;
use crate::roster::Roster;
use crate::schedule::{Run, Work};
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
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    /// The block's description is not usable.
    #[error(transparent)]
    Desc(#[from] DescError),
    /// The run's arguments do not fit the block.
    #[error("block {block}: {msg}")]
    Args {
        /// The block, by the name its description gives.
        block: String,
        /// What does not fit, and what would.
        msg: String,
    },
    /// The settings leave no worker to run tiles.
    #[error("no worker can run tiles: {0}")]
    NoWorkers(#[from] roster::NoWorkers),
    /// Every worker failed before the block completed.
    #[error("block {block} did not complete: every worker failed ({failures})")]
    Failed {
        /// The block, by the name its description gives.
        block: String,
        /// Each worker's failure.
        failures: Failures,
    },
}

/// Each worker that failed in a run, and why: `name: why; name: why`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Failures(pub Vec<(String, String)>);

impl std::fmt::Display for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_joined(f, self.0.iter().map(|(worker, why)| format!("{worker}: {why}")))
    }
}

/// Writes `items` one after another, `; ` between.
pub(crate) fn write_joined(
    f: &mut std::fmt::Formatter<'_>,
    items: impl IntoIterator<Item = impl std::fmt::Display>,
) -> std::fmt::Result {
    for (i, item) in items.into_iter().enumerate() {
        write!(f, "{}{item}", if i == 0 { "" } else { "; " })?;
    }
    Ok(())
}

/// A program's par context: its workers and settings, made once and used for every run.
pub struct Par {
    settings: Settings,
    /// The workers that may run tiles; daemons of a pool join and leave between runs.
    roster: Roster,
    /// Placements read or measured so far, over the settings file.
    placements: Placements,
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
        let placements = Placements::new(home, settings.measures());
        Ok(Par { settings, roster, placements, tracer })
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
        let current = self.roster.current(&self.settings);
        let workers: Vec<&dyn Worker> = current.iter().map(|w| &**w as &dyn Worker).collect();
        let mut run = Run::new(RunCtx::new(block, n, &args), workers, options);
        let mut report = RunReport {
            block: block.desc.name.clone(),
            source: format!("{}:{}", caller.file(), caller.line()),
            items: u64::from(n),
            elapsed: Default::default(),
            workers: Vec::new(),
            placement: None,
        };
        if n > 0 {
            let (left, choice) = run.place(&self.placements, Work::new(args.arrays, n));
            report.placement = choice;
            if !left.is_empty() {
                return Err(RunError::Failed { block: block.desc.name.clone(), failures: run.failures() });
            }
        }
        let (ctx, stats) = run.finish();
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
}
