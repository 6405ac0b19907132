//! What xcmon knows and shows: the runs programs send to its trace port (`XC_PAR_TRACE`), kept
//! in a bounded store that the page reads and follows live.
//!
//! Owns the trace intake ([`intake`]) and the store ([`store`]). It must not render anything
//! (the pages are the `ui` crate's business, issue 6) and must never let a sender grow its memory:
//! a line is read up to [`xcd_wire::trace::MAX_LINE`], connections are bounded, and the store
//! keeps the newest [`store::KEEP_RUNS`] runs.
#![forbid(unsafe_code)]

pub mod intake;
pub mod store;

pub use intake::{IntakeLimits, serve_intake};
pub use store::{KEEP_RUNS, Received, Store};
