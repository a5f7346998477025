//! Paths, mounts, and what the Runner admits first.
//!
//! "You never have to decide whether a path is legal. The Runner admits it
//! before you are called":
//!
//! - the mount plan of every allocation (`provision`, `resume`): reserved
//!   roots, conflicting paths and a count over `max_mounts` are
//!   `SandboxCapabilityUnavailable{requirement: mounts}`; the rest of the
//!   profile is held against the envelope in the selection vocabulary;
//! - write scope: "During `provisioning`, `writeFile` may target any
//!   declared mount or the output tree. Once `active`, only the output tree
//!   remains writable through this trusted port";
//! - read roots: "`readFile` and `readFiles` receive an `allowed_root` the
//!   Runtime derived from the instance's own mounts" — a root that is not one
//!   of the instance's mount roots or the output tree is refused, and the
//!   runtime derives the root of a path as the deepest mount that owns it;
//! - active writes: a batch lands inside one read-write mount, the deepest
//!   that owns every target ("an ancestor writeable mount cannot authorize a
//!   path inside a nested read-only or separately owned mount").
//!
//! Refusals of a path are `SandboxOperationFailed{reason: outside_root}`
//! (the path is outside what the instance admits), except a path inside a
//! mount that activation sealed against this port, which is the lifecycle
//! conflict it is (`expected [provisioning], actual active`), and an active
//! write into a read-only mount, which is `permission_denied`.

use corral_contract::{
    ActiveWriteBatch, FailureReason, InstanceState, MountAccess, MountSpec, Operation, Requirement,
    SandboxError, SandboxPath, SandboxProviderCapabilities, SandboxProvisionRequest,
    check_mount_plan, write_admitted,
};

use super::network::{self, NetworkShape};
use super::tracked::Tracked;
use crate::select::ProfileRequirements;

fn outside_root(operation: Operation) -> SandboxError {
    SandboxError::operation_failed(operation, FailureReason::OutsideRoot)
}

/// Admits an allocation request: its mount plan, then every requirement its
/// profile states, in the selection vocabulary's order, with the network
/// policy held against the current shape.
pub(crate) fn allocation(
    request: &SandboxProvisionRequest,
    capabilities: &SandboxProviderCapabilities,
    shape: &NetworkShape,
) -> Result<(), SandboxError> {
    check_mount_plan(&request.mounts, capabilities).map_err(|refusal| refusal.into_error())?;
    let requirements = ProfileRequirements {
        minimum_egress: shape.minimum_egress,
        ..ProfileRequirements::for_request(request)
    };
    match requirements.first_unmet(capabilities) {
        None | Some(Requirement::NetworkPolicy) => {
            network::check(&request.profile.network, shape, capabilities)
        }
        Some(requirement) => Err(SandboxError::capability_unavailable(requirement)),
    }
}

/// Admits a `writeFile` path for the instance's current state.
pub(crate) fn write(tracked: &Tracked, path: &SandboxPath) -> Result<(), SandboxError> {
    let instance = &tracked.instance;
    if write_admitted(instance.state, &instance.mounts, path) {
        return Ok(());
    }
    if write_admitted(InstanceState::Provisioning, &instance.mounts, path) {
        return Err(SandboxError::lifecycle_conflict(
            Operation::WriteFile,
            &[InstanceState::Provisioning],
            instance.state.into(),
        ));
    }
    Err(outside_root(Operation::WriteFile))
}

/// The roots a read or listing of this instance may name: its mount roots
/// and the output tree.
fn roots(tracked: &Tracked) -> impl Iterator<Item = SandboxPath> + '_ {
    tracked
        .instance
        .mounts
        .as_slice()
        .iter()
        .map(|mount| mount.path.clone())
        .chain(std::iter::once(SandboxPath::output_path()))
}

/// Admits a root supplied with a read or listing.
pub(crate) fn root(
    operation: Operation,
    tracked: &Tracked,
    root: &SandboxPath,
) -> Result<(), SandboxError> {
    if roots(tracked).any(|admitted| &admitted == root) {
        Ok(())
    } else {
        Err(outside_root(operation))
    }
}

/// Derives the `allowed_root` of a path: the deepest of the instance's
/// mounts that owns it, or the output tree.
pub(crate) fn derive_root(
    operation: Operation,
    tracked: &Tracked,
    path: &SandboxPath,
) -> Result<SandboxPath, SandboxError> {
    roots(tracked)
        .filter(|root| path.starts_with(root) && path != root)
        .max_by_key(|root| root.as_str().len())
        .ok_or_else(|| outside_root(operation))
}

/// Admits an active-write batch: every target strictly inside one mount,
/// the deepest that owns each of them, and that mount read-write.
pub(crate) fn active_write(
    tracked: &Tracked,
    batch: &ActiveWriteBatch,
) -> Result<(), SandboxError> {
    let mounts = &tracked.instance.mounts;
    let mut owner: Option<&MountSpec> = None;
    for file in batch.files() {
        let this = mounts
            .owner_of(&file.path)
            .filter(|mount| mount.path != file.path)
            .ok_or_else(|| outside_root(Operation::BeginActiveWrite))?;
        match owner {
            Some(first) if first.path != this.path => {
                return Err(outside_root(Operation::BeginActiveWrite));
            }
            _ => owner = Some(this),
        }
    }
    match owner {
        Some(mount) if mount.access == MountAccess::ReadWrite => Ok(()),
        Some(_) => Err(SandboxError::operation_failed(
            Operation::BeginActiveWrite,
            FailureReason::PermissionDenied,
        )),
        None => Err(outside_root(Operation::BeginActiveWrite)),
    }
}
