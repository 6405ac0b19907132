//! The tile endpoints: `POST /v1/blocks/{id}/tiles`, the full-duplex tile stream (its machinery
//! is `crate::stream`'s), and `POST /v1/blocks/{id}/tile`, one tile per request for curl, whose
//! body is the tile's inputs and whose answer is its outputs, raw. Both open the run and run each
//! tile through `crate::tile`. A single tile holds its share of `Limits::tile_bytes`
//! ([`crate::held`]) until its results have gone to HTTP/2, and without room for them is `busy`.

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use xcd_wire::rest::{FRAMES_MEDIA_TYPE, RUN_ITEMS_HEADER};
use xcd_wire::{ParamKind, Tile, TileFrame};

use crate::activity::Peer;
use crate::held::{Holding, result_bytes, share};
use crate::open::DueNow;
use crate::problem::ApiError;
use crate::state::AppState;
use crate::tile::{self, Opened};

/// Query of both tile endpoints.
#[derive(Debug, Deserialize)]
pub(crate) struct StreamQuery {
    /// Device index or id (default 0).
    device: Option<String>,
}

/// `POST /v1/blocks/{id}/tiles`: the tile stream.
pub(crate) async fn stream(
    State(state): State<AppState>,
    Extension(peer): Extension<Peer>,
    Path(id): Path<String>,
    due: Option<Extension<DueNow>>,
    query: Result<Query<StreamQuery>, QueryRejection>,
    headers: HeaderMap,
    request: Body,
) -> Result<Response, ApiError> {
    let opened = async {
        let Query(query) = query.map_err(ApiError::from_query)?;
        let run_items = match headers.get(RUN_ITEMS_HEADER) {
            None => None,
            Some(v) => Some(v.to_str().ok().and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| {
                ApiError::BadRequest(format!("{RUN_ITEMS_HEADER} must be the run's number of items"))
            })?),
        };
        tile::open(&state, &id, query.device.as_deref(), run_items).await
    }
    .await;
    let opened = match opened {
        Ok(opened) => opened,
        Err(e) => {
            crate::guard::drain(request).await;
            return Err(e);
        }
    };
    let body = crate::stream::serve(state, peer, opened, due.map(|Extension(due)| due), request)?;
    Ok(([(header::CONTENT_TYPE, FRAMES_MEDIA_TYPE)], body).into_response())
}

/// Query of `POST /v1/blocks/{id}/tile`.
#[derive(Debug, Deserialize)]
pub(crate) struct OneQuery {
    /// Block-wide index of the first item (default 0).
    start: Option<u32>,
    /// Items in the tile.
    count: u32,
    /// The parameters, comma-separated, each written as its type (e.g. `4096,4096,2000` or `0.5`).
    params: Option<String>,
    /// The whole arrays' SHA-256s in hex, comma-separated, in binding order.
    whole: Option<String>,
    /// Device index or id (default 0).
    device: Option<String>,
}

/// `POST /v1/blocks/{id}/tile`: one tile; the body is the tile's per-item inputs concatenated in
/// binding order (empty when the block reads none), the answer its outputs, raw.
pub(crate) async fn one(
    State(state): State<AppState>,
    Extension(peer): Extension<Peer>,
    Path(id): Path<String>,
    query: Result<Query<OneQuery>, QueryRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(ApiError::from_query)?;
    let inputs = ApiError::from_body(bytes, state.limits().max_frame_bytes, "the tile")?;
    let Opened { block, device } = tile::open(&state, &id, query.device.as_deref(), None).await?;
    let desc = block.desc().clone();
    let texts: Vec<&str> = query
        .params
        .as_deref()
        .map(|p| p.split(',').map(str::trim).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    if texts.len() != desc.params.len() {
        let names: Vec<&str> = desc.params.iter().map(|p| p.name.as_str()).collect();
        return Err(ApiError::BadRequest(format!(
            "block {} takes {} parameters ({}), params= gives {}",
            desc.name,
            desc.params.len(),
            names.join(","),
            texts.len()
        )));
    }
    let mut params = Vec::with_capacity(texts.len());
    for (text, spec) in texts.iter().zip(&desc.params) {
        let word = match spec.kind {
            ParamKind::U32 => text.parse::<u32>().ok(),
            ParamKind::I32 => text.parse::<i32>().ok().map(|v| v as u32),
            ParamKind::F32 => text.parse::<f32>().ok().map(f32::to_bits),
        };
        params.push(word.ok_or_else(|| {
            ApiError::BadRequest(format!("parameter {} is {:?}; {text:?} is not one", spec.name, spec.kind))
        })?);
    }
    let mut wholes = Vec::new();
    for text in query.whole.as_deref().unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let hash = text.parse().map_err(|e| ApiError::BadRequest(format!("whole={text:?} is {e}")))?;
        wholes.push(hash);
    }
    let frame = TileFrame {
        tag: 0,
        tile: Tile { start: query.start.unwrap_or(0), count: query.count },
        params,
        wholes,
        inputs,
    };
    let job = tile::job(&state, &block, frame)?;
    let limits = state.limits();
    let held = state.budgets().take_tile(peer, share(result_bytes(&desc, query.count), limits))?;
    let mut outputs = tile::run(&state, peer, &device, job).await?;
    let outputs = if outputs.len() == 1 { outputs.swap_remove(0) } else { outputs.concat() };
    let body = Body::new(Holding::new(Body::from(outputs), held));
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response())
}
