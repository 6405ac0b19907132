//! The accept loop: TLS (HTTP/2 and HTTP/1.1 by ALPN) or plain (h2c and HTTP/1.1, for a
//! TLS-terminating proxy in front), bounded connections and handshakes, idle connections closed,
//! and a graceful drain.
//!
//! Each connection counts its open requests (a request is open until its response body has been
//! sent or dropped, so a tile stream counts for as long as it runs). One with none open for
//! [`Limits::connection_idle`](crate::Limits) is shut down gracefully: a client that holds
//! connections open and only answers pings cannot keep the daemon's connection slots.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::activity::Peer;
use crate::routes::router;
use crate::state::AppState;

/// Serves `state` on `listener` until `shutdown` completes; then stops taking work, lets tiles in
/// flight finish for up to `grace`, and returns. With `tls` None it serves plain h2c and HTTP/1.1.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<ServerConfig>>,
    state: AppState,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let router = router(state.clone());
    let limits = state.0.config.limits.clone();
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let acceptor = tls.map(TlsAcceptor::from);
    let (stop, stopping) = watch::channel(false);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(128)
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(20));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        // Out of file descriptors and the like: wait a little rather than spin.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = connections.clone().try_acquire_owned() else {
                    state.refused(Peer { client: Some(peer.ip()), via: None }, "busy", "a connection".to_owned());
                    tracing::warn!(%peer, "connection refused: {} connections open", limits.max_connections);
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let open = Arc::new(OpenRequests::default());
                // Each request learns who sent it: its connection's peer, or the client a trusted
                // proxy names; and counts as open on its connection until its response is done.
                let (trusted, router, counted) = (state.0.config.trusted_proxies.clone(), router.clone(), open.clone());
                let service = TowerToHyperService::new(tower::service_fn(
                    move |mut request: axum::http::Request<hyper::body::Incoming>| {
                        let who = trusted.peer(peer, request.headers());
                        request.extensions_mut().insert(who);
                        let guard = counted.start();
                        let answer = tower::ServiceExt::oneshot(router.clone(), request);
                        async move {
                            let response = answer.await?;
                            Ok::<_, std::convert::Infallible>(response.map(|body| Body::new(Counted { body, _guard: guard })))
                        }
                    },
                ));
                let (builder, acceptor, stopping) = (builder.clone(), acceptor.clone(), stopping.clone());
                let (handshake, idle) = (limits.handshake, limits.connection_idle);
                tokio::spawn(async move {
                    let _permit = permit;
                    let result = match acceptor {
                        Some(acceptor) => match tokio::time::timeout(handshake, acceptor.accept(tcp)).await {
                            Ok(Ok(stream)) => {
                                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                                drive(conn, &open, idle, stopping).await
                            }
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, "TLS handshake failed: {e}");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake timed out");
                                return;
                            }
                        },
                        None => {
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service);
                            drive(conn, &open, idle, stopping).await
                        }
                    };
                    match result {
                        Ok(Ended::Idle) => tracing::debug!(%peer, "connection closed: idle for {idle:?}"),
                        Ok(Ended::Done) => {}
                        Err(e) => tracing::debug!(%peer, "connection ended: {e}"),
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    state.drain();
    drop(listener);
    let _ = stop.send(true);
    tracing::info!("draining: {} tiles in flight", state.tiles_in_flight());
    let every = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = connections.acquire_many(every) => tracing::info!("every connection closed"),
        () = tokio::time::sleep(grace) => tracing::warn!("grace period over with connections still open"),
    }
}

/// How a connection ended without error.
enum Ended {
    /// The client closed it, or it finished after a drain.
    Done,
    /// It was shut down for having no request open for the idle limit.
    Idle,
}

/// Serves one connection until it ends, shutting it down gracefully when it has been idle for
/// `idle` or when the daemon drains.
async fn drive<C, E>(
    conn: C,
    open: &OpenRequests,
    idle: Duration,
    mut stopping: watch::Receiver<bool>,
) -> Result<Ended, E>
where
    C: hyper_util::server::graceful::GracefulConnection<Error = E>,
{
    let mut conn = std::pin::pin!(conn);
    let mut closing: Option<Ended> = None;
    loop {
        let check = open.idle_since().map_or_else(|| Instant::now() + idle, |since| since + idle);
        tokio::select! {
            result = conn.as_mut() => return result.map(|()| closing.unwrap_or(Ended::Done)),
            changed = stopping.changed(), if closing.is_none() => {
                if changed.is_err() || *stopping.borrow() {
                    closing = Some(Ended::Done);
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = tokio::time::sleep_until(check), if closing.is_none() => {
                if open.idle_since().is_some_and(|since| since.elapsed() >= idle) {
                    closing = Some(Ended::Idle);
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// The requests open on one connection, and since when none has been.
struct OpenRequests {
    open: AtomicUsize,
    idle_since: Mutex<Instant>,
}

impl Default for OpenRequests {
    fn default() -> Self {
        OpenRequests { open: AtomicUsize::new(0), idle_since: Mutex::new(Instant::now()) }
    }
}

impl OpenRequests {
    fn start(self: &Arc<Self>) -> OpenGuard {
        self.open.fetch_add(1, Ordering::SeqCst);
        OpenGuard(self.clone())
    }

    /// When the last request ended, while none is open.
    fn idle_since(&self) -> Option<Instant> {
        let since = *self.idle_since.lock().unwrap_or_else(|e| e.into_inner());
        (self.open.load(Ordering::SeqCst) == 0).then_some(since)
    }
}

/// One open request: ends when dropped.
struct OpenGuard(Arc<OpenRequests>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request open until it has been sent or dropped.
struct Counted {
    body: Body,
    _guard: OpenGuard,
}

impl hyper::body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
