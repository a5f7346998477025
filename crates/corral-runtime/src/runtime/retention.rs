//! Retention: what `snapshot`, `cloneSnapshot`, `resume` and `release` may
//! do for an instance's retention mode.
//!
//! - "`snapshot` | `active`, durable only": a snapshot of an `ephemeral_zdr`
//!   instance is `SandboxSnapshotForbidden{instance_id, retention}` before
//!   the provider is called; on a provider without `snapshots` it is
//!   `SandboxCapabilityUnavailable{snapshots}` ("`snapshots: false` … a clone
//!   attempt fails `SandboxCapabilityUnavailable{requirement:
//!   "snapshots"}`"), as are `cloneSnapshot` and `resume`.
//! - "`snapshot_clone` omitted | `false`: a clone attempt fails
//!   `SandboxCapabilityUnavailable{requirement: "snapshot_clone"}`" — in
//!   corral's closed set, `{requirement: snapshots, capability:
//!   snapshot_clone}`.
//! - "`release` … Durable: settle a snapshot. ZDR: destroy every trace";
//!   the runtime rejects "a `released` disposition on a ZDR profile, or
//!   `destroyed` on a durable one". A durable release must name the settled
//!   snapshot's retention deadline (its `expires_at` is then checked
//!   exactly, as `snapshot`'s is); a ZDR release naming one asks for a
//!   snapshot ZDR forbids.

use corral_contract::{
    CapabilityField, Operation, ProtocolViolation, ReleaseDisposition, ReleaseRequest, Requirement,
    RetentionMode, SandboxError, SandboxProviderCapabilities, SnapshotRequest,
};

use super::identity;
use super::tracked::{Ended, Tracked};

fn no_snapshots() -> SandboxError {
    SandboxError::capability_unavailable(Requirement::Snapshots)
}

fn forbidden(tracked: &Tracked) -> SandboxError {
    SandboxError::SandboxSnapshotForbidden {
        instance_id: tracked.instance.instance_id.clone(),
        retention: tracked.instance.retention(),
    }
}

/// Admits a `snapshot` of the tracked instance.
pub(crate) fn snapshot(
    tracked: &Tracked,
    capabilities: &SandboxProviderCapabilities,
) -> Result<(), SandboxError> {
    if tracked.instance.retention() != RetentionMode::Durable {
        return Err(forbidden(tracked));
    }
    if !capabilities.snapshots {
        return Err(no_snapshots());
    }
    Ok(())
}

/// Admits a `cloneSnapshot`.
pub(crate) fn clone(capabilities: &SandboxProviderCapabilities) -> Result<(), SandboxError> {
    if !capabilities.snapshots {
        return Err(no_snapshots());
    }
    if !capabilities.snapshot_clone {
        return Err(SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        });
    }
    Ok(())
}

/// Admits a `resume` (rehydrating needs snapshots).
pub(crate) fn resume(capabilities: &SandboxProviderCapabilities) -> Result<(), SandboxError> {
    if capabilities.snapshots {
        Ok(())
    } else {
        Err(no_snapshots())
    }
}

/// Admits a `release` request for the instance's retention: returns the
/// snapshot request a durable release settles, `None` for ZDR.
pub(crate) fn release_request(
    tracked: &Tracked,
    request: &ReleaseRequest,
) -> Result<Option<SnapshotRequest>, SandboxError> {
    match (tracked.instance.retention(), request.snapshot_expires_at) {
        (RetentionMode::Durable, Some(expires_at)) => Ok(Some(SnapshotRequest {
            instance_id: request.instance_id.clone(),
            expires_at,
        })),
        (RetentionMode::Durable, None) => Err(ProtocolViolation::new(
            "snapshot_expires_at",
            "the settled snapshot's retention deadline (retention durable)",
            "absent",
        )
        .into_error(Operation::Release)),
        (RetentionMode::EphemeralZdr, None) => Ok(None),
        (RetentionMode::EphemeralZdr, Some(_)) => Err(forbidden(tracked)),
    }
}

/// Checks a release's disposition against the instance's retention (and a
/// settled snapshot against its source), returning how the instance ended.
pub(crate) fn release_result(
    tracked: &Tracked,
    settles: Option<&SnapshotRequest>,
    disposition: &ReleaseDisposition,
) -> Result<Ended, SandboxError> {
    disposition
        .validate_for(tracked.instance.retention())
        .map_err(|v| v.into_error(Operation::Release))?;
    match (disposition, settles) {
        (ReleaseDisposition::Released { snapshot }, Some(request)) => {
            identity::released_snapshot(request, &tracked.instance, snapshot)?;
            Ok(Ended::Released)
        }
        (ReleaseDisposition::Released { .. }, None) => Ok(Ended::Released),
        (ReleaseDisposition::Destroyed, _) => Ok(Ended::Destroyed),
    }
}
