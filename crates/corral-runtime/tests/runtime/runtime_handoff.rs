//! The allocation handoff: "The Runner invokes it at most once, and only when
//! it rejects or is interrupted before taking ownership of `value`" and
//! "`rollback` is bounded at 30 seconds. Exceeding it does not hang the Run:
//! the Runner detaches the fiber, fails with a `SandboxOperationFailed`
//! naming the operation's `_rollback` suffix and a `timed_out` reason,
//! combines it with the original rejection cause".

use crate::common_runtime;
use std::time::{Duration, Instant};

use common_runtime::*;
use corral_contract::*;
use corral_runtime::runtime::InstanceStatus;

fn lying_lease(_: Operation, i: &mut SandboxInstance) {
    i.lease_id = LeaseId::new("lease-stolen").unwrap();
}

fn identity_cause() -> SandboxError {
    SandboxError::SandboxProtocolInvalid {
        operation: Operation::InstanceIdentity,
        field: "lease_id".into(),
        expected: "\"lease-1\"".into(),
        actual: "\"lease-stolen\"".into(),
    }
}

#[tokio::test]
async fn rejected_handoff_invokes_rollback_exactly_once() {
    let rt = runtime(Fake::new(full_caps()));
    rt.provider().tamper_instance(lying_lease);
    let err = rt.provision(zdr_request()).await.unwrap_err();
    assert_eq!(err, identity_cause());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
    assert_eq!(rt.provider().log.all_rollbacks(), 1);
}

#[tokio::test]
async fn accepted_handoff_does_not_invoke_rollback_and_hands_it_on() {
    let rt = runtime(Fake::new(full_caps()));
    let handoff = rt.provision(zdr_request()).await.unwrap();
    let id = handoff.value.instance_id.clone();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rt.provider().log.all_rollbacks(), 0);
    assert!(rt.provider().has_instance(&id));
    // The outer caller may still compensate; the provider's own rollback runs.
    handoff.rollback.rollback().await.unwrap();
    assert_eq!(
        rt.provider()
            .log
            .rollbacks_completed(Compensated::Provision),
        1
    );
    assert!(!rt.provider().has_instance(&id));
}

#[tokio::test]
async fn a_handed_on_rollback_makes_the_runtime_forget_the_instance() {
    let rt = runtime(Fake::new(full_caps()));
    let handoff = rt.provision(zdr_request()).await.unwrap();
    let id = handoff.value.instance_id.clone();
    assert_eq!(
        rt.instance_status(&id),
        InstanceStatus::Live(InstanceState::Provisioning)
    );
    handoff.rollback.rollback().await.unwrap();
    assert_eq!(rt.instance_status(&id), InstanceStatus::Destroyed);
    let err = rt.activate(id).await.unwrap_err();
    assert_eq!(
        err,
        SandboxError::lifecycle_conflict(
            Operation::Activate,
            &[InstanceState::Provisioning],
            ConflictState::Destroyed
        )
    );
}

#[tokio::test]
async fn rollback_exceeding_its_bound_is_detached_and_combined_with_the_rejection() {
    let rt = runtime(Fake::new(full_caps())).with_rollback_bound(Duration::from_millis(200));
    rt.provider().tamper_instance(lying_lease);
    rt.provider().knobs(|k| k.rollback = RollbackMode::Hang);
    let started = Instant::now();
    let err = rt.provision(zdr_request()).await.unwrap_err();
    let waited = started.elapsed();
    assert_eq!(
        err,
        SandboxError::rollback_timed_out(Compensated::Provision, identity_cause())
    );
    assert_eq!(
        err.to_string(),
        "SandboxOperationFailed: operation provision_rollback: reason timed_out; cause: \
         SandboxProtocolInvalid: operation instance_identity: field lease_id: \
         expected \"lease-1\", actual \"lease-stolen\""
    );
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
    assert_eq!(
        rt.provider()
            .log
            .rollbacks_completed(Compensated::Provision),
        0
    );
}

#[tokio::test]
async fn a_timed_out_rollback_keeps_running_detached_and_is_not_invoked_again() {
    let rt = runtime(Fake::new(full_caps())).with_rollback_bound(Duration::from_millis(100));
    rt.provider().tamper_instance(lying_lease);
    rt.provider()
        .knobs(|k| k.rollback = RollbackMode::Slow(Duration::from_millis(300)));
    let err = rt.provision(zdr_request()).await.unwrap_err();
    assert_eq!(
        err,
        SandboxError::rollback_timed_out(Compensated::Provision, identity_cause())
    );
    assert_eq!(
        rt.provider()
            .log
            .rollbacks_completed(Compensated::Provision),
        0
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        rt.provider()
            .log
            .rollbacks_completed(Compensated::Provision),
        1
    );
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
    assert!(!rt.provider().has_instance(&id("inst-1")));
}

#[tokio::test]
async fn a_failed_rollback_is_combined_with_the_rejection() {
    let rt = runtime(Fake::new(full_caps()));
    rt.provider().tamper_instance(lying_lease);
    rt.provider().knobs(|k| {
        k.rollback = RollbackMode::Fail(SandboxError::operation_failed(
            Operation::Provision,
            FailureReason::PlatformUnavailable,
        ))
    });
    let err = rt.provision(zdr_request()).await.unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxOperationFailed {
            operation: Operation::Rollback(Compensated::Provision),
            reason: FailureReason::PlatformUnavailable,
            cause: Some(Box::new(identity_cause())),
        }
    );
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
}

#[tokio::test]
async fn an_interrupted_runtime_still_completes_the_rollback_once() {
    let rt = runtime(Fake::new(full_caps()));
    rt.provider().tamper_instance(lying_lease);
    rt.provider()
        .knobs(|k| k.rollback = RollbackMode::Slow(Duration::from_millis(200)));
    // The caller gives up while the runtime is waiting on the rollback.
    let interrupted =
        tokio::time::timeout(Duration::from_millis(30), rt.provision(zdr_request())).await;
    assert!(
        interrupted.is_err(),
        "the provision was expected to be interrupted"
    );
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        rt.provider()
            .log
            .rollbacks_completed(Compensated::Provision),
        1
    );
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
    assert!(!rt.provider().has_instance(&id("inst-1")));
}

#[tokio::test]
async fn a_provider_error_is_no_handoff_and_invokes_no_rollback() {
    let rt = runtime(Fake::new(full_caps()));
    let instance = provisioned(&rt, zdr_request()).await;
    // The instance vanishes behind the runtime's back.
    rt.provider().destroy(instance.clone()).await.unwrap();
    let err = rt.activate(instance.clone()).await.unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxInstanceNotFound {
            instance_id: instance
        }
    );
    assert_eq!(rt.provider().log.calls(Operation::Activate), 1);
    assert_eq!(rt.provider().log.all_rollbacks(), 0);
}

#[tokio::test]
async fn each_handoff_member_rolls_back_under_its_own_name() {
    let rt = runtime(Fake::new(full_caps())).with_rollback_bound(Duration::from_millis(100));
    let instance = active(&rt, durable_request()).await;
    rt.provider().knobs(|k| {
        k.rollback = RollbackMode::Hang;
        k.disposition = Some(std::sync::Arc::new(|d: &mut ReleaseDisposition| {
            *d = ReleaseDisposition::Destroyed
        }));
    });
    let err = rt
        .release(ReleaseRequest {
            instance_id: instance,
            snapshot_expires_at: Some(ts("2026-12-29T00:00:00.000Z")),
        })
        .await
        .unwrap_err();
    match err {
        SandboxError::SandboxOperationFailed {
            operation,
            reason,
            cause,
        } => {
            assert_eq!(operation.to_string(), "release_rollback");
            assert_eq!(reason, FailureReason::TimedOut);
            let cause = cause.expect("the original rejection");
            protocol_invalid(&cause, Operation::Release, "disposition");
        }
        other => panic!("unexpected {other}"),
    }
}
