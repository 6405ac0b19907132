//! Split efficiency and the cost of measuring a placement, with a real daemon on loopback.
//!
//! Runs the escape block in this process on each kind of worker alone (the CPU, the local GPU,
//! a daemon's GPU), on every set of them, and with placement measuring (a fresh settings folder
//! each time), and prints, as ratios against baselines measured in the same run:
//! - split efficiency: the rate with workers together against the sum of their solo rates,
//!   first with everything sharing this machine's cores, then with two workers that do not (this
//!   process pinned to CPU 0 with the CPU worker, a daemon pinned to CPU 1 with one llvmpipe
//!   thread; `taskset`), which is the scheduler's own efficiency;
//! - the measuring first run against the best fixed set, and a remembered run against it.
//!
//! `cargo build --release -p xcd && cargo bench -p escape --bench placement` (figures in
//! docs/performance.md). Under `cargo test` it runs once at a small size, as a smoke test.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use xcd_e2e::Daemon;
use xcd_runtime::{Args, Par, ParMode, Settings, WorkerChoice};

const SECRET: &str = "bench-secret";

struct Size {
    width: u32,
    height: u32,
    iters: u32,
    reps: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let size = if full {
        Size { width: 4096, height: 4096, iters: 1000, reps: 3 }
    } else {
        Size { width: 256, height: 256, iters: 100, reps: 1 }
    };
    // The daemon beside this benchmark's profile folder: target/<profile>/xcd.
    let exe = std::env::current_exe().expect("the bench's path");
    let xcd: PathBuf = exe.parent().and_then(|deps| deps.parent()).map(|p| p.join("xcd")).unwrap_or_default();
    assert!(xcd.exists(), "{} is not built: run `cargo build --release -p xcd` first", xcd.display());
    let daemon = Daemon::build(&xcd).secret(SECRET).start();
    let remote = vec![format!("localhost:{}", daemon.port)];
    let home = tempfile::tempdir().expect("XCC_HOME");
    let settings = |workers: Vec<WorkerChoice>| Settings {
        workers,
        mode: ParMode::Auto,
        remote: remote.clone(),
        secret: Some(SECRET.to_owned()),
        home: Some(home.path().display().to_string()),
        ..Settings::default()
    };
    let n = size.width * size.height;
    let block = xcd_kernels::escape();
    let mut counts = vec![0u32; n as usize];
    let mut time = |par: &Par| -> Duration {
        let mut best = Duration::MAX;
        for _ in 0..size.reps {
            let args = Args::new().u32(size.width).u32(size.height).u32(size.iters).output(&mut counts);
            let started = Instant::now();
            par.run(&block, n, args).expect("the run completes");
            best = best.min(started.elapsed());
        }
        best
    };
    let warm = |par: &Par| {
        let mut small = vec![0u32; 64 * 64];
        par.run(&block, 64 * 64, Args::new().u32(64).u32(64).u32(size.iters).output(&mut small)).expect("warm-up");
    };

    println!("escape {}x{}x{}, best of {} runs each", size.width, size.height, size.iters, size.reps);
    let sets: [(&str, Vec<WorkerChoice>); 7] = [
        ("cpu", vec![WorkerChoice::Cpu]),
        ("gpu", vec![WorkerChoice::Gpu]),
        ("remote", vec![WorkerChoice::Remote]),
        ("cpu+gpu", vec![WorkerChoice::Cpu, WorkerChoice::Gpu]),
        ("cpu+remote", vec![WorkerChoice::Cpu, WorkerChoice::Remote]),
        ("gpu+remote", vec![WorkerChoice::Gpu, WorkerChoice::Remote]),
        ("cpu+gpu+remote", vec![WorkerChoice::Cpu, WorkerChoice::Gpu, WorkerChoice::Remote]),
    ];
    let mut results = Vec::new();
    for (name, workers) in sets {
        let par = Par::new(settings(workers)).expect("workers");
        warm(&par);
        let t = time(&par);
        println!(
            "  fixed {name:<15} {:>9.3} s  {:>7.2} M items/s",
            t.as_secs_f64(),
            f64::from(n) / t.as_secs_f64() / 1e6
        );
        results.push((name, t));
    }
    let rate = |t: Duration| f64::from(n) / t.as_secs_f64();
    let solo: f64 = results[..3].iter().map(|(_, t)| rate(*t)).sum();
    let all = results[6].1;
    println!("split efficiency (all together vs the sum of solo rates): {:.2}", rate(all) / solo);
    let (best_name, best) = results.iter().min_by_key(|(_, t)| *t).copied().expect("seven sets");
    println!("best fixed set: {best_name} ({:.3} s)", best.as_secs_f64());

    // The measuring run: a fresh settings folder each time, the block warmed at another size.
    let mut measuring = Duration::MAX;
    let mut remembered = Duration::MAX;
    for _ in 0..size.reps {
        let fresh = tempfile::tempdir().expect("XCC_HOME");
        let par = Par::new(Settings { home: Some(fresh.path().display().to_string()), ..settings(Vec::new()) })
            .expect("workers");
        warm(&par);
        let mut counts = vec![0u32; n as usize];
        let args = Args::new().u32(size.width).u32(size.height).u32(size.iters).output(&mut counts);
        let started = Instant::now();
        let report = par.run(&block, n, args).expect("the measuring run");
        measuring = measuring.min(started.elapsed());
        let args = Args::new().u32(size.width).u32(size.height).u32(size.iters).output(&mut counts);
        let started = Instant::now();
        par.run(&block, n, args).expect("the remembered run");
        remembered = remembered.min(started.elapsed());
        if let Some(line) = report.lines().iter().find(|l| l.starts_with("par: placement")) {
            println!("  {line}");
        }
    }
    println!(
        "measuring first run: {:.3} s = {:.2}x the best fixed set; remembered run: {:.3} s = {:.2}x",
        measuring.as_secs_f64(),
        measuring.as_secs_f64() / best.as_secs_f64(),
        remembered.as_secs_f64(),
        remembered.as_secs_f64() / best.as_secs_f64()
    );
    drop(daemon);
    independent(&xcd, &size, &block);
}

/// Split efficiency of two workers on separate cores: the CPU worker here on CPU 0, a daemon
/// with one llvmpipe thread on CPU 1.
fn independent(xcd: &std::path::Path, size: &Size, block: &xcd_runtime::Block) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        println!("independent workers: skipped (one core)");
        return;
    }
    let daemon = Daemon::build(xcd).secret(SECRET).cpus("1").env("LP_NUM_THREADS", "1").start();
    let pinned = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", "0", &std::process::id().to_string()])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(pinned, "taskset could not pin this process to CPU 0");
    let home = tempfile::tempdir().expect("XCC_HOME");
    let settings = |workers: Vec<WorkerChoice>| Settings {
        workers,
        remote: vec![format!("localhost:{}", daemon.port)],
        secret: Some(SECRET.to_owned()),
        home: Some(home.path().display().to_string()),
        ..Settings::default()
    };
    let n = size.width * size.height;
    let mut counts = vec![0u32; n as usize];
    let mut time = |workers: Vec<WorkerChoice>| -> f64 {
        let par = Par::new(settings(workers)).expect("workers");
        let mut best = f64::MAX;
        for _ in 0..size.reps {
            let args = Args::new().u32(size.width).u32(size.height).u32(size.iters).output(&mut counts);
            let started = Instant::now();
            par.run(block, n, args).expect("the run completes");
            best = best.min(started.elapsed().as_secs_f64());
        }
        best
    };
    let cpu = time(vec![WorkerChoice::Cpu]);
    let remote = time(vec![WorkerChoice::Remote]);
    let both = time(vec![WorkerChoice::Cpu, WorkerChoice::Remote]);
    let rate = |t: f64| f64::from(n) / t / 1e6;
    println!("independent workers (this process on CPU 0, the daemon on CPU 1):");
    println!("  cpu {cpu:.3} s ({:.2} M items/s), remote {remote:.3} s ({:.2} M items/s)", rate(cpu), rate(remote));
    println!(
        "  cpu+remote {both:.3} s ({:.2} M items/s): split efficiency {:.2}",
        rate(both),
        rate(both) / (rate(cpu) + rate(remote))
    );
}
