//! CUDA discovery against a stand-in for NVIDIA's driver library (`tests/fake/libcuda.c`, built
//! here with the C compiler), found by `xcrun devices` through `LD_LIBRARY_PATH` as the real one
//! would be: the toolkit's stub is named for what it is, a card too old for xcd's PTX is said
//! to be, and identical cards in different slots get ids of their own. This machine has no
//! NVIDIA GPU; scripts/gpu-check checks the real driver where there is one.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

/// Builds the stand-in as `libcuda.so` in `dir`.
fn build(dir: &Path) {
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

/// `xcrun devices` with the stand-in answering as `mode` says; its standard error.
fn devices(dir: &Path, mode: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_xcrun"))
        .arg("devices")
        .env("LD_LIBRARY_PATH", dir)
        .env("FAKE_CUDA", mode)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("xcrun starts");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn cuda_discovery_says_what_it_found() {
    let dir = tempfile::tempdir().expect("a folder");
    build(dir.path());

    let stub = devices(dir.path(), "stub");
    let folder = dir.path().display().to_string();
    assert!(
        stub.contains(&format!(
            "cuda: the libcuda.so found first ({folder}/libcuda.so) is the CUDA toolkit's stub, which runs nothing: take {folder} off LD_LIBRARY_PATH"
        )),
        "{stub}"
    );

    let old = devices(dir.path(), "old");
    for ordinal in 0..2 {
        assert!(
            old.contains(&format!(
                "cuda: device {ordinal} (Tesla M40) has compute capability 5.2, and the PTX xcd writes needs 6.0 or newer"
            )),
            "{old}"
        );
    }

    let twins = devices(dir.path(), "twins");
    for slot in ["1b", "43"] {
        assert!(
            twins.contains(&format!(
                "xcrun: cuda:NVIDIA H200 @0000:{slot}:00.0: cannot be opened (DriverError(CUDA_ERROR_OPERATING_SYSTEM"
            )),
            "{twins}"
        );
    }
}
