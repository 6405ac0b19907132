//! The real server in-process, over TLS on port 0: a client that stalls in the middle of a body
//! is refused when the body limit runs out, and the daemon serves on.

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
