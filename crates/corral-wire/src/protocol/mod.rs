//! The wire protocol: revision, routes, headers, size bounds, reply bodies
//! and the `openProcess` frames. Pure data; the server and the client both
//! speak it. `docs/wire.md` is its prose.

pub mod backend;
mod error_body;
mod frames;
mod refusal;
mod replies;
mod route;

pub use error_body::ErrorBody;
pub(crate) use error_body::as_body;
pub use frames::{DataFrame, Frame, FrameError, Stream};
pub use refusal::Refusal;
pub use replies::{HandoffId, HandoffReply, HandoffTicket, TransactionReply, TransactionTicket};
pub use route::Route;

use corral_contract::bounds::MIB;

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
