//! The baselines' servers, over the daemon's own TLS settings (`xcd_api::Identity`): an HTTP/2
//! server that answers each request with its own body as it arrives, and a bare TLS server that
//! writes back every byte it reads.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The daemon's TLS settings with a key of their own, in a folder that lives as long as `home`.
pub(crate) fn tls(home: &std::path::Path) -> Result<Arc<ServerConfig>, String> {
    let identity = xcd_api::Identity::load_or_create(home).map_err(|e| e.to_string())?;
    identity.server_config().map_err(|e| e.to_string())
}

/// Accepts TLS connections on a port of `ip` and hands each to `serve`; the port's address.
async fn accept<F, Fut>(tls: Arc<ServerConfig>, ip: &str, serve: F) -> Result<SocketAddr, String>
where
    F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind((ip, 0)).await.map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let acceptor = TlsAcceptor::from(tls);
    let serve = Arc::new(serve);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            let (acceptor, serve) = (acceptor.clone(), serve.clone());
            tokio::spawn(async move {
                if let Ok(stream) = acceptor.accept(tcp).await {
                    serve(stream).await;
                }
            });
        }
    });
    Ok(addr)
}

/// Starts the HTTP/2 echo server on a loopback port; its address.
pub(crate) async fn http2(tls: Arc<ServerConfig>) -> Result<SocketAddr, String> {
    accept(tls, "127.0.0.1", |stream| async move {
        let service = hyper::service::service_fn(|request: hyper::Request<hyper::body::Incoming>| async move {
            Ok::<_, Infallible>(hyper::Response::new(request.into_body()))
        });
        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(stream), service)
            .await;
    })
    .await
}

/// Starts the bare TLS echo server on a port of `ip`; its address.
pub(crate) async fn raw(tls: Arc<ServerConfig>, ip: &str) -> Result<SocketAddr, String> {
    accept(tls, ip, |stream| async move {
        let (mut read, mut write) = tokio::io::split(stream);
        let _ = tokio::io::copy(&mut read, &mut write).await;
    })
    .await
}
