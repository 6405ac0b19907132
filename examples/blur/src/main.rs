//! blur: a block written only as WGSL (`wgsl/blur.wgsl`), run through its typed call. Blurs a
//! made-up image a few passes, each pass reading the last one's image whole, and prints a
//! checksum of the result's bits: the same on every worker, local or remote.

use std::process::ExitCode;

use clap::Parser;
use xcd_runtime::Par;

xcd_runtime::include_blocks!();

/// Blur a made-up image across this machine's devices and the daemons in XC_PAR_REMOTE.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// Image width in pixels.
    #[arg(long, default_value_t = 1024)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 1024)]
    height: u32,
    /// How many passes.
    #[arg(long, default_value_t = 4)]
    passes: u32,
    /// How much of each pass's blur goes into the picture (0 to 1).
    #[arg(long, default_value_t = 0.75)]
    amount: f32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(sum) => {
            println!("{sum:016x}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("blur: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The made-up image: stripes and a checkerboard, so a blur changes every pixel's neighbours.
fn picture(width: u32, height: u32) -> Vec<f32> {
    (0..height)
        .flat_map(|y| (0..width).map(move |x| ((x * 7 + y * 13) % 32) as f32 / 31.0 + ((x / 8 + y / 8) % 2) as f32))
        .collect()
}

fn run(cli: &Cli) -> Result<u64, String> {
    let n = u32::try_from(u64::from(cli.width) * u64::from(cli.height))
        .map_err(|_| format!("{}×{} pixels is more than one block can hold (2^32 - 1)", cli.width, cli.height))?;
    if n == 0 {
        return Err("the image has no pixels: give --width and --height above 0".into());
    }
    let par = Par::from_env().map_err(|e| e.to_string())?;
    let mut image = picture(cli.width, cli.height);
    let mut out = image.clone();
    for _ in 0..cli.passes {
        blur::run(&par, n, cli.width, cli.height, cli.amount, &image, &mut out).map_err(|e| e.to_string())?;
        image.copy_from_slice(&out);
    }
    // FNV-1a over the bits: any difference in any pixel changes it.
    Ok(out
        .iter()
        .flat_map(|v| v.to_bits().to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)))
}
