//! The remote worker: tiles sent to one device of a daemon over the daemon client
//! (`crate::remote`): one tile stream per block, `depth` tiles in flight (one per lane), each
//! with a deadline from the time tiles have taken; a daemon that stops answering gets no tiles
//! until a check in the background finds it answering again.

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use xcd_wire::BlockId;
use xcd_wire::frame::{UNKNOWN_TAG, encode_tile};

use super::{RunCtx, TileSlices, Worker, WorkerError, WorkerId, max_tile_items};
use crate::remote::{Daemon, RemoteError, TileStream};

/// One device of one daemon.
pub(crate) struct RemoteWorker {
    id: WorkerId,
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
    answered: Arc<AtomicBool>,
    /// Whether a check is running.
    checking: Arc<AtomicBool>,
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

/// How long a tile of `count` items may wait for its result, given the recent seconds per item
/// (0 before any tile is timed). The scheduler's simulation (`crate::schedule::sim`) gives up
/// on a stalled worker by the same rule.
pub(crate) fn stall_deadline(per_item: f64, count: u32) -> Duration {
    if per_item <= 0.0 {
        return FIRST_TILE_WAIT;
    }
    let expected = Duration::from_secs_f64((per_item * f64::from(count) * STALL_FACTOR).min(3600.0));
    expected.max(STALL_FLOOR)
}

impl RemoteWorker {
    /// The worker of device `device` (its index in the daemon's inventory) of `daemon`.
    pub(crate) fn new(id: WorkerId, daemon: Arc<Daemon>, device: usize, runtime: tokio::runtime::Handle) -> Self {
        RemoteWorker {
            id,
            daemon,
            device,
            runtime,
            stream: Mutex::new(None),
            next_tag: AtomicU32::new(0),
            per_item: AtomicU64::new(0),
            stalled: Mutex::new(None),
        }
    }

    /// The device as the daemon described it.
    pub(crate) fn device(&self) -> Option<&xcd_wire::DeviceInfo> {
        self.daemon.devices.get(self.device)
    }

    /// How long a tile of `count` items may wait for its result.
    fn deadline(&self, count: u32) -> Duration {
        stall_deadline(f64::from_bits(self.per_item.load(Ordering::Relaxed)), count)
    }

    /// The stall this daemon is under, if it still is. A run never waits on the check: every
    /// [`STALL_RECHECK`] one runs in the background (`GET /v1/capacity`, with the request's
    /// timeout), and the first run after it succeeds takes the daemon back.
    fn still_stalled(&self) -> Result<(), RemoteError> {
        use std::sync::atomic::Ordering::SeqCst;
        let mut slot = self.stalled.lock();
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

impl Worker for RemoteWorker {
    fn id(&self) -> &WorkerId {
        &self.id
    }

    fn about(&self) -> String {
        format!(
            "remote worker {}, depth {}, round trip {:.2} ms",
            self.id.name,
            self.daemon.depth,
            self.daemon.rtt.as_secs_f64() * 1e3
        )
    }

    fn lanes(&self) -> usize {
        self.daemon.depth as usize
    }

    fn round_trip(&self) -> Duration {
        self.daemon.rtt
    }

    fn max_tile(&self, ctx: &RunCtx) -> u32 {
        let device = self.daemon.devices.get(self.device).map_or(u64::MAX, |d| d.max_buffer_bytes);
        // The daemon's frame limit bounds a tile as much as its device's buffers.
        max_tile_items(&ctx.block.desc, device.min(256 << 20))
    }

    fn prepare(&self, ctx: &RunCtx) -> Result<(), WorkerError> {
        self.still_stalled()?;
        let mut slot = self.stream.lock();
        let open = matches!(slot.as_ref(), Some((id, stream)) if *id == ctx.id && !stream.is_closed());
        let daemon = self.daemon.clone();
        // Every run may bring whole arrays of its own, even on a stream already open for its
        // block: those the daemon does not hold yet go up before any tile names them.
        let ready = || async {
            daemon.prepare(ctx.id, &ctx.block.desc, &ctx.whole).await?;
            if open {
                return Ok(None);
            }
            TileStream::open(daemon.clone(), ctx.id, self.device, u64::from(ctx.items)).await.map(Some)
        };
        // A daemon that restarted has forgotten the block: it is registered again, once.
        let opened = self.runtime.block_on(async {
            match ready().await {
                Err(RemoteError::Forgotten { .. }) => {
                    daemon.forget();
                    ready().await
                }
                done => done,
            }
        })?;
        if let Some(stream) = opened {
            *slot = Some((ctx.id, Arc::new(stream)));
        }
        Ok(())
    }

    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError> {
        let stream = {
            let slot = self.stream.lock();
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
        let inputs: Vec<&[u8]> = tile.inputs().collect();
        let wholes: Vec<xcd_wire::ArrayHash> = ctx.whole.iter().map(|w| w.hash).collect();
        let frame = |tag| Bytes::from(encode_tile(tag, tile.tile, &ctx.params, &wholes, &inputs));
        let sent = Instant::now();
        let outputs = match self.send(&stream, &frame, tile.tile.count) {
            // The daemon dropped a whole array this program sent it (for room, or it restarted
            // within the run): sent again, and the tile once more.
            Err(WorkerError::Remote(RemoteError::Forgotten { .. })) => {
                self.daemon.forget();
                self.runtime.block_on(self.daemon.prepare(ctx.id, &ctx.block.desc, &ctx.whole))?;
                self.send(&stream, &frame, tile.tile.count)?
            }
            answered => answered?,
        };
        self.timed(tile.tile.count, sent.elapsed());
        tile.write_joined(&self.id, &outputs)
    }
}

impl RemoteWorker {
    /// Sends a tile of `count` items (`frame` makes its frame for a tag) on `stream` and waits
    /// for its result, or marks the daemon stalled when none comes within the tile's deadline.
    fn send(
        &self,
        stream: &Arc<TileStream>,
        frame: &dyn Fn(u32) -> Bytes,
        count: u32,
    ) -> Result<xcd_wire::Rope, WorkerError> {
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed) % UNKNOWN_TAG;
        let answer = stream.send(tag, frame(tag))?;
        let wait = self.deadline(count);
        // The timer must be made inside the runtime, hence the async block.
        match self.runtime.block_on(async move { tokio::time::timeout(wait, answer).await }) {
            Ok(answer) => Ok(answer.map_err(|_| RemoteError::Failed {
                addr: self.daemon.addr.clone(),
                detail: "the tile stream ended".into(),
            })??),
            Err(_) => {
                let stalled = RemoteError::Stalled { addr: self.daemon.addr.clone(), secs: wait.as_secs_f64() };
                *self.stalled.lock() = Some(Stalled {
                    error: stalled.clone(),
                    checked: Instant::now(),
                    answered: Arc::default(),
                    checking: Arc::default(),
                });
                // Every other tile waiting on this stream fails now rather than at its own deadline.
                stream.abort();
                self.stream.lock().take();
                Err(stalled.into())
            }
        }
    }
}

/// One worker per served device of each of `daemons`, named `remote:<host>:<device id>`, with
/// the port too where one host runs several daemons (`in_use`: the hosts of daemons connected
/// before, so that a daemon that joins later is told apart too). A device the daemon has taken
/// out of service gets no worker.
pub(crate) fn workers_of(
    daemons: Vec<Daemon>,
    in_use: &[String],
    runtime: &tokio::runtime::Handle,
) -> Vec<RemoteWorker> {
    let mut hosts: Vec<&str> = daemons.iter().map(|d| d.host.as_str()).collect();
    hosts.extend(in_use.iter().map(String::as_str));
    let shown: Vec<String> = daemons
        .iter()
        .map(|d| if hosts.iter().filter(|h| **h == d.host).count() > 1 { d.addr.clone() } else { d.host.clone() })
        .collect();
    let mut workers = Vec::new();
    for (daemon, shown) in daemons.into_iter().zip(shown) {
        let daemon = Arc::new(daemon);
        let at = super::DaemonAt { addr: daemon.addr.clone(), host: daemon.host.clone() };
        for (device, info) in daemon.devices.iter().enumerate().filter(|(_, info)| info.lost.is_none()) {
            let id = WorkerId::remote(&shown, &info.id, at.clone());
            workers.push(RemoteWorker::new(id, daemon.clone(), device, runtime.clone()));
        }
    }
    workers
}
