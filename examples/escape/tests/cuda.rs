//! escape on CUDA, against the stand-in driver library (`fakecuda/`, an R535 driver whose two
//! H200s run kernels through the PTX interpreter): on the program's own GPUs (with memory pools,
//! and without), and through a daemon whose only devices they are. Every total is the CPU's: the CUDA path (contexts made
//! with `cuCtxCreate_v2`, the PTX xcd writes, launches, copies) runs end to end where no NVIDIA
//! GPU is. `scripts/gpu-check` runs the same on a real one.
#![cfg(target_os = "linux")]

use std::process::Command;

use xcd_e2e::{Daemon, FakeCuda};

const SECRET: &str = "correct-horse-battery";
/// Small: the interpreter runs each GPU thread on the CPU.
const SIZE: [&str; 6] = ["--width", "192", "--height", "128", "--max-iter", "60"];

/// escape with `env`, the stand-in on its library path; its total and what it said.
fn escape(fake: &FakeCuda, home: &std::path::Path, env: &[(&str, &str)]) -> (Option<u64>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_escape"));
    command.args(SIZE).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command
        .env_remove("XC_PAR_SECRET")
        .env_remove("XC_PAR_REMOTE")
        .env_remove("XC_PAR_WORKERS")
        .envs(env.iter().copied());
    let out = fake.apply(&mut command).output().expect("escape runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "escape with {env:?} failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok()), stderr)
}

#[test]
fn escape_on_an_r535_driver_locally_and_through_a_daemon_gives_the_cpus_total() {
    let fake = FakeCuda::install();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, _) = escape(&fake, home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    let want = cpu.expect("the CPU total");

    let (local, stderr) = escape(&fake, home.path(), &[("XC_PAR_WORKERS", "gpu")]);
    assert_eq!(local, Some(want), "{stderr}");
    for slot in ["1b", "43"] {
        assert!(stderr.contains(&format!("par: gpu worker gpu:cuda:NVIDIA H200 @0000:{slot}:00.0")), "{stderr}");
    }
    // GPUs without memory pools: cudarc makes and frees buffers with cuMemAlloc_v2 and cuMemFree_v2.
    let (no_pools, stderr) = escape(&fake, home.path(), &[("XC_PAR_WORKERS", "gpu"), ("FAKE_CUDA_NO_POOLS", "1")]);
    assert_eq!(no_pools, Some(want), "{stderr}");

    let daemon = Daemon::beside(env!("CARGO_BIN_EXE_escape"))
        .secret(SECRET)
        .env("LD_LIBRARY_PATH", &fake.dir().display().to_string())
        .args(&["-mdns", "false"])
        .start();
    let serving = daemon.stdout.join("\n");
    assert!(
        serving.contains("serving cuda:NVIDIA H200 @0000:1b:00.0, cuda:NVIDIA H200 @0000:43:00.0 on port"),
        "{serving}"
    );
    let remote = format!("localhost:{}", daemon.port);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let (through, stderr) = escape(&fake, home.path(), &env);
    assert_eq!(through, Some(want), "{stderr}\n{}", daemon.stderr());
    assert!(stderr.contains("remote:localhost:cuda:NVIDIA H200 @0000:43:00.0"), "{stderr}");
    let status = daemon.terminate(std::time::Duration::from_secs(30));
    assert!(status.success(), "the daemon ends cleanly: {status:?}");
}
