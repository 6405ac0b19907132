//! options, a real kernel written only as WGSL (Black-Scholes with the math library's `exp` and
//! `log`), gives one checksum on every worker: the generated CPU form, the local GPU (llvmpipe
//! here), both at once, a daemon over TLS and HTTP/2, and the PTX form in the interpreter; and
//! its prices are Black-Scholes's.

use std::path::Path;
use std::process::Command;

use xcd_e2e::Daemon;
use xcd_runtime::{Par, Settings, WorkerChoice};

xcd_runtime::include_blocks!();

const OPTIONS: [&str; 2] = ["--options", "20000"];
const SECRET: &str = "options-secret-words";

/// Runs the options program with `env`; its output lines (the means, then the checksum) and
/// its report.
fn options_program(home: &Path, args: &[&str], env: &[(&str, &str)]) -> (Vec<String>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_options"));
    command.args(args).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command.env_remove("XC_PAR_SECRET").env_remove("XC_PAR_REMOTE").env_remove("XC_PAR_WORKERS");
    command.envs(env.iter().copied());
    let out = command.output().expect("options starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "options with {env:?} failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect(), stderr)
}

/// Whether this machine has a Vulkan device (llvmpipe at least, where Mesa is installed): asked
/// of the engine, so that a GPU run that fails is a failure, not a skip.
fn has_gpu() -> bool {
    xcd_engine::discover().devices.iter().any(|d| d.info().id.starts_with("vulkan:"))
}

#[test]
fn every_local_worker_gives_one_checksum() {
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, report) = options_program(home.path(), &OPTIONS, &[("XC_PAR_WORKERS", "cpu")]);
    assert_eq!(cpu.len(), 2, "the means, then the checksum: {cpu:?}");
    assert!(cpu[0].starts_with("mean call "), "{cpu:?}");
    assert_eq!(cpu[1].len(), 16, "the checksum is 16 hex digits: {cpu:?}");
    assert!(report.contains("across cpu ("), "{report}");
    if !has_gpu() {
        assert!(std::env::var_os("CI").is_none(), "CI installs llvmpipe, so a GPU worker must exist");
        eprintln!("skipped the GPU runs: no GPU worker here");
        return;
    }
    let (gpu, report) = options_program(home.path(), &OPTIONS, &[("XC_PAR_WORKERS", "gpu")]);
    assert!(report.contains("across gpu:"), "{report}");
    assert_eq!(gpu, cpu, "the GPU and the generated CPU form differ");
    let (both, _) = options_program(home.path(), &OPTIONS, &[("XC_PAR_WORKERS", "cpu,gpu")]);
    assert_eq!(both, cpu, "CPU+GPU and CPU differ");
}

#[test]
fn a_daemon_gives_the_same_checksum() {
    let daemon = Daemon::beside(env!("CARGO_BIN_EXE_options")).secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, _) = options_program(home.path(), &OPTIONS, &[("XC_PAR_WORKERS", "cpu")]);
    let remote = format!("localhost:{}", daemon.port);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let (got, report) = options_program(home.path(), &OPTIONS, &env);
    assert!(report.contains("across remote:localhost:"), "every tile ran on the daemon: {report}");
    assert_eq!(got, cpu, "the daemon and the generated CPU form differ: {report}");
}

/// A few options across the ranges that matter: deep in and out of the money, short and long.
fn book() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut spot = Vec::new();
    let mut strike = Vec::new();
    let mut years = Vec::new();
    for (i, s) in [5.0f32, 12.5, 30.0].into_iter().enumerate() {
        for k in [1.0f32, 10.0, 12.5, 31.0, 100.0] {
            for t in [0.25f32, 1.0, 3.5, 10.0] {
                spot.push(s + i as f32 * 0.125);
                strike.push(k);
                years.push(t);
            }
        }
    }
    (spot, strike, years)
}

/// Black-Scholes in f64, with the kernel's normal distribution function.
fn black_scholes(s: f64, k: f64, t: f64, rate: f64, vol: f64) -> (f64, f64) {
    let cdf = |d: f64| {
        let d = d.clamp(-10.0, 10.0);
        let k = 1.0 / (1.0 + 0.2316419 * d.abs());
        let poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))));
        let tail = 0.3989422804014327 * (-0.5 * d * d).exp() * poly;
        if d < 0.0 { tail } else { 1.0 - tail }
    };
    let v = vol * t.sqrt();
    let d1 = ((s / k).ln() + (rate + 0.5 * vol * vol) * t) / v;
    let d2 = d1 - v;
    let discounted = k * (-rate * t).exp();
    (s * cdf(d1) - discounted * cdf(d2), discounted * cdf(-d2) - s * cdf(-d1))
}

#[test]
fn the_prices_are_black_scholes_and_keep_put_call_parity() {
    let cpu = Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker");
    let (spot, strike, years) = book();
    let n = spot.len();
    let (mut call, mut put) = (vec![0f32; n], vec![0f32; n]);
    options::run(&cpu, n as u32, 0.02, 0.3, &spot, &strike, &years, &mut call, &mut put).expect("the CPU form runs");
    for i in 0..n {
        let (s, k, t) = (f64::from(spot[i]), f64::from(strike[i]), f64::from(years[i]));
        let (want_call, want_put) = black_scholes(s, k, t, 0.02, 0.3);
        // f32 arithmetic on prices up to 100: within a few units in the last place of s + k (a
        // model of the kernel in f32 with correctly rounded exp and log is off by 8.5e-8 (s + k)
        // at most on these options).
        let close = |got: f32, want: f64| (f64::from(got) - want).abs() <= 5e-7 * (s + k);
        assert!(close(call[i], want_call), "call at S={s} K={k} T={t}: {} against {want_call}", call[i]);
        assert!(close(put[i], want_put), "put at S={s} K={k} T={t}: {} against {want_put}", put[i]);
        let parity = s - k * (-0.02 * t).exp();
        assert!(close(call[i] - put[i], parity), "C - P at S={s} K={k} T={t}: {} against {parity}", call[i] - put[i]);
    }
}

#[test]
fn the_ptx_form_in_the_interpreter_gives_the_cpu_forms_bits() {
    const SIM: &str = "gpu:cuda:xcd-ptxsim";
    let device = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    let inventory = xcd_engine::Inventory { devices: vec![device], notes: Vec::new() };
    let settings = Settings { workers: vec![WorkerChoice::named(SIM).expect("a worker name")], ..Settings::default() };
    let sim = Par::with_inventory(settings, inventory).expect("the interpreter's worker");
    let cpu = Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker");
    let (spot, strike, years) = book();
    let n = spot.len();
    let (mut want_call, mut want_put) = (vec![0f32; n], vec![0f32; n]);
    let (mut call, mut put) = (vec![0f32; n], vec![0f32; n]);
    options::run(&cpu, n as u32, 0.02, 0.3, &spot, &strike, &years, &mut want_call, &mut want_put)
        .expect("the CPU form runs");
    options::run(&sim, n as u32, 0.02, 0.3, &spot, &strike, &years, &mut call, &mut put).expect("the PTX form runs");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&call), bits(&want_call));
    assert_eq!(bits(&put), bits(&want_put));
}

#[test]
fn bad_arguments_are_refused_with_what_to_give() {
    let home = tempfile::tempdir().expect("XCC_HOME");
    for (args, says) in [
        (["--options", "0"], "give --options above 0"),
        (["--volatility", "0"], "outside [0.0001, 10]"),
        (["--volatility", "1e-30"], "outside [0.0001, 10]"),
        (["--volatility", "NaN"], "outside [0.0001, 10]"),
        (["--rate", "NaN"], "outside [-1, 1]"),
        (["--rate", "-9"], "outside [-1, 1]"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_options"))
            .args(args)
            .env("XCC_HOME", home.path())
            .env("XC_PAR_WORKERS", "cpu")
            .output()
            .expect("options starts");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // A negative rate (some currencies have had one) is a rate, not a flag.
    let out = Command::new(env!("CARGO_BIN_EXE_options"))
        .args(["--options", "100", "--rate", "-0.005"])
        .env("XCC_HOME", home.path())
        .env("XC_PAR_WORKERS", "cpu")
        .output()
        .expect("options starts");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
