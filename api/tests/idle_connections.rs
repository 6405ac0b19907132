//! The real server in-process, over h2c: HTTP/2 connections that open no stream, however often
//! they send pings (and answer the server's), are closed once idle for the limit, while a
//! connection that keeps asking is kept, and other clients are served throughout.

mod common;

use std::time::{Duration, Instant};

use xcd_api::Limits;

/// An HTTP/2 connection from the `h2` crate, whose connection task answers the server's pings.
async fn connect(addr: &str) -> (h2::client::SendRequest<bytes::Bytes>, tokio::task::JoinHandle<Duration>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connected");
    let (send, mut conn) = h2::client::handshake(tcp).await.expect("an HTTP/2 handshake");
    let mut pings = conn.ping_pong().expect("pings");
    let opened = Instant::now();
    let task = tokio::spawn(async move {
        let mut conn = std::pin::pin!(conn);
        loop {
            tokio::select! {
                _ = conn.as_mut() => return opened.elapsed(),
                () = tokio::time::sleep(Duration::from_millis(200)) => {
                    // A ping of our own every 200 ms: alive, yet asking nothing.
                    let _ = tokio::time::timeout(Duration::from_millis(100), pings.ping(h2::Ping::opaque())).await;
                }
            }
        }
    });
    (send, task)
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_that_only_ping_are_closed_and_busy_ones_are_kept() {
    let limits = Limits { connection_idle: Duration::from_secs(1), ..Limits::default() };
    let server = common::Server::start_plain(limits, Vec::new()).await;
    let addr = server.base.trim_start_matches("http://").to_owned();

    let mut idle = Vec::new();
    for _ in 0..50 {
        idle.push(connect(&addr).await);
    }
    // One connection that asks for /healthz every 300 ms for 3 s, on the same connection.
    let (busy, busy_conn) = connect(&addr).await;
    let asked = Instant::now();
    let mut answers = 0;
    while asked.elapsed() < Duration::from_secs(3) {
        let request = axum::http::Request::get(format!("{}/healthz", server.base)).body(()).expect("request");
        let mut ready = busy.clone().ready().await.expect("the busy connection still takes requests");
        let (response, _) = ready.send_request(request, true).expect("sent");
        assert_eq!(response.await.expect("answered").status(), 200);
        answers += 1;
        let other = xcd_e2e::client().get(format!("{}/healthz", server.base)).send().await.expect("others served");
        assert_eq!(other.status(), 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(answers >= 8, "{answers} answers");
    let mut lives = Vec::new();
    for (_, task) in idle {
        let lived = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("an idle connection is closed")
            .expect("the connection task");
        assert!(lived >= Duration::from_millis(900) && lived < Duration::from_secs(3), "closed after {lived:?}");
        lives.push(lived);
    }
    lives.sort();
    println!("50 idle connections closed after {:?} to {:?}", lives[0], lives[lives.len() - 1]);
    assert!(!busy_conn.is_finished(), "the busy connection was kept");
    server.stop().await;
}
