//! escape as a real process: the same total on the CPU, on the local GPU, and on both.

use std::process::Command;

fn escape(workers: &str, extra: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(["--width", "1024", "--height", "1024", "--max-iter", "500"])
        .args(extra)
        .env("XC_PAR_WORKERS", workers)
        .env("XC_PAR_REPORT", "1")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("escape starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "escape with XC_PAR_WORKERS={workers} failed: {stderr}");
    (stdout.lines().last().unwrap_or_default().to_owned(), stderr)
}

fn has_gpu() -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(["--width", "8", "--height", "8", "--max-iter", "1"])
        .env("XC_PAR_WORKERS", "gpu")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("escape starts");
    out.status.success()
}

#[test]
fn total_is_the_same_on_every_device() {
    let (cpu, report) = escape("cpu", &[]);
    assert!(cpu.parse::<u64>().is_ok(), "last line is the total: {cpu:?}");
    assert!(report.contains("across cpu ("), "{report}");
    if !has_gpu() {
        assert!(std::env::var_os("CI").is_none(), "CI installs llvmpipe, so a GPU worker must exist");
        eprintln!("skipped the GPU runs: no GPU worker here");
        return;
    }
    let (gpu, report) = escape("gpu", &[]);
    assert!(report.contains("across gpu:"), "{report}");
    let (both, _) = escape("cpu,gpu", &[]);
    assert_eq!(cpu, gpu, "CPU and GPU totals differ");
    assert_eq!(cpu, both, "CPU and CPU+GPU totals differ");
}

#[test]
fn png_is_written() {
    let dir = std::env::temp_dir().join(format!("escape-png-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("escape.png");
    let out = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(["--width", "64", "--height", "48", "--max-iter", "50", "--png"])
        .arg(&path)
        .env("XC_PAR_WORKERS", "cpu")
        .output()
        .expect("escape starts");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let image = image::open(&path).expect("a PNG image");
    assert_eq!((image.width(), image.height()), (64, 48));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_settings_are_explained() {
    let out = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(["--width", "8", "--height", "8"])
        .env("XC_PAR_WORKERS", "everything")
        .output()
        .expect("escape starts");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("use local, cpu, gpu, remote"), "{stderr}");
}

/// Many escapes at once, each opening and closing the local devices: every one exits cleanly.
/// (A device torn down while the process exited used to crash llvmpipe under load; the
/// engine's owner tests check the mechanism that prevents it deterministically.)
#[test]
fn exits_cleanly_under_load() {
    let children: Vec<_> = (0..16)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_escape"))
                .args(["--width", "64", "--height", "48", "--max-iter", "50"])
                .env("XC_PAR_WORKERS", if i % 2 == 0 { "local" } else { "gpu,cpu" })
                .env("XDG_RUNTIME_DIR", std::env::temp_dir())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("escape starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("escape ends");
        assert!(out.status.success(), "escape failed ({:?}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
}
