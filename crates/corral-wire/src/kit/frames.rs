//! Golden vectors of the `openProcess` socket: one valid example of every
//! control frame, invalid control frames, and binary `data` frames, each
//! with the disposition the frame decoder gives it.

use corral_contract::*;
use serde_json::{Value, json};

use super::KitError;
use super::disposition;
use super::examples;
use crate::protocol::{
    DataFrame, Frame, MAX_DATA_FRAME_BYTES, REPLAY_WINDOW_BYTES, STDIN_WINDOW_BYTES, Stream,
};

fn valid_frames() -> Result<Vec<(&'static str, Frame)>, KitError> {
    Ok(vec![
        (
            "open",
            Frame::Open {
                request: OpenProcessRequest {
                    instance_id: examples::instance_id()?,
                    process: examples::process_request()?,
                },
            },
        ),
        (
            "opened",
            Frame::Opened {
                evidence: examples::evidence()?,
                stdin_window: STDIN_WINDOW_BYTES,
                replay_window: REPLAY_WINDOW_BYTES,
            },
        ),
        ("credit", Frame::Credit { offset: 1_048_581 }),
        (
            "ack",
            Frame::Ack {
                stream: Stream::Stdout,
                offset: 5,
            },
        ),
        (
            "half_close",
            Frame::HalfClose {
                stream: Stream::Stdin,
                offset: 5,
            },
        ),
        (
            "replay",
            Frame::Replay {
                process_id: ProcessId::new("p-1")?,
                stdout_offset: 5,
                stderr_offset: 0,
            },
        ),
        (
            "resumed",
            Frame::Resumed {
                stdin_offset: 1_048_576,
            },
        ),
        (
            "signal",
            Frame::Signal {
                id: 0,
                signal: ControlSignal::Sigterm,
            },
        ),
        ("destroy", Frame::Destroy { id: 1 }),
        ("settled", Frame::Settled { id: 0, error: None }),
        (
            "settled_with_error",
            Frame::Settled {
                id: 1,
                error: Some(SandboxError::operation_failed(
                    Operation::OpenProcess,
                    FailureReason::StreamClosed,
                )),
            },
        ),
        (
            "exit_code",
            Frame::Exit {
                exit: ProcessExit::Code(ExitCode::from(3)),
            },
        ),
        (
            "exit_signal",
            Frame::Exit {
                exit: ProcessExit::Signal(SignalName::Sigterm),
            },
        ),
        (
            "error",
            Frame::Error {
                error: SandboxError::lifecycle_conflict(
                    Operation::OpenProcess,
                    &[InstanceState::Active],
                    ConflictState::ProcessAlreadyOpen,
                ),
            },
        ),
    ])
}

fn invalid_frames() -> Vec<(&'static str, Value)> {
    vec![
        ("unknown_frame_type", json!({"frame": "teleport"})),
        ("frame_tag_missing", json!({"offset": 1})),
        ("ack_stream_missing", json!({"frame": "ack", "offset": 1})),
        (
            "ack_stream_unknown",
            json!({"frame": "ack", "stream": "stdlog", "offset": 1}),
        ),
        (
            "credit_unknown_member",
            json!({"frame": "credit", "offset": 1, "surplus": true}),
        ),
        (
            "credit_offset_negative",
            json!({"frame": "credit", "offset": -1}),
        ),
        (
            "signal_unknown",
            json!({"frame": "signal", "id": 0, "signal": "SIGHUP"}),
        ),
        (
            "open_executable_missing",
            json!({"frame": "open", "request": {"instance_id": "inst-1", "process": {}}}),
        ),
    ]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn data_frames() -> Vec<(&'static str, Vec<u8>)> {
    let hello = DataFrame {
        stream: Stream::Stdout,
        offset: 5,
        payload: b"hello".to_vec(),
    }
    .encode();
    let mut bad_tag = hello.clone();
    bad_tag[0] = 9;
    let mut oversized = vec![Stream::Stderr.tag()];
    oversized.extend_from_slice(&0u64.to_be_bytes());
    oversized.resize(9 + MAX_DATA_FRAME_BYTES + 1, b'x');
    vec![
        ("stdout_hello", hello),
        (
            "stdin_empty",
            DataFrame {
                stream: Stream::Stdin,
                offset: 0,
                payload: Vec::new(),
            }
            .encode(),
        ),
        ("shorter_than_header", vec![1, 0, 0]),
        ("unknown_stream_tag", bad_tag),
        ("payload_over_bound", oversized),
    ]
}

/// The `frames.json` vector file.
pub(super) fn vectors() -> Result<Value, KitError> {
    let mut control = Vec::new();
    for (name, frame) in valid_frames()? {
        let value = serde_json::to_value(&frame).map_err(KitError::Json)?;
        control.push(json!({
            "name": name,
            "frame": value,
            "disposition": disposition::of_value::<Frame>(&value),
        }));
    }
    for (name, value) in invalid_frames() {
        control.push(json!({
            "name": name,
            "frame": value,
            "disposition": disposition::of_value::<Frame>(&value),
        }));
    }
    let data: Vec<Value> = data_frames()
        .into_iter()
        .map(|(name, bytes)| {
            // The oversized frame is shown by its length, not its bytes.
            let shown = if bytes.len() > 64 {
                json!({ "header_hex": hex(&bytes[..9]), "length": bytes.len() })
            } else {
                json!({ "hex": hex(&bytes) })
            };
            json!({
                "name": name,
                "message": shown,
                "disposition": disposition::of_data_frame(&bytes),
            })
        })
        .collect();
    Ok(json!({
        "route": crate::protocol::Route::OpenProcess.path(),
        "control_frames": control,
        "data_frames": data,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_frames_are_accepted_and_invalid_ones_refused() {
        for (name, frame) in valid_frames().unwrap() {
            let value = serde_json::to_value(&frame).unwrap();
            let d = disposition::of_value::<Frame>(&value);
            assert_eq!(d["outcome"], "accepted", "{name}: {d}");
        }
        for (name, value) in invalid_frames() {
            let d = disposition::of_value::<Frame>(&value);
            assert_eq!(d["outcome"], "refused", "{name}: {d}");
        }
        let outcomes: Vec<Value> = data_frames()
            .iter()
            .map(|(_, bytes)| disposition::of_data_frame(bytes)["outcome"].clone())
            .collect();
        assert_eq!(
            outcomes,
            ["accepted", "accepted", "refused", "refused", "refused"]
        );
    }
}
