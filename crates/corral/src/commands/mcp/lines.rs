//! The stdio framing in front of the MCP session: every line on stdin is
//! checked before rmcp sees it, so a line no JSON-RPC peer could mean gets
//! the error JSON-RPC 2.0 prescribes instead of silence.
//!
//! - a line that is not JSON: `-32700` (parse error), `id` null;
//! - JSON that is not a request, notification or response object (`[1]`,
//!   `"x"`, `{}`): `-32600` (invalid request), with the object's `id` when
//!   it has a usable one, else null.
//!
//! Blank lines are skipped. Everything else passes to rmcp unchanged, and
//! every line either side writes reaches stdout whole: one task owns
//! stdout.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How many bytes the pipes between the framing and rmcp buffer.
const PIPE_BYTES: usize = 64 * 1024;

/// The JSON-RPC error code for a line that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON-RPC error code for JSON that is not a request object.
pub const INVALID_REQUEST: i64 = -32600;

/// What one stdin line is, as far as the framing cares.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// Nothing but white space: skipped.
    Blank,
    /// A JSON-RPC message object: handed to rmcp.
    Message,
    /// Refused here: the reply to write.
    Refused(Value),
}

/// Classifies one line (without its newline).
pub fn classify(line: &[u8]) -> Line {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Line::Refused(error(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ));
        }
    };
    let Value::Object(map) = &value else {
        return Line::Refused(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a message is a JSON object",
        ));
    };
    let id = match map.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let is_message = map.get("jsonrpc") == Some(&json!("2.0"))
        && (map.get("method").is_some_and(Value::is_string)
            || map.contains_key("result")
            || map.contains_key("error"));
    if is_message {
        Line::Message
    } else {
        Line::Refused(error(
            id,
            INVALID_REQUEST,
            "Invalid Request: a message has \"jsonrpc\": \"2.0\" and a \"method\", \"result\" or \"error\"",
        ))
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The (read, write) pair rmcp is served on.
pub type Framed = (DuplexStream, DuplexStream);

/// The framed stdio: the (read, write) pair to serve rmcp on, and the task
/// that owns stdout (it ends once rmcp's side is closed and every line is
/// written; await it so the last reply is not lost).
pub fn stdio() -> (Framed, JoinHandle<()>) {
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(PIPE_BYTES);
    let (refusals, mut refused) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            match classify(line.strip_suffix(b"\n").unwrap_or(&line)) {
                Line::Blank => {}
                Line::Message => {
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    if !line.ends_with(b"\n") && to_rmcp.write_all(b"\n").await.is_err() {
                        break;
                    }
                }
                Line::Refused(reply) => {
                    if refusals.send(reply).is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping `to_rmcp` is rmcp's end of input.
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut replies = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        let mut refusals_open = true;
        loop {
            let text = tokio::select! {
                read = replies.read_until(b'\n', &mut line) => {
                    if !matches!(read, Ok(n) if n > 0) {
                        // rmcp is done: write the refusals already made, and end.
                        let mut rest = Vec::new();
                        while let Ok(reply) = refused.try_recv() {
                            rest.extend(format!("{reply}\n").into_bytes());
                        }
                        let _ = stdout.write_all(&rest).await;
                        let _ = stdout.flush().await;
                        return;
                    }
                    std::mem::take(&mut line)
                }
                reply = refused.recv(), if refusals_open => match reply {
                    Some(reply) => format!("{reply}\n").into_bytes(),
                    None => {
                        refusals_open = false;
                        continue;
                    }
                },
            };
            if stdout.write_all(&text).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    ((rmcp_in, rmcp_out), writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> Option<i64> {
        match classify(line.as_bytes()) {
            Line::Refused(r) => r["error"]["code"].as_i64(),
            _ => None,
        }
    }

    #[test]
    fn lines_that_are_not_messages_get_the_json_rpc_error() {
        assert_eq!(code("not json"), Some(PARSE_ERROR));
        assert_eq!(code("{\"jsonrpc\":"), Some(PARSE_ERROR));
        for bad in [
            "[1]",
            "\"x\"",
            "3",
            "null",
            "{}",
            "{\"jsonrpc\":\"2.0\",\"id\":1}",
        ] {
            assert_eq!(code(bad), Some(INVALID_REQUEST), "{bad}");
        }
        assert_eq!(classify(b"  "), Line::Blank);
        let ok = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert_eq!(classify(ok.as_bytes()), Line::Message);
        let Line::Refused(r) = classify(br#"{"jsonrpc":"2.0","id":7}"#) else {
            panic!("refused")
        };
        assert_eq!(r["id"], json!(7));
        let Line::Refused(r) = classify(b"nope") else {
            panic!("refused")
        };
        assert_eq!(r["id"], Value::Null);
    }
}
