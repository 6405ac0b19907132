//! The read-only endpoints: version, devices, capacity, metrics, health.

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use xcd_wire::rest::{Capacity, Devices, VersionInfo};
use xcd_wire::{FormKind, Layout, ProblemCode};

use crate::problem::ApiError;
use crate::state::AppState;

/// `GET /v1/version`.
pub(crate) async fn version(State(state): State<AppState>) -> Json<VersionInfo> {
    let mut forms: Vec<FormKind> = Vec::new();
    for device in state.devices().all() {
        for form in xcd_wire::forms_taken(device.info().backend, state.profile().forms) {
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
    }
    Json(VersionInfo {
        version: state.version().to_owned(),
        layout: Layout::native().to_string(),
        forms,
        pool: state.profile().pool.clone(),
        secret: state.secret().is_set(),
    })
}

/// `GET /v1/devices`.
pub(crate) async fn devices(State(state): State<AppState>) -> Result<Json<Devices>, ApiError> {
    let mut devices = Vec::new();
    for device in state.devices().all() {
        devices.push(device.status().await.unwrap_or_else(|_| device.info().clone()));
    }
    Ok(Json(Devices { devices }))
}

/// `GET /v1/capacity`.
pub(crate) async fn capacity(State(state): State<AppState>) -> Json<Capacity> {
    let (accepting, reason, until) = match state.admit() {
        Ok(()) => (true, None, None),
        Err(ApiError::Draining) => (false, Some(ProblemCode::Draining.as_str().to_owned()), None),
        Err(ApiError::DeclinedNimby { .. }) => {
            let until = state.profile().nimby.inside_now().map(|(_, until)| until.to_rfc3339());
            (false, Some("nimby".to_owned()), until)
        }
        Err(other) => (false, Some(other.code().as_str().to_owned()), None),
    };
    let (mut memory_free, mut memory_total) = (Vec::new(), Vec::new());
    for device in state.devices().all() {
        let info = device.status().await.unwrap_or_else(|_| device.info().clone());
        memory_free.push(info.memory_free);
        memory_total.push(info.memory_total);
    }
    let (tiles_done, items_done) = state.activity().totals();
    Json(Capacity {
        tiles_done,
        items_done,
        accepting,
        reason,
        until,
        tiles_in_flight: state.tiles_in_flight(),
        in_flight_by_device: state.tiles_in_flight_by_device(),
        tile_seconds_by_device: state.tile_seconds_by_device(),
        refusals: state.activity().refusal_counts(),
        depth: state.depth(),
        max_frame_bytes: state.limits().max_frame_bytes,
        memory_free,
        memory_total,
    })
}

/// `GET /metrics`: Prometheus text.
pub(crate) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], state.metrics().render())
}

/// `GET /healthz`: 200 while serving, 503 while draining. Needs no secret.
pub(crate) async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    if state.streams().draining() {
        (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining\n")
    } else {
        (axum::http::StatusCode::OK, "ok\n")
    }
}
