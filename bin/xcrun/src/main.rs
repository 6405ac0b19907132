//! xcrun: looks at this machine's devices and prints example blocks for a daemon. Only wires the
//! command line to the library crates, where all work happens.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
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
    /// List this machine's devices: backend, name, memory; and why others are missing.
    Devices {
        /// Print the inventory as JSON (the same shape a daemon serves).
        #[arg(long)]
        json: bool,
    },
    /// Print an example block's description as JSON, every form included: the body of a daemon's
    /// `POST /v1/blocks` (e.g. `xcrun block escape > escape.json`).
    Block {
        /// escape, saxpy or poly.
        name: String,
        /// Print only the block's id (its content address).
        #[arg(long)]
        id: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Devices { json } => devices(json),
        Command::Block { name, id } => block(&name, id),
    }
}

fn block(name: &str, id_only: bool) -> ExitCode {
    let Some(block) = xcd_kernels::all().into_iter().find(|b| b.desc.name == name) else {
        let names: Vec<String> = xcd_kernels::all().iter().map(|b| b.desc.name.clone()).collect();
        eprintln!("xcrun: no example block named {name:?}; there are {}", names.join(", "));
        return ExitCode::from(64);
    };
    if id_only {
        println!("{}", block.desc.id());
        return ExitCode::SUCCESS;
    }
    match serde_json::to_string(&*block.desc) {
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
