//! Kernels that run too long, through a live daemon started with `-tile-deadline`: one that never
//! ends and one that ends late. The sender gets a clear error when the deadline passes, the
//! device is reported out of service (`/v1/devices`, `/v1/capacity`, the page) while the daemon
//! keeps answering everyone, and a device whose kernel ends is brought back, with its blocks
//! loaded again, without a restart.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use xcd_e2e::Daemon;
use xcd_wire::rest::{Capacity, Devices};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec, ResultFrame, Tile, TileFrame};

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
const LONGEST: u32 = 65_000;

fn spin_block() -> Arc<BlockDesc> {
    Arc::new(BlockDesc {
        name: "spin".into(),
        entry: "spin".into(),
        arrays: vec![ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) }],
        params: vec![ParamSpec { name: "n".into(), kind: ParamKind::U32 }],
        forms: Forms { wgsl: Some(SPIN.into()), ..Forms::default() },
    })
}

async fn register_spin(daemon: &Daemon) -> String {
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
async fn spin_tile(daemon: &Daemon, id: &str, count: u32, n: u32) -> (ResultFrame, Duration) {
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
async fn escape_tile(daemon: &Daemon, escape: &str) -> Result<(), (String, String)> {
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

async fn read(daemon: &Daemon, path: &str) -> Vec<u8> {
    let response =
        xcd_e2e::client().get(daemon.url(path)).header("authorization", auth()).send().await.expect("answers");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.bytes().await.expect("body").to_vec()
}

async fn devices(daemon: &Daemon) -> Devices {
    serde_json::from_slice(&read(daemon, "/v1/devices").await).expect("devices")
}

async fn capacity(daemon: &Daemon) -> Capacity {
    serde_json::from_slice(&read(daemon, "/v1/capacity").await).expect("capacity")
}

fn failure(result: &ResultFrame) -> (String, String) {
    match result {
        ResultFrame::Failed { problem, .. } => (problem.code.clone(), problem.detail.clone()),
        ResultFrame::Done { .. } => ("ok".into(), String::new()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kernel_that_never_ends_takes_its_device_out_of_service_and_the_daemon_keeps_answering() {
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false", "-tile-deadline", "2"]).start();
    let escape = register(&daemon, "escape").await;
    let spin = register_spin(&daemon).await;
    escape_tile(&daemon, &escape).await.expect("escape runs before");

    // 2¹⁸ workgroups of the longest loop: minutes of work for every thread of a CPU device.
    let (result, took) = spin_tile(&daemon, &spin, 1 << 24, LONGEST).await;
    let (code, detail) = failure(&result);
    assert_eq!(code, "device_failed", "{detail}");
    assert!(detail.contains("more than 2 s") && detail.contains("tile deadline"), "{detail}");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(30), "answered after {took:?}");

    let listed = devices(&daemon).await;
    let lost = listed.devices[0].lost.clone().expect("the device is reported out of service");
    assert!(lost.contains("spin"), "{lost}");
    let (code, detail) = escape_tile(&daemon, &escape).await.expect_err("no tile runs on it");
    assert_eq!(code, "device_failed");
    assert!(detail.contains("out of service") && detail.contains("tile deadline"), "{detail}");
    let state = capacity(&daemon).await;
    assert!(!state.accepting && state.reason.as_deref() == Some("device_failed"), "{state:?}");
    let page = xcd_e2e::client().get(daemon.url("/")).header("authorization", auth()).send().await.expect("page");
    assert!(page.text().await.expect("html").contains("out of service"), "the page shows it");
    let health = xcd_e2e::client().get(daemon.url("/healthz")).send().await.expect("health");
    assert_eq!(health.status(), 200);

    // Its threads all still run the kernel: a try to bring it back fails, and says so.
    let tried = Instant::now();
    while !daemon.stderr().contains("device still out of service") {
        assert!(tried.elapsed() < Duration::from_secs(60), "no try in 60 s:\n{}", daemon.stderr());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let listed = devices(&daemon).await;
    assert!(listed.devices[0].lost.is_some(), "a device whose threads all run a kernel cannot serve");
    let status = daemon.terminate(Duration::from_secs(40));
    assert!(status.success(), "the daemon ends cleanly with a device stuck: {status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_whose_kernel_ends_late_is_brought_back_with_its_blocks() {
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false", "-tile-deadline", "1"]).start();
    let escape = register(&daemon, "escape").await;
    let spin = register_spin(&daemon).await;

    // Measure this machine on 100 workgroups, then size a tile for about 5 s, past the deadline.
    let (result, took) = spin_tile(&daemon, &spin, 6400, LONGEST).await;
    assert!(matches!(result, ResultFrame::Done { .. }), "{:?}", failure(&result));
    let count = (6400.0 * 5.0 / took.as_secs_f64().max(1e-3)).min(f64::from(1u32 << 24)) as u32;
    let (result, _) = spin_tile(&daemon, &spin, count, LONGEST).await;
    let (code, detail) = failure(&result);
    assert_eq!(code, "device_failed", "{count} items: {detail}");
    assert!(escape_tile(&daemon, &escape).await.is_err(), "out of service");

    let waited = Instant::now();
    loop {
        let listed = devices(&daemon).await;
        if listed.devices[0].lost.is_none() {
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(90), "not back in 90 s:\n{}", daemon.stderr());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(daemon.stderr().contains("device back in service"), "{}", daemon.stderr());
    escape_tile(&daemon, &escape).await.expect("escape runs again, loaded again without being sent again");
    let state = capacity(&daemon).await;
    assert!(state.accepting, "{state:?}");
}
