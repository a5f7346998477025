//! `openProcess`: "evidence disagreeing with the instance, fail
//! `open_process_identity`; the Runner then destroys the process under a
//! 30 s bound and combines both causes." The Runner "validates `evidence`
//! against the instance and against your own capability envelope before
//! transferring the handle".
//!
//! One test per evidence field the liar can corrupt; each shows the refusal
//! naming the field with both values, and the liar's ledger shows the
//! rejected handle destroyed exactly once. A destroy that hangs is cut off
//! at the runtime's bound and reported as `open_process_rollback` /
//! `timed_out` carrying the original refusal.

use crate::liar;
use std::time::{Duration, Instant};

use corral_contract::{
    Arguments, Environment, ErrorKind, Executable, FailureReason, OpenProcessRequest, Operation,
    ProcessId, RetentionMode, SandboxError, SandboxInstance, SandboxProcessEvidence,
    SandboxProcessRequest, SandboxProvider,
};
use liar::corrupt::corrupt_evidence;
use liar::fixtures::{
    active, assert_protocol_invalid, memory_liar, now, refused, rendered, runtime,
};
use liar::lie::{EvidenceLie, Lie};

fn open(instance: &SandboxInstance) -> OpenProcessRequest {
    OpenProcessRequest {
        instance_id: instance.instance_id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new("cat").expect("literal"),
            arguments: Arguments::default(),
            working_directory: None,
            environment: Environment::new(),
        },
    }
}

/// The evidence an honest provider gives for `request` in `instance`
/// (`process_id` and `started_at` are not compared for equality).
fn honest_evidence(
    request: &OpenProcessRequest,
    instance: &SandboxInstance,
) -> SandboxProcessEvidence {
    SandboxProcessEvidence {
        instance_id: instance.instance_id.clone(),
        provider: instance.provider.clone(),
        placement: instance.placement,
        process_id: ProcessId::new("any").expect("literal"),
        started_at: now(),
        executable: request.process.executable.clone(),
        arguments: request.process.arguments.clone(),
        working_directory: request.process.working_directory.clone(),
    }
}

fn field_json(evidence: &SandboxProcessEvidence, lie: EvidenceLie) -> String {
    match lie {
        EvidenceLie::InstanceId => rendered(&evidence.instance_id),
        EvidenceLie::Provider => rendered(&evidence.provider),
        EvidenceLie::Placement => rendered(&evidence.placement),
        EvidenceLie::StartedAtExpiry => evidence.started_at.to_string(),
        EvidenceLie::Executable => rendered(&evidence.executable),
        EvidenceLie::Arguments => rendered(&evidence.arguments),
        EvidenceLie::WorkingDirectory => rendered(&evidence.working_directory),
    }
}

async fn evidence_lies_about(lie: EvidenceLie) {
    let liar = memory_liar().telling(Lie::Evidence(lie));
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let request = open(&instance);

    let error = refused(runtime.open_process(request.clone()).await);

    let honest = honest_evidence(&request, &instance);
    let mut lied = honest.clone();
    corrupt_evidence(&mut lied, lie, &instance);
    let expected = match lie {
        EvidenceLie::StartedAtExpiry => format!("before {}", instance.expires_at),
        _ => field_json(&honest, lie),
    };
    assert_protocol_invalid(
        &error,
        Operation::OpenProcessIdentity,
        lie.field().as_str(),
        &expected,
        &field_json(&lied, lie),
    );
    assert_eq!(ledger.calls(Operation::OpenProcess), 1);
    assert_eq!(
        ledger.process_destroys(),
        1,
        "the refused process is destroyed exactly once"
    );
}

/// The honest baseline: matching evidence is accepted and the handle is
/// the caller's (the runtime destroys nothing).
#[tokio::test]
async fn open_process_accepts_evidence_that_agrees() {
    let liar = memory_liar();
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let request = open(&instance);
    let process = runtime
        .open_process(request.clone())
        .await
        .expect("honest evidence is accepted");
    let evidence = process.evidence();
    assert_eq!(evidence.instance_id, instance.instance_id);
    assert_eq!(evidence.executable, request.process.executable);
    assert_eq!(ledger.process_destroys(), 0);
    process
        .destroy()
        .await
        .expect("the caller tears its process down");
    assert_eq!(ledger.process_destroys(), 1);
}

macro_rules! evidence_tests {
    ($($name:ident => $lie:ident,)+) => {
        $(
            #[tokio::test]
            async fn $name() {
                evidence_lies_about(EvidenceLie::$lie).await;
            }
        )+
    };
}

evidence_tests! {
    open_process_rejects_evidence_of_another_instance => InstanceId,
    open_process_rejects_evidence_of_another_provider => Provider,
    open_process_rejects_evidence_of_another_placement => Placement,
    open_process_rejects_evidence_started_at_instance_expiry => StartedAtExpiry,
    open_process_rejects_evidence_of_another_executable => Executable,
    open_process_rejects_evidence_of_other_arguments => Arguments,
    open_process_rejects_evidence_of_another_working_directory => WorkingDirectory,
}

/// "destroys the process under a 30 s bound and combines both causes": a
/// destroy that hangs does not hang the call.
#[tokio::test]
async fn open_process_destroy_timeout_names_open_process_rollback() {
    const BOUND: Duration = Duration::from_millis(200);
    let liar = memory_liar()
        .telling(Lie::Evidence(EvidenceLie::InstanceId))
        .telling(Lie::ProcessDestroyHangs);
    let ledger = liar.ledger();
    let runtime = runtime(liar).with_rollback_bound(BOUND);
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;

    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        runtime.open_process(open(&instance)),
    )
    .await
    .unwrap_or_else(|_| panic!("a hanging process destroy hung the call"));
    let elapsed = started.elapsed();

    let error = refused(outcome);
    match &error {
        SandboxError::SandboxOperationFailed {
            operation,
            reason,
            cause: Some(cause),
        } => {
            assert_eq!(
                *operation,
                Operation::Rollback(corral_contract::Compensated::OpenProcess),
                "{error}"
            );
            assert_eq!(*reason, FailureReason::TimedOut, "{error}");
            assert_eq!(cause.kind(), ErrorKind::SandboxProtocolInvalid, "{error}");
            assert!(
                matches!(**cause, SandboxError::SandboxProtocolInvalid { operation: Operation::OpenProcessIdentity, ref field, .. } if field == "instance_id"),
                "{error}"
            );
        }
        other => {
            panic!("expected open_process_rollback timed_out with its cause, runtime said: {other}")
        }
    }
    assert!(
        elapsed >= BOUND,
        "gave up after {elapsed:?}, before the bound"
    );
    assert_eq!(ledger.process_destroys(), 1);
}
