//! Helpers shared by the daemon's tests: starting it, registering blocks, building frames.

#![allow(dead_code, unreachable_pub)] // each test file uses its own share of these

pub mod spin;

use bytes::Bytes;
use futures_util::StreamExt;
use xcd_e2e::{Daemon, DaemonBuilder};
use xcd_wire::{FrameSplitter, ResultFrame, Tile, TileFrame};

pub const SECRET: &str = "correct-horse-battery";

pub fn xcd() -> DaemonBuilder {
    Daemon::build(env!("CARGO_BIN_EXE_xcd"))
}

pub fn auth() -> String {
    format!("Bearer {SECRET}")
}

/// Registers an example block; returns its id.
pub async fn register(daemon: &Daemon, name: &str) -> String {
    let block = xcd_kernels::all().into_iter().find(|b| b.desc.name == name).expect("an example block");
    let response = xcd_e2e::client()
        .post(daemon.url("/v1/blocks"))
        .header("authorization", auth())
        .json(&*block.desc)
        .send()
        .await
        .expect("registers");
    assert!(response.status().is_success(), "registering {name}: {}", response.text().await.unwrap_or_default());
    block.desc.id().to_string()
}

/// An escape tile frame for a width×height image.
pub fn escape_frame(tag: u32, start: u32, count: u32, width: u32, height: u32, max_iter: u32) -> Bytes {
    Bytes::from(
        TileFrame {
            tag,
            tile: Tile { start, count },
            params: vec![width, height, max_iter],
            wholes: vec![],
            inputs: Default::default(),
        }
        .encode(),
    )
}

/// What the CPU form gives for those pixels.
pub fn escape_expected(start: u32, count: u32, width: u32, height: u32, max_iter: u32) -> Vec<u8> {
    (start..start + count).flat_map(|i| xcd_kernels::escape_pixel(i, width, height, max_iter).to_le_bytes()).collect()
}

/// Reads result frames from a response body.
pub struct Results {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<Bytes>>,
    splitter: FrameSplitter,
}

impl Results {
    pub fn new(response: reqwest::Response) -> Self {
        Results { body: response.bytes_stream().boxed(), splitter: FrameSplitter::new(1 << 30) }
    }

    /// The next result frame, or None when the stream ends.
    pub async fn next(&mut self) -> Option<ResultFrame> {
        loop {
            if let Some(body) = self.splitter.next_frame().expect("valid framing") {
                return Some(ResultFrame::decode(&body).expect("a result frame"));
            }
            match tokio::time::timeout(std::time::Duration::from_secs(60), self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.splitter.push(&chunk),
                Ok(Some(Err(e))) => panic!("result stream failed: {e}"),
                Ok(None) => return None,
                Err(_) => panic!("no result for 60 s"),
            }
        }
    }
}

/// A single tile over a connection of its own (curl), as a new client with the secret would:
/// true when served (a failure panics, with curl's words and the daemon's log).
pub fn new_client_served(daemon: &Daemon, tile: &str) -> bool {
    new_client_served_from(daemon, tile, "127.0.0.1")
}

/// The same, from loopback address `from` (each address holds at most half of some budgets).
pub fn new_client_served_from(daemon: &Daemon, tile: &str, from: &str) -> bool {
    let out = xcd_e2e::curl(&[
        "-f",
        "--max-time",
        "10",
        "--interface",
        from,
        "-H",
        &format!("Authorization: {}", auth()),
        "-X",
        "POST",
        "-o",
        "/dev/null",
        tile,
    ]);
    out.status.success()
        || panic!("a new client was not served: {}\n{}", String::from_utf8_lossy(&out.stderr), daemon.stderr())
}
