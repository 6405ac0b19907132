//! One daemon as a program sees it: a pinned HTTP/2 connection, its devices, what it holds.
//!
//! Every request carries the secret (when the program has one), the version and the data layout.
//! The connection, registered blocks and uploaded whole arrays are kept for the program's life,
//! so later runs of a block reuse them; what the daemon turns out to have forgotten (a restart,
//! an array dropped for room) is forgotten here too ([`Daemon::forget`]) and sent again.

use parking_lot::Mutex;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use xcd_wire::WholeArray;
use xcd_wire::rest::{Capacity, Devices, LAYOUT_HEADER, Problem, VERSION_HEADER, VersionInfo};
use xcd_wire::{BlockDesc, BlockId, DeviceInfo, Layout, VERSION};

use super::RemoteError;
use super::pin::client_config;
use crate::home::{Home, describe};

/// How long connecting and the first answers may take.
const CONNECT: Duration = Duration::from_secs(5);
/// How long a request other than a tile stream may take, before the bytes it uploads.
const REQUEST: Duration = Duration::from_secs(15);
/// The slowest upload rate a request allows for (bytes per second) before it counts as stalled.
const SLOWEST_UPLOAD: u64 = 256 * 1024;

/// A daemon this program is connected to.
pub(crate) struct Daemon {
    /// `host:port` as the program named it: names workers and pins.
    pub(crate) addr: String,
    /// The host part, for worker names.
    pub(crate) host: String,
    base: String,
    client: reqwest::Client,
    secret: Option<String>,
    /// Its devices, in its order.
    pub(crate) devices: Vec<DeviceInfo>,
    /// Tiles to keep in flight per device.
    pub(crate) depth: u32,
    /// Round trip of a small request, measured at connection.
    pub(crate) rtt: Duration,
    registered: Mutex<HashSet<BlockId>>,
    arrays: Mutex<HashSet<xcd_wire::ArrayHash>>,
}

/// What every pin's settings key starts with.
pub const PIN_PREFIX: &str = "tls.pin.";

/// The settings key under which the certificate of the daemon at `addr` (`host:port`) is pinned.
pub fn pin_key(addr: &str) -> String {
    format!("{PIN_PREFIX}{addr}")
}

impl Daemon {
    /// Connects to `addr` (`host:port`) at `ip`, checks the pin, secret, version and layout,
    /// keeps the pin on first contact, and checks that the daemon takes work.
    pub(crate) async fn connect(
        addr: &str,
        ip: SocketAddr,
        home: &Home,
        secret: Option<&str>,
    ) -> Result<Daemon, RemoteError> {
        let started = Instant::now();
        let mut daemon = Daemon::open(addr, ip, home, secret).await?;
        let rtt_start = Instant::now();
        let capacity = daemon.capacity().await?;
        daemon.rtt = rtt_start.elapsed().min(started.elapsed());
        if !capacity.accepting {
            let reason = capacity.reason.unwrap_or_default();
            let until = capacity.until.map(|u| format!(" until {u}")).unwrap_or_default();
            return Err(RemoteError::Declined {
                addr: addr.to_owned(),
                detail: format!("not taking work ({reason}{until})"),
            });
        }
        daemon.depth = capacity.depth.max(1);
        daemon.devices = daemon.read_devices().await?;
        Ok(daemon)
    }

    /// `GET /v1/capacity`.
    pub(crate) async fn capacity(&self) -> Result<Capacity, RemoteError> {
        self.get::<Capacity>("/v1/capacity").await
    }

    /// `GET /v1/devices`.
    pub(crate) async fn read_devices(&self) -> Result<Vec<DeviceInfo>, RemoteError> {
        Ok(self.get::<Devices>("/v1/devices").await?.devices)
    }

    /// Connects to `addr` at `ip` and checks the pin, secret, version and layout (keeping the pin
    /// on first contact), whether or not the daemon takes work.
    pub(crate) async fn open(
        addr: &str,
        ip: SocketAddr,
        home: &Home,
        secret: Option<&str>,
    ) -> Result<Daemon, RemoteError> {
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_matches(['[', ']']).to_owned();
        let key = pin_key(addr);
        let failed = |detail: String| RemoteError::Failed { addr: addr.to_owned(), detail };
        let expected = pinned(home, &key).map_err(failed)?;
        let (mut tls, seen) = client_config(expected).map_err(|e| failed(e.to_string()))?;
        tls.alpn_protocols = vec![b"h2".to_vec()];
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .http2_prior_knowledge()
            .tcp_nodelay(true)
            .connect_timeout(CONNECT)
            .http2_keep_alive_interval(Duration::from_secs(20))
            .resolve(&host, ip)
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let port = ip.port();
        let daemon = Daemon {
            addr: addr.to_owned(),
            host: host.clone(),
            base: format!("https://{host}:{port}"),
            client,
            secret: secret.map(str::to_owned),
            devices: Vec::new(),
            depth: 3,
            rtt: Duration::ZERO,
            registered: Mutex::default(),
            arrays: Mutex::default(),
        };

        let version = match daemon.get::<VersionInfo>("/v1/version").await {
            Ok(v) => v,
            Err(RemoteError::Unreachable { reason, .. }) => {
                let presented = *seen.lock();
                if let (Some(pin), Some(presented)) = (expected, presented) {
                    if pin != presented {
                        let file = home.path().display().to_string();
                        return Err(RemoteError::PinChanged { addr: addr.to_owned(), key, file });
                    }
                }
                return Err(RemoteError::Unreachable { addr: addr.to_owned(), reason });
            }
            Err(e) => return Err(e),
        };
        if expected.is_none() {
            if let Some(presented) = *seen.lock() {
                home.set(&key, Some(&hex::encode(presented))).map_err(|e| failed(e.to_string()))?;
            }
        }
        // The daemon checked version and layout on every request; this names both if it did not.
        if version.version != VERSION {
            return Err(RemoteError::Version {
                addr: addr.to_owned(),
                detail: super::error::version_differs(&version.version),
            });
        }
        Ok(daemon)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header(VERSION_HEADER, VERSION)
            .header(LAYOUT_HEADER, Layout::native().to_string());
        if let Some(secret) = &self.secret {
            request = request.bearer_auth(secret);
        }
        request
    }

    /// Sends a request; a problem answer becomes the matching error.
    pub(crate) async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, RemoteError> {
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() && !e.is_connect() {
                RemoteError::Stalled { addr: self.addr.clone(), secs: REQUEST.as_secs_f64() }
            } else {
                RemoteError::Unreachable { addr: self.addr.clone(), reason: error_chain(&e) }
            }
        })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let problem: Option<Problem> = response.json().await.ok();
        Err(match problem {
            Some(p) => RemoteError::from_problem(&self.addr, p.problem_code(), p.detail),
            None => RemoteError::Failed { addr: self.addr.clone(), detail: format!("the daemon answered {status}") },
        })
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, RemoteError> {
        let response = self.send(self.request(reqwest::Method::GET, path).timeout(REQUEST)).await?;
        response
            .json()
            .await
            .map_err(|e| RemoteError::Failed { addr: self.addr.clone(), detail: format!("{path}: {e}") })
    }

    /// Registers the block (once per daemon) and uploads whole arrays it does not hold yet.
    pub(crate) async fn prepare(&self, id: BlockId, desc: &BlockDesc, whole: &[WholeArray]) -> Result<(), RemoteError> {
        let known = self.registered.lock().contains(&id);
        if !known {
            self.send(self.request(reqwest::Method::POST, "/v1/blocks").json(desc).timeout(REQUEST)).await?;
            self.registered.lock().insert(id);
        }
        for array in whole {
            let held = self.arrays.lock().contains(&array.hash);
            if !held {
                let path = format!("/v1/arrays/{}", array.hash);
                let wait = REQUEST + Duration::from_secs(array.data.len() as u64 / SLOWEST_UPLOAD);
                self.send(self.request(reqwest::Method::PUT, &path).body(array.data.to_vec()).timeout(wait)).await?;
                self.arrays.lock().insert(array.hash);
            }
        }
        Ok(())
    }

    /// Forgets which blocks and whole arrays the daemon holds, after it answered that it does
    /// not hold one it was sent: the next [`Daemon::prepare`] sends them again.
    pub(crate) fn forget(&self) {
        self.registered.lock().clear();
        self.arrays.lock().clear();
    }

    /// Opens a tile stream for `id` on device `device`.
    pub(crate) async fn open_stream(
        &self,
        id: BlockId,
        device: usize,
        run_items: u64,
        body: reqwest::Body,
    ) -> Result<reqwest::Response, RemoteError> {
        let path = format!("/v1/blocks/{id}/tiles?device={device}");
        let request = self
            .request(reqwest::Method::POST, &path)
            .header(xcd_wire::rest::RUN_ITEMS_HEADER, run_items)
            .header(reqwest::header::CONTENT_TYPE, xcd_wire::rest::FRAMES_MEDIA_TYPE)
            .body(body);
        // The daemon answers a stream's headers at once; the body then runs as long as the run.
        tokio::time::timeout(REQUEST, self.send(request))
            .await
            .map_err(|_| RemoteError::Stalled { addr: self.addr.clone(), secs: REQUEST.as_secs_f64() })?
    }
}

/// An error with its causes, which is where reqwest keeps what actually failed.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The fingerprint pinned under `key`, if any; says what to do with one that is not a SHA-256.
fn pinned(home: &Home, key: &str) -> Result<Option<[u8; 32]>, String> {
    let Some(text) = home.get(key).map_err(|e| e.to_string())? else { return Ok(None) };
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(&text, &mut bytes).map_err(|_| {
        format!(
            "the pin {key} in {} is not a SHA-256; remove it",
            describe(home.path().parent().unwrap_or(home.path().as_path()))
        )
    })?;
    Ok(Some(bytes))
}
