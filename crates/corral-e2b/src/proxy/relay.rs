//! One request relayed to a sandbox's port over a connection from the
//! backend's `connect_port`: HTTP/1.1 by a hyper client of its own (one
//! connection per request), bodies streamed both ways with hyper's
//! back-pressure, so neither a slow client nor a slow server makes this
//! process hold more than a few buffers. An HTTP Upgrade (a WebSocket)
//! answered with 101 is then relayed byte for byte until either side
//! closes.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use corral_backend::{BackendError, PreviewError};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{CONNECTION, HOST, HeaderMap, HeaderName, UPGRADE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::{SANDBOX_PORT_HEADER, Target};
use crate::Inner;
use crate::body::Reply;
use crate::envd::{ACCESS_TOKEN_HEADER, SANDBOX_ID_HEADER};
use crate::error::{E2bError, E2bResult};

/// Upgraded connections relayed at once by one service, unless configured
/// otherwise (`E2bConfig::max_tunnels`): each outlives its HTTP connection
/// (and the server's bound on those), so it has its own.
pub const MAX_TUNNELS: usize = 256;

/// How long the server on the port may take to send its response head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(300);

/// Headers of one hop, never relayed (RFC 9110 7.6.1), besides those the
/// `Connection` header names. `Connection` and `Upgrade` are set again
/// for an upgrade.
const HOP_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Relays `req` to `target`.
pub async fn relay(inner: &Inner, mut req: Request<Incoming>, target: &Target) -> E2bResult<Reply> {
    if inner.sandboxes.get(&target.id).is_none() {
        return Err(E2bError::NoSandbox {
            id: target.id.clone(),
        });
    }
    let Some(ops) = inner.backend.port_connect_ops() else {
        return Err(E2bError::NotServed {
            what: format!(
                "reaching port {} of a sandbox of the {} backend",
                target.port,
                inner.backend.name()
            ),
        });
    };
    let upgrade = upgrade_of(req.headers());
    let place = match upgrade {
        Some(_) => Some(
            Arc::clone(&inner.tunnels)
                .try_acquire_owned()
                .map_err(|_| E2bError::TooManyTunnels {
                    limit: inner.config.max_tunnels,
                })?,
        ),
        None => None,
    };
    let stream = ops
        .connect_port(&target.id, target.port)
        .await
        .map_err(|e| refused(target, e))?;
    let upstream_error = |detail: String| E2bError::Upstream {
        id: target.id.clone(),
        port: target.port,
        detail,
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| upstream_error(e.to_string()))?;
    tokio::spawn(conn.with_upgrades());

    let client_upgrade = upgrade.is_some().then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let mut outbound = Request::builder()
        .method(parts.method)
        .uri(
            parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_string(),
        )
        .version(hyper::Version::HTTP_11)
        .body(body)
        .map_err(|e| upstream_error(e.to_string()))?;
    *outbound.headers_mut() = relayed_headers(&parts.headers);
    if let Some(protocol) = &upgrade {
        let headers = outbound.headers_mut();
        headers.insert(
            CONNECTION,
            hyper::header::HeaderValue::from_static("upgrade"),
        );
        headers.insert(UPGRADE, protocol.clone());
    }
    if let Some(host) = parts.headers.get(HOST) {
        outbound.headers_mut().insert(HOST, host.clone());
    }
    let answered = tokio::time::timeout(HEAD_DEADLINE, sender.send_request(outbound)).await;
    let mut response = match answered {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return Err(upstream_error(e.to_string())),
        Err(_) => {
            return Err(upstream_error(format!(
                "no response within {} s",
                HEAD_DEADLINE.as_secs()
            )));
        }
    };
    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let server_upgrade = hyper::upgrade::on(&mut response);
        let mut reply = Response::new(empty());
        *reply.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        *reply.headers_mut() = response.headers().clone();
        tokio::spawn(async move {
            let _place = place;
            let (Ok(client), Ok(server)) = (client_upgrade.await, server_upgrade.await) else {
                return;
            };
            let (mut client, mut server) = (TokioIo::new(client), TokioIo::new(server));
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        });
        return Ok(reply);
    }
    let (parts, body) = response.into_parts();
    let mut reply = Response::new(Relayed(body).boxed());
    *reply.status_mut() = parts.status;
    *reply.headers_mut() = relayed_headers(&parts.headers);
    Ok(reply)
}

/// The refusal of a connection the backend could not make.
fn refused(target: &Target, e: BackendError) -> E2bError {
    match e {
        BackendError::Preview(PreviewError::NothingListening { .. }) => E2bError::PortClosed {
            id: target.id.clone(),
            port: target.port,
        },
        other => E2bError::Backend(other),
    }
}

/// The protocol a request asks to upgrade to (`Connection: upgrade` with
/// an `Upgrade` header).
fn upgrade_of(headers: &HeaderMap) -> Option<hyper::header::HeaderValue> {
    let asks = headers.get_all(CONNECTION).iter().any(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
    });
    asks.then(|| headers.get(UPGRADE).cloned()).flatten()
}

/// `headers` less those of one hop, those `Connection` names, and this
/// server's own routing headers.
fn relayed_headers(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let ours = [SANDBOX_ID_HEADER, SANDBOX_PORT_HEADER, ACCESS_TOKEN_HEADER];
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        let dropped = HOP_HEADERS.contains(&n)
            || named.iter().any(|c| c == n)
            || ours.iter().any(|o| o.eq_ignore_ascii_case(n))
            || name == HOST;
        if !dropped {
            out.append(HeaderName::clone(name), value.clone());
        }
    }
    out
}

fn empty() -> http_body_util::combinators::BoxBody<Bytes, Infallible> {
    http_body_util::Empty::new().map_err(|n| match n {}).boxed()
}

/// A relayed response body. An error of the server's side ends it early;
/// with a `Content-Length` the client sees the body cut short.
struct Relayed(Incoming);

impl Body for Relayed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match Pin::new(&mut self.0).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
            Poll::Ready(Some(Err(_)) | None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_and_routing_headers_are_not_relayed() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-secret"),
            ("keep-alive", "5"),
            ("x-secret", "1"),
            ("transfer-encoding", "chunked"),
            ("e2b-sandbox-id", "sb1"),
            ("e2b-sandbox-port", "8080"),
            ("x-access-token", "t"),
            ("host", "8080-sb1.x"),
            ("accept", "text/html"),
            ("cookie", "a=1"),
        ] {
            h.append(HeaderName::from_static(k), v.parse().unwrap());
        }
        let out = relayed_headers(&h);
        let names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, vec!["accept", "cookie"]);
    }

    #[test]
    fn an_upgrade_needs_both_headers() {
        let mut h = HeaderMap::new();
        h.insert(UPGRADE, "websocket".parse().unwrap());
        assert_eq!(upgrade_of(&h), None);
        h.insert(CONNECTION, "keep-alive, Upgrade".parse().unwrap());
        assert_eq!(upgrade_of(&h).unwrap(), "websocket");
        h.remove(UPGRADE);
        assert_eq!(upgrade_of(&h), None);
    }
}
