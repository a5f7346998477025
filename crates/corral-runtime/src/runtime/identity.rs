//! Identity is cross-checked, not trusted.
//!
//! "Every returned instance is compared field by field against the request
//! the Runner sent — seventeen top-level fields across twenty-one equality
//! checks … a mismatch is a `SandboxProtocolInvalid` naming the
//! `instance_identity` operation." Snapshots, clones and resumes get "the
//! same treatment". Every refusal here is `SandboxProtocolInvalid` naming the
//! operation, the offending field, and both values as rendered JSON.
//!
//! Two checks are corral's, where the contract is silent: `activate`
//! returns the instance it was asked to activate (same `instance_id`), and
//! an allocation never reuses the id of an instance that is still live
//! (two live instances under one id could not be told apart).

use std::fmt::Display;

use corral_contract::{
    CloneSnapshotRequest, InstanceId, InstanceState, Mismatch, Operation, ProtocolViolation,
    ResumeRequest, SandboxError, SandboxInstance, SandboxProviderCapabilities,
    SandboxProvisionRequest, SnapshotRef, SnapshotRequest, check_instance_identity,
    clone_mismatches, resume_mismatches, snapshot_mismatches,
};

use super::tracked::Instances;

/// The first mismatch as `SandboxProtocolInvalid{operation, field, expected,
/// actual}`.
fn first<F: Display>(operation: Operation, mismatches: &[Mismatch<F>]) -> Result<(), SandboxError> {
    match mismatches.first() {
        Some(mismatch) => Err(mismatch.to_violation().into_error(operation)),
        None => Ok(()),
    }
}

fn rendered<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unrenderable: {e}>"))
}

/// The twenty-one checks of a returned instance against the request, the
/// envelope's revisions and the state the operation must return.
pub(crate) fn instance(
    request: &SandboxProvisionRequest,
    instance: &SandboxInstance,
    capabilities: &SandboxProviderCapabilities,
    state: InstanceState,
) -> Result<(), SandboxError> {
    check_instance_identity(request, instance, capabilities, state)
}

/// `activate` returns the instance it was asked to activate.
pub(crate) fn same_instance(
    operation: Operation,
    expected: &InstanceId,
    instance: &SandboxInstance,
) -> Result<(), SandboxError> {
    if &instance.instance_id == expected {
        return Ok(());
    }
    Err(ProtocolViolation::new(
        "instance_id",
        rendered(expected),
        rendered(&instance.instance_id),
    )
    .into_error(operation))
}

/// A new allocation does not reuse the id of a live instance.
pub(crate) fn fresh_instance(
    operation: Operation,
    instances: &Instances,
    instance: &SandboxInstance,
) -> Result<(), SandboxError> {
    if !instances.is_live(&instance.instance_id) {
        return Ok(());
    }
    Err(ProtocolViolation::new(
        "instance_id",
        "an id no live instance holds",
        rendered(&instance.instance_id),
    )
    .into_error(operation))
}

/// A `snapshot` ref agrees with its source instance and carries exactly the
/// requested `expires_at`.
pub(crate) fn snapshot(
    request: &SnapshotRequest,
    source: &SandboxInstance,
    snapshot: &SnapshotRef,
) -> Result<(), SandboxError> {
    first(
        Operation::Snapshot,
        &snapshot_mismatches(request, source, snapshot),
    )
}

/// A snapshot settled by a durable `release` gets the `snapshot` checks,
/// named as `release`'s.
pub(crate) fn released_snapshot(
    request: &SnapshotRequest,
    source: &SandboxInstance,
    snapshot: &SnapshotRef,
) -> Result<(), SandboxError> {
    let mismatches = snapshot_mismatches(request, source, snapshot);
    match mismatches.first() {
        Some(mismatch) => {
            let violation = mismatch.to_violation();
            Err(ProtocolViolation::new(
                format!("snapshot.{}", violation.field),
                violation.expected,
                violation.actual,
            )
            .into_error(Operation::Release))
        }
        None => Ok(()),
    }
}

/// A `cloneSnapshot` result: a new id, the target Session, the source's
/// expiry, `created_at` in `[source.created_at, expires_at)`, and the
/// source's provider, placement, source instance, Workspace and profile.
pub(crate) fn clone(
    request: &CloneSnapshotRequest,
    clone: &SnapshotRef,
) -> Result<(), SandboxError> {
    first(Operation::CloneSnapshot, &clone_mismatches(request, clone))
}

/// `resume` admission: the snapshot agrees with the request on provider,
/// placement, Workspace, Session and profile.
pub(crate) fn resume_admission(request: &ResumeRequest) -> Result<(), SandboxError> {
    first(Operation::Resume, &resume_mismatches(request))
}
