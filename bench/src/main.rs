//! The performance harness (issue 9): each measure of xcd against a baseline taken in the same
//! run, on this machine, printed and written to `target/bench/report.md` as markdown.
//!
//! - `rtt`: one tile of one item on an open tile stream, over loopback TLS and HTTP/2, against
//!   the same bytes echoed by a bare HTTP/2 server over the same TLS (`echo`), and the same tile
//!   run on the same device in this process: p50 and p99 of each.
//! - `copy`: a copy block of 64 MiB in and 64 MiB out through a daemon (the program side's own
//!   remote worker), against the same bytes sent and echoed over a bare rustls connection, and
//!   the same block on the same device in this process.
//! - `link`: the copy block over a link capped with tbf and delayed by a relay, between network
//!   namespaces, against a bare rustls echo over the same link (needs root).
//! - `overhead`, `scaling`, `placement`: the escape block through the runtime (`escape.rs`):
//!   through a daemon against in process; daemons on cores of their own, together against alone;
//!   the measuring first run against the best fixed set of workers.
//! - `exact`: each example block on each local device with the exact forms the engine makes,
//!   against its build-time forms loaded as sent (`exact.rs`).
//! - `sim`: the real scheduler driving 4 to 256 made-up workers in virtual time, against the
//!   ideal split (`sim.rs`).
//!
//! ```text
//! xcd-bench --bin-dir target/dist [MEASURE…] [--quick] [--escape WIDTHxHEIGHTxITERS] [--device PART]
//! ```
//! `scripts/bench` builds the release binaries and runs it; `--quick` is its smoke size;
//! `--escape` sets the escape measures' size (e.g. `4096x4096x2000` on a real GPU); `--device`
//! picks one device by index or part of its id, as `xcd -devices` does (e.g. `cuda`), for every
//! daemon the harness starts and for the in-process baselines of `rtt`, `copy` and `overhead`,
//! so that a machine with several kinds of device measures each on its own (scripts/gpu-check).
//! `XCD_BENCH_REPORT=1` prints the program side's `par:` report of each run (tiles, rates).

pub(crate) use xcd_e2e::quantile;

mod blocks;
mod copy;
mod echo;
mod escape;
mod exact;
mod link;
mod rtt;
mod sim;

use std::path::{Path, PathBuf};

use xcd_e2e::{Daemon, DaemonBuilder};
use xcd_runtime::{ParMode, Settings, WorkerChoice};

/// The secret of the daemons the harness starts.
pub(crate) const SECRET: &str = "bench-secret";

/// A daemon of the `xcd` in `--bin-dir`, with the harness's secret and no multicast.
pub(crate) fn daemon(o: &Options) -> DaemonBuilder {
    let daemon = Daemon::build(o.bin_dir.join("xcd")).secret(SECRET).args(&["-mdns", "false"]);
    match &o.device {
        Some(part) => daemon.args(&["-devices", part]),
        None => daemon,
    }
}

/// This machine's device that `--device` names (by index or part of its id, as `xcd -devices`
/// reads it), or its first.
pub(crate) fn local_device(o: &Options) -> Result<xcd_engine::DeviceHandle, String> {
    let devices = xcd_engine::discover().devices;
    let Some(part) = o.device.as_deref().map(str::to_lowercase) else {
        return devices.into_iter().next().ok_or_else(|| "no device here".into());
    };
    devices
        .into_iter()
        .enumerate()
        .find(|(i, d)| part.parse::<usize>().map_or_else(|_| d.info().id.to_lowercase().contains(&part), |n| n == *i))
        .map(|(_, d)| d)
        .ok_or_else(|| format!("no device here matches --device {part} (`xcrun devices` lists them)"))
}

/// The program side's worker for this machine's GPUs: the one `--device` names, or all of them.
pub(crate) fn local_gpu(o: &Options) -> Result<WorkerChoice, String> {
    if o.device.is_none() {
        return Ok(WorkerChoice::Gpu);
    }
    let id = local_device(o)?.info().id.clone();
    WorkerChoice::named(&format!("gpu:{id}")).ok_or_else(|| format!("{id} cannot be named as a worker"))
}

/// A program's settings: these workers, the daemons at these loopback ports, its settings under
/// `home`; `XCD_BENCH_REPORT` prints its `par:` report.
pub(crate) fn settings(workers: Vec<WorkerChoice>, ports: &[u16], home: &Path) -> Settings {
    Settings {
        workers,
        mode: ParMode::Auto,
        remote: ports.iter().map(|port| format!("127.0.0.1:{port}")).collect(),
        secret: Some(SECRET.to_owned()),
        home: Some(home.display().to_string()),
        report: std::env::var_os("XCD_BENCH_REPORT").is_some(),
        ..Settings::default()
    }
}

/// What to measure and how hard.
pub(crate) struct Options {
    /// Where `xcd` is built.
    pub bin_dir: PathBuf,
    /// Smaller sizes and fewer repetitions, for a smoke run.
    pub quick: bool,
    /// The escape measures' size, when not their own.
    pub escape: Option<escape::Size>,
    /// The one device to measure (`--device`), when not every one.
    pub device: Option<String>,
}

/// Every measure, in the order they run when none is named.
const MEASURES: [&str; 8] = ["rtt", "copy", "link", "overhead", "scaling", "placement", "exact", "sim"];

/// The options and the measures the command line names.
fn parse(all: Vec<String>) -> Result<(Options, Vec<String>), String> {
    let mut options = Options { bin_dir: PathBuf::new(), quick: false, escape: None, device: None };
    let mut measures = Vec::new();
    let mut args = all.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin-dir" => options.bin_dir = args.next().map(PathBuf::from).unwrap_or_default(),
            "--quick" => options.quick = true,
            "--escape" => match args.next().as_deref().and_then(escape::Size::parse) {
                Some(size) => options.escape = Some(size),
                None => return Err("--escape takes WIDTHxHEIGHTxITERS, e.g. 4096x4096x2000".into()),
            },
            "--device" => match args.next() {
                Some(part) => options.device = Some(part),
                None => return Err("--device takes an index or part of a device's id, e.g. cuda".into()),
            },
            m if MEASURES.contains(&m) => measures.push(arg),
            other => return Err(format!("unknown argument {other}: the measures are {}", MEASURES.join(", "))),
        }
    }
    Ok((options, measures))
}

fn main() -> std::process::ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let all: Vec<String> = std::env::args().skip(1).collect();
    // The halves of `link` that run inside a network namespace.
    let inner = match all.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--inner-echo"] => Some(link::inner_echo()),
        ["--inner-link", daemon, echo, delay, items] => Some(link::inner_link(daemon, echo, delay, items)),
        _ => None,
    };
    if let Some(result) = inner {
        return match result {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("xcd-bench: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let (options, mut measures) = match parse(all) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("xcd-bench: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if !options.bin_dir.join("xcd").exists() {
        eprintln!("xcd-bench: --bin-dir must name where xcd is built (scripts/bench builds it)");
        return std::process::ExitCode::FAILURE;
    }
    // A device that is not here is said before any daemon is started for it.
    if options.device.is_some()
        && let Err(e) = local_device(&options)
    {
        eprintln!("xcd-bench: {e}");
        return std::process::ExitCode::FAILURE;
    }
    if measures.is_empty() {
        measures = MEASURES.iter().map(|m| (*m).to_owned()).collect();
    }
    let mut report = String::from("# xcd-bench\n\n");
    for measure in &measures {
        let section = match measure.as_str() {
            "rtt" => rtt::run(&options),
            "copy" => copy::run(&options),
            "link" => link::run(&options),
            "overhead" => escape::overhead(&options),
            "scaling" => escape::scaling(&options),
            "exact" => exact::run(&options),
            "sim" => sim::run(&options),
            _ => escape::placement(&options),
        };
        match section {
            Ok(text) => {
                println!("{text}");
                report.push_str(&text);
                report.push('\n');
            }
            Err(e) => {
                eprintln!("xcd-bench: {measure}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let out = PathBuf::from("target/bench");
    if std::fs::create_dir_all(&out).and_then(|()| std::fs::write(out.join("report.md"), report)).is_err() {
        eprintln!("xcd-bench: cannot write target/bench/report.md");
    }
    std::process::ExitCode::SUCCESS
}
