//! The real server in-process, over TLS on port 0: a client that stalls in the middle of a body
//! is refused when the body limit runs out, and the daemon serves on; stalled uploads hold no more
//! than the daemon's upload budget, beyond which an upload is refused as busy.

use std::time::{Duration, Instant};

mod common;

use xcd_api::Limits;

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_upload_is_refused_in_time() {
    let server = common::Server::start(Limits { body: Duration::from_secs(1), ..Limits::default() }, Vec::new()).await;
    // The start of a block description, then nothing.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tx.send(Ok(b"{\"name\": \"stalled\", ".to_vec())).await.expect("sent");
    let body = reqwest::Body::wrap_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }));
    let started = Instant::now();
    let request = xcd_e2e::client().post(format!("{}/v1/blocks", server.base)).body(body).send();
    let response = tokio::time::timeout(Duration::from_secs(15), request)
        .await
        .expect("the daemon answered a stalled upload in time")
        .expect("an answer");
    assert_eq!(response.status(), 400);
    assert!(started.elapsed() < Duration::from_secs(10), "refused after {:?}", started.elapsed());
    let text = response.text().await.expect("problem");
    assert!(text.contains("could not be read"), "{text}");
    drop(tx);

    let health = xcd_e2e::client().get(format!("{}/healthz", server.base)).send().await.expect("served");
    assert_eq!(health.status(), 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stalled_uploads_hold_no_more_than_the_upload_budget() {
    // 2 MiB of uploads at once, 1 MiB of them from one address.
    let limits = Limits { body: Duration::from_secs(3), upload_bytes: 2 << 20, ..Limits::default() };
    let server = common::Server::start(limits, Vec::new()).await;
    let client = xcd_e2e::client();
    let array = |bytes: &[u8]| format!("{}/v1/arrays/{}", server.base, hex::encode(xcd_wire::content_hash(bytes)));

    // An upload that declares 800 KiB, sends 1 KiB and stalls: its 800 KiB are held for it.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tx.send(Ok(vec![0u8; 1024])).await.expect("sent");
    let stalled_body = reqwest::Body::wrap_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }));
    let stalled = tokio::spawn(
        client.put(array(&[1])).header("content-length", (800 << 10).to_string()).body(stalled_body).send(),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Another 800 KiB from the same address does not fit beside it in its half; 100 KiB does;
    // 800 KiB from another address does.
    let big = vec![2u8; 800 << 10];
    let refused = client.put(array(&big)).body(big.clone()).send().await.expect("answered");
    assert_eq!(refused.status(), 503);
    let text = refused.text().await.unwrap_or_default();
    assert!(text.contains("busy") && text.contains("one address") && text.contains("uploads"), "{text}");
    let elsewhere = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .expect("a client");
    let other = vec![4u8; 800 << 10];
    let taken = elsewhere.put(array(&other)).body(other).send().await.expect("answered");
    assert_eq!(taken.status(), 201, "{}", taken.text().await.unwrap_or_default());
    let small = vec![3u8; 100 << 10];
    let taken = client.put(array(&small)).body(small).send().await.expect("answered");
    assert_eq!(taken.status(), 201, "{}", taken.text().await.unwrap_or_default());

    // The stalled one runs out of time (3 s) and frees its share.
    let stalled = stalled.await.expect("the upload task").expect("answered");
    assert_eq!(stalled.status(), 400);
    drop(tx);
    let taken = client.put(array(&big)).body(big).send().await.expect("answered");
    assert_eq!(taken.status(), 201, "{}", taken.text().await.unwrap_or_default());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_of_unknown_size_takes_its_share_as_it_arrives() {
    // 2 MiB of uploads at once, 1 MiB of them from one address.
    let limits = Limits { upload_bytes: 2 << 20, ..Limits::default() };
    let server = common::Server::start(limits, Vec::new()).await;
    let client = xcd_e2e::client();
    let put = |bytes: Vec<u8>| {
        let url = format!("{}/v1/arrays/{}", server.base, hex::encode(xcd_wire::content_hash(&bytes)));
        // In pieces, with no Content-Length: the daemon cannot know the size before it arrives.
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> = bytes.chunks(64 << 10).map(|c| Ok(c.to_vec())).collect();
        client.put(url).body(reqwest::Body::wrap_stream(futures_util::stream::iter(pieces))).send()
    };
    let small = put(vec![5u8; 512 << 10]).await.expect("answered");
    assert_eq!(small.status(), 201, "{}", small.text().await.unwrap_or_default());
    let big = put(vec![6u8; 3 << 20]).await.expect("answered");
    assert_eq!(big.status(), 503, "more than one address may send at once");
    let text = big.text().await.unwrap_or_default();
    assert!(text.contains("busy") && text.contains("uploads"), "{text}");
    let again = put(vec![7u8; 900 << 10]).await.expect("answered");
    assert_eq!(again.status(), 201, "the refused one's share came back: {}", again.text().await.unwrap_or_default());
    server.stop().await;
}
