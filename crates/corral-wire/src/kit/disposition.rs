//! The disposition of one example: what the decoder the server runs on the
//! route's body (or the client on a frame) answers, computed by running it.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::protocol::{DataFrame, Refusal};

/// Decodes `body` exactly as the server decodes a request body (compact
/// JSON bytes through `serde_json::from_slice`) and reports the outcome:
/// `accepted`, or `refused` with the HTTP status, the refusal header, the
/// field the decoder's message names and the message itself.
pub(super) fn of_body<T: DeserializeOwned>(body: &Value) -> Value {
    match decode::<T>(body) {
        Ok(()) => json!({ "outcome": "accepted" }),
        Err(message) => {
            let refusal = Refusal::MalformedBody;
            json!({
                "outcome": "refused",
                "status": refusal.status(),
                "refusal": refusal.as_str(),
                "field": named_field(&message),
                "message": message,
            })
        }
    }
}

/// Decodes `value` as `T` (a control frame, a capabilities envelope) and
/// reports `accepted`, or `refused` with the field named and the message.
pub(super) fn of_value<T: DeserializeOwned>(value: &Value) -> Value {
    match decode::<T>(value) {
        Ok(()) => json!({ "outcome": "accepted" }),
        Err(message) => json!({
            "outcome": "refused",
            "field": named_field(&message),
            "message": message,
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

fn decode<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    let bytes = serde_json::to_vec(value).map_err(|e| e.to_string())?;
    serde_json::from_slice::<T>(&bytes)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The field a decoder message names: serde's own messages quote it in
/// backticks (`missing field `x``, `unknown field `x``); the contract's
/// refusals (`InvalidValue`) start with it (`path: "a" is not absolute`).
/// `null` when the message names none (a wrong JSON type, an unknown tag).
fn named_field(message: &str) -> Value {
    for lead in ["missing field `", "unknown field `", "duplicate field `"] {
        if let Some(rest) = message.strip_prefix(lead)
            && let Some((field, _)) = rest.split_once('`')
        {
            return Value::String(field.to_owned());
        }
    }
    match message.split_once(": ") {
        Some((field, _))
            if !field.is_empty()
                && field.chars().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | ' ')
                })
                && !field.starts_with("invalid")
                && !field.starts_with("unknown") =>
        {
            Value::String(field.to_owned())
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_from_serde_and_contract_messages() {
        assert_eq!(
            named_field("missing field `instance_id` at line 1 column 2"),
            json!("instance_id")
        );
        assert_eq!(
            named_field("unknown field `x`, expected one of `a`, `b`"),
            json!("x")
        );
        assert_eq!(
            named_field(r#"path: "a" is not an absolute path at line 1 column 9"#),
            json!("path")
        );
        assert_eq!(
            named_field("invalid type: string \"a\", expected u64"),
            Value::Null
        );
    }
}
