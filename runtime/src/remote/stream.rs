//! One open tile stream to one device of a daemon: tiles go out as frames on the request body,
//! results come back on the response and are matched to their tile by tag.
//!
//! A task in the program's async runtime owns both directions; workers hand it a frame and wait
//! on a one-shot answer. When the stream breaks (the daemon died, declined mid-run, or ended the
//! stream), every tile waiting on it is answered with the reason, so it can run elsewhere.
//!
//! Results are answered as the chunks they arrived in ([`RopeSplitter`]): the worker copies
//! them once, straight into the program's arrays.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{Notify, mpsc, oneshot};
use xcd_wire::frame::STREAM_TAG;
use xcd_wire::{BlockId, ResultRope, Rope, RopeSplitter};

use super::RemoteError;
use super::daemon::Daemon;

/// A tile's results as they arrived (copied once, into place, by the worker), or why not.
type Answer = Result<Rope, RemoteError>;

struct Pending {
    tag: u32,
    frame: Bytes,
    reply: oneshot::Sender<Answer>,
}

/// An open tile stream.
pub(crate) struct TileStream {
    requests: mpsc::UnboundedSender<Pending>,
    closed: Arc<AtomicBool>,
    abort: Arc<Notify>,
    addr: String,
}

impl TileStream {
    /// Opens a stream for block `id` on device `device` of `daemon`.
    pub(crate) async fn open(
        daemon: Arc<Daemon>,
        id: BlockId,
        device: usize,
        run_items: u64,
    ) -> Result<TileStream, RemoteError> {
        let (body_tx, body_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
        let body = futures_util::stream::unfold(body_rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        let response = daemon.open_stream(id, device, run_items, reqwest::Body::wrap_stream(body)).await?;
        let (requests, rx) = mpsc::unbounded_channel();
        let closed = Arc::new(AtomicBool::new(false));
        let abort = Arc::new(Notify::new());
        tokio::spawn(serve(daemon.addr.clone(), response, body_tx, rx, closed.clone(), abort.clone()));
        Ok(TileStream { requests, closed, abort, addr: daemon.addr.clone() })
    }

    /// True once the stream has ended; a new one must be opened.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Gives up on the stream (the daemon stopped answering): every tile waiting on it is
    /// answered with that reason at once.
    pub(crate) fn abort(&self) {
        self.abort.notify_one();
    }

    /// Sends one tile frame; the answer comes on the returned receiver.
    pub(crate) fn send(&self, tag: u32, frame: Bytes) -> Result<oneshot::Receiver<Answer>, RemoteError> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Pending { tag, frame, reply })
            .map_err(|_| RemoteError::Failed { addr: self.addr.clone(), detail: "the tile stream has ended".into() })?;
        Ok(answer)
    }
}

async fn serve(
    addr: String,
    response: reqwest::Response,
    body: mpsc::Sender<Result<Bytes, std::io::Error>>,
    mut requests: mpsc::UnboundedReceiver<Pending>,
    closed: Arc<AtomicBool>,
    abort: Arc<Notify>,
) {
    let mut pending: HashMap<u32, oneshot::Sender<Answer>> = HashMap::new();
    let mut results = response.bytes_stream();
    let mut splitter = RopeSplitter::new(u64::from(u32::MAX));
    let failed = |detail: String| RemoteError::Failed { addr: addr.clone(), detail };
    let reason: RemoteError = 'stream: loop {
        tokio::select! {
            () = abort.notified() => break 'stream failed("the daemon stopped answering".into()),
            request = requests.recv() => match request {
                Some(p) => {
                    if body.send(Ok(p.frame)).await.is_err() {
                        let _ = p.reply.send(Err(failed("the daemon stopped reading tiles".into())));
                        break 'stream failed("the daemon stopped reading tiles".into());
                    }
                    pending.insert(p.tag, p.reply);
                }
                // The worker let go of the stream: end the request body; the daemon ends its side.
                None => break 'stream failed("the stream was closed".into()),
            },
            chunk = results.next() => match chunk {
                Some(Ok(bytes)) => {
                    splitter.push(bytes);
                    loop {
                        match splitter.next_frame() {
                            Ok(Some(frame)) => match ResultRope::decode(frame) {
                                Ok(ResultRope::Done { tag, outputs }) => {
                                    if let Some(reply) = pending.remove(&tag) {
                                        let _ = reply.send(Ok(outputs));
                                    }
                                }
                                Ok(ResultRope::Failed { tag, problem }) if tag == STREAM_TAG => {
                                    break 'stream RemoteError::from_problem(&addr, problem.problem_code(), problem.detail);
                                }
                                Ok(ResultRope::Failed { tag, problem }) => {
                                    if let Some(reply) = pending.remove(&tag) {
                                        let _ = reply.send(Err(RemoteError::from_problem(&addr, problem.problem_code(), problem.detail)));
                                    }
                                }
                                Err(e) => break 'stream failed(format!("the daemon sent a bad result frame: {e}")),
                            },
                            Ok(None) => break,
                            Err(e) => break 'stream failed(format!("the daemon sent a bad result frame: {e}")),
                        }
                    }
                }
                Some(Err(e)) => break 'stream failed(format!("the tile stream broke: {e}")),
                None => break 'stream failed("the daemon ended the tile stream".into()),
            },
        }
    };
    closed.store(true, Ordering::SeqCst);
    for (_, reply) in pending.drain() {
        let _ = reply.send(Err(reason.clone()));
    }
    requests.close();
    while let Ok(p) = requests.try_recv() {
        let _ = p.reply.send(Err(reason.clone()));
    }
}
