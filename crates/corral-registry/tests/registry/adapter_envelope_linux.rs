//! The linux envelope claims what the linux backend enforces on this host,
//! nothing more, and fits the backend behind the adapter.

use crate::adapter_support;
use std::sync::Arc;

use adapter_support::faulty::Faulty;
use corral_backend::Backend;
use corral_backend_linux::LinuxBackend;
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

/// A backend declaring what the linux backend declares, with cgroups and
/// allowlists as given.
fn linux_like(cgroups: bool, allowlist: bool) -> Faulty<MemoryBackend> {
    let mut caps = LinuxBackend::CAPABILITIES;
    caps.enforces.memory = cgroups;
    caps.enforces.cpu = cgroups;
    caps.enforces.pids = cgroups;
    caps.enforces.network_allowlist = allowlist;
    Faulty::declaring(Arc::new(MemoryBackend::new()), caps)
}

#[test]
fn without_cgroups_or_allowlists_the_linux_envelope_claims_isolation_and_none_only() {
    let backend = linux_like(false, false);
    let env = envelopes::linux_for(&backend.capabilities());
    assert_eq!(env.tiers, vec![Tier::Container]);
    assert_eq!(env.placement, Placement::Local);
    assert_eq!(env.network_modes, vec![NetworkMode::None]);
    assert_eq!(env.egress_certification, EgressCertification::Unsupported);
    for (axis, level) in env.enforcement.axes() {
        let expected = match axis {
            EnforcementAxis::FilesystemIsolation
            | EnforcementAxis::ProcessIsolation
            | EnforcementAxis::NetworkEgress
            | EnforcementAxis::OutputBounds => EnforcementLevel::ProviderEnforced,
            EnforcementAxis::WallClockTimeout => EnforcementLevel::RunnerEnforced,
            _ => EnforcementLevel::NotEnforced,
        };
        assert_eq!(level, expected, "{axis}");
    }
    for flag in [
        env.snapshots,
        env.snapshot_clone,
        env.list_dir,
        env.list_project_dir,
        env.read_files,
        env.physically_contained_file_read,
        env.active_mount_write,
        env.open_process,
    ] {
        assert!(flag);
    }
    assert_eq!(
        plan_missing(&env),
        vec![(
            ConformanceCase::AllowlistEgress,
            vec![CapabilityToken::NetworkAllowlist]
        )]
    );
    assert!(ContractAdapter::new(Arc::new(backend), env).is_ok());
}

#[test]
fn cgroups_and_allowlists_are_claimed_exactly_where_the_backend_enforces_them() {
    let backend = linux_like(true, true);
    let env = envelopes::linux_for(&backend.capabilities());
    assert_eq!(
        env.network_modes,
        vec![NetworkMode::None, NetworkMode::Allowlist]
    );
    assert_eq!(
        env.egress_certification,
        EgressCertification::KernelEnforced
    );
    let e = env.enforcement;
    assert_eq!(e.memory_limit, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.cpu_limit, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.process_count_limit, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.network_egress, EnforcementLevel::ProviderEnforced);
    // The adapter seals mounts at its trusted port only.
    assert_eq!(e.read_only_mounts, EnforcementLevel::NotEnforced);
    assert!(plan_missing(&env).is_empty());
    assert!(ContractAdapter::new(Arc::new(backend), env.clone()).is_ok());
    // The same envelope overclaims a host without cgroups or allowlists.
    assert!(ContractAdapter::new(Arc::new(linux_like(false, false)), env).is_err());
}

#[test]
fn the_envelope_of_the_real_backend_fits_it() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LinuxBackend::open(dir.path()).unwrap());
    let env = envelopes::linux_for(&backend.capabilities());
    assert!(ContractAdapter::new(backend, env).is_ok());
}
