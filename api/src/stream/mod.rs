//! The full-duplex tile stream: reads tile frames from the request body and writes result frames
//! to the response body as each tile finishes (in any order), keeping at most `depth` tiles of
//! the stream on the device; it reads no further frames until one finishes, so HTTP/2 flow
//! control holds a fast sender back. A bad frame gets an error frame for its tag and the stream
//! goes on; a frame that breaks the framing itself ends the stream with an error frame tagged
//! `u32::MAX`. A stream that sends nothing, or reads no result, for `Limits::stream_idle` is
//! closed, and so is one whose frame takes longer to arrive than `stream_idle` plus a second per
//! MiB it declares (`intake`).
//!
//! Every tile holds its share of `Limits::tile_bytes` from the moment its frame starts to arrive
//! until its results have gone to HTTP/2 (`taking`): a stream without room for its next frame
//! reads nothing until there is. A stream given up on for results unread makes its answer due at
//! once, so that its connection is dropped with whatever HTTP/2 still holds of it.
//!
//! Owns the stream's task and its parts; opening the run and running each tile are
//! `crate::tile`'s, counting open streams is `crate::state`'s.

mod intake;
mod taking;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::{Body, Bytes};
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;
use xcd_engine::{DeviceHandle, Loaded};
use xcd_wire::frame::{STREAM_TAG, UNKNOWN_TAG};
use xcd_wire::{BlockDesc, FrameSplitter, ProblemCode, TileFrame, result_pieces};

use crate::activity::Peer;
use crate::held::Held;
use crate::open::DueNow;
use crate::problem::ApiError;
use crate::state::AppState;
use crate::tile::{self, Opened};
use intake::{Intake, frame_time};
use taking::{ResultShare, Taking};

/// Starts the stream of `peer`'s tiles of the run `opened`, read from `request`: its answer's
/// body, or `busy` when the most streams are open. `due` makes the answer due at once.
pub(crate) fn serve(
    state: AppState,
    peer: Peer,
    opened: Opened,
    due: Option<DueNow>,
    request: Body,
) -> Result<Body, ApiError> {
    let slot = state.streams().try_open()?;
    let (tx, rx) = mpsc::channel::<Answer>(state.depth() as usize * 2);
    let taking = Arc::new(Taking::new());
    let taken = taking.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let Opened { block, device } = opened;
        let stream = TileStream { state, peer, block, device, tx, due, taking };
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
    Ok(Body::from_stream(body))
}

/// A result frame in pieces, with its tile's share of the budget when it has one.
type Answer = (Vec<Bytes>, Option<ResultShare>);

/// One tile stream's parts, handed over once from its handler.
struct TileStream {
    state: AppState,
    peer: Peer,
    block: Loaded,
    device: DeviceHandle,
    /// The answers, in the order tiles end.
    tx: mpsc::Sender<Answer>,
    due: Option<DueNow>,
    taking: Arc<Taking>,
}

impl TileStream {
    /// Ends the stream with a problem frame for the whole stream.
    async fn close(&self, e: ApiError) {
        let _ = self.tx.send((e.problem_frame(STREAM_TAG), None)).await;
    }

    /// Keeps a refusal of this stream's kind among the refusals.
    fn refused(&self, code: ProblemCode, what: &str) {
        self.state.refused(self.peer, code, format!("{what} of block {}", self.block.desc().name));
    }

    /// Runs one frame's tile: its result pieces, or a problem frame for its tag, with the
    /// budget's share it held.
    fn tile(&self, frame: Bytes, held: Option<Held>) -> impl Future<Output = (Vec<Bytes>, Option<Held>)> + use<> {
        let (state, peer, device, block) = (self.state.clone(), self.peer, self.device.clone(), self.block.clone());
        async move {
            let frame = match TileFrame::decode(&frame) {
                Ok(frame) => frame,
                Err(e) => {
                    let name = &block.desc().name;
                    state.refused(peer, ProblemCode::BadFrame, format!("a tile frame for block {name}"));
                    let tag = frame
                        .get(4..8)
                        .map_or(UNKNOWN_TAG, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .min(UNKNOWN_TAG);
                    return (ApiError::BadFrame(e.to_string()).problem_frame(tag), held);
                }
            };
            let tag = frame.tag;
            let result = match tile::job(&state, &block, frame) {
                Ok(job) => tile::run(&state, peer, &device, job).await,
                Err(e) => Err(e),
            };
            let pieces = match result {
                Ok(outputs) => result_pieces(tag, outputs),
                Err(e) => {
                    state.refused(peer, e.code(), format!("a tile of block {}", block.desc().name));
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
        let answer = (pieces, held.map(|held| ResultShare::new(held, &self.taking)));
        match tokio::time::timeout(self.state.limits().stream_idle, self.tx.send(answer)).await {
            Ok(Ok(())) => true,
            Ok(Err(_)) => false,
            Err(_) => {
                results_unread(&self.state, self.peer, self.block.desc(), self.due.as_ref());
                false
            }
        }
    }
}

async fn serve_stream(stream: TileStream, request: Body) {
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
                    results_unread(&stream.state, stream.peer, stream.block.desc(), stream.due.as_ref());
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
