//! One accepted connection: the TLS handshake first when the server has a
//! certificate, then HTTP/1.1 with upgrades (the `openProcess`
//! WebSocket).
//!
//! The handshake is bounded by the head deadline, like a request's head:
//! a client that opens TCP and never finishes its `ClientHello` (or
//! speaks plain HTTP to a TLS port) is cut when it passes, so it holds its
//! place of the connection caps no longer than an idle plain connection
//! would. The first request's head then has the head deadline of its own.

use std::sync::Arc;

use corral_contract::SandboxProvider;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::{Shared, http};
use crate::tls::ServerTls;

/// Serves `stream` until it ends: over TLS with `tls`, else plain.
pub(super) async fn serve<P: SandboxProvider + 'static>(
    shared: Arc<Shared<P>>,
    stream: TcpStream,
    tls: Option<ServerTls>,
) {
    let Some(tls) = tls else {
        return serve_http(shared, stream).await;
    };
    let deadline = shared.limits.head_deadline;
    // A failed handshake (a plain-HTTP request among them) has had
    // rustls' alert, if any; a stalled one is dropped. Either way the
    // socket closes here and its places are given back.
    if let Ok(Ok(stream)) = tokio::time::timeout(deadline, tls.acceptor().accept(stream)).await {
        serve_http(shared, stream).await;
    }
}

/// Serves HTTP/1.1 on `stream`, each request's head bounded by the head
/// deadline.
async fn serve_http<P, S>(shared: Arc<Shared<P>>, stream: S)
where
    P: SandboxProvider + 'static,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let deadline = shared.limits.head_deadline;
    let service = service_fn(move |req| http::handle(Arc::clone(&shared), req));
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(deadline)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}
