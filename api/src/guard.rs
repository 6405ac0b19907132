//! The check every request but `/healthz` and the page passes first: the secret (an address that
//! sent too many wrong ones is held back, [`crate::limit`]), then the program's version and data
//! layout where it sends them (a plain REST read from curl sends neither).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use xcd_wire::Layout;
use xcd_wire::rest::{LAYOUT_HEADER, VERSION_HEADER};

use crate::activity::Peer;
use crate::problem::ApiError;
use crate::state::AppState;

/// Middleware: refuses a request whose secret, version or layout does not match.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<Peer>().copied().unwrap_or_default();
    match check(&state, peer, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => {
            // Counted and kept by the router's `observe`, from the answer. A version or layout
            // refusal names both sides (and nothing secret), so the daemon's log says which.
            let path = request.uri().path();
            match &e {
                ApiError::VersionMismatch { .. } | ApiError::LayoutMismatch { .. } => {
                    tracing::info!(code = e.code(), path, %peer, "refused: {e}");
                }
                _ => tracing::info!(code = e.code(), path, "refused"),
            }
            drain(request.into_body()).await;
            e.into_response()
        }
    }
}

/// Most bytes of a refused request's body read (and dropped) before answering.
const DRAIN_BYTES: usize = 4 << 20;

/// Reads and drops a refused request's body, up to [`DRAIN_BYTES`]. An HTTP/1.1 client sends its
/// whole body before it reads the answer; answering first and closing the connection under it
/// leaves the client with a broken connection instead of the refusal.
pub(crate) async fn drain(body: axum::body::Body) {
    let _ = axum::body::to_bytes(body, DRAIN_BYTES).await;
}

/// The secret a request sends: None without an `Authorization` header, Some(None) with one that is
/// not a bearer.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<Option<&str>> {
    headers.get(header::AUTHORIZATION).map(|value| {
        value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    })
}

fn check(state: &AppState, peer: Peer, headers: &HeaderMap) -> Result<(), ApiError> {
    match (&state.0.config.secret, bearer(headers)) {
        (Some(secret), Some(token)) => secret_given(state, peer, secret, token)?,
        // No secret at all is not a guess: refused, not counted.
        (Some(_), None) => return Err(ApiError::SecretRefused),
        (None, Some(_)) => return Err(ApiError::SecretNotSet),
        (None, None) => {}
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
    Ok(())
}

/// Checks a secret sent to a daemon that has one (`token` None: an `Authorization` header that is
/// not a bearer), holding back an address that sent too many wrong ones.
pub(crate) fn secret_given(
    state: &AppState,
    peer: Peer,
    secret: &crate::state::Secret,
    token: Option<&str>,
) -> Result<(), ApiError> {
    let limit = &state.0.failed_secrets;
    let now = std::time::Instant::now();
    if let Some(wait) = peer.client.and_then(|client| limit.held(client, now)) {
        return Err(ApiError::TooManyFailures { retry_after: wait.as_secs().max(1) });
    }
    if token.is_some_and(|t| secret.matches(t)) {
        if let Some(client) = peer.client {
            limit.succeeded(client);
        }
        return Ok(());
    }
    if let Some(client) = peer.client {
        if let Some(hold) = limit.failed(client, now) {
            tracing::warn!(%client, "{} wrong secrets or more: held back for {} s", limit.free() + 1, hold.as_secs());
        }
    }
    Err(ApiError::SecretRefused)
}
