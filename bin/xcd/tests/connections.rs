//! Connections as an attacker or a crowd would open them: a thousand idle TCP connections from one
//! address that never start TLS, against a daemon started with a soft open-file limit of 256 (as
//! services often are): it raises its own limit, keeps at most its share of unproven connections
//! from that address (each new one closes the oldest), keeps serving new clients throughout, and
//! closes the rest when their time to show the secret runs out. bin/xcd/tests/hostile.rs has many
//! addresses and requests without the secret.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_idle_connections_starve_no_one() {
    let daemon = xcd().secret(SECRET).under(&["prlimit", "--nofile=256:8192"]).args(&["-mdns", "false"]).start();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", daemon.pid())).expect("limits");
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or_default().to_owned();
    let soft: u64 = line.split_whitespace().nth(3).and_then(|w| w.parse().ok()).unwrap_or(0);
    assert!(soft > 4096, "raised from 256 to past its 4096 connections: {line}");
    let id = register(&daemon, "escape").await;
    let tile = daemon.url(&format!("/v1/blocks/{id}/tile?count=64&params=64,64,100"));
    let before = daemon.open_files();

    let idle: Vec<TcpStream> =
        (0..1000).map(|_| TcpStream::connect(("127.0.0.1", daemon.port)).expect("a connection")).collect();
    std::thread::sleep(Duration::from_millis(500));
    let held = daemon.open_files();
    assert!(
        held >= before + 32 && held <= before + 64 + 16,
        "the daemon holds one address's share (64): {before} files, then {held}"
    );
    for _ in 0..10 {
        assert!(new_client_served(&daemon, &tile));
    }
    // Their time to show the secret (10 s) closes every one that never spoke.
    let deadline = Instant::now() + Duration::from_secs(30);
    while daemon.open_files() > before + 10 {
        assert!(Instant::now() < deadline, "idle connections still open: {}", daemon.open_files());
        std::thread::sleep(Duration::from_millis(250));
    }
    drop(idle);
    assert!(new_client_served(&daemon, &tile));
}

/// A tile stream that is sent frames for ever and never read: how many frames the daemon took.
async fn unread_stream(
    daemon: &xcd_e2e::Daemon,
    id: &str,
    taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> reqwest::Response {
    use std::sync::atomic::Ordering;
    // 256 frames a chunk, as a client that batches its writes sends them (one tiny DATA frame per
    // tile would be a flood that h2 itself stops: see `a_flood_of_tiny_data_frames_…`).
    let frames = futures_util::stream::unfold(0u32, move |tag| {
        let taken = taken.clone();
        async move {
            taken.fetch_add(256, Ordering::SeqCst);
            // 65536 items: 256 KiB of results each.
            let chunk: Vec<u8> = (0..256).flat_map(|i| escape_frame(tag + i, 0, 65_536, 256, 256, 50)).collect();
            Some((Ok::<_, std::io::Error>(chunk), tag.wrapping_add(256)))
        }
    });
    xcd_e2e::client()
        .post(daemon.url(&format!("/v1/blocks/{id}/tiles")))
        .header("authorization", auth())
        .body(reqwest::Body::wrap_stream(frames))
        .send()
        .await
        .unwrap_or_else(|e| panic!("the stream opens: {e:?}\n{}", daemon.stderr()))
}

#[test]
fn streams_whose_results_are_never_read_hold_back_their_sender_not_the_daemon() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let id = runtime.block_on(register(&daemon, "escape"));
    let tile = daemon.url(&format!("/v1/blocks/{id}/tile?count=64&params=64,64,100"));
    let before = daemon.rss_kib() / 1024;
    // The careless clients live on a runtime of their own, shut down at the end: their
    // connections then close as a crashed program's would.
    let clients = tokio::runtime::Runtime::new().expect("a runtime");
    let taken: Vec<Arc<AtomicU64>> = (0..16).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let held: Vec<reqwest::Response> = clients.block_on(async {
        let mut held = Vec::new();
        for counter in &taken {
            held.push(unread_stream(&daemon, &id, counter.clone()).await);
        }
        held
    });
    // Flow control: once the windows and the daemon's small queue are full, nothing more is taken.
    let total = || taken.iter().map(|t| t.load(Ordering::SeqCst)).sum::<u64>();
    let mut last = 0;
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(500));
        let now = total();
        if now == last {
            break;
        }
        last = now;
    }
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(total(), last, "the senders were held back");
    // What a stream may have in flight is its HTTP/2 receive window and a few tiles: the frames
    // are small, the daemon computes only `depth` tiles ahead of a reader.
    let frame_bytes = escape_frame(0, 0, 65_536, 256, 256, 50).len() as u64;
    let per_stream = last * frame_bytes / 16;
    assert!(per_stream < 4 << 20, "{per_stream} bytes of frames taken per stream");
    let during = daemon.rss_kib() / 1024;
    assert!(during < before + 1024, "memory bounded: {before} MiB, then {during} MiB");
    for _ in 0..5 {
        assert!(new_client_served(&daemon, &tile), "a new client is served meanwhile");
    }
    // Gone: the daemon lets go of every stream.
    drop(held);
    clients.shutdown_timeout(Duration::from_secs(1));
    let page = daemon.url("/");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let out = xcd_e2e::curl(&["-H", &format!("Authorization: {}", auth()), &page]);
        if String::from_utf8_lossy(&out.stdout).contains("0 tile streams open") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "streams still open: {}", String::from_utf8_lossy(&out.stdout));
        std::thread::sleep(Duration::from_millis(250));
    }
    println!(
        "16 unread streams: {last} frames ({per_stream} bytes a stream) taken; daemon {before} MiB before, {during} MiB while held"
    );
}

/// A client that sends each small frame as a DATA frame of its own and reads nothing: h2 itself
/// ends that connection (GOAWAY, ENHANCE_YOUR_CALM, "too_many_data_frames") once the unread tiny
/// frames pass its budget; the daemon serves everyone else.
#[test]
fn a_flood_of_tiny_data_frames_loses_its_connection_not_the_daemon() {
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let id = runtime.block_on(register(&daemon, "escape"));
    let tile = daemon.url(&format!("/v1/blocks/{id}/tile?count=64&params=64,64,100"));
    let outcome = runtime.block_on(async {
        let tiny = futures_util::stream::unfold(0u32, |tag| async move {
            Some((Ok::<_, std::io::Error>(escape_frame(tag, 0, 65_536, 256, 256, 50)), tag.wrapping_add(1)))
        });
        let response = xcd_e2e::client()
            .post(daemon.url(&format!("/v1/blocks/{id}/tiles")))
            .header("authorization", auth())
            .body(reqwest::Body::wrap_stream(tiny))
            .send()
            .await;
        match response {
            Err(e) => format!("{e:?}"),
            Ok(response) => {
                // Opened before h2 gave up: reading ends with the connection's end.
                tokio::time::sleep(Duration::from_secs(3)).await;
                match tokio::time::timeout(Duration::from_secs(30), response.bytes()).await {
                    Ok(Ok(bytes)) => format!("ended after {} bytes", bytes.len()),
                    Ok(Err(e)) => format!("{e:?}"),
                    Err(_) => "still open".to_owned(),
                }
            }
        }
    });
    assert!(outcome != "still open", "{outcome}");
    for _ in 0..5 {
        assert!(new_client_served(&daemon, &tile));
    }
    println!("the flooding client: {outcome}");
}
