//! The real server in-process over TLS, on this machine's first device (llvmpipe where there is
//! no GPU): a tile stream whose results are never read is closed once the stream limit runs out,
//! and the daemon lets go of it and serves on.

use std::time::{Duration, Instant};

mod common;

use xcd_api::Limits;
use xcd_wire::{Tile, TileFrame};

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_whose_results_are_never_read_is_closed() {
    let Some(device) = common::first_device() else { return };
    let limits = Limits { stream_idle: Duration::from_secs(1), ..Limits::default() };
    let server = common::Server::start(limits, vec![device]).await;
    let base = server.base.clone();
    let escape = common::register(&base, "escape").await;
    let client = xcd_e2e::client();

    // Frames for ever, in chunks of 64; the answer's body is never read.
    let frames = futures_util::stream::unfold(0u32, |tag| async move {
        let chunk: Vec<u8> = (0..64)
            .flat_map(|i| {
                let tile = Tile { start: 0, count: 65_536 };
                TileFrame { tag: tag + i, tile, params: vec![256, 256, 50], wholes: vec![], inputs: Default::default() }
                    .encode()
            })
            .collect();
        Some((Ok::<_, std::io::Error>(chunk), tag.wrapping_add(64)))
    });
    let unread = xcd_e2e::client()
        .post(format!("{base}/v1/blocks/{}/tiles", escape.id()))
        .body(reqwest::Body::wrap_stream(frames))
        .send()
        .await
        .expect("the stream opens");
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
