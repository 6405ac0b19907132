//! The real server in-process over TLS, on this machine's first device (llvmpipe where there is
//! no GPU), with a small budget of tile data (`Limits::tile_bytes`): streams that want more than
//! it wait for room and are all served, each tile right; a single tile without room is `busy`
//! while a stream whose results are not read holds the budget, and is served once the daemon has
//! given that stream up and dropped its connection with what it held.

use std::time::{Duration, Instant};

mod common;

use futures_util::StreamExt;
use xcd_api::Limits;
use xcd_wire::{FrameSplitter, ResultFrame, Tile, TileFrame};

/// 65,536 escape pixels: 256 KiB of results, so a tile costs a little over 256 KiB.
const COUNT: u32 = 65_536;
const PARAMS: [u32; 3] = [256, 256, 40];

fn frame(tag: u32, start: u32) -> Vec<u8> {
    TileFrame {
        tag,
        tile: Tile { start, count: COUNT },
        params: PARAMS.to_vec(),
        wholes: vec![],
        inputs: Default::default(),
    }
    .encode()
}

fn expected(start: u32) -> Vec<u8> {
    (start..start + COUNT)
        .flat_map(|i| xcd_kernels::escape_pixel(i, PARAMS[0], PARAMS[1], PARAMS[2]).to_le_bytes())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_wanting_more_than_the_budget_wait_for_room_and_are_all_served() {
    let Some(device) = common::first_device() else { return };
    // Room for three tiles at once, in all; eight streams of six tiles each want far more.
    let limits = Limits { tile_bytes: 800 << 10, ..Limits::default() };
    let server = common::Server::start(limits, vec![device]).await;
    let escape = common::register(&server.base, "escape").await;
    let url = format!("{}/v1/blocks/{}/tiles", server.base, escape.id());
    let mut streams = Vec::new();
    for s in 0..8u32 {
        let url = url.clone();
        streams.push(tokio::spawn(async move {
            let frames: Vec<u8> = (0..6).flat_map(|t| frame(t, 0)).collect();
            let response = xcd_e2e::client().post(url).body(frames).send().await.expect("the stream opens");
            assert_eq!(response.status(), 200);
            let mut body = response.bytes_stream();
            let mut splitter = FrameSplitter::new(1 << 30);
            let mut tags = Vec::new();
            while let Some(chunk) = tokio::time::timeout(Duration::from_secs(60), body.next()).await.expect("results") {
                splitter.push(&chunk.expect("the stream reads"));
                while let Some(frame) = splitter.next_frame().expect("valid framing") {
                    match ResultFrame::decode(&frame).expect("a result frame") {
                        ResultFrame::Done { tag, outputs } => {
                            assert!(outputs[..] == expected(0)[..], "tile {tag} of stream {s} is right");
                            tags.push(tag);
                        }
                        ResultFrame::Failed { tag, problem } => panic!("tile {tag} of stream {s} failed: {problem:?}"),
                    }
                }
            }
            tags.sort_unstable();
            assert_eq!(tags, (0..6).collect::<Vec<_>>(), "stream {s} got every tile");
        }));
    }
    for stream in streams {
        stream.await.expect("a stream served");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_tile_is_busy_while_an_unread_stream_holds_the_budget_and_served_after() {
    let Some(device) = common::first_device() else { return };
    let limits = Limits { tile_bytes: 1 << 20, stream_idle: Duration::from_secs(4), ..Limits::default() };
    let server = common::Server::start(limits, vec![device]).await;
    let base = server.base.clone();
    let escape = common::register(&base, "escape").await;
    let single = format!("{base}/v1/blocks/{}/tile?count={COUNT}&params=256,256,40", escape.id());
    let tile = || async { xcd_e2e::client().post(&single).send().await.expect("answered") };
    assert_eq!(tile().await.status(), 200, "served while nothing else holds the budget");

    // Frames for ever; the answer's body is never read.
    let unread = common::unread_stream(&base, escape.id(), COUNT, 16).await;

    // Once the client's windows are full, the stream's results hold the whole budget.
    let deadline = Instant::now() + Duration::from_secs(4);
    let busy = loop {
        let answer = tile().await;
        if answer.status() == 503 {
            break answer;
        }
        assert_eq!(answer.status(), 200);
        assert!(Instant::now() < deadline, "a single tile was never busy while the budget was held");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let problem: serde_json::Value = busy.json().await.expect("a problem");
    assert_eq!(problem["code"], "busy", "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().contains("tile data"), "{problem}");

    // The daemon gives the stream up (results unread for 4 s), drops its connection with what
    // HTTP/2 still held of it, and the budget is free again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = tile().await;
        if answer.status() == 200 {
            assert_eq!(answer.bytes().await.expect("the tile")[..], expected(0)[..]);
            break;
        }
        assert!(Instant::now() < deadline, "the budget was never let go: {}", answer.status());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(unread);
    server.stop().await;
}
