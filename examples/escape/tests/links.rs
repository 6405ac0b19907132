//! The link between a program and its daemon failing: two network namespaces joined by a veth
//! pair, the daemon in one, escape in the other. A link pulled mid-run (no packet passes, no
//! connection is told) and a link slowed to 20 Mbit/s (`tc … tbf`) both leave the block's total
//! as the local GPU gives it, in bounded time, and the report says what happened.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xcd_e2e::netns::{B_ADDR, NetPair};
use xcd_e2e::{Daemon, DaemonBuilder};

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "2048", "--height", "2048", "--max-iter", "1000"];

fn xcd() -> DaemonBuilder {
    Daemon::beside(env!("CARGO_BIN_EXE_escape")).secret(SECRET)
}

/// escape reporting, with the secret, on `workers`, naming `remote`; inside namespace `a` of
/// `net`, or on this machine's own network with None.
fn run_escape(net: Option<&NetPair>, home: &std::path::Path, workers: &str, remote: &str) -> Command {
    let mut command = match net {
        Some(net) => NetPair::exec(&net.a, env!("CARGO_BIN_EXE_escape")),
        None => Command::new(env!("CARGO_BIN_EXE_escape")),
    };
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
    let Some(net) = NetPair::create_or_skip("cut") else { return };
    let daemon = xcd().netns(&net.b, B_ADDR).args(&["-mdns", "false"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("{B_ADDR}:{}", daemon.port);
    let want =
        total(&run_escape(Some(&net), home.path(), "gpu", &remote).output().expect("runs")).expect("the GPU's total");
    let started = Instant::now();
    let child = run_escape(Some(&net), home.path(), "gpu,remote", &remote).spawn().expect("escape starts");
    // The daemon's fourth tile was sent after a result came back (three in flight), so the
    // program has timed a tile and its deadline for the next is short.
    daemon.wait_for_tiles(SECRET, 4.0);
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
    let Some(net) = NetPair::create_or_skip("tbf") else { return };
    net.shape("20mbit").expect("tc tbf");
    let daemon = xcd().netns(&net.b, B_ADDR).args(&["-mdns", "false"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("{B_ADDR}:{}", daemon.port);
    let want =
        total(&run_escape(Some(&net), home.path(), "gpu", &remote).output().expect("runs")).expect("the GPU's total");
    let started = Instant::now();
    let out = run_escape(Some(&net), home.path(), "remote", &remote).output().expect("escape runs");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(total(&out), Some(want), "{stderr}");
    assert!(stderr.contains(&format!("par: remote worker remote:{B_ADDR}:")), "{stderr}");
    println!("20 Mbit/s link: the same total in {:.1} s, all on the daemon", took.as_secs_f64());
}

/// The round trip the report names for the remote worker, in ms.
fn round_trip_ms(report: &str) -> Option<f64> {
    let after = report.split("round trip ").nth(1)?;
    after.split(" ms").next()?.trim().parse().ok()
}

#[test]
fn a_delayed_link_gives_the_same_total_and_a_stalled_one_is_left() {
    let daemon = xcd().args(&["-mdns", "false"]).start();
    let relay = xcd_e2e::relay::Relay::start(([127, 0, 0, 1], daemon.port).into(), Duration::from_millis(5));
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("127.0.0.1:{}", relay.port);
    let want = total(&run_escape(None, home.path(), "gpu", &remote).output().expect("runs")).expect("the GPU's total");

    // 5 ms each way: the program measures the round trip, hides it with depth, and agrees.
    let out = run_escape(None, home.path(), "remote", &remote).output().expect("escape runs");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert_eq!(total(&out), Some(want), "{report}");
    let rtt = round_trip_ms(&report).unwrap_or_default();
    assert!(rtt >= 10.0, "a round trip of at least 10 ms through the relay: {report}");

    // The relay stops passing bytes mid-run without closing anything.
    let child = run_escape(None, home.path(), "gpu,remote", &remote).spawn().expect("escape starts");
    daemon.wait_for_tiles(SECRET, daemon_tiles(&daemon) + 4.0);
    relay.stall();
    let out = child.wait_with_output().expect("escape ends");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert_eq!(total(&out), Some(want), "{report}");
    assert!(report.contains("the daemon stopped answering"), "{report}");
    println!("through a 5 ms relay: round trip {rtt} ms; a stalled relay left with the same total");
}

#[test]
fn a_daemon_that_stalled_is_taken_back_once_it_answers_again() {
    let daemon = xcd().args(&["-mdns", "false"]).start();
    let relay = xcd_e2e::relay::Relay::start(([127, 0, 0, 1], daemon.port).into(), Duration::ZERO);
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("127.0.0.1:{}", relay.port);
    let escape = |workers: &str, runs: &str| {
        let mut command = run_escape(None, home.path(), workers, &remote);
        command.args(["--runs", runs]);
        command
    };
    let want = total(&escape("gpu", "1").output().expect("runs")).expect("the GPU's total");

    // A long-running program: many runs of the block, one after another.
    let mut child = escape("gpu,remote", "40").spawn().expect("escape starts");
    let mut stderr = Report::follow(&mut child);
    daemon.wait_for_tiles(SECRET, daemon_tiles(&daemon) + 4.0);
    relay.stall();
    let stalled_at = Instant::now();
    while !stderr.next_line(Duration::from_secs(60)).expect("escape reports").contains("the daemon stopped answering") {
    }
    relay.resume();
    // Later runs skip the daemon until a check in the background finds it answering again;
    // then it runs tiles again.
    stderr.until_remote_tiles(Duration::from_secs(90));
    let back_after = stalled_at.elapsed();
    let out = child.wait_with_output().expect("escape ends");
    let report = stderr.rest();
    assert!(out.status.success(), "{report}");
    assert_eq!(total(&out), Some(want), "every run gives the GPU's total");
    println!("a stalled daemon was taken back {back_after:?} after the stall");
}

#[test]
fn a_named_daemon_that_starts_after_the_program_is_taken_in() {
    let port = xcd_e2e::free_port();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("127.0.0.1:{port}");
    let mut command = run_escape(None, home.path(), "gpu,remote", &remote);
    command.args(["--runs", "60"]);
    let want = {
        let mut alone = run_escape(None, home.path(), "gpu", &remote);
        total(&alone.output().expect("runs")).expect("the GPU's total")
    };
    let mut child = command.spawn().expect("escape starts");
    let mut stderr = Report::follow(&mut child);
    // The program starts without its daemon, on the local GPU; then the daemon comes up.
    while !stderr.next_line(Duration::from_secs(60)).expect("escape reports").contains("cannot connect to") {}
    let daemon = xcd().port(port).args(&["-mdns", "false"]).start();
    let started = Instant::now();
    stderr.until_remote_tiles(Duration::from_secs(90));
    let taken_after = started.elapsed();
    let out = child.wait_with_output().expect("escape ends");
    let report = stderr.rest();
    assert!(out.status.success(), "{report}");
    assert_eq!(total(&out), Some(want), "every run gives the GPU's total");
    assert!(report.contains(&format!("daemon 127.0.0.1:{port} answers now")), "{report}");
    assert!(daemon_tiles(&daemon) > 0.0, "the daemon ran tiles");
    println!("a daemon started after the program was taken in {taken_after:?} after it started");
}

/// A running program's report (its standard error), read line by line as it comes.
struct Report {
    lines: std::sync::mpsc::Receiver<String>,
    text: String,
}

impl Report {
    /// Follows `child`'s standard error.
    fn follow(child: &mut std::process::Child) -> Report {
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Report { lines, text: String::new() }
    }

    /// The next line, if one comes within `within`.
    fn next_line(&mut self, within: Duration) -> Option<String> {
        let line = self.lines.recv_timeout(within).ok()?;
        self.text.push_str(&line);
        self.text.push('\n');
        Some(line)
    }

    /// Reads on until a remote worker's line says it ran items, each line within `within`.
    fn until_remote_tiles(&mut self, within: Duration) {
        loop {
            let line = self.next_line(within).expect("escape goes on reporting");
            let items = line
                .strip_prefix("par: remote worker")
                .and_then(|rest| rest.split(": ").last())
                .and_then(|figures| figures.split(' ').next())
                .and_then(|n| n.parse::<u64>().ok());
            if items.is_some_and(|n| n > 0) {
                return;
            }
        }
    }

    /// The whole report, once the program has ended.
    fn rest(mut self) -> String {
        while self.next_line(Duration::from_secs(5)).is_some() {}
        self.text
    }
}

/// Tiles the daemon has served so far (its metrics).
fn daemon_tiles(daemon: &Daemon) -> f64 {
    let out = xcd_e2e::curl(&["-H", &format!("Authorization: Bearer {SECRET}"), &daemon.url("/metrics")]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("xcd_tiles_total"))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

#[test]
fn a_daemon_restarted_mid_run_keeps_its_certificate_and_the_programs_pin() {
    let home_xcd = tempfile::tempdir().expect("XCD_HOME");
    let port = xcd_e2e::free_port();
    let start = || xcd().home(home_xcd.path()).port(port).args(&["-mdns", "false"]).start();
    let daemon = start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let remote = format!("127.0.0.1:{port}");
    let want = total(&run_escape(None, home.path(), "gpu", &remote).output().expect("runs")).expect("the GPU's total");
    let child = run_escape(None, home.path(), "gpu,remote", &remote).spawn().expect("escape starts");
    daemon.wait_for_tiles(SECRET, 3.0);
    let fingerprint = daemon.stdout.iter().find(|l| l.contains("certificate")).cloned().unwrap_or_default();
    drop(daemon); // killed mid-run, then started again at the same port and home
    let again = start();
    let out = child.wait_with_output().expect("escape ends");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert_eq!(total(&out), Some(want), "the run that lost its daemon: {report}");
    let refingerprint = again.stdout.iter().find(|l| l.contains("certificate")).cloned().unwrap_or_default();
    assert_eq!(fingerprint, refingerprint, "the same certificate after the restart");
    // The next run uses the restarted daemon under the pin it kept.
    let out = run_escape(None, home.path(), "remote", &remote).output().expect("escape runs");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !report.contains("certificate changed"), "{report}");
    assert_eq!(total(&out), Some(want), "{report}");
}
