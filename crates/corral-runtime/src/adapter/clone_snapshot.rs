//! `cloneSnapshot`: a physical copy of a snapshot, bound to a target Session.
//!
//! Without `snapshots`: `SandboxCapabilityUnavailable{snapshots}`; with
//! snapshots but without `snapshot_clone`: `SandboxCapabilityUnavailable
//! {snapshots, capability: snapshot_clone}` (the contract's requirement set
//! has no `snapshot_clone`; corral names it in `capability`).
//!
//! The source must be a contract snapshot the backend still holds, whose
//! labels agree with the ref the caller passed (else
//! `SandboxOperationFailed{integrity_mismatch}`: the id names another
//! snapshot), and whose own retention has not passed (else
//! `SandboxSnapshotNotFound`: retention expiry always wins). The backend's
//! `clone_snapshot` copies the bytes under a new id — no dependency on the
//! source remains — and the clone is [`SnapshotRef::cloned`]: a different
//! `snapshot_id`, `session_id` the target Session, the source's `expires_at`
//! byte-identical, `created_at` the backend's copy time (never before the
//! source's). The rollback deletes exactly the copy.

use corral_backend::Backend;
use corral_contract::{
    CapabilityField, CloneSnapshotRequest, Compensated, FailureReason, Handoff, Operation,
    Requirement, SandboxError, SnapshotId, SnapshotRef,
};

use super::ContractAdapter;
use super::clock;
use super::errors::{Subject, failed, on, unsupported};
use super::record::{SnapshotIdentity, StoredSnapshot};
use super::rollback::{DeleteSnapshot, Owned};

/// The stored snapshot `source` names, checked: it exists, its labels agree
/// with `source`, and its retention has not passed.
pub(super) async fn verified_source<B: Backend>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    source: &SnapshotRef,
) -> Result<StoredSnapshot, SandboxError> {
    let not_found = || SandboxError::SandboxSnapshotNotFound {
        snapshot_id: source.snapshot_id.clone(),
    };
    let stored = adapter
        .find_snapshot(operation, &source.snapshot_id)
        .await?
        .ok_or_else(not_found)?;
    if stored.identity != SnapshotIdentity::of(source) {
        return Err(failed(operation, FailureReason::IntegrityMismatch));
    }
    if stored.identity.expires_at <= clock::now(operation)? {
        return Err(not_found());
    }
    Ok(stored)
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: CloneSnapshotRequest,
) -> Result<Handoff<SnapshotRef>, SandboxError> {
    let op = Operation::CloneSnapshot;
    if !adapter.envelope.snapshots {
        return Err(SandboxError::capability_unavailable(Requirement::Snapshots));
    }
    if !adapter.envelope.snapshot_clone {
        return Err(SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        });
    }
    let Some(ops) = adapter.backend.snapshot_clone_ops() else {
        return Err(unsupported(op));
    };
    let source = &request.source;
    let stored = verified_source(adapter, op, source).await?;
    let identity = SnapshotIdentity {
        session_id: request.target_session_id.clone(),
        ..stored.identity
    };
    let info = ops
        .clone_snapshot(source.snapshot_id.as_str(), &identity.labels())
        .await
        .map_err(on(op, Subject::Snapshot(&source.snapshot_id)))?;
    let owned = Owned::snapshot(&adapter.backend, &info.id);
    let made = SnapshotId::new(info.id.as_str())
        .map_err(|_| failed(op, FailureReason::PlatformRejected))
        .and_then(|id| Ok((id, clock::from_ms(op, info.created_at_ms)?)));
    let (snapshot_id, copied_at) = match made {
        Ok(made) => made,
        Err(e) => {
            owned.abandon().await;
            return Err(e);
        }
    };
    let created_at = copied_at.max(source.created_at);
    if created_at >= source.expires_at {
        // The source's retention ran out while it was being copied.
        owned.abandon().await;
        return Err(SandboxError::SandboxSnapshotNotFound {
            snapshot_id: source.snapshot_id.clone(),
        });
    }
    owned.hand_off();
    let clone = source.cloned(snapshot_id, request.target_session_id.clone(), created_at);
    Ok(Handoff::new(
        clone,
        DeleteSnapshot {
            backend: adapter.backend.clone(),
            snapshot_id: info.id,
            operation: Compensated::CloneSnapshot,
        },
    ))
}
