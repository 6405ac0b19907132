//! CUDA discovery against stand-ins for NVIDIA's driver library, found by `xcrun devices` through
//! `LD_LIBRARY_PATH` as the real one would be. The stand-in driver (`fakecuda/`, built by cargo)
//! plays an R535 driver (CUDA 12.2, no `cuCtxCreate_v4`) whose two identical H200s are served,
//! and, as `FAKE_CUDA*` say, the toolkit's stub, Maxwell cards too old for xcd's PTX, a driver
//! too old for xcd, GPUs in the Prohibited compute mode, and a driver whose answer makes cudarc
//! panic. `tests/fake/libcuda.c`, built here with the C compiler, is a library that lacks entry
//! points xcd calls. In every case `xcrun devices` lists what it can and says why the rest is
//! missing, and never panics. This machine has no NVIDIA GPU; scripts/gpu-check checks the real
//! driver where there is one.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Command, Output};

use xcd_e2e::FakeCuda;

/// Builds `tests/fake/libcuda.c` as `libcuda.so` in `dir`.
fn build_foreign(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake/libcuda.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libcuda.so"))
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("{cc} (the C compiler that builds Rust's C dependencies) does not start: {e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `xcrun devices ARGS` with the driver library in `dir`, and `FAKE_CUDA*` as `env` says.
fn devices_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xcrun"));
    command.arg("devices").args(args).env("LD_LIBRARY_PATH", dir).env("XDG_RUNTIME_DIR", std::env::temp_dir());
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("xcrun starts");
    assert!(out.status.success(), "xcrun devices failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `xcrun devices`' standard output and error with the stand-in driver set as `env` says.
fn devices(fake: &FakeCuda, env: &[(&str, &str)]) -> (String, String) {
    let out = devices_in(fake.dir(), &[], env);
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_r535_driver_serves_its_gpus_named_apart() {
    let fake = FakeCuda::install();
    let (stdout, stderr) = devices(&fake, &[]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("cuda ")).collect();
    assert_eq!(rows.len(), 2, "two H200s served through CUDA: {stdout}\n{stderr}");
    assert!(rows.iter().all(|r| r.contains("NVIDIA H200") && r.contains("141.0 GiB")), "{stdout}");
    assert!(!stdout.contains("llvmpipe"), "the software device is not served beside a GPU: {stdout}");
    let json = devices_in(fake.dir(), &["--json"], &[]);
    let inventory: Vec<xcd_wire::DeviceInfo> = serde_json::from_slice(&json.stdout).expect("a JSON inventory");
    let ids: Vec<&str> =
        inventory.iter().filter(|d| d.backend == xcd_wire::BackendKind::Cuda).map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["cuda:NVIDIA H200 @0000:1b:00.0", "cuda:NVIDIA H200 @0000:43:00.0"]);
}

#[test]
fn drivers_that_serve_nothing_say_why() {
    let fake = FakeCuda::install();
    let (_, stub) = devices(&fake, &[("FAKE_CUDA", "stub")]);
    let folder = fake.dir().display().to_string();
    assert!(
        stub.contains(&format!(
            "cuda: the libcuda.so found first ({folder}/libcuda.so) is the CUDA toolkit's stub, which runs nothing: take {folder} off LD_LIBRARY_PATH"
        )),
        "{stub}"
    );
    let (_, old) = devices(&fake, &[("FAKE_CUDA", "old")]);
    for ordinal in 0..2 {
        assert!(
            old.contains(&format!(
                "cuda: device {ordinal} (Tesla M40) has compute capability 5.2, and the PTX xcd writes needs 6.0 or newer"
            )),
            "{old}"
        );
    }
    let (stdout, r470) = devices(&fake, &[("FAKE_CUDA_VERSION", "11040")]);
    assert!(
        r470.contains(
            "cuda: skipped: the driver supports CUDA 11.4 and xcd needs CUDA 12.0 (driver 525) or newer: update the NVIDIA driver"
        ),
        "{r470}"
    );
    assert!(!stdout.contains("cuda "), "{stdout}");
    let (_, prohibited) = devices(&fake, &[("FAKE_CUDA_COMPUTE_MODE", "2")]);
    assert!(
        prohibited.contains(
            "cuda: device 1 (NVIDIA H200) is in the Prohibited compute mode, so no program may make a context on it"
        ),
        "{prohibited}"
    );
}

#[test]
fn a_panic_in_the_driver_binding_is_a_line_and_the_other_devices_serve() {
    let fake = FakeCuda::install();
    let (stdout, stderr) = devices(&fake, &[("FAKE_CUDA", "unterminated")]);
    assert!(
        stderr.contains("cuda: skipped: its driver binding panicked while finding devices (No null byte was present"),
        "{stderr}"
    );
    assert!(stderr.contains("at cudarc-0.19.10/src/driver/result.rs:"), "the note says where: {stderr}");
    assert!(!stderr.contains("panicked at"), "the panic's own message is the note's, not printed: {stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("cpu ")), "the CPU still serves: {stdout}");
}

#[test]
fn a_library_without_the_entry_points_xcd_calls_is_named_not_called() {
    let dir = tempfile::tempdir().expect("a folder");
    build_foreign(dir.path());
    let out = devices_in(dir.path(), &[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cuda: skipped: the driver library (libcuda) lacks cuDriverGetVersion, cuGetErrorName, cuGetErrorString, cuDeviceGetName and"),
        "{stderr}"
    );
    assert!(stderr.contains("install NVIDIA's driver 525 or newer"), "{stderr}");
}

/// What the stand-in exports for the tests' own use of CUDA, as a program's would be (a primary
/// context: `engine/tests/cuda_hardware.rs`), and xcd never calls.
const PROGRAMS_OWN: [&str; 2] = ["cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2"];

/// The stand-in exports the entry points xcd checks for (`ENTRY_POINTS`) and no others but
/// [`PROGRAMS_OWN`]: with the backend's paths run against it (here,
/// `engine/tests/cuda_hardware.rs`, `examples/escape/tests/cuda.rs`, `bin/xcd/tests/cuda.rs`), a
/// call to an entry point missing from the list fails there (cudarc panics on a missing symbol),
/// so the list is what xcd calls.
#[test]
fn the_stand_in_exports_exactly_the_entry_points_xcd_checks_for() {
    let fake = FakeCuda::install();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(fake.dir().join("libcuda.so"))
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut exported: Vec<&str> =
        text.lines().filter_map(|l| l.split_whitespace().last()).filter(|name| name.starts_with("cu")).collect();
    exported.sort_unstable();
    let mut listed = xcd_engine::cuda_backend::ENTRY_POINTS.to_vec();
    listed.extend(PROGRAMS_OWN);
    listed.sort_unstable();
    assert_eq!(exported, listed);
}
