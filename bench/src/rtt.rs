//! Tile round trip: one tile of one item on an open tile stream, against an HTTP/2 echo of the
//! same bytes over the same TLS, and the same tile on the same device in this process.

use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use xcd_engine::{TileJob, TileOutput};
use xcd_wire::{Tile, TileFrame};

use crate::{Options, SECRET, blocks, echo, quantile};

/// Sends `frame` `n` times on one streaming POST to `url`, each time waiting for `answer` bytes
/// back; the round trips in microseconds, sorted (the first tenth, warm-up, left out).
async fn round_trips(
    client: &reqwest::Client,
    url: &str,
    auth: bool,
    frame: Bytes,
    answer: usize,
    n: usize,
) -> Result<Vec<f64>, String> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let body = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let mut request = client.post(url).body(reqwest::Body::wrap_stream(body));
    if auth {
        request = request.bearer_auth(SECRET).header(reqwest::header::CONTENT_TYPE, xcd_wire::rest::FRAMES_MEDIA_TYPE);
    }
    let send = tx.clone();
    let first = frame.clone();
    // The response's headers may wait for the first bytes of the body: send them first.
    send.send(Ok(first)).await.map_err(|e| e.to_string())?;
    let response = request.send().await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("{url}: {}", response.status()));
    }
    let mut body = response.bytes_stream();
    let mut pending = 0usize;
    let mut got = 0usize;
    let mut times = Vec::with_capacity(n);
    // The first answer, for the frame sent before the headers.
    while got < answer {
        got += body.next().await.ok_or("the stream ended")?.map_err(|e| e.to_string())?.len();
    }
    got -= answer;
    for _ in 0..n {
        let started = Instant::now();
        tx.send(Ok(frame.clone())).await.map_err(|e| e.to_string())?;
        pending += answer;
        while got < pending {
            got += body.next().await.ok_or("the stream ended")?.map_err(|e| e.to_string())?.len();
        }
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    drop(tx);
    let mut times = times.split_off(n / 10);
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// The same one-item tile on this machine's first device, in this process; microseconds, sorted.
fn in_process(o: &Options, n: usize) -> Result<(String, Vec<f64>), String> {
    let device = crate::local_device(o)?;
    let block = blocks::copy();
    let id = device.load_blocking(block.desc.clone()).map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let job = TileJob {
            block: id,
            tile: Tile { start: 0, count: 1 },
            params: Vec::new(),
            inputs: vec![Bytes::from_static(&[7, 0, 0, 0])],
            whole: Vec::new(),
        };
        let started = Instant::now();
        let out: TileOutput = device.run_blocking(job).map_err(|e| e.to_string())?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
        if out.outputs[0] != [7, 0, 0, 0] {
            return Err("the device copied wrong".into());
        }
    }
    let mut times = times.split_off(n / 10);
    times.sort_by(f64::total_cmp);
    Ok((device.info().id.clone(), times))
}

pub(crate) fn run(o: &Options) -> Result<String, String> {
    let n = if o.quick { 300 } else { 5000 };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let daemon = crate::daemon(o).start();
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let block = blocks::copy();
    let id = block.desc.id();
    let frame = Bytes::from(
        TileFrame {
            tag: 1,
            tile: Tile { start: 0, count: 1 },
            params: vec![],
            wholes: vec![],
            inputs: Bytes::from_static(&[7, 0, 0, 0]),
        }
        .encode(),
    );
    let (xcd, echo) = runtime.block_on(async {
        let client = xcd_e2e::client();
        let registered = client
            .post(daemon.url("/v1/blocks"))
            .bearer_auth(SECRET)
            .json(&*block.desc)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !registered.status().is_success() {
            return Err(format!("registering: {}", registered.status()));
        }
        let url = daemon.url(&format!("/v1/blocks/{id}/tiles"));
        let xcd = round_trips(&client, &url, true, frame.clone(), xcd_wire::frame::RESULT_HEADER_BYTES + 4, n).await?;
        let addr = echo::http2(echo::tls(home.path())?).await?;
        let echo = round_trips(&client, &format!("https://{addr}/echo"), false, frame.clone(), frame.len(), n).await?;
        Ok::<_, String>((xcd, echo))
    })?;
    let (device, local) = in_process(o, n)?;
    let row = |what: &str, t: &[f64]| format!("| {what} | {:.0} | {:.0} |\n", quantile(t, 0.5), quantile(t, 0.99));
    let mut text = format!(
        "## Tile round trip\n\nOne tile of one item (a {}-byte frame, a {}-byte result) on an open stream, {} times after a warm-up, \
         over loopback TLS and HTTP/2 from one reqwest client; the device is {device}.\n\n\
         | what | p50 µs | p99 µs |\n|---|---:|---:|\n",
        frame.len(),
        xcd_wire::frame::RESULT_HEADER_BYTES + 4,
        n - n / 10
    );
    text.push_str(&row("xcd: the tile through the daemon", &xcd));
    text.push_str(&row("baseline: the same bytes echoed by a bare HTTP/2 server, same TLS", &echo));
    text.push_str(&row("the same tile on the same device in this process", &local));
    let above = quantile(&xcd, 0.5) - quantile(&echo, 0.5);
    let daemon_own = above - quantile(&local, 0.5);
    text.push_str(&format!(
        "\nxcd − echo at p50: **{above:.0} µs** (goal ≤ 25 µs); of that, the device's own tile takes {:.0} µs, \
         leaving {daemon_own:.0} µs for the daemon's own work (routing, the frame, the owner thread, the result).\n",
        quantile(&local, 0.5)
    ));
    Ok(text)
}
