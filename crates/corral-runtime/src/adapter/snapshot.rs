//! `snapshot`: capture an `active`, durable instance under the supplied
//! retention deadline.
//!
//! Without `snapshots` in the envelope: `SandboxCapabilityUnavailable
//! {snapshots}`. An `ephemeral_zdr` instance: `SandboxSnapshotForbidden
//! {instance_id, retention}` — nothing is captured. Otherwise the backend
//! captures the sandbox (its mounts, output tree and control root) with the
//! snapshot's identity as labels, and the ref is
//! [`SnapshotRef::for_instance`]: the source instance's provider, placement,
//! Workspace, Session and profile, **exactly** the requested `expires_at`
//! (never a deadline of the platform's), the backend's snapshot id and
//! capture time. The rollback deletes exactly that backend snapshot.

use corral_backend::Backend;
use corral_contract::{
    Compensated, FailureReason, Handoff, Operation, Requirement, RetentionMode, SandboxError,
    SandboxInstance, SnapshotId, SnapshotRef, SnapshotRequest,
};

use super::ContractAdapter;
use super::clock;
use super::errors::{Subject, failed, on, unsupported};
use super::record::SnapshotIdentity;
use super::rollback::{DeleteSnapshot, Owned};

/// Captures sandbox `sandbox_id`, which holds `instance`, as a snapshot
/// expiring at `request.expires_at`. The snapshot is owned by the returned
/// guard until the caller hands it off.
pub(super) async fn capture<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    sandbox_id: &str,
    instance: &SandboxInstance,
    request: &SnapshotRequest,
) -> Result<(SnapshotRef, Owned<B>), SandboxError> {
    let Some(ops) = adapter.backend.snapshot_ops() else {
        return Err(unsupported(operation));
    };
    let identity = SnapshotIdentity {
        provider: instance.provider.clone(),
        placement: instance.placement,
        source_instance_id: instance.instance_id.clone(),
        workspace_id: instance.workspace_id.clone(),
        session_id: instance.session_id.clone(),
        profile_id: instance.profile.id.clone(),
        profile_version: instance.profile.version.clone(),
        profile_digest: instance.profile.digest.clone(),
        expires_at: request.expires_at,
    };
    let info = ops
        .snapshot(sandbox_id, &identity.labels())
        .await
        .map_err(on(operation, Subject::Instance(&instance.instance_id)))?;
    let owned = Owned::snapshot(&adapter.backend, &info.id);
    let made = SnapshotId::new(info.id.as_str())
        .map_err(|_| failed(operation, FailureReason::PlatformRejected))
        .and_then(|id| Ok((id, clock::from_ms(operation, info.created_at_ms)?)));
    match made {
        Ok((snapshot_id, created_at)) => Ok((
            SnapshotRef::for_instance(snapshot_id, request, instance, created_at),
            owned,
        )),
        Err(e) => {
            owned.abandon().await;
            Err(e)
        }
    }
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: SnapshotRequest,
) -> Result<Handoff<SnapshotRef>, SandboxError> {
    let op = Operation::Snapshot;
    if !adapter.envelope.snapshots {
        return Err(SandboxError::capability_unavailable(Requirement::Snapshots));
    }
    let located = adapter.locate(op, &request.instance_id).await?;
    op.check_state(located.record.state)?;
    let retention = located.record.request.profile.retention;
    if retention != RetentionMode::Durable {
        return Err(SandboxError::SandboxSnapshotForbidden {
            instance_id: request.instance_id,
            retention,
        });
    }
    let instance = adapter.instance_of(&located.record);
    let (reference, owned) = capture(adapter, op, &located.sandbox_id, &instance, &request).await?;
    owned.hand_off();
    let snapshot_id = reference.snapshot_id.to_string();
    Ok(Handoff::new(
        reference,
        DeleteSnapshot {
            backend: adapter.backend.clone(),
            snapshot_id,
            operation: Compensated::Snapshot,
        },
    ))
}
