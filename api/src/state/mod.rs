//! What every request handler shares: the daemon's settings, its devices, the blocks registered
//! with it, the whole arrays it holds, and its counters.

use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use xcd_engine::DeviceHandle;
use xcd_engine::whole::WholeCache;
use xcd_wire::{BlockDesc, BlockId, ProblemCode};

use crate::activity::{Activity, Peer};
use crate::metrics::Metrics;
use crate::nimby::Nimby;
use crate::problem::ApiError;

/// A secret; compared in constant time, never printed.
#[derive(Clone)]
pub struct Secret {
    hash: [u8; 32],
    /// Signs the page's cookies: derived from the secret, never the secret itself.
    page_key: [u8; 32],
}

type PageMac = hmac::Hmac<sha2::Sha256>;

impl Secret {
    /// Wraps the secret's text.
    pub fn new(text: &str) -> Self {
        let page_key = xcd_wire::content_hash(format!("xcd page cookie\0{text}").as_bytes());
        Secret { hash: xcd_wire::content_hash(text.as_bytes()), page_key }
    }

    fn page_mac(&self, issued: u64) -> PageMac {
        use hmac::Mac;
        let mut mac = <PageMac as Mac>::new_from_slice(&self.page_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(&issued.to_le_bytes());
        mac
    }

    /// The page's cookie value for a browser that gave the secret at `issued` (Unix seconds).
    pub fn page_token(&self, issued: u64) -> String {
        use hmac::Mac;
        format!("{issued}.{}", hex::encode(self.page_mac(issued).finalize().into_bytes()))
    }

    /// True when `token` is a page cookie this secret issued at most `lifetime` seconds before
    /// `now` (and not after it, but for a minute of clock difference).
    pub fn page_token_valid(&self, token: &str, now: u64, lifetime: u64) -> bool {
        use hmac::Mac;
        let Some((issued, tag)) = token.split_once('.') else {
            return false;
        };
        let (Ok(issued), Ok(tag)) = (issued.parse::<u64>(), hex::decode(tag)) else {
            return false;
        };
        issued <= now.saturating_add(60)
            && now.saturating_sub(issued) <= lifetime
            && self.page_mac(issued).verify_slice(&tag).is_ok()
    }

    /// True when `given` is the secret. Both sides are hashed first, so the comparison takes the
    /// same time whatever the length or content of `given`.
    pub fn matches(&self, given: &str) -> bool {
        use subtle::ConstantTimeEq;
        bool::from(self.hash.ct_eq(&xcd_wire::content_hash(given.as_bytes())))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Bounds on what one client may make the daemon hold or do.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest tile frame (and single-tile body), in bytes.
    pub max_frame_bytes: u64,
    /// Largest block registration body, in bytes.
    pub max_block_bytes: usize,
    /// Largest whole array, in bytes.
    pub max_array_bytes: usize,
    /// Whole arrays held at once, in bytes; the least recently used go first.
    pub array_cache_bytes: u64,
    /// Blocks held at once.
    pub max_blocks: usize,
    /// Block descriptions held at once, in bytes, each counted as at least [`BLOCK_WEIGHT`]
    /// (about what a device keeps for a small block's pipeline).
    pub max_block_store_bytes: u64,
    /// Tile streams open at once.
    pub max_streams: u64,
    /// Connections that have shown the secret, open at once.
    pub max_connections: usize,
    /// Connections that have not shown the secret yet, open at once; the oldest is closed to make
    /// room for a new one ([`crate::admission`]).
    pub unproven_connections: usize,
    /// Of those, from one address (IPv6: one /64); the address's oldest is closed to make room. A
    /// trusted proxy has no such share.
    pub unproven_per_address: usize,
    /// Time from accepting a connection to a request on it showing the secret (TLS handshake
    /// included); a connection that has not by then is closed.
    pub prove_within: Duration,
    /// A tile stream that sends nothing for this long with no tile in flight, or reads no result
    /// for this long, is closed.
    pub stream_idle: Duration,
    /// Time for a TLS handshake.
    pub handshake: Duration,
    /// Time for an HTTP/1.1 request's headers to arrive (a client that trickles them, slowloris,
    /// is cut off).
    pub header_read: Duration,
    /// Time to receive a whole block, array or single-tile body.
    pub body: Duration,
    /// Bytes of block, array and single-tile bodies being received at once, in all (each counted
    /// by its `Content-Length`, or its endpoint's limit without one); past it, or past half of it
    /// from one client address, an upload is refused as `busy`.
    pub upload_bytes: u64,
    /// Tile data held at once, in all: each tile from the moment its frame starts to arrive (its
    /// frame's bytes and its results' bytes) until its results have gone to the client. A tile
    /// stream waits for room, reading nothing meanwhile; a single tile without room is refused as
    /// `busy`. One client address (IPv6: one /64) holds at most half; a tile larger than that
    /// counts as that.
    pub tile_bytes: u64,
    /// A connection with no request open for this long is closed (HTTP/2 GOAWAY, or the end of
    /// an HTTP/1.1 keep-alive), however often it answers or sends pings.
    pub connection_idle: Duration,
    /// Wrong secrets one address may send before it is held back.
    pub secret_failures: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 256 << 20,
            max_block_bytes: 32 << 20,
            max_array_bytes: 512 << 20,
            array_cache_bytes: 2 << 30,
            max_blocks: 1024,
            max_block_store_bytes: 256 << 20,
            max_streams: 256,
            max_connections: 4096,
            unproven_connections: 512,
            unproven_per_address: 64,
            prove_within: Duration::from_secs(10),
            stream_idle: Duration::from_secs(60),
            handshake: Duration::from_secs(10),
            header_read: Duration::from_secs(30),
            connection_idle: Duration::from_secs(300),
            body: Duration::from_secs(60),
            upload_bytes: 1 << 30,
            tile_bytes: 1 << 30,
            secret_failures: crate::wrong_secrets::FREE_FAILURES,
        }
    }
}

impl Limits {
    /// These limits with `bytes` of clients' data held at once, in all (`-memory`): 4/17 for
    /// uploads being received, 4/17 for tile data, 8/17 for whole arrays, 1/17 for block
    /// descriptions (4352 MiB gives 1 GiB, 1 GiB, 2 GiB and 256 MiB: the default limits). The
    /// largest frame, array and block are held to what one client may hold of their budgets (half
    /// of the uploads' and of the tile data's), so that one too large for them is refused as too
    /// large, saying the limit, rather than as busy for ever: by default 256 MiB, 512 MiB, 32 MiB.
    pub fn with_memory(self, bytes: u64) -> Self {
        let part = |n: u64| bytes / 17 * n;
        let (uploads, tiles, arrays, blocks) = (part(4), part(4), part(8), part(1));
        Limits {
            upload_bytes: uploads,
            tile_bytes: tiles,
            array_cache_bytes: arrays,
            max_block_store_bytes: blocks,
            max_frame_bytes: self.max_frame_bytes.min(uploads / 2).min(tiles / 2),
            max_array_bytes: self.max_array_bytes.min(uploads as usize / 2).min(arrays as usize),
            max_block_bytes: self.max_block_bytes.min(blocks as usize),
            ..self
        }
    }
}

/// The daemon's settings, parsed once by the binary.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `XC_PAR_SECRET`, if set.
    pub secret: Option<Secret>,
    /// `-nimby` hours.
    pub nimby: Nimby,
    /// `-pool` name.
    pub pool: Option<String>,
    /// Bounds.
    pub limits: Limits,
    /// Tiles a program should keep in flight per device (3 when zero).
    pub depth: u32,
    /// The version this daemon says it is, where tests make it pretend to be another (None: the
    /// workspace version). The binary sets it only in debug builds.
    pub version: Option<String>,
    /// The certificate's SHA-256 in hex, shown on the page (None with `-plain`).
    pub fingerprint: Option<String>,
    /// This machine's name, for the page's title.
    pub host: Option<String>,
    /// Proxies whose `X-Forwarded-For` names the client (`-trust-proxy`).
    pub trusted_proxies: crate::proxy::TrustedProxies,
    /// Where each device's form of a block comes from (`-trust-forms` trusts carried ones).
    pub forms: xcd_engine::FormPolicy,
}

/// The least a registered block counts for against [`Limits::max_block_store_bytes`].
pub const BLOCK_WEIGHT: u64 = 256 << 10;

/// Registered blocks, and the bytes they count for.
#[derive(Default)]
struct Blocks {
    by_id: HashMap<BlockId, Arc<BlockDesc>>,
    bytes: u64,
}

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) devices: Vec<DeviceHandle>,
    blocks: RwLock<Blocks>,
    /// Taken while a new block is checked and loaded, so that the room checked for it is there
    /// when it is kept.
    pub(crate) registering: tokio::sync::Mutex<()>,
    /// Whole arrays' bytes by content hash, bounded by `Limits::array_cache_bytes` only.
    arrays: Mutex<WholeCache<Arc<[u8]>>>,
    pub(crate) draining: AtomicBool,
    /// Tells open tile streams to stop reading new tiles.
    drain_tx: tokio::sync::watch::Sender<bool>,
    pub(crate) drain_rx: tokio::sync::watch::Receiver<bool>,
    pub(crate) in_flight: AtomicU64,
    /// Tiles in flight on each device, in `devices` order.
    in_flight_by_device: Vec<AtomicU64>,
    /// Microseconds each device has had tiles in flight, summed over its tiles, in `devices`
    /// order: read twice, the mean number of tiles in flight between the readings.
    tile_micros_by_device: Vec<AtomicU64>,
    pub(crate) streams: AtomicU64,
    pub(crate) metrics: Metrics,
    pub(crate) activity: Activity,
    pub(crate) failed_secrets: crate::wrong_secrets::FailedSecrets,
    /// Upload bytes being received (`Limits::upload_bytes`).
    pub(crate) uploads: Arc<crate::held::Budget>,
    /// Tile data held (`Limits::tile_bytes`).
    pub(crate) tile_data: Arc<crate::held::Budget>,
}

/// A tile counted as in flight ([`AppState::in_flight`]) until dropped.
pub(crate) struct InFlight {
    state: AppState,
    index: Option<usize>,
    since: std::time::Instant,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let inner = &self.state.0;
        inner.in_flight.fetch_sub(1, Ordering::SeqCst);
        inner.metrics.in_flight.dec();
        if let Some(i) = self.index {
            if let Some(n) = inner.in_flight_by_device.get(i) {
                n.fetch_sub(1, Ordering::SeqCst);
            }
            if let Some(micros) = inner.tile_micros_by_device.get(i) {
                let took = u64::try_from(self.since.elapsed().as_micros()).unwrap_or(u64::MAX);
                micros.fetch_add(took, Ordering::SeqCst);
            }
        }
    }
}

/// The daemon's shared state; cheap to clone.
#[derive(Clone)]
pub struct AppState(pub(crate) Arc<Inner>);

impl AppState {
    /// State for a daemon serving `devices` with `config`.
    pub fn new(config: Config, devices: Vec<DeviceHandle>) -> Self {
        let failed_secrets = crate::wrong_secrets::FailedSecrets::new(config.limits.secret_failures);
        let uploads = crate::held::Budget::new(config.limits.upload_bytes);
        let tile_data = crate::held::Budget::new(config.limits.tile_bytes);
        let arrays = Mutex::new(WholeCache::with_count(config.limits.array_cache_bytes, usize::MAX));
        let (drain_tx, drain_rx) = tokio::sync::watch::channel(false);
        let in_flight_by_device = devices.iter().map(|_| AtomicU64::new(0)).collect();
        let tile_micros_by_device = devices.iter().map(|_| AtomicU64::new(0)).collect();
        AppState(Arc::new(Inner {
            drain_tx,
            drain_rx,
            config,
            devices,
            blocks: RwLock::default(),
            registering: tokio::sync::Mutex::new(()),
            arrays,
            draining: AtomicBool::new(false),
            in_flight: AtomicU64::new(0),
            in_flight_by_device,
            tile_micros_by_device,
            streams: AtomicU64::new(0),
            metrics: Metrics::default(),
            activity: Activity::default(),
            uploads,
            tile_data,
            failed_secrets,
        }))
    }

    /// Counts and keeps a refusal of `what` (`GET /v1/devices`, a tile of block …) asked by `peer`.
    pub fn refused(&self, peer: Peer, code: ProblemCode, what: String) {
        self.0.metrics.refused(code.as_str());
        self.0.activity.refused(peer, code.as_str(), what);
    }

    /// What the daemon did lately.
    pub fn activity(&self) -> &Activity {
        &self.0.activity
    }

    /// Stops taking new work; tiles in flight finish.
    pub fn drain(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
        self.0.drain_tx.send_replace(true);
    }

    /// Tiles running or queued now.
    pub fn tiles_in_flight(&self) -> u64 {
        self.0.in_flight.load(Ordering::SeqCst)
    }

    /// Tiles running or queued on each device now, in device order.
    pub fn tiles_in_flight_by_device(&self) -> Vec<u64> {
        self.0.in_flight_by_device.iter().map(|n| n.load(Ordering::SeqCst)).collect()
    }

    /// Seconds each device has had tiles in flight since the start, summed over its tiles, in
    /// device order.
    pub fn tile_seconds_by_device(&self) -> Vec<f64> {
        self.0.tile_micros_by_device.iter().map(|n| n.load(Ordering::SeqCst) as f64 / 1e6).collect()
    }

    /// Counts a tile on `device` as in flight until the guard is dropped, however its future
    /// ends (a stream that goes away mid-tile drops it too).
    pub(crate) fn in_flight(&self, device: &DeviceHandle) -> InFlight {
        let index = self.0.devices.iter().position(|d| d.info().id == device.info().id);
        self.0.in_flight.fetch_add(1, Ordering::SeqCst);
        self.0.metrics.in_flight.inc();
        if let Some(n) = index.and_then(|i| self.0.in_flight_by_device.get(i)) {
            n.fetch_add(1, Ordering::SeqCst);
        }
        InFlight { state: self.clone(), index, since: std::time::Instant::now() }
    }

    /// The version this daemon says it is.
    pub(crate) fn version(&self) -> &str {
        self.0.config.version.as_deref().unwrap_or(xcd_wire::VERSION)
    }

    pub(crate) fn depth(&self) -> u32 {
        if self.0.config.depth == 0 { 3 } else { self.0.config.depth }
    }

    pub(crate) fn block(&self, id: &str) -> Result<Arc<BlockDesc>, ApiError> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(id, &mut bytes).map_err(|_| {
            let shown: String = id.chars().take(80).collect();
            ApiError::BadRequest(format!(
                "{shown:?} is not a block id (64 hex digits): use the id that POST /v1/blocks answered"
            ))
        })?;
        let blocks = self.0.blocks.read();
        blocks.by_id.get(&BlockId(bytes)).cloned().ok_or_else(|| ApiError::UnknownBlock(id.to_owned()))
    }

    /// Whether a new block of `size` bytes fits, by count and by bytes; checked before any
    /// device loads it, so that a refused block costs nothing.
    pub(crate) fn room_for_block(&self, size: usize) -> Result<(), ApiError> {
        let blocks = self.0.blocks.read();
        let limits = &self.0.config.limits;
        let weight = (size as u64).max(BLOCK_WEIGHT);
        if blocks.by_id.len() >= limits.max_blocks || blocks.bytes + weight > limits.max_block_store_bytes {
            return Err(ApiError::Busy(format!(
                "this daemon holds its most blocks ({} of {}, {} of {} MiB); a restart forgets them",
                blocks.by_id.len(),
                limits.max_blocks,
                blocks.bytes >> 20,
                limits.max_block_store_bytes >> 20
            )));
        }
        Ok(())
    }

    /// Keeps a block that [`AppState::room_for_block`] found room for (under `registering`).
    pub(crate) fn keep_block(&self, desc: Arc<BlockDesc>, size: usize) {
        let mut blocks = self.0.blocks.write();
        if blocks.by_id.insert(desc.id(), desc).is_none() {
            blocks.bytes += (size as u64).max(BLOCK_WEIGHT);
        }
    }

    pub(crate) fn array(&self, hash: &[u8; 32]) -> Option<Arc<[u8]>> {
        self.0.arrays.lock().get(hash).cloned()
    }

    pub(crate) fn keep_array(&self, hash: [u8; 32], data: Arc<[u8]>) {
        let bytes = data.len() as u64;
        self.0.arrays.lock().keep(hash, data, bytes);
    }

    pub(crate) fn device(&self, which: Option<&str>) -> Result<(usize, DeviceHandle), ApiError> {
        let devices = &self.0.devices;
        let index = match which {
            None => 0,
            Some(text) => match text.parse::<usize>() {
                Ok(i) => i,
                Err(_) => devices
                    .iter()
                    .position(|d| d.info().id == text)
                    .ok_or_else(|| ApiError::UnknownDevice(text.to_owned()))?,
            },
        };
        let device = devices.get(index).ok_or_else(|| ApiError::UnknownDevice(index.to_string()))?;
        Ok((index, device.clone()))
    }

    /// Refuses new work while draining or inside the NIMBY hours.
    pub(crate) fn admit(&self) -> Result<(), ApiError> {
        if self.0.draining.load(Ordering::SeqCst) {
            return Err(ApiError::Draining);
        }
        if let Some((range, until)) = self.0.config.nimby.inside_now() {
            let retry_after = (until - chrono::Local::now()).num_seconds().max(1) as u64;
            return Err(ApiError::DeclinedNimby { range, until: until.format("%H:%M").to_string(), retry_after });
        }
        let lost: Vec<String> = self.0.devices.iter().filter_map(|d| d.out_of_service()).collect();
        if !self.0.devices.is_empty() && lost.len() == self.0.devices.len() {
            return Err(ApiError::DeviceFailed(format!(
                "every device of this daemon is out of service ({}); it is trying to bring them back, and programs run their tiles elsewhere meanwhile",
                lost.join("; ")
            )));
        }
        Ok(())
    }

    /// Whether the daemon takes work now, and if not why.
    pub fn availability(&self) -> Availability {
        match self.admit() {
            Ok(()) => Availability::Accepting,
            Err(ApiError::Draining) => Availability::Draining,
            Err(ApiError::DeclinedNimby { until, .. }) => Availability::Nimby { until },
            Err(other) => Availability::Declined(other.code()),
        }
    }

    /// Refuses a run whose data cannot fit the device's free memory (its total where the
    /// driver does not tell what is free).
    pub(crate) async fn admit_memory(&self, device: &DeviceHandle, needed: u64) -> Result<(), ApiError> {
        let info = device.status().await.map_err(ApiError::from)?;
        let room = info.memory_free.or(info.memory_total);
        match room {
            Some(free) if needed > free => Err(ApiError::DeclinedMemory { device: info.id, needed, free }),
            _ => Ok(()),
        }
    }
}

/// Whether the daemon takes work now ([`AppState::availability`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// It takes work.
    Accepting,
    /// It is shutting down.
    Draining,
    /// Inside the owner's NIMBY hours, until a local time (`17:00`).
    Nimby {
        /// When they end.
        until: String,
    },
    /// It declines for another reason (every device out of service).
    Declined(ProblemCode),
}

impl Availability {
    /// Whether it takes work.
    pub fn is_accepting(&self) -> bool {
        *self == Availability::Accepting
    }

    /// Why not, in a few words, as its mDNS advertisement and page say it (`draining`, `nimby
    /// until 17:00`, a problem code); `None` while it takes work.
    pub fn why(&self) -> Option<String> {
        match self {
            Availability::Accepting => None,
            Availability::Draining => Some(ProblemCode::Draining.as_str().to_owned()),
            Availability::Nimby { until } => Some(format!("nimby until {until}")),
            Availability::Declined(code) => Some(code.as_str().to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_is_shared_out_and_the_largest_of_each_fits_its_share() {
        let default = Limits::default().with_memory(4352 << 20);
        let today = Limits::default();
        assert_eq!(
            (default.upload_bytes, default.tile_bytes, default.array_cache_bytes, default.max_block_store_bytes),
            (today.upload_bytes, today.tile_bytes, today.array_cache_bytes, today.max_block_store_bytes),
            "the default is today's budgets"
        );
        assert_eq!(default.max_frame_bytes, today.max_frame_bytes);
        assert_eq!(default.max_array_bytes, today.max_array_bytes);
        assert_eq!(default.max_array_bytes, 512 << 20, "half the uploads' budget, what one client may send");
        let small = Limits::default().with_memory(170 << 20);
        assert_eq!(
            small.upload_bytes + small.tile_bytes + small.array_cache_bytes + small.max_block_store_bytes,
            170 << 20
        );
        assert_eq!(small.max_frame_bytes, 20 << 20, "a frame fits one client's half of the uploads and the tiles");
        assert_eq!(small.max_array_bytes, 20 << 20);
        assert_eq!(small.max_block_bytes, 10 << 20);
    }

    #[test]
    fn page_tokens_are_bound_to_the_secret_and_expire() {
        let secret = Secret::new("correct-horse-battery");
        let day = 24 * 3600;
        let token = secret.page_token(1_000_000);
        assert!(secret.page_token_valid(&token, 1_000_000 + day, 30 * day));
        assert!(!secret.page_token_valid(&token, 1_000_000 + 31 * day, 30 * day), "expired");
        assert!(!secret.page_token_valid(&token, 1_000_000 - 3600, 30 * day), "issued in the future");
        assert!(!Secret::new("another").page_token_valid(&token, 1_000_000, 30 * day), "another secret's");
        let (issued, tag) = token.split_once('.').expect("issued.tag");
        assert!(!secret.page_token_valid(
            &format!("{}.{tag}", issued.parse::<u64>().expect("a number") + 1),
            1_000_001,
            30 * day
        ));
        for bad in ["", ".", "x.y", "1000000", "1000000.zz", &format!("1000000.{}", &tag[..10])] {
            assert!(!secret.page_token_valid(bad, 1_000_000, 30 * day), "{bad:?}");
        }
        assert!(!token.contains("correct-horse-battery") && !format!("{secret:?}").contains("horse"));
    }
}
