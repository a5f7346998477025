//! The `Backend` trait: the SDK specification's provider primitives.

use async_trait::async_trait;

use crate::capabilities::Capabilities;
use crate::error::Result;
use crate::exec::{ExecOutcome, ExecRequest, OutputSink};
use crate::files::{FileOps, OwnedWriteOps};
use crate::key::SandboxKey;
use crate::port::PortConnectOps;
use crate::process::{ProcessOps, TerminalOps};
use crate::reclaim::Reclaim;
use crate::sandbox::{CreateRequest, KeyMode, Labels, PreviewUrl, SandboxInfo, Size};
use crate::snapshot::{PauseOps, SnapshotCloneOps, SnapshotOps, UsageOps};
use crate::tree::{BatchWriteOps, ContainedReadOps, TreeListOps};

/// The primitives a backend implements once to get both the SDK and the
/// contract. Required members are plain methods; each optional member is an
/// accessor returning `Some` exactly when [`Capabilities`] declares it.
///
/// Rules every backend follows (tested for every backend by
/// `corral_backend::rules`):
/// - `create` fails closed with `unsupported` when it cannot enforce a
///   requested size, network, idle timeout or timeout;
/// - `exec` closes stdin unless stdin is given, delivers chunks in arrival
///   order, and on timeout or abort kills the whole process group before it
///   settles;
/// - whole-file and ranged reads return all requested bytes up to EOF;
/// - errors are [`crate::BackendError`] codes, never the platform's own error.
#[async_trait]
pub trait Backend: Send + Sync {
    /// The backend's name, as shown in errors and `corral ls`.
    fn name(&self) -> &str;

    /// Whether the backend itself refuses duplicate keys.
    fn key_mode(&self) -> KeyMode;

    /// The optional members and enforcement this backend declares.
    fn capabilities(&self) -> Capabilities;

    /// Creates a sandbox. Refuses (before allocating) what it cannot enforce.
    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo>;

    /// The sandbox created with `key`, if any.
    async fn find(&self, key: &SandboxKey) -> Result<Option<SandboxInfo>>;

    /// Attaches to sandbox `id`; `not_found` when it is gone.
    async fn connect(&self, id: &str) -> Result<SandboxInfo>;

    /// Sandboxes whose labels hold every pair of `labels`.
    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>>;

    /// Destroys sandbox `id` and everything in it. Idempotent: destroying a
    /// sandbox that is already gone succeeds.
    async fn destroy(&self, id: &str) -> Result<()>;

    /// Runs one command to completion, streaming its output into `sink` in
    /// arrival order. A non-zero exit is an `Ok` outcome; a timeout or an
    /// abort is an error, raised only after the process group is dead.
    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome>;

    /// The file primitives.
    fn files(&self) -> &dyn FileOps;

    /// A URL for `port` of sandbox `id`; `unsupported` without previews.
    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl>;

    /// The platform's own description of sandbox `id`, as JSON (never credentials).
    async fn native(&self, id: &str) -> Result<serde_json::Value>;

    /// The size a sandbox is made with when its create asks for none: per
    /// field, the limit the backend then enforces, `None` where it
    /// enforces none. The default: none.
    fn default_size(&self) -> Size {
        Size::default()
    }

    /// Releases the backend's connections. Optional hook; the default does nothing.
    async fn close(&self) -> Result<()> {
        Ok(())
    }

    /// `pause`/`resume`, when declared.
    fn pause_ops(&self) -> Option<&dyn PauseOps> {
        None
    }

    /// Snapshots, when declared.
    fn snapshot_ops(&self) -> Option<&dyn SnapshotOps> {
        None
    }

    /// Snapshot clone, when declared.
    fn snapshot_clone_ops(&self) -> Option<&dyn SnapshotCloneOps> {
        None
    }

    /// Terminals, when declared.
    fn terminal_ops(&self) -> Option<&dyn TerminalOps> {
        None
    }

    /// Live processes, when declared.
    fn process_ops(&self) -> Option<&dyn ProcessOps> {
        None
    }

    /// Usage, when declared.
    fn usage_ops(&self) -> Option<&dyn UsageOps> {
        None
    }

    /// Physically contained reads, when declared.
    fn contained_read_ops(&self) -> Option<&dyn ContainedReadOps> {
        None
    }

    /// Complete leaf listings, when declared.
    fn tree_list_ops(&self) -> Option<&dyn TreeListOps> {
        None
    }

    /// Atomic batch writes, when declared.
    fn batch_write_ops(&self) -> Option<&dyn BatchWriteOps> {
        None
    }

    /// Reclaiming what crashed processes left, when declared.
    fn reclaim_ops(&self) -> Option<&dyn Reclaim> {
        None
    }

    /// Writes owned by whom a command runs as, where the backend can give
    /// files to the sandbox's user.
    fn owned_write_ops(&self) -> Option<&dyn OwnedWriteOps> {
        None
    }

    /// Connections to the sandbox's own ports, when declared.
    fn port_connect_ops(&self) -> Option<&dyn PortConnectOps> {
        None
    }
}
