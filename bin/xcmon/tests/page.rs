//! xcmon as a real process: a daemon on loopback appears on its page (multicast DNS on loopback
//! only), a program's run sent with XC_PAR_TRACE appears in its runs section, and the page's
//! event stream says so as it happens; then the same in headless Chromium, with the daemon's live
//! figures read with its secret, and runs' own pages (their timelines), one of them a record of
//! 16 workers with hostile names.

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

fn xcmon(env: &[(&str, &str)]) -> Monitor {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xcmon"))
        .args(["-port", "0", "-trace-port", "0", "-listen", "127.0.0.1"])
        .env_remove("XC_PAR_SECRET")
        .envs(env.iter().copied())
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
    let monitor = xcmon(&[]);
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

/// Runs escape, sending its run to `monitor`, on the given workers; its total.
fn escape(monitor: &Monitor, env: &[(&str, &str)]) -> String {
    let out = Command::new(sibling("escape"))
        .args(["--width", "512", "--height", "512", "--max-iter", "300"])
        .env("XC_PAR_TRACE", format!("127.0.0.1:{}", monitor.trace))
        .env_remove("XC_PAR_REMOTE")
        .env_remove("XC_PAR_POOL")
        .env_remove("XC_PAR_SECRET")
        .envs(env.iter().copied())
        .output()
        .expect("escape runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_page_in_chromium_shows_the_daemon_live_and_a_run_as_it_arrives() {
    let Some(browser) = xcd_e2e::browser::Browser::start_or_skip() else { return };
    let pins = tempfile::tempdir().expect("a home for xcmon's pins");
    let home = pins.path().to_string_lossy().into_owned();
    let monitor = xcmon(&[("XC_PAR_SECRET", "s3cret"), ("XCC_HOME", &home)]);
    let daemon = Daemon::build(sibling("xcd")).secret("s3cret").args(&["-pool", "render"]).start();
    browser.open(&format!("http://127.0.0.1:{}/", monitor.page));
    assert_eq!(browser.text("h1").as_deref(), Some("xcmon"));
    browser.wait_for_text("#daemons", &format!(":{}", daemon.port), Duration::from_secs(30));
    // xcmon read the daemon itself, twice over (a chart needs two readings): its device's memory
    // and a flat throughput chart, before the program runs. (One failed first reading, say
    // while the pins file was being written, shows the row without a chart.)
    let row = format!("tr[data-daemon$=':{}']", daemon.port);
    browser.wait_for(&row, "two readings of the daemon", Duration::from_secs(30), |text| {
        text.contains("tiles in flight") && text.contains("now 0.00 items/s")
    });
    assert!(browser.text("#runs").unwrap_or_default().contains("No runs yet"));
    // A mark in the page's memory: still there at the end means the page never reloaded.
    browser.eval("window.xcmonMark = 42; return 0;");

    let program = [("XC_PAR_SECRET", "s3cret"), ("XCC_HOME", home.as_str()), ("XC_PAR_WORKERS", "remote")];
    let remote = format!("127.0.0.1:{}", daemon.port);
    let total = escape(&monitor, &[program[0], program[1], program[2], ("XC_PAR_REMOTE", remote.as_str())]);
    let runs = browser.wait_for_text("#runs", "escape", Duration::from_secs(30));
    assert!(runs.contains("remote:127.0.0.1:"), "the run's split names the daemon's worker: {runs}");
    assert_eq!(escape(&monitor, &[("XC_PAR_WORKERS", "cpu")]), total, "the same total on the CPU");
    browser.wait_for_text("#runs", "cpu 100%", Duration::from_secs(30));
    // The daemon's chart shows the items it did (every 2 s xcmon reads it again).
    let live = browser.wait_for(&row, "a throughput peak above 0", Duration::from_secs(30), |text| {
        text.contains("peak ") && !text.contains("peak 0.00 items/s")
    });
    assert!(live.contains("llvmpipe") && live.contains("GiB"), "memory read from /v1/devices: {live}");
    assert!(live.contains("tiles in flight on vulkan:llvmpipe"), "a chart of each device's tiles in flight: {live}");
    // That chart shows the run too: its tiles, however short, counted by the time they took.
    browser.wait_for(&row, "tiles in flight above 0", Duration::from_secs(30), |text| {
        text.split("peak ").any(|rest| {
            let mut words = rest.split_whitespace();
            let value = words.next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            value > 0.0 && words.next().is_some_and(|unit| unit.starts_with("tile"))
        })
    });
    // A refusal shows by its code among the daemon's recent work.
    let unknown = daemon.url(&format!("/v1/blocks/{}/tile?count=1", "00".repeat(32)));
    let _ = xcd_e2e::curl(&["-X", "POST", "-H", "Authorization: Bearer s3cret", &unknown]);
    browser.wait_for_text(&row, "refusals, last 5 min: unknown_block 1", Duration::from_secs(30));
    assert_eq!(browser.eval("return window.xcmonMark;"), serde_json::json!(42), "the page reloaded");
    let html = browser.html();
    assert!(html.contains("<svg") && html.contains("<polyline"), "bars and chart drawn: {html}");
    // The chart says what it shows in the drawing itself: the unit, the value axis from 0, the
    // time axis up to now, the peak and the latest figure.
    let drawn = browser.eval(&format!("return document.querySelector(\"{row} figure.chart svg\").textContent;"));
    let drawn = drawn.as_str().unwrap_or_default().to_owned();
    for part in ["items/s", "0", "now", "peak ", "−"] {
        assert!(drawn.contains(part), "{part:?} in the chart's drawing: {drawn}");
    }
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xcmon");
    let shot = browser.screenshot(&shots.join("page.png"));
    assert!(std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 10_000, "a real screenshot");
    // A phone's width and a wide screen's: the chart fits the first and stays its size on the second.
    for (name, width, height) in [("page-phone.png", 390, 844), ("page-wide.png", 1600, 900)] {
        browser.resize(width, height);
        let fits = browser.eval(
            "const r = document.querySelector('figure.chart svg').getBoundingClientRect(); \
             return [r.width, r.right, document.documentElement.clientWidth, document.documentElement.scrollWidth];",
        );
        let [chart, right, view, page] = [0, 1, 2, 3].map(|i| fits[i].as_f64().unwrap_or(f64::NAN));
        assert!(chart > 100.0 && chart <= 360.0, "the chart is {chart} px wide at {width}");
        assert!(
            right <= view && page <= view,
            "at {width} px the chart ends at {right}, the page at {page}: wider than {view}"
        );
        browser.screenshot(&shots.join(name));
    }
    browser.resize(1200, 900);

    // The remote run's own page (runs are numbered as they arrive: it was the first) draws its
    // timeline: a lane per lane of the daemon's worker, a bar per tile.
    browser.open(&format!("http://127.0.0.1:{}/runs/0", monitor.page));
    let lanes = browser.wait_for_text("table.lanes", "remote:127.0.0.1:", Duration::from_secs(10));
    assert!(lanes.contains("(lane 1)") && lanes.contains("time from the run's start"), "{lanes}");
    let bars = browser.eval("return document.querySelectorAll('td.bars rect').length;").as_u64().unwrap_or(0);
    assert!(bars >= 3, "a bar per tile: {bars}");
    browser.screenshot(&shots.join("run.png"));

    // Sixteen workers with hostile names, sent as a program would: escaped, one lane each, and the
    // page fits a phone.
    let record = hostile_record();
    let mut sender = std::net::TcpStream::connect(("127.0.0.1", monitor.trace)).expect("the trace port");
    std::io::Write::write_all(&mut sender, record.as_bytes()).expect("the record sent");
    browser.open(&format!("http://127.0.0.1:{}/", monitor.page));
    browser.wait_for_text("#runs", "<b>blur</b>", Duration::from_secs(10));
    browser.open(&format!("http://127.0.0.1:{}/runs/2", monitor.page));
    assert_eq!(browser.text("h1").as_deref(), Some("<b>blur</b>\"'"), "the name shown as text");
    assert_eq!(browser.eval("return document.querySelectorAll('b, script[src]').length;"), serde_json::json!(0));
    let rows = browser.eval("return document.querySelectorAll('table.lanes tr').length;").as_u64().unwrap_or(0);
    assert_eq!(rows, 17, "16 lanes and the time axis");
    let text = browser.text("section.timeline").unwrap_or_default();
    assert!(text.contains("stopped: gone <i>away</i>") && text.contains("merged"), "{text}");
    for (name, width, height) in [("run-hostile-wide.png", 1600, 900), ("run-hostile-phone.png", 390, 844)] {
        browser.resize(width, height);
        browser.screenshot(&shots.join(name));
        let widths =
            browser.eval("return [document.documentElement.clientWidth, document.documentElement.scrollWidth];");
        let [view, page] = [0, 1].map(|i| widths[i].as_f64().unwrap_or(f64::NAN));
        assert!(page <= view, "at {width} px the run's page is {page} px wide, wider than {view}");
    }
}

/// A trace record of 16 workers whose names are markup, each with three tiles, one stopped.
fn hostile_record() -> String {
    let workers: Vec<serde_json::Value> = (0..16)
        .map(|i| {
            serde_json::json!({
                "kind": if i % 2 == 0 { "remote" } else { "gpu" },
                "name": format!("remote:<b>host{i}</b>:\"dev'{i}\""),
                "items": 3000, "tiles": 3, "busy_seconds": 0.3,
                "failure": if i == 5 { Some("gone <i>away</i>") } else { None },
            })
        })
        .collect();
    let spans: Vec<serde_json::Value> = (0..16)
        .flat_map(|w| {
            (0..3).map(move |t| {
                serde_json::json!({"worker": w, "lane": 0, "start_us": t * 150_000 + w * 5_000,
                    "end_us": t * 150_000 + w * 5_000 + 100_000, "items": 1000, "tiles": 1,
                    "failed": w == 5 && t == 2, "measuring": t == 0})
            })
        })
        .collect();
    let run = serde_json::json!({
        "version": "0.1.0", "program": "<b>blur</b>", "pid": 1, "source": "<b>main.rs</b>:1",
        "block": "<b>blur</b>\"'", "items": 48000, "tiles": 48, "started_ms": 1_764_650_000_000_u64,
        "seconds": 0.5, "workers": workers, "spans": spans, "merged": true,
    });
    format!("{run}\n")
}
