//! The program side's settings, read once from the environment.
//!
//! Variables are read through the [`Env`] trait so tests pass a map instead of touching the
//! process environment.

use std::collections::HashMap;

use xcd_wire::trace::WorkerKind;

use crate::RunError;

/// `XC_PAR_WORKERS`: which workers may run tiles.
pub const XC_PAR_WORKERS: &str = "XC_PAR_WORKERS";
/// `XC_PAR_REPORT`: `1` prints what each run did on standard error.
pub const XC_PAR_REPORT: &str = "XC_PAR_REPORT";
/// `XC_PAR`: which kind of device runs blocks: `auto`, `cpu`, `gpu`, `gpus`.
pub const XC_PAR: &str = "XC_PAR";
/// `XC_PAR_REMOTE`: daemons to send tiles to, `host:port,…`.
pub const XC_PAR_REMOTE: &str = "XC_PAR_REMOTE";
/// `XC_PAR_POOL`: find the daemons of this pool by multicast DNS.
pub const XC_PAR_POOL: &str = "XC_PAR_POOL";
/// `XC_PAR_SECRET`: the secret the daemons require.
pub const XC_PAR_SECRET: &str = "XC_PAR_SECRET";
/// `XC_PAR_TRACE`: a monitor (`host:port`, xcmon's port 7482) that gets a record of each run.
pub const XC_PAR_TRACE: &str = "XC_PAR_TRACE";
/// `XCC_HOME`: where settings and pins live (default `~/.xcc`).
pub const XCC_HOME: &str = "XCC_HOME";

/// A setting in the environment that is wrong, and what to set instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `XC_PAR_WORKERS` names something that is not a worker.
    #[error(
        "{var}={value}: {item:?} is not a worker; use local, cpu, gpu, remote or a worker name such as gpu:vulkan:…",
        var = XC_PAR_WORKERS
    )]
    NotAWorker {
        /// The whole setting.
        value: String,
        /// The item in it that is not a worker.
        item: String,
    },
    /// `XC_PAR` is not one of its modes.
    #[error(
        "{var}={0}: use auto, cpu (this machine's cores), gpu (this machine's GPUs) or gpus (every GPU, local and remote)",
        var = XC_PAR
    )]
    Mode(String),
    /// `XC_PAR_REPORT` is neither on nor off.
    #[error("{var}={0}: use 1 to report, 0 not to", var = XC_PAR_REPORT)]
    Report(String),
    /// `XC_PAR_TRACE` does not name a monitor.
    #[error(
        "{var}={0}: name the monitor as host:port, e.g. monitor-host:{port}",
        var = XC_PAR_TRACE,
        port = xcd_wire::trace::TRACE_PORT
    )]
    Trace(String),
}

/// Where settings come from.
pub trait Env {
    /// The variable's value, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Env for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

/// One entry of `XC_PAR_WORKERS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerChoice {
    /// `local`: this machine's CPU and GPUs.
    Local,
    /// `cpu`: this machine's CPU cores.
    Cpu,
    /// `gpu`: every GPU of this machine.
    Gpu,
    /// `remote`: the daemons' GPUs.
    Remote,
    /// A worker by its report name, e.g. `gpu:vulkan:llvmpipe (LLVM 15.0.6, 256 bits)`, and
    /// the kind that name is of ([`WorkerChoice::named`]).
    Named {
        /// `gpu` or `remote`.
        kind: WorkerKind,
        /// The worker's name, as the report gives it (`gpu:vulkan:…`).
        name: String,
    },
}

impl WorkerChoice {
    /// The choice of the worker named `name` (`gpu:…` or `remote:…`): its kind read once, here.
    pub fn named(name: &str) -> Option<WorkerChoice> {
        let kind = if name.starts_with("gpu:") {
            WorkerKind::Gpu
        } else if name.starts_with("remote:") {
            WorkerKind::Remote
        } else {
            return None;
        };
        Some(WorkerChoice::Named { kind, name: name.to_owned() })
    }
}

/// `XC_PAR`: which kind of device runs blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ParMode {
    /// Every worker allowed (the default).
    #[default]
    Auto,
    /// This machine's CPU cores only.
    Cpu,
    /// This machine's GPUs only.
    Gpu,
    /// Every GPU, local and remote; no CPU.
    Gpus,
}

/// Settings for a program's runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Which workers may run tiles; empty means all.
    pub workers: Vec<WorkerChoice>,
    /// `XC_PAR`.
    pub mode: ParMode,
    /// Print a report of each run.
    pub report: bool,
    /// Daemons named in `XC_PAR_REMOTE`, as `host:port`.
    pub remote: Vec<String>,
    /// `XC_PAR_REMOTE` includes `mdns`: find daemons by multicast DNS.
    pub mdns: bool,
    /// `XC_PAR_POOL`: find the daemons of this pool by multicast DNS.
    pub pool: Option<String>,
    /// `XC_PAR_SECRET`, if set.
    pub secret: Option<String>,
    /// `XCC_HOME`, if set.
    pub home: Option<String>,
    /// `XC_PAR_TRACE`, as `host:port`.
    pub trace: Option<String>,
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, RunError> {
        Self::read(&ProcessEnv)
    }

    /// Reads the settings from `env`.
    pub fn read(env: &dyn Env) -> Result<Self, RunError> {
        let mut settings = Settings::default();
        if let Some(value) = env.var(XC_PAR_WORKERS) {
            for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let choice = match item {
                    "local" => Some(WorkerChoice::Local),
                    "cpu" => Some(WorkerChoice::Cpu),
                    "gpu" => Some(WorkerChoice::Gpu),
                    "remote" => Some(WorkerChoice::Remote),
                    name => WorkerChoice::named(name),
                };
                let Some(choice) = choice else {
                    return Err(SettingsError::NotAWorker { value: value.clone(), item: item.to_owned() }.into());
                };
                settings.workers.push(choice);
            }
        }
        if let Some(value) = env.var(XC_PAR) {
            settings.mode = match value.trim() {
                "" | "auto" => ParMode::Auto,
                "cpu" => ParMode::Cpu,
                "gpu" => ParMode::Gpu,
                "gpus" => ParMode::Gpus,
                other => return Err(SettingsError::Mode(other.to_owned()).into()),
            };
        }
        if let Some(value) = env.var(XC_PAR_REPORT) {
            settings.report = match value.trim() {
                "1" | "true" | "yes" => true,
                "" | "0" | "false" | "no" => false,
                other => return Err(SettingsError::Report(other.to_owned()).into()),
            };
        }
        if let Some(value) = env.var(XC_PAR_REMOTE) {
            let named = value.split(',').map(str::trim).filter(|s| !s.is_empty());
            for name in named {
                if name == "mdns" {
                    settings.mdns = true;
                } else {
                    settings.remote.push(name.to_owned());
                }
            }
        }
        if let Some(value) = env.var(XC_PAR_TRACE).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
            if !value.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok()) {
                return Err(SettingsError::Trace(value).into());
            }
            settings.trace = Some(value);
        }
        settings.pool = env.var(XC_PAR_POOL).map(|p| p.trim().to_owned()).filter(|p| !p.is_empty());
        settings.secret = env.var(XC_PAR_SECRET).filter(|s| !s.is_empty());
        settings.home = env.var(XCC_HOME);
        Ok(settings)
    }

    /// Whether runs measure and remember which kinds of worker to use: only under `XC_PAR=auto`
    /// with no `XC_PAR_WORKERS`, since every other setting names the workers itself.
    pub fn measures(&self) -> bool {
        self.mode == ParMode::Auto && self.workers.is_empty()
    }

    /// Whether the CPU worker may run tiles.
    pub fn allows_cpu(&self) -> bool {
        matches!(self.mode, ParMode::Auto | ParMode::Cpu)
            && (self.workers.is_empty()
                || self.workers.iter().any(|w| matches!(w, WorkerChoice::Local | WorkerChoice::Cpu)))
    }

    /// Whether the remote worker of this name may run tiles.
    pub fn allows_remote(&self, name: &str) -> bool {
        matches!(self.mode, ParMode::Auto | ParMode::Gpus)
            && (self.workers.is_empty()
                || self.workers.iter().any(|w| match w {
                    WorkerChoice::Remote => true,
                    WorkerChoice::Named { name: n, .. } => n == name,
                    _ => false,
                }))
    }

    /// Whether daemons are to be found by multicast DNS (`XC_PAR_POOL` or `XC_PAR_REMOTE=mdns`).
    pub fn discovers(&self) -> bool {
        self.mdns || self.pool.is_some()
    }

    /// Whether any remote worker may run tiles.
    pub fn wants_remote(&self) -> bool {
        matches!(self.mode, ParMode::Auto | ParMode::Gpus)
            && (!self.remote.is_empty() || self.discovers())
            && (self.workers.is_empty()
                || self.workers.iter().any(|w| match w {
                    WorkerChoice::Remote => true,
                    WorkerChoice::Named { kind, .. } => *kind == WorkerKind::Remote,
                    _ => false,
                }))
    }

    /// Whether the local GPU worker of this name may run tiles.
    pub fn allows_gpu(&self, name: &str) -> bool {
        self.mode != ParMode::Cpu
            && (self.workers.is_empty()
                || self.workers.iter().any(|w| match w {
                    WorkerChoice::Local | WorkerChoice::Gpu => true,
                    WorkerChoice::Named { name: n, .. } => n == name,
                    _ => false,
                }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn default_allows_every_local_worker() {
        let s = Settings::read(&env(&[])).expect("empty settings");
        assert!(s.allows_cpu());
        assert!(s.allows_gpu("gpu:vulkan:x"));
        assert!(!s.report);
    }

    #[test]
    fn workers_narrow_the_choice() {
        let s = Settings::read(&env(&[("XC_PAR_WORKERS", "gpu")])).expect("valid");
        assert!(!s.allows_cpu());
        assert!(s.allows_gpu("gpu:vulkan:x"));
        let s = Settings::read(&env(&[("XC_PAR_WORKERS", "cpu, gpu:vulkan:x")])).expect("valid");
        assert!(s.allows_cpu());
        assert!(s.allows_gpu("gpu:vulkan:x"));
        assert!(!s.allows_gpu("gpu:vulkan:y"));
    }

    #[test]
    fn par_modes_pick_kinds_of_device() {
        let remote = ("XC_PAR_REMOTE", "gpu-box:7227");
        let s = Settings::read(&env(&[("XC_PAR", "gpus"), remote])).expect("valid");
        assert!(!s.allows_cpu() && s.allows_gpu("gpu:vulkan:x") && s.wants_remote());
        let s = Settings::read(&env(&[("XC_PAR", "gpu"), remote])).expect("valid");
        assert!(!s.allows_cpu() && s.allows_gpu("gpu:vulkan:x") && !s.wants_remote());
        let s = Settings::read(&env(&[("XC_PAR", "cpu"), remote])).expect("valid");
        assert!(s.allows_cpu() && !s.allows_gpu("gpu:vulkan:x") && !s.wants_remote());
        let s = Settings::read(&env(&[remote])).expect("valid");
        assert!(s.allows_cpu() && s.allows_gpu("gpu:vulkan:x") && s.wants_remote());
        let e = Settings::read(&env(&[("XC_PAR", "fast")])).expect_err("refused").to_string();
        assert!(e.contains("use auto, cpu"), "{e}");
    }

    #[test]
    fn pools_and_mdns_ask_for_discovery() {
        let s = Settings::read(&env(&[("XC_PAR_REMOTE", "mdns, gpu-box:7227")])).expect("valid");
        assert!(s.mdns && s.discovers() && s.wants_remote());
        assert_eq!(s.remote, ["gpu-box:7227"]);
        let s = Settings::read(&env(&[("XC_PAR_POOL", "render")])).expect("valid");
        assert!(!s.mdns && s.discovers() && s.wants_remote());
        assert_eq!(s.pool.as_deref(), Some("render"));
        // A run that needs no remote worker never browses.
        let s = Settings::read(&env(&[("XC_PAR_POOL", "render"), ("XC_PAR", "cpu")])).expect("valid");
        assert!(!s.wants_remote());
        assert!(!Settings::read(&env(&[])).expect("valid").discovers());
    }

    #[test]
    fn bad_values_say_what_to_use() {
        let e = Settings::read(&env(&[("XC_PAR_WORKERS", "gpus")])).expect_err("refused").to_string();
        assert!(e.contains("use local, cpu, gpu, remote"), "{e}");
        let e = Settings::read(&env(&[("XC_PAR_REPORT", "loud")])).expect_err("refused").to_string();
        assert!(e.contains("use 1"), "{e}");
        let e = Settings::read(&env(&[("XC_PAR_TRACE", "monitor-host")])).expect_err("refused").to_string();
        assert!(e.contains("host:port"), "{e}");
        let s = Settings::read(&env(&[("XC_PAR_TRACE", "monitor-host:7482")])).expect("valid");
        assert_eq!(s.trace.as_deref(), Some("monitor-host:7482"));
    }
}
