//! `xcrun check` against a real daemon: every step passes, and each failure names its step and
//! says what to do in the tutorial's words.

use std::process::Command;

use xcd_e2e::Daemon;

fn daemon() -> Daemon {
    Daemon::beside(env!("CARGO_BIN_EXE_xcrun")).secret("s3cret").start()
}

fn check(home: &std::path::Path, secret: Option<&str>, addr: &str) -> (String, bool) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xcrun"));
    command.args(["check", addr]).env("XCC_HOME", home).env_remove("XC_PAR_SECRET");
    if let Some(secret) = secret {
        command.env("XC_PAR_SECRET", secret);
    }
    let out = command.output().expect("xcrun runs");
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.success())
}

#[test]
fn every_step_passes_against_a_good_daemon() {
    let daemon = daemon();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (out, ok) = check(home.path(), Some("s3cret"), &format!("localhost:{}", daemon.port));
    assert!(ok, "{out}");
    for step in ["address", "tcp", "tls+pin", "secret", "version", "layout", "forms"] {
        assert!(out.lines().any(|l| l.trim_start().starts_with("ok") && l.contains(step)), "{step}: {out}");
    }
    assert!(out.contains("pin kept"), "{out}");
}

#[test]
fn each_failure_names_its_step() {
    let daemon = daemon();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let addr = format!("localhost:{}", daemon.port);
    let (out, ok) = check(home.path(), Some("wrong"), &addr);
    assert!(!ok && out.contains("FAIL  secret") && out.contains("the daemon refused the secret"), "{out}");

    std::fs::write(home.path().join("settings.toml"), format!("\"tls.pin.{addr}\" = \"{}\"\n", "11".repeat(32)))
        .expect("pin");
    let (out, ok) = check(home.path(), Some("s3cret"), &addr);
    assert!(!ok && out.contains("FAIL  tls+pin") && out.contains("the certificate changed"), "{out}");
    assert!(out.contains(&format!("tls.pin.{addr}")), "names the pin: {out}");

    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let (out, ok) = check(home.path(), None, &format!("127.0.0.1:{free}"));
    assert!(!ok && out.contains("FAIL  tcp") && out.contains("cannot connect to"), "{out}");
}

#[test]
fn devices_include_the_daemons_devices() {
    let daemon = daemon();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let out = Command::new(env!("CARGO_BIN_EXE_xcrun"))
        .arg("devices")
        .env("XCC_HOME", home.path())
        .env("XC_PAR_SECRET", "s3cret")
        .env("XC_PAR_REMOTE", format!("localhost:{}", daemon.port))
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("xcrun runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("remote") && l.contains("remote:localhost:vulkan:")), "{stdout}");
}
