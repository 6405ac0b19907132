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
//! - [`block`]: [`Block`] (description + CPU form) and [`CpuTile`];
//! - [`args`]: [`Args`], a run's parameters and arrays;
//! - [`worker`]: the CPU worker and the GPU worker;
//! - [`schedule`]: tiles sized to each worker's rate, carved from the program's arrays;
//! - [`remote`]: remote workers, the devices of daemons in `XC_PAR_REMOTE`, pinned;
//! - [`home`]: the settings file under `XCC_HOME` (pins);
//! - [`settings`]: [`Settings`] from the environment;
//! - [`report`]: [`RunReport`] and the `par:` lines.
#![forbid(unsafe_code)]

pub mod args;
pub mod block;
pub mod home;
pub mod remote;
pub mod report;
pub mod schedule;
pub mod settings;
pub mod worker;

use std::time::Instant;

pub use args::Args;
pub use block::{Block, CpuKernel, CpuTile};
pub use report::RunReport;
pub use schedule::{RunOptions, WorkerStats};
pub use settings::{ParMode, Settings, WorkerChoice};

use xcd_engine::WholeArray;
use xcd_wire::DescError;

use crate::args::ArrayArg;
use crate::worker::{CpuWorker, GpuWorker, RunCtx, Worker};

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
    workers: Vec<Box<dyn Worker + Send>>,
    /// Runs the remote workers' connections; present when daemons are named.
    _runtime: Option<tokio::runtime::Runtime>,
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
                .any(|w| matches!(w, WorkerChoice::Local | WorkerChoice::Gpu | WorkerChoice::Named(_)));
        let inventory = if wants_gpu { xcd_engine::discover() } else { xcd_engine::Inventory::default() };
        let mut workers: Vec<Box<dyn Worker + Send>> = Vec::new();
        let mut lines = Vec::new();
        if settings.allows_cpu() {
            let pool = rayon::ThreadPoolBuilder::new()
                .thread_name(|i| format!("xc-cpu-{i}"))
                .build()
                .map_err(|e| RunError::NoWorkers(format!("cannot start the CPU worker's threads: {e}")))?;
            lines.push(format!("par: cpu worker cpu, {} threads", pool.current_num_threads()));
            workers.push(Box::new(CpuWorker { pool }));
        }
        let mut names = vec!["cpu".to_owned()];
        for device in inventory.devices {
            let name = format!("gpu:{}", device.info().id);
            names.push(name.clone());
            if settings.allows_gpu(&name) {
                let kind = if device.info().cpu { " (a CPU device)" } else { "" };
                lines.push(format!("par: gpu worker {name}{kind}"));
                workers.push(Box::new(GpuWorker { name, device }));
            }
        }
        lines.extend(inventory.notes.iter().map(|n| format!("par: {n}")));
        let mut runtime = None;
        let mut remote_errors = Vec::new();
        if settings.wants_remote() {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("xc-remote")
                .enable_all()
                .build()
                .map_err(|e| RunError::NoWorkers(format!("cannot start the remote workers' runtime: {e}")))?;
            let home = home::Home::from_env(settings.home.clone());
            let (remotes, errors) = remote::connect_all(&rt, &settings.remote, &home, settings.secret.as_deref());
            for worker in remotes {
                names.push(worker.name().to_owned());
                if settings.allows_remote(worker.name()) {
                    lines.push(worker.describe());
                    workers.push(Box::new(worker));
                }
            }
            remote_errors = errors;
            runtime = Some(rt);
        }
        for choice in &settings.workers {
            match choice {
                WorkerChoice::Named(name) if !names.contains(name) => {
                    return Err(RunError::NoWorkers(format!(
                        "XC_PAR_WORKERS names {name}, which is not here; workers: {}",
                        names.join(", ")
                    )));
                }
                _ => {}
            }
        }
        // Always said, report or not: a daemon the program was told to use and cannot.
        for error in &remote_errors {
            let elsewhere = if workers.is_empty() { "" } else { "; its share runs on the other workers" };
            eprintln!("par: {error}{elsewhere}");
        }
        if workers.is_empty() {
            if !remote_errors.is_empty() {
                let reasons: Vec<String> = remote_errors.iter().map(ToString::to_string).collect();
                return Err(RunError::NoWorkers(reasons.join("; ")));
            }
            return Err(RunError::NoWorkers(format!(
                "XC_PAR_WORKERS allows none of this machine's workers ({})",
                names.join(", ")
            )));
        }
        if settings.report {
            for line in lines {
                eprintln!("{line}");
            }
        }
        Ok(Par { settings, workers, _runtime: runtime })
    }

    /// The names of the workers that may run tiles.
    pub fn worker_names(&self) -> Vec<&str> {
        self.workers.iter().map(|w| w.name()).collect()
    }

    /// Runs `block` over items `0..n`; results land in the arrays `args` lends.
    pub fn run(&self, block: &Block, n: u32, args: Args<'_>) -> Result<RunReport, RunError> {
        self.run_with(block, n, args, &RunOptions::default())
    }

    /// [`run`](Self::run) with options (fixed tile size, progress).
    pub fn run_with(
        &self,
        block: &Block,
        n: u32,
        args: Args<'_>,
        options: &RunOptions<'_>,
    ) -> Result<RunReport, RunError> {
        block.desc.validate()?;
        args.check(&block.desc, n)?;
        let started = Instant::now();
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
        };
        let mut report = RunReport {
            block: block.desc.name.clone(),
            items: u64::from(n),
            elapsed: Default::default(),
            workers: Vec::new(),
        };
        if n > 0 {
            let workers: Vec<&dyn Worker> = self.workers.iter().map(|w| &**w as &dyn Worker).collect();
            match schedule::run(&workers, &ctx, n, args.arrays, options) {
                Ok(stats) => report.workers = stats,
                Err(stats) => {
                    let reasons = stats
                        .iter()
                        .filter_map(|s| s.failure.as_ref().map(|f| format!("{}: {f}", s.name)))
                        .collect::<Vec<_>>()
                        .join("; ");
                    return Err(RunError::Failed { block: block.desc.name.clone(), reasons });
                }
            }
        }
        report.elapsed = started.elapsed();
        if self.settings.report {
            for line in report.lines() {
                eprintln!("{line}");
            }
        }
        Ok(report)
    }
}
