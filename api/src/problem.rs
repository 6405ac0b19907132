//! Every refusal the daemon makes, as one enum, and the one place that turns it into an
//! `application/problem+json` answer (or a tile stream's problem frame) with a stable code and a
//! sentence that says what to do; also the one place where what others refuse (a device's
//! [`EngineError`], a body or query axum could not read) becomes a refusal of the daemon's.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use xcd_engine::EngineError;
use xcd_wire::rest::Problem;
use xcd_wire::{ProblemCode, ResultFrame, TileProblem};

use crate::held::{OverBudget, Short};

/// Why the daemon refused a request.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// The secret is missing or wrong.
    #[error("the daemon refused the secret: set XC_PAR_SECRET to the daemon's secret")]
    SecretRefused,
    /// An `Authorization` header that is not a bearer token (not counted as a wrong secret).
    #[error(
        "the Authorization header is not a bearer token: send the secret as `Authorization: Bearer <secret>` (set XC_PAR_SECRET to the daemon's secret)"
    )]
    SecretNotBearer,
    /// Too many wrong secrets from this address lately (or from many addresses at once).
    #[error(
        "too many wrong secrets from this address (or from many at once): requests with a secret from it are refused for {retry_after} s more; set XC_PAR_SECRET to the daemon's secret and try again then"
    )]
    TooManyFailures {
        /// Seconds until it may try again.
        retry_after: u64,
    },
    /// The daemon has no secret and the program sent one.
    #[error(
        "this daemon has no secret, and the program sent one: a program with a secret never uses an unprotected daemon; start the daemon with XC_PAR_SECRET"
    )]
    SecretNotSet,
    /// Versions differ.
    #[error(
        "a different xcc version: the program is {program} and the daemon is {daemon}; install the same release on both machines"
    )]
    VersionMismatch {
        /// The program's version.
        program: String,
        /// The daemon's version.
        daemon: String,
    },
    /// Data layouts differ.
    #[error(
        "a different data layout: the program is {program} and the daemon is {daemon}; the two machines differ in byte order or pointer width and cannot share arrays"
    )]
    LayoutMismatch {
        /// The program's layout.
        program: String,
        /// The daemon's layout.
        daemon: String,
    },
    /// No device takes any form the block carries.
    #[error(
        "the daemon has no form for its GPU: {0}; send the block's WGSL, from which the daemon makes its GPU's form"
    )]
    NoForm(String),
    /// A device could not compile the block.
    #[error("{0}")]
    LoadFailed(String),
    /// Inside the NIMBY hours.
    #[error("the daemon's owner keeps these hours ({range}) for themselves; it takes work again at {until}")]
    DeclinedNimby {
        /// The range now in force.
        range: String,
        /// When it ends, local time.
        until: String,
        /// Seconds until then.
        retry_after: u64,
    },
    /// The run's data cannot fit the device.
    #[error("the run needs {needed} bytes on {device}, which has {free} free; run it elsewhere or in smaller blocks")]
    DeclinedMemory {
        /// The device, as `GET /v1/devices` and the report name it.
        device: String,
        /// Bytes the run needs.
        needed: u64,
        /// Bytes free.
        free: u64,
    },
    /// Shutting down.
    #[error("the daemon is shutting down and takes no new work; run elsewhere")]
    Draining,
    /// One of the daemon's limits is reached: which.
    #[error(transparent)]
    Busy(Limit),
    /// A frame or request body that cannot be read.
    #[error("{0}")]
    BadFrame(String),
    /// Something too big.
    #[error("{0}")]
    TooLarge(String),
    /// A request that is malformed in another way (bad JSON, bad query).
    #[error("{0}")]
    BadRequest(String),
    /// An unknown block.
    #[error("block {0} is not registered here: register it with POST /v1/blocks first")]
    UnknownBlock(xcd_wire::BlockId),
    /// An unknown whole array.
    #[error("whole array {0} is not held here: upload it with PUT /v1/arrays/{0} first")]
    UnknownArray(xcd_wire::ArrayHash),
    /// An unknown device.
    #[error("device {0} is not served here: see GET /v1/devices")]
    UnknownDevice(String),
    /// The device failed running the tile.
    #[error("{0}")]
    DeviceFailed(String),
    /// No such endpoint.
    #[error("no such endpoint: see openapi/openapi.yaml for what this daemon serves")]
    NotFound,
    /// The endpoint does not take that method.
    #[error("this endpoint does not take that method: see openapi/openapi.yaml")]
    MethodNotAllowed,
    /// A tile stream whose results went unread past the stream idle limit: ended, and its
    /// connection dropped (so kept among the refusals, never answered).
    #[error(
        "the results of a tile stream of block {block} went unread for {secs} s: the stream was ended; read results as they come"
    )]
    ResultsUnread {
        /// The block's name.
        block: String,
        /// The stream idle limit, in seconds.
        secs: u64,
    },
}

/// Which of the daemon's limits a request met (`busy`), in words that say what is full; `one`:
/// one client address's share of it (half).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Limit {
    /// Tile streams open at once (`-max-streams`).
    #[error("the daemon is at its limit of {0} tile streams; try again shortly")]
    Streams(u64),
    /// Connections that have shown the secret, open at once.
    #[error("this daemon already serves its most connections ({0}); try again shortly")]
    Connections(usize),
    /// Upload bytes being received of bodies of known size, in MiB.
    #[error("the daemon is at its limit of {mib} MiB of uploads being received{}; try again shortly", from_one(*.one))]
    Uploads {
        /// The budget's MiB (one address's half where `one`).
        mib: u64,
        /// Whether it is one address's share that is full.
        one: bool,
    },
    /// A body of unknown size that arrived past the uploads' budget.
    #[error(
        "the daemon is at its limit of the uploads {}; try again shortly",
        if *.one { "one address may send at once" } else { "it receives at once" }
    )]
    UploadsArriving {
        /// Whether it is one address's share that is full.
        one: bool,
    },
    /// Tile data held, in MiB.
    #[error(
        "the daemon is at its limit of {mib} MiB of tile data held{}; try again shortly",
        if *.one { " for one address (answers not yet read)" } else { "" }
    )]
    TileData {
        /// The budget's MiB (one address's half where `one`).
        mib: u64,
        /// Whether it is one address's share that is full.
        one: bool,
    },
    /// Registered blocks, by count or by bytes.
    #[error("this daemon holds its most blocks ({held} of {max}, {mib} of {max_mib} MiB); a restart forgets them")]
    Blocks {
        /// Blocks held.
        held: usize,
        /// Blocks it holds at most.
        max: usize,
        /// Their MiB.
        mib: u64,
        /// The MiB it holds at most.
        max_mib: u64,
    },
    /// The blocking pool could not take the work (`read the block`, `hash the array`) now.
    #[error("the daemon could not {0} now (it may be stopping); send it again")]
    Stopping(&'static str),
}

/// ` from one address` where it is one address's share.
fn from_one(one: bool) -> &'static str {
    if one { " from one address" } else { "" }
}

impl ApiError {
    /// The stable code.
    pub fn code(&self) -> ProblemCode {
        match self {
            ApiError::SecretRefused | ApiError::SecretNotBearer => ProblemCode::SecretRefused,
            ApiError::SecretNotSet => ProblemCode::SecretNotSet,
            ApiError::VersionMismatch { .. } => ProblemCode::VersionMismatch,
            ApiError::LayoutMismatch { .. } => ProblemCode::LayoutMismatch,
            ApiError::NoForm(_) => ProblemCode::NoForm,
            ApiError::LoadFailed(_) => ProblemCode::LoadFailed,
            ApiError::DeclinedNimby { .. } => ProblemCode::DeclinedNimby,
            ApiError::DeclinedMemory { .. } => ProblemCode::DeclinedMemory,
            ApiError::Draining => ProblemCode::Draining,
            ApiError::Busy(_) => ProblemCode::Busy,
            ApiError::BadFrame(_) => ProblemCode::BadFrame,
            ApiError::TooLarge(_) => ProblemCode::TooLarge,
            ApiError::BadRequest(_) => ProblemCode::BadRequest,
            ApiError::UnknownBlock(_) => ProblemCode::UnknownBlock,
            ApiError::UnknownArray(_) => ProblemCode::UnknownArray,
            ApiError::UnknownDevice(_) => ProblemCode::UnknownDevice,
            ApiError::DeviceFailed(_) => ProblemCode::DeviceFailed,
            ApiError::NotFound => ProblemCode::NotFound,
            ApiError::MethodNotAllowed => ProblemCode::MethodNotAllowed,
            ApiError::TooManyFailures { .. } => ProblemCode::TooManyFailures,
            ApiError::ResultsUnread { .. } => ProblemCode::ResultsUnread,
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::SecretRefused | ApiError::SecretNotBearer => StatusCode::UNAUTHORIZED,
            ApiError::SecretNotSet => StatusCode::FORBIDDEN,
            ApiError::VersionMismatch { .. } | ApiError::LayoutMismatch { .. } => StatusCode::CONFLICT,
            ApiError::NoForm(_) | ApiError::LoadFailed(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::DeclinedNimby { .. }
            | ApiError::DeclinedMemory { .. }
            | ApiError::Draining
            | ApiError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadFrame(_) | ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnknownBlock(_) | ApiError::UnknownArray(_) | ApiError::UnknownDevice(_) => StatusCode::NOT_FOUND,
            ApiError::DeviceFailed(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooManyFailures { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::ResultsUnread { .. } => StatusCode::REQUEST_TIMEOUT,
        }
    }

    /// The problem document.
    pub fn problem(&self) -> Problem {
        let status = self.status();
        Problem {
            kind: format!("urn:xcd:problem:{}", self.code()),
            title: status.canonical_reason().unwrap_or("error").to_owned(),
            status: status.as_u16(),
            code: self.code().as_str().to_owned(),
            detail: self.to_string(),
        }
    }

    /// A body the limit cut off (or the uploads' budget could not hold) as a refusal that says
    /// which; `what` names the body in the sentence.
    pub(crate) fn from_body(bytes: Result<Bytes, BytesRejection>, limit: u64, what: &str) -> Result<Bytes, ApiError> {
        bytes.map_err(|e| match e.status() {
            StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::TooLarge(format!("{what} is over this daemon's limit of {limit} bytes"))
            }
            _ => match over_budget(&e) {
                Some(short) => ApiError::Busy(Limit::UploadsArriving { one: short == Short::Client }),
                None => ApiError::BadRequest(format!("{what} could not be read: {e}")),
            },
        })
    }

    /// A query string axum could not read.
    pub(crate) fn from_query(e: QueryRejection) -> ApiError {
        ApiError::BadRequest(format!("{}; see openapi/openapi.yaml for this endpoint's query", e.body_text()))
    }

    /// The refusal as a tile stream's frame for the tile `tag` (or the stream's own tag).
    pub(crate) fn problem_frame(&self, tag: u32) -> Vec<Bytes> {
        let problem = TileProblem { code: self.code().as_str().to_owned(), detail: self.to_string() };
        vec![Bytes::from(ResultFrame::Failed { tag, problem }.encode())]
    }
}

/// Whether a body could not be read for want of room in the uploads' budget ([`OverBudget`]).
fn over_budget(e: &(dyn std::error::Error + 'static)) -> Option<Short> {
    let mut source = Some(e);
    while let Some(e) = source {
        if let Some(OverBudget(short)) = e.downcast_ref::<OverBudget>() {
            return Some(*short);
        }
        source = e.source();
    }
    None
}

/// A device's refusal as the daemon's.
impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        match e {
            EngineError::NoForm { .. } => ApiError::NoForm(e.to_string()),
            EngineError::Load { .. } => ApiError::LoadFailed(e.to_string()),
            EngineError::BadJob(m) => ApiError::BadFrame(m),
            EngineError::NotLoaded(id) => ApiError::UnknownBlock(id),
            EngineError::TooLarge { .. } | EngineError::WholeTooLarge { .. } => ApiError::TooLarge(e.to_string()),
            EngineError::OutOfMemory { device, needed, free } => ApiError::DeclinedMemory { device, needed, free },
            EngineError::Launch { .. }
            | EngineError::DeviceLost { .. }
            | EngineError::Deadline { .. }
            | EngineError::Inexact { .. } => ApiError::DeviceFailed(e.to_string()),
        }
    }
}

/// Marks a response as a refusal with this code, for the router's record of refusals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refused(pub(crate) ProblemCode);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut response = (self.status(), body).into_response();
        response.extensions_mut().insert(Refused(self.code()));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        match &self {
            ApiError::DeclinedNimby { retry_after, .. } | ApiError::TooManyFailures { retry_after } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            ApiError::SecretRefused | ApiError::SecretNotBearer => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"xcd\""));
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One refusal of each kind; the match makes a new variant fail to compile here until it is
    /// listed, and so until its code is in [`ProblemCode::ALL`] and the OpenAPI document.
    fn one_of_each() -> Vec<ApiError> {
        let all = vec![
            ApiError::SecretRefused,
            ApiError::SecretNotSet,
            ApiError::VersionMismatch { program: "a".into(), daemon: "b".into() },
            ApiError::LayoutMismatch { program: "a".into(), daemon: "b".into() },
            ApiError::NoForm("x".into()),
            ApiError::LoadFailed("x".into()),
            ApiError::DeclinedNimby { range: "x".into(), until: "y".into(), retry_after: 1 },
            ApiError::DeclinedMemory { device: "d".into(), needed: 2, free: 1 },
            ApiError::Draining,
            ApiError::Busy(Limit::Streams(1)),
            ApiError::BadFrame("x".into()),
            ApiError::TooLarge("x".into()),
            ApiError::BadRequest("x".into()),
            ApiError::UnknownBlock(xcd_wire::BlockId([5; 32])),
            ApiError::UnknownArray(xcd_wire::ArrayHash([7; 32])),
            ApiError::UnknownDevice("x".into()),
            ApiError::DeviceFailed("x".into()),
            ApiError::NotFound,
            ApiError::MethodNotAllowed,
            ApiError::TooManyFailures { retry_after: 3 },
            ApiError::ResultsUnread { block: "b".into(), secs: 60 },
        ];
        for e in &all {
            match e {
                // Shares `secret_refused` with SecretRefused (a client acts on both alike).
                ApiError::SecretRefused
                | ApiError::SecretNotBearer
                | ApiError::SecretNotSet
                | ApiError::VersionMismatch { .. }
                | ApiError::LayoutMismatch { .. }
                | ApiError::NoForm(_)
                | ApiError::LoadFailed(_)
                | ApiError::DeclinedNimby { .. }
                | ApiError::DeclinedMemory { .. }
                | ApiError::Draining
                | ApiError::Busy(_)
                | ApiError::BadFrame(_)
                | ApiError::TooLarge(_)
                | ApiError::BadRequest(_)
                | ApiError::UnknownBlock(_)
                | ApiError::UnknownArray(_)
                | ApiError::UnknownDevice(_)
                | ApiError::TooManyFailures { .. }
                | ApiError::DeviceFailed(_)
                | ApiError::NotFound
                | ApiError::MethodNotAllowed
                | ApiError::ResultsUnread { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_refusal_has_a_listed_code_and_lowercase_advice() {
        let all = one_of_each();
        let codes: Vec<ProblemCode> = all.iter().map(ApiError::code).collect();
        assert_eq!(codes, ProblemCode::ALL, "one refusal of each code, in the wire's order");
        for e in all {
            let p = e.problem();
            assert_eq!(p.status, e.status().as_u16());
            assert!(p.detail.chars().next().is_some_and(|c| !c.is_uppercase()), "{}", p.detail);
            assert!(!p.detail.ends_with('.'), "{}", p.detail);
        }
    }

    #[test]
    fn each_device_refusal_has_its_code() {
        let (d, b, r) = (|| "gpu0".to_owned(), || "b".to_owned(), || "why".to_owned());
        let cases = [
            (EngineError::NoForm { device: d(), block: b(), wanted: xcd_wire::FormKind::Ptx }, ProblemCode::NoForm),
            (EngineError::Load { device: d(), block: b(), reason: r() }, ProblemCode::LoadFailed),
            (EngineError::NotLoaded(xcd_wire::BlockId([1; 32])), ProblemCode::UnknownBlock),
            (EngineError::BadJob(r()), ProblemCode::BadFrame),
            (EngineError::TooLarge { device: d(), items: 1, bytes: 2, max: 1 }, ProblemCode::TooLarge),
            (EngineError::WholeTooLarge { device: d(), bytes: 2, max: 1 }, ProblemCode::TooLarge),
            (EngineError::OutOfMemory { device: d(), needed: 2, free: 1 }, ProblemCode::DeclinedMemory),
            (EngineError::Launch { device: d(), block: b(), reason: r() }, ProblemCode::DeviceFailed),
            (EngineError::Deadline { device: d(), block: b(), seconds: 1 }, ProblemCode::DeviceFailed),
            (EngineError::Inexact { device: d(), block: b(), reason: r() }, ProblemCode::DeviceFailed),
            (EngineError::DeviceLost { device: d(), reason: r() }, ProblemCode::DeviceFailed),
        ];
        for (e, code) in cases {
            let text = e.to_string();
            assert_eq!(ApiError::from(e).code(), code, "{text}");
        }
    }
}
