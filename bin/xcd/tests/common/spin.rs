//! A kernel whose run time a test chooses, and the requests the deadline tests make with it
//! through a live daemon: tiles of it, escape tiles, the device list and capacity.

use std::sync::Arc;
use std::time::{Duration, Instant};

use xcd_e2e::Daemon;
use xcd_wire::rest::{Capacity, Devices};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec, ResultFrame, Tile, TileFrame};

use super::{Results, auth, escape_expected};

/// `16 n` steps of a linear congruential generator per item: a kernel whose run time the test
/// chooses by `n` and the tile's size. (llvmpipe ends every loop after 65535 iterations in all, a
/// guard of its own against kernels that never end, so on it a kernel that "never ends" is one
/// whose tile would take hours: a large tile of the longest loop.)
const SPIN: &str = r#"
struct Tile { start: u32, count: u32, first: u32, n: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
fn step(x: u32) -> u32 { return x * 1664525u + 1013904223u; }
@compute @workgroup_size(64)
fn spin(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    var x = tile.start + i;
    for (var k = 0u; k < tile.n; k++) {
        x = step(step(step(step(step(step(step(step(x))))))));
        x = step(step(step(step(step(step(step(step(x))))))));
    }
    y[i] = x;
}
"#;

/// The longest loop llvmpipe runs to its end.
pub const LONGEST: u32 = 65_000;

pub fn spin_block() -> Arc<BlockDesc> {
    Arc::new(BlockDesc {
        name: "spin".into(),
        entry: "spin".into(),
        arrays: vec![ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) }],
        params: vec![ParamSpec { name: "n".into(), kind: ParamKind::U32 }],
        forms: Forms { wgsl: Some(SPIN.into()), ..Forms::default() },
    })
}

pub async fn register_spin(daemon: &Daemon) -> String {
    let block = spin_block();
    let response = xcd_e2e::client()
        .post(daemon.url("/v1/blocks"))
        .header("authorization", auth())
        .json(&*block)
        .send()
        .await
        .expect("registers");
    assert!(response.status().is_success(), "{}", response.text().await.unwrap_or_default());
    block.id().to_string()
}

/// Sends one spin tile of `count` items on a stream of its own: its result, and how long it took.
pub async fn spin_tile(daemon: &Daemon, id: &str, count: u32, n: u32) -> (ResultFrame, Duration) {
    let frame = TileFrame {
        tag: 1,
        tile: Tile { start: 0, count },
        params: vec![n],
        wholes: vec![],
        inputs: Default::default(),
    };
    let started = Instant::now();
    let response = xcd_e2e::client()
        .post(daemon.url(&format!("/v1/blocks/{id}/tiles")))
        .header("authorization", auth())
        .body(frame.encode())
        .send()
        .await
        .expect("the stream opens");
    assert!(response.status().is_success(), "{}", response.text().await.unwrap_or_default());
    let result = Results::new(response).next().await.expect("a result frame");
    (result, started.elapsed())
}

/// One correct escape tile, or the problem's code and sentence.
pub async fn escape_tile(daemon: &Daemon, escape: &str) -> Result<(), (String, String)> {
    let url = daemon.url(&format!("/v1/blocks/{escape}/tile?start=1000&count=64&params=256,256,100"));
    let response = xcd_e2e::client().post(url).header("authorization", auth()).send().await.expect("sent");
    if response.status().is_success() {
        let bytes = response.bytes().await.expect("body");
        assert_eq!(bytes.to_vec(), escape_expected(1000, 64, 256, 256, 100), "escape's pixels");
        return Ok(());
    }
    let problem: xcd_wire::rest::Problem = response.json().await.expect("a problem");
    Err((problem.code, problem.detail))
}

pub async fn read(daemon: &Daemon, path: &str) -> Vec<u8> {
    let response =
        xcd_e2e::client().get(daemon.url(path)).header("authorization", auth()).send().await.expect("answers");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.bytes().await.expect("body").to_vec()
}

pub async fn devices(daemon: &Daemon) -> Devices {
    serde_json::from_slice(&read(daemon, "/v1/devices").await).expect("devices")
}

pub async fn capacity(daemon: &Daemon) -> Capacity {
    serde_json::from_slice(&read(daemon, "/v1/capacity").await).expect("capacity")
}

pub fn failure(result: &ResultFrame) -> (String, String) {
    match result {
        ResultFrame::Failed { problem, .. } => (problem.code.clone(), problem.detail.clone()),
        ResultFrame::Done { .. } => ("ok".into(), String::new()),
    }
}
