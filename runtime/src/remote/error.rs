//! Why a daemon cannot take a program's tiles, in the tutorial's words ("When it does not
//! connect"): each says what happened and what to do.

use xcd_wire::ProblemCode;

/// A daemon refused, declined, or could not be reached.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    /// No connection (or one the daemon closed at once): the words say which, from the cause.
    #[error("cannot connect to {addr}: {} ({reason})", unreachable_why(.reason))]
    Unreachable {
        /// `host:port`.
        addr: String,
        /// What failed.
        reason: String,
    },
    /// The secret differs.
    #[error("{addr}: the daemon refused the secret: this program's XC_PAR_SECRET differs from the daemon's")]
    SecretRefused {
        /// `host:port`.
        addr: String,
    },
    /// The daemon has no secret and this program has one.
    #[error(
        "{addr}: the daemon has no secret and this program has one, so it sends it no work; start the daemon with XC_PAR_SECRET"
    )]
    SecretNotSet {
        /// `host:port`.
        addr: String,
    },
    /// Versions differ.
    #[error("{addr}: {detail}")]
    Version {
        /// `host:port`.
        addr: String,
        /// The daemon's words, naming both versions.
        detail: String,
    },
    /// Layouts differ.
    #[error("{addr}: {detail}")]
    Layout {
        /// `host:port`.
        addr: String,
        /// The daemon's words, naming both layouts.
        detail: String,
    },
    /// The certificate is not the pinned one.
    #[error(
        "{addr}: the certificate changed: the daemon was reinstalled or is not the one pinned; if you expect the change, remove the pin {key} from {file} (xcrun pins remove {addr})"
    )]
    PinChanged {
        /// `host:port`.
        addr: String,
        /// The settings key.
        key: String,
        /// The settings file.
        file: String,
    },
    /// No device there takes the block's forms.
    #[error("{addr}: the daemon has no form for its GPU: the block must carry its WGSL ({detail})")]
    NoForm {
        /// `host:port`.
        addr: String,
        /// The daemon's words.
        detail: String,
    },
    /// NIMBY hours, memory, draining, busy.
    #[error("{addr}: the daemon declined the work: {detail}")]
    Declined {
        /// `host:port`.
        addr: String,
        /// The daemon's words.
        detail: String,
    },
    /// A tile had no answer long after it should have (a daemon stopped, hung or cut off
    /// without closing the connection).
    #[error("{addr}: the daemon stopped answering (no result for a tile in {secs:.1} s)")]
    Stalled {
        /// `host:port`.
        addr: String,
        /// How long the tile waited.
        secs: f64,
    },
    /// Multicast DNS found no daemon to use.
    #[error("{0}; name daemons in XC_PAR_REMOTE where multicast does not reach (across routers or VPNs)")]
    NotFound(String),
    /// The daemon does not hold a block or whole array this program sent it before: it
    /// restarted, or dropped the array as the least recently used. The program sends it again
    /// and retries once; this is what a second refusal says.
    #[error(
        "{addr}: the daemon no longer holds a block or array this program sent it (it restarted, or made room), and refused it again after it was sent once more: {detail}"
    )]
    Forgotten {
        /// `host:port`.
        addr: String,
        /// The daemon's words.
        detail: String,
    },
    /// Anything else the daemon said, or a stream that broke.
    #[error("{addr}: {detail}")]
    Failed {
        /// `host:port`.
        addr: String,
        /// What happened.
        detail: String,
    },
}

impl RemoteError {
    /// The error for a daemon's problem answer, by its code (`None`: one this build does not
    /// know, from a newer daemon). Every code is named, so that a code added or renamed in
    /// `xcd_wire::ProblemCode` is a compile error here until it is sorted.
    pub(crate) fn from_problem(addr: &str, code: Option<ProblemCode>, detail: String) -> RemoteError {
        use ProblemCode as C;
        let addr = addr.to_owned();
        let Some(code) = code else { return RemoteError::Failed { addr, detail } };
        match code {
            C::SecretRefused => RemoteError::SecretRefused { addr },
            C::SecretNotSet => RemoteError::SecretNotSet { addr },
            C::VersionMismatch => RemoteError::Version { addr, detail },
            C::LayoutMismatch => RemoteError::Layout { addr, detail },
            C::NoForm | C::LoadFailed => RemoteError::NoForm { addr, detail },
            C::DeclinedNimby | C::DeclinedMemory | C::Draining | C::Busy => RemoteError::Declined { addr, detail },
            C::UnknownBlock | C::UnknownArray => RemoteError::Forgotten { addr, detail },
            C::TooManyFailures
            | C::BadFrame
            | C::TooLarge
            | C::BadRequest
            | C::UnknownDevice
            | C::DeviceFailed
            | C::NotFound
            | C::MethodNotAllowed
            | C::ResultsUnread => RemoteError::Failed { addr, detail },
        }
    }
}

/// The words for a daemon of another release than this program's.
pub(crate) fn version_differs(daemon: &str) -> String {
    format!("a different xcc version: this program is {} and the daemon is {daemon}", xcd_wire::VERSION)
}

/// What an unreachable daemon's cause means, in words: nothing listening, no answer, a daemon that
/// took the connection and closed it (full, or shutting down), or the tutorial's general words.
fn unreachable_why(reason: &str) -> &'static str {
    let reason = reason.to_ascii_lowercase();
    if reason.contains("connection refused") {
        "nothing listens on that port: the daemon is not running there, or the address is wrong"
    } else if ["reset", "closed", "eof", "broken pipe"].iter().any(|w| reason.contains(w)) {
        "the daemon closed the connection at once: it is serving all the connections it can take, or shutting down; try again shortly"
    } else if reason.contains("dns") || reason.contains("lookup") || reason.contains("not known") {
        "the name does not resolve; check the address"
    } else {
        "the daemon is not running, the address is wrong, or a firewall drops the port"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_daemon_says_which_way() {
        let say =
            |reason: &str| RemoteError::Unreachable { addr: "gpu-box:7227".into(), reason: reason.into() }.to_string();
        assert!(say("tcp connect error: Connection refused (os error 111)").contains("nothing listens on that port"));
        assert!(say("connection closed before message completed").contains("serving all the connections it can take"));
        assert!(say("tls handshake eof").contains("try again shortly"));
        assert!(say("dns error: failed to lookup address information").contains("does not resolve"));
        let other = say("operation timed out");
        assert!(other.starts_with("cannot connect to gpu-box:7227: the daemon is not running"), "{other}");
        assert!(other.ends_with("(operation timed out)"), "{other}");
    }
}
