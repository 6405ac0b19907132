//! The check every request but `/healthz` passes first: the secret, then the program's version
//! and data layout where it sends them (a plain REST read from curl sends neither).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use xcd_wire::Layout;
use xcd_wire::rest::{LAYOUT_HEADER, VERSION_HEADER};

use crate::problem::ApiError;
use crate::state::AppState;

/// Middleware: refuses a request whose secret, version or layout does not match.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => {
            // Counted and kept by the router's `observe`, from the answer.
            tracing::info!(code = e.code(), path = %request.uri().path(), "refused");
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

fn check(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let given = headers.get(header::AUTHORIZATION).map(|value| {
        value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    });
    match (&state.0.config.secret, given) {
        (Some(secret), Some(Some(token))) if secret.matches(token) => {}
        (Some(_), _) => return Err(ApiError::SecretRefused),
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
