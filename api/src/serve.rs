//! The accept loop: TLS (HTTP/2 and HTTP/1.1 by ALPN) or plain (h2c and HTTP/1.1, for a
//! TLS-terminating proxy in front), bounded connections and handshakes, idle connections closed,
//! and a graceful drain.
//!
//! Connection slots come in two budgets, unproven and proven ([`crate::admission`]): a connection
//! that has not shown the secret within `prove_within` is closed, and the oldest unproven one makes
//! room for a new one.
//!
//! Each connection counts its open requests ([`crate::open`]). One with none open for
//! [`Limits::connection_idle`](crate::Limits) is shut down gracefully: a client that holds
//! connections open and only answers pings cannot keep the daemon's connection slots. One with an
//! answer of a known size unsent past its time (a client that does not read it) is dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::admission::{Admission, Conn};
use crate::open::{Counted, OpenRequests};
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
    let limits = state.limits().clone();
    let admission = Admission::new(&limits);
    let acceptor = tls.map(TlsAcceptor::from);
    let (stop, stopping) = watch::channel(false);
    let builder = http_builder(&limits);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Some((tcp, peer)) = accepted_or_wait(accepted).await else { continue };
                let exempt = state.profile().trusted_proxies.trusts(peer.ip());
                let conn = admission.admit(peer.ip(), exempt);
                let _ = tcp.set_nodelay(true);
                let open = Arc::new(OpenRequests::default());
                // Each request learns who sent it: its connection's peer, or the client a trusted
                // proxy names, and its connection's standing; and counts as open on its connection
                // until its response is done.
                let (trusted, router, counted) = (state.profile().trusted_proxies.clone(), router.clone(), open.clone());
                let (standing, patience) = (conn.clone(), limits.stream_idle);
                let service = TowerToHyperService::new(tower::service_fn(
                    move |mut request: axum::http::Request<hyper::body::Incoming>| {
                        let who = trusted.peer(peer, request.headers());
                        let guard = counted.start();
                        request.extensions_mut().insert(who);
                        request.extensions_mut().insert(standing.clone());
                        request.extensions_mut().insert(guard.handle());
                        let answer = tower::ServiceExt::oneshot(router.clone(), request);
                        async move {
                            let response = answer.await?;
                            Ok::<_, std::convert::Infallible>(response.map(|body| Body::new(Counted::new(body, guard, patience))))
                        }
                    },
                ));
                let (builder, acceptor, stopping) = (builder.clone(), acceptor.clone(), stopping.clone());
                let (handshake, idle) = (limits.handshake, limits.connection_idle);
                let prove_by = Instant::now() + limits.prove_within;
                tokio::spawn(async move {
                    let _slot = Slot(conn.clone());
                    let result = match acceptor {
                        Some(acceptor) => {
                            let Some(stream) = tls_handshake(&acceptor, tcp, &conn, handshake, prove_by, peer).await else {
                                return;
                            };
                            let http = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                            drive(http, &open, &conn, prove_by, idle, stopping).await
                        }
                        None => {
                            let http = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service);
                            drive(http, &open, &conn, prove_by, idle, stopping).await
                        }
                    };
                    log_end(peer, idle, result);
                });
            }
            () = &mut shutdown => break,
        }
    }
    state.drain();
    drop(listener);
    finish(&state, &stop, &admission, grace).await;
}

/// The connection accepted, or after a failure (out of file descriptors and the like) `None`
/// once a little time has passed, so that the loop does not spin.
async fn accepted_or_wait<T>(accepted: std::io::Result<T>) -> Option<T> {
    match accepted {
        Ok(pair) => Some(pair),
        Err(e) => {
            tracing::warn!("accept failed: {e}");
            tokio::time::sleep(Duration::from_millis(50)).await;
            None
        }
    }
}

/// HTTP/1.1 with a time limit on headers, and HTTP/2 with at most 128 streams a connection and
/// pings every 30 s.
fn http_builder(limits: &crate::Limits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(128)
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(20));
    builder
}

/// The TLS handshake of a connection, within `limit`, given up if the connection is evicted or
/// has not shown the secret by `prove_by`.
async fn tls_handshake(
    acceptor: &TlsAcceptor,
    tcp: tokio::net::TcpStream,
    conn: &Conn,
    limit: Duration,
    prove_by: Instant,
    peer: std::net::SocketAddr,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let done = tokio::select! {
        done = tokio::time::timeout(limit, acceptor.accept(tcp)) => done,
        () = conn.until_evicted() => return None,
        () = tokio::time::sleep_until(prove_by) => return None,
    };
    match done {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(%peer, "TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

/// Says how a connection ended.
fn log_end<E: std::fmt::Display>(peer: std::net::SocketAddr, idle: Duration, result: Result<Ended, E>) {
    match result {
        Ok(Ended::Idle) => tracing::debug!(%peer, "connection closed: idle for {idle:?}"),
        Ok(Ended::Unproven) => tracing::debug!(%peer, "connection closed: no secret shown"),
        Ok(Ended::Unread) => tracing::info!(%peer, "connection closed: an answer went unread past its time"),
        Ok(Ended::Done) => {}
        Err(e) => tracing::debug!(%peer, "connection ended: {e}"),
    }
}

/// Tells every connection to finish, and waits for them for up to `grace`.
async fn finish(state: &AppState, stop: &watch::Sender<bool>, admission: &Admission, grace: Duration) {
    let _ = stop.send(true);
    tracing::info!("draining: {} tiles in flight", state.tiles_in_flight());
    tokio::select! {
        () = admission.all_closed() => tracing::info!("every connection closed"),
        () = tokio::time::sleep(grace) => tracing::warn!("grace period over with connections still open"),
    }
}

/// How a connection ended without error.
enum Ended {
    /// The client closed it, or it finished after a drain.
    Done,
    /// It was shut down for having no request open for the idle limit.
    Idle,
    /// It was closed for not showing the secret in time, or to make room for a newer one.
    Unproven,
    /// It was dropped with an answer unsent past its time (the client does not read).
    Unread,
}

/// A connection's slot, freed when its task ends.
struct Slot(Arc<Conn>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.closed();
    }
}

/// After a graceful shutdown for want of the secret, the time its open requests get to finish.
const UNPROVEN_GRACE: Duration = Duration::from_secs(1);

/// Serves one connection until it ends, shutting it down gracefully when it has been idle for
/// `idle` or when the daemon drains, and dropping it when an answer goes unread past its time.
/// Unless a request on it has shown the secret by `prove_by`,
/// it is shut down then (and dropped a moment later if requests are still open); evicted, it is
/// dropped at once.
async fn drive<C, E>(
    conn: C,
    open: &OpenRequests,
    standing: &Conn,
    prove_by: Instant,
    idle: Duration,
    mut stopping: watch::Receiver<bool>,
) -> Result<Ended, E>
where
    C: hyper_util::server::graceful::GracefulConnection<Error = E>,
{
    let mut conn = std::pin::pin!(conn);
    let mut closing: Option<Ended> = None;
    let mut unproven_until = Some(prove_by);
    loop {
        let check = open.idle_since().map_or_else(|| Instant::now() + idle, |since| since + idle);
        let deadline = unproven_until.filter(|_| !standing.proven());
        let due = open.first_due();
        tokio::select! {
            result = conn.as_mut() => return result.map(|()| closing.unwrap_or(Ended::Done)),
            () = standing.until_evicted(), if !standing.proven() => return Ok(Ended::Unproven),
            () = tokio::time::sleep_until(deadline.unwrap_or(prove_by)), if deadline.is_some() => {
                // The grace after the shutdown is over too: requests still open are dropped.
                if matches!(closing, Some(Ended::Unproven)) {
                    return Ok(Ended::Unproven);
                }
                if closing.replace(Ended::Unproven).is_none() {
                    conn.as_mut().graceful_shutdown();
                }
                unproven_until = Some(Instant::now() + UNPROVEN_GRACE);
            }
            changed = stopping.changed(), if closing.is_none() => {
                if changed.is_err() || *stopping.borrow() {
                    closing = Some(Ended::Done);
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = open.changed() => {}
            () = tokio::time::sleep_until(due.unwrap_or(check)), if due.is_some() => {
                if open.first_due().is_some_and(|at| at <= Instant::now()) {
                    return Ok(Ended::Unread);
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
