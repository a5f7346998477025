//! # corral-backend
//!
//! The `Backend` trait — the SDK specification's provider primitives plus the
//! optional primitives the contract needs — its [`Capabilities`], the closed
//! [`ErrorCode`]s, and helpers every backend shares: physically contained
//! reads ([`contained`]) and the file system over a host directory built on
//! them ([`contained_fs`]), host process groups ([`host_exec`]), records in a
//! host state directory ([`statefile`]) and snapshots stored there
//! ([`snapshot_store`]) as archives of one format ([`snapshot_archive`]), and
//! the backend-rule suite every backend must pass
//! (`rules`, behind the `rules` feature).

mod backend;
mod bind;
mod capabilities;
mod command;
pub mod contained;
pub mod contained_fs;
mod destination;
pub mod error;
mod exec;
mod files;
pub mod host_exec;
pub mod host_process;
mod key;
mod labels;
pub mod leaves;
pub mod path;
mod port;
mod process;
mod reclaim;
mod sandbox;
pub mod settle;
pub mod signal;
mod snapshot;
pub mod snapshot_archive;
pub mod snapshot_store;
pub mod statefile;
mod sys;
pub mod task;
mod tree;
mod verify;
pub mod walk;

#[cfg(feature = "rules")]
pub mod rules;

pub use backend::Backend;
pub use bind::{BindError, HostBind, HostBinds, MAX_BINDS, SYSTEM_SOURCES, SYSTEM_TARGETS};
pub use capabilities::{Capabilities, Enforceable, check_enforceable, check_run_as};
pub use command::{Command, CommandArgv, CommandScript, MAX_ARG_BYTES, MAX_ARGS};
/// Re-exported: the environment every request carries is the contract's
/// validated one.
pub use corral_contract::{EnvKey, Environment};
pub use error::{
    BackendError, CreateError, ErrorCode, ExecError, PlatformError, PreviewError, RelayedError,
    RequestError, Result, SandboxError, SetupStep, SnapshotError, TimeoutLimit,
};
pub use exec::{
    CollectedOutput, ExecOutcome, ExecRequest, ExitStatus, OutputSink, RunAs, StreamKind,
};
pub use files::{DirEntry, FileOps, FileStat, FileType, OwnedWriteOps, RangedRead};
pub use key::{MAX_SANDBOX_KEY_BYTES, SandboxKey};
pub use labels::{Labels, MAX_LABEL_KEY_BYTES, MAX_LABEL_VALUE_BYTES};
pub use path::{SandboxPath, sandbox_path};
pub use port::{BoxedPortStream, PortConnectOps, PortStream, check_port, connect_failed};
pub use process::{
    ClosingStdin, ProcessControl, ProcessOps, ProcessSpec, StartedProcess, Terminal,
    TerminalControl, TerminalOps, TerminalSpec,
};
pub use reclaim::{HostStateReclaim, Reclaim, ReclaimDetail, ReclaimReport};
pub use sandbox::{
    CORRAL_LABEL, CreateRequest, DEFAULT_PATH, Destination, KeyMode, Limits, Network, PreviewUrl,
    SandboxId, SandboxInfo, SandboxStatus, Size, WORKSPACE_DIR, labels_match, now_ms,
};
pub use signal::{ControlSignal, SignalName};
pub use snapshot::{PauseOps, SnapshotCloneOps, SnapshotInfo, SnapshotOps, Usage, UsageOps};
pub use tree::{
    BatchFile, BatchWriteOps, ContainedReadFailure, ContainedReadOps, TreeEntry, TreeEntryKind,
    TreeListOps, TreeListing,
};
pub use verify::{Verified, verify};

/// Re-exported so backends and callers share one cancellation type.
pub use tokio_util::sync::CancellationToken;
