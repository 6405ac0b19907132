//! escape: the tutorial's program. Iterates each pixel of an image until it escapes, on every
//! worker the environment allows (`XC_PAR_WORKERS`, `XC_PAR_REPORT`, …), and prints the total
//! of all iteration counts as its last line. `--png FILE` writes the image.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use xcd_runtime::{Par, RunOptions};

/// Iterate each pixel of a large image until it escapes, across this machine's devices.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Image width in pixels.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=65536))]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=65536))]
    height: u32,
    /// Iteration cap per pixel.
    #[arg(long, default_value_t = 2000)]
    max_iter: u32,
    /// Write the image as a PNG here.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Run the block this many times (a long-running program; each run gives the same total).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(total) => {
            println!("{total}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("escape: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<u64, String> {
    let items = u64::from(cli.width) * u64::from(cli.height);
    let n = u32::try_from(items)
        .map_err(|_| format!("{}×{} pixels is more than one block can hold (2^32 - 1)", cli.width, cli.height))?;
    let par = Par::from_env().map_err(|e| e.to_string())?;
    let mut counts = vec![0u32; n as usize];

    let bar = ProgressBar::with_draw_target(Some(items), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} escape {bar:40} {percent:>3}% {elapsed_precise} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let progress = |done: u64| bar.set_position(done);
    let options = RunOptions { tile_items: None, progress: Some(&progress) };
    for _ in 0..cli.runs {
        xcd_kernels::escape::run_with(&par, n, cli.width, cli.height, cli.max_iter, &mut counts, &options)
            .map_err(|e| e.to_string())?;
    }
    bar.finish_and_clear();

    if let Some(path) = &cli.png {
        write_png(path, cli, &counts)?;
    }
    Ok(counts.iter().map(|&c| u64::from(c)).sum())
}

/// Pixels that never escape are black; the rest shade from deep blue to white by log count.
fn write_png(path: &PathBuf, cli: &Cli, counts: &[u32]) -> Result<(), String> {
    let scale = f64::from(cli.max_iter.max(2)).ln();
    let image = image::RgbImage::from_fn(cli.width, cli.height, |x, y| {
        let n = counts[(y * cli.width + x) as usize];
        if n >= cli.max_iter {
            return image::Rgb([0, 0, 0]);
        }
        let t = (f64::from(n.max(1)).ln() / scale).clamp(0.0, 1.0);
        let channel = |lo: f64, hi: f64| (255.0 * (lo + (hi - lo) * t)) as u8;
        image::Rgb([channel(0.02, 1.0), channel(0.05, 0.95), channel(0.25, 1.0)])
    });
    image.save(path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
