//! Pages rendered on the server with askama (HTML escaped by the templates, no script or style
//! from anywhere else): xcmon's table of runs with each run's split across workers as an SVG bar.
//!
//! Owns the view models and templates under `ui/templates/`. It must not serve anything (the
//! binaries do) nor read the network: it turns what the monitor store holds into HTML.
#![forbid(unsafe_code)]

pub mod runs;

pub use runs::{RunView, RunsPage, Share};
