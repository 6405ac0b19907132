//! The real server in-process over TLS, on this machine's first device (llvmpipe where there is
//! no GPU): a tile stream whose results are never read is closed once the stream limit runs out,
//! and the daemon lets go of it and serves on.

use std::time::{Duration, Instant};

mod common;

use xcd_api::Limits;

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_whose_results_are_never_read_is_closed() {
    let Some(device) = common::first_device() else { return };
    let limits = Limits { stream_idle: Duration::from_secs(1), ..Limits::default() };
    let server = common::Server::start(limits, vec![device]).await;
    let base = server.base.clone();
    let escape = common::register(&base, "escape").await;
    let client = xcd_e2e::client();

    // Frames for ever, in chunks of 64; the answer's body is never read.
    let unread = common::unread_stream(&base, escape.id(), 65_536, 64).await;
    let page = || async { client.get(format!("{base}/")).send().await.expect("sent").text().await.expect("text") };
    assert!(page().await.contains("1 tile streams open"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = page().await;
        if text.contains("0 tile streams open") {
            assert!(text.contains("results_unread"), "kept among the refusals: {text}");
            break;
        }
        assert!(Instant::now() < deadline, "the unread stream is still open: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(unread);
    let health = client.get(format!("{base}/healthz")).send().await.expect("served");
    assert_eq!(health.status(), 200);
    server.stop().await;
}
