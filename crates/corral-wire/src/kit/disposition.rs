//! The disposition of one example: what the decoder the server runs on the
//! route's body (or the client on a frame) answers, computed by running it
//! ([`decode_body`], the server's own decoder).

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::decode::{BodyRefusal, decode_body};
use crate::protocol::{DataFrame, Refusal};

/// Decodes `body` exactly as the server decodes a request body (its
/// compact bytes through [`decode_body`]) and reports the outcome:
/// `accepted`, or `refused` with the HTTP status, the refusal header, the
/// request field the refusal names and the decoder's message.
pub(super) fn of_body<T: DeserializeOwned>(body: &Value) -> Value {
    match decode::<T>(body) {
        Ok(()) => json!({ "outcome": "accepted" }),
        Err(refused) => {
            let refusal = Refusal::MalformedBody;
            json!({
                "outcome": "refused",
                "status": refusal.status(),
                "refusal": refusal.as_str(),
                "field": refused.field,
                "message": refused.message,
            })
        }
    }
}

/// Decodes `value` as `T` (a control frame, a capabilities envelope) and
/// reports `accepted`, or `refused` with the field named and the message.
pub(super) fn of_value<T: DeserializeOwned>(value: &Value) -> Value {
    match decode::<T>(value) {
        Ok(()) => json!({ "outcome": "accepted" }),
        Err(refused) => json!({
            "outcome": "refused",
            "field": refused.field,
            "message": refused.message,
        }),
    }
}

/// Decodes a binary `data` frame.
pub(super) fn of_data_frame(bytes: &[u8]) -> Value {
    match DataFrame::decode(bytes) {
        Ok(frame) => json!({
            "outcome": "accepted",
            "stream": frame.stream,
            "offset": frame.offset,
            "payload_bytes": frame.payload.len(),
        }),
        Err(e) => json!({ "outcome": "refused", "message": e.to_string() }),
    }
}

/// The refusal of `value` by [`decode_body`], if any (the value sent as
/// compact bytes, as a client sends it).
fn decode<T: DeserializeOwned>(value: &Value) -> Result<(), BodyRefusal> {
    let bytes = serde_json::to_vec(value).map_err(|e| BodyRefusal {
        field: None,
        message: e.to_string(),
    })?;
    decode_body::<T>(&bytes).map(drop)
}
