//! The construction check: an envelope may not claim more than its backend
//! declares ("absence is safe and overclaiming dangerous").
//!
//! Every capability of the envelope that some backend member has to carry
//! out is compared with the backend's declared [`Capabilities`]; every
//! enforcement claim the adapter can tie to a backend fact is compared with
//! what the backend's `create` enforces. A violation is refused as
//! `SandboxCapabilityUnavailable` naming the overclaimed envelope field in
//! `capability` and, in `requirement`, the closed requirement selection would
//! speak for it.
//!
//! The table of claims and what each needs is on
//! [`super::ContractAdapter::new`].

use corral_backend::Capabilities;
use corral_contract::{
    CapabilityField, EgressCertification, EnforcementLevel, NetworkMode, Requirement, SandboxError,
    SandboxProviderCapabilities,
};

/// One overclaim: the field, the requirement it maps to.
fn refuse(requirement: Requirement, field: CapabilityField) -> SandboxError {
    SandboxError::SandboxCapabilityUnavailable {
        requirement,
        capability: Some(field),
    }
}

/// Refuses the first claim of `envelope` that `backend` cannot carry out, in
/// the order of the table above.
pub(crate) fn check(
    envelope: &SandboxProviderCapabilities,
    backend: &Capabilities,
) -> Result<(), SandboxError> {
    use CapabilityField as F;
    use Requirement as R;
    let members = [
        (
            envelope.snapshots,
            backend.snapshot,
            R::Snapshots,
            F::Snapshots,
        ),
        (
            envelope.snapshot_clone,
            backend.snapshot_clone,
            R::Snapshots,
            F::SnapshotClone,
        ),
        (
            envelope.physically_contained_file_read,
            backend.contained_read,
            R::PhysicallyContainedFileRead,
            F::PhysicallyContainedFileRead,
        ),
        (
            envelope.read_files,
            backend.contained_read,
            R::PhysicallyContainedFileRead,
            F::ReadFiles,
        ),
        (envelope.list_dir, backend.list_tree, R::Mounts, F::ListDir),
        (
            envelope.list_project_dir,
            backend.list_tree,
            R::Mounts,
            F::ListProjectDir,
        ),
        (
            envelope.active_mount_write,
            backend.write_batch,
            R::ActiveMountWrite,
            F::ActiveMountWrite,
        ),
        // The requirement set has no process member; `tier` is the closest
        // requirement (the isolation technology a live process runs in), and
        // `capability` names the field exactly.
        (
            envelope.open_process,
            backend.start_process,
            R::Tier,
            F::OpenProcess,
        ),
    ];
    for (claimed, declared, requirement, field) in members {
        if claimed && !declared {
            return Err(refuse(requirement, field));
        }
    }
    if !envelope.package_managers.is_empty() {
        return Err(refuse(R::Packages, F::PackageManagers));
    }
    let enforces = &backend.enforces;
    let lists_none = envelope.network_modes.contains(&NetworkMode::None);
    if lists_none && !enforces.network_none {
        return Err(refuse(R::NetworkPolicy, F::NetworkModes));
    }
    let certified = envelope.egress_certification != EgressCertification::Unsupported;
    if certified && !enforces.network_allowlist {
        return Err(refuse(R::NetworkPolicy, F::EgressCertification));
    }
    let e = &envelope.enforcement;
    let provider = EnforcementLevel::ProviderEnforced;
    let lists_allowlist = envelope.network_modes.contains(&NetworkMode::Allowlist);
    let every_mode_enforced = (!lists_none || enforces.network_none)
        && (!lists_allowlist || (certified && enforces.network_allowlist));
    let axes = [
        (e.network_egress, every_mode_enforced, R::NetworkPolicy),
        (e.memory_limit, enforces.memory, R::Resources),
        (e.cpu_limit, enforces.cpu, R::Resources),
        (e.process_count_limit, enforces.pids, R::Resources),
        (e.read_only_mounts, false, R::Mounts),
        (e.wall_clock_timeout, false, R::Resources),
    ];
    for (level, enforceable, requirement) in axes {
        if level == provider && !enforceable {
            return Err(refuse(requirement, F::Enforcement));
        }
    }
    Ok(())
}
