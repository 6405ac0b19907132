//! escape against real daemons on loopback (llvmpipe): the tutorial's step 4. One total whether
//! tiles run remotely, locally or both; pins kept and checked; refusals and failures fall back to
//! local devices with the same answer and say why in the tutorial's words.

use std::process::{Command, Output};

use xcd_e2e::{Daemon, DaemonBuilder};

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "1024", "--height", "1024", "--max-iter", "500"];

fn xcd() -> DaemonBuilder {
    Daemon::beside(env!("CARGO_BIN_EXE_escape"))
}

struct Run {
    total: Option<u64>,
    stderr: String,
    ok: bool,
}

fn escape(home: &std::path::Path, env: &[(&str, &str)], size: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_escape"));
    command.args(size).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command.env_remove("XC_PAR_SECRET").env_remove("XC_PAR_REMOTE").env_remove("XC_PAR_WORKERS");
    for (k, v) in env {
        command.env(k, v);
    }
    let out: Output = command.output().expect("escape runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    Run {
        total: stdout.lines().last().and_then(|l| l.trim().parse().ok()),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        ok: out.status.success(),
    }
}

fn cpu_total(home: &std::path::Path, size: &[&str]) -> u64 {
    let run = escape(home, &[("XC_PAR_WORKERS", "cpu")], size);
    run.total.expect("the CPU total")
}

#[test]
fn remote_local_and_both_give_one_total_and_the_pin_is_kept() {
    let daemon = xcd().secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{}", daemon.port);
    let want = cpu_total(home.path(), &SIZE);
    for workers in ["remote", "local", "local,remote"] {
        let run = escape(
            home.path(),
            &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote), ("XC_PAR_WORKERS", workers)],
            &SIZE,
        );
        assert!(run.ok, "XC_PAR_WORKERS={workers}: {}", run.stderr);
        assert_eq!(run.total, Some(want), "XC_PAR_WORKERS={workers}: {}", run.stderr);
        if workers.contains("remote") {
            assert!(run.stderr.contains("par: remote worker remote:localhost:vulkan:"), "{}", run.stderr);
            assert!(run.stderr.contains("depth 3"), "{}", run.stderr);
            assert!(run.stderr.contains("across") && run.stderr.contains("remote:localhost:vulkan:"), "{}", run.stderr);
        }
    }
    // XC_PAR=gpus: every GPU, local and remote, and not the CPU.
    let run = escape(home.path(), &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote), ("XC_PAR", "gpus")], &SIZE);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(run.total, Some(want));
    assert!(run.stderr.contains("remote:localhost:vulkan:") && !run.stderr.contains("across cpu"), "{}", run.stderr);
    let settings = std::fs::read_to_string(home.path().join("settings.toml")).expect("a settings file");
    assert!(settings.contains(&format!("\"tls.pin.localhost:{}\"", daemon.port)), "{settings}");
}

#[test]
fn a_changed_certificate_is_refused_and_the_pin_named() {
    let daemon = xcd().secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let key = format!("tls.pin.localhost:{}", daemon.port);
    std::fs::write(home.path().join("settings.toml"), format!("\"{key}\" = \"{}\"\n", "00".repeat(32)))
        .expect("a stale pin");
    let remote = format!("localhost:{}", daemon.port);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let run = escape(home.path(), &env, &SIZE);
    assert!(!run.ok, "nothing to fall back to");
    assert!(run.stderr.contains("the certificate changed"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&key) && run.stderr.contains("settings.toml"),
        "names the key and file: {}",
        run.stderr
    );
    let run = escape(home.path(), &env[..2], &SIZE);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(run.total, Some(cpu_total(home.path(), &SIZE)));
}

#[test]
fn a_wrong_secret_falls_back_to_local_devices() {
    let daemon = xcd().secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{}", daemon.port);
    let run = escape(home.path(), &[("XC_PAR_SECRET", "wrong"), ("XC_PAR_REMOTE", &remote)], &SIZE);
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("the daemon refused the secret"), "{}", run.stderr);
    assert_eq!(run.total, Some(cpu_total(home.path(), &SIZE)));
    let run = escape(home.path(), &[("XC_PAR_REMOTE", &remote), ("XC_PAR_WORKERS", "remote")], &SIZE);
    assert!(!run.ok);
    assert!(run.stderr.contains("the daemon refused the secret"), "no secret sent: {}", run.stderr);
}

#[test]
fn a_program_with_a_secret_sends_nothing_to_an_unprotected_daemon() {
    let daemon = xcd().start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{}", daemon.port);
    let run = escape(
        home.path(),
        &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote), ("XC_PAR_WORKERS", "remote")],
        &SIZE,
    );
    assert!(!run.ok);
    assert!(run.stderr.contains("has no secret"), "{}", run.stderr);
}

#[test]
fn an_unreachable_daemon_is_said_and_the_run_completes() {
    let home = tempfile::tempdir().expect("XCC_HOME");
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("addr").port();
    let remote = format!("127.0.0.1:{free}");
    let run = escape(home.path(), &[("XC_PAR_REMOTE", &remote)], &SIZE);
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("cannot connect to {remote}")), "{}", run.stderr);
    assert_eq!(run.total, Some(cpu_total(home.path(), &SIZE)));
}

#[test]
fn a_daemon_in_its_nimby_hours_leaves_the_block_to_local_devices() {
    let range = xcd_e2e::nimby_range_holding_now();
    let daemon = xcd().secret(SECRET).args(&["-nimby", &range]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{}", daemon.port);
    let run = escape(home.path(), &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote)], &SIZE);
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("declined") && run.stderr.contains("nimby"), "{}", run.stderr);
    assert_eq!(run.total, Some(cpu_total(home.path(), &SIZE)));
}

#[test]
fn two_daemons_share_a_block() {
    let (a, b) = (xcd().secret(SECRET).start(), xcd().secret(SECRET).start());
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{},localhost:{}", a.port, b.port);
    let run = escape(
        home.path(),
        &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote), ("XC_PAR_WORKERS", "remote")],
        &SIZE,
    );
    assert!(run.ok, "{}", run.stderr);
    for port in [a.port, b.port] {
        assert!(run.stderr.contains(&format!("par: remote worker remote:localhost:{port}:vulkan:")), "{}", run.stderr);
    }
    assert_eq!(run.total, Some(cpu_total(home.path(), &SIZE)));
}

#[test]
fn a_daemon_killed_mid_run_leaves_the_same_total() {
    a_daemon_lost_mid_run(nix::sys::signal::Signal::SIGKILL, "stopped");
}

#[test]
fn a_daemon_that_stalls_without_closing_leaves_the_same_total() {
    // SIGSTOP: the connection stays open and nothing more comes back. Each tile has a deadline.
    a_daemon_lost_mid_run(nix::sys::signal::Signal::SIGSTOP, "the daemon stopped answering");
}

/// Sends `signal` to a daemon once it has served a few tiles of a run; the run must complete
/// with the local GPU's total and the report must say `said`.
fn a_daemon_lost_mid_run(signal: nix::sys::signal::Signal, said: &str) {
    let daemon = xcd().secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let size = ["--width", "2048", "--height", "2048", "--max-iter", "1000"];
    // Every device gives the same total (the conformance suite): the local GPU is the quick reference.
    let want = escape(home.path(), &[("XC_PAR_WORKERS", "gpu")], &size).total.expect("the local GPU's total");
    let remote = format!("localhost:{}", daemon.port);
    let child = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(size)
        .env("XCC_HOME", home.path())
        .env("XC_PAR_REPORT", "1")
        .env("XC_PAR_SECRET", SECRET)
        .env("XC_PAR_REMOTE", &remote)
        .env("XC_PAR_WORKERS", "gpu,remote")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("escape starts");
    // Kill it once it has served a few tiles, while the run is under way.
    // Four: the program keeps three tiles in flight, so a fourth was sent only after a result
    // came back (and was timed, which sets the tiles' deadline).
    daemon.wait_for_tiles(SECRET, 4.0);
    daemon.signal(signal);
    let out = child.wait_with_output().expect("escape ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let total: Option<u64> = String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok());
    assert_eq!(total, Some(want), "{stderr}");
    assert!(
        stderr.contains(said) && stderr.contains("its tiles ran on the other workers"),
        "the report says so: {stderr}"
    );
}

#[test]
fn a_daemon_of_another_version_is_refused_with_both_named() {
    // XCD_PRETEND_VERSION works in debug builds of xcd only, which is what tests run.
    let daemon = xcd().secret(SECRET).env("XCD_PRETEND_VERSION", "9.9.9").start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{}", daemon.port);
    let run = escape(home.path(), &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote)], &SIZE);
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("a different xcc version"), "{}", run.stderr);
    assert!(
        run.stderr.contains("9.9.9") && run.stderr.contains(env!("CARGO_PKG_VERSION")),
        "names both: {}",
        run.stderr
    );
    assert_eq!(run.total, Some(cpu_total(home.path(), &SIZE)));
    let run = escape(
        home.path(),
        &[("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", &remote), ("XC_PAR_WORKERS", "remote")],
        &SIZE,
    );
    assert!(!run.ok && run.stderr.contains("a different xcc version"), "{}", run.stderr);
}

#[test]
fn the_first_run_measures_and_the_second_uses_the_remembered_placement() {
    let daemon = xcd().secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("localhost:{}", daemon.port);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str())];
    // Long enough (about a second here) that measuring is not skipped as too short.
    let size = ["--width", "2048", "--height", "2048", "--max-iter", "1000"];
    let want = escape(home.path(), &[("XC_PAR_WORKERS", "gpu")], &size).total.expect("the local GPU's total");
    let first = escape(home.path(), &env, &size);
    assert!(first.ok, "{}", first.stderr);
    assert_eq!(first.total, Some(want), "{}", first.stderr);
    // Every kind present was measured: cpu, the local GPU, the daemon (and the sets of them
    // that could be worth it).
    let placement = first.stderr.lines().find(|l| l.starts_with("par: placement")).expect("a placement line");
    assert!(placement.starts_with("par: placement of escape at 2^22 items: calibrated cpu "), "{placement}");
    for kinds in [", gpu ", ", remote "] {
        assert!(placement.contains(kinds), "measured {kinds}: {placement}");
    }
    let settings = std::fs::read_to_string(home.path().join("settings.toml")).expect("a settings file");
    let line = settings
        .lines()
        .find(|l| l.starts_with("\"placement.escape."))
        .unwrap_or_else(|| panic!("a placement kept: {}", first.stderr));
    assert!(line.contains(".22\" = "), "{settings}");
    let kept = line.rsplit('"').nth(1).expect("a value").to_owned();
    assert!(placement.contains(&format!("keeping {kept} as ")), "{placement}");

    let second = escape(home.path(), &env, &size);
    assert!(second.ok, "{}", second.stderr);
    assert_eq!(second.total, Some(want), "{}", second.stderr);
    assert!(second.stderr.contains(&format!("escape at 2^22 items: {kept}, remembered as ")), "{}", second.stderr);
    assert!(!second.stderr.contains("measured"), "{}", second.stderr);
    // Another problem size is measured afresh.
    let third = escape(home.path(), &env, &SIZE);
    assert!(third.stderr.contains("par: placement of escape at 2^20 items: "), "{}", third.stderr);
    assert!(!third.stderr.contains("remembered"), "{}", third.stderr);
    // XC_PAR=gpus does not measure: every GPU, local and remote.
    let gpus = escape(home.path(), &[env[0], env[1], ("XC_PAR", "gpus")], &size);
    assert!(!gpus.stderr.contains("par: placement"), "{}", gpus.stderr);
    assert_eq!(gpus.total, Some(want));
}
