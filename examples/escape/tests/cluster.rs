//! The Kubernetes arrangement of `deploy/k8s/xcd.yaml` with real processes: a headless Service is
//! one DNS name with every node's address, so `XC_PAR_REMOTE=<name>:7227` must reach every node.
//! Two daemons at two addresses of one network namespace, on the same port; the program in the
//! other namespace resolves `gpu-nodes` through that namespace's own `/etc/hosts` (glibc, as
//! for DNS: one name, two addresses), uses both, pins each, and gives the CPU's total.

use xcd_e2e::netns::{B_ADDR, NetPair};
use xcd_e2e::{Daemon, DaemonBuilder};

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "1024", "--height", "1024", "--max-iter", "500"];
const SECOND: &str = "169.254.77.3";

fn xcd() -> DaemonBuilder {
    Daemon::beside(env!("CARGO_BIN_EXE_escape")).secret(SECRET)
}

#[test]
fn one_name_with_every_nodes_address_reaches_them_all() {
    let Some(net) = NetPair::create_or_skip("hs") else { return };
    net.add_b_address(SECOND).expect("a second address");
    net.hosts(&net.a, &format!("{B_ADDR} gpu-nodes\n{SECOND} gpu-nodes")).expect("hosts");
    // Both on port 7227, as every node of a DaemonSet is; kept until the end of the test.
    let _nodes = [
        xcd().netns(&net.b, B_ADDR).port(7227).args(&["-mdns", "false"]).start(),
        xcd().netns(&net.b, SECOND).port(7227).args(&["-mdns", "false"]).start(),
    ];
    let home = tempfile::tempdir().expect("XCC_HOME");
    let run = |env: &[(&str, &str)]| {
        let mut command = NetPair::exec(&net.a, env!("CARGO_BIN_EXE_escape"));
        command.args(SIZE).env("XCC_HOME", home.path()).env("XC_PAR_REPORT", "1");
        command.env("XDG_RUNTIME_DIR", std::env::temp_dir()).env_remove("XC_PAR_POOL");
        command.envs(env.iter().copied());
        let out = command.output().expect("escape runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        (String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse::<u64>().ok()), stderr)
    };
    let (want, _) = run(&[("XC_PAR_WORKERS", "cpu")]);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", "gpu-nodes:7227"), ("XC_PAR_WORKERS", "remote")];
    let (total, report) = run(&env);
    assert_eq!(total, want, "{report}");
    // Each node ran tiles (a worker's report line is printed only when it did).
    for addr in [B_ADDR, SECOND] {
        assert!(report.contains(&format!("par: remote worker remote:{addr}:")), "{addr} used: {report}");
    }
    let settings = std::fs::read_to_string(home.path().join("settings.toml")).expect("settings");
    for addr in [B_ADDR, SECOND] {
        assert!(settings.contains(&format!("\"tls.pin.{addr}:7227\"")), "each node pinned: {settings}");
    }
}
