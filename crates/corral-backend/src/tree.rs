//! The contract-facing optional primitives: contained reads, complete tree
//! listings, and atomic batch writes.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::contained::ContainedReadError;
use crate::error::{BackendError, Result};
use crate::path::SandboxPath;

/// Why a contained read did not return bytes.
#[derive(Debug, thiserror::Error)]
pub enum ContainedReadFailure {
    /// The kernel (or the backend's equivalent) refused the path.
    #[error("{0}")]
    Refused(#[from] ContainedReadError),
    /// The backend failed before it could try (unknown sandbox, I/O).
    #[error("{0}")]
    Backend(#[from] BackendError),
}

/// The optional physically contained read.
#[async_trait]
pub trait ContainedReadOps: Send + Sync {
    /// Reads `path` with resolution bound to the directory `allowed_root`,
    /// at most `max_bytes` bytes. Both are absolute sandbox paths; `path`
    /// must lie lexically under `allowed_root` (otherwise `outside_root`),
    /// and is then resolved by the kernel relative to a descriptor of
    /// `allowed_root`, so no symlink or `..` can take it physically outside.
    async fn read_contained(
        &self,
        id: &str,
        allowed_root: &SandboxPath,
        path: &SandboxPath,
        max_bytes: u64,
    ) -> std::result::Result<Vec<u8>, ContainedReadFailure>;
}

/// What a leaf of a tree listing is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TreeEntryKind {
    /// A regular file.
    File {
        /// Size in bytes.
        size: u64,
        /// `sha256:<hex>` of its content.
        sha256: String,
    },
    /// A symbolic link (not followed).
    Symlink,
    /// A directory holding a `.git` file: a Git submodule (not descended).
    Submodule,
    /// A character or block device.
    Device,
    /// A unix socket.
    Socket,
    /// A named pipe.
    Fifo,
    /// Anything else.
    Other,
}

/// One leaf of a tree listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// Path relative to the listed root, `/`-separated.
    pub path: String,
    /// What it is.
    pub kind: TreeEntryKind,
}

/// A complete listing of every leaf under a root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeListing {
    /// Leaves, sorted by path.
    pub entries: Vec<TreeEntry>,
    /// False when the listing stopped at `max_entries`.
    pub complete: bool,
}

/// The optional complete leaf listing.
#[async_trait]
pub trait TreeListOps: Send + Sync {
    /// Every leaf under `root`, special files named, at most `max_entries`.
    async fn list_tree(
        &self,
        id: &str,
        root: &SandboxPath,
        max_entries: usize,
    ) -> Result<TreeListing>;
}

/// One file of a batch write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchFile {
    /// Its path in the sandbox.
    pub path: SandboxPath,
    /// Content.
    pub bytes: Vec<u8>,
    /// Permission bits; `None` = `0o644`.
    pub mode: Option<u32>,
}

/// The optional atomic batch write.
#[async_trait]
pub trait BatchWriteOps: Send + Sync {
    /// Publishes every file or none of them.
    async fn write_batch(&self, id: &str, files: Vec<BatchFile>) -> Result<()>;
}
