//! README's "Writing your own block", run as a new user would: its commands, verbatim but for
//! the checkout's path and the daemon's address, from a fresh directory outside the workspace,
//! against a live daemon. Then the typed call's promise: arguments in the wrong order do not
//! compile, and a kernel outside the exact subset fails `cargo build` at its line.
//!
//! The new project builds into this workspace's target directory (CARGO_TARGET_DIR), so the
//! dependencies it shares with the workspace are not built again.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SECRET: &str = "correct-horse-battery";

/// The workspace's target directory and profile folder, from this test's own path.
fn target_dirs() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("the test's path");
    let profile = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_owned();
    let target = profile.parent().expect("target/<profile>").to_owned();
    (target, profile)
}

fn the_section() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let section = readme
        .split("<!-- own-block:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- own-block:end -->").next())
        .expect("the marked section");
    section.trim().trim_start_matches("```sh").trim_end_matches("```").to_owned()
}

fn bash(script: &str, dir: &Path, home: &Path, target: &Path) -> Output {
    Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("XCC_HOME", home)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env_remove("XC_PAR_REMOTE")
        .env_remove("XC_PAR_WORKERS")
        .env_remove("XC_PAR_SECRET")
        .output()
        .expect("bash runs")
}

#[test]
fn writing_your_own_block_works_as_the_readme_says() {
    let (target, profile) = target_dirs();
    let xcd = profile.join("xcd");
    assert!(
        xcd.exists(),
        "xcd is not built in {}: run `cargo build --workspace --bins` (scripts/test does)",
        profile.display()
    );
    let daemon = xcd_e2e::Daemon::build(&xcd).secret(SECRET).start();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the checkout");
    let script = the_section()
        .replace("XCD_SRC=$PWD", &format!("XCD_SRC={}", root.display()))
        .replace("gpu-box:7227", &format!("localhost:{}", daemon.port));
    let dir = tempfile::tempdir().expect("temp dir");
    let checkout = dir.path().join("xcd");
    std::fs::create_dir(&checkout).expect("a stand-in for the checkout's folder");
    let home = dir.path().join("xcc");
    let out = bash(&script, &checkout, &home, &target);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let sums: Vec<&str> = stdout.lines().collect();
    assert_eq!(sums.len(), 2, "each run prints its sum: {stdout}\n{stderr}");
    assert_eq!(sums[0], sums[1], "local and remote sums differ: {stderr}");
    assert!(sums[0].parse::<f64>().is_ok_and(|s| s > 0.0), "{stdout}");
    assert!(stderr.contains("across remote:localhost:"), "the second run's tiles went to the daemon: {stderr}");

    let project = dir.path().join("brighten");
    let main = project.join("src/main.rs");
    let text = std::fs::read_to_string(&main).expect("src/main.rs");
    std::fs::write(&main, text.replace("1.5, &pixels, &mut out", "&pixels, 1.5, &mut out")).expect("swap");
    let out = bash("cargo build --quiet", &project, &home, &target);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("error[E0308]") && stderr.contains("swap these arguments"),
        "{stderr}"
    );
    std::fs::write(&main, text).expect("put back");

    let kernel = project.join("wgsl/brighten.wgsl");
    let wgsl = std::fs::read_to_string(&kernel).expect("the kernel");
    std::fs::write(&kernel, wgsl.replace("pixels[i] * tile.gain", "mat2x2<f32>(pixels[i], 0.0, 0.0, 1.0)[0].x"))
        .expect("break it");
    let out = bash("cargo build --quiet", &project, &home, &target);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("wgsl/brighten.wgsl:10:18: a matrix type is not in the exact subset"), "{stderr}");
}
