//! The daemon xcd as a library: serves this machine's devices over HTTP/2 with TLS.
//!
//! Owns the router and its endpoints, the TLS identity, the secret and version checks, the
//! NIMBY and memory declines, the tile stream, and the metrics. It reaches devices only through
//! the engine's handles and must not touch a GPU API, settings files or the process's
//! environment: the `xcd` binary parses its flags and variables and hands over a [`Config`].
//! Tests run the real server in-process with [`serve`] on a port-0 listener, or the router
//! alone with [`router`].
//!
//! Layout:
//! - [`routes`]: the endpoints (`info`, `blocks`, `tiles`) and [`router`];
//! - `tile`: one tile's way through the daemon (a run opened, a frame checked into a job, the
//!   job run and counted), for both tile endpoints; `stream`: the tile stream's task, its intake
//!   of frames and the taking of its answers;
//! - [`guard`]: the secret, version and layout checks;
//! - [`problem`]: [`ApiError`], the one mapping of refusals to problem answers;
//! - [`state`]: [`AppState`] and its rooms (the secret, limits and budgets, the block store,
//!   open streams, devices), each with private fields; [`Config`], [`Limits`], [`Secret`];
//! - [`serve`]: the accept loop over TLS or plain TCP, and the graceful drain;
//! - [`open`]: the requests open on a connection, and when each answer is due;
//! - [`tls`]: the certificate and key under `XCD_HOME`;
//! - [`nimby`]: the owner's hours;
//! - [`metrics`]: Prometheus series;
//! - [`activity`]: recent work, refusals and throughput, for the page and `/v1/capacity`;
//! - [`page`]: the daemon's own page at `/` and the form that asks for its secret;
//! - [`proxy`]: who sent a request, believing `X-Forwarded-For` only from trusted proxies;
//! - [`admission`]: connection slots, unproven (no secret shown yet) and proven, budgeted apart.
//! - [`wrong_secrets`]: wrong secrets counted per address (IPv6 by /64) and in total; an address that
//!   sent too many is held back for a while.
#![forbid(unsafe_code)]

pub mod activity;
pub mod admission;
pub mod guard;
pub mod held;
pub mod metrics;
pub mod nimby;
pub mod open;
pub mod page;
pub mod problem;
pub mod proxy;
pub mod routes;
pub mod serve;
pub mod state;
mod stream;
mod tile;
pub mod tls;
pub mod wrong_secrets;

pub use activity::Peer;
pub use nimby::Nimby;
pub use problem::ApiError;
pub use proxy::TrustedProxies;
pub use routes::{ROUTES, router};
pub use serve::serve;
pub use state::{AppState, Availability, Config, Limits, Secret};
pub use tls::Identity;
