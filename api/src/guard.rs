//! The check every request but `/healthz` and the page passes first: the secret (an address that
//! sent too many wrong ones is held back, [`crate::wrong_secrets`]), then the program's version and data
//! layout where it sends them (a plain REST read from curl sends neither). A request that passes
//! proves its connection ([`crate::admission`]). A refused request's body is never kept: it is
//! read and dropped as it arrives, for a bounded time and size, then answered.

use axum::extract::{Request, State};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use xcd_wire::Layout;
use xcd_wire::rest::{LAYOUT_HEADER, VERSION_HEADER};

use crate::activity::Peer;
use crate::admission::Conn;
use crate::problem::{ApiError, Limit};
use crate::state::AppState;

/// Middleware: refuses a request whose secret, version or layout does not match.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<Peer>().copied().unwrap_or_default();
    let conn = request.extensions().get::<Arc<Conn>>().cloned();
    match check(&state, peer, conn.as_deref(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => {
            // Counted and kept by the router's `observe`, from the answer. A version or layout
            // refusal names both sides (and nothing secret), so the daemon's log says which.
            let path = request.uri().path();
            match &e {
                ApiError::VersionMismatch { .. } | ApiError::LayoutMismatch { .. } => {
                    tracing::info!(code = e.code().as_str(), path, %peer, "refused: {e}");
                }
                _ => tracing::info!(code = e.code().as_str(), path, "refused"),
            }
            refuse(request, e).await
        }
    }
}

/// Most bytes of a refused request's body read and dropped before answering.
const DRAIN_BYTES: usize = 32 << 20;
/// Longest time spent on them.
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// Answers a request with a refusal without keeping its body: it is read and dropped as it
/// arrives ([`drain`]), so that a client that sends its whole body before reading the answer gets
/// it (curl 7.88, for one, loses an answer that comes with a reset of a stream it is still
/// sending on). An HTTP/1.1 connection is closed after the answer (`Connection: close`); an HTTP/2
/// stream whose body goes on is reset after the answer (RST_STREAM NO_ERROR).
pub(crate) async fn refuse(request: Request, error: ApiError) -> Response {
    let version = request.version();
    drain(request.into_body()).await;
    let mut response = error.into_response();
    if version < Version::HTTP_2 {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Reads and drops a refused request's body as it arrives, keeping none of it, until it ends,
/// [`DRAIN_BYTES`] have come, or [`DRAIN_TIME`] has passed.
pub(crate) async fn drain(body: axum::body::Body) {
    let mut data = body.into_data_stream();
    let mut left = DRAIN_BYTES;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while let Some(Ok(chunk)) = data.next().await {
            left = left.saturating_sub(chunk.len());
            if left == 0 {
                break;
            }
        }
    })
    .await;
}

/// The secret a request sends: None without an `Authorization` header, Some(None) with one that is
/// not a bearer.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<Option<&str>> {
    headers.get(header::AUTHORIZATION).map(|value| {
        value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    })
}

fn check(state: &AppState, peer: Peer, conn: Option<&Conn>, headers: &HeaderMap) -> Result<(), ApiError> {
    match (state.secret().is_set(), bearer(headers)) {
        (true, Some(Some(token))) => secret_given(state, peer, conn, token)?,
        // No secret at all, or one not sent as a bearer token, is not a guess: refused, not
        // counted.
        (true, Some(None)) => return Err(ApiError::SecretNotBearer),
        (true, None) => return Err(ApiError::SecretRefused),
        (false, Some(_)) => return Err(ApiError::SecretNotSet),
        (false, None) => {}
    }
    if let Some(value) = headers.get(VERSION_HEADER) {
        let program = value.to_str().unwrap_or("(not text)");
        let daemon = state.version();
        if program != daemon {
            return Err(ApiError::VersionMismatch { program: program.to_owned(), daemon: daemon.to_owned() });
        }
    }
    if let Some(value) = headers.get(LAYOUT_HEADER) {
        let text = value.to_str().unwrap_or("(not text)");
        let program: Layout =
            text.parse().map_err(|e: xcd_wire::LayoutParseError| ApiError::BadRequest(e.to_string()))?;
        let daemon = Layout::native();
        if program != daemon {
            return Err(ApiError::LayoutMismatch { program: program.to_string(), daemon: daemon.to_string() });
        }
    }
    if !state.secret().is_set() {
        prove(state, conn)?;
    }
    Ok(())
}

/// Checks a secret sent to a daemon that has one ([`crate::state::SecretCheck::given`]), and proves
/// the request's connection when it is right. A connection that has already shown the secret
/// itself (not a proxy's, which carries many clients) is not held back.
pub(crate) fn secret_given(state: &AppState, peer: Peer, conn: Option<&Conn>, token: &str) -> Result<(), ApiError> {
    let proven = peer.via.is_none() && conn.is_some_and(Conn::proven);
    state.secret().given(peer, proven, token)?;
    prove(state, conn)
}

/// A request passed the check: its connection is proven, if a proven slot is free.
fn prove(state: &AppState, conn: Option<&Conn>) -> Result<(), ApiError> {
    match conn {
        Some(conn) if !conn.prove() => Err(ApiError::Busy(Limit::Connections(state.limits().max_connections))),
        _ => Ok(()),
    }
}
