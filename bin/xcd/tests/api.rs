//! The REST API and the tile stream against a real daemon over real TLS and HTTP/2: every
//! refusal code, a single tile with curl, results streamed back before the request ends, bad
//! input answered while the daemon keeps serving, declines, and metrics.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use xcd_wire::rest::Problem;
use xcd_wire::{ResultFrame, TileFrame};

async fn problem(response: reqwest::Response) -> (u16, Problem, Option<String>) {
    let status = response.status().as_u16();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(content_type, "application/problem+json");
    let problem: Problem = response.json().await.expect("a problem document");
    assert_eq!(problem.status, status);
    (status, problem, retry)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_has_its_code_and_says_what_to_do() {
    let daemon = xcd().secret(SECRET).start();
    let client = xcd_e2e::client();
    let get = |path: &str| client.get(daemon.url(path));

    let (status, p, _) = problem(get("/v1/devices").send().await.expect("sent")).await;
    assert_eq!((status, p.code.as_str()), (401, "secret_refused"));
    assert!(p.detail.contains("refused the secret"), "{}", p.detail);
    let (_, p, _) = problem(get("/v1/devices").bearer_auth("wrong").send().await.expect("sent")).await;
    assert_eq!(p.code, "secret_refused");

    let (status, p, _) = problem(
        get("/v1/version").header("authorization", auth()).header("xc-version", "0.0.1").send().await.expect("sent"),
    )
    .await;
    assert_eq!((status, p.code.as_str()), (409, "version_mismatch"));
    assert!(p.detail.contains("0.0.1") && p.detail.contains(env!("CARGO_PKG_VERSION")), "names both: {}", p.detail);

    let other = if cfg!(target_endian = "little") { "big-64" } else { "little-64" };
    let (status, p, _) = problem(
        get("/v1/version").header("authorization", auth()).header("xc-layout", other).send().await.expect("sent"),
    )
    .await;
    assert_eq!((status, p.code.as_str()), (409, "layout_mismatch"));
    assert!(p.detail.contains(other) && p.detail.contains(&xcd_wire::Layout::native().to_string()), "{}", p.detail);

    // A block that carries only PTX: llvmpipe takes SPIR-V or WGSL.
    let mut ptx_only = (*xcd_kernels::saxpy().desc).clone();
    ptx_only.forms = xcd_wire::Forms { ptx: ptx_only.forms.ptx.clone(), ..Default::default() };
    let (status, p, _) = problem(
        client
            .post(daemon.url("/v1/blocks"))
            .header("authorization", auth())
            .json(&ptx_only)
            .send()
            .await
            .expect("sent"),
    )
    .await;
    assert_eq!((status, p.code.as_str()), (422, "no_form"));
    assert!(p.detail.contains("send the block's WGSL"), "{}", p.detail);

    let (status, p, _) = problem(
        client
            .post(daemon.url("/v1/blocks"))
            .header("authorization", auth())
            .body("{not json")
            .send()
            .await
            .expect("sent"),
    )
    .await;
    assert_eq!((status, p.code.as_str()), (400, "bad_request"));

    let unknown = "00".repeat(32);
    let (status, p, _) = problem(
        client
            .post(daemon.url(&format!("/v1/blocks/{unknown}/tiles")))
            .header("authorization", auth())
            .send()
            .await
            .expect("sent"),
    )
    .await;
    assert_eq!((status, p.code.as_str()), (404, "unknown_block"));
    assert!(p.detail.contains("POST /v1/blocks"), "{}", p.detail);

    // A tile whose results could not fit one frame.
    let id = register(&daemon, "escape").await;
    let url = daemon.url(&format!("/v1/blocks/{id}/tile?count=4000000000&params=1,1,1"));
    let (status, p, _) = problem(client.post(url).header("authorization", auth()).send().await.expect("sent")).await;
    assert_eq!((status, p.code.as_str()), (413, "too_large"));

    // A run whose data cannot fit the device (llvmpipe: 2 GiB).
    let url = daemon.url(&format!("/v1/blocks/{id}/tiles"));
    let response = client
        .post(url)
        .header("authorization", auth())
        .header("xc-run-items", "4000000000")
        .send()
        .await
        .expect("sent");
    let (status, p, _) = problem(response).await;
    assert_eq!((status, p.code.as_str()), (503, "declined_memory"));

    // The daemon still serves, and capacity shows what a run is measured against.
    let capacity: xcd_wire::rest::Capacity =
        get("/v1/capacity").header("authorization", auth()).send().await.expect("sent").json().await.expect("capacity");
    assert!(capacity.accepting);
    assert_eq!(capacity.memory_total.len(), 1);
    assert!(capacity.memory_total[0].or(capacity.memory_free[0]).is_some(), "{capacity:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unprotected_daemon_refuses_a_program_with_a_secret() {
    let daemon = xcd().start();
    let client = xcd_e2e::client();
    let (status, p, _) =
        problem(client.get(daemon.url("/v1/version")).bearer_auth("s").send().await.expect("sent")).await;
    assert_eq!((status, p.code.as_str()), (403, "secret_not_set"));
    let open = client.get(daemon.url("/v1/version")).send().await.expect("sent");
    assert_eq!(open.status(), 200, "a program without a secret is served");
}

#[tokio::test(flavor = "multi_thread")]
async fn nimby_hours_decline_with_retry_after_and_show_in_capacity() {
    // A range that holds now, in the daemon's local time (same machine, same zone).
    let range = xcd_e2e::nimby_range_holding_now();
    let daemon = xcd().secret(SECRET).args(&["-nimby", &range]).start();
    let id = register(&daemon, "escape").await;
    let client = xcd_e2e::client();
    let response = client
        .post(daemon.url(&format!("/v1/blocks/{id}/tiles")))
        .header("authorization", auth())
        .send()
        .await
        .expect("sent");
    let (status, p, retry) = problem(response).await;
    assert_eq!((status, p.code.as_str()), (503, "declined_nimby"));
    let retry: u64 = retry.expect("Retry-After").parse().expect("seconds");
    assert!((1..=11 * 60).contains(&retry), "{retry}");
    let capacity: xcd_wire::rest::Capacity = client
        .get(daemon.url("/v1/capacity"))
        .header("authorization", auth())
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert!(!capacity.accepting);
    assert_eq!(capacity.reason.as_deref(), Some("nimby"));
    assert!(capacity.until.is_some());
}

#[test]
fn one_tile_with_curl_as_the_readme_shows() {
    let daemon = xcd().secret(SECRET).start();
    let dir = tempfile::tempdir().expect("dir");
    let block = dir.path().join("escape.json");
    std::fs::write(&block, serde_json::to_vec(&*xcd_kernels::escape().desc).expect("json")).expect("written");
    let h = format!("Authorization: {}", auth());
    let out = xcd_e2e::curl(&[
        "--http2",
        "-H",
        &h,
        "--data-binary",
        &format!("@{}", block.display()),
        &daemon.url("/v1/blocks"),
    ]);
    let registered: xcd_wire::rest::Registered = serde_json::from_slice(&out.stdout).expect("registered");
    let url = daemon.url(&format!("/v1/blocks/{}/tile?start=1000&count=64&params=64,64,500", registered.id));
    let out = xcd_e2e::curl(&["--http2", "-H", &h, "--data-binary", "@/dev/null", "-o", "-", &url]);
    assert_eq!(out.stdout, escape_expected(1000, 64, 64, 64, 500), "curl's tile equals the CPU form");

    // saxpy reads inputs from the body: x then y, 4 items each.
    let saxpy = dir.path().join("saxpy.json");
    std::fs::write(&saxpy, serde_json::to_vec(&*xcd_kernels::saxpy().desc).expect("json")).expect("written");
    let out = xcd_e2e::curl(&[
        "--http2",
        "-H",
        &h,
        "--data-binary",
        &format!("@{}", saxpy.display()),
        &daemon.url("/v1/blocks"),
    ]);
    let registered: xcd_wire::rest::Registered = serde_json::from_slice(&out.stdout).expect("registered");
    let inputs = dir.path().join("inputs.bin");
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let y = [10.0f32, 20.0, 30.0, 40.0];
    std::fs::write(&inputs, x.iter().chain(&y).flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).expect("written");
    let url = daemon.url(&format!("/v1/blocks/{}/tile?count=4&params=0.5", registered.id));
    let out =
        xcd_e2e::curl(&["--http2", "-H", &h, "--data-binary", &format!("@{}", inputs.display()), "-o", "-", &url]);
    let want: Vec<u8> = x.iter().zip(&y).flat_map(|(x, y)| (0.5f32 * x + y).to_le_bytes()).collect();
    assert_eq!(out.stdout, want);
}

fn channel_body() -> (tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>, reqwest::Body) {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    (tx, reqwest::Body::wrap_stream(stream))
}

#[tokio::test(flavor = "multi_thread")]
async fn results_stream_back_before_the_request_ends() {
    let daemon = xcd().secret(SECRET).start();
    let id = register(&daemon, "escape").await;
    let (tx, body) = channel_body();
    let response = xcd_e2e::client()
        .post(daemon.url(&format!("/v1/blocks/{id}/tiles")))
        .header("authorization", auth())
        .header("xc-version", env!("CARGO_PKG_VERSION"))
        .header("xc-layout", xcd_wire::Layout::native().to_string())
        .body(body)
        .send()
        .await
        .expect("stream opens");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    let mut results = Results::new(response);
    // Each result arrives while the request body is still open: the next tile is sent only after.
    for (tag, start) in [(1u32, 0u32), (2, 4096), (3, 123)] {
        tx.send(Ok(escape_frame(tag, start, 4096, 128, 128, 300))).await.expect("sent");
        match results.next().await {
            Some(ResultFrame::Done { tag: got, outputs }) => {
                assert_eq!(got, tag);
                assert_eq!(outputs, escape_expected(start, 4096, 128, 128, 300));
            }
            other => panic!("tile {tag}: {other:?}"),
        }
    }
    // Several at once come back, in any order.
    for tag in 10..16u32 {
        tx.send(Ok(escape_frame(tag, tag * 100, 500, 128, 128, 300))).await.expect("sent");
    }
    let mut seen = Vec::new();
    for _ in 10..16 {
        match results.next().await {
            Some(ResultFrame::Done { tag, outputs }) => {
                assert_eq!(outputs, escape_expected(tag * 100, 500, 128, 128, 300));
                seen.push(tag);
            }
            other => panic!("{other:?}"),
        }
    }
    seen.sort();
    assert_eq!(seen, (10..16).collect::<Vec<_>>());
    drop(tx);
    assert_eq!(results.next().await, None, "the stream ends when the request does");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_frames_are_answered_and_the_daemon_keeps_serving() {
    let daemon = xcd().secret(SECRET).start();
    let id = register(&daemon, "saxpy").await;
    let url = daemon.url(&format!("/v1/blocks/{id}/tiles"));
    let client = xcd_e2e::client();
    let tile = |tag: u32, inputs: Vec<u8>, params: Vec<u32>| {
        Bytes::from(
            TileFrame {
                tag,
                tile: xcd_wire::Tile { start: 0, count: 2 },
                params,
                wholes: vec![],
                inputs: inputs.into(),
            }
            .encode(),
        )
    };
    let good_inputs: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();

    let (tx, body) = channel_body();
    let response = client.post(&url).header("authorization", auth()).body(body).send().await.expect("opens");
    let mut results = Results::new(response);
    let cases = [
        (1, tile(1, good_inputs[..12].to_vec(), vec![0]), "bad_frame"), // inputs one element short
        (2, tile(2, good_inputs.clone(), vec![]), "bad_frame"),         // no parameter
        (3, tile(3, good_inputs.clone(), vec![2.0f32.to_bits()]), ""),  // fine
    ];
    for (tag, frame, code) in &cases {
        tx.send(Ok(frame.clone())).await.expect("sent");
        match results.next().await.expect("an answer") {
            ResultFrame::Failed { tag: t, problem } => assert_eq!((t, problem.code.as_str()), (*tag, *code)),
            ResultFrame::Done { tag: t, outputs } => {
                assert_eq!((t, *code), (*tag, ""));
                let want: Vec<u8> =
                    [2.0f32 * 1.0 + 3.0, 2.0 * 2.0 + 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
                assert_eq!(outputs, want);
            }
        }
    }
    // A frame that carries its tag but stops before its fields gets an answer for that tag; one
    // too short to carry a tag gets an answer tagged UNKNOWN_TAG.
    tx.send(Ok(Bytes::from_static(&[8, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0]))).await.expect("sent");
    match results.next().await.expect("an answer") {
        ResultFrame::Failed { tag, problem } => assert_eq!((tag, problem.code.as_str()), (9, "bad_frame")),
        other => panic!("{other:?}"),
    }
    tx.send(Ok(Bytes::from_static(&[2, 0, 0, 0, 1, 0]))).await.expect("sent");
    match results.next().await.expect("an answer") {
        ResultFrame::Failed { tag, problem } => {
            assert_eq!((tag, problem.code.as_str()), (xcd_wire::frame::UNKNOWN_TAG, "bad_frame"))
        }
        other => panic!("{other:?}"),
    }
    // An absurd length ends the stream with an error frame.
    tx.send(Ok(Bytes::from(u32::MAX.to_le_bytes().to_vec()))).await.expect("sent");
    match results.next().await.expect("an answer") {
        ResultFrame::Failed { tag, problem } => {
            assert_eq!((tag, problem.code.as_str()), (xcd_wire::frame::STREAM_TAG, "bad_frame"));
            assert!(problem.detail.contains("over the limit"), "{}", problem.detail);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(results.next().await, None);

    // A stream that ends inside a frame.
    let (tx, body) = channel_body();
    let response = client.post(&url).header("authorization", auth()).body(body).send().await.expect("opens");
    let mut results = Results::new(response);
    tx.send(Ok(tile(5, good_inputs.clone(), vec![0]).slice(..20))).await.expect("sent");
    drop(tx);
    match results.next().await.expect("an answer") {
        ResultFrame::Failed { tag, problem } => {
            assert_eq!(tag, xcd_wire::frame::STREAM_TAG);
            assert!(problem.detail.contains("inside a frame"), "{}", problem.detail);
        }
        other => panic!("{other:?}"),
    }

    // And the daemon serves on.
    let health = client.get(daemon.url("/healthz")).send().await.expect("sent");
    assert_eq!(health.status(), 200);
    let metrics = client.get(daemon.url("/metrics")).header("authorization", auth()).send().await.expect("sent");
    let text = metrics.text().await.expect("text");
    assert!(text.contains("xcd_tiles_total{device=\"vulkan:"), "{text}");
    assert!(text.contains("xcd_refusals_total{code=\"bad_frame\"}"), "{text}");
    assert!(text.contains("xcd_tile_seconds_bucket"), "{text}");
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn whole_arrays_are_uploaded_once_and_checked() {
    let daemon = xcd().secret(SECRET).start();
    let id = register(&daemon, "poly").await;
    let client = xcd_e2e::client();
    let coef: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let hash = hex(&xcd_wire::content_hash(&coef));
    let put = |body: Vec<u8>| {
        client.put(daemon.url(&format!("/v1/arrays/{hash}"))).header("authorization", auth()).body(body)
    };
    assert_eq!(put(coef.clone()).send().await.expect("sent").status(), 201);
    assert_eq!(put(coef.clone()).send().await.expect("sent").status(), 200, "held already");
    let (status, p, _) = problem(put(vec![0; 12]).send().await.expect("sent")).await;
    assert_eq!((status, p.code.as_str()), (400, "bad_request"));
    let x: Vec<u8> = [2.0f32, -1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let url = daemon.url(&format!("/v1/blocks/{id}/tile?count=2&params=3&whole={hash}"));
    let out = client.post(url).header("authorization", auth()).body(x).send().await.expect("sent");
    assert_eq!(out.status(), 200);
    let want: Vec<u8> = [17.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect(); // 1+2x+3x²
    assert_eq!(out.bytes().await.expect("bytes").to_vec(), want);
    let missing = "ab".repeat(32);
    let url = daemon.url(&format!("/v1/blocks/{id}/tile?count=2&params=3&whole={missing}"));
    let (status, p, _) =
        problem(client.post(url).header("authorization", auth()).body(vec![0u8; 8]).send().await.expect("sent")).await;
    assert_eq!((status, p.code.as_str()), (404, "unknown_array"));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_past_the_limit_are_busy_and_the_others_carry_on() {
    let daemon = xcd().secret(SECRET).args(&["-max-streams", "2"]).start();
    let id = register(&daemon, "escape").await;
    let url = daemon.url(&format!("/v1/blocks/{id}/tiles"));
    let client = xcd_e2e::client();
    let mut open = Vec::new();
    for _ in 0..2 {
        let (tx, body) = channel_body();
        let response = client.post(&url).header("authorization", auth()).body(body).send().await.expect("opens");
        assert_eq!(response.status(), 200);
        open.push((tx, Results::new(response)));
    }
    let (status, p, _) = problem(client.post(&url).header("authorization", auth()).send().await.expect("sent")).await;
    assert_eq!((status, p.code.as_str()), (503, "busy"));
    for (i, (tx, results)) in open.iter_mut().enumerate() {
        tx.send(Ok(escape_frame(i as u32, 0, 64, 8, 8, 50))).await.expect("sent");
        assert!(matches!(results.next().await, Some(ResultFrame::Done { .. })), "stream {i} still works");
    }
    // Once one closes, a new one is taken.
    let (tx, mut results) = open.pop().expect("a stream");
    drop(tx);
    assert_eq!(results.next().await, None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_tx, body) = channel_body();
    let response = client.post(&url).header("authorization", auth()).body(body).send().await.expect("opens");
    assert_eq!(response.status(), 200);
}
