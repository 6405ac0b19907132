//! The JSON bodies of the daemon's REST endpoints, and its problem documents.

use serde::{Deserialize, Serialize};

use crate::{DeviceInfo, FormKind};

/// Header carrying the program's version on every request.
pub const VERSION_HEADER: &str = "xc-version";
/// Header carrying the program's data layout on every request.
pub const LAYOUT_HEADER: &str = "xc-layout";
/// Header on a tile stream: the items of the whole run, so the daemon can decline a run whose
/// data cannot fit its device.
pub const RUN_ITEMS_HEADER: &str = "xc-run-items";
/// Media type of tile and result frames.
pub const FRAMES_MEDIA_TYPE: &str = "application/vnd.xcd.frames";

/// `GET /v1/version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// The daemon's version.
    pub version: String,
    /// The daemon's data layout, e.g. `little-64`.
    pub layout: String,
    /// The kernel forms its devices take, best first.
    pub forms: Vec<FormKind>,
    /// The daemon's pool, if it has one.
    pub pool: Option<String>,
    /// Whether the daemon requires a secret.
    pub secret: bool,
}

/// `GET /v1/devices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Devices {
    /// Every device the daemon serves, with current free memory.
    pub devices: Vec<DeviceInfo>,
}

/// `GET /v1/capacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// Whether the daemon takes new tile streams now.
    pub accepting: bool,
    /// Why not, when it does not: `nimby`, `draining`.
    pub reason: Option<String>,
    /// Until when it does not (RFC 3339, local time), where that is known.
    pub until: Option<String>,
    /// Tiles running or queued on its devices now.
    pub tiles_in_flight: u64,
    /// Tiles done since the daemon started.
    pub tiles_done: u64,
    /// Items done since the daemon started: its throughput, read twice.
    pub items_done: u64,
    /// Tiles a program should keep in flight per device to hide the network.
    pub depth: u32,
    /// Largest tile frame the daemon reads, in bytes.
    pub max_frame_bytes: u64,
    /// Each device's free memory in bytes, where the driver tells, in device order.
    pub memory_free: Vec<Option<u64>>,
    /// Each device's memory in bytes, where the driver tells: what a run is measured against
    /// when free memory is unknown.
    pub memory_total: Vec<Option<u64>>,
    /// Tiles running or queued on each device now, in device order (empty from a daemon older
    /// than this field).
    #[serde(default)]
    pub in_flight_by_device: Vec<u64>,
    /// Seconds each device has had tiles in flight since the daemon started, summed over its
    /// tiles, in device order: read twice, the mean tiles in flight between the readings, which
    /// a reading of `in_flight_by_device` misses for tiles shorter than the time between reads
    /// (empty from a daemon older than this field).
    #[serde(default)]
    pub tile_seconds_by_device: Vec<f64>,
    /// Requests and tiles refused since the daemon started, by stable code ([`crate::ProblemCode`];
    /// empty from a daemon older than this field).
    #[serde(default)]
    pub refusals: std::collections::BTreeMap<String, u64>,
}

/// `POST /v1/blocks` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    /// The block's content address.
    pub id: String,
    /// The devices that loaded it (index into `/v1/devices`).
    pub devices: Vec<usize>,
}

/// `PUT /v1/arrays/{hash}` and `GET /v1/arrays/{hash}` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrayHeld {
    /// The array's SHA-256, hex.
    pub hash: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The port a daemon listens on unless told otherwise (`xcd -port`), and that a daemon named
/// without one (`XC_PAR_REMOTE=gpu-box`) is reached on.
pub const DEFAULT_PORT: u16 = 7227;

/// An error answer (RFC 9457 problem details) with a stable code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// `urn:xcd:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short title.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// Stable code, e.g. `secret_refused` ([`crate::ProblemCode`]).
    pub code: String,
    /// What happened and what to do.
    pub detail: String,
}

impl Problem {
    /// The code, if this build knows it.
    pub fn problem_code(&self) -> Option<crate::ProblemCode> {
        crate::ProblemCode::parse(&self.code)
    }
}
