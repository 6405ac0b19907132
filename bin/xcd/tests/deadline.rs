//! Kernels that run too long, through a live daemon started with `-tile-deadline`: one that never
//! ends and one that ends late. The sender gets a clear error when the deadline passes, the
//! device is reported out of service (`/v1/devices`, `/v1/capacity`, the page) while the daemon
//! keeps answering everyone, and a device whose kernel ends is brought back, with its blocks
//! loaded again, without a restart. (On CUDA: `tests/cuda.rs`.)

mod common;

use std::time::{Duration, Instant};

use common::spin::*;
use common::*;
use xcd_wire::ResultFrame;

/// The two tests take turns: the first leaves every thread of a CPU device spinning for
/// minutes, which would slow the second's measuring tile past its deadline (CI, 2026-12-03).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread")]
async fn a_kernel_that_never_ends_takes_its_device_out_of_service_and_the_daemon_keeps_answering() {
    let _turn = ONE_AT_A_TIME.lock().await;
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
    let _turn = ONE_AT_A_TIME.lock().await;
    // A deadline of 2 s leaves the measuring tile (a fraction of a second alone) room on a
    // loaded machine.
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false", "-tile-deadline", "2"]).start();
    let escape = register(&daemon, "escape").await;
    let spin = register_spin(&daemon).await;

    // Measure this machine on 100 workgroups, then size a tile for about 8 s, past the deadline.
    let (result, took) = spin_tile(&daemon, &spin, 6400, LONGEST).await;
    assert!(matches!(result, ResultFrame::Done { .. }), "took {took:?}: {:?}", failure(&result));
    let count = (6400.0 * 8.0 / took.as_secs_f64().max(1e-3)).min(f64::from(1u32 << 24)) as u32;
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
