//! The wire server's request decoders (`corral-wire`), on arbitrary bytes
//! for an arbitrary route: the body of every unary route through
//! `corral_wire::kit::decode::decode_body` (the decoder the server runs),
//! the body of every backend route, the `openProcess` socket's control
//! (JSON text) and `data` (binary) frames, the route of a request path,
//! and the bearer token of an `Authorization` header.
//!
//! The first byte chooses the decoder, the rest is what it decodes, held
//! to the route's body bound as the server holds it.
//!
//! Invariants: a decoder answers a value or a typed refusal, never a
//! panic; the server's decoder accepts exactly what `serde_json` accepts;
//! a decoded value encodes to JSON that decodes to the same value (its
//! encoding is a fixed point); a refusal carries a message, and a field
//! it names is empty only when the body has a member named `""`; a decoded `data` frame encodes to exactly the
//! bytes it came from; a route found for a path has that path; a token is
//! admitted only from its own header value. Memory stays bounded: the
//! body is bounded as the server bounds it, and `-rss_limit_mb` holds the
//! rest.

#![no_main]

use std::fmt::Debug;
use std::sync::OnceLock;

use corral_backend::CreateRequest;
use corral_contract::{
    ActiveWriteRequest, CleanupRequest, CloneSnapshotRequest, ExecuteRequest, ListDirRequest,
    ListProjectDirRequest, ReadFileRequest, ReadFilesRequest, ReleaseRequest, ResumeRequest,
    SandboxProvisionRequest, SnapshotRequest, WriteFileRequest,
};
use corral_wire::Token;
use corral_wire::kit::decode::decode_body;
use corral_wire::protocol::backend::{
    BackendRoute, BatchBody, ExecBody, KeyBody, LabelsBody, MkdirBody, PathBody, PortBody,
    RangeBody, RemoveBody, RunRef, SandboxRef, SnapshotOf, SnapshotRef, TreeBody, WriteBody,
};
use corral_wire::protocol::{
    DataFrame, Frame, FrameError, HandoffTicket, InstanceBody, MAX_DATA_FRAME_BYTES, Route,
    SnapshotBody, TransactionTicket,
};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The decoders after the routes: control frame, data frame, request
/// path, `Authorization` header.
const OTHER_DECODERS: usize = 4;

/// `value`'s JSON decodes to a value with the same JSON.
fn assert_fixed_point<T: Serialize + DeserializeOwned>(value: &T) {
    let encoded = serde_json::to_value(value).expect("a decoded value encodes");
    let bytes = serde_json::to_vec(&encoded).expect("JSON encodes");
    let again: T = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{} encodes to JSON it refuses: {e}: {}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&bytes)
        )
    });
    let again = serde_json::to_value(&again).expect("a decoded value encodes");
    assert_eq!(
        encoded,
        again,
        "{} is no fixed point",
        std::any::type_name::<T>()
    );
}

/// A unary route's body through the server's decoder.
fn unary<T: Serialize + DeserializeOwned + Debug>(body: &[u8]) {
    let plain = serde_json::from_slice::<T>(body);
    match decode_body::<T>(body) {
        Ok(value) => {
            assert!(plain.is_ok(), "the server accepts what serde_json refuses");
            assert_fixed_point(&value);
        }
        Err(refusal) => {
            assert!(plain.is_err(), "the server refuses what serde_json accepts");
            assert!(!refusal.message.is_empty(), "{refusal:?}");
            // An empty field is the name of a member the body spelled `""`.
            let empty_member = body.windows(2).any(|w| w == b"\"\"");
            assert!(
                refusal.field.as_deref() != Some("") || empty_member,
                "{refusal:?}"
            );
        }
    }
}

/// A backend route's body, decoded as the server decodes it.
fn backend<T: Serialize + DeserializeOwned>(body: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<T>(body) {
        assert_fixed_point(&value);
    }
}

fn decode_unary(route: Route, body: &[u8]) {
    let body = bounded(body, route.max_body_bytes());
    match route {
        Route::Capabilities => unary::<serde_json::Map<String, serde_json::Value>>(body),
        Route::Provision => unary::<SandboxProvisionRequest>(body),
        Route::WriteFile => unary::<WriteFileRequest>(body),
        Route::BeginActiveWrite => unary::<ActiveWriteRequest>(body),
        Route::Activate | Route::Destroy => unary::<InstanceBody>(body),
        Route::Execute => unary::<ExecuteRequest>(body),
        Route::ReadFile => unary::<ReadFileRequest>(body),
        Route::ReadFiles => unary::<ReadFilesRequest>(body),
        Route::ListDir => unary::<ListDirRequest>(body),
        Route::ListProjectDir => unary::<ListProjectDirRequest>(body),
        Route::Snapshot => unary::<SnapshotRequest>(body),
        Route::CloneSnapshot => unary::<CloneSnapshotRequest>(body),
        Route::Release => unary::<ReleaseRequest>(body),
        Route::Resume => unary::<ResumeRequest>(body),
        Route::DestroySnapshot => unary::<SnapshotBody>(body),
        Route::Cleanup => unary::<CleanupRequest>(body),
        // The WebSocket's frames are decoders of their own, below.
        Route::OpenProcess => {}
        Route::HandoffRollback(_) | Route::HandoffSettle(_) => unary::<HandoffTicket>(body),
        Route::ActiveWriteCommit | Route::ActiveWriteRollback => {
            unary::<TransactionTicket>(body);
        }
    }
}

fn decode_backend(route: BackendRoute, body: &[u8]) {
    let body = bounded(body, route.max_body_bytes());
    match route {
        // `describe` reads no body.
        BackendRoute::Describe => {}
        BackendRoute::Create => backend::<CreateRequest>(body),
        BackendRoute::Find => backend::<KeyBody>(body),
        BackendRoute::Connect
        | BackendRoute::Destroy
        | BackendRoute::Native
        | BackendRoute::Pause
        | BackendRoute::Resume
        | BackendRoute::Usage => backend::<SandboxRef>(body),
        BackendRoute::List | BackendRoute::ListSnapshots => backend::<LabelsBody>(body),
        BackendRoute::Exec => backend::<ExecBody>(body),
        BackendRoute::AbortRun => backend::<RunRef>(body),
        BackendRoute::Read | BackendRoute::ListDir | BackendRoute::Stat => {
            backend::<PathBody>(body);
        }
        BackendRoute::Write => backend::<WriteBody>(body),
        BackendRoute::Remove => backend::<RemoveBody>(body),
        BackendRoute::Mkdir => backend::<MkdirBody>(body),
        BackendRoute::ReadRange => backend::<RangeBody>(body),
        BackendRoute::PreviewUrl => backend::<PortBody>(body),
        BackendRoute::Snapshot => backend::<SnapshotOf>(body),
        BackendRoute::DeleteSnapshot | BackendRoute::CloneSnapshot => {
            backend::<SnapshotRef>(body);
        }
        BackendRoute::ListTree => backend::<TreeBody>(body),
        BackendRoute::WriteBatch => backend::<BatchBody>(body),
    }
}

/// The first `limit` bytes of `body`: the server reads no more.
fn bounded(body: &[u8], limit: u64) -> &[u8] {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    &body[..body.len().min(limit)]
}

fn decode_control_frame(bytes: &[u8]) {
    // The socket carries text messages, which are UTF-8.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(frame) = serde_json::from_str::<Frame>(text) {
        let again = serde_json::to_string(&frame).expect("a frame encodes");
        assert_eq!(serde_json::from_str::<Frame>(&again).ok(), Some(frame));
    }
}

fn decode_data_frame(bytes: &[u8]) {
    match DataFrame::decode(bytes) {
        Ok(frame) => {
            assert!(frame.payload.len() <= MAX_DATA_FRAME_BYTES);
            assert_eq!(frame.encode(), bytes, "a data frame re-encodes otherwise");
        }
        Err(FrameError::Short(n)) => assert!(n < 9 && n == bytes.len()),
        Err(FrameError::Tag(tag)) => assert_eq!(Some(&tag), bytes.first()),
        Err(FrameError::TooLarge(n)) => {
            assert!(n > MAX_DATA_FRAME_BYTES && n == bytes.len() - 9);
        }
    }
}

fn decode_path(bytes: &[u8]) {
    let path = String::from_utf8_lossy(bytes);
    if let Some(route) = Route::from_path(&path) {
        assert_eq!(route.path(), path, "{route:?}");
    }
    if let Some(route) = BackendRoute::from_path(&path) {
        assert_eq!(route.path(), path, "{route:?}");
    }
}

fn decode_authorization(header: &[u8]) {
    static TOKEN: OnceLock<Token> = OnceLock::new();
    let token = TOKEN.get_or_init(|| Token::new("corral-fuzz-token-0123456789").expect("a token"));
    if token.admits(Some(header)) {
        assert_eq!(
            header,
            token.header_value().as_bytes(),
            "another header admitted"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let backend_routes = BackendRoute::ALL.len();
    let decoders = Route::ALL.len() + backend_routes + OTHER_DECODERS;
    let mut choice = usize::from(selector) % decoders;
    if let Some(route) = Route::ALL.get(choice) {
        return decode_unary(*route, rest);
    }
    choice -= Route::ALL.len();
    if let Some(route) = BackendRoute::ALL.get(choice) {
        return decode_backend(*route, rest);
    }
    match choice - backend_routes {
        0 => decode_control_frame(rest),
        1 => decode_data_frame(rest),
        2 => decode_path(rest),
        _ => decode_authorization(rest),
    }
});
