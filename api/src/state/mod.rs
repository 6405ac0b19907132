//! What every request handler shares: the daemon's state, in rooms of its own, each a module
//! with private fields and a small interface:
//! - [`secret`]: the secret, the page's cookies and the wrong secrets by address ([`SecretCheck`]);
//! - [`limits`]: [`Limits`], set once, and the budgets of bytes held while requests run
//!   ([`Budgets`]);
//! - [`blocks`]: the registered blocks and the whole arrays ([`BlockStore`]);
//! - [`streams`]: the tile streams open and the drain ([`Streams`]);
//! - [`devices`]: the devices and their tiles in flight ([`DeviceSet`]).
//!
//! This module holds them together in [`AppState`], with the settings the binary parsed
//! ([`Config`], kept as [`Profile`] less what the rooms took), the metrics and the activity, and
//! says whether the daemon takes work now ([`Availability`]). Handlers reach each room through
//! its accessor; no field is open.

mod blocks;
mod devices;
mod limits;
mod secret;
mod streams;

use std::sync::Arc;

use xcd_engine::DeviceHandle;
use xcd_wire::ProblemCode;

pub(crate) use blocks::BlockStore;
pub(crate) use devices::DeviceSet;
pub(crate) use limits::Budgets;
pub use limits::{BLOCK_WEIGHT, Limits};
pub use secret::Secret;
pub(crate) use secret::SecretCheck;
pub(crate) use streams::Streams;

use crate::activity::{Activity, Peer};
use crate::metrics::Metrics;
use crate::nimby::Nimby;
use crate::problem::ApiError;

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
    pub forms: xcd_wire::FormPolicy,
}

/// What the daemon says of itself and decides by, from [`Config`]: read-only once made.
#[derive(Debug)]
pub(crate) struct Profile {
    /// `-nimby` hours.
    pub(crate) nimby: Nimby,
    /// `-pool` name.
    pub(crate) pool: Option<String>,
    /// Tiles a program should keep in flight per device.
    pub(crate) depth: u32,
    /// The version this daemon says it is.
    pub(crate) version: String,
    /// The certificate's SHA-256 in hex, shown on the page.
    pub(crate) fingerprint: Option<String>,
    /// This machine's name, for the page's title.
    pub(crate) host: Option<String>,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub(crate) trusted_proxies: crate::proxy::TrustedProxies,
    /// Where each device's form of a block comes from.
    pub(crate) forms: xcd_wire::FormPolicy,
}

struct Inner {
    profile: Profile,
    secret: SecretCheck,
    budgets: Budgets,
    store: BlockStore,
    streams: Streams,
    devices: DeviceSet,
    metrics: Metrics,
    activity: Activity,
}

/// A tile counted as in flight ([`AppState::in_flight`]) until dropped.
pub(crate) struct InFlight {
    state: AppState,
    index: Option<usize>,
    since: std::time::Instant,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.0.devices.end(self.index, self.since);
        self.state.0.metrics.in_flight.dec();
    }
}

/// The daemon's shared state; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl AppState {
    /// State for a daemon serving `devices` with `config`.
    pub fn new(config: Config, devices: Vec<DeviceHandle>) -> Self {
        let Config { secret, nimby, pool, limits, depth, version, fingerprint, host, trusted_proxies, forms } = config;
        let profile = Profile {
            nimby,
            pool,
            depth: if depth == 0 { 3 } else { depth },
            version: version.unwrap_or_else(|| xcd_wire::VERSION.to_owned()),
            fingerprint,
            host,
            trusted_proxies,
            forms,
        };
        AppState(Arc::new(Inner {
            profile,
            secret: SecretCheck::new(secret, limits.secret_failures),
            store: BlockStore::new(&limits),
            streams: Streams::new(limits.max_streams),
            budgets: Budgets::new(limits),
            devices: DeviceSet::new(devices),
            metrics: Metrics::default(),
            activity: Activity::default(),
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
        self.0.streams.drain();
    }

    /// Tiles running or queued now.
    pub fn tiles_in_flight(&self) -> u64 {
        self.0.devices.in_flight()
    }

    /// Tiles running or queued on each device now, in device order.
    pub fn tiles_in_flight_by_device(&self) -> Vec<u64> {
        self.0.devices.in_flight_by_device()
    }

    /// Seconds each device has had tiles in flight since the start, summed over its tiles, in
    /// device order.
    pub fn tile_seconds_by_device(&self) -> Vec<f64> {
        self.0.devices.tile_seconds_by_device()
    }

    /// The settings.
    pub(crate) fn profile(&self) -> &Profile {
        &self.0.profile
    }

    /// The limits.
    pub(crate) fn limits(&self) -> &Limits {
        self.0.budgets.limits()
    }

    /// The secret and the wrong secrets.
    pub(crate) fn secret(&self) -> &SecretCheck {
        &self.0.secret
    }

    /// The budgets of bytes held.
    pub(crate) fn budgets(&self) -> &Budgets {
        &self.0.budgets
    }

    /// The blocks and whole arrays.
    pub(crate) fn store(&self) -> &BlockStore {
        &self.0.store
    }

    /// The open tile streams and the drain.
    pub(crate) fn streams(&self) -> &Streams {
        &self.0.streams
    }

    /// The devices.
    pub(crate) fn devices(&self) -> &DeviceSet {
        &self.0.devices
    }

    /// The metrics `/metrics` shows.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }

    /// Counts a tile on `device` as in flight until the guard is dropped, however its future
    /// ends (a stream that goes away mid-tile drops it too).
    pub(crate) fn in_flight(&self, device: &DeviceHandle) -> InFlight {
        let index = self.0.devices.start(device);
        self.0.metrics.in_flight.inc();
        InFlight { state: self.clone(), index, since: std::time::Instant::now() }
    }

    /// The version this daemon says it is.
    pub(crate) fn version(&self) -> &str {
        &self.0.profile.version
    }

    /// Tiles a program should keep in flight per device.
    pub(crate) fn depth(&self) -> u32 {
        self.0.profile.depth
    }

    /// Refuses new work while draining or inside the NIMBY hours, or with every device out of
    /// service.
    pub(crate) fn admit(&self) -> Result<(), ApiError> {
        if self.0.streams.draining() {
            return Err(ApiError::Draining);
        }
        if let Some((range, until)) = self.0.profile.nimby.inside_now() {
            let retry_after = (until - chrono::Local::now()).num_seconds().max(1) as u64;
            return Err(ApiError::DeclinedNimby { range, until: until.format("%H:%M").to_string(), retry_after });
        }
        self.0.devices.check_any_in_service()
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
