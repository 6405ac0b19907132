//! The requests open on one connection: since when none has been (for the idle limit), and when
//! each answer of a known size must have been sent (for clients that never read one).
//!
//! A request is open until its response body has been sent or dropped, so a tile stream counts
//! for as long as it runs. An answer of a known size (a single tile's outputs, a page) is due
//! within `stream_idle` and a second per MiB; the accept loop ([`crate::serve`]) drops a connection
//! with an answer past due, since HTTP/2 buffers an answer the client does not read, out of the
//! body's reach. A tile stream has no size, and no such deadline: its own limits apply.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The requests open on one connection.
pub(crate) struct OpenRequests {
    open: AtomicUsize,
    idle_since: Mutex<Instant>,
    next: AtomicU64,
    /// Answers of a known size not yet sent, by when each is due.
    due: Mutex<BTreeMap<(Instant, u64), ()>>,
    /// Told when an answer becomes due, so that the connection's loop looks again.
    changed: Notify,
}

impl Default for OpenRequests {
    fn default() -> Self {
        OpenRequests {
            open: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            next: AtomicU64::new(0),
            due: Mutex::default(),
            changed: Notify::new(),
        }
    }
}

impl OpenRequests {
    /// A request begins.
    pub(crate) fn start(self: &Arc<Self>) -> OpenGuard {
        self.open.fetch_add(1, Ordering::SeqCst);
        OpenGuard { requests: self.clone(), id: self.next.fetch_add(1, Ordering::SeqCst) }
    }

    /// When the last request ended, while none is open.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let since = *self.idle_since.lock();
        (self.open.load(Ordering::SeqCst) == 0).then_some(since)
    }

    /// Resolves when an answer has become due since the last call.
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// When the first answer still unsent is due, if any.
    pub(crate) fn first_due(&self) -> Option<Instant> {
        self.due.lock().keys().next().map(|(at, _)| *at)
    }
}

/// One open request: ends when dropped.
pub(crate) struct OpenGuard {
    requests: Arc<OpenRequests>,
    id: u64,
}

impl OpenGuard {
    /// Its answer, of `bytes`, must be sent within `patience` and a second per MiB.
    fn answer_due(&self, bytes: u64, patience: Duration) {
        let at = Instant::now() + patience + Duration::from_secs(bytes >> 20);
        self.requests.due.lock().insert((at, self.id), ());
        self.requests.changed.notify_one();
    }
}

impl OpenGuard {
    /// A handle by which the request's handler can make its answer due at once.
    pub(crate) fn handle(&self) -> DueNow {
        DueNow { requests: self.requests.clone(), id: self.id }
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let id = self.id;
        self.requests.due.lock().retain(|(_, of), ()| *of != id);
        *self.requests.idle_since.lock() = Instant::now();
        self.requests.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Given to each request (an extension): a tile stream that has given up on a client that reads
/// nothing makes its answer due now, so that the connection is dropped with what HTTP/2 still
/// holds of it, as for an unread answer of a known size.
#[derive(Clone)]
pub(crate) struct DueNow {
    requests: Arc<OpenRequests>,
    id: u64,
}

impl DueNow {
    /// The answer is due now: unless it is sent or dropped first, its connection is dropped.
    pub(crate) fn now(&self) {
        self.requests.due.lock().insert((Instant::now(), self.id), ());
        self.requests.changed.notify_one();
    }
}

/// The most of an answer handed to HTTP/2 at once. hyper takes the next piece only when the
/// client's window has room, so an answer the client does not read stays here, in view of its
/// deadline, rather than whole in HTTP/2's send buffer (where it would count as sent).
const PIECE: usize = 64 << 10;

/// A response body that keeps its request open until it has been sent or dropped, handing its
/// data on in pieces of at most [`PIECE`] bytes.
pub(crate) struct Counted {
    body: Body,
    rest: Bytes,
    _guard: OpenGuard,
}

impl Counted {
    /// `body`, counted by `guard`; due within `patience` (and a second per MiB) when its size is
    /// known.
    pub(crate) fn new(body: Body, guard: OpenGuard, patience: Duration) -> Self {
        if let Some(bytes) = hyper::body::Body::size_hint(&body).exact() {
            guard.answer_due(bytes, patience);
        }
        Counted { body, rest: Bytes::new(), _guard: guard }
    }
}

impl hyper::body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.rest.is_empty() {
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => self.rest = data,
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                other => return other,
            }
        }
        let take = self.rest.len().min(PIECE);
        Poll::Ready(Some(Ok(Frame::data(self.rest.split_to(take)))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.body.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + self.rest.len() as u64);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + self.rest.len() as u64);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_of_a_known_size_are_due_and_streams_are_not() {
        let requests = Arc::new(OpenRequests::default());
        let stream = Counted::new(
            Body::from_stream(futures_util::stream::empty::<Result<Bytes, std::io::Error>>()),
            requests.start(),
            Duration::from_secs(60),
        );
        assert_eq!(requests.first_due(), None, "a stream has no size");
        let big = Counted::new(Body::from(vec![0u8; 3 << 20]), requests.start(), Duration::from_secs(60));
        let due = requests.first_due().expect("due");
        let expect = Instant::now() + Duration::from_secs(63);
        assert!(due <= expect && due + Duration::from_secs(1) > expect, "60 s and 3 s for 3 MiB");
        assert_eq!(requests.idle_since(), None, "two open");
        drop(big);
        assert_eq!(requests.first_due(), None, "sent or dropped: no longer due");
        drop(stream);
        assert!(requests.idle_since().is_some());
    }

    #[tokio::test]
    async fn an_answer_goes_on_in_pieces_and_whole() {
        use http_body_util::BodyExt;
        let requests = Arc::new(OpenRequests::default());
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let mut body = Counted::new(Body::from(data.clone()), requests.start(), Duration::from_secs(60));
        let mut got = Vec::new();
        while let Some(frame) = body.frame().await {
            let piece = frame.expect("data").into_data().expect("data");
            assert!(piece.len() <= PIECE);
            got.extend_from_slice(&piece);
        }
        assert_eq!(got, data);
    }
}
