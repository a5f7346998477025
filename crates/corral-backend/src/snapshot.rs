//! The optional snapshot primitives: capture, restore (through
//! `create` with `snapshot`), delete, list, and physical clone.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::sandbox::Labels;

/// A captured sandbox state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// The snapshot's id.
    pub id: String,
    /// The sandbox it was captured from.
    pub source_sandbox_id: String,
    /// `sha256:<hex>` of the captured bytes as stored.
    pub digest: String,
    /// Stored size in bytes.
    pub size_bytes: u64,
    /// Capture time, epoch milliseconds.
    pub created_at_ms: u64,
    /// Labels (the source's, plus those given to `snapshot`).
    pub labels: Labels,
}

/// Capture, delete and list snapshots. Restoring is `create` with
/// [`crate::CreateRequest::snapshot`].
#[async_trait]
pub trait SnapshotOps: Send + Sync {
    /// Captures sandbox `id`'s files.
    async fn snapshot(&self, id: &str, labels: &Labels) -> Result<SnapshotInfo>;
    /// Deletes a snapshot; idempotent (a missing one is not an error).
    async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()>;
    /// Snapshots whose labels hold every pair of `labels`.
    async fn list_snapshots(&self, labels: &Labels) -> Result<Vec<SnapshotInfo>>;
}

/// The optional physical clone of a snapshot.
#[async_trait]
pub trait SnapshotCloneOps: Send + Sync {
    /// A new, independent snapshot with the same content and a new id.
    async fn clone_snapshot(&self, snapshot_id: &str, labels: &Labels) -> Result<SnapshotInfo>;
}

/// The optional pause and resume primitives.
#[async_trait]
pub trait PauseOps: Send + Sync {
    /// Freezes every process of the sandbox.
    async fn pause(&self, id: &str) -> Result<()>;
    /// Thaws it.
    async fn resume(&self, id: &str) -> Result<()>;
}

/// Resource usage of one sandbox; `None` where the backend cannot measure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// CPU time consumed, milliseconds.
    pub cpu_ms: Option<u64>,
    /// Memory in use, bytes.
    pub memory_bytes: Option<u64>,
    /// Disk in use, bytes.
    pub disk_bytes: Option<u64>,
    /// Processes alive.
    pub processes: Option<u64>,
}

/// The optional usage hook.
#[async_trait]
pub trait UsageOps: Send + Sync {
    /// Current usage of sandbox `id`.
    async fn usage(&self, id: &str) -> Result<Usage>;
}
