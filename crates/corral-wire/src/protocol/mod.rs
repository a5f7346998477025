//! The wire protocol: revision, routes, headers, size bounds, reply bodies
//! and the `openProcess` frames. Pure data; the server and the client both
//! speak it. `docs/wire.md` is its prose.

pub mod backend;
mod frames;
mod replies;

pub use frames::{DataFrame, Frame, FrameError, Stream};
pub use replies::{HandoffId, HandoffReply, HandoffTicket, TransactionReply, TransactionTicket};

use std::collections::HashMap;
use std::sync::LazyLock;

use corral_contract::bounds::{MAX_ACTIVE_WRITE_AGGREGATE_BYTES, MAX_FILE_CONTENT_BYTES, MIB};
use corral_contract::{Compensated, Operation};

/// The revision of the wire form, a compatibility identity: a change to any
/// route, body or frame requires a new literal, never an in-place
/// reinterpretation. Sent on every request and every response in
/// [`REVISION_HEADER`]; a peer speaking another revision is refused.
pub const CONTRACT_REVISION: &str = "corral-wire/2026-11-29";

/// The header that carries [`CONTRACT_REVISION`].
pub const REVISION_HEADER: &str = "corral-contract-revision";

/// The header naming why the server refused a request before calling the
/// provider (a [`Refusal`]); absent on the provider's own errors.
pub const REFUSAL_HEADER: &str = "corral-wire-refusal";

/// Bytes of stdin the client may send beyond what the provider consumed
/// (the `credit` window).
pub const STDIN_WINDOW_BYTES: u64 = MIB;

/// Bytes of stdout (and, separately, stderr) the server sends beyond what
/// the client acknowledged (the `ack` window). The server stops reading the
/// process's stream while the window is full: real backpressure, never
/// loss.
pub const REPLAY_WINDOW_BYTES: u64 = 4 * MIB;

/// Seconds the server keeps a process whose socket was lost (not closed)
/// for a `replay`; after that it destroys the process.
pub const REPLAY_RETENTION_SECONDS: u64 = 30;

/// The largest payload of one `data` frame.
pub const MAX_DATA_FRAME_BYTES: usize = 64 * 1024;

/// The largest control (JSON) frame on the `openProcess` socket: the `open`
/// frame carries a process request of at most 256 arguments of 64 KiB each.
pub const MAX_CONTROL_FRAME_BYTES: usize = 20 * MIB as usize;

/// Seconds the server keeps an unsettled handoff's rollback after replying:
/// the client settles (or rolls back) well inside it; an unsettled handoff
/// older than this is settled by the server (ownership stays with the
/// client, whose runtime took the value).
pub const HANDOFF_WINDOW_SECONDS: u64 = 600;

/// Why the server refused a request before the provider saw it (the value
/// of [`REFUSAL_HEADER`]). The body is still a contract error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// No `Authorization: Bearer` header, or the wrong token (401).
    Unauthenticated,
    /// The body exceeds the route's bound (413).
    BodyTooLarge,
    /// The body is not the route's request type (400).
    MalformedBody,
    /// The request names another [`CONTRACT_REVISION`] (400).
    RevisionMismatch,
    /// No such route, or not `POST` (404).
    UnknownRoute,
    /// The handoff or transaction id is unknown (404).
    UnknownTicket,
}

impl Refusal {
    /// The header value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::BodyTooLarge => "body_too_large",
            Self::MalformedBody => "malformed_body",
            Self::RevisionMismatch => "revision_mismatch",
            Self::UnknownRoute => "unknown_route",
            Self::UnknownTicket => "unknown_ticket",
        }
    }

    /// The HTTP status.
    pub const fn status(self) -> u16 {
        match self {
            Self::Unauthenticated => 401,
            Self::BodyTooLarge => 413,
            Self::MalformedBody | Self::RevisionMismatch => 400,
            Self::UnknownRoute | Self::UnknownTicket => 404,
        }
    }

    /// Parses a header value.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Unauthenticated,
            Self::BodyTooLarge,
            Self::MalformedBody,
            Self::RevisionMismatch,
            Self::UnknownRoute,
            Self::UnknownTicket,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }
}

/// One route: `POST /v1/<name>` (and `GET /v1/open_process`, the
/// WebSocket): the eighteen contract members, then the settlement routes
/// of the live objects (twelve for the six handoffs, two for active-write
/// transactions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `capabilities`: `{}` → the envelope.
    Capabilities,
    /// `provision`: `SandboxProvisionRequest` → `HandoffReply<SandboxInstance>`.
    Provision,
    /// `write_file`: `WriteFileRequest` → `null`.
    WriteFile,
    /// `begin_active_write`: `ActiveWriteRequest` → `TransactionReply`.
    BeginActiveWrite,
    /// `activate`: `{"instance_id"}` → `HandoffReply<SandboxInstance>`.
    Activate,
    /// `execute`: `ExecuteRequest` → `SandboxExecutionResult`.
    Execute,
    /// `read_file`: `ReadFileRequest` → `ReadFileResult`.
    ReadFile,
    /// `read_files`: `ReadFilesRequest` → `ReadFilesResult`.
    ReadFiles,
    /// `list_dir`: `ListDirRequest` → `ListDirResult`.
    ListDir,
    /// `list_project_dir`: `ListProjectDirRequest` → `ListProjectDirResult`.
    ListProjectDir,
    /// `snapshot`: `SnapshotRequest` → `HandoffReply<SnapshotRef>`.
    Snapshot,
    /// `clone_snapshot`: `CloneSnapshotRequest` → `HandoffReply<SnapshotRef>`.
    CloneSnapshot,
    /// `release`: `ReleaseRequest` → `HandoffReply<ReleaseDisposition>`.
    Release,
    /// `resume`: `ResumeRequest` → `HandoffReply<SandboxInstance>`.
    Resume,
    /// `destroy`: `{"instance_id"}` → `null`.
    Destroy,
    /// `destroy_snapshot`: `{"snapshot_id"}` → `null`.
    DestroySnapshot,
    /// `cleanup`: `CleanupRequest` → `CleanupResult`.
    Cleanup,
    /// `open_process`: the WebSocket (`GET`, upgraded).
    OpenProcess,
    /// `<member>/rollback`: `HandoffTicket` → `null` (runs the compensation
    /// at most once; asked again, `null`).
    HandoffRollback(Compensated),
    /// `<member>/settle`: `HandoffTicket` → `null` (the caller took the
    /// value; the compensation is dropped).
    HandoffSettle(Compensated),
    /// `active_write/commit`: `TransactionTicket` → `TransactionReply`.
    ActiveWriteCommit,
    /// `active_write/rollback`: `TransactionTicket` → `TransactionReply`.
    ActiveWriteRollback,
}

impl Route {
    /// Every route.
    pub const ALL: [Route; 32] = [
        Self::Capabilities,
        Self::Provision,
        Self::WriteFile,
        Self::BeginActiveWrite,
        Self::Activate,
        Self::Execute,
        Self::ReadFile,
        Self::ReadFiles,
        Self::ListDir,
        Self::ListProjectDir,
        Self::Snapshot,
        Self::CloneSnapshot,
        Self::Release,
        Self::Resume,
        Self::Destroy,
        Self::DestroySnapshot,
        Self::Cleanup,
        Self::OpenProcess,
        Self::HandoffRollback(Compensated::Provision),
        Self::HandoffRollback(Compensated::Activate),
        Self::HandoffRollback(Compensated::Snapshot),
        Self::HandoffRollback(Compensated::CloneSnapshot),
        Self::HandoffRollback(Compensated::Release),
        Self::HandoffRollback(Compensated::Resume),
        Self::HandoffSettle(Compensated::Provision),
        Self::HandoffSettle(Compensated::Activate),
        Self::HandoffSettle(Compensated::Snapshot),
        Self::HandoffSettle(Compensated::CloneSnapshot),
        Self::HandoffSettle(Compensated::Release),
        Self::HandoffSettle(Compensated::Resume),
        Self::ActiveWriteCommit,
        Self::ActiveWriteRollback,
    ];

    /// The path, `/v1/<name>`: a member's name is the contract's wire
    /// spelling of its operation, a handoff's settlement routes hang off
    /// the compensated member's name.
    pub fn path(self) -> &'static str {
        static PATHS: LazyLock<HashMap<Route, String>> = LazyLock::new(|| {
            Route::ALL
                .into_iter()
                .map(|route| (route, route.derive_path()))
                .collect()
        });
        PATHS.get(&self).map_or("", String::as_str)
    }

    fn derive_path(self) -> String {
        match self {
            Self::HandoffRollback(member) => format!("/v1/{member}/rollback"),
            Self::HandoffSettle(member) => format!("/v1/{member}/settle"),
            Self::ActiveWriteCommit => "/v1/active_write/commit".into(),
            Self::ActiveWriteRollback => "/v1/active_write/rollback".into(),
            member => format!("/v1/{}", member.operation()),
        }
    }

    /// The route at `path`.
    pub fn from_path(path: &str) -> Option<Self> {
        static ROUTES: LazyLock<HashMap<&'static str, Route>> = LazyLock::new(|| {
            Route::ALL
                .into_iter()
                .map(|route| (route.path(), route))
                .collect()
        });
        ROUTES.get(path).copied()
    }

    /// The contract operation errors on this route name.
    pub const fn operation(self) -> Operation {
        match self {
            Self::Capabilities => Operation::Capabilities,
            Self::Provision => Operation::Provision,
            Self::WriteFile => Operation::WriteFile,
            Self::BeginActiveWrite | Self::ActiveWriteCommit | Self::ActiveWriteRollback => {
                Operation::BeginActiveWrite
            }
            Self::Activate => Operation::Activate,
            Self::Execute => Operation::Execute,
            Self::ReadFile => Operation::ReadFile,
            Self::ReadFiles => Operation::ReadFiles,
            Self::ListDir => Operation::ListDir,
            Self::ListProjectDir => Operation::ListProjectDir,
            Self::Snapshot => Operation::Snapshot,
            Self::CloneSnapshot => Operation::CloneSnapshot,
            Self::Release => Operation::Release,
            Self::Resume => Operation::Resume,
            Self::Destroy => Operation::Destroy,
            Self::DestroySnapshot => Operation::DestroySnapshot,
            Self::Cleanup => Operation::Cleanup,
            Self::OpenProcess => Operation::OpenProcess,
            Self::HandoffRollback(member) => Operation::Rollback(member),
            Self::HandoffSettle(member) => member.member(),
        }
    }

    /// The largest request body the route accepts, in bytes: the
    /// contract's bounds in base64 JSON, plus room for the envelope.
    /// `write_file` carries one file (16 MiB), `execute` its stdin (16 MiB),
    /// `begin_active_write` a batch (128 MiB); every other request is small.
    pub const fn max_body_bytes(self) -> u64 {
        const ENVELOPE: u64 = 4 * MIB;
        const fn base64(bytes: u64) -> u64 {
            bytes.div_ceil(3) * 4
        }
        match self {
            Self::WriteFile | Self::Execute => base64(MAX_FILE_CONTENT_BYTES) + ENVELOPE,
            Self::BeginActiveWrite => base64(MAX_ACTIVE_WRITE_AGGREGATE_BYTES) + 2 * ENVELOPE,
            _ => ENVELOPE,
        }
    }
}

/// `{"instance_id": …}`: the body of `activate` and `destroy`.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct InstanceBody {
    /// The instance.
    pub instance_id: corral_contract::InstanceId,
}

/// `{"snapshot_id": …}`: the body of `destroy_snapshot`.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct SnapshotBody {
    /// The snapshot.
    pub snapshot_id: corral_contract::SnapshotId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_one_path_and_back() {
        for route in Route::ALL {
            assert_eq!(Route::from_path(route.path()), Some(route));
        }
        assert_eq!(Route::from_path("/v1/nope"), None);
        let mut paths: Vec<_> = Route::ALL.iter().map(|r| r.path()).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), Route::ALL.len());
        assert_eq!(Route::ListProjectDir.path(), "/v1/list_project_dir");
        assert_eq!(
            Route::HandoffSettle(Compensated::CloneSnapshot).path(),
            "/v1/clone_snapshot/settle"
        );
        assert_eq!(Route::ActiveWriteCommit.path(), "/v1/active_write/commit");
    }

    // Contract spec, "Bounds": any file content is up to 16 MiB (and corral
    // mirrors the 128 MiB readFiles aggregate for an active-write batch);
    // the wire's body bounds admit the largest legal request in base64.
    #[test]
    fn bulk_routes_admit_their_largest_legal_body() {
        assert!(Route::WriteFile.max_body_bytes() > MAX_FILE_CONTENT_BYTES / 3 * 4);
        assert!(
            Route::BeginActiveWrite.max_body_bytes() > MAX_ACTIVE_WRITE_AGGREGATE_BYTES / 3 * 4
        );
        assert_eq!(Route::Destroy.max_body_bytes(), 4 * MIB);
    }

    #[test]
    fn refusals_round_trip_their_header() {
        for r in [
            Refusal::Unauthenticated,
            Refusal::BodyTooLarge,
            Refusal::MalformedBody,
            Refusal::RevisionMismatch,
            Refusal::UnknownRoute,
            Refusal::UnknownTicket,
        ] {
            assert_eq!(Refusal::parse(r.as_str()), Some(r));
        }
        assert_eq!(Refusal::Unauthenticated.status(), 401);
        assert_eq!(Refusal::parse("nope"), None);
    }
}
