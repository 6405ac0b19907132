//! Remote workers: devices of daemons named in `XC_PAR_REMOTE`, reached over HTTP/2 with TLS.
//!
//! Layout: [`daemon`] (a pinned connection and what the daemon holds), [`stream`] (one tile stream
//! per device and block), [`pin`] (the certificate check), [`error`] (refusals in the tutorial's
//! words), [`reader`] (reading a daemon for a monitor, sending it no work). A remote worker keeps `depth` tiles in flight by running that many lanes, each with one
//! tile on the shared stream.

pub mod check;
pub(crate) mod daemon;
pub mod error;
pub mod pin;
pub mod pool;
pub mod reader;
pub(crate) mod stream;

use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
pub use daemon::{PIN_PREFIX, pin_key};
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
    /// Recent seconds per item from sending a tile to its result (f64 bits; 0 before the first).
    per_item: AtomicU64,
    /// Set when the daemon stopped answering: it gets no tiles until it answers again.
    stalled: Mutex<Option<Stalled>>,
}

/// A daemon that stopped answering, and the checks on whether it answers again.
struct Stalled {
    /// What the runs that skip it report.
    error: RemoteError,
    /// When it was last checked (or found stalled).
    checked: Instant,
    /// Set by a check in the background once the daemon answers again.
    answered: Arc<std::sync::atomic::AtomicBool>,
    /// Whether a check is running.
    checking: Arc<std::sync::atomic::AtomicBool>,
}

/// The shortest wait for a tile's result before the daemon counts as stalled.
const STALL_FLOOR: Duration = Duration::from_secs(5);
/// The wait for the first tile's result, before any is timed.
const FIRST_TILE_WAIT: Duration = Duration::from_secs(60);
/// How many times its expected time a tile may take.
const STALL_FACTOR: f64 = 10.0;
/// How often a daemon that stopped answering is asked (in the background) whether it answers
/// again: a link back after a blip brings its daemon back into the next run.
const STALL_RECHECK: Duration = Duration::from_secs(5);

impl RemoteWorker {
    /// How long a tile of `count` items may wait for its result.
    fn deadline(&self, count: u32) -> Duration {
        let per_item = f64::from_bits(self.per_item.load(Ordering::Relaxed));
        if per_item <= 0.0 {
            return FIRST_TILE_WAIT;
        }
        let expected = Duration::from_secs_f64((per_item * f64::from(count) * STALL_FACTOR).min(3600.0));
        expected.max(STALL_FLOOR)
    }

    /// The stall this daemon is under, if it still is. A run never waits on the check: every
    /// [`STALL_RECHECK`] one runs in the background (`GET /v1/capacity`, with the request's
    /// timeout), and the first run after it succeeds takes the daemon back.
    fn still_stalled(&self) -> Result<(), RemoteError> {
        use std::sync::atomic::Ordering::SeqCst;
        let mut slot = self.stalled.lock().unwrap_or_else(|e| e.into_inner());
        let Some(stalled) = slot.as_mut() else { return Ok(()) };
        if stalled.answered.load(SeqCst) {
            *slot = None;
            return Ok(());
        }
        if stalled.checked.elapsed() >= STALL_RECHECK && !stalled.checking.swap(true, SeqCst) {
            stalled.checked = Instant::now();
            let (daemon, answered, checking) =
                (self.daemon.clone(), stalled.answered.clone(), stalled.checking.clone());
            self.runtime.spawn(async move {
                if daemon.capacity().await.is_ok() {
                    answered.store(true, SeqCst);
                }
                checking.store(false, SeqCst);
            });
        }
        Err(stalled.error.clone())
    }

    /// Folds one tile's time into the recent time per item.
    fn timed(&self, count: u32, took: Duration) {
        let sample = took.as_secs_f64() / f64::from(count.max(1));
        let old = f64::from_bits(self.per_item.load(Ordering::Relaxed));
        let new = if old <= 0.0 { sample } else { 0.75 * old + 0.25 * sample };
        self.per_item.store(new.to_bits(), Ordering::Relaxed);
    }
}

/// Connects to every daemon of `addrs` (a name that resolves to several addresses is several
/// daemons) and of `found` (`host:port` and address, from mDNS); returns one worker per served
/// device, and an error per daemon that cannot serve.
pub(crate) fn connect_all(
    runtime: &tokio::runtime::Handle,
    addrs: &[String],
    found: &[(String, std::net::SocketAddr)],
    in_use: &[String],
    home: &Home,
    secret: Option<&str>,
) -> (Vec<RemoteWorker>, Vec<RemoteError>) {
    let mut targets: Vec<(String, String, std::net::SocketAddr)> =
        found.iter().map(|(label, ip)| (label.clone(), label.clone(), *ip)).collect();
    let mut errors = Vec::new();
    for addr in addrs {
        let with_port = with_default_port(addr);
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
    // (`in_use`: hosts of daemons connected before, so a daemon that joins later is told apart too.)
    let mut hosts: Vec<String> = connected.iter().filter_map(|r| r.as_ref().ok().map(|d| d.host.clone())).collect();
    hosts.extend(in_use.iter().cloned());
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
                // A device the daemon has taken out of service gets no tiles from this run.
                for (device, info) in daemon.devices.iter().enumerate().filter(|(_, info)| info.lost.is_none()) {
                    workers.push(RemoteWorker {
                        name: format!("remote:{shown}:{}", info.id),
                        daemon: daemon.clone(),
                        device,
                        runtime: runtime.clone(),
                        stream: Mutex::new(None),
                        next_tag: AtomicU32::new(0),
                        per_item: AtomicU64::new(0),
                        stalled: Mutex::new(None),
                    });
                }
            }
            Err(e) => errors.push(e),
        }
    }
    (workers, errors)
}

/// The devices of every daemon in `addrs` and `found` (from [`pool::browse`]), named as workers
/// are, and an error per daemon that cannot serve: what `xcrun devices` shows with
/// `XC_PAR_REMOTE` or `XC_PAR_POOL` set.
pub fn inventory(
    addrs: &[String],
    found: &[(String, std::net::SocketAddr)],
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
    let (workers, errors) = connect_all(runtime.handle(), addrs, found, &[], home, secret);
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

    fn daemon(&self) -> Option<&str> {
        Some(&self.daemon.addr)
    }

    fn host(&self) -> Option<&str> {
        Some(&self.daemon.host)
    }

    fn about(&self) -> String {
        format!(
            "remote worker {}, depth {}, round trip {:.2} ms",
            self.name,
            self.daemon.depth,
            self.daemon.rtt.as_secs_f64() * 1e3
        )
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
        self.still_stalled()?;
        let mut slot = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        let open = matches!(slot.as_ref(), Some((id, stream)) if *id == ctx.id && !stream.is_closed());
        let daemon = self.daemon.clone();
        // Every run may bring whole arrays of its own, even on a stream already open for its
        // block: those the daemon does not hold yet go up before any tile names them.
        let opened = self.runtime.block_on(async {
            daemon.prepare(ctx.id, &ctx.block.desc, &ctx.whole).await?;
            if open {
                return Ok(None);
            }
            TileStream::open(daemon.clone(), ctx.id, self.device, u64::from(ctx.items)).await.map(Some)
        })?;
        if let Some(stream) = opened {
            *slot = Some((ctx.id, Arc::new(stream)));
        }
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
        let sent = Instant::now();
        let answer = stream.send(tag, Bytes::from(frame))?;
        let wait = self.deadline(tile.tile.count);
        // The timer must be made inside the runtime, hence the async block.
        let outputs = match self.runtime.block_on(async move { tokio::time::timeout(wait, answer).await }) {
            Ok(answer) => answer.map_err(|_| RemoteError::Failed {
                addr: self.daemon.addr.clone(),
                detail: "the tile stream ended".into(),
            })??,
            Err(_) => {
                let stalled = RemoteError::Stalled { addr: self.daemon.addr.clone(), secs: wait.as_secs_f64() };
                *self.stalled.lock().unwrap_or_else(|e| e.into_inner()) = Some(Stalled {
                    error: stalled.clone(),
                    checked: Instant::now(),
                    answered: Arc::default(),
                    checking: Arc::default(),
                });
                // Every other tile waiting on this stream fails now rather than at its own deadline.
                stream.abort();
                self.stream.lock().unwrap_or_else(|e| e.into_inner()).take();
                return Err(stalled.into());
            }
        };
        self.timed(tile.tile.count, sent.elapsed());
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

/// `addr` as `host:port`, with the daemon's default port ([`xcd_wire::rest::DEFAULT_PORT`])
/// where it names none.
pub(crate) fn with_default_port(addr: &str) -> String {
    if addr.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        addr.to_owned()
    } else {
        format!("{addr}:{}", xcd_wire::rest::DEFAULT_PORT)
    }
}
