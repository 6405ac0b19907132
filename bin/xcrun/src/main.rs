//! xcrun: looks at this machine's devices and prints example blocks for a daemon. Only wires the
//! command line to the library crates, where all work happens.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xcd_runtime::home::Home;
use xcd_runtime::settings::XCC_HOME;
use xcd_wire::DeviceInfo;

/// Inspect the devices par blocks can run on.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List this machine's devices (backend, name, memory) and why others are missing; with
    /// XC_PAR_REMOTE set, the daemons' devices too.
    Devices {
        /// Print the inventory as JSON (the same shape a daemon serves).
        #[arg(long)]
        json: bool,
    },
    /// Walk what a program does on first contact with a daemon (address, TCP, TLS and pin,
    /// secret, version, layout, forms) and say, for the first step that fails, what to do.
    /// Uses XC_PAR_SECRET and XCC_HOME as programs do.
    Check {
        /// The daemon: host:port (port 7227 when left out). Without it, every daemon that
        /// XC_PAR_POOL or XC_PAR_REMOTE=mdns finds by multicast DNS.
        daemon: Option<String>,
    },
    /// List the daemons' certificate pins kept in XCC_HOME (default ~/.xcc), or remove one.
    Pins {
        #[command(subcommand)]
        action: Option<PinAction>,
    },
    /// Print an example block's description as JSON, every form included: the body of a daemon's
    /// `POST /v1/blocks` (e.g. `xcrun block escape > escape.json`).
    Block {
        /// escape, saxpy or poly.
        name: String,
        /// Print only the block's id (its content address).
        #[arg(long)]
        id: bool,
        /// Keep only the block's WGSL, as a REST client would send it: a daemon makes its own
        /// GPU's form from it.
        #[arg(long)]
        wgsl: bool,
    },
}

#[derive(Subcommand)]
enum PinAction {
    /// Remove the pin of a daemon (host:port, or the key tls.pin.host:port), after it was
    /// reinstalled: the next contact keeps its new certificate.
    Remove {
        /// host:port or tls.pin.host:port.
        daemon: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Devices { json } => devices(json),
        Command::Block { name, id, wgsl } => block(&name, id, wgsl),
        Command::Pins { action } => pins(action),
        Command::Check { daemon: Some(daemon) } => check(&daemon),
        Command::Check { daemon: None } => check_found(),
    }
}

fn check(daemon: &str) -> ExitCode {
    let home = Home::from_env(std::env::var(XCC_HOME).ok());
    let secret = std::env::var(xcd_runtime::settings::XC_PAR_SECRET).ok().filter(|s| !s.is_empty());
    let forms = xcd_kernels::escape().desc.forms.clone();
    println!("check {daemon}");
    let steps = xcd_runtime::remote::check::check(daemon, &home, secret.as_deref(), &forms);
    report(steps)
}

/// `xcrun check` without a daemon: those multicast DNS finds for XC_PAR_POOL / XC_PAR_REMOTE=mdns.
fn check_found() -> ExitCode {
    let settings = match xcd_runtime::Settings::from_env() {
        Ok(settings) => settings,
        Err(e) => return fail(&e.to_string()),
    };
    if !settings.discovers() {
        return fail("name a daemon (xcrun check gpu-box:7227), or set XC_PAR_POOL to check the daemons of a pool");
    }
    let picked = match xcd_runtime::remote::pool::browse(settings.pool.as_deref()) {
        Ok(picked) => picked,
        Err(e) => return fail(&format!("cannot look for daemons by multicast DNS: {e}")),
    };
    for line in &picked.skipped {
        println!("{line}");
    }
    if picked.take.is_empty() {
        let pool = settings.pool.as_deref().map(|p| format!(" of pool {p}")).unwrap_or_default();
        return fail(&format!("no daemon{pool} found by multicast DNS"));
    }
    let home = Home::from_env(settings.home.clone());
    let forms = xcd_kernels::escape().desc.forms.clone();
    let mut code = ExitCode::SUCCESS;
    for (name, ip) in &picked.take {
        println!("check {name} (found by mDNS at {ip})");
        let steps = xcd_runtime::remote::check::check_at(name, *ip, &home, settings.secret.as_deref(), &forms);
        if report(steps) != ExitCode::SUCCESS {
            code = ExitCode::FAILURE;
        }
    }
    code
}

fn fail(message: &str) -> ExitCode {
    eprintln!("xcrun: {message}");
    ExitCode::FAILURE
}

/// Prints a check's steps; fails when one failed.
fn report(steps: Vec<xcd_runtime::remote::check::Step>) -> ExitCode {
    let mut ok = true;
    for (step, outcome) in steps {
        match outcome {
            Ok(seen) => println!("  ok    {step:<8} {seen}"),
            Err(advice) => {
                println!("  FAIL  {step:<8} {advice}");
                ok = false;
            }
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn pins(action: Option<PinAction>) -> ExitCode {
    let home = Home::from_env(std::env::var(XCC_HOME).ok());
    let result = match action {
        None => home.read().map(|values| {
            let pins: Vec<_> = values.iter().filter(|(k, _)| k.starts_with("tls.pin.")).collect();
            if pins.is_empty() {
                println!("no pins in {}", home.path().display());
            }
            for (key, fingerprint) in pins {
                println!("{key} = {fingerprint}");
            }
        }),
        Some(PinAction::Remove { daemon }) => {
            let key = if daemon.starts_with("tls.pin.") { daemon } else { format!("tls.pin.{daemon}") };
            match home.get(&key) {
                Ok(None) => {
                    eprintln!("xcrun: there is no pin {key} in {}", home.path().display());
                    return ExitCode::from(1);
                }
                Ok(Some(_)) => home.set(&key, None).map(|()| println!("removed {key} from {}", home.path().display())),
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xcrun: {e}");
            ExitCode::FAILURE
        }
    }
}

fn block(name: &str, id_only: bool, wgsl_only: bool) -> ExitCode {
    let Some(block) = xcd_kernels::all().into_iter().find(|b| b.desc.name == name) else {
        let names: Vec<String> = xcd_kernels::all().iter().map(|b| b.desc.name.clone()).collect();
        eprintln!("xcrun: no example block named {name:?}; there are {}", names.join(", "));
        return ExitCode::from(64);
    };
    let mut desc = (*block.desc).clone();
    if wgsl_only {
        desc.forms = xcd_wire::Forms { wgsl: desc.forms.wgsl.take(), ..xcd_wire::Forms::default() };
    }
    if id_only {
        println!("{}", desc.id());
        return ExitCode::SUCCESS;
    }
    match serde_json::to_string(&desc) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xcrun: cannot write the block: {e}");
            ExitCode::FAILURE
        }
    }
}

fn devices(json: bool) -> ExitCode {
    let inventory = xcd_engine::discover();
    let infos: Vec<DeviceInfo> =
        inventory.devices.iter().map(|d| d.status_blocking().unwrap_or_else(|_| d.info().clone())).collect();
    if json {
        match serde_json::to_string_pretty(&infos) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("xcrun: cannot write the inventory: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        println!("{:<8} {:<12} {:>12} {:>12}  NAME", "BACKEND", "KIND", "MEMORY", "FREE");
        for info in &infos {
            println!(
                "{:<8} {:<12} {:>12} {:>12}  {}",
                info.backend.to_string(),
                if info.cpu { "cpu device" } else { "gpu" },
                bytes(info.memory_total),
                bytes(info.memory_free),
                info.name
            );
        }
        println!("{:<8} {:<12} {:>12} {:>12}  {} threads", "cpu", "cpu", "-", "-", threads());
    }
    for note in &inventory.notes {
        eprintln!("xcrun: {note}");
    }
    let settings = match xcd_runtime::Settings::from_env() {
        Ok(settings) => settings,
        Err(e) => return fail(&e.to_string()),
    };
    if (!settings.remote.is_empty() || settings.discovers()) && !json {
        let home = Home::from_env(settings.home.clone());
        let mut found = Vec::new();
        if settings.discovers() {
            match xcd_runtime::remote::pool::browse(settings.pool.as_deref()) {
                Ok(picked) => {
                    for line in picked.skipped {
                        eprintln!("xcrun: {line}");
                    }
                    found = picked.take;
                }
                Err(e) => eprintln!("xcrun: cannot look for daemons by multicast DNS: {e}"),
            }
        }
        let (devices, errors) =
            xcd_runtime::remote::inventory(&settings.remote, &found, &home, settings.secret.as_deref());
        for (name, info) in devices {
            println!(
                "{:<8} {:<12} {:>12} {:>12}  {name}",
                "remote",
                if info.cpu { "cpu device" } else { "gpu" },
                bytes(info.memory_total),
                bytes(info.memory_free)
            );
        }
        for error in errors {
            eprintln!("xcrun: {error}");
        }
    }
    ExitCode::SUCCESS
}

fn threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Bytes in binary units, or `-` where the driver does not tell.
fn bytes(value: Option<u64>) -> String {
    match value {
        None => "-".into(),
        Some(b) if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        Some(b) => format!("{:.0} MiB", b as f64 / f64::from(1u32 << 20)),
    }
}
