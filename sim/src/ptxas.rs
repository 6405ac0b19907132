//! NVIDIA's PTX assembler, `ptxas`, as a check that PTX is what a real driver accepts.
//!
//! It comes from PyPI's `nvidia-cuda-nvcc-cu12` (installed into `target/py` by scripts/test)
//! and runs without a GPU or a driver. `XCD_PTXAS` names it; CI must have it.

use std::path::PathBuf;
use std::process::Command;

/// The targets every PTX form must assemble for: the oldest the forms declare, and Hopper.
pub const TARGETS: [&str; 2] = ["sm_60", "sm_90"];

/// Where `ptxas` is: `XCD_PTXAS`, or the copy scripts/test installs under `target/py`.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("XCD_PTXAS") {
        return Some(PathBuf::from(path));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/py/lib");
    let python =
        std::fs::read_dir(&root).ok()?.flatten().find(|e| e.file_name().to_string_lossy().starts_with("python"))?;
    let ptxas = python.path().join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
    ptxas.exists().then_some(ptxas)
}

/// `ptxas` here, or None after saying so; in CI (`CI` set) its absence fails the test.
pub fn required() -> Option<PathBuf> {
    let found = find();
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI installs ptxas (scripts/test): set XCD_PTXAS");
        eprintln!("skipped: no ptxas here (pip install nvidia-cuda-nvcc-cu12, then set XCD_PTXAS)");
    }
    found
}

/// Assembles `ptx` for each of [`TARGETS`]; the error carries ptxas's words. Each call has a
/// folder of its own: tests that check kernels of the same name at once (two threads of one test
/// binary) must not assemble each other's half-written file.
pub fn check(ptxas: &std::path::Path, ptx: &str, name: &str) -> Result<(), String> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("xcd-ptxas-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = assemble(ptxas, ptx, name, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn assemble(ptxas: &std::path::Path, ptx: &str, name: &str, dir: &std::path::Path) -> Result<(), String> {
    let file = dir.join(format!("{name}.ptx"));
    std::fs::write(&file, ptx).map_err(|e| e.to_string())?;
    for target in TARGETS {
        let out = Command::new(ptxas)
            .arg(format!("-arch={target}"))
            .arg(&file)
            .arg("-o")
            .arg(dir.join(format!("{name}.{target}.cubin")))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
        if !out.status.success() {
            return Err(format!("ptxas -arch={target} refused {name}: {}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    Ok(())
}
