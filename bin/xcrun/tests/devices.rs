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
        assert_eq!(device.id, format!("{}:{}", device.backend, device.name));
        assert!(device.max_buffer_bytes > 0);
    }
}
