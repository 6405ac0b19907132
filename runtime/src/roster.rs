//! Who the workers are: the CPU worker, a GPU worker per local device the settings allow, and a
//! remote worker per device of each daemon named in `XC_PAR_REMOTE` or found by mDNS; then,
//! between runs, the daemons of a pool that join or leave, and the named daemons that were not
//! up at the start, tried again in the background. A run never waits for any of it.
//!
//! Owns the list of workers and its changes; running a block on them is `Par`'s (`lib.rs`), and
//! talking to a daemon is `crate::remote`'s.

use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::home::Home;
use crate::remote::{self, RemoteError};
use crate::settings::{Settings, WorkerChoice};
use crate::worker::remote::workers_of;
use crate::worker::{CpuWorker, GpuWorker, RemoteWorker, Worker};
use crate::{RunError, settings};

/// Why the settings leave no worker to run tiles.
#[derive(Debug, thiserror::Error)]
pub enum NoWorkers {
    /// Every daemon the program was told to use is out of reach, and no local worker may run.
    #[error("{}", Joined(.0))]
    Unreachable(Vec<RemoteError>),
    /// `XC_PAR_WORKERS` allows none of the workers here.
    #[error("{var} allows none of this machine's workers ({})", .workers.join(", "), var = settings::XC_PAR_WORKERS)]
    NoneAllowed {
        /// The workers here, by name.
        workers: Vec<String>,
    },
    /// `XC_PAR_WORKERS` names a worker that is not here.
    #[error("{var} names {name}, which is not here; workers: {}", .workers.join(", "), var = settings::XC_PAR_WORKERS)]
    NotHere {
        /// The worker named.
        name: String,
        /// The workers here, by name.
        workers: Vec<String>,
    },
    /// The CPU worker's threads could not start.
    #[error("cannot start the CPU worker's threads: {0}")]
    CpuThreads(#[source] rayon::ThreadPoolBuildError),
    /// The remote workers' runtime could not start.
    #[error("cannot start the remote workers' runtime: {0}")]
    RemoteRuntime(#[source] std::io::Error),
}

/// Errors written one after another, `; ` between.
struct Joined<'e, E>(&'e [E]);

impl<E: std::fmt::Display> std::fmt::Display for Joined<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::write_joined(f, self.0)
    }
}

/// How often a named daemon that could not be reached is tried again.
const MISSING_RETRY: Duration = Duration::from_secs(5);

/// A worker as the roster keeps it.
pub(crate) type Shared = Arc<dyn Worker + Send>;

/// The workers that may run tiles, and what changes them.
pub(crate) struct Roster {
    workers: RwLock<Vec<Shared>>,
    /// Follows the daemons of `XC_PAR_POOL` / `XC_PAR_REMOTE=mdns` after the start.
    watch: Mutex<Option<remote::pool::Watch>>,
    /// Daemons named in `XC_PAR_REMOTE` that could not be reached: tried again in the background.
    missing: Mutex<Missing>,
    /// Runs the remote workers' connections; present when daemons are wanted.
    runtime: Option<tokio::runtime::Runtime>,
    home: Home,
}

/// Named daemons that could not be reached, and the try in the background to reach them.
#[derive(Default)]
struct Missing {
    /// Their `host:port`s, as named.
    addrs: Vec<String>,
    /// When the last try began.
    tried: Option<Instant>,
    /// The try under way: its daemons and errors when it ends.
    trying: Option<JoinHandle<(Vec<RemoteWorker>, Vec<RemoteError>)>>,
}

/// What starting the remote workers found.
#[derive(Default)]
struct RemoteStart {
    runtime: Option<tokio::runtime::Runtime>,
    watch: Option<remote::pool::Watch>,
    missing: Missing,
    workers: Vec<RemoteWorker>,
    errors: Vec<RemoteError>,
}

impl Roster {
    /// The workers `settings` allow among the devices of `inventory` and the daemons they name
    /// or find; says what it could not use (always, report or not, for daemons) and, with
    /// `XC_PAR_REPORT`, the inventory's notes.
    pub(crate) fn start(settings: &Settings, inventory: xcd_engine::Inventory, home: Home) -> Result<Roster, RunError> {
        let mut lines: Vec<String> = inventory.notes.iter().map(|n| format!("par: {n}")).collect();
        let mut names = vec!["cpu".to_owned()];
        let mut workers = local_workers(settings, inventory, &mut names)?;
        let remote =
            if settings.wants_remote() { start_remote(settings, &home, &mut lines)? } else { RemoteStart::default() };
        for worker in remote.workers {
            names.push(worker.name().to_owned());
            if settings.allows_remote(worker.name()) {
                workers.push(Arc::new(worker));
            }
        }
        check_named(settings, &names)?;
        // Always said, report or not: a daemon the program was told to use and cannot.
        for error in &remote.errors {
            let elsewhere = if workers.is_empty() { "" } else { "; its share runs on the other workers" };
            eprintln!("par: {error}{elsewhere}");
        }
        if workers.is_empty() {
            if !remote.errors.is_empty() {
                return Err(NoWorkers::Unreachable(remote.errors).into());
            }
            return Err(NoWorkers::NoneAllowed { workers: names }.into());
        }
        if settings.report {
            for line in lines {
                eprintln!("{line}");
            }
        }
        Ok(Roster {
            workers: RwLock::new(workers),
            watch: Mutex::new(remote.watch),
            missing: Mutex::new(remote.missing),
            runtime: remote.runtime,
            home,
        })
    }

    /// The names of the workers that may run tiles.
    pub(crate) fn names(&self) -> Vec<String> {
        self.read().iter().map(|w| w.name().to_owned()).collect()
    }

    fn read(&self) -> parking_lot::RwLockReadGuard<'_, Vec<Shared>> {
        self.workers.read()
    }

    /// The hosts of the daemons whose devices are workers now.
    fn hosts(workers: &[Shared]) -> Vec<String> {
        workers.iter().filter_map(|w| w.id().daemon.as_ref().map(|d| d.host.clone())).collect()
    }

    /// Takes in the daemons of the pool that appeared since the last run and lets go of those
    /// that left or stopped taking work; returns the workers for this run.
    pub(crate) fn current(&self, settings: &Settings) -> Vec<Shared> {
        self.take_back_missing(settings);
        let moves = match self.watch.lock().as_mut() {
            Some(watch) => watch.moves(),
            None => Default::default(),
        };
        if moves.joined.is_empty() && moves.left.is_empty() {
            return self.read().clone();
        }
        let mut workers = self.workers.write();
        for (addr, why) in &moves.left {
            workers.retain(|w| w.id().daemon.as_ref().is_none_or(|d| d.addr != *addr));
            if settings.report {
                eprintln!("par: daemon {addr} left the pool ({why}); it gets no more tiles");
            }
        }
        if let (false, Some(runtime)) = (moves.joined.is_empty(), &self.runtime) {
            let secret = settings.secret.as_deref();
            let (daemons, errors) = remote::connect_all(runtime.handle(), &[], &moves.joined, &self.home, secret);
            for error in errors {
                eprintln!("par: {error}");
            }
            for worker in workers_of(daemons, &Self::hosts(&workers), runtime.handle()) {
                if settings.allows_remote(worker.name()) {
                    if settings.report {
                        let addr = worker.id().daemon.as_ref().map(|d| d.addr.clone()).unwrap_or_default();
                        eprintln!("par: daemon {addr} joined the pool: {}", worker.about());
                    }
                    workers.push(Arc::new(worker));
                }
            }
        }
        workers.clone()
    }

    /// Takes in the named daemons that answered a try in the background, and starts the next try
    /// for those still missing every [`MISSING_RETRY`]. A run never waits for a try.
    fn take_back_missing(&self, settings: &Settings) {
        let Some(runtime) = &self.runtime else { return };
        let mut missing = self.missing.lock();
        if missing.trying.as_ref().is_some_and(JoinHandle::is_finished) {
            let Some(Ok((joined, errors))) = missing.trying.take().map(JoinHandle::join) else { return };
            self.take_in(settings, &mut missing, joined, &errors);
        }
        let due = missing.tried.is_none_or(|at| at.elapsed() >= MISSING_RETRY);
        if missing.addrs.is_empty() || missing.trying.is_some() || !due {
            return;
        }
        missing.tried = Some(Instant::now());
        let (addrs, handle, home) = (missing.addrs.clone(), runtime.handle().clone(), self.home.clone());
        let secret = settings.secret.clone();
        let in_use = Self::hosts(&self.read());
        missing.trying = std::thread::Builder::new()
            .name("xc-remote retry".into())
            .spawn(move || {
                let (daemons, errors) = remote::connect_all(&handle, &addrs, &[], &home, secret.as_deref());
                (workers_of(daemons, &in_use, &handle), errors)
            })
            .ok();
    }

    /// Takes in the workers of named daemons that answered; those still unreachable stay
    /// missing, and any other refusal is said once, and left.
    fn take_in(&self, settings: &Settings, missing: &mut Missing, joined: Vec<RemoteWorker>, errors: &[RemoteError]) {
        let mut workers = self.workers.write();
        for worker in joined {
            let addr = worker.id().daemon.as_ref().map(|d| d.addr.clone()).unwrap_or_default();
            let known = workers.iter().any(|w| w.name() == worker.name());
            if known || !settings.allows_remote(worker.name()) {
                continue;
            }
            if settings.report {
                eprintln!("par: daemon {addr} answers now: {}", worker.about());
            }
            missing.addrs.retain(|a| *a != addr);
            workers.push(Arc::new(worker));
        }
        let unreachable: Vec<String> = errors
            .iter()
            .filter_map(|e| match e {
                RemoteError::Unreachable { addr, .. } => Some(addr.clone()),
                other => {
                    eprintln!("par: {other}");
                    None
                }
            })
            .collect();
        missing.addrs.retain(|a| unreachable.contains(a));
    }
}

/// The CPU worker, where allowed, and a GPU worker per device of `inventory` the settings allow;
/// every name goes into `names`, allowed or not.
fn local_workers(
    settings: &Settings,
    inventory: xcd_engine::Inventory,
    names: &mut Vec<String>,
) -> Result<Vec<Shared>, RunError> {
    let mut workers: Vec<Shared> = Vec::new();
    if settings.allows_cpu() {
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("xc-cpu-{i}"))
            .build()
            .map_err(NoWorkers::CpuThreads)?;
        workers.push(Arc::new(CpuWorker::new(pool)));
    }
    for device in inventory.devices {
        let worker = GpuWorker::new(device);
        names.push(worker.name().to_owned());
        if settings.allows_gpu(worker.name()) {
            workers.push(Arc::new(worker));
        }
    }
    Ok(workers)
}

/// Starts the remote workers' runtime, looks for daemons by mDNS where the settings say so, and
/// connects to those found and named. Named daemons that are not up yet are kept to try again.
fn start_remote(settings: &Settings, home: &Home, lines: &mut Vec<String>) -> Result<RemoteStart, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("xc-remote")
        .enable_all()
        .build()
        .map_err(NoWorkers::RemoteRuntime)?;
    let mut start = RemoteStart::default();
    let mut found = Vec::new();
    if settings.discovers() {
        match remote::pool::watch(settings.pool.as_deref()) {
            Ok((picked, following)) => {
                start.watch = Some(following);
                lines.extend(picked.skipped.iter().map(|line| format!("par: {line}")));
                if picked.take.is_empty() {
                    start.errors.push(nobody_found(settings, &picked.skipped));
                }
                found = picked.take;
            }
            Err(e) => eprintln!("par: cannot look for daemons by mDNS: {e}"),
        }
    }
    let secret = settings.secret.as_deref();
    let (daemons, errors) = remote::connect_all(runtime.handle(), &settings.remote, &found, home, secret);
    start.workers = workers_of(daemons, &[], runtime.handle());
    // A daemon that is not up yet (or not reachable now) is tried again while the program runs;
    // refusals (secret, version, pin, …) are not: they need a person.
    start.missing.addrs = errors
        .iter()
        .filter_map(|e| match e {
            RemoteError::Unreachable { addr, .. } if settings.remote.contains(addr) => Some(addr.clone()),
            _ => None,
        })
        .collect();
    start.missing.tried = Some(Instant::now());
    start.errors.extend(errors);
    start.runtime = Some(runtime);
    Ok(start)
}

/// The error for a search by mDNS that found no daemon to use.
fn nobody_found(settings: &Settings, skipped: &[String]) -> RemoteError {
    let pool = settings.pool.as_deref().map(|p| format!(" of pool {p}")).unwrap_or_default();
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!(" ({} skipped: {})", skipped.len(), skipped.join("; "))
    };
    RemoteError::NotFound(format!("no daemon{pool} found by multicast DNS{skipped}"))
}

/// Refuses a worker named in `XC_PAR_WORKERS` that is not here, saying which are.
fn check_named(settings: &Settings, names: &[String]) -> Result<(), RunError> {
    for choice in &settings.workers {
        if let WorkerChoice::Named { name, .. } = choice
            && !names.contains(name)
        {
            return Err(NoWorkers::NotHere { name: name.clone(), workers: names.to_vec() }.into());
        }
    }
    Ok(())
}

/// The devices of every daemon in `addrs` and `found` (from [`remote::pool::browse`]), named as
/// workers are, and an error per daemon that cannot serve: what `xcrun devices` shows with
/// `XC_PAR_REMOTE` or `XC_PAR_POOL` set.
pub fn inventory(
    addrs: &[String],
    found: &[(String, std::net::SocketAddr)],
    home: &Home,
    secret: Option<&str>,
) -> (Vec<(String, xcd_wire::DeviceInfo)>, Vec<RemoteError>) {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let failed = addrs.iter().map(|a| RemoteError::Failed { addr: a.clone(), detail: e.to_string() }).collect();
            return (Vec::new(), failed);
        }
    };
    let (daemons, errors) = remote::connect_all(runtime.handle(), addrs, found, home, secret);
    let workers = workers_of(daemons, &[], runtime.handle());
    let devices = workers.iter().filter_map(|w| w.device().map(|info| (w.name().to_owned(), info.clone()))).collect();
    (devices, errors)
}
