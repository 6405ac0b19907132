//! The daemon on CUDA, against the stand-in driver library (`fakecuda/`, an R535 driver that runs
//! kernels through the PTX interpreter): there a kernel can truly never end, so the device is let
//! go with its context and comes back on a fresh one; and where the driver hangs letting it go,
//! the daemon still answers and still ends. A file of its own, so that no other daemon's kernels
//! share the CPU with these.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::spin::*;
use common::*;

/// On CUDA a kernel can truly never end: the device is let go with its context and comes back on
/// a fresh one, `/v1/devices` answering at once all the while; the daemon then ends promptly.
#[tokio::test(flavor = "multi_thread")]
async fn on_cuda_a_kernel_that_never_ends_is_let_go_with_its_context() {
    let fake = xcd_e2e::FakeCuda::install();
    let daemon = xcd()
        .secret(SECRET)
        .env("LD_LIBRARY_PATH", &fake.dir().display().to_string())
        .args(&["-mdns", "false", "-tile-deadline", "2"])
        .start();
    let escape = register(&daemon, "escape").await;
    let spin = register_spin(&daemon).await;
    let (result, _) = spin_tile(&daemon, &spin, 1 << 16, u32::MAX).await;
    let (code, detail) = failure(&result);
    assert_eq!(code, "device_failed", "{detail}");

    let waited = Instant::now();
    let mut slowest = Duration::ZERO;
    loop {
        let asked = Instant::now();
        let listed = devices(&daemon).await;
        slowest = slowest.max(asked.elapsed());
        if listed.devices.iter().all(|d| d.lost.is_none()) {
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(60), "not back in 60 s:\n{}", daemon.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(slowest < Duration::from_secs(5), "/v1/devices took {slowest:?} during the recovery");
    assert!(daemon.stderr().contains("device back in service"), "{}", daemon.stderr());
    for _ in 0..4 {
        escape_tile(&daemon, &escape).await.expect("escape runs on a fresh context");
    }
    let stopping = Instant::now();
    let status = daemon.terminate(Duration::from_secs(30));
    assert!(status.success(), "the daemon ends cleanly: {status:?}");
    println!(
        "deadline: on CUDA, back in service after {:.1} s; /v1/devices at worst {:.1} ms meanwhile; SIGTERM to exit {:.2} s",
        waited.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1e3,
        stopping.elapsed().as_secs_f64()
    );
}

/// A driver that never finishes letting the old context go, nor the first try to make a fresh
/// one (the stand-in's `FAKE_CUDA_DESTROY_HANGS`, `FAKE_CUDA_HANG_CREATE`): the device stays out
/// of service, `/v1/devices` says so at once, and SIGTERM still ends the daemon within seconds,
/// the device left to the process's end rather than destroyed.
#[tokio::test(flavor = "multi_thread")]
async fn on_cuda_a_daemon_whose_driver_hangs_still_ends_on_sigterm() {
    let fake = xcd_e2e::FakeCuda::install();
    let daemon = xcd()
        .secret(SECRET)
        .env("LD_LIBRARY_PATH", &fake.dir().display().to_string())
        .env("FAKE_CUDA_DESTROY_HANGS", "1")
        .env("FAKE_CUDA_HANG_CREATE", "3")
        .args(&["-mdns", "false", "-tile-deadline", "2"])
        .start();
    let spin = register_spin(&daemon).await;
    let (result, _) = spin_tile(&daemon, &spin, 1 << 16, u32::MAX).await;
    assert_eq!(failure(&result).0, "device_failed", "{}", failure(&result).1);
    let tried = Instant::now();
    while !daemon.stderr().contains("device still out of service") {
        assert!(tried.elapsed() < Duration::from_secs(60), "no try in 60 s:\n{}", daemon.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let asked = Instant::now();
    let listed = devices(&daemon).await;
    let answered = asked.elapsed();
    assert!(answered < Duration::from_secs(5), "/v1/devices took {answered:?} while the driver hangs");
    assert!(listed.devices.iter().any(|d| d.lost.is_some()), "the device is out of service");
    let stopping = Instant::now();
    let status = daemon.terminate(Duration::from_secs(30));
    assert!(status.success(), "the daemon ends cleanly with its driver hung: {status:?}");
    println!(
        "deadline: on CUDA with a driver that hangs, /v1/devices in {:.1} ms; SIGTERM to exit {:.2} s",
        answered.as_secs_f64() * 1e3,
        stopping.elapsed().as_secs_f64()
    );
}
