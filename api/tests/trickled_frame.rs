//! The real server in-process over TLS, on this machine's first device (llvmpipe where there is
//! no GPU): a tile frame kept alive a byte at a time (each byte inside the stream's idle limit)
//! ends the stream once the frame is past its time to arrive, and the daemon serves on.

use std::time::{Duration, Instant};

mod common;

use futures_util::StreamExt;
use xcd_api::Limits;
use xcd_wire::frame::STREAM_TAG;
use xcd_wire::{FrameSplitter, ResultFrame, Tile, TileFrame};

#[tokio::test(flavor = "multi_thread")]
async fn a_frame_trickled_a_byte_at_a_time_ends_its_stream() {
    let Some(device) = common::first_device() else { return };
    let limits = Limits { stream_idle: Duration::from_secs(1), ..Limits::default() };
    let server = common::Server::start(limits, vec![device]).await;
    let base = server.base.clone();
    let escape = common::register(&base, "escape").await;
    let client = xcd_e2e::client();

    // A whole frame first (answered), then half of the next, then one byte every 300 ms: never
    // idle for the stream's 1 s, but the frame is due 1 s after it began.
    let tile = |tag| {
        TileFrame {
            tag,
            tile: Tile { start: 0, count: 64 },
            params: vec![8, 8, 10],
            wholes: vec![],
            inputs: Default::default(),
        }
        .encode()
    };
    let (first, second) = (tile(1), tile(2));
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    tx.send(Ok(first)).await.expect("queued");
    tx.send(Ok(second[..second.len() / 2].to_vec())).await.expect("queued");
    let rest = second[second.len() / 2..].to_vec();
    let trickle = tokio::spawn(async move {
        for byte in rest.into_iter().take(40) {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if tx.send(Ok(vec![byte])).await.is_err() {
                return;
            }
        }
        // Held open, as the attacker would.
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let body = reqwest::Body::wrap_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }));
    let started = Instant::now();
    let response =
        client.post(format!("{base}/v1/blocks/{}/tiles", escape.id())).body(body).send().await.expect("answered");
    assert_eq!(response.status(), 200);
    let mut results = response.bytes_stream();
    let mut splitter = FrameSplitter::new(1 << 20);
    let mut seen = Vec::new();
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout(Duration::from_secs(20), results.next()).await {
        splitter.push(&chunk);
        while let Some(frame) = splitter.next_frame().expect("the daemon's framing") {
            seen.push(ResultFrame::decode(&frame).expect("a result frame"));
        }
        if seen.iter().any(|r| matches!(r, ResultFrame::Failed { tag: STREAM_TAG, .. })) {
            break;
        }
    }
    let took = started.elapsed();
    assert!(matches!(seen.first(), Some(ResultFrame::Done { tag: 1, .. })), "the whole frame is answered: {seen:?}");
    match seen.last() {
        Some(ResultFrame::Failed { tag: STREAM_TAG, problem }) => {
            assert_eq!(problem.code, "bad_frame");
            assert!(problem.detail.contains("to arrive"), "{}", problem.detail);
        }
        other => panic!("the stream goes on for a trickled frame: {other:?}"),
    }
    assert!(took < Duration::from_secs(6), "ended after {took:?}, with bytes still trickling");
    trickle.abort();

    let health = client.get(format!("{base}/healthz")).send().await.expect("served");
    assert_eq!(health.status(), 200);
    server.stop().await;
}
