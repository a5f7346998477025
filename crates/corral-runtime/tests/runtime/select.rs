//! Selection: "`SandboxCapabilityUnavailable.requirement` is itself a closed
//! set, and it is the vocabulary selection speaks", and "`SandboxAdapter
//! Unavailable` and `SandboxAdapterAmbiguous` (selection could not resolve
//! exactly one adapter)".

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;
use corral_runtime::select::{ProfileRequirements, select, select_named};

/// Requirements every [`full_caps`] envelope meets.
fn modest() -> ProfileRequirements {
    ProfileRequirements::for_request(&zdr_request())
}

fn full_with(change: impl FnOnce(&mut CapabilityDeclaration)) -> SandboxProviderCapabilities {
    let mut declaration = full_declaration();
    change(&mut declaration);
    caps(declaration)
}

/// Holds `requirements` against one candidate and expects exactly
/// `requirement` as the reason it is unavailable.
fn unavailable_with(
    requirements: &ProfileRequirements,
    candidate: SandboxProviderCapabilities,
    requirement: Requirement,
) {
    let err = select(requirements, &[candidate]).unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxAdapterUnavailable {
            rejected: vec![AdapterRejection {
                provider: ProviderId::new("fake-1").unwrap(),
                requirement,
            }]
        }
    );
}

#[test]
fn select_returns_the_one_candidate_that_fits() {
    let zdr_only = full_with(|d| {
        d.snapshots = false;
        d.snapshot_clone = false;
        d.snapshot_custody = SnapshotCustody::Runner;
        d.retention_modes = vec![RetentionMode::EphemeralZdr];
    });
    let requirements = ProfileRequirements::for_request(&durable_request());
    assert_eq!(select(&requirements, &[zdr_only, full_caps()]).unwrap(), 1);
}

#[test]
fn select_is_ambiguous_when_several_fit() {
    let a = (ProviderId::new("memory").unwrap(), full_caps());
    let b = (ProviderId::new("docker").unwrap(), full_caps());
    let err = select_named(&modest(), &[a, b]).unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxAdapterAmbiguous {
            candidates: vec![
                ProviderId::new("memory").unwrap(),
                ProviderId::new("docker").unwrap()
            ]
        }
    );
}

#[test]
fn select_without_candidates_is_unavailable_with_nothing_rejected() {
    let err = select(&modest(), &[]).unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxAdapterUnavailable { rejected: vec![] }
    );
}

#[test]
fn select_unavailable_lists_every_candidate_with_its_first_unmet_requirement() {
    let no_arm = (
        ProviderId::new("a").unwrap(),
        full_with(|d| d.platforms = vec![Platform::LINUX_AMD64]),
    );
    let no_apt = (
        ProviderId::new("b").unwrap(),
        full_with(|d| {
            d.platforms = vec![Platform::LINUX_ARM64];
            d.package_managers = vec![];
        }),
    );
    let mut request = zdr_request();
    request.platform = Platform::LINUX_ARM64;
    request.profile.packages = vec![PackageSpec {
        manager: PackageManager::Apt,
        name: PackageName::new("git").unwrap(),
        version: None,
    }];
    let err = select_named(
        &ProfileRequirements::for_request(&request),
        &[no_arm, no_apt],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SandboxAdapterUnavailable: rejected [a: platform, b: packages]"
    );
}

#[test]
fn select_unavailable_tier_when_no_advertised_tier_is_strong_enough() {
    let requirements = ProfileRequirements {
        minimum_tier: Some(Tier::Microvm),
        ..modest()
    };
    unavailable_with(&requirements, full_caps(), Requirement::Tier);
    let vm = full_with(|d| d.tiers = vec![Tier::VirtualMachine]);
    assert_eq!(select(&requirements, &[vm]).unwrap(), 0);
}

#[test]
fn select_unavailable_platform() {
    let requirements = ProfileRequirements {
        platform: Some(Platform::LINUX_ARM64),
        ..modest()
    };
    unavailable_with(&requirements, full_caps(), Requirement::Platform);
}

#[test]
fn select_unavailable_base_image_when_the_profile_needs_its_image_and_the_provider_runs_host() {
    let requirements = ProfileRequirements {
        base_image: ImageMode::Profile,
        ..modest()
    };
    let host = full_with(|d| d.image_mode = ImageMode::Host);
    unavailable_with(&requirements, host.clone(), Requirement::BaseImage);
    // A profile that accepts the host root selects a host-mode provider.
    assert_eq!(select(&modest(), &[host]).unwrap(), 0);
}

#[test]
fn select_unavailable_packages() {
    let mut request = zdr_request();
    request.profile.packages = vec![PackageSpec {
        manager: PackageManager::Pip,
        name: PackageName::new("requests").unwrap(),
        version: None,
    }];
    let requirements = ProfileRequirements::for_request(&request);
    assert_eq!(requirements.package_managers, vec![PackageManager::Pip]);
    unavailable_with(&requirements, full_caps(), Requirement::Packages);
}

#[test]
fn select_unavailable_network_policy_when_the_mode_is_not_enforced() {
    let allowlist_only = full_with(|d| d.network_modes = vec![NetworkMode::Allowlist]);
    unavailable_with(&modest(), allowlist_only, Requirement::NetworkPolicy);
}

#[test]
fn select_unavailable_network_policy_when_the_egress_grade_falls_short() {
    let request = request_for(
        profile(RetentionMode::EphemeralZdr, allowlist()),
        two_mounts(),
    );
    let requirements = ProfileRequirements {
        minimum_egress: EgressCertification::KernelEnforced,
        ..ProfileRequirements::for_request(&request)
    };
    let advisory = full_with(|d| d.egress_certification = EgressCertification::AdvisoryFilter);
    unavailable_with(&requirements, advisory.clone(), Requirement::NetworkPolicy);
    // An uncertified allowlist never selects, whatever the profile asks.
    let loose = ProfileRequirements {
        minimum_egress: EgressCertification::Unsupported,
        ..requirements
    };
    let uncertified = full_with(|d| d.egress_certification = EgressCertification::Unsupported);
    unavailable_with(&loose, uncertified, Requirement::NetworkPolicy);
    assert_eq!(select(&loose, &[advisory]).unwrap(), 0);
}

#[test]
fn select_unavailable_retention() {
    let zdr_only = full_with(|d| {
        d.snapshots = false;
        d.snapshot_clone = false;
        d.snapshot_custody = SnapshotCustody::Runner;
        d.retention_modes = vec![RetentionMode::EphemeralZdr];
    });
    let requirements = ProfileRequirements::for_request(&durable_request());
    unavailable_with(&requirements, zdr_only, Requirement::Retention);
}

#[test]
fn select_unavailable_snapshots_when_the_run_forks_and_clone_is_absent() {
    let no_clone = full_with(|d| d.snapshot_clone = false);
    let requirements = ProfileRequirements {
        snapshot_clone: true,
        ..ProfileRequirements::for_request(&durable_request())
    };
    unavailable_with(&requirements, no_clone, Requirement::Snapshots);
}

#[test]
fn select_unavailable_resources_when_a_ceiling_is_not_provider_enforced() {
    let mut request = zdr_request();
    request.profile.resources.max_processes = Some(ProcessCount::new(64).unwrap());
    let requirements = ProfileRequirements::for_request(&request);
    for level in [
        EnforcementLevel::NotEnforced,
        EnforcementLevel::BestEffort,
        EnforcementLevel::RunnerEnforced,
    ] {
        let weak = full_with(|d| d.enforcement.process_count_limit = level);
        unavailable_with(&requirements, weak, Requirement::Resources);
    }
    assert_eq!(select(&requirements, &[full_caps()]).unwrap(), 0);
}

#[test]
fn select_unavailable_resources_for_a_disk_ceiling_no_envelope_can_claim() {
    let mut request = zdr_request();
    request.profile.resources.disk_bytes = Some(DiskBytes::new(1 << 30).unwrap());
    unavailable_with(
        &ProfileRequirements::for_request(&request),
        full_caps(),
        Requirement::Resources,
    );
}

#[test]
fn select_unavailable_mounts_over_max_mounts() {
    let one_mount = full_with(|d| d.max_mounts = MaxMounts::new(1).unwrap());
    unavailable_with(&modest(), one_mount, Requirement::Mounts);
}

#[test]
fn select_unavailable_physically_contained_file_read() {
    let requirements = ProfileRequirements {
        physically_contained_file_read: true,
        ..modest()
    };
    let path_based = full_with(|d| {
        d.read_files = false;
        d.physically_contained_file_read = false;
    });
    unavailable_with(
        &requirements,
        path_based,
        Requirement::PhysicallyContainedFileRead,
    );
}

#[test]
fn select_unavailable_active_mount_write() {
    let requirements = ProfileRequirements {
        active_mount_write: true,
        ..modest()
    };
    let no_write = full_with(|d| d.active_mount_write = false);
    unavailable_with(&requirements, no_write, Requirement::ActiveMountWrite);
}

#[test]
fn the_first_unmet_requirement_follows_the_vocabulary_order() {
    let mut request = durable_request();
    request.platform = Platform::LINUX_ARM64;
    let requirements = ProfileRequirements {
        minimum_tier: Some(Tier::VirtualMachine),
        active_mount_write: true,
        ..ProfileRequirements::for_request(&request)
    };
    let mut envelope = SandboxProviderCapabilities::minimum().into_declaration();
    assert_eq!(
        requirements.first_unmet(&caps(envelope.clone())),
        Some(Requirement::Tier)
    );
    envelope.tiers = vec![Tier::VirtualMachine];
    assert_eq!(
        requirements.first_unmet(&caps(envelope.clone())),
        Some(Requirement::Platform)
    );
    envelope.platforms = vec![Platform::LINUX_ARM64];
    assert_eq!(
        requirements.first_unmet(&caps(envelope)),
        Some(Requirement::Retention)
    );
}

#[test]
fn requirements_derived_from_a_profile_state_what_the_profile_carries() {
    let mut durable = profile(RetentionMode::Durable, allowlist());
    durable.packages = vec![
        PackageSpec {
            manager: PackageManager::Apt,
            name: PackageName::new("git").unwrap(),
            version: None,
        },
        PackageSpec {
            manager: PackageManager::Apt,
            name: PackageName::new("curl").unwrap(),
            version: None,
        },
    ];
    durable.resources.memory_bytes = Some(MemoryBytes::new(1 << 30).unwrap());
    let r = ProfileRequirements::from_profile(&durable);
    assert_eq!(r.retention, RetentionMode::Durable);
    assert!(r.snapshots, "a durable profile needs snapshots");
    assert_eq!(r.network, allowlist());
    assert_eq!(r.minimum_egress, EgressCertification::AdvisoryFilter);
    assert_eq!(r.package_managers, vec![PackageManager::Apt]);
    assert_eq!(r.resources, durable.resources);
    assert_eq!(r.mounts, Mounts::none());
    assert_eq!((r.minimum_tier, r.platform), (None, None));
    assert_eq!(r.base_image, ImageMode::Host);
    assert!(!r.physically_contained_file_read && !r.active_mount_write && !r.snapshot_clone);
    let from_request = ProfileRequirements::for_request(&durable_request());
    assert_eq!(from_request.platform, Some(Platform::LINUX_AMD64));
    assert_eq!(from_request.mounts, two_mounts());
}

#[test]
fn the_minimum_provider_serves_a_zdr_none_profile_without_mounts() {
    let request = request_for(
        profile(RetentionMode::EphemeralZdr, NetworkPolicy::None),
        Mounts::none(),
    );
    let requirements = ProfileRequirements::for_request(&request);
    assert_eq!(
        select(&requirements, &[SandboxProviderCapabilities::minimum()]).unwrap(),
        0
    );
}
