//! Hostile clients without the secret, against the real daemon over real TLS and HTTP/2 (issue
//! 18, docs/security.md "Before the secret"): connections that never speak, from many loopback
//! addresses and past every unproven slot; requests without the secret whose bodies never end.
//! Throughout, a client with the secret is served, and the daemon's memory stays put.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use futures_util::StreamExt;

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

/// Sends one request with `secret` over a new plain HTTP/1.1 connection from 127.`a`.`b`.`c`;
/// its status.
async fn from_address(port: u16, [a, b, c]: [u8; 3], secret: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, a, b, c)), 0)).expect("a loopback address");
    let mut tcp = socket.connect(SocketAddr::from(([127, 0, 0, 1], port))).await.expect("connected");
    let request =
        format!("GET /v1/capacity HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn churning_through_addresses_forgets_no_hold_and_stops_no_program() {
    more_open_files();
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false", "-plain"]).start();
    let port = daemon.port;
    // A program that has shown the secret on its connection.
    let _ = xcd_e2e::client(); // installs the TLS crypto provider reqwest needs
    let program = reqwest::Client::builder().http1_only().build().expect("a client");
    let capacity = daemon.url("/v1/capacity");
    let served =
        || async { program.get(&capacity).header("authorization", auth()).send().await.map(|r| r.status().as_u16()) };
    assert_eq!(served().await.ok(), Some(200));

    // One address guesses until it is held back.
    let held = [0, 0, 5];
    for _ in 0..5 {
        assert_eq!(from_address(port, held, "wrong").await, 401);
    }
    assert_eq!(from_address(port, held, SECRET).await, 429, "held back after 5");

    // 3,000 other addresses, one wrong secret each, 32 at a time.
    let mut statuses = std::collections::HashMap::<u16, usize>::new();
    let addresses: Vec<[u8; 3]> = (0..3000u32).map(|i| [1 + (i >> 16) as u8, (i >> 8) as u8, i as u8]).collect();
    for batch in addresses.chunks(32) {
        let sent: Vec<_> = batch.iter().map(|&a| tokio::spawn(from_address(port, a, "wrong"))).collect();
        for status in sent {
            *statuses.entry(status.await.expect("sent")).or_default() += 1;
        }
        assert_eq!(served().await.ok(), Some(200), "the program is served throughout");
    }
    let compared = statuses.get(&401).copied().unwrap_or(0);
    let refused = statuses.get(&429).copied().unwrap_or(0);
    assert!(compared <= 100 + 10 * 60, "no faster than the total budget: {statuses:?}");
    assert_eq!(compared + refused, 3000, "{statuses:?}");

    // The held address is remembered: once its hold is over, one more wrong secret holds it again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let again = from_address(port, held, "wrong").await;
    assert!(again == 401 || again == 429, "{again}");
    assert_eq!(from_address(port, held, SECRET).await, 429, "still counted: held again at once");
    assert_eq!(served().await.ok(), Some(200));
}

/// A client with its connections from 127.0.0.`last`.
fn client_at(last: u8) -> reqwest::Client {
    let _ = xcd_e2e::client(); // installs the TLS crypto provider reqwest needs
    reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
        .build()
        .expect("a client")
}

/// `-memory` in the test below: 80 MiB for uploads, 80 MiB for tile data, 160 MiB for whole
/// arrays, 20 MiB for block descriptions.
const MEMORY_MIB: u64 = 340;

#[tokio::test(flavor = "multi_thread")]
async fn with_the_secret_every_attack_at_once_stays_under_the_memory_ceiling() {
    more_open_files();
    let memory = MEMORY_MIB.to_string();
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false", "-memory", &memory]).start();
    let escape = register(&daemon, "escape").await;
    let poly = register(&daemon, "poly").await;
    let tile = daemon.url(&format!("/v1/blocks/{escape}/tile?count=64&params=64,64,100"));
    assert!(new_client_served(&daemon, &tile));
    let started_kib = daemon.rss_kib();
    let mut attacks = Vec::new();

    // Stalled uploads from 127.0.0.3: 16 arrays of a declared 64 MiB, 1 MiB sent, then nothing.
    for i in 0..16u8 {
        let url = daemon.url(&format!("/v1/arrays/{}", format!("{i:02x}").repeat(32)));
        attacks.push(tokio::spawn(async move {
            let first =
                futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(vec![i; 1 << 20])) });
            let body = reqwest::Body::wrap_stream(first.chain(futures_util::stream::pending()));
            let _ = client_at(3)
                .put(url)
                .header("authorization", auth())
                .header("content-length", (64u64 << 20).to_string())
                .body(body)
                .send()
                .await;
        }));
    }
    // From 127.0.0.4, tile streams whose results are never read: 6, with 4 MiB of results a tile.
    let mut unread = Vec::new();
    for _ in 0..6 {
        let frames = futures_util::stream::unfold(0u32, |tag| async move {
            Some((Ok::<_, std::io::Error>(escape_frame(tag, 0, 1 << 20, 1024, 1024, 2)), tag.wrapping_add(1)))
        });
        let url = daemon.url(&format!("/v1/blocks/{escape}/tiles"));
        unread.push(
            client_at(4).post(url).header("authorization", auth()).body(reqwest::Body::wrap_stream(frames)).send(),
        );
    }
    let unread_streams = futures_util::future::join_all(unread).await;
    // From 127.0.0.4 too, single tiles of 16 MiB whose answers are never read: 16.
    let mut answers = Vec::new();
    for _ in 0..16 {
        let url = daemon.url(&format!("/v1/blocks/{escape}/tile?count={}&params=2048,2048,2", 4 << 20));
        answers.push(client_at(4).post(url).header("authorization", auth()).send());
    }
    let unread_answers = futures_util::future::join_all(answers).await;
    let busy = unread_answers.iter().filter(|a| a.as_ref().is_ok_and(|r| r.status() == 503)).count();
    // From 127.0.0.7, tile frames kept alive a byte a second: 4 streams, each declaring a frame of
    // 16 MiB of inputs (saxpy, 1 Mi items) and sending its header and a byte at a time.
    let saxpy = register(&daemon, "saxpy").await;
    for _ in 0..4 {
        let frame = xcd_wire::TileFrame {
            tag: 1,
            tile: xcd_wire::Tile { start: 0, count: 1 << 20 },
            params: vec![1.0f32.to_bits()],
            wholes: vec![],
            inputs: vec![0u8; 8 << 20].into(),
        }
        .encode();
        let head = Bytes::copy_from_slice(&frame[..64]);
        let trickle = futures_util::stream::once(async move { Ok::<_, std::io::Error>(head) }).chain(
            futures_util::stream::unfold((), |()| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Some((Ok::<_, std::io::Error>(Bytes::from_static(&[0])), ()))
            }),
        );
        let url = daemon.url(&format!("/v1/blocks/{saxpy}/tiles"));
        let request = client_at(7).post(url).header("authorization", auth()).body(reqwest::Body::wrap_stream(trickle));
        attacks.push(tokio::spawn(async move {
            let _ = request.send().await;
            std::future::pending::<()>().await;
        }));
    }
    // From 127.0.0.5, whole arrays: 8 distinct ones of 32 MiB, each used in a tile (twice their share).
    let client = client_at(5);
    for i in 0..8u32 {
        let coef: Vec<u8> = (0..(8u32 << 20)).flat_map(|k| ((k ^ i) as f32).to_le_bytes()).collect();
        let hash: String = xcd_wire::content_hash(&coef).iter().map(|b| format!("{b:02x}")).collect();
        let put = client.put(daemon.url(&format!("/v1/arrays/{hash}"))).header("authorization", auth()).body(coef);
        let status = put.send().await.map(|r| r.status().as_u16());
        assert!(matches!(status, Ok(201) | Ok(503)), "array {i}: {status:?}");
        let url = daemon.url(&format!("/v1/blocks/{poly}/tile?count=1024&params=3&whole={hash}"));
        let _ = client.post(url).header("authorization", auth()).body(vec![0u8; 4096]).send().await;
    }
    // Block registrations past the blocks' share: 60 small ones, 6 of 8 MiB.
    let client = client_at(6);
    let block = xcd_kernels::all().into_iter().find(|b| b.desc.name == "escape").expect("escape");
    let mut refused_blocks = 0;
    for i in 0..66 {
        let mut desc = (*block.desc).clone();
        desc.name = format!("escape{i}");
        if i >= 60 {
            let wgsl = desc.forms.wgsl.take().unwrap_or_default();
            desc.forms.wgsl = Some(format!("{wgsl}\n// {}\n", "x".repeat(8 << 20)));
        }
        let response = client.post(daemon.url("/v1/blocks")).header("authorization", auth()).json(&desc).send().await;
        refused_blocks += usize::from(response.is_ok_and(|r| r.status() == 503 || r.status() == 413));
    }
    // Without the secret: 300 connections that never speak, 24 bodies that never end.
    let mut idle = Vec::new();
    for i in 0..300 {
        idle.push(connect_from(10 + (i % 10) as u8, daemon.port).await);
    }
    for _ in 0..24 {
        let endless = futures_util::stream::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 16_384])));
        let url = daemon.url("/v1/blocks");
        attacks.push(tokio::spawn(async move {
            let _ = xcd_e2e::client().post(url).body(reqwest::Body::wrap_stream(endless)).send().await;
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    // A new client at another address is served in the middle of it all: the attacker's address
    // holds at most half the tile data.
    assert!(new_client_served_from(&daemon, &tile, "127.0.0.2"));

    let peak_mib = daemon.peak_rss_kib() / 1024;
    // docs/security.md: 512 MiB + -memory, and on a device that computes in host memory
    // (llvmpipe, here) its copy of the whole arrays, at most their share.
    let ceiling_mib = 512 + MEMORY_MIB + MEMORY_MIB / 17 * 8;
    eprintln!(
        "memory: {} MiB at the start, {peak_mib} MiB at the most (ceiling {ceiling_mib} MiB); {busy} of 16 unread \
         single tiles busy, {refused_blocks} of 66 blocks refused",
        started_kib / 1024
    );
    assert!(peak_mib < ceiling_mib, "{peak_mib} MiB is past the ceiling of {ceiling_mib} MiB");
    assert!(busy > 0, "the tile data's share ran out");
    assert!(refused_blocks > 0, "the blocks' share ran out");

    // The attackers go; what they held is let go. What the daemon keeps for work to come stays:
    // whole arrays (their share, and llvmpipe's copy of as much in host memory), blocks, and the
    // device's buffers for escape's largest tile (16 MiB, and as much to read back). The margin
    // is the allocators' own keeping (glibc's arenas for llvmpipe's threads, mimalloc's pages, a
    // staging block): measured, about 50 MiB for the first seconds, then 16 MiB. With wgpu's
    // default memory hints some 120 MiB more stayed (/proc/PID/smaps: a 256 MiB block of its
    // allocator, resident in full around the arrays still cached); the device now asks for
    // smaller blocks (wgpu_backend's `request_device`), and this fails if they come back.
    for attack in attacks {
        attack.abort();
    }
    drop((unread_streams, unread_answers, idle));
    let (arrays_mib, blocks_mib) = (MEMORY_MIB / 17 * 8, MEMORY_MIB / 17);
    let kept_mib = 2 * arrays_mib + blocks_mib + 32;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now_mib = daemon.rss_kib() / 1024;
        if now_mib < started_kib / 1024 + kept_mib + 64 {
            eprintln!("memory: {now_mib} MiB after (kept for work to come: at most {kept_mib} MiB)");
            break;
        }
        assert!(Instant::now() < deadline, "memory did not drop back: {now_mib} MiB");
    }
    assert!(new_client_served(&daemon, &tile));
}
