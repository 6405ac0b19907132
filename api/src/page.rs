//! The daemon's own page at `GET /`: its devices, whether it takes work, its NIMBY hours,
//! throughput, recent work and refusals, rendered with xcd-ui's templates.
//!
//! With a secret set, nothing about the daemon is shown until the browser gives the secret once
//! (`POST /`, a form); it then gets a cookie (HttpOnly, Secure, SameSite=Strict, 30 days) that
//! proves it did: the time it was issued and an HMAC of that time under a key derived from the
//! secret, so it outlives restarts and dies with a change of secret. A request with the secret as
//! `Authorization: Bearer` (curl) is shown the page too.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use askama::Template;
use axum::Extension;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use serde::Deserialize;
use xcd_ui::daemon::{ago, memory};
use xcd_ui::{Chart, DaemonPage, DeviceRow, LoginPage, RefusalRow, WorkRow};

use crate::activity::{Peer, STEP};
use crate::admission::Conn;
use crate::problem::ApiError;
use crate::state::AppState;

/// The cookie's name.
pub const COOKIE: &str = "xcd_page";
/// How long a browser is remembered.
const LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// Seconds between reloads of the page.
const REFRESH: u32 = 5;

/// The login form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct Login {
    secret: String,
}

/// `GET /`: the page, or the form that asks for the secret.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(peer): Extension<Peer>,
    conn: Option<Extension<Arc<Conn>>>,
    headers: HeaderMap,
) -> Response {
    if !allowed(&state, peer, conn.as_deref().map(AsRef::as_ref), &headers) {
        return html(StatusCode::UNAUTHORIZED, &LoginPage { failed: false, held: None });
    }
    html(StatusCode::OK, &page(&state).await)
}

/// `POST /`: checks the secret given in the form; remembers the browser when it is right.
pub(crate) async fn login(
    State(state): State<AppState>,
    Extension(peer): Extension<Peer>,
    conn: Option<Extension<Arc<Conn>>>,
    form: Result<Form<Login>, FormRejection>,
) -> Response {
    if !state.secret().is_set() {
        return see_page();
    }
    let Form(form) = match form {
        Ok(form) => form,
        Err(e) => {
            return ApiError::BadRequest(format!("{}: send the form's field `secret`", e.body_text())).into_response();
        }
    };
    match crate::guard::secret_given(&state, peer, conn.as_deref().map(AsRef::as_ref), &form.secret) {
        Ok(()) => {}
        Err(e) => {
            state.refused(peer, e.code(), "POST / (the page's form)".to_owned());
            let held = match e {
                ApiError::TooManyFailures { retry_after } => Some(retry_after),
                _ => None,
            };
            let status = if held.is_some() { StatusCode::TOO_MANY_REQUESTS } else { StatusCode::UNAUTHORIZED };
            return html(status, &LoginPage { failed: true, held });
        }
    }
    let Some(value) = state.secret().page_cookie(unix_now()) else {
        return see_page();
    };
    let cookie = Cookie::build((COOKIE, value))
        .http_only(true)
        .secure(true)
        .same_site(SameSite::Strict)
        .path("/")
        .max_age(cookie::time::Duration::seconds(LIFETIME.as_secs() as i64))
        .build();
    let mut response = see_page();
    if let Ok(value) = HeaderValue::from_str(&cookie.to_string()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// True when the page may be shown: no secret, or the secret given as a bearer (counted like any
/// other: [`crate::wrong_secrets`]) or a valid cookie.
/// A valid cookie proves the connection, as the secret does.
fn allowed(state: &AppState, peer: Peer, conn: Option<&Conn>, headers: &HeaderMap) -> bool {
    if !state.secret().is_set() {
        return true;
    }
    if let Some(Some(token)) = crate::guard::bearer(headers) {
        return crate::guard::secret_given(state, peer, conn, token).is_ok();
    }
    let now = unix_now();
    let valid = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .any(|c| c.name() == COOKIE && state.secret().page_cookie_valid(c.value(), now, LIFETIME.as_secs()));
    if valid {
        conn.map(Conn::prove);
    }
    valid
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// 303 to the page (relative, so that it works under a proxy's path prefix too).
fn see_page() -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    response.headers_mut().insert(header::LOCATION, HeaderValue::from_static("."));
    response
}

/// An HTML answer that no other site may frame, cache or load anything into.
fn html(status: StatusCode, template: &impl Template) -> Response {
    let text = match template.render() {
        Ok(text) => text,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("cannot render the page: {e}")).into_response(),
    };
    let mut response = (status, text).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// The page's view of the daemon now.
async fn page(state: &AppState) -> DaemonPage {
    let settings = state.profile();
    let activity = state.activity();
    let mut devices = Vec::new();
    for device in state.devices().all() {
        let info = device.status().await.unwrap_or_else(|_| device.info().clone());
        let memory = memory(info.memory_free, info.memory_total);
        let backend = format!("{:?}", info.backend).to_lowercase();
        let kind = if info.cpu { format!("{backend} (CPU: this machine has no GPU)") } else { backend };
        devices.push(DeviceRow { id: info.id, kind, memory, lost: info.lost });
    }
    let state_line = match state.availability().why() {
        None => "accepting".to_owned(),
        Some(why) => format!("not taking work: {why}"),
    };
    let up = activity.started().elapsed().as_secs();
    let mut facts =
        vec![("version", state.version().to_owned()), ("data layout", xcd_wire::Layout::native().to_string())];
    facts.push((
        "pool",
        settings.pool.clone().unwrap_or_else(|| "none (found by XC_PAR_REMOTE=mdns or by name)".into()),
    ));
    facts.push(("depth", format!("{} tiles in flight per device", state.depth())));
    if let Some(fingerprint) = &settings.fingerprint {
        facts.push(("certificate", format!("SHA-256 {fingerprint}")));
    }
    facts.push(("up for", ago(up).trim_end_matches(" ago").to_owned()));
    let (tiles, items) = activity.totals();
    facts.push(("done since start", format!("{tiles} tiles, {items} items")));
    let now = std::time::Instant::now();
    let since = |at: std::time::Instant| ago(now.saturating_duration_since(at).as_secs());
    DaemonPage {
        title: format!("xcd on {}", settings.host.as_deref().unwrap_or("this machine")),
        facts,
        accepting: state_line == "accepting",
        state: state_line,
        nimby: if settings.nimby.is_empty() { "none".to_owned() } else { settings.nimby.to_string() },
        in_flight: state.tiles_in_flight(),
        streams: state.streams().open_now(),
        devices,
        chart: Chart::of(&activity.rates(), STEP),
        work: activity
            .work()
            .into_iter()
            .map(|w| WorkRow {
                client: w.peer.to_string(),
                block: w.block,
                device: w.device,
                tiles: w.tiles,
                items: w.items,
                failed: w.failed,
                last: since(w.last),
            })
            .collect(),
        refusals: activity
            .refusals()
            .into_iter()
            .map(|r| RefusalRow {
                when: since(r.at),
                client: r.peer.to_string(),
                code: r.code.to_owned(),
                what: r.what,
            })
            .collect(),
        refresh: REFRESH,
    }
}
