//! Decoding the envelope: the declaration as it arrives, before its
//! defaults are filled in, so a refusal can tell an absent `max_mounts`
//! from an explicit `0`.
//!
//! `max_mounts` is optional and an absent one declares no mounts ("Every
//! optional capability defaults to the weakest legal value"). A provider
//! that leaves it out while claiming `list_dir`, `list_project_dir` or
//! `active_mount_write` is refused naming `max_mounts`, the member it left
//! out, rather than the flag it did write.

use serde::Deserialize;

use super::{
    CapabilityDeclaration, EgressCertification, Enforcement, ImageMode, NetworkMode,
    PackageManager, Placement, Platform, RetentionMode, SandboxProviderCapabilities,
    SnapshotCustody, Tier,
};
use crate::{InvalidValue, MaxMounts, Revision};

/// The envelope as decoded: [`CapabilityDeclaration`] with `max_mounts`
/// kept optional. Same members, same defaults, unknown members refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeclaredEnvelope {
    placement: Placement,
    tiers: Vec<Tier>,
    platforms: Vec<Platform>,
    image_mode: ImageMode,
    #[serde(default)]
    package_managers: Vec<PackageManager>,
    network_modes: Vec<NetworkMode>,
    retention_modes: Vec<RetentionMode>,
    #[serde(default)]
    snapshots: bool,
    #[serde(default)]
    snapshot_custody: SnapshotCustody,
    #[serde(default)]
    snapshot_clone: bool,
    #[serde(default)]
    list_dir: bool,
    #[serde(default)]
    list_project_dir: bool,
    #[serde(default)]
    read_files: bool,
    #[serde(default)]
    physically_contained_file_read: bool,
    #[serde(default)]
    active_mount_write: bool,
    #[serde(default)]
    open_process: bool,
    #[serde(default)]
    egress_certification: EgressCertification,
    #[serde(default)]
    enforcement: Enforcement,
    #[serde(default)]
    max_mounts: Option<MaxMounts>,
    provider_revision: Revision,
    materialization_revision: Revision,
}

impl TryFrom<DeclaredEnvelope> for SandboxProviderCapabilities {
    type Error = InvalidValue;

    fn try_from(e: DeclaredEnvelope) -> Result<Self, InvalidValue> {
        let declared_mounts = e.max_mounts.is_some();
        let declaration = CapabilityDeclaration {
            placement: e.placement,
            tiers: e.tiers,
            platforms: e.platforms,
            image_mode: e.image_mode,
            package_managers: e.package_managers,
            network_modes: e.network_modes,
            retention_modes: e.retention_modes,
            snapshots: e.snapshots,
            snapshot_custody: e.snapshot_custody,
            snapshot_clone: e.snapshot_clone,
            list_dir: e.list_dir,
            list_project_dir: e.list_project_dir,
            read_files: e.read_files,
            physically_contained_file_read: e.physically_contained_file_read,
            active_mount_write: e.active_mount_write,
            open_process: e.open_process,
            egress_certification: e.egress_certification,
            enforcement: e.enforcement,
            max_mounts: e.max_mounts.unwrap_or_default(),
            provider_revision: e.provider_revision,
            materialization_revision: e.materialization_revision,
        };
        declaration.check(declared_mounts)?;
        Ok(Self(declaration))
    }
}
