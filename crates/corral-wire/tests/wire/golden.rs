//! The wire form is pinned by golden vectors: the revision literal, every
//! route with its path, operation and body bound, every refusal with its
//! status, and one example of every `openProcess` frame (the binary `data`
//! frame in hex). A change to any of them fails here; it needs a new
//! `CONTRACT_REVISION` and a reviewed update of `vectors/wire.json`
//! (`CORRAL_WIRE_BLESS=1 cargo test -p corral-wire --test golden` rewrites
//! it).

use std::path::Path;

use corral_contract::*;
use corral_wire::protocol::{
    CONTRACT_REVISION, DataFrame, Frame, HANDOFF_WINDOW_SECONDS, MAX_CONTROL_FRAME_BYTES,
    MAX_DATA_FRAME_BYTES, REPLAY_RETENTION_SECONDS, REPLAY_WINDOW_BYTES, Refusal, Route,
    STDIN_WINDOW_BYTES, Stream,
};
use serde_json::{Value, json};

fn frames() -> Vec<Frame> {
    let instance_id = InstanceId::new("ci-0123456789abcdef0123456789abcdef").unwrap();
    let request = SandboxProcessRequest {
        executable: Executable::new("cat").unwrap(),
        arguments: Arguments::new(["-u"]).unwrap(),
        working_directory: Some(SandboxPath::new("/mnt/session/outputs").unwrap()),
        environment: Environment::new().with("LANG", "C.UTF-8").unwrap(),
    };
    let evidence = SandboxProcessEvidence {
        instance_id: instance_id.clone(),
        provider: ProviderId::new("memory").unwrap(),
        placement: Placement::Hosted,
        process_id: ProcessId::new("p-1").unwrap(),
        started_at: Timestamp::parse("2026-11-29T12:00:00.000Z").unwrap(),
        executable: request.executable.clone(),
        arguments: request.arguments.clone(),
        working_directory: request.working_directory.clone(),
    };
    vec![
        Frame::Open {
            request: OpenProcessRequest {
                instance_id,
                process: request,
            },
        },
        Frame::Opened {
            evidence,
            stdin_window: STDIN_WINDOW_BYTES,
            replay_window: REPLAY_WINDOW_BYTES,
        },
        Frame::Credit { offset: 1_048_581 },
        Frame::Ack {
            stream: Stream::Stdout,
            offset: 5,
        },
        Frame::HalfClose {
            stream: Stream::Stdin,
            offset: 5,
        },
        Frame::HalfClose {
            stream: Stream::Stderr,
            offset: 0,
        },
        Frame::Replay {
            process_id: ProcessId::new("p-1").unwrap(),
            stdout_offset: 5,
            stderr_offset: 0,
        },
        Frame::Resumed {
            stdin_offset: 1_048_576,
        },
        Frame::Signal {
            id: 0,
            signal: ControlSignal::Sigterm,
        },
        Frame::Destroy { id: 1 },
        Frame::Settled { id: 0, error: None },
        Frame::Settled {
            id: 1,
            error: Some(SandboxError::operation_failed(
                Operation::OpenProcess,
                FailureReason::StreamClosed,
            )),
        },
        Frame::Exit {
            exit: ProcessExit::Code(ExitCode::from(3)),
        },
        Frame::Exit {
            exit: ProcessExit::Signal(SignalName::Sigterm),
        },
        Frame::Error {
            error: SandboxError::lifecycle_conflict(
                Operation::OpenProcess,
                &[InstanceState::Active],
                ConflictState::ProcessAlreadyOpen,
            ),
        },
    ]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn vectors() -> Value {
    let routes: Vec<Value> = Route::ALL
        .iter()
        .map(|r| {
            json!({
                "path": r.path(),
                "operation": r.operation().to_string(),
                "max_body_bytes": r.max_body_bytes(),
            })
        })
        .collect();
    let refusals: Vec<Value> = Refusal::ALL
        .iter()
        .map(|r| json!({"refusal": r.as_str(), "status": r.status()}))
        .collect();
    let frames: Vec<Value> = frames()
        .iter()
        .map(|f| serde_json::to_value(f).unwrap())
        .collect();
    let data = DataFrame {
        stream: Stream::Stdout,
        offset: 5,
        payload: b"hello".to_vec(),
    };
    json!({
        "contract_revision": CONTRACT_REVISION,
        "windows": {
            "stdin_window_bytes": STDIN_WINDOW_BYTES,
            "replay_window_bytes": REPLAY_WINDOW_BYTES,
            "max_data_frame_bytes": MAX_DATA_FRAME_BYTES,
            "max_control_frame_bytes": MAX_CONTROL_FRAME_BYTES,
            "replay_retention_seconds": REPLAY_RETENTION_SECONDS,
            "handoff_window_seconds": HANDOFF_WINDOW_SECONDS,
        },
        "routes": routes,
        "refusals": refusals,
        "frames": frames,
        "data_frame": {"stream": "stdout", "offset": 5, "payload": "hello", "hex": hex(&data.encode())},
    })
}

#[test]
fn the_wire_form_matches_its_golden_vectors() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/wire.json");
    let now = serde_json::to_string_pretty(&vectors()).unwrap() + "\n";
    if std::env::var_os("CORRAL_WIRE_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        eprintln!("skip: wrote {} (bless mode)", path.display());
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap();
    assert!(
        pinned == now,
        "the wire form drifted from tests/vectors/wire.json: change CONTRACT_REVISION, review, \
         and re-bless with CORRAL_WIRE_BLESS=1\n--- pinned\n{pinned}\n--- now\n{now}"
    );
}

#[test]
fn every_golden_frame_decodes_to_itself() {
    for frame in frames() {
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(
            serde_json::from_str::<Frame>(&text).unwrap(),
            frame,
            "{text}"
        );
    }
    let data = DataFrame {
        stream: Stream::Stdout,
        offset: 5,
        payload: b"hello".to_vec(),
    };
    assert_eq!(hex(&data.encode()), "01000000000000000568656c6c6f");
}
