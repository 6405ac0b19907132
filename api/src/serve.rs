//! The accept loop: TLS (HTTP/2 and HTTP/1.1 by ALPN) or plain (h2c and HTTP/1.1, for a
//! TLS-terminating proxy in front), bounded connections and handshakes, and a graceful drain.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
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
    let graceful = GracefulShutdown::new();
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
                // Each request learns who sent it: its connection's peer, or the client a trusted
                // proxy names.
                let trusted = state.0.config.trusted_proxies.clone();
                let service = TowerToHyperService::new(tower::ServiceExt::map_request(
                    router.clone(),
                    move |mut request: axum::http::Request<hyper::body::Incoming>| {
                        let who = trusted.peer(peer, request.headers());
                        request.extensions_mut().insert(who);
                        request
                    },
                ));
                let (builder, acceptor, watcher) = (builder.clone(), acceptor.clone(), graceful.watcher());
                let handshake = limits.handshake;
                tokio::spawn(async move {
                    let _permit = permit;
                    let result = match acceptor {
                        Some(acceptor) => match tokio::time::timeout(handshake, acceptor.accept(tcp)).await {
                            Ok(Ok(stream)) => {
                                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                                watcher.watch(conn.into_owned()).await
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
                            watcher.watch(conn.into_owned()).await
                        }
                    };
                    if let Err(e) = result {
                        tracing::debug!(%peer, "connection ended: {e}");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    state.drain();
    drop(listener);
    tracing::info!("draining: {} tiles in flight", state.tiles_in_flight());
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("every connection closed"),
        () = tokio::time::sleep(grace) => tracing::warn!("grace period over with connections still open"),
    }
}
