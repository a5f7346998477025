//! The in-tree envelopes are honest, and an envelope that overclaims its
//! backend is refused at construction.

use crate::adapter_support;
use std::sync::Arc;

use adapter_support::faulty::Faulty;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;

fn plan_missing(
    envelope: &SandboxProviderCapabilities,
) -> Vec<(ConformanceCase, Vec<CapabilityToken>)> {
    envelope
        .conformance_plan()
        .into_iter()
        .filter(|(_, missing)| !missing.is_empty())
        .collect()
}

#[test]
fn memory_envelope_declares_every_token_and_runs_all_nine_cases() {
    let memory = envelopes::memory();
    for token in CapabilityToken::ALL {
        assert!(memory.conformance_tokens().contains(token), "{token}");
    }
    assert!(plan_missing(&memory).is_empty());
    for flag in [
        memory.snapshots,
        memory.snapshot_clone,
        memory.list_dir,
        memory.list_project_dir,
        memory.read_files,
        memory.physically_contained_file_read,
        memory.active_mount_write,
        memory.open_process,
    ] {
        assert!(flag);
    }
}

#[test]
fn memory_envelope_says_its_enforcement_is_simulated() {
    let memory = envelopes::memory();
    assert_eq!(memory.tiers, vec![Tier::Simulated]);
    assert_eq!(memory.placement, Placement::Local);
    let e = memory.enforcement;
    // The backend records memory and CPU ceilings without enforcing them.
    assert_eq!(e.memory_limit, EnforcementLevel::NotEnforced);
    assert_eq!(e.cpu_limit, EnforcementLevel::NotEnforced);
    // No primitive seals a mount against the workload.
    assert_eq!(e.read_only_mounts, EnforcementLevel::NotEnforced);
    assert_eq!(e.wall_clock_timeout, EnforcementLevel::RunnerEnforced);
}

#[test]
fn local_envelope_records_both_network_cases_as_skips() {
    let local = envelopes::local();
    assert!(!local.network_modes.contains(&NetworkMode::None));
    assert_eq!(local.egress_certification, EgressCertification::Unsupported);
    let missing = plan_missing(&local);
    assert_eq!(
        missing,
        vec![
            (
                ConformanceCase::AllowlistEgress,
                vec![CapabilityToken::NetworkAllowlist]
            ),
            (
                ConformanceCase::NoneEgress,
                vec![CapabilityToken::NetworkNone]
            ),
        ]
    );
}

#[test]
fn local_envelope_claims_no_isolation() {
    let local = envelopes::local();
    assert_eq!(local.tiers, vec![Tier::Process]);
    for (axis, level) in local.enforcement.axes() {
        let expected = match axis {
            EnforcementAxis::OutputBounds => EnforcementLevel::ProviderEnforced,
            EnforcementAxis::WallClockTimeout => EnforcementLevel::BestEffort,
            _ => EnforcementLevel::NotEnforced,
        };
        assert_eq!(level, expected, "{axis}");
    }
    assert!(!local.active_mount_write);
    assert!(local.snapshots && local.snapshot_clone && local.open_process);
}

/// A backend declaring exactly what the local backend declares on a host
/// that can (or cannot) drop the network.
fn local_like(drops_network: bool) -> Faulty<MemoryBackend> {
    let mut capabilities = LocalBackend::CAPABILITIES;
    capabilities.enforces.network_none = drops_network;
    Faulty::declaring(Arc::new(MemoryBackend::new()), capabilities)
}

#[test]
fn local_for_lists_none_exactly_where_the_backend_enforces_it() {
    use corral_backend::Backend;
    let without = envelopes::local_for(&local_like(false).capabilities());
    assert_eq!(without, envelopes::local());
    let with = envelopes::local_for(&local_like(true).capabilities());
    assert_eq!(
        with.network_modes,
        vec![NetworkMode::None, NetworkMode::Allowlist]
    );
    assert_eq!(
        with.enforcement.network_egress,
        EnforcementLevel::BestEffort
    );
    assert_eq!(with.egress_certification, EgressCertification::Unsupported);
    assert_eq!(
        plan_missing(&with),
        vec![(
            ConformanceCase::AllowlistEgress,
            vec![CapabilityToken::NetworkAllowlist]
        )]
    );
    // Each fits its own backend; `none` does not fit one that cannot drop
    // the network.
    assert!(ContractAdapter::new(Arc::new(local_like(true)), with.clone()).is_ok());
    assert!(ContractAdapter::new(Arc::new(local_like(false)), without).is_ok());
    assert_eq!(
        ContractAdapter::new(Arc::new(local_like(false)), with).unwrap_err(),
        unavailable(Requirement::NetworkPolicy, CapabilityField::NetworkModes)
    );
}

#[test]
fn in_tree_envelopes_fit_their_backends() {
    use corral_backend::Backend;
    let dir = tempfile::tempdir().unwrap();
    let local = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let here = envelopes::local_for(&local.capabilities());
    assert!(ContractAdapter::new(Arc::clone(&local), here).is_ok());
    assert!(ContractAdapter::new(local, envelopes::local()).is_ok());
    let memory = Arc::new(MemoryBackend::new());
    let adapter = ContractAdapter::new(memory, envelopes::memory()).unwrap();
    assert_eq!(adapter.capabilities(), &envelopes::memory());
}

fn refused_with(
    base: SandboxProviderCapabilities,
    change: impl FnOnce(&mut CapabilityDeclaration),
    backend: impl corral_backend::Backend + 'static,
) -> SandboxError {
    let mut declaration = base.into_declaration();
    change(&mut declaration);
    let envelope = SandboxProviderCapabilities::new(declaration).unwrap();
    let backend = Arc::new(backend);
    let verified = corral_backend::Verified::new_shared(Arc::clone(&backend))
        .expect("the backend declares what it has");
    let Err(through_proof) = ContractAdapter::from_verified(verified, envelope.clone()) else {
        panic!("the overclaiming envelope was accepted over a verified backend");
    };
    match ContractAdapter::new(backend, envelope) {
        Ok(_) => panic!("the overclaiming envelope was accepted"),
        Err(e) => {
            assert_eq!(e, through_proof, "both constructors refuse alike");
            e
        }
    }
}

fn unavailable(requirement: Requirement, capability: CapabilityField) -> SandboxError {
    SandboxError::SandboxCapabilityUnavailable {
        requirement,
        capability: Some(capability),
    }
}

/// One change to an envelope.
type Change = Box<dyn FnOnce(&mut CapabilityDeclaration)>;

#[test]
fn an_envelope_overclaiming_its_backend_is_refused_naming_the_field() {
    use CapabilityField as F;
    use EnforcementLevel::ProviderEnforced;
    use Requirement as R;
    let cases: Vec<(Change, SandboxError)> = vec![
        (
            Box::new(|d| d.active_mount_write = true),
            unavailable(R::ActiveMountWrite, F::ActiveMountWrite),
        ),
        (
            Box::new(|d| d.network_modes.push(NetworkMode::None)),
            unavailable(R::NetworkPolicy, F::NetworkModes),
        ),
        (
            Box::new(|d| d.egress_certification = EgressCertification::AdvisoryFilter),
            unavailable(R::NetworkPolicy, F::EgressCertification),
        ),
        (
            Box::new(|d| d.enforcement.network_egress = ProviderEnforced),
            unavailable(R::NetworkPolicy, F::Enforcement),
        ),
        (
            Box::new(|d| d.enforcement.memory_limit = ProviderEnforced),
            unavailable(R::Resources, F::Enforcement),
        ),
        (
            Box::new(|d| d.enforcement.process_count_limit = ProviderEnforced),
            unavailable(R::Resources, F::Enforcement),
        ),
        (
            Box::new(|d| d.package_managers = vec![PackageManager::Apt]),
            unavailable(R::Packages, F::PackageManagers),
        ),
    ];
    for (change, expected) in cases {
        assert_eq!(
            refused_with(envelopes::local(), change, local_like(false)),
            expected
        );
    }
}

#[test]
fn no_envelope_may_claim_provider_enforced_sealing_or_expiry() {
    use EnforcementLevel::ProviderEnforced;
    let sealing = refused_with(
        envelopes::memory(),
        |d| d.enforcement.read_only_mounts = ProviderEnforced,
        MemoryBackend::new(),
    );
    assert_eq!(
        sealing,
        unavailable(Requirement::Mounts, CapabilityField::Enforcement)
    );
    let expiry = refused_with(
        envelopes::memory(),
        |d| d.enforcement.wall_clock_timeout = ProviderEnforced,
        MemoryBackend::new(),
    );
    assert_eq!(
        expiry,
        unavailable(Requirement::Resources, CapabilityField::Enforcement)
    );
}

#[test]
fn a_backend_declaring_a_member_it_does_not_implement_is_refused() {
    let defective = Faulty::hiding_batch_write(Arc::new(MemoryBackend::new()));
    let err = ContractAdapter::new(Arc::new(defective), envelopes::memory()).unwrap_err();
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::Capabilities, FailureReason::PlatformRejected)
    );
    // Nor can it be passed off as verified: the proof is made by the check.
    let defective = Faulty::hiding_batch_write(Arc::new(MemoryBackend::new()));
    let Err(err) = corral_backend::Verified::new(defective) else {
        panic!("a backend declaring a member it lacks was verified");
    };
    assert_eq!(err.code(), corral_backend::ErrorCode::Provider, "{err}");
}
