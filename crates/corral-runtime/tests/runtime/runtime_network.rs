//! `network_policy` "covers three distinct conditions … 1. you do not support
//! the requested mode; 2. your advertised egress grade does not meet what the
//! policy requires; 3. the retained profile's own network policy does not
//! satisfy the *current* policy shape at all, which the runtime re-checks on
//! `activate`, `execute`, `resume`, and `openProcess`, not only at
//! selection."

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;
use corral_runtime::runtime::NetworkShape;

fn network(capability: Option<CapabilityField>) -> SandboxError {
    SandboxError::SandboxCapabilityUnavailable {
        requirement: Requirement::NetworkPolicy,
        capability,
    }
}

fn allowlist_request() -> SandboxProvisionRequest {
    request_for(profile(RetentionMode::Durable, allowlist()), two_mounts())
}

fn kernel_only() -> NetworkShape {
    NetworkShape {
        minimum_egress: EgressCertification::KernelEnforced,
        ..NetworkShape::default()
    }
}

fn advisory_provider() -> Fake {
    let mut declaration = full_declaration();
    declaration.egress_certification = EgressCertification::AdvisoryFilter;
    Fake::new(caps(declaration))
}

#[tokio::test]
async fn provision_refuses_a_mode_the_provider_does_not_enforce() {
    let mut declaration = full_declaration();
    declaration.network_modes = vec![NetworkMode::Allowlist];
    let rt = runtime(Fake::new(caps(declaration)));
    let err = rt.provision(zdr_request()).await.unwrap_err();
    assert_eq!(err, network(Some(CapabilityField::NetworkModes)));
    assert_eq!(rt.provider().log.calls(Operation::Provision), 0);
}

#[tokio::test]
async fn provision_refuses_an_allowlist_on_an_uncertified_provider() {
    let mut declaration = full_declaration();
    declaration.egress_certification = EgressCertification::Unsupported;
    let rt = runtime(Fake::new(caps(declaration)));
    let err = rt.provision(allowlist_request()).await.unwrap_err();
    assert_eq!(err, network(Some(CapabilityField::EgressCertification)));
    assert_eq!(rt.provider().log.calls(Operation::Provision), 0);
}

#[tokio::test]
async fn activate_rechecks_the_retained_policy_against_the_current_shape_before_calling_provider() {
    let rt = runtime(advisory_provider());
    let id = provisioned(&rt, allowlist_request()).await;
    rt.set_network_shape(kernel_only());
    let err = rt.activate(id).await.unwrap_err();
    assert_eq!(err, network(Some(CapabilityField::EgressCertification)));
    assert_eq!(rt.provider().log.calls(Operation::Activate), 0);
}

#[tokio::test]
async fn execute_rechecks_the_retained_policy_against_the_current_shape_before_calling_provider() {
    let rt = runtime(advisory_provider());
    let id = active(&rt, allowlist_request()).await;
    rt.execute(ExecuteRequest {
        instance_id: id.clone(),
        command: command(30, 64),
    })
    .await
    .unwrap();
    rt.set_network_shape(NetworkShape {
        modes: vec![NetworkMode::None],
        ..NetworkShape::default()
    });
    let err = rt
        .execute(ExecuteRequest {
            instance_id: id,
            command: command(30, 64),
        })
        .await
        .unwrap_err();
    assert_eq!(err, network(None));
    assert_eq!(rt.provider().log.calls(Operation::Execute), 1);
}

#[tokio::test]
async fn open_process_rechecks_the_retained_policy_against_the_current_shape_before_calling_provider()
 {
    let rt = runtime(advisory_provider());
    let id = active(&rt, allowlist_request()).await;
    rt.set_network_shape(kernel_only());
    let err = rt
        .open_process(OpenProcessRequest {
            instance_id: id,
            process: SandboxProcessRequest {
                executable: Executable::new("agent").unwrap(),
                arguments: Arguments::default(),
                working_directory: None,
                environment: Environment::new(),
            },
        })
        .await
        .err()
        .unwrap();
    assert_eq!(err, network(Some(CapabilityField::EgressCertification)));
    assert_eq!(rt.provider().log.calls(Operation::OpenProcess), 0);
}

#[tokio::test]
async fn resume_rechecks_the_requested_policy_against_the_current_shape_before_calling_provider() {
    let rt = runtime(advisory_provider());
    let id = active(&rt, allowlist_request()).await;
    let snapshot = rt
        .snapshot(SnapshotRequest {
            instance_id: id,
            expires_at: ts("2026-12-29T00:00:00.000Z"),
        })
        .await
        .unwrap()
        .value;
    rt.set_network_shape(kernel_only());
    let err = rt
        .resume(ResumeRequest {
            request: allowlist_request(),
            snapshot,
        })
        .await
        .err()
        .unwrap();
    assert_eq!(err, network(Some(CapabilityField::EgressCertification)));
    assert_eq!(rt.provider().log.calls(Operation::Resume), 0);
}

#[tokio::test]
async fn a_none_policy_is_unaffected_by_the_egress_grade() {
    let rt = runtime(advisory_provider());
    rt.set_network_shape(kernel_only());
    let id = active(&rt, zdr_request()).await;
    rt.execute(ExecuteRequest {
        instance_id: id,
        command: command(30, 64),
    })
    .await
    .unwrap();
}
