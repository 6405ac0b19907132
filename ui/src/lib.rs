//! Pages rendered on the server with askama (HTML escaped by the templates, no script or style
//! from anywhere else): xcmon's page, with the daemons found by multicast DNS grouped by pool and
//! the runs programs sent (each run's split across workers as an SVG bar, and its own page with
//! its timeline; each daemon's throughput as an SVG chart), and the daemon's own page with the form that asks for its secret.
//!
//! Owns the view models and templates under `ui/templates/` (one stylesheet, `style.html`, for
//! every page). It must not serve anything (the binaries do) nor read the network or a daemon's
//! state: its callers turn what they hold into these views.
#![forbid(unsafe_code)]

pub mod chart;
pub mod daemon;
pub mod daemons;
pub mod run;
pub mod runs;

pub use askama;
use askama::Template;
pub use chart::{Chart, Samples, Unit};
pub use daemon::{DaemonPage, DeviceRow, LoginPage, RefusalRow, WorkRow};
pub use daemons::{DaemonView, DaemonsPage, LiveView, PoolView};
pub use run::RunPage;
pub use runs::{RunView, RunsPage, Share};

/// xcmon's whole page: the daemons and runs sections (already rendered) and the script that
/// keeps them live over server-sent events.
#[derive(Debug, Template)]
#[template(path = "xcmon.html")]
pub struct MonitorPage {
    /// The trace port programs send to.
    pub trace_port: u16,
    /// The daemons section's HTML.
    pub daemons: String,
    /// The runs section's HTML.
    pub runs: String,
}
