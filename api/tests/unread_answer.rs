//! The real server in-process over h2c, on this machine's first device (llvmpipe where there is
//! no GPU): a single tile's answer that the client never reads (HTTP/2 flow control then holds
//! it in the daemon) is dropped, with its connection, once past its time (the stream limit and a
//! second per MiB), and the daemon serves on.

use std::time::{Duration, Instant};

mod common;

use xcd_api::Limits;

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_never_read_is_dropped_in_time() {
    let Some(device) = common::first_device() else { return };
    let limits = Limits { stream_idle: Duration::from_secs(1), ..Limits::default() };
    let server = common::Server::start_plain(limits, vec![device]).await;
    let base = server.base.clone();
    let escape = common::register(&base, "escape").await;

    // An HTTP/2 client that reads nothing of the answer: its windows (64 KiB) fill, and the rest
    // of the 4 MiB answer (1,048,576 items, due within 1 s + 4 s) stays with the daemon.
    let tcp = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.expect("connected");
    let (send, conn) = h2::client::handshake(tcp).await.expect("an HTTP/2 handshake");
    let opened = Instant::now();
    let connection = tokio::spawn(async move {
        let _ = conn.await;
        opened.elapsed()
    });
    let uri = format!("{base}/v1/blocks/{}/tile?count=1048576&params=1024,1024,4", escape.id());
    let request = axum::http::Request::post(uri).body(()).expect("a request");
    let mut ready = send.ready().await.expect("ready");
    let (response, _) = ready.send_request(request, true).expect("sent");
    let response = response.await.expect("answered");
    assert_eq!(response.status(), 200);
    let lived = tokio::time::timeout(Duration::from_secs(20), connection).await.expect("closed by the daemon");
    let lived = lived.expect("the connection task");
    assert!(lived >= Duration::from_secs(4), "not before its time: {lived:?}");
    drop(response);

    let health = xcd_e2e::client().get(format!("{base}/healthz")).send().await.expect("served");
    assert_eq!(health.status(), 200);
    server.stop().await;
}
