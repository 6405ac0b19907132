//! The real server in-process: a client that trickles an HTTP/1.1 request's headers a line at a
//! time (slowloris) is cut off when the header limit runs out, however steadily it trickles, and
//! other clients are served meanwhile.

mod common;

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xcd_api::Limits;

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_trickles_its_headers_is_cut_off() {
    let limits = Limits { header_read: Duration::from_secs(1), ..Limits::default() };
    let server = common::Server::start_plain(limits, Vec::new()).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.expect("connected");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: xcd\r\n").await.expect("sent");
    let started = Instant::now();
    let mut closed = false;
    let mut answer = Vec::new();
    for i in 0..100 {
        // A header line every 200 ms: never the blank line that ends them.
        if slow.write_all(format!("X-Slow-{i}: still here\r\n").as_bytes()).await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 1024];
        match tokio::time::timeout(Duration::from_millis(200), slow.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        let health =
            xcd_e2e::client().get(format!("{}/healthz", server.base)).send().await.expect("another client is served");
        assert_eq!(health.status(), 200);
    }
    let took = started.elapsed();
    assert!(closed, "still connected after {took:?}: {}", String::from_utf8_lossy(&answer));
    assert!(took < Duration::from_secs(5), "cut off after {took:?}");
    server.stop().await;
}
