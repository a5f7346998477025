//! `release`: end an `active` instance according to its retention.
//!
//! - **durable**: capture a snapshot expiring at the request's
//!   `snapshot_expires_at` (exactly as `snapshot` would), then destroy the
//!   sandbox; the disposition is `released{snapshot}`. A durable release
//!   without `snapshot_expires_at` is refused as
//!   `SandboxOperationFailed{release, platform_rejected}` before anything is
//!   captured: the adapter never invents a retention deadline. If the
//!   sandbox cannot be destroyed, the fresh snapshot is deleted and the
//!   instance stays as it was. The rollback deletes exactly that snapshot —
//!   the one thing release allocated (the instance is gone either way).
//! - **ephemeral_zdr**: destroy the sandbox — its mounts, output tree,
//!   control root, record, journals and labels: every trace the provider
//!   holds, since a ZDR instance is never snapshotted. The disposition is
//!   `destroyed`; nothing was allocated, so the rollback does nothing.

use corral_backend::Backend;
use corral_contract::{
    Compensated, FailureReason, Handoff, NoRollback, Operation, ReleaseDisposition, ReleaseRequest,
    Requirement, RetentionMode, SandboxError, SnapshotRequest,
};

use super::ContractAdapter;
use super::errors::{Subject, failed, on};
use super::rollback::DeleteSnapshot;
use super::snapshot::capture;

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ReleaseRequest,
) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
    let op = Operation::Release;
    let located = adapter.locate(op, &request.instance_id).await?;
    op.check_state(located.record.state)?;
    let subject = Subject::Instance(&request.instance_id);
    match located.record.request.profile.retention {
        RetentionMode::EphemeralZdr => {
            adapter
                .backend
                .destroy(&located.sandbox_id)
                .await
                .map_err(on(op, subject))?;
            adapter.processes.forget(&request.instance_id);
            Ok(Handoff::new(ReleaseDisposition::Destroyed, NoRollback))
        }
        RetentionMode::Durable => {
            if !adapter.envelope.snapshots {
                return Err(SandboxError::capability_unavailable(Requirement::Snapshots));
            }
            let expires_at = request
                .snapshot_expires_at
                .ok_or_else(|| failed(op, FailureReason::PlatformRejected))?;
            let instance = adapter.instance_of(&located.record);
            let snapshot_request = SnapshotRequest {
                instance_id: request.instance_id.clone(),
                expires_at,
            };
            let (snapshot, owned) = capture(
                adapter,
                op,
                &located.sandbox_id,
                &instance,
                &snapshot_request,
            )
            .await?;
            if let Err(e) = adapter.backend.destroy(&located.sandbox_id).await {
                owned.abandon().await;
                return Err(on(op, subject)(e));
            }
            adapter.processes.forget(&request.instance_id);
            owned.hand_off();
            let snapshot_id = snapshot.snapshot_id.to_string();
            Ok(Handoff::new(
                ReleaseDisposition::Released {
                    snapshot: Box::new(snapshot),
                },
                DeleteSnapshot {
                    backend: adapter.backend.clone(),
                    snapshot_id,
                    operation: Compensated::Release,
                },
            ))
        }
    }
}
