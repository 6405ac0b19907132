//! xcrun: looks at this machine's devices and prints example blocks for a daemon. Only wires the
//! command line to the library crates, where all work happens.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xcd_runtime::home::Home;
use xcd_runtime::remote;
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
    /// Print a block's description as JSON: the body of a daemon's `POST /v1/blocks`. An example
    /// block by name, every form included (`xcrun block escape > escape.json`), or any WGSL
    /// kernel of your own (`xcrun block --wgsl blur.wgsl > blur.json`), its description derived
    /// from the kernel as xcd-build derives it.
    Block {
        /// An example block: escape, saxpy or poly.
        #[arg(required_unless_present = "wgsl")]
        name: Option<String>,
        /// Print only the block's id (its content address).
        #[arg(long)]
        id: bool,
        /// With a FILE: describe that WGSL kernel (its entry point named after the file, or
        /// --entry). With an example's name: keep only its WGSL, as a REST client would send it
        /// (a daemon makes its own GPU's form from it).
        #[arg(long, value_name = "FILE", num_args = 0..=1)]
        wgsl: Option<Option<PathBuf>>,
        /// An array the kernel shares whole with every tile (as `// xcd: whole` in the WGSL).
        #[arg(long, value_name = "ARRAY", requires = "wgsl")]
        whole: Vec<String>,
        /// A read_write array the kernel only writes (as `// xcd: out`).
        #[arg(long, value_name = "ARRAY", requires = "wgsl")]
        out: Vec<String>,
        /// A read_write array the kernel reads and writes (as `// xcd: inout`).
        #[arg(long, value_name = "ARRAY", requires = "wgsl")]
        inout: Vec<String>,
        /// The kernel's entry point, when not named after the file.
        #[arg(long, requires = "wgsl")]
        entry: Option<String>,
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
        Command::Block { name, id, wgsl, whole, out, inout, entry } => match (name, wgsl) {
            (None, Some(Some(file))) => {
                let marks = xcd_forms::Marks { whole, out, inout };
                block_of_file(&file, entry.as_deref(), &marks, id)
            }
            (Some(name), Some(Some(_))) => {
                eprintln!("xcrun: give an example block's name or --wgsl FILE, not both ({name} and a file)");
                ExitCode::from(64)
            }
            (Some(name), wgsl) => block(&name, id, wgsl.is_some()),
            (None, _) => {
                eprintln!("xcrun: name an example block (escape, saxpy, poly) or give --wgsl FILE");
                ExitCode::from(64)
            }
        },
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
fn report(steps: Vec<xcd_runtime::remote::check::CheckStep>) -> ExitCode {
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
            let pins: Vec<_> = values.iter().filter(|(k, _)| k.starts_with(remote::PIN_PREFIX)).collect();
            if pins.is_empty() {
                println!("no pins in {}", home.path().display());
            }
            for (key, fingerprint) in pins {
                println!("{key} = {fingerprint}");
            }
        }),
        Some(PinAction::Remove { daemon }) => {
            let key = if daemon.starts_with(remote::PIN_PREFIX) { daemon } else { remote::pin_key(&daemon) };
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

/// Prints the description of the kernel in `file`, derived from its WGSL.
fn block_of_file(file: &Path, entry: Option<&str>, marks: &xcd_forms::Marks, id_only: bool) -> ExitCode {
    let wgsl = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("xcrun: cannot read {}: {e}", file.display());
            return ExitCode::from(66);
        }
    };
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("block");
    let entry = entry.unwrap_or(stem);
    match xcd_forms::describe(&wgsl, stem, entry, marks) {
        Ok((desc, _)) => {
            if !id_only {
                // Beside the JSON, where `> file.json` leaves it in view: the id a REST client
                // puts in the block's URLs.
                eprintln!("xcrun: block {} has id {}", desc.name, desc.id());
            }
            print_block(&desc, id_only)
        }
        Err(e) => {
            eprintln!("xcrun: {}: {e}", file.display());
            ExitCode::from(65)
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
    print_block(&desc, id_only)
}

fn print_block(desc: &xcd_wire::BlockDesc, id_only: bool) -> ExitCode {
    if id_only {
        println!("{}", desc.id());
        return ExitCode::SUCCESS;
    }
    match serde_json::to_string(desc) {
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
            xcd_runtime::roster::inventory(&settings.remote, &found, &home, settings.secret.as_deref());
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
