//! Pages rendered on the server with askama (HTML escaped by the templates, no script or style
//! from anywhere else): xcmon's page, with the daemons found by multicast DNS grouped by pool and
//! the runs programs sent, each run's split across workers as an SVG bar.
//!
//! Owns the view models and templates under `ui/templates/`. It must not serve anything (the
//! binaries do) nor read the network: it turns what the monitor store holds into HTML.
#![forbid(unsafe_code)]

pub mod daemons;
pub mod runs;

use askama::Template;
pub use daemons::{DaemonView, DaemonsPage, PoolView};
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
