//! The real server in-process for the API's tests: TLS on a loopback port 0, with chosen limits
//! and devices, stopped when the handle is.

#![allow(dead_code, unreachable_pub)] // each test file uses its own share of these

use std::time::Duration;

use xcd_api::{AppState, Config, Identity, Limits, serve};
use xcd_engine::DeviceHandle;

/// A running in-process daemon.
pub struct Server {
    /// `https://127.0.0.1:PORT` (`http://` without TLS).
    pub base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _home: tempfile::TempDir,
}

impl Server {
    /// Serves `devices` with `limits` (no secret) over TLS.
    pub async fn start(limits: Limits, devices: Vec<DeviceHandle>) -> Server {
        Server::start_with(limits, devices, true).await
    }

    /// Serves `devices` with `limits` (no secret) without TLS (`-plain`: h2c and HTTP/1.1).
    pub async fn start_plain(limits: Limits, devices: Vec<DeviceHandle>) -> Server {
        Server::start_with(limits, devices, false).await
    }

    async fn start_with(limits: Limits, devices: Vec<DeviceHandle>, tls: bool) -> Server {
        let home = tempfile::tempdir().expect("home");
        let identity = Identity::load_or_create(home.path()).expect("identity");
        let state = AppState::new(Config { limits, ..Config::default() }, devices);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
        let scheme = if tls { "https" } else { "http" };
        let base = format!("{scheme}://127.0.0.1:{}", listener.local_addr().expect("address").port());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve(
            listener,
            tls.then(|| identity.server_config().expect("TLS")),
            state,
            async move {
                let _ = stopped.await;
            },
            Duration::from_secs(5),
        ));
        Server { base, stop: Some(stop), task: Some(task), _home: home }
    }

    /// Stops it and waits for it to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server stops");
        }
    }
}

/// This machine's first device (llvmpipe where there is no GPU); None, saying so, where there is
/// none (never in CI, which installs llvmpipe).
pub fn first_device() -> Option<DeviceHandle> {
    let device = xcd_engine::discover().devices.into_iter().next();
    if device.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI has llvmpipe (scripts/deps)");
        eprintln!("skipped: no device");
    }
    device
}

/// Registers the example block `name` with the server at `base`; returns its description.
pub async fn register(base: &str, name: &str) -> std::sync::Arc<xcd_wire::BlockDesc> {
    let block = xcd_kernels::all().into_iter().find(|b| b.desc.name == name).expect("an example block");
    let registered = xcd_e2e::client().post(format!("{base}/v1/blocks")).json(&*block.desc).send().await.expect("sent");
    assert!(registered.status().is_success(), "registering {name}");
    block.desc
}

/// Opens a tile stream of block `id` at `base` that sends escape frames of `count` items for
/// ever (`per_chunk` to a write) and whose answer is never read: hold the response to keep it.
pub async fn unread_stream(base: &str, id: xcd_wire::BlockId, count: u32, per_chunk: u32) -> reqwest::Response {
    let frames = futures_util::stream::unfold(0u32, move |tag| async move {
        let chunk: Vec<u8> = (0..per_chunk)
            .flat_map(|i| {
                let tile = xcd_wire::Tile { start: 0, count };
                let params = vec![256, 256, 40];
                xcd_wire::TileFrame { tag: tag + i, tile, params, wholes: vec![], inputs: Default::default() }.encode()
            })
            .collect();
        Some((Ok::<_, std::io::Error>(chunk), tag.wrapping_add(per_chunk)))
    });
    xcd_e2e::client()
        .post(format!("{base}/v1/blocks/{id}/tiles"))
        .body(reqwest::Body::wrap_stream(frames))
        .send()
        .await
        .expect("the stream opens")
}
