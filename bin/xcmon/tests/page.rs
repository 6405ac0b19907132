//! xcmon as a real process: a daemon on loopback appears on its page (multicast DNS on loopback
//! only), a program's run sent with XC_PAR_TRACE appears in its runs section, and the page's
//! event stream says so as it happens.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xcd_e2e::Daemon;

struct Monitor {
    child: Child,
    page: u16,
    trace: u16,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn xcmon() -> Monitor {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xcmon"))
        .args(["-port", "0", "-trace-port", "0", "-listen", "127.0.0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("xcmon starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("its first line");
    // xcmon: page at http://localhost:PORT/, traces on port PORT
    let port = |after: &str| -> u16 {
        line.split(after)
            .nth(1)
            .and_then(|rest| rest.split(['/', ' ', '\n']).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port after {after:?} in {line:?}"))
    };
    let (page, trace) = (port("localhost:"), port("traces on port "));
    Monitor { child, page, trace }
}

fn get(port: u16, path: &str) -> String {
    let out = xcd_e2e::curl(&["-f", &format!("http://127.0.0.1:{port}{path}")]);
    assert!(out.status.success(), "GET {path}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sibling(name: &str) -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_xcmon")).with_file_name(name);
    assert!(bin.exists(), "{name} is not built beside xcmon: run `cargo build --workspace --bins` (scripts/test does)");
    bin
}

fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "{what} within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn daemons_and_runs_appear_on_the_page_live() {
    let monitor = xcmon();
    let daemon = Daemon::build(sibling("xcd")).secret("s3cret").args(&["-pool", "render"]).start();
    let page = get(monitor.page, "/");
    assert!(page.contains("<h1>xcmon</h1>") && page.contains("EventSource"), "{page}");
    assert!(page.contains(&format!("XC_PAR_TRACE=this-host:{}", monitor.trace)), "{page}");
    eventually("the daemon on the page", || get(monitor.page, "/daemons").contains(&format!(":{}", daemon.port)));
    assert!(get(monitor.page, "/daemons").contains("render"));

    // Follow the event stream while a program runs.
    let mut events = Command::new("curl")
        .args(["-sN", "--max-time", "60", &format!("http://127.0.0.1:{}/events", monitor.page)])
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl follows the events");
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = events.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new(sibling("escape"))
        .args(["--width", "256", "--height", "256", "--max-iter", "100"])
        .env("XC_PAR_TRACE", format!("127.0.0.1:{}", monitor.trace))
        .env("XC_PAR_WORKERS", "cpu")
        .env_remove("XC_PAR_REMOTE")
        .env_remove("XC_PAR_POOL")
        .output()
        .expect("escape runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("an event in 30 s");
        if line == "event: runs" {
            break;
        }
    }
    let runs = get(monitor.page, "/runs");
    assert!(runs.contains("<strong>escape</strong>") && runs.contains("main.rs:"), "{runs}");
    assert!(runs.contains("cpu 100%") && runs.contains("<svg"), "{runs}");
    assert_eq!(get(monitor.page, "/healthz"), "ok");
    let _ = events.kill();
    let _ = events.wait();
}
