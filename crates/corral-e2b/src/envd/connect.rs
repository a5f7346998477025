//! The Connect protocol's framing for streams: the 5-byte envelope (a
//! flags byte, a big-endian length), the end-of-stream message, and the
//! headers a call's deadline and keepalives come in.

use std::time::Duration;

use bytes::Bytes;
use hyper::Request;
use serde_json::{Value, json};

use crate::error::{E2bError, E2bResult};

/// The content type of a streaming call with the JSON codec.
pub const STREAM_CONTENT_TYPE: &str = "application/connect+json";

/// The flag of a compressed message.
pub const FLAG_COMPRESSED: u8 = 0x01;

/// The flag of the end-of-stream message.
pub const FLAG_END_STREAM: u8 = 0x02;

/// The header carrying a call's deadline.
pub const TIMEOUT_HEADER: &str = "Connect-Timeout-Ms";

/// The header asking for keepalive events every so many seconds.
pub const KEEPALIVE_HEADER: &str = "Keepalive-Ping-Interval";

/// One enveloped message.
pub fn envelope(flags: u8, payload: &[u8]) -> Bytes {
    let mut frame = Vec::with_capacity(payload.len() + 5);
    frame.push(flags);
    frame.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    frame.extend_from_slice(payload);
    Bytes::from(frame)
}

/// A message frame holding `value`.
pub fn message(value: &Value) -> Bytes {
    envelope(0, &serde_json::to_vec(value).unwrap_or_default())
}

/// The end-of-stream frame: `{}`, or `{"error": {code, message}}`.
pub fn end_of_stream(error: Option<&E2bError>) -> Bytes {
    let body = match error {
        None => json!({}),
        Some(e) => json!({
            "error": { "code": e.connect_code().as_str(), "message": e.to_string() }
        }),
    };
    envelope(
        FLAG_END_STREAM,
        &serde_json::to_vec(&body).unwrap_or_default(),
    )
}

/// The one message of a server-streaming request's body.
pub fn single_message(body: &[u8]) -> E2bResult<&[u8]> {
    let malformed = |reason: &str| E2bError::invalid("envelope", reason.to_string());
    let [flags, a, b, c, d, rest @ ..] = body else {
        return Err(malformed("the body is shorter than one 5-byte envelope"));
    };
    if flags & FLAG_COMPRESSED != 0 {
        return Err(malformed("compressed messages are not accepted"));
    }
    let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
    if rest.len() != len {
        return Err(malformed(&format!(
            "the envelope says {len} bytes and {} follow",
            rest.len()
        )));
    }
    Ok(rest)
}

/// A header holding a whole number, if present.
fn number_header<B>(req: &Request<B>, name: &str) -> E2bResult<Option<u64>> {
    match req.headers().get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| E2bError::invalid(name, "is not a whole number")),
    }
}

/// The call's deadline, from `Connect-Timeout-Ms`.
pub fn deadline<B>(req: &Request<B>) -> E2bResult<Option<Duration>> {
    Ok(number_header(req, TIMEOUT_HEADER)?.map(Duration::from_millis))
}

/// How often to send keepalives, from `Keepalive-Ping-Interval` (seconds,
/// at least one).
pub fn keepalive<B>(req: &Request<B>) -> E2bResult<Option<Duration>> {
    Ok(number_header(req, KEEPALIVE_HEADER)?.map(|s| Duration::from_secs(s.max(1))))
}
