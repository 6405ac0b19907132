//! The wire contract of xcd: every type that crosses a process boundary.
//!
//! Owns block descriptions (arrays, scalar parameters, kernel forms), tiles, device inventory,
//! the version and data layout a program and a daemon must share, and content-addressed block
//! ids. It must not touch tokio, HTTP or any GPU crate: the daemon, the engine and the program
//! side all depend on it, and it depends on none of them.
//!
//! Layout:
//! - [`block`]: [`BlockDesc`], its arrays and parameters, validation and the block id;
//! - [`forms`]: [`Forms`], the kernel forms a block carries;
//! - [`device`]: [`DeviceInfo`], what a device is and how much memory it has;
//! - [`layout`]: [`Layout`] and [`VERSION`], what two sides must agree on;
//! - [`problem`]: [`ProblemCode`], the stable codes of the daemon's refusals;
//! - [`rest`]: the JSON bodies of the REST endpoints ([`rest::Problem`] among them);
//! - [`frame`]: the binary frames of a tile stream;
//! - [`rope`]: result frames read as the transport's chunks, copied once, into place;
//! - [`copies`]: a count of the payload bytes this process copies;
//! - [`tile`]: [`Tile`] and the uniform words a kernel sees;
//! - [`trace`]: [`trace::TraceRun`], what a program tells its monitor about each run.
#![forbid(unsafe_code)]

pub mod block;
pub mod copies;
pub mod device;
pub mod forms;
pub mod frame;
pub mod layout;
pub mod problem;
pub mod rest;
pub mod rope;
pub mod tile;
pub mod trace;
pub mod whole;

pub use block::{
    Access, ArrayRole, ArraySpec, BlockDesc, BlockId, BlockIdError, DescError, MAX_ENTRY_BYTES, ParamKind, ParamSpec,
    is_entry_name,
};
pub use device::{BackendKind, DeviceInfo, pci_address};
pub use forms::{FormKind, FormPolicy, Forms, form_for, forms_taken, native_form};
pub use frame::{FrameError, FrameSplitter, Front, ResultFrame, TileFrame, TileProblem, result_pieces};
pub use layout::{ByteOrder, Layout, LayoutParseError, VERSION};
pub use problem::ProblemCode;
pub use rope::{ResultRope, Rope, RopeSplitter};
pub use tile::{TILE_HEADER_WORDS, Tile, WORKGROUP_SIZE};
pub use whole::{ArrayHash, ArrayHashError, WholeArray};

/// The 32 bytes that 64 hex digits write (a block id, an array's hash), if they do.
pub(crate) fn hex32(text: &str) -> Option<[u8; 32]> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(text, &mut bytes).ok().map(|()| bytes)
}

/// The SHA-256 of some bytes: how whole arrays are cached and blocks are addressed.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}
