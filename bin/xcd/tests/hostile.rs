//! Hostile clients without the secret, against the real daemon over real TLS and HTTP/2 (issue
//! 18, docs/security.md "Before the secret"): connections that never speak, from many loopback
//! addresses and past every unproven slot; requests without the secret whose bodies never end.
//! Throughout, a client with the secret is served, and the daemon's memory stays put.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;

/// A TCP connection to the daemon from loopback address 127.0.0.`from`.
async fn connect_from(from: u8, port: u16) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, from)), 0)).expect("a loopback address");
    socket.connect(SocketAddr::from(([127, 0, 0, 1], port))).await.expect("connected")
}

/// Whether the daemon has closed this connection (end of stream or reset), without waiting.
fn closed(stream: &tokio::net::TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.try_read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// This test process opens over a thousand sockets: past a soft limit of 1,024.
fn more_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < 4096 {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard.min(8192), hard);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unproven_connections_keep_out_no_client_with_the_secret() {
    more_open_files();
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    let id = register(&daemon, "escape").await;
    let tile = daemon.url(&format!("/v1/blocks/{id}/tile?count=64&params=64,64,100"));
    assert!(new_client_served(&daemon, &tile));
    let (files_before, rss_before) = (daemon.open_files(), daemon.rss_kib());

    // 1. 1,000 connections that never start TLS, 50 from each of 20 addresses: more than every
    //    unproven slot (512), and 50 is within each address's share (64).
    let mut idle = Vec::new();
    for i in 0..1000 {
        idle.push(connect_from(10 + (i % 20) as u8, daemon.port).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = daemon.open_files();
    assert!(held <= files_before + 512 + 32, "at most every unproven slot: {files_before} files, then {held}");
    let pushed_out = idle.iter().filter(|s| closed(s)).count();
    assert!(pushed_out >= 1000 - 512 - 32, "the oldest made room: {pushed_out} of 1000 closed");
    for _ in 0..5 {
        assert!(new_client_served(&daemon, &tile));
    }

    // 2. 70 more from one address: past its share, its own oldest go.
    let mut one = Vec::new();
    for _ in 0..70 {
        one.push(connect_from(99, daemon.port).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let gone = one.iter().filter(|s| closed(s)).count();
    assert!(gone >= 6, "one address holds at most 64: {gone} of 70 closed");
    assert!(!closed(&one[69]), "the newest is kept");
    assert!(new_client_served(&daemon, &tile));

    // 3. Requests without the secret whose bodies never end, 4 at once from each of 12 clients
    //    (at most 48 connections: within one address's share): each is answered within the time
    //    the daemon spends reading and dropping a refused body (5 s, 32 MiB), none is kept.
    let started = Instant::now();
    let mut answers = Vec::new();
    for _ in 0..12 {
        let client = xcd_e2e::client();
        for _ in 0..4 {
            let endless = futures_util::stream::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 16_384])));
            let url = daemon.url("/v1/blocks");
            let client = client.clone();
            answers.push(tokio::spawn(async move {
                client.post(url).body(reqwest::Body::wrap_stream(endless)).send().await.map(|r| r.status().as_u16())
            }));
        }
    }
    for answer in answers {
        let status = tokio::time::timeout(Duration::from_secs(10), answer).await;
        assert!(matches!(status, Ok(Ok(Ok(401)))), "refused, the body not kept: {status:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(new_client_served(&daemon, &tile));
    let rss = daemon.rss_kib();
    assert!(
        rss < rss_before + 64 * 1024,
        "unread bodies are not held: {} MiB before, {} MiB after",
        rss_before / 1024,
        rss / 1024
    );

    // 4. Every connection that never showed the secret is closed within its 10 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    while daemon.open_files() > files_before + 8 {
        assert!(Instant::now() < deadline, "unproven connections still open: {} files", daemon.open_files());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(idle.iter().chain(&one).all(closed), "each closed by the daemon");
    assert!(new_client_served(&daemon, &tile));
}

#[test]
fn a_tls_connection_that_never_shows_the_secret_is_closed() {
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    // openssl completes the handshake, then sends nothing, keeping its side open.
    let mut s_client = std::process::Command::new("openssl")
        .args(["s_client", "-quiet", "-connect", &format!("127.0.0.1:{}", daemon.port), "-alpn", "h2"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl runs (Debian package openssl)");
    let started = Instant::now();
    let ended = loop {
        if let Ok(Some(_)) = s_client.try_wait() {
            break started.elapsed();
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = s_client.kill();
            panic!("the daemon kept a connection that showed no secret for 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(ended >= Duration::from_secs(8), "closed after its time, not before: {ended:?}");
    drop(s_client.stdin.take());
}
