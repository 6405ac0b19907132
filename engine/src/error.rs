//! Device errors: small, and each says what to do.

use xcd_wire::{BlockId, FormKind};

/// Why a device could not load a block or run a tile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The block carries no form this device takes.
    #[error(
        "{device} needs the {wanted} form and block {block} carries none: send the block's WGSL, from which every device makes its own form"
    )]
    NoForm {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// The block, by the name its description gives.
        block: String,
        /// The form this device takes.
        wanted: FormKind,
    },
    /// The device rejected the kernel.
    #[error("{device} could not load block {block}: {reason}")]
    Load {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// The block, by the name its description gives.
        block: String,
        /// What the driver said.
        reason: String,
    },
    /// A tile arrived for a block that was never loaded here.
    #[error("block {0} is not loaded on this device: load it first")]
    NotLoaded(BlockId),
    /// The job does not fit the block's description.
    #[error("bad tile: {0}")]
    BadJob(String),
    /// The tile does not fit the device's buffers.
    #[error("tile of {items} items needs {bytes} bytes in one buffer; {device} allows {max}: use smaller tiles")]
    TooLarge {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// Items in the tile.
        items: u32,
        /// Bytes the largest buffer would need.
        bytes: u64,
        /// Largest buffer the device allows.
        max: u64,
    },
    /// A whole array larger than the device binds in one buffer.
    #[error(
        "a whole array of {bytes} bytes is over what {device} binds in one array ({max} bytes): split it into smaller arrays"
    )]
    WholeTooLarge {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// The array's bytes.
        bytes: u64,
        /// Largest buffer the device binds.
        max: u64,
    },
    /// The device has no room for the tile's buffers, with everything it keeps let go.
    #[error(
        "{device} has no room for {needed} bytes of buffers ({free} free for work): use smaller tiles or blocks, or run elsewhere"
    )]
    OutOfMemory {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// Bytes the tile needed at once.
        needed: u64,
        /// Bytes free for work: what the driver says is free, and what the device keeps that it
        /// would let go.
        free: u64,
    },
    /// The kernel failed on the device.
    #[error("{device} failed running block {block}: {reason}")]
    Launch {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// The block, by the name its description gives.
        block: String,
        /// What the driver said.
        reason: String,
    },
    /// A tile ran past the deadline: the kernel may never end, and the device is out of
    /// service until its owner has brought it back.
    #[error(
        "{device} ran a tile of block {block} for more than {seconds} s (the tile deadline) and was taken out of service: the kernel may never end; make its tiles end sooner, or raise the deadline"
    )]
    Deadline {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// The block, by the name its description gives.
        block: String,
        /// The deadline, in seconds.
        seconds: u64,
    },
    /// The device could not compute this tile exactly (a software Vulkan device that cut a loop
    /// short, or that flushes a subnormal float it met): its results would be wrong, so the
    /// tile must run elsewhere. The device stays in service.
    #[error(
        "{device} could not run a tile of block {block} exactly: {reason}, so this tile must run on another device"
    )]
    Inexact {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// The block, by the name its description gives.
        block: String,
        /// What happened, in a person's words.
        reason: String,
    },
    /// The device is gone (driver reset, panic in the driver wrapper, owner stopped).
    #[error("{device} is out of service: {reason}")]
    DeviceLost {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// What the driver said, or what went wrong.
        reason: String,
    },
}

/// Why a try to bring an out-of-service device back failed: it stays out of service, and its
/// owner tries again later.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// This kind of device cannot be reopened.
    #[error("this kind of device cannot be reopened")]
    Unsupported,
    /// The driver wrapper panicked while reopening it or loading a block again.
    #[error("the driver wrapper panicked while reopening it")]
    Panicked,
    /// The driver gave no fresh device, or the fresh one failed its probe.
    #[error("{reason}")]
    Reopen {
        /// What the driver said, or what the probe found.
        reason: String,
    },
    /// A block the device had does not load on the fresh one.
    #[error("block {block} does not load again: {reason}")]
    Reload {
        /// The block, by the name its description gives.
        block: String,
        /// Why it does not load (said in this error's words, so not its source).
        reason: EngineError,
    },
}

impl RecoverError {
    /// A reopening that failed, with what the driver or the probe said.
    pub fn reopen(reason: impl Into<String>) -> RecoverError {
        RecoverError::Reopen { reason: reason.into() }
    }
}
