//! Running tiles: the full-duplex tile stream, and one tile per request for curl.
//!
//! The stream reads tile frames from the request body and writes result frames to the response
//! body as each tile finishes (in any order), keeping at most `depth` tiles of the stream on the
//! device; it reads no further frames until one finishes, so HTTP/2 flow control holds a fast
//! sender back. A bad frame gets an error frame for its tag and the stream goes on; a frame that
//! breaks the framing itself ends the stream with an error frame tagged `u32::MAX`. A stream that
//! sends nothing, or reads no result, for `Limits::stream_idle` is closed, and so is one whose
//! frame takes longer to arrive than `stream_idle` plus a second per MiB it declares (a frame
//! kept alive a byte at a time holds its buffer no longer than that).
//!
//! Every tile holds its share of `Limits::tile_bytes` ([`crate::held`]) from the moment its frame
//! starts to arrive until its results have gone to HTTP/2: a stream without room for its next
//! frame reads nothing until there is, and a single tile without room for its results is `busy`.
//! A stream given up on for results unread makes its answer due at once, so that its connection
//! is dropped with whatever HTTP/2 still holds of it.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::Deserialize;
use tokio::sync::mpsc;
use xcd_engine::{DeviceHandle, TileJob, WholeArray};
use xcd_wire::frame::{STREAM_TAG, UNKNOWN_TAG};
use xcd_wire::rest::{FRAMES_MEDIA_TYPE, RUN_ITEMS_HEADER};
use xcd_wire::{BlockDesc, BlockId, FrameSplitter, ParamKind, ProblemCode, Tile, TileFrame, result_pieces};

use crate::activity::Peer;
use crate::held::{Held, Holding, Wanted, frame_cost, result_bytes, share};
use crate::metrics::DeviceLabel;
use crate::open::DueNow;
use crate::problem::ApiError;
use crate::state::AppState;

/// Query of both tile endpoints.
#[derive(Debug, Deserialize)]
pub(crate) struct StreamQuery {
    /// Device index or id (default 0).
    device: Option<String>,
}

/// Checks a run can start on a device: not draining, not NIMBY, block loaded, memory enough.
async fn open(
    state: &AppState,
    id: &str,
    device: Option<&str>,
    run_items: Option<u64>,
) -> Result<(Arc<BlockDesc>, BlockId, DeviceHandle), ApiError> {
    state.admit()?;
    let desc = state.store().find(id)?;
    let (_, handle) = state.devices().pick(device)?;
    let block = handle.load(desc.clone()).await.map_err(ApiError::from)?;
    if let Some(items) = run_items {
        let per_item: u64 =
            desc.arrays.iter().filter(|a| a.role != xcd_wire::ArrayRole::Whole).map(|a| u64::from(a.elem_size)).sum();
        state.admit_memory(&handle, items.saturating_mul(per_item)).await?;
    }
    Ok((desc, block, handle))
}

/// Turns a decoded frame into a device job, checked against the block as the engine checks it.
fn job(state: &AppState, desc: &BlockDesc, block: BlockId, frame: TileFrame) -> Result<TileJob, ApiError> {
    let count = u64::from(frame.tile.count);
    let out_bytes = result_bytes(desc, frame.tile.count);
    let limit = state.limits().max_frame_bytes;
    if out_bytes > limit {
        return Err(ApiError::TooLarge(format!(
            "a tile of {count} items returns {out_bytes} bytes, over this daemon's limit of {limit}: send smaller tiles"
        )));
    }
    // The frame carries the per-item inputs as one run of bytes; split it where the block says.
    let sizes: Vec<u64> = desc.tile_inputs().map(|i| count * u64::from(desc.arrays[i].elem_size)).collect();
    let want: u64 = sizes.iter().sum();
    if frame.inputs.len() as u64 != want {
        return Err(ApiError::BadFrame(format!(
            "a tile of {count} items of block {} needs {want} bytes of per-item inputs, the frame carries {}",
            desc.name,
            frame.inputs.len()
        )));
    }
    // Each input is a view of the frame's bytes, which are a view of the stream's.
    let mut inputs = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for size in sizes {
        inputs.push(frame.inputs.slice(at..at + size as usize));
        at += size as usize;
    }
    let mut whole = Vec::with_capacity(frame.wholes.len());
    for hash in &frame.wholes {
        let data = state.store().array(hash).ok_or_else(|| ApiError::UnknownArray(hex::encode(hash)))?;
        whole.push(WholeArray { hash: *hash, data });
    }
    let job = TileJob { block, tile: frame.tile, params: frame.params, inputs, whole };
    job.check(desc).map_err(ApiError::from)?;
    state.metrics().bytes_in.inc_by(want);
    Ok(job)
}

/// Runs one job of `peer`'s on a device, counting it; its outputs in binding order.
async fn run(
    state: &AppState,
    peer: Peer,
    desc: &BlockDesc,
    device: &DeviceHandle,
    job: TileJob,
) -> Result<Vec<Vec<u8>>, ApiError> {
    let started = Instant::now();
    let items = u64::from(job.tile.count);
    let in_flight = state.in_flight(device);
    let result = device.run(job).await;
    drop(in_flight);
    state.activity().tile(peer, &desc.name, &device.info().id, items, result.is_ok());
    let output = result.map_err(ApiError::from)?;
    let label = DeviceLabel { device: device.info().id.clone() };
    state.metrics().tiles.get_or_create(&label).inc();
    state.metrics().tile_seconds.get_or_create(&label).observe(started.elapsed().as_secs_f64());
    let bytes: usize = output.outputs.iter().map(Vec::len).sum();
    state.metrics().bytes_out.inc_by(bytes as u64);
    Ok(output.outputs)
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
        open(&state, &id, query.device.as_deref(), run_items).await
    }
    .await;
    let (desc, block, device) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            crate::guard::drain(request).await;
            return Err(e);
        }
    };
    let slot = state.streams().try_open()?;
    let (tx, rx) = mpsc::channel::<Answer>(state.depth() as usize * 2);
    let due = due.map(|Extension(due)| due);
    let taking = Arc::new(Taking::new());
    let taken = taking.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let stream = Stream { state, peer, desc, block, device, tx, due, taking };
        serve_stream(stream, request).await;
    });
    // Each message is one frame in pieces (`result_pieces`), sent on in order; its tile's share
    // of the budget goes once its last piece has been taken.
    let body = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) }).flat_map(
        move |(pieces, share)| {
            let taken = taken.clone();
            futures_util::stream::iter(pieces).map(move |piece| {
                let _share = &share;
                taken.took();
                Ok::<_, Infallible>(piece)
            })
        },
    );
    Ok(([(header::CONTENT_TYPE, FRAMES_MEDIA_TYPE)], Body::from_stream(body)).into_response())
}

/// A result frame in pieces, with its tile's share of the budget when it has one.
type Answer = (Vec<Bytes>, Option<Share>);

/// How a stream's answer is being taken by HTTP/2: how many of its results still hold a share of
/// the budget, and when it last took a piece. A stream waiting for room while its own results go
/// untaken for the idle limit has a client that reads nothing.
struct Taking {
    holding: std::sync::atomic::AtomicUsize,
    last: parking_lot::Mutex<tokio::time::Instant>,
}

impl Taking {
    fn new() -> Self {
        Taking { holding: Default::default(), last: parking_lot::Mutex::new(tokio::time::Instant::now()) }
    }

    fn took(&self) {
        *self.last.lock() = tokio::time::Instant::now();
    }

    fn last(&self) -> tokio::time::Instant {
        *self.last.lock()
    }
}

/// A result's share of the budget, counted by its stream's [`Taking`] until dropped.
struct Share {
    _held: Held,
    taking: Arc<Taking>,
}

impl Share {
    fn new(held: Held, taking: &Arc<Taking>) -> Self {
        taking.holding.fetch_add(1, Ordering::SeqCst);
        Share { _held: held, taking: taking.clone() }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.taking.holding.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One tile stream's parts, handed over once from its handler.
struct Stream {
    state: AppState,
    peer: Peer,
    desc: Arc<BlockDesc>,
    block: BlockId,
    device: DeviceHandle,
    /// The answers, in the order tiles end.
    tx: mpsc::Sender<Answer>,
    due: Option<DueNow>,
    taking: Arc<Taking>,
}

impl Stream {
    /// Ends the stream with a problem frame for the whole stream.
    async fn close(&self, e: ApiError) {
        let _ = self.tx.send((e.problem_frame(STREAM_TAG), None)).await;
    }

    /// Keeps a refusal of this stream's kind among the refusals.
    fn refused(&self, code: ProblemCode, what: &str) {
        self.state.refused(self.peer, code, format!("{what} of block {}", self.desc.name));
    }

    /// Runs one frame's tile: its result pieces, or a problem frame for its tag, with the
    /// budget's share it held.
    fn tile(&self, frame: Bytes, held: Option<Held>) -> impl Future<Output = (Vec<Bytes>, Option<Held>)> + use<> {
        let (state, peer, desc, device, block) =
            (self.state.clone(), self.peer, self.desc.clone(), self.device.clone(), self.block);
        async move {
            let frame = match TileFrame::decode(&frame) {
                Ok(frame) => frame,
                Err(e) => {
                    state.refused(peer, ProblemCode::BadFrame, format!("a tile frame for block {}", desc.name));
                    let tag = frame
                        .get(4..8)
                        .map_or(UNKNOWN_TAG, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .min(UNKNOWN_TAG);
                    return (ApiError::BadFrame(e.to_string()).problem_frame(tag), held);
                }
            };
            let tag = frame.tag;
            let result = match job(&state, &desc, block, frame) {
                Ok(job) => run(&state, peer, &desc, &device, job).await,
                Err(e) => Err(e),
            };
            let pieces = match result {
                Ok(outputs) => result_pieces(tag, outputs),
                Err(e) => {
                    state.refused(peer, e.code(), format!("a tile of block {}", desc.name));
                    e.problem_frame(tag)
                }
            };
            (pieces, held)
        }
    }

    /// Sends one tile's answer; false when the stream is to end (the program went away, or
    /// reads no result for the stream idle limit: it holds a stream, tiles and buffers for
    /// nothing, so the stream ends and the program sees it end early).
    async fn deliver(&self, pieces: Vec<Bytes>, held: Option<Held>) -> bool {
        let answer = (pieces, held.map(|held| Share::new(held, &self.taking)));
        match tokio::time::timeout(self.state.limits().stream_idle, self.tx.send(answer)).await {
            Ok(Ok(())) => true,
            Ok(Err(_)) => false,
            Err(_) => {
                results_unread(&self.state, self.peer, &self.desc, self.due.as_ref());
                false
            }
        }
    }
}

/// What has arrived of the request body: frames, the front frame's share of the tile budget
/// (held, or waited for), and when the frame now arriving must be whole.
struct Intake {
    splitter: FrameSplitter,
    charge: Option<Held>,
    wanted: Option<Wanted>,
    frame_due: Option<tokio::time::Instant>,
}

impl Intake {
    /// The next whole frame whose share of the budget is held, taking or asking for its share
    /// first; `Ok(None)` when none is ready (or its share is being waited for).
    fn next(&mut self, stream: &Stream) -> Result<Option<(Bytes, Option<Held>)>, xcd_wire::FrameError> {
        let (state, limits) = (&stream.state, stream.state.limits());
        if self.charge.is_none() && self.wanted.is_none() {
            if let Some(cost) = self.splitter.front().and_then(|front| frame_cost(front, &stream.desc, limits)) {
                match state.budgets().tile_share(stream.peer, cost) {
                    Ok(held) => self.charge = Some(held),
                    Err(wait) => self.wanted = Some(wait),
                }
            }
        }
        if self.wanted.is_some() {
            return Ok(None);
        }
        Ok(self.splitter.next_frame()?.map(|frame| {
            self.frame_due = None;
            (frame, self.charge.take())
        }))
    }

    /// Sets when the frame now arriving must be whole, while there is `room` to take it; the
    /// clock starts when its first bytes arrive.
    fn set_due(&mut self, room: bool, limits: &crate::Limits) {
        self.frame_due = match self.splitter.arriving() {
            Some(length) if room => {
                self.frame_due.or_else(|| Some(tokio::time::Instant::now() + frame_time(limits, length)))
            }
            _ => None,
        };
    }

    /// Why a stream with nothing running ends now, if it does: `Some(None)` cleanly.
    fn ending(&self, body_done: bool, draining: bool) -> Option<Option<ApiError>> {
        if !(body_done || draining) {
            return None;
        }
        Some(if draining && !(body_done && self.splitter.is_empty()) {
            Some(ApiError::Draining)
        } else if !self.splitter.is_empty() {
            Some(ApiError::BadFrame("the stream ended inside a frame".into()))
        } else {
            None
        })
    }
}

async fn serve_stream(stream: Stream, request: Body) {
    let limits = stream.state.limits();
    let depth = stream.state.depth() as usize;
    let mut data = request.into_data_stream();
    let splitter = FrameSplitter::new(limits.max_frame_bytes);
    let mut intake = Intake { splitter, charge: None, wanted: None, frame_due: None };
    let mut running = FuturesUnordered::new();
    let mut draining = stream.state.streams().drain_signal();
    let mut body_done = false;
    loop {
        // Start buffered tiles while there is room on the device, unless draining.
        while running.len() < depth && !*draining.borrow() {
            match intake.next(&stream) {
                Ok(Some((frame, held))) => running.push(stream.tile(frame, held)),
                Ok(None) => break,
                Err(e) => {
                    stream.refused(ProblemCode::BadFrame, "the tile stream");
                    return stream.close(ApiError::BadFrame(e.to_string())).await;
                }
            }
        }
        let draining_now = *draining.borrow();
        if running.is_empty()
            && let Some(why) = intake.ending(body_done, draining_now)
        {
            if let Some(e) = why {
                stream.close(e).await;
            }
            return;
        }
        let room = running.len() < depth && !body_done && !draining_now && intake.wanted.is_none();
        intake.set_due(room, limits);
        let taking = &stream.taking;
        tokio::select! {
            () = tokio::time::sleep_until(intake.frame_due.unwrap_or_else(tokio::time::Instant::now)), if intake.frame_due.is_some() => {
                let secs = frame_time(limits, intake.splitter.arriving().unwrap_or(0)).as_secs();
                stream.refused(ProblemCode::BadFrame, "the tile stream");
                return stream.close(ApiError::BadFrame(format!("a frame took more than {secs} s to arrive: the stream is closed"))).await;
            }
            () = tokio::time::sleep_until(taking.last() + limits.stream_idle),
                if intake.wanted.is_some() && taking.holding.load(Ordering::SeqCst) > 0 =>
            {
                if taking.last().elapsed() >= limits.stream_idle {
                    results_unread(&stream.state, stream.peer, &stream.desc, stream.due.as_ref());
                    return;
                }
            }
            held = async { intake.wanted.as_mut().expect("waiting for room").await }, if intake.wanted.is_some() => {
                intake.wanted = None;
                intake.charge = Some(held);
            }
            Some((pieces, held)) = running.next(), if !running.is_empty() => {
                if !stream.deliver(pieces, held).await {
                    return;
                }
            }
            chunk = tokio::time::timeout(limits.stream_idle, data.next()), if room => match chunk {
                Ok(Some(Ok(bytes))) => intake.splitter.push(&bytes),
                Ok(Some(Err(_))) => return, // the program reset the stream
                Ok(None) => body_done = true,
                Err(_) if running.is_empty() => {
                    let secs = limits.stream_idle.as_secs();
                    return stream.close(ApiError::BadFrame(format!("no frame for {secs} s: the stream is closed"))).await;
                }
                Err(_) => {}
            },
            _ = draining.changed(), if !draining_now => {}
        }
    }
}

/// Gives up a stream whose client reads no result: kept among the refusals, and its answer made
/// due at once, so that its connection is dropped with what HTTP/2 still holds of it.
fn results_unread(state: &AppState, peer: Peer, desc: &BlockDesc, due: Option<&DueNow>) {
    let secs = state.limits().stream_idle.as_secs();
    tracing::info!(%peer, "a tile stream of block {} closed: no result read for {secs} s", desc.name);
    let refusal = ApiError::ResultsUnread { block: desc.name.clone(), secs };
    state.refused(peer, refusal.code(), format!("the tile stream of block {}", desc.name));
    if let Some(due) = due {
        due.now();
    }
}

/// How long a frame of `length` bytes may take to arrive: the idle limit, and a second per MiB.
fn frame_time(limits: &crate::Limits, length: u64) -> std::time::Duration {
    limits.stream_idle + std::time::Duration::from_secs(length >> 20)
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
    let (desc, block, device) = open(&state, &id, query.device.as_deref(), None).await?;
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
        let mut hash = [0u8; 32];
        hex::decode_to_slice(text, &mut hash)
            .map_err(|_| ApiError::BadRequest(format!("whole={text:?} is not a SHA-256 in hex")))?;
        wholes.push(hash);
    }
    let frame = TileFrame {
        tag: 0,
        tile: Tile { start: query.start.unwrap_or(0), count: query.count },
        params,
        wholes,
        inputs,
    };
    let job = job(&state, &desc, block, frame)?;
    let limits = state.limits();
    let held = state.budgets().take_tile(peer, share(result_bytes(&desc, query.count), limits))?;
    let mut outputs = run(&state, peer, &desc, &device, job).await?;
    let outputs = if outputs.len() == 1 { outputs.swap_remove(0) } else { outputs.concat() };
    let body = Body::new(Holding::new(Body::from(outputs), held));
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response())
}
