//! `xcrun devices` run as a real process: it lists the CPU, and llvmpipe where Vulkan is present.

use std::process::Command;

fn xcrun(args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_xcrun"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("xcrun starts");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn devices_lists_every_local_device() {
    let (stdout, stderr, ok) = xcrun(&["devices"]);
    assert!(ok, "xcrun devices failed: {stderr}");
    assert!(stdout.starts_with("BACKEND"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("cpu ")), "{stdout}");
    if std::env::var_os("CI").is_some() {
        assert!(stdout.contains("vulkan") && stdout.contains("llvmpipe"), "CI installs llvmpipe: {stdout}");
    }
    if !std::path::Path::new("/proc/driver/nvidia").exists() {
        assert!(stderr.contains("cuda: no CUDA driver"), "{stderr}");
    }
}

#[test]
fn devices_json_is_the_inventory() {
    let (stdout, stderr, ok) = xcrun(&["devices", "--json"]);
    assert!(ok, "{stderr}");
    let inventory: Vec<xcd_wire::DeviceInfo> = serde_json::from_str(&stdout).expect("a JSON inventory");
    for device in &inventory {
        // `backend:name`, with ` @` and its PCI address where the driver tells one.
        let plain = format!("{}:{}", device.backend, device.name);
        assert!(device.id == plain || device.id.starts_with(&format!("{plain} @")), "{}", device.id);
        assert!(device.max_buffer_bytes > 0);
    }
}

#[test]
fn pins_are_listed_and_removed() {
    let home = tempfile::tempdir().expect("XCC_HOME");
    let run = |args: &[&str]| {
        let out =
            Command::new(env!("CARGO_BIN_EXE_xcrun")).args(args).env("XCC_HOME", home.path()).output().expect("xcrun");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.success(),
        )
    };
    let (stdout, _, ok) = run(&["pins"]);
    assert!(ok && stdout.contains("no pins"), "{stdout}");
    std::fs::write(home.path().join("settings.toml"), "\"tls.pin.gpu-box:7227\" = \"ab\"\n\"other\" = \"x\"\n")
        .expect("written");
    let (stdout, _, ok) = run(&["pins"]);
    assert!(ok && stdout.contains("tls.pin.gpu-box:7227 = ab") && !stdout.contains("other"), "{stdout}");
    let (stdout, _, ok) = run(&["pins", "remove", "gpu-box:7227"]);
    assert!(ok && stdout.contains("removed tls.pin.gpu-box:7227"), "{stdout}");
    let (_, stderr, ok) = run(&["pins", "remove", "gpu-box:7227"]);
    assert!(!ok && stderr.contains("there is no pin"), "{stderr}");
    let left = std::fs::read_to_string(home.path().join("settings.toml")).expect("kept");
    assert!(left.contains("other"), "other settings are kept: {left}");
}
