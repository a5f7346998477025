//! Request bodies read within bounds, and the responses this service
//! sends: JSON, raw bytes, E2B's error body, and streamed bodies fed from
//! a channel.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use corral_wire::server::{BodyRefusal, FallbackReply, read_bounded};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{CONTENT_TYPE, HeaderValue};
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

/// The request's body, held to `limit` bytes and to [`BODY_DEADLINE`] by
/// the wire's one bounded reader.
pub async fn read_body(req: Request<Incoming>, limit: u64) -> Result<Bytes, E2bError> {
    read_bounded(req, limit, BODY_DEADLINE)
        .await
        .map_err(|refusal| match refusal {
            BodyRefusal::TooLarge { limit } => E2bError::BodyTooLarge { limit },
            BodyRefusal::Unread => E2bError::BodyUnread,
        })
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
