//! Remote workers: devices of daemons named in `XC_PAR_REMOTE`, reached over HTTP/2 with TLS.
//!
//! Layout: [`daemon`] (a pinned connection and what the daemon holds), [`stream`] (one tile stream
//! per device and block), [`pin`] (the certificate check), [`error`] (refusals in the tutorial's
//! words). A remote worker keeps `depth` tiles in flight by running that many lanes, each with one
//! tile on the shared stream.

pub mod check;
pub(crate) mod daemon;
pub mod error;
pub(crate) mod pin;
pub(crate) mod stream;

use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
pub use error::RemoteError;
use xcd_wire::BlockId;
use xcd_wire::frame::UNKNOWN_TAG;
use xcd_wire::frame::encode_tile;

use crate::home::Home;
use crate::worker::{RunCtx, TileArray, TileSlices, Worker, WorkerError};
use daemon::Daemon;
use stream::TileStream;

/// One device of one daemon.
pub(crate) struct RemoteWorker {
    name: String,
    daemon: Arc<Daemon>,
    device: usize,
    runtime: tokio::runtime::Handle,
    /// The open stream and the block it is for; reopened for another block or once it ends.
    stream: Mutex<Option<(BlockId, Arc<TileStream>)>>,
    next_tag: AtomicU32,
}

impl RemoteWorker {
    /// A line for the report: name, depth, round trip.
    pub(crate) fn describe(&self) -> String {
        format!(
            "par: remote worker {}, depth {}, round trip {:.2} ms",
            self.name,
            self.daemon.depth,
            self.daemon.rtt.as_secs_f64() * 1e3
        )
    }
}

/// Connects to every daemon of `addrs` (a name that resolves to several addresses is several
/// daemons); returns one worker per served device, and an error per daemon that cannot serve.
pub(crate) fn connect_all(
    runtime: &tokio::runtime::Runtime,
    addrs: &[String],
    home: &Home,
    secret: Option<&str>,
) -> (Vec<RemoteWorker>, Vec<RemoteError>) {
    let mut targets = Vec::new();
    let mut errors = Vec::new();
    for addr in addrs {
        let with_port = if addr.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
            addr.clone()
        } else {
            format!("{addr}:7227")
        };
        match with_port.to_socket_addrs() {
            Ok(ips) => {
                let mut ips: Vec<_> = ips.collect();
                ips.sort();
                ips.dedup();
                let several = ips.len() > 1;
                for ip in ips {
                    let label = if several { format!("{}:{}", ip.ip(), ip.port()) } else { with_port.clone() };
                    targets.push((label, with_port.clone(), ip));
                }
            }
            Err(e) => errors.push(RemoteError::Unreachable { addr: with_port, reason: e.to_string() }),
        }
    }
    let connected = runtime.block_on(futures_util::future::join_all(
        targets.iter().map(|(label, _, ip)| Daemon::connect(label, *ip, home, secret)),
    ));
    // Workers are named remote:<host>:<device>, with the port too where one host runs several.
    let hosts: Vec<String> = connected.iter().filter_map(|r| r.as_ref().ok().map(|d| d.host.clone())).collect();
    let mut workers = Vec::new();
    for result in connected {
        match result {
            Ok(daemon) => {
                let daemon = Arc::new(daemon);
                let shown = if hosts.iter().filter(|h| **h == daemon.host).count() > 1 {
                    daemon.addr.clone()
                } else {
                    daemon.host.clone()
                };
                for (device, info) in daemon.devices.iter().enumerate() {
                    workers.push(RemoteWorker {
                        name: format!("remote:{shown}:{}", info.id),
                        daemon: daemon.clone(),
                        device,
                        runtime: runtime.handle().clone(),
                        stream: Mutex::new(None),
                        next_tag: AtomicU32::new(0),
                    });
                }
            }
            Err(e) => errors.push(e),
        }
    }
    (workers, errors)
}

/// The devices of every daemon in `addrs`, named as workers are, and an error per daemon that
/// cannot serve: what `xcrun devices` shows with `XC_PAR_REMOTE` set.
pub fn inventory(
    addrs: &[String],
    home: &Home,
    secret: Option<&str>,
) -> (Vec<(String, xcd_wire::DeviceInfo)>, Vec<RemoteError>) {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let failed = addrs.iter().map(|a| RemoteError::Failed { addr: a.clone(), detail: e.to_string() }).collect();
            return (Vec::new(), failed);
        }
    };
    let (workers, errors) = connect_all(&runtime, addrs, home, secret);
    let devices = workers
        .iter()
        .filter_map(|w| w.daemon.devices.get(w.device).map(|info| (w.name.clone(), info.clone())))
        .collect();
    (devices, errors)
}

impl Worker for RemoteWorker {
    fn name(&self) -> &str {
        &self.name
    }

    fn lanes(&self) -> usize {
        self.daemon.depth as usize
    }

    fn max_tile(&self, ctx: &RunCtx) -> u32 {
        let device = self.daemon.devices.get(self.device).map_or(u64::MAX, |d| d.max_buffer_bytes);
        // The daemon's frame limit bounds a tile as much as its device's buffers.
        crate::worker::max_tile_items(&ctx.block.desc, device.min(256 << 20))
    }

    fn prepare(&self, ctx: &RunCtx) -> Result<(), WorkerError> {
        let mut slot = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((id, stream)) = slot.as_ref() {
            if *id == ctx.id && !stream.is_closed() {
                return Ok(());
            }
        }
        let daemon = self.daemon.clone();
        let opened = self.runtime.block_on(async {
            daemon.prepare(ctx.id, &ctx.block.desc, &ctx.whole).await?;
            TileStream::open(daemon.clone(), ctx.id, self.device, u64::from(ctx.items)).await
        })?;
        *slot = Some((ctx.id, Arc::new(opened)));
        Ok(())
    }

    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
        let stream = {
            let slot = self.stream.lock().unwrap_or_else(|e| e.into_inner());
            match slot.as_ref() {
                Some((id, stream)) if *id == ctx.id => stream.clone(),
                _ => {
                    return Err(RemoteError::Failed {
                        addr: self.daemon.addr.clone(),
                        detail: "no open stream".into(),
                    }
                    .into());
                }
            }
        };
        let inputs: Vec<&[u8]> = tile
            .arrays
            .iter()
            .filter_map(|a| match a {
                TileArray::In(d) => Some(&d[..]),
                TileArray::InOut(d) => Some(&d[..]),
                _ => None,
            })
            .collect();
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed) % UNKNOWN_TAG;
        let wholes: Vec<[u8; 32]> = ctx.whole.iter().map(|w| w.hash).collect();
        let frame = encode_tile(tag, tile.tile, &ctx.params, &wholes, &inputs);
        let answer = stream.send(tag, Bytes::from(frame))?;
        let outputs = answer.blocking_recv().map_err(|_| RemoteError::Failed {
            addr: self.daemon.addr.clone(),
            detail: "the tile stream ended".into(),
        })??;
        let want: usize =
            tile.arrays.iter().map(|a| if let TileArray::Out(d) | TileArray::InOut(d) = a { d.len() } else { 0 }).sum();
        if outputs.len() != want {
            return Err(WorkerError::ShortResult(self.name.clone(), outputs.len(), want));
        }
        let mut at = 0;
        for array in tile.arrays.iter_mut() {
            if let TileArray::Out(d) | TileArray::InOut(d) = array {
                let len = d.len();
                d.copy_from_slice(&outputs[at..at + len]);
                at += len;
            }
        }
        Ok(())
    }
}
