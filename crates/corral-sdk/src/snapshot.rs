//! Snapshots of a sandbox: capture its files, and start a new sandbox
//! from them — the backend's optional snapshot primitives
//! (`Capabilities::snapshot`) behind two methods.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use corral_sdk::{CreateOptions, Sandbox};
//!
//! let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
//! let sandbox = Sandbox::create(backend.clone(), CreateOptions::default()).await?;
//! sandbox.run("echo kept > /workspace/state.txt").await?;
//! let snapshot = sandbox.snapshot().await?;
//!
//! let restored =
//!     Sandbox::create_from_snapshot(backend, &snapshot.id, CreateOptions::default()).await?;
//! let text = restored.run("cat /workspace/state.txt").await?.stdout_text();
//! assert_eq!(text, "kept\n");
//! # Ok::<(), corral_sdk::SandboxError>(())
//! # }).unwrap();
//! ```

use std::sync::Arc;

use corral_backend::{Backend, BackendError, Labels, SnapshotInfo};

use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::sandbox::{CreateOptions, Sandbox};

impl Sandbox {
    /// Captures this sandbox's files as a snapshot, labelled with the
    /// sandbox's labels. Fails with `unsupported` on a backend without
    /// snapshots (`Capabilities::snapshot`), before anything is done.
    pub async fn snapshot(&self) -> Result<SnapshotInfo> {
        self.snapshot_labelled(&Labels::new()).await
    }

    /// [`Sandbox::snapshot`] with `labels` added to the snapshot's.
    pub async fn snapshot_labelled(&self, labels: &Labels) -> Result<SnapshotInfo> {
        let ops = self
            .backend()
            .snapshot_ops()
            .ok_or_else(|| self.error(Operation::Snapshot, unsupported(self.provider())))?;
        ops.snapshot(self.id(), labels)
            .await
            .map_err(|e| self.error(Operation::Snapshot, e))
    }

    /// Creates a sandbox on `backend` that starts from snapshot
    /// `snapshot_id` (the primitive's restore: `create` with a snapshot),
    /// with the rest of `options`; an `options.snapshot` is replaced.
    /// Fails with `unsupported` on a backend without snapshots, and as
    /// `create` fails for a snapshot that does not exist.
    pub async fn create_from_snapshot(
        backend: Arc<dyn Backend>,
        snapshot_id: &str,
        options: CreateOptions,
    ) -> Result<Sandbox> {
        if !backend.capabilities().snapshot {
            return Err(SandboxError::from_backend(
                backend.name(),
                Operation::Create,
                unsupported(backend.name()),
            ));
        }
        let options = CreateOptions {
            snapshot: Some(snapshot_id.to_owned()),
            ..options
        };
        Sandbox::create(backend, options).await
    }
}

/// The refusal of a backend without snapshots.
fn unsupported(backend: &str) -> BackendError {
    BackendError::unsupported(backend, "take or restore snapshots")
}
