//! Request bodies read within bounds, and the responses this service
//! sends: JSON, raw bytes, E2B's error body, and streamed bodies fed from
//! a channel.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use corral_wire::server::{BodyRefusal, FallbackReply, read_bounded};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tokio::sync::mpsc;

use crate::error::E2bError;

/// A response as this service sends it.
pub type Reply = FallbackReply;

/// How long a client may take to send a body.
pub const BODY_DEADLINE: Duration = Duration::from_secs(120);

/// A whole response with `content_type`.
pub fn bytes_reply(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Reply {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A JSON response.
pub fn json_reply(status: StatusCode, value: &serde_json::Value) -> Reply {
    bytes_reply(
        status,
        "application/json",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// A response with no body.
pub fn empty_reply(status: StatusCode) -> Reply {
    let mut response = Response::new(Full::new(Bytes::new()).map_err(|n| match n {}).boxed());
    *response.status_mut() = status;
    response
}

/// E2B's error body `{code, message}`, with the error's HTTP status.
pub fn api_error(error: &E2bError) -> Reply {
    let status = error.status();
    json_reply(
        status,
        &serde_json::json!({ "code": status.as_u16(), "message": error.to_string() }),
    )
}

/// A unary Connect error: the code's HTTP status and `{code, message}`.
pub fn connect_error(error: &E2bError) -> Reply {
    let code = error.connect_code();
    json_reply(
        code.http_status(),
        &serde_json::json!({ "code": code.as_str(), "message": error.to_string() }),
    )
}

/// The largest body an early refusal reads to its end before answering,
/// so that the connection stays fit for the client's next request.
pub const DRAIN_BYTES: u64 = 64 * 1024;

/// How long an early refusal waits for the rest of a small body.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(5);

/// Whether a request's body was read to its end, shared between the
/// request (as an extension) and [`BodyWatch`].
#[derive(Debug, Clone, Default)]
struct BodyDone(Arc<AtomicBool>);

/// Watches one request whose body may go unread: a response sent before
/// its body is read to the end is marked `Connection: close`, since hyper
/// then closes the connection and a client reusing it would fail.
#[derive(Debug)]
pub struct BodyWatch {
    done: Option<BodyDone>,
}

impl BodyWatch {
    /// Starts watching `req` (nothing to watch when its body is empty).
    pub fn of(req: &mut Request<Incoming>) -> Self {
        if req.body().is_end_stream() {
            return BodyWatch { done: None };
        }
        let done = BodyDone::default();
        req.extensions_mut().insert(done.clone());
        BodyWatch { done: Some(done) }
    }

    /// `reply`, marked `Connection: close` if the body was not read.
    pub fn settle(self, mut reply: Reply) -> Reply {
        let unread = self
            .done
            .is_some_and(|done| !done.0.load(Ordering::Acquire));
        if unread {
            reply
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        reply
    }
}

/// The request's body, held to `limit` bytes and to [`BODY_DEADLINE`] by
/// the wire's one bounded reader.
pub async fn read_body(req: Request<Incoming>, limit: u64) -> Result<Bytes, E2bError> {
    read_within(req, limit, BODY_DEADLINE).await
}

async fn read_within(
    req: Request<Incoming>,
    limit: u64,
    deadline: Duration,
) -> Result<Bytes, E2bError> {
    let done = req.extensions().get::<BodyDone>().cloned();
    let bytes = read_bounded(req, limit, deadline)
        .await
        .map_err(|refusal| match refusal {
            BodyRefusal::TooLarge { limit } => E2bError::BodyTooLarge { limit },
            BodyRefusal::Unread => E2bError::BodyUnread,
        })?;
    if let Some(done) = done {
        done.0.store(true, Ordering::Release);
    }
    Ok(bytes)
}

/// `reply` to a request refused before its body was read: a small body
/// ([`DRAIN_BYTES`]) is read to its end and dropped first, so the
/// connection stays usable; a larger one is left, and [`BodyWatch`] marks
/// the reply `Connection: close`.
pub async fn refuse(req: Request<Incoming>, reply: Reply) -> Reply {
    if !req.body().is_end_stream() {
        let _ = read_within(req, DRAIN_BYTES, DRAIN_DEADLINE).await;
    }
    reply
}

/// A streamed body: every chunk sent on the channel, ending when every
/// sender is gone. Dropping it (the client went away) makes sends fail.
#[derive(Debug)]
pub struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    /// A body and the sender that feeds it, holding at most `depth` chunks.
    pub fn new(depth: usize) -> (mpsc::Sender<Bytes>, Self) {
        let (tx, rx) = mpsc::channel(depth);
        (tx, ChannelBody { rx })
    }

    /// A streamed response with `content_type`.
    pub fn reply(self, content_type: &'static str) -> Reply {
        let mut response = Response::new(self.boxed());
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        response
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
