//! Corruptions: each takes an honest value and changes exactly one field to
//! a well-formed value the runtime must refuse. Every replacement is derived
//! from the honest value, so it differs from it whatever the inner provider
//! answered.

use corral_contract::{
    Arguments, Digest, Executable, IdentityField, ImageReference, InstanceState, LeaseEpoch,
    MountAccess, MountSpec, Mounts, Placement, Platform, SandboxInstance, SandboxPath,
    SandboxProcessEvidence, SnapshotRef, Timestamp,
};

use super::lie::{CloneLie, EvidenceLie, SnapshotLie};

/// `<id>-lie`: another well-formed identifier of the same type.
macro_rules! lied {
    ($ty:ty, $value:expr) => {
        <$ty>::new(format!("{}-lie", $value.as_str())).expect("a lie is still a well-formed id")
    };
}

/// Another well-formed instance id.
pub fn lied_instance_id(id: &corral_contract::InstanceId) -> corral_contract::InstanceId {
    lied!(corral_contract::InstanceId, id)
}

/// A moment `millis` after (or, negative, before) `t`.
pub fn shifted(t: Timestamp, millis: i64) -> Timestamp {
    t.checked_add_millis(millis)
        .expect("a shifted test timestamp stays in range")
}

/// Another digest: the first hex digit changed.
pub fn other_digest(digest: &Digest) -> Digest {
    let hex = digest.hex();
    let first = if hex.starts_with('0') { '1' } else { '0' };
    Digest::from_sha256_hex(&format!("{first}{}", &hex[1..])).expect("still 64 hex digits")
}

/// The same image name pinned by another digest.
pub fn other_image(image: &ImageReference) -> ImageReference {
    ImageReference::from_parts(image.name(), &other_digest(&image.digest()))
        .expect("the name was valid already")
}

/// Another placement.
pub fn other_placement(placement: Placement) -> Placement {
    Placement::ALL
        .iter()
        .copied()
        .find(|p| *p != placement)
        .expect("the vocabulary has more than one placement")
}

/// Another platform.
pub fn other_platform(platform: Platform) -> Platform {
    if platform == Platform::LINUX_AMD64 {
        Platform::LINUX_ARM64
    } else {
        Platform::LINUX_AMD64
    }
}

fn path(text: &str) -> SandboxPath {
    SandboxPath::new(text).expect("a literal test path")
}

/// Changes exactly the value `field` checks.
pub fn corrupt_instance(instance: &mut SandboxInstance, field: IdentityField) {
    use IdentityField as F;
    let m = &mut instance.materialization;
    match field {
        F::Provider => instance.provider = lied!(corral_contract::ProviderId, instance.provider),
        F::Placement => instance.placement = other_placement(instance.placement),
        F::State => {
            instance.state = match instance.state {
                InstanceState::Provisioning => InstanceState::Active,
                InstanceState::Active => InstanceState::Provisioning,
            }
        }
        F::WorkspaceId => {
            instance.workspace_id = lied!(corral_contract::WorkspaceId, instance.workspace_id)
        }
        F::SessionId => {
            instance.session_id = lied!(corral_contract::SessionId, instance.session_id)
        }
        F::RunId => instance.run_id = lied!(corral_contract::RunId, instance.run_id),
        F::AttemptId => {
            instance.attempt_id = lied!(corral_contract::AttemptId, instance.attempt_id)
        }
        F::LeaseId => instance.lease_id = lied!(corral_contract::LeaseId, instance.lease_id),
        F::LeaseEpoch => {
            instance.lease_epoch =
                LeaseEpoch::new(instance.lease_epoch.get() + 1).expect("a small test epoch")
        }
        F::Target => instance.target = lied!(corral_contract::TargetId, instance.target),
        F::Profile => {
            let seconds = instance.profile.max_duration_seconds.get() + 1;
            instance.profile.max_duration_seconds =
                corral_contract::DurationSeconds::new(seconds).expect("a small test duration")
        }
        F::Platform => instance.platform = other_platform(instance.platform),
        F::RootImage => instance.root_image = other_image(&instance.root_image),
        F::Mounts => {
            instance.mounts = if instance.mounts.as_slice().is_empty() {
                Mounts::new(vec![MountSpec {
                    path: path("/workspace/liar"),
                    access: MountAccess::ReadWrite,
                }])
                .expect("one mount")
            } else {
                Mounts::none()
            }
        }
        F::OutputPath => instance.output_path = path("/mnt/session/output"),
        F::ExpiresAt => instance.expires_at = shifted(instance.expires_at, 60_000),
        F::MaterializationProfileDigest => m.profile_digest = other_digest(&m.profile_digest),
        F::MaterializationImageReference => m.image_reference = other_image(&m.image_reference),
        F::MaterializationImageDigest => m.image_digest = other_digest(&m.image_digest),
        F::MaterializationProviderRevision => {
            m.provider_revision = lied!(corral_contract::Revision, m.provider_revision)
        }
        F::MaterializationMaterializationRevision => {
            m.materialization_revision =
                lied!(corral_contract::Revision, m.materialization_revision)
        }
    }
}

/// Changes exactly the value `lie` names in a `snapshot` result.
pub fn corrupt_snapshot(snapshot: &mut SnapshotRef, lie: SnapshotLie) {
    use corral_contract as c;
    match lie {
        SnapshotLie::Provider => snapshot.provider = lied!(c::ProviderId, snapshot.provider),
        SnapshotLie::Placement => snapshot.placement = other_placement(snapshot.placement),
        SnapshotLie::SourceInstanceId => {
            snapshot.source_instance_id = lied!(c::InstanceId, snapshot.source_instance_id)
        }
        SnapshotLie::WorkspaceId => {
            snapshot.workspace_id = lied!(c::WorkspaceId, snapshot.workspace_id)
        }
        SnapshotLie::SessionId => snapshot.session_id = lied!(c::SessionId, snapshot.session_id),
        SnapshotLie::ProfileId => snapshot.profile_id = lied!(c::ProfileId, snapshot.profile_id),
        SnapshotLie::ProfileVersion => {
            snapshot.profile_version = lied!(c::ProfileVersion, snapshot.profile_version)
        }
        SnapshotLie::ProfileDigest => {
            snapshot.profile_digest = other_digest(&snapshot.profile_digest)
        }
        SnapshotLie::MovedExpiresAt => snapshot.expires_at = shifted(snapshot.expires_at, 60_000),
    }
}

/// Breaks one clone rule of `clone`, a clone of `source`.
pub fn corrupt_clone(clone: &mut SnapshotRef, source: &SnapshotRef, lie: CloneLie) {
    match lie {
        CloneLie::ReusesSourceId => clone.snapshot_id = source.snapshot_id.clone(),
        CloneLie::MovesExpiry => clone.expires_at = shifted(source.expires_at, 60_000),
        CloneLie::BindsSourceSession => clone.session_id = source.session_id.clone(),
        CloneLie::PredatesSource => clone.created_at = shifted(source.created_at, -1),
        CloneLie::CreatedAtItsExpiry => clone.created_at = clone.expires_at,
    }
}

/// Changes exactly the evidence field `lie` names; `instance` is the
/// instance the process runs in (for its expiry).
pub fn corrupt_evidence(
    evidence: &mut SandboxProcessEvidence,
    lie: EvidenceLie,
    instance: &SandboxInstance,
) {
    use corral_contract as c;
    match lie {
        EvidenceLie::InstanceId => {
            evidence.instance_id = lied!(c::InstanceId, evidence.instance_id)
        }
        EvidenceLie::Provider => evidence.provider = lied!(c::ProviderId, evidence.provider),
        EvidenceLie::Placement => evidence.placement = other_placement(evidence.placement),
        EvidenceLie::StartedAtExpiry => evidence.started_at = instance.expires_at,
        EvidenceLie::Executable => {
            evidence.executable = Executable::new(format!("{}-lie", evidence.executable.as_str()))
                .expect("a well-formed executable")
        }
        EvidenceLie::Arguments => {
            let mut arguments = evidence.arguments.clone().into_strings();
            arguments.push("--lie".to_owned());
            evidence.arguments = Arguments::new(arguments).expect("one argument more is bounded");
        }
        EvidenceLie::WorkingDirectory => {
            let liar = path("/workspace/liar");
            evidence.working_directory = match &evidence.working_directory {
                Some(dir) if *dir == liar => None,
                _ => Some(liar),
            }
        }
    }
}
