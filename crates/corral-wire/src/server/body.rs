//! Reading a request's body within bounds: the one reader of the wire's
//! routes and of a [`super::Fallback`] served beside them.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::Request;
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyRefusal {
    /// It declares, or turns out to hold, more than the limit.
    #[error("the request body is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// It did not arrive whole by the deadline, or its transfer broke.
    #[error("the request body did not arrive whole")]
    Unread,
}

/// The body of `req`, held to `limit` bytes (by its declared length first,
/// then as it is read, so a lying `Content-Length` does not help) and to
/// `deadline` (a client trickling its body cannot hold the connection).
pub async fn read_bounded(
    req: Request<Incoming>,
    limit: u64,
    deadline: Duration,
) -> Result<Bytes, BodyRefusal> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(BodyRefusal::TooLarge { limit });
    }
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let collecting = Limited::new(req.into_body(), cap).collect();
    match tokio::time::timeout(deadline, collecting).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(BodyRefusal::TooLarge { limit })
        }
        Ok(Err(_)) | Err(_) => Err(BodyRefusal::Unread),
    }
}
