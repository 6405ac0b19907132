//! The stable codes of the daemon's refusals, shared by the daemon that sends them and the
//! program that acts on them, so that renaming one is a compile error on both sides. On the wire
//! a code stays a string ([`crate::rest::Problem::code`], [`crate::TileProblem::code`]): a code
//! this build does not know reads as `None`, and the program treats it as a plain failure.

use std::fmt;

/// One refusal's stable code, as `openapi/openapi.yaml` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemCode {
    /// The secret is missing, wrong, or not sent as a bearer token.
    SecretRefused,
    /// The daemon has no secret and the program sent one.
    SecretNotSet,
    /// The program and the daemon are different releases.
    VersionMismatch,
    /// Their data layouts (byte order, pointer width) differ.
    LayoutMismatch,
    /// No device takes a form the block carries.
    NoForm,
    /// A device could not compile the block.
    LoadFailed,
    /// Inside the owner's NIMBY hours.
    DeclinedNimby,
    /// The run's data cannot fit the device.
    DeclinedMemory,
    /// The daemon is shutting down.
    Draining,
    /// At a limit: streams, connections, blocks, memory.
    Busy,
    /// A frame or body that cannot be read.
    BadFrame,
    /// Something too big.
    TooLarge,
    /// A request malformed in another way.
    BadRequest,
    /// A block not registered here.
    UnknownBlock,
    /// A whole array not held here.
    UnknownArray,
    /// A device not served here.
    UnknownDevice,
    /// A device failed running the tile, or is out of service.
    DeviceFailed,
    /// No such endpoint.
    NotFound,
    /// The endpoint does not take that method.
    MethodNotAllowed,
    /// Too many wrong secrets from one address lately.
    TooManyFailures,
    /// A tile stream whose results went unread was ended (kept on the page; never answered,
    /// since the connection is dropped).
    ResultsUnread,
}

impl ProblemCode {
    /// Every code, in the order `openapi/openapi.yaml` lists them.
    pub const ALL: [ProblemCode; 21] = [
        ProblemCode::SecretRefused,
        ProblemCode::SecretNotSet,
        ProblemCode::VersionMismatch,
        ProblemCode::LayoutMismatch,
        ProblemCode::NoForm,
        ProblemCode::LoadFailed,
        ProblemCode::DeclinedNimby,
        ProblemCode::DeclinedMemory,
        ProblemCode::Draining,
        ProblemCode::Busy,
        ProblemCode::BadFrame,
        ProblemCode::TooLarge,
        ProblemCode::BadRequest,
        ProblemCode::UnknownBlock,
        ProblemCode::UnknownArray,
        ProblemCode::UnknownDevice,
        ProblemCode::DeviceFailed,
        ProblemCode::NotFound,
        ProblemCode::MethodNotAllowed,
        ProblemCode::TooManyFailures,
        ProblemCode::ResultsUnread,
    ];

    /// The code as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemCode::SecretRefused => "secret_refused",
            ProblemCode::SecretNotSet => "secret_not_set",
            ProblemCode::VersionMismatch => "version_mismatch",
            ProblemCode::LayoutMismatch => "layout_mismatch",
            ProblemCode::NoForm => "no_form",
            ProblemCode::LoadFailed => "load_failed",
            ProblemCode::DeclinedNimby => "declined_nimby",
            ProblemCode::DeclinedMemory => "declined_memory",
            ProblemCode::Draining => "draining",
            ProblemCode::Busy => "busy",
            ProblemCode::BadFrame => "bad_frame",
            ProblemCode::TooLarge => "too_large",
            ProblemCode::BadRequest => "bad_request",
            ProblemCode::UnknownBlock => "unknown_block",
            ProblemCode::UnknownArray => "unknown_array",
            ProblemCode::UnknownDevice => "unknown_device",
            ProblemCode::DeviceFailed => "device_failed",
            ProblemCode::NotFound => "not_found",
            ProblemCode::MethodNotAllowed => "method_not_allowed",
            ProblemCode::TooManyFailures => "too_many_failures",
            ProblemCode::ResultsUnread => "results_unread",
        }
    }

    /// The code a wire string names, if this build knows it.
    pub fn parse(code: &str) -> Option<ProblemCode> {
        ProblemCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for ProblemCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_and_is_written_once() {
        let mut seen = std::collections::HashSet::new();
        for code in ProblemCode::ALL {
            assert_eq!(ProblemCode::parse(code.as_str()), Some(code));
            assert!(seen.insert(code.as_str()), "{code} twice");
        }
        assert_eq!(ProblemCode::parse("renamed_code"), None);
    }
}
