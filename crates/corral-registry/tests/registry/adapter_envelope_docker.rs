//! The docker envelope claims what the docker backend enforces, nothing
//! more: the linux envelope's container claims, without an allowlist.

use corral_backend_linux::LinuxBackend;
use corral_contract::*;
use corral_registry::envelopes;

// Provider contract, "Conformance": "Docker declares six and omits
// `network-allowlist`, so the allowlist-egress case is a recorded skip";
// "Optional capabilities: absent versus wrong": `egress_certification`
// omitted is `unsupported`, and claiming more while ignoring the
// destination set is "the worst failure mode". The engine gives corral no
// kernel-enforced allowlist, even where the backend says it filters.
#[test]
fn the_docker_envelope_never_claims_an_allowlist() {
    let mut caps = LinuxBackend::CAPABILITIES;
    caps.enforces.network_allowlist = true;
    let env = envelopes::docker_for(&caps);
    assert_eq!(env.tiers, vec![Tier::Container]);
    assert_eq!(env.network_modes, vec![NetworkMode::None]);
    assert_eq!(env.egress_certification, EgressCertification::Unsupported);
    assert_eq!(
        env.enforcement.network_egress,
        EnforcementLevel::ProviderEnforced
    );
    let missing: Vec<_> = env
        .conformance_plan()
        .into_iter()
        .filter(|(_, missing)| !missing.is_empty())
        .collect();
    assert_eq!(
        missing,
        vec![(
            ConformanceCase::AllowlistEgress,
            vec![CapabilityToken::NetworkAllowlist]
        )]
    );
}

#[test]
fn the_docker_envelope_grades_limits_exactly_as_the_backend_enforces_them() {
    let mut caps = LinuxBackend::CAPABILITIES;
    caps.enforces.memory = true;
    caps.enforces.pids = true;
    caps.enforces.cpu = false;
    let e = envelopes::docker_for(&caps).enforcement;
    assert_eq!(e.memory_limit, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.process_count_limit, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.cpu_limit, EnforcementLevel::NotEnforced);
    assert_eq!(e.filesystem_isolation, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.process_isolation, EnforcementLevel::ProviderEnforced);
    assert_eq!(e.read_only_mounts, EnforcementLevel::NotEnforced);
    assert_eq!(e.wall_clock_timeout, EnforcementLevel::RunnerEnforced);
}
