//! `XC_PAR_TRACE`: each run's record (with its timeline) reaches a monitor listening on loopback,
//! and a monitor that is not there changes nothing about the run.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use xcd_wire::trace::TraceRun;

const SIZE: [&str; 6] = ["--width", "512", "--height", "512", "--max-iter", "200"];

fn escape(trace: &str) -> (Option<u64>, String, bool) {
    let home = tempfile::tempdir().expect("XCC_HOME");
    let out = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(SIZE)
        .env("XCC_HOME", home.path())
        .env("XC_PAR_TRACE", trace)
        .env("XC_PAR_WORKERS", "cpu")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env_remove("XC_PAR_REMOTE")
        .output()
        .expect("escape runs");
    let total = String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok());
    (total, String::from_utf8_lossy(&out.stderr).into_owned(), out.status.success())
}

#[test]
fn each_run_reaches_the_monitor() {
    let monitor = TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = monitor.local_addr().expect("addr");
    let reader = std::thread::spawn(move || {
        let (socket, _) = monitor.accept().expect("the program connects");
        socket.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut line = String::new();
        BufReader::new(socket).read_line(&mut line).expect("a record");
        line
    });
    let (total, stderr, ok) = escape(&addr.to_string());
    assert!(ok, "{stderr}");
    let line = reader.join().expect("the monitor thread");
    let run = TraceRun::from_line(line.as_bytes()).expect("a trace record");
    assert_eq!(run.block, "escape");
    assert_eq!(run.items, 512 * 512);
    assert_eq!(run.program, "escape");
    assert!(run.source.contains("main.rs:"), "{run:?}");
    assert_eq!(run.workers.iter().map(|w| w.items).sum::<u64>(), run.items);
    assert_eq!(run.workers.iter().map(|w| w.tiles).sum::<u64>(), run.tiles);
    assert!(run.workers.iter().all(|w| w.name == "cpu" && w.failure.is_none()), "{run:?}");
    assert!(total.is_some());
    // The timeline: every tile, on a worker the record lists, within the run, in start order.
    assert!(!run.spans.is_empty(), "a timeline: {run:?}");
    assert_eq!(run.spans.iter().map(|s| s.items).sum::<u64>(), run.items, "every item in a span");
    assert_eq!(run.spans.iter().map(|s| u64::from(s.tiles)).sum::<u64>(), run.tiles, "every tile in a span");
    let run_us = (run.seconds * 1e6) as u64 + 1;
    for span in &run.spans {
        assert!(usize::from(span.worker) < run.workers.len() && span.start_us <= span.end_us, "{span:?}");
        assert!(span.end_us <= run_us && !span.failed, "{span:?} in a run of {run_us} µs");
    }
    assert!(run.spans.windows(2).all(|w| w[0].start_us <= w[1].start_us), "in start order");
}

#[test]
fn a_monitor_that_is_not_there_changes_nothing() {
    let free = TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("addr").port();
    let (total, stderr, ok) = escape(&format!("127.0.0.1:{free}"));
    assert!(ok, "{stderr}");
    let (reference, _, _) = escape("");
    assert_eq!(total, reference);
    assert!(total.is_some());
    let (_, stderr, ok) = escape("monitor-host");
    assert!(!ok && stderr.contains("XC_PAR_TRACE=monitor-host: name the monitor as host:port"), "{stderr}");
}
