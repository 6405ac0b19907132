//! options: a real kernel written only as WGSL (`wgsl/options.wgsl`). Prices European calls and
//! puts by Black-Scholes (`exp`, `log`, `sqrt` and a normal distribution function built from
//! `exp`) across this machine's devices and the daemons in XC_PAR_REMOTE, and prints the mean
//! prices and a checksum of every price's bits: the same on every worker, local or remote,
//! because the math library's functions are correctly rounded.

use std::process::ExitCode;

use clap::Parser;
use xcd_runtime::Par;

xcd_runtime::include_blocks!();

/// Price European options by Black-Scholes across this machine's devices and the daemons in
/// XC_PAR_REMOTE.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// How many options (made up, the same ones on every run).
    #[arg(long, default_value_t = 1_000_000)]
    options: u32,
    /// The riskless interest rate, per year (0.02 is 2%), in [-1, 1].
    #[arg(long, default_value_t = 0.02, allow_negative_numbers = true)]
    rate: f32,
    /// The volatility of the underlying, per square root of a year, in [0.0001, 10].
    #[arg(long, default_value_t = 0.30)]
    volatility: f32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(prices) => {
            let n = prices.call.len() as f64;
            let mean = |v: &[f32]| v.iter().map(|&p| f64::from(p)).sum::<f64>() / n;
            println!("mean call {:.6}, mean put {:.6}", mean(&prices.call), mean(&prices.put));
            println!("{:016x}", prices.checksum());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("options: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The options to price: spot, strike and years to expiry, each from its own range.
struct Book {
    spot: Vec<f32>,
    strike: Vec<f32>,
    years: Vec<f32>,
}

/// `n` made-up options, the same on every run: spot in [5, 30), strike in [1, 100), expiry in
/// [0.25, 10) years.
fn book(n: u32) -> Book {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = |low: f32, high: f32| {
        // xorshift64*: 24 random bits, so every value is an exact f32 fraction.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let bits = (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as u32;
        low + (high - low) * (bits as f32 / (1u32 << 24) as f32)
    };
    let mut book = Book { spot: Vec::new(), strike: Vec::new(), years: Vec::new() };
    for _ in 0..n {
        book.spot.push(uniform(5.0, 30.0));
        book.strike.push(uniform(1.0, 100.0));
        book.years.push(uniform(0.25, 10.0));
    }
    book
}

/// Each option's call and put price.
struct Prices {
    call: Vec<f32>,
    put: Vec<f32>,
}

impl Prices {
    /// FNV-1a over every price's bits: any difference in any price changes it.
    fn checksum(&self) -> u64 {
        self.call
            .iter()
            .chain(&self.put)
            .flat_map(|v| v.to_bits().to_le_bytes())
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
    }
}

fn run(cli: &Cli) -> Result<Prices, String> {
    if cli.options == 0 {
        return Err("there is nothing to price: give --options above 0".into());
    }
    // Within these, every value the kernel meets is a normal f32 for every option of the book:
    // a tiny volatility squares to a subnormal, and a large rate over 10 years discounts to one
    // (or overflows), which a device that flushes subnormals (llvmpipe) cannot compute.
    if !(1e-4..=10.0).contains(&cli.volatility) {
        return Err(format!("--volatility {} is outside [0.0001, 10]: give one such as 0.3", cli.volatility));
    }
    if !(-1.0..=1.0).contains(&cli.rate) {
        return Err(format!("--rate {} is outside [-1, 1] (a rate per year): give one such as 0.02", cli.rate));
    }
    let par = Par::from_env().map_err(|e| e.to_string())?;
    let book = book(cli.options);
    let n = cli.options as usize;
    let mut prices = Prices { call: vec![0.0; n], put: vec![0.0; n] };
    options::run(
        &par,
        cli.options,
        cli.rate,
        cli.volatility,
        &book.spot,
        &book.strike,
        &book.years,
        &mut prices.call,
        &mut prices.put,
    )
    .map_err(|e| e.to_string())?;
    Ok(prices)
}
