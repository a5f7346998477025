//! Compensations: the rollbacks of the six handoffs, and the guard that owns
//! a partial allocation until its handoff returns.
//!
//! "`rollback` is a cold compensation for that exact allocation … it must
//! not derive its authority from `value`." Each rollback here captures the
//! backend id of what its member allocated when it allocated it, and nothing
//! else; the handed-off value is never read. Each is idempotent: the backend
//! primitives it calls (`destroy`, `delete_snapshot`) settle the same way
//! when the object is already gone, and [`Deactivate`] only moves an
//! `active` record back.

use crate::adapter::at;
use std::sync::Arc;

use corral_backend::{Backend, BackendError, ErrorCode};
use corral_contract::{
    BoxFuture, Compensated, InstanceId, InstanceState, Operation, Rollback, SandboxError,
};

use super::errors::{failed, reason_of};
use super::record::{InstanceRecord, RECORD_PATH};

fn rollback_error(operation: Compensated, error: &BackendError) -> SandboxError {
    failed(Operation::Rollback(operation), reason_of(error.code()))
}

/// Destroys exactly one backend sandbox: the rollback of `provision` and
/// `resume`.
pub(crate) struct DestroySandbox<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) sandbox_id: String,
    pub(crate) operation: Compensated,
}

impl<B: Backend + 'static> Rollback for DestroySandbox<B> {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.backend
                .destroy(&self.sandbox_id)
                .await
                .map_err(|e| rollback_error(self.operation, &e))
        })
    }
}

/// Deletes exactly one backend snapshot: the rollback of `snapshot`,
/// `cloneSnapshot` and a durable `release` (whose instance is already gone:
/// the snapshot is all that release allocated).
pub(crate) struct DeleteSnapshot<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) snapshot_id: String,
    pub(crate) operation: Compensated,
}

impl<B: Backend + 'static> Rollback for DeleteSnapshot<B> {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            match self.backend.snapshot_ops() {
                Some(ops) => ops
                    .delete_snapshot(&self.snapshot_id)
                    .await
                    .map_err(|e| rollback_error(self.operation, &e)),
                // Without snapshot primitives no snapshot was allocated.
                None => Ok(()),
            }
        })
    }
}

/// Moves one instance's record from `active` back to `provisioning`,
/// unsealed: the rollback of `activate`, which allocates nothing but the
/// transition. A sandbox that is gone, or a record already `provisioning`,
/// needs nothing.
pub(crate) struct Deactivate<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) sandbox_id: String,
    pub(crate) instance_id: InstanceId,
}

impl<B: Backend + 'static> Rollback for Deactivate<B> {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            let op = Compensated::Activate;
            let files = self.backend.files();
            let record_path = at(RECORD_PATH).map_err(|e| rollback_error(op, &e))?;
            let bytes = match files.read(&self.sandbox_id, &record_path).await {
                Ok(bytes) => bytes,
                Err(e) if e.code() == ErrorCode::NotFound => return Ok(()),
                Err(e) => return Err(rollback_error(op, &e)),
            };
            let integrity = || {
                failed(
                    Operation::Rollback(op),
                    corral_contract::FailureReason::IntegrityMismatch,
                )
            };
            let mut record: InstanceRecord =
                serde_json::from_slice(&bytes).map_err(|_| integrity())?;
            if record.instance_id != self.instance_id {
                return Err(integrity());
            }
            if record.state == InstanceState::Provisioning {
                return Ok(());
            }
            record.state = InstanceState::Provisioning;
            record.sealed = false;
            let json = serde_json::to_vec_pretty(&record).map_err(|_| integrity())?;
            match files
                .write(&self.sandbox_id, &record_path, &json, Some(0o600))
                .await
            {
                Ok(()) => Ok(()),
                Err(e) if e.code() == ErrorCode::NotFound => Ok(()),
                Err(e) => Err(rollback_error(op, &e)),
            }
        })
    }
}

/// What a member has allocated and not yet handed off.
enum Allocation {
    Sandbox(String),
    Snapshot(String),
}

/// Owns a partial allocation until the handoff returns ("you own every
/// partial allocation until the handoff returns"). A member that fails
/// undoes it with [`Owned::abandon`]; a member whose future is dropped
/// mid-way (interrupted) undoes it from `Drop`, on the current tokio runtime.
/// A member that succeeds [`Owned::hand_off`]s it into its rollback. What
/// neither reaches (no runtime, a backend that fails) keeps its labels and is
/// reclaimed by `cleanup`.
pub(crate) struct Owned<B: Backend + 'static> {
    backend: Arc<B>,
    allocation: Option<Allocation>,
}

impl<B: Backend + 'static> Owned<B> {
    /// Owns a sandbox.
    pub(crate) fn sandbox(backend: &Arc<B>, sandbox_id: &str) -> Self {
        Self {
            backend: Arc::clone(backend),
            allocation: Some(Allocation::Sandbox(sandbox_id.to_owned())),
        }
    }

    /// Owns a snapshot.
    pub(crate) fn snapshot(backend: &Arc<B>, snapshot_id: &str) -> Self {
        Self {
            backend: Arc::clone(backend),
            allocation: Some(Allocation::Snapshot(snapshot_id.to_owned())),
        }
    }

    /// Gives up ownership: the allocation now belongs to a handoff.
    pub(crate) fn hand_off(mut self) {
        self.allocation = None;
    }

    /// Undoes the allocation now. Its own failure is not reported: the caller
    /// reports the failure that made it abandon, and the labelled leftover is
    /// `cleanup`'s.
    pub(crate) async fn abandon(mut self) {
        if let Some(allocation) = self.allocation.take() {
            undo(&*self.backend, allocation).await;
        }
    }
}

async fn undo<B: Backend>(backend: &B, allocation: Allocation) {
    match allocation {
        Allocation::Sandbox(id) => {
            let _ = backend.destroy(&id).await;
        }
        Allocation::Snapshot(id) => {
            if let Some(ops) = backend.snapshot_ops() {
                let _ = ops.delete_snapshot(&id).await;
            }
        }
    }
}

impl<B: Backend + 'static> Drop for Owned<B> {
    fn drop(&mut self) {
        let Some(allocation) = self.allocation.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let backend = Arc::clone(&self.backend);
            runtime.spawn(async move { undo(&*backend, allocation).await });
        }
    }
}
