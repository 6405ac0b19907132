//! Registering blocks, and holding the whole arrays their tiles refer to.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use xcd_wire::rest::{ArrayHeld, Registered};
use xcd_wire::{ArrayHash, BlockDesc, BlockId};

use crate::problem::{ApiError, Limit};
use crate::state::AppState;

/// `POST /v1/blocks`: registers a block under its content address and loads it on every device
/// that takes one of its forms. Registering the same block again changes nothing.
pub(crate) async fn register(
    State(state): State<AppState>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Registered>), ApiError> {
    let limit = state.limits().max_block_bytes as u64;
    let bytes = ApiError::from_body(bytes, limit, "the block")?;
    let size = bytes.len();
    let (desc, id) = read_block(bytes).await?;
    // A new block is checked and loaded one at a time, after its room is found: a refused block
    // has loaded nothing anywhere.
    let registration = state.store().register(id).await;
    let known = registration.known();
    let policy = state.profile().forms;
    let desc = Arc::new(desc);
    if !known {
        registration.room_for(size)?;
        check_kernel(&desc).await?;
    }

    let takers: Vec<usize> = state
        .devices()
        .all()
        .iter()
        .enumerate()
        .filter(|(_, d)| xcd_wire::form_for(d.info().backend, &desc.forms, policy).is_some())
        .map(|(i, _)| i)
        .collect();
    if takers.is_empty() {
        let wanted: Vec<String> = state
            .devices()
            .all()
            .iter()
            .map(|d| {
                let forms: Vec<String> =
                    xcd_wire::forms_taken(d.info().backend, policy).iter().map(|f| f.to_string()).collect();
                format!("{} takes {}", d.info().id, forms.join(" or "))
            })
            .collect();
        let carried: Vec<String> = desc.forms.kinds().iter().map(|f| f.to_string()).collect();
        return Err(ApiError::NoForm(format!(
            "{}; block {} carries {}",
            wanted.join(", "),
            desc.name,
            if carried.is_empty() { "no form".to_owned() } else { carried.join(", ") }
        )));
    }
    let mut loaded = Vec::new();
    let mut last_error = None;
    for index in takers {
        match state.devices().all()[index].load(desc.clone()).await {
            Ok(_) => loaded.push(index),
            Err(e) => last_error = Some(ApiError::from(e)),
        }
    }
    if loaded.is_empty() {
        return Err(last_error.unwrap_or_else(|| ApiError::LoadFailed("no device loaded the block".into())));
    }
    registration.keep(desc, size);
    let status = if known { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(Registered { id: id.to_string(), devices: loaded })))
}

/// A block description from its JSON, checked, and its id: up to 32 MiB read and hashed, on the
/// blocking pool like a whole array's hash, not on an async worker.
async fn read_block(bytes: Bytes) -> Result<(BlockDesc, BlockId), ApiError> {
    tokio::task::spawn_blocking(move || {
        let desc: BlockDesc = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::BadRequest(format!("the block is not a block description: {e}")))?;
        desc.validate().map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let id = desc.id();
        Ok((desc, id))
    })
    .await
    .map_err(|_| ApiError::Busy(Limit::Stopping("read the block")))?
}

/// Reads and checks a block's kernel once, before any device loads it, so a kernel outside the
/// exact subset or the ABI is refused with its construct and line rather than once per device.
/// A block with neither WGSL nor SPIR-V has nothing to read: every device then refuses it as
/// `no_form`, naming what it takes (or, under `-trust-forms`, loads its own form as sent).
async fn check_kernel(desc: &Arc<BlockDesc>) -> Result<(), ApiError> {
    if desc.forms.wgsl.is_none() && desc.forms.spirv.is_none() {
        return Ok(());
    }
    let desc = desc.clone();
    let checked = tokio::task::spawn_blocking(move || xcd_forms::Kernel::for_block(&desc).map(|_| ()))
        .await
        .map_err(|_| ApiError::LoadFailed("checking the block's kernel failed inside the daemon".into()))?;
    checked.map_err(|e| ApiError::LoadFailed(format!("the block's kernel: {e}")))
}

fn parse_hash(text: &str) -> Result<ArrayHash, ApiError> {
    text.parse().map_err(|e| ApiError::BadRequest(format!("{text:?} is {e}")))
}

/// `PUT /v1/arrays/{hash}`: holds a whole array, checked against its hash.
pub(crate) async fn put_array(
    State(state): State<AppState>,
    Path(hash): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<ArrayHeld>), ApiError> {
    let expected = parse_hash(&hash)?;
    let bytes = ApiError::from_body(bytes, state.limits().max_array_bytes as u64, "the array")?;
    if bytes.is_empty() {
        return Err(ApiError::BadRequest("a whole array needs at least one element".into()));
    }
    // Refused now rather than at its first tile: no device here could bind it.
    let binds = state.devices().all().iter().map(|d| d.info().max_buffer_bytes).max();
    if let Some(binds) = binds.filter(|b| bytes.len() as u64 > *b) {
        return Err(ApiError::TooLarge(format!(
            "the array is {} bytes; the largest this daemon's devices bind in one array is {binds}: split it into smaller arrays",
            bytes.len()
        )));
    }
    // Hashing up to 512 MiB takes about a second: on the blocking pool, not an async worker
    // that every other connection needs meanwhile.
    let hashed = bytes.clone();
    let actual = tokio::task::spawn_blocking(move || ArrayHash::of(&hashed))
        .await
        .map_err(|_| ApiError::Busy(Limit::Stopping("hash the array")))?;
    if actual != expected {
        return Err(ApiError::BadRequest(format!(
            "the array's SHA-256 is {actual}, not {hash}: send the bytes the hash was made from"
        )));
    }
    let held = state.store().array(&expected).is_some();
    if !held {
        state.store().keep_array(expected, Arc::from(&bytes[..]));
    }
    let status = if held { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(ArrayHeld { hash: expected.to_string(), bytes: bytes.len() as u64 })))
}

/// `GET /v1/arrays/{hash}`: whether the daemon holds a whole array (not its bytes).
pub(crate) async fn get_array(
    State(state): State<AppState>,
    Path(hash): Path<String>,
) -> Result<Json<ArrayHeld>, ApiError> {
    let key = parse_hash(&hash)?;
    let data = state.store().array(&key).ok_or(ApiError::UnknownArray(key))?;
    Ok(Json(ArrayHeld { hash: key.to_string(), bytes: data.len() as u64 }))
}
