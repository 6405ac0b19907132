//! The link between a program and its daemon failing: two network namespaces joined by a veth
//! pair, the daemon in one, escape in the other. A link pulled mid-run (no packet passes, no
//! connection is told) and a link slowed to 20 Mbit/s (`tc … tbf`) both leave the block's total
//! as the local GPU gives it, in bounded time, and the report says what happened.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xcd_e2e::netns::{B_ADDR, NetPair};
use xcd_e2e::{Daemon, DaemonBuilder};

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "2048", "--height", "2048", "--max-iter", "1000"];

fn net(tag: &str) -> Option<NetPair> {
    match NetPair::create(tag) {
        Ok(pair) => Some(pair),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: cannot make network namespaces here ({e}); run as root");
            None
        }
        Err(e) => panic!("cannot make network namespaces under CI: {e}"),
    }
}

fn xcd() -> DaemonBuilder {
    Daemon::build(PathBuf::from(env!("CARGO_BIN_EXE_escape")).with_file_name("xcd")).secret(SECRET)
}

fn escape(net: &NetPair, home: &std::path::Path, workers: &str, remote: &str) -> Command {
    let mut command = NetPair::exec(&net.a, env!("CARGO_BIN_EXE_escape"));
    command
        .args(SIZE)
        .env("XCC_HOME", home)
        .env("XC_PAR_REPORT", "1")
        .env("XC_PAR_SECRET", SECRET)
        .env("XC_PAR_REMOTE", remote)
        .env("XC_PAR_WORKERS", workers)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env_remove("XC_PAR_POOL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn total(out: &std::process::Output) -> Option<u64> {
    String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok())
}

#[test]
fn a_link_pulled_mid_run_leaves_the_same_total_in_bounded_time() {
    let Some(net) = net("cut") else { return };
    let daemon = xcd().netns(&net.b, B_ADDR).args(&["-mdns", "false"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("{B_ADDR}:{}", daemon.port);
    let want = total(&escape(&net, home.path(), "gpu", &remote).output().expect("runs")).expect("the GPU's total");
    let started = Instant::now();
    let child = escape(&net, home.path(), "gpu,remote", &remote).spawn().expect("escape starts");
    daemon.wait_for_tiles(SECRET, 3.0);
    net.set_link(false).expect("the link goes down");
    let out = child.wait_with_output().expect("escape ends");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(total(&out), Some(want), "{stderr}");
    assert!(
        stderr.contains("the daemon stopped answering") && stderr.contains("its tiles ran on the other workers"),
        "the report says so: {stderr}"
    );
    assert!(took < Duration::from_secs(120), "took {took:?}");
    println!("link pulled mid-run: the same total in {:.1} s", took.as_secs_f64());
}

#[test]
fn a_slowed_link_gives_the_same_total() {
    let Some(net) = net("tbf") else { return };
    net.shape("20mbit").expect("tc tbf");
    let daemon = xcd().netns(&net.b, B_ADDR).args(&["-mdns", "false"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("{B_ADDR}:{}", daemon.port);
    let want = total(&escape(&net, home.path(), "gpu", &remote).output().expect("runs")).expect("the GPU's total");
    let started = Instant::now();
    let out = escape(&net, home.path(), "remote", &remote).output().expect("escape runs");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(total(&out), Some(want), "{stderr}");
    assert!(stderr.contains(&format!("par: remote worker remote:{B_ADDR}:")), "{stderr}");
    println!("20 Mbit/s link: the same total in {:.1} s, all on the daemon", took.as_secs_f64());
}
