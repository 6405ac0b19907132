//! The tutorial's step 5 inside two network namespaces joined by a veth pair (nothing reaches
//! this machine's own interfaces): daemons advertise with multicast DNS, a program finds those of
//! its pool and its own version, an independent mDNS implementation (Python zeroconf) sees the
//! advertisements, and a daemon stopped mid-run leaves the same total.

use std::path::PathBuf;
use std::process::Output;

use xcd_e2e::netns::{A_ADDR, NetPair};
use xcd_e2e::{Daemon, DaemonBuilder};

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "1024", "--height", "1024", "--max-iter", "500"];

/// The namespaces, or None where this user cannot make them (CI must not skip).
fn net(tag: &str) -> Option<NetPair> {
    NetPair::create_or_skip(tag)
}

fn xcd(net: &NetPair) -> DaemonBuilder {
    Daemon::beside(env!("CARGO_BIN_EXE_escape")).secret(SECRET).netns(&net.a, A_ADDR)
}

fn escape_in(net: &NetPair, home: &std::path::Path, env: &[(&str, &str)]) -> Output {
    let mut command = NetPair::exec(&net.b, env!("CARGO_BIN_EXE_escape"));
    command.args(SIZE).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command.env_remove("XC_PAR_REMOTE").env_remove("XC_PAR_WORKERS").env_remove("XC_PAR_POOL");
    command.env("XC_PAR_SECRET", SECRET);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("escape runs")
}

/// escape in namespace `b` on the CPU and pool `render`, reporting, its stderr piped.
fn render_pool_escape(net: &NetPair, home: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut command = NetPair::exec(&net.b, env!("CARGO_BIN_EXE_escape"));
    command
        .args(args)
        .env("XCC_HOME", home)
        .env("XC_PAR_REPORT", "1")
        .env("XC_PAR_SECRET", SECRET)
        .env("XC_PAR_POOL", "render")
        .env("XC_PAR_WORKERS", "cpu,remote")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stderr(std::process::Stdio::piped());
    command
}

fn total(out: &Output) -> Option<u64> {
    String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok())
}

#[test]
fn a_program_finds_exactly_the_daemons_of_its_pool_and_version() {
    let Some(net) = net("pl") else { return };
    let render = [xcd(&net).args(&["-pool", "render"]).start(), xcd(&net).args(&["-pool", "render"]).start()];
    let other = xcd(&net).args(&["-pool", "other"]).start();
    // XCD_PRETEND_VERSION works in debug builds of xcd only, which is what tests run.
    let old = xcd(&net).args(&["-pool", "render"]).env("XCD_PRETEND_VERSION", "9.9.9").start();
    // A daemon in its NIMBY hours says so in its advertisement and is skipped before any contact.
    let nimby = xcd(&net).args(&["-pool", "render", "-nimby", &xcd_e2e::nimby_range_holding_now()]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let want = total(&escape_in(&net, home.path(), &[("XC_PAR_WORKERS", "cpu")])).expect("the CPU total");
    let xcrun = PathBuf::from(env!("CARGO_BIN_EXE_escape")).with_file_name("xcrun");
    let run_xcrun = |args: &[&str]| {
        let mut command = NetPair::exec(&net.b, &xcrun);
        command.args(args).env("XCC_HOME", home.path()).env("XC_PAR_SECRET", SECRET).env("XC_PAR_POOL", "render");
        command.env("XDG_RUNTIME_DIR", std::env::temp_dir()).env_remove("XC_PAR_REMOTE");
        command.output().expect("xcrun runs")
    };
    // Daemons just started are still announcing themselves (mDNS probes first): wait until every
    // one of them has been heard, the pool's two listed and the three others skipped, as it would
    // be for a program started after its daemons. (Waiting for the pool's two only let a program
    // miss the last daemon started, once, in CI.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let said = loop {
        let out = run_xcrun(&["devices"]);
        let listed = String::from_utf8_lossy(&out.stdout).into_owned();
        let said = format!("{listed}{}", String::from_utf8_lossy(&out.stderr));
        let heard = [&other, &old, &nimby].iter().all(|d| said.contains(&format!(":{} found by mDNS", d.port)));
        if listed.lines().filter(|l| l.starts_with("remote")).count() == 2 && heard {
            break said;
        }
        assert!(std::time::Instant::now() < deadline, "the five daemons not all heard in 30 s: {said}");
    };
    // Each daemon skipped says why. (Checked on the listing that heard all five: a program stops
    // browsing a second after the last daemon of its pool answered, so on a loaded machine the
    // escape run below may not hear a slow daemon of another pool at all, which is no fault.)
    assert!(said.contains(&format!(":{} found by mDNS: in pool other, not render", other.port)), "{said}");
    assert!(said.contains(&format!(":{} found by mDNS: a different xcc version", old.port)), "{said}");
    assert!(said.contains(&format!(":{} found by mDNS: not taking work (nimby until ", nimby.port)), "{said}");

    let out = escape_in(&net, home.path(), &[("XC_PAR_POOL", "render"), ("XC_PAR_WORKERS", "remote")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(total(&out), Some(want), "{stderr}");
    for daemon in &render {
        assert!(stderr.contains(&format!(":{}:vulkan:", daemon.port)), "uses {}: {stderr}", daemon.port);
    }
    for daemon in [&other, &old, &nimby] {
        assert!(!stderr.contains(&format!(":{}:vulkan:", daemon.port)), "not {}: {stderr}", daemon.port);
    }
    for line in stderr.lines().filter(|l| l.contains("found by mDNS")) {
        assert!(said.contains(line.trim_start_matches("par: ")), "the run skips as the listing did: {line}\n{said}");
    }

    // xcrun (which listed the pool's devices above) checks each daemon it finds.
    let out = run_xcrun(&["check"]);
    let checked = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{checked}");
    for daemon in &render {
        assert!(
            checked.contains(&format!(":{} (found by mDNS at {A_ADDR}:{})", daemon.port, daemon.port)),
            "{checked}"
        );
    }
    assert!(checked.contains("in pool other, not render"), "{checked}");

    // XC_PAR_REMOTE=mdns without a pool takes daemons started without -pool: here there are none.
    let out = escape_in(&net, home.path(), &[("XC_PAR_REMOTE", "mdns"), ("XC_PAR_WORKERS", "remote")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("no daemon found by multicast DNS"), "{stderr}");
    assert!(stderr.contains("set XC_PAR_POOL=render"), "{stderr}");

    // An independent implementation sees the advertisements with their TXT records.
    let Some(python) = std::env::var_os("XCD_PYTHON") else {
        assert!(std::env::var_os("CI").is_none(), "XCD_PYTHON (with zeroconf) is set by scripts/test");
        eprintln!("skipped the zeroconf check: XCD_PYTHON is not set (scripts/test sets it)");
        return;
    };
    let browse = r#"
import sys, time
from zeroconf import Zeroconf, ServiceBrowser
zc = Zeroconf()
seen = {}
class Listener:
    def add_service(self, zc, type_, name):
        info = zc.get_service_info(type_, name, 3000)
        if info:
            seen[name] = (info.port, {k.decode(): (v or b"").decode() for k, v in info.properties.items()})
    def update_service(self, zc, type_, name):
        self.add_service(zc, type_, name)
    def remove_service(self, zc, type_, name):
        pass
ServiceBrowser(zc, "_xcd._tcp.local.", Listener())
time.sleep(4)
for name, (port, txt) in sorted(seen.items()):
    print(port, txt.get("pool", "-"), txt.get("version"), txt.get("layout"), txt.get("accepting"), txt.get("devices"), len(txt.get("fp", "")))
zc.close()
"#;
    let out = NetPair::exec(&net.b, python).arg("-c").arg(browse).output().expect("python runs");
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let version = env!("CARGO_PKG_VERSION");
    for daemon in &render {
        let line = format!("{} render {version} little-64 yes 1 64", daemon.port);
        assert!(seen.lines().any(|l| l == line), "zeroconf sees {line:?}: {seen}");
    }
    assert!(seen.lines().any(|l| l.starts_with(&format!("{} other ", other.port))), "{seen}");
    assert!(seen.lines().any(|l| l.starts_with(&format!("{} render 9.9.9 ", old.port))), "{seen}");
}

#[test]
fn a_pool_daemon_stopped_mid_run_leaves_the_same_total() {
    let Some(net) = net("st") else { return };
    let daemon = xcd(&net).args(&["-pool", "render"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let size = ["--width", "2048", "--height", "2048", "--max-iter", "1000"];
    // Every device gives the same total (the conformance suite): the local GPU is the quick reference.
    let mut reference = NetPair::exec(&net.b, env!("CARGO_BIN_EXE_escape"));
    reference.args(size).env("XC_PAR_WORKERS", "gpu").env("XCC_HOME", home.path());
    reference.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    let want = total(&reference.output().expect("escape runs")).expect("the local GPU's total");
    let child = render_pool_escape(&net, home.path(), &size)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("escape starts");
    // Kill the daemon once it has served a few tiles (its metrics, read inside its namespace).
    // Four: the program keeps three tiles in flight, so a fourth was sent only after a result
    // came back (and was timed, which sets the tiles' deadline).
    daemon.wait_for_tiles(SECRET, 4.0);
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    let out = child.wait_with_output().expect("escape ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(total(&out), Some(want), "{stderr}");
    assert!(stderr.contains("par: remote worker remote:"), "it was used: {stderr}");
    assert!(stderr.contains("its tiles ran on the other workers"), "the report says so: {stderr}");
}

#[test]
fn daemons_that_join_or_leave_a_pool_are_picked_up_between_runs() {
    let Some(net) = net("jl") else { return };
    let first = xcd(&net).args(&["-pool", "render"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let size = ["--width", "256", "--height", "256", "--max-iter", "100", "--runs", "1000000"];
    let mut child = render_pool_escape(&net, home.path(), &size)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("escape starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |what: &str, want: &dyn Fn(&str) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            let hit = want(&line);
            seen.push(line);
            if hit {
                return;
            }
        }
        panic!("{what} not seen in a minute: {}", seen.join("\n"));
    };
    wait_for("a run on the first daemon", &|l| l.contains("tiles across") && l.contains("remote:"));
    let second = xcd(&net).args(&["-pool", "render"]).start();
    let joined = format!(":{} joined the pool", second.port);
    wait_for("the second daemon joining", &|l| l.starts_with("par: daemon ") && l.contains(&joined));
    wait_for("a run on the second daemon", &|l| {
        l.contains("tiles across") && l.contains(&format!(":{}:vulkan:", second.port))
    });
    // The first drains on SIGTERM: it says so in its advertisement, then withdraws it.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first.pid() as i32), nix::sys::signal::Signal::SIGTERM)
        .expect("SIGTERM");
    wait_for("the first daemon leaving", &|l| l.contains(&format!(":{} left the pool", first.port)));
    let _ = child.kill();
    let _ = child.wait();
}
