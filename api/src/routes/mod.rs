//! The endpoints, one file per group, and the router that binds them to paths.

pub(crate) mod blocks;
pub(crate) mod info;
pub(crate) mod tiles;

use std::convert::Infallible;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::activity::Peer;
use crate::guard::guard;
use crate::problem::{ApiError, Refused};
use crate::state::AppState;

/// Every route the router serves, as (method, path): `openapi/openapi.yaml` must list exactly these.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/"),
    ("post", "/"),
    ("get", "/healthz"),
    ("get", "/metrics"),
    ("get", "/v1/version"),
    ("get", "/v1/devices"),
    ("get", "/v1/capacity"),
    ("post", "/v1/blocks"),
    ("post", "/v1/blocks/{id}/tiles"),
    ("post", "/v1/blocks/{id}/tile"),
    ("get", "/v1/arrays/{hash}"),
    ("put", "/v1/arrays/{hash}"),
];

/// The daemon's router: every endpoint, behind the secret and version checks (but `/healthz`
/// and the page, which checks the secret itself).
pub fn router(state: AppState) -> Router {
    let limits = state.limits();
    // A client that stalls while sending a body gets a refusal instead of holding on.
    let slow = || RequestBodyTimeoutLayer::new(limits.body);
    // What bodies all uploads may be receiving at once.
    let budget = |max: usize| middleware::from_fn_with_state((state.clone(), max as u64), uploads);
    let guarded = Router::new()
        .route("/v1/version", get(info::version))
        .route("/v1/devices", get(info::devices))
        .route("/v1/capacity", get(info::capacity))
        .route(
            "/v1/blocks",
            post(blocks::register)
                .layer::<_, Infallible>(DefaultBodyLimit::max(limits.max_block_bytes))
                .layer::<_, Infallible>(budget(limits.max_block_bytes))
                .layer::<_, Infallible>(slow()),
        )
        .route("/v1/blocks/{id}/tiles", post(tiles::stream))
        .route(
            "/v1/blocks/{id}/tile",
            post(tiles::one)
                .layer::<_, Infallible>(DefaultBodyLimit::max(limits.max_frame_bytes as usize))
                .layer::<_, Infallible>(budget(limits.max_frame_bytes as usize))
                .layer::<_, Infallible>(slow()),
        )
        .route(
            "/v1/arrays/{hash}",
            get(blocks::get_array)
                .put(blocks::put_array)
                .layer::<_, Infallible>(DefaultBodyLimit::max(limits.max_array_bytes))
                .layer::<_, Infallible>(budget(limits.max_array_bytes))
                .layer::<_, Infallible>(slow()),
        )
        .route("/metrics", get(info::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), guard));
    Router::new()
        .route("/", get(crate::page::show).post(crate::page::login).layer::<_, Infallible>(DefaultBodyLimit::max(4096)))
        .route("/healthz", get(info::healthz))
        .merge(guarded)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone())
        .layer(middleware::from_fn_with_state(state, observe))
}

/// Longest request path kept with a refusal.
const WHAT_CHARS: usize = 120;

/// Middleware around everything: gives each request its [`Peer`] (none when served in-process
/// without the accept loop) and keeps every refusal answered, with who asked and what.
async fn observe(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<Peer>().copied().unwrap_or_default();
    request.extensions_mut().insert(peer);
    let mut what = format!("{} {}", request.method(), request.uri().path());
    if let Some((cut, _)) = what.char_indices().nth(WHAT_CHARS) {
        what.truncate(cut);
        what.push('…');
    }
    let response = next.run(request).await;
    if let Some(Refused(code)) = response.extensions().get::<Refused>() {
        state.refused(peer, *code, what);
    }
    response
}

/// Middleware on the endpoints that take a body: holds its share of `Limits::upload_bytes` while
/// the request is handled. A body of known size (none when the request ends with its headers,
/// else its `Content-Length`) takes its share at once, or is refused as `busy` before any of it is
/// read when the daemon, or the client's address (half of it), is already receiving that much; a
/// body of unknown size takes its share as it arrives ([`crate::held::Metered`]).
async fn uploads(State((state, max)): State<(AppState, u64)>, request: Request, next: Next) -> Response {
    let declared = hyper::body::Body::size_hint(request.body()).exact().or_else(|| {
        request
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
    });
    let peer = request.extensions().get::<Peer>().copied().unwrap_or_default();
    let Some(declared) = declared else {
        let request = request.map(|body| state.budgets().metered(body, peer));
        return next.run(request).await;
    };
    let want = crate::held::kib(declared.min(max)).max(1);
    let _share = match state.budgets().take_upload(peer, want) {
        Ok(share) => share,
        Err(busy) => return crate::guard::refuse(request, busy).await,
    };
    next.run(request).await
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
