//! blur, a block written only as WGSL, gives one checksum on every worker: the generated CPU
//! form, the local GPU (llvmpipe here), both at once, the PTX form in the interpreter, and a
//! daemon over TLS and HTTP/2.

use std::path::Path;
use std::process::Command;

use xcd_e2e::Daemon;
use xcd_runtime::{Par, Settings, WorkerChoice};

xcd_runtime::include_blocks!();

const SIZE: [&str; 6] = ["--width", "300", "--height", "200", "--passes", "3"];
const SECRET: &str = "blur-secret-words";

/// Runs the blur program with `env`; its checksum and its report.
fn blur_program(home: &Path, env: &[(&str, &str)]) -> (String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_blur"));
    command.args(SIZE).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command.env_remove("XC_PAR_SECRET").env_remove("XC_PAR_REMOTE").env_remove("XC_PAR_WORKERS");
    command.envs(env.iter().copied());
    let out = command.output().expect("blur starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "blur with {env:?} failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).trim().to_owned(), stderr)
}

fn has_gpu(home: &Path) -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_blur"))
        .args(["--width", "8", "--height", "8", "--passes", "1"])
        .env("XCC_HOME", home)
        .env("XC_PAR_WORKERS", "gpu")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("blur starts");
    out.status.success()
}

#[test]
fn every_local_worker_gives_one_checksum() {
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, report) = blur_program(home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    assert_eq!(cpu.len(), 16, "the checksum is 16 hex digits: {cpu:?}");
    assert!(report.contains("across cpu ("), "{report}");
    assert!(report.contains("examples/blur/src/main.rs:"), "the report names the typed call's caller: {report}");
    if !has_gpu(home.path()) {
        assert!(std::env::var_os("CI").is_none(), "CI installs llvmpipe, so a GPU worker must exist");
        eprintln!("skipped the GPU runs: no GPU worker here");
        return;
    }
    let (gpu, report) = blur_program(home.path(), &[("XC_PAR_WORKERS", "gpu")]);
    assert!(report.contains("across gpu:"), "{report}");
    assert_eq!(gpu, cpu, "the GPU and the generated CPU form differ");
    let (both, _) = blur_program(home.path(), &[("XC_PAR_WORKERS", "cpu,gpu")]);
    assert_eq!(both, cpu, "CPU+GPU and CPU differ");
}

#[test]
fn a_daemon_gives_the_same_checksum() {
    let daemon = Daemon::beside(env!("CARGO_BIN_EXE_blur")).secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, _) = blur_program(home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    let remote = format!("localhost:{}", daemon.port);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let (got, report) = blur_program(home.path(), &env);
    assert!(report.contains("across remote:localhost:"), "every tile ran on the daemon: {report}");
    assert_eq!(got, cpu, "the daemon and the generated CPU form differ: {report}");
}

#[test]
fn the_ptx_form_in_the_interpreter_gives_the_cpu_forms_bits() {
    const SIM: &str = "gpu:cuda:xcd-ptxsim";
    let device = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    let inventory = xcd_engine::Inventory { devices: vec![device], notes: Vec::new() };
    let settings = Settings { workers: vec![WorkerChoice::named(SIM).expect("a worker name")], ..Settings::default() };
    let sim = Par::with_inventory(settings, inventory).expect("the interpreter's worker");
    let cpu = Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker");
    let (w, h) = (23u32, 11u32);
    let image: Vec<f32> = (0..w * h).map(|i| (i % 13) as f32 * 0.37 - 1.0).collect();
    let mut want = image.iter().map(|v| v * 0.5).collect::<Vec<_>>();
    let mut got = want.clone();
    blur::run(&cpu, w * h, w, h, 0.3, &image, &mut want).expect("the CPU form runs");
    blur::run(&sim, w * h, w, h, 0.3, &image, &mut got).expect("the PTX form runs");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn the_typed_call_checks_lengths_against_n() {
    let cpu = Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker");
    let image = vec![0.0f32; 12];
    let mut out = vec![0.0f32; 11];
    let e = blur::run(&cpu, 12, 4, 3, 0.5, &image, &mut out).expect_err("out is one short");
    assert_eq!(e.to_string(), "block blur: array out has 11 elements; a run of 12 items needs 12");
}
