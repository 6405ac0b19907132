//! Many daemons at once (issue 22, point 5): eight real daemons on loopback, each on llvmpipe,
//! and escape sending its tiles to all of them. The total is the CPU's, and the report has a
//! line for each daemon's worker, so every daemon ran tiles. The scheduler's behaviour with
//! hundreds of workers is the simulation's (`xcd_runtime::schedule::sim`); this is the real
//! path at the size one machine can hold.

use std::process::Command;

use xcd_e2e::Daemon;

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "1024", "--height", "1024", "--max-iter", "500"];
const DAEMONS: usize = 8;

fn escape(home: &std::path::Path, env: &[(&str, &str)]) -> (Option<u64>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_escape"));
    command.args(SIZE).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command.env_remove("XC_PAR_SECRET").env_remove("XC_PAR_REMOTE").env_remove("XC_PAR_WORKERS");
    command.env_remove("XC_PAR_POOL").envs(env.iter().copied());
    let out = command.output().expect("escape runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok()), stderr)
}

#[test]
fn eight_daemons_on_loopback_each_run_tiles_and_the_total_is_the_cpu_s() {
    let daemons: Vec<Daemon> = (0..DAEMONS)
        .map(|_| Daemon::beside(env!("CARGO_BIN_EXE_escape")).secret(SECRET).args(&["-mdns", "false"]).start())
        .collect();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (want, _) = escape(home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    let remote: Vec<String> = daemons.iter().map(|d| format!("127.0.0.1:{}", d.port)).collect();
    let remote = remote.join(",");
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let (total, report) = escape(home.path(), &env);
    assert_eq!(total, want, "{report}");
    // One host, several daemons: each worker is named by host:port, and a worker's report line
    // is printed only when it ran tiles.
    for d in &daemons {
        let line = format!("par: remote worker remote:127.0.0.1:{}:", d.port);
        assert_eq!(report.matches(&line).count(), 1, "one report line for the daemon on port {}: {report}", d.port);
    }
    assert!(!report.contains("stopped"), "no worker stopped: {report}");
}
