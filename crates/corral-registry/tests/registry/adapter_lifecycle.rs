//! `writeFile`, `activate` and `execute` on both backends.

use crate::adapter_support;
use crate::sp;
use adapter_support::*;
use corral_backend::Backend;
use corral_contract::*;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::adapter::record::{InstanceRecord, RECORD_PATH};

fn conflict(operation: Operation, expected: InstanceState, actual: ConflictState) -> SandboxError {
    SandboxError::lifecycle_conflict(operation, &[expected], actual)
}

/// "During provisioning, writeFile may target any declared mount or the
/// output tree. Once active, only the output tree remains writable."
async fn write_scope_narrows_at_activation<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = provision(adapter, &Spec::default()).await;
    adapter
        .write_file(write(&instance, "/data/in/staged.txt", b"mount"))
        .await
        .unwrap();
    adapter
        .write_file(write(&instance, "/mnt/session/outputs/early.txt", b"out"))
        .await
        .unwrap();
    let outside = adapter
        .write_file(write(&instance, "/workspace/.checkfu/instance.json", b"{}"))
        .await
        .unwrap_err();
    assert_eq!(
        outside,
        SandboxError::operation_failed(Operation::WriteFile, FailureReason::OutsideRoot)
    );
    adapter
        .activate(instance.instance_id.clone())
        .await
        .unwrap();
    for mount_path in ["/data/late.txt", "/project/late.txt"] {
        let err = adapter
            .write_file(write(&instance, mount_path, b"late"))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            conflict(
                Operation::WriteFile,
                InstanceState::Provisioning,
                ConflictState::Active
            ),
            "{mount_path}"
        );
    }
    adapter
        .write_file(write(&instance, "/mnt/session/outputs/late.txt", b"out"))
        .await
        .unwrap();
    let staged = backend_read(adapter, &instance.instance_id, "/data/in/staged.txt").await;
    assert_eq!(staged.as_deref(), Some(&b"mount"[..]));
}

#[tokio::test]
async fn write_scope_narrows_at_activation_on_memory() {
    write_scope_narrows_at_activation(&memory()).await;
}

#[tokio::test]
async fn write_scope_narrows_at_activation_on_local() {
    let (adapter, _dir) = local();
    write_scope_narrows_at_activation(&adapter).await;
}

/// `activate`: "Seal staged mounts and make the instance runnable; return
/// it in active"; accepts `provisioning` only.
async fn activate_seals_and_returns_active<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (request, instance) = provision(adapter, &Spec::default()).await;
    let active = adapter
        .activate(instance.instance_id.clone())
        .await
        .unwrap()
        .value;
    assert!(
        identity_mismatches(
            &request,
            &active,
            adapter.capabilities(),
            InstanceState::Active
        )
        .is_empty()
    );
    let bytes = backend_read(adapter, &active.instance_id, RECORD_PATH)
        .await
        .unwrap();
    let record: InstanceRecord = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(record.state, InstanceState::Active);
    assert!(record.sealed);
    let again = refused(adapter.activate(active.instance_id.clone()).await);
    assert_eq!(
        again,
        conflict(
            Operation::Activate,
            InstanceState::Provisioning,
            ConflictState::Active
        )
    );
}

#[tokio::test]
async fn activate_seals_and_returns_active_on_memory() {
    activate_seals_and_returns_active(&memory()).await;
}

#[tokio::test]
async fn activate_seals_and_returns_active_on_local() {
    let (adapter, _dir) = local();
    activate_seals_and_returns_active(&adapter).await;
}

#[tokio::test]
async fn activate_rollback_returns_the_instance_to_provisioning_idempotently() {
    let adapter = memory();
    let (_, instance) = provision(&adapter, &Spec::default()).await;
    let (_, rollback) = adapter
        .activate(instance.instance_id.clone())
        .await
        .unwrap()
        .into_parts();
    rollback.rollback().await.unwrap();
    rollback.rollback().await.unwrap();
    // Provisioning again: mounts are writable, execute is refused.
    adapter
        .write_file(write(&instance, "/data/after.txt", b"x"))
        .await
        .unwrap();
    let err = adapter.execute(shell(&instance, "true")).await.unwrap_err();
    assert_eq!(
        err,
        conflict(
            Operation::Execute,
            InstanceState::Active,
            ConflictState::Provisioning
        )
    );
    // And it can be activated again.
    adapter
        .activate(instance.instance_id.clone())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_forged_record_is_refused_as_an_integrity_mismatch() {
    // The trust assumption: the workload may rewrite the control root on
    // these backends; the labels vouch for the record's request.
    let adapter = memory();
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let sandbox = sandbox_of(&adapter, &instance.instance_id).await;
    let bytes = adapter
        .backend()
        .files()
        .read(&sandbox, &sp(RECORD_PATH))
        .await
        .unwrap();
    let mut forged: InstanceRecord = serde_json::from_slice(&bytes).unwrap();
    forged.request.expires_at = in_seconds(86_400 * 365);
    adapter
        .backend()
        .files()
        .write(
            &sandbox,
            &sp(RECORD_PATH),
            &serde_json::to_vec(&forged).unwrap(),
            None,
        )
        .await
        .unwrap();
    let err = adapter.execute(shell(&instance, "true")).await.unwrap_err();
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::Execute, FailureReason::IntegrityMismatch)
    );
}

/// `execute`: argv or `sh -c`, stdin, environment, working directory; one
/// exit cause; a monotonic interval.
async fn execute_runs_the_command_as_asked<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let mut request = shell(
        &instance,
        "cat; echo \"[$GREETING]\"; pwd; echo oops >&2; exit 3",
    );
    request.command.stdin = Some(StdinBytes::new(b"from stdin\n".to_vec()).unwrap());
    request.command.environment = Environment::new().with("GREETING", "hello").unwrap();
    request.command.working_directory = Some(path("/mnt/session/outputs"));
    let result = adapter.execute(request.clone()).await.unwrap();
    assert_eq!(result.exit, ExitCause::Code(ExitCode::from(3)));
    let stdout = String::from_utf8(result.stdout.content.to_vec()).unwrap();
    assert!(stdout.starts_with("from stdin\n[hello]\n"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("/mnt/session/outputs"),
        "{stdout}"
    );
    assert_eq!(&result.stderr.content[..], b"oops\n");
    assert!(!result.stdout.truncated && !result.stderr.truncated);
    assert!(result.interval.finished_at() >= result.interval.started_at());
    result.validate_against(&request.command).unwrap();
    let argv = ExecuteRequest {
        instance_id: instance.instance_id.clone(),
        command: SandboxCommand::new(
            CommandLine::Argv {
                argv: Argv::new(["echo", "a b", "c"]).unwrap(),
            },
            TimeoutSeconds::new(10).unwrap(),
            OutputLimitBytes::new(100).unwrap(),
        ),
    };
    let result = adapter.execute(argv).await.unwrap();
    assert_eq!(result.exit, ExitCause::Code(ExitCode::SUCCESS));
    assert_eq!(&result.stdout.content[..], b"a b c\n");
}

#[tokio::test]
async fn execute_runs_the_command_as_asked_on_memory() {
    execute_runs_the_command_as_asked(&memory()).await;
}

#[tokio::test]
async fn execute_runs_the_command_as_asked_on_local() {
    let (adapter, _dir) = local();
    execute_runs_the_command_as_asked(&adapter).await;
}

/// "stdout or stderr over output_limit_bytes" is refused by the Runtime:
/// the adapter keeps exactly the limit and marks the stream truncated.
async fn execute_output_is_bounded_per_stream<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let mut request = shell(
        &instance,
        "yes | head -c 100000; yes | head -c 50000 >&2; echo small >&2",
    );
    request.command.output_limit_bytes = OutputLimitBytes::new(1000).unwrap();
    let result = adapter.execute(request.clone()).await.unwrap();
    assert_eq!(result.exit, ExitCause::Code(ExitCode::SUCCESS));
    assert_eq!(result.stdout.content.len(), 1000);
    assert!(result.stdout.truncated);
    assert_eq!(result.stderr.content.len(), 1000);
    assert!(result.stderr.truncated);
    assert!(result.stdout.content.starts_with(b"y\ny\n"));
    result.validate_against(&request.command).unwrap();
}

#[tokio::test]
async fn execute_output_is_bounded_per_stream_on_memory() {
    execute_output_is_bounded_per_stream(&memory()).await;
}

#[tokio::test]
async fn execute_output_is_bounded_per_stream_on_local() {
    let (adapter, _dir) = local();
    execute_output_is_bounded_per_stream(&adapter).await;
}

/// A backend timeout is `ExitCause::TimedOut` with the output captured
/// before it.
async fn execute_timeout_is_timed_out_with_output<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let mut request = shell(&instance, "echo before; sleep 30; echo after");
    request.command.timeout_seconds = TimeoutSeconds::new(1).unwrap();
    let result = adapter.execute(request).await.unwrap();
    assert_eq!(result.exit, ExitCause::TimedOut);
    assert_eq!(&result.stdout.content[..], b"before\n");
    assert!(result.interval.duration_millis() >= 900);
}

#[tokio::test]
async fn execute_timeout_is_timed_out_with_output_on_memory() {
    execute_timeout_is_timed_out_with_output(&memory()).await;
}

#[tokio::test]
async fn execute_timeout_is_timed_out_with_output_on_local() {
    let (adapter, _dir) = local();
    execute_timeout_is_timed_out_with_output(&adapter).await;
}

#[tokio::test]
async fn execute_accepts_active_instances_only() {
    let adapter = memory();
    let (_, instance) = provision(&adapter, &Spec::default()).await;
    let err = adapter.execute(shell(&instance, "true")).await.unwrap_err();
    assert_eq!(
        err,
        conflict(
            Operation::Execute,
            InstanceState::Active,
            ConflictState::Provisioning
        )
    );
    let unknown = ExecuteRequest {
        instance_id: InstanceId::new("ci-unknown").unwrap(),
        ..shell(&instance, "true")
    };
    assert_eq!(
        adapter.execute(unknown).await.unwrap_err(),
        SandboxError::SandboxInstanceNotFound {
            instance_id: InstanceId::new("ci-unknown").unwrap()
        }
    );
}

#[tokio::test]
async fn a_program_that_cannot_start_is_spawn_failed() {
    let (adapter, _dir) = local();
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let request = ExecuteRequest {
        instance_id: instance.instance_id.clone(),
        command: SandboxCommand::new(
            CommandLine::Argv {
                argv: Argv::new(["corral-no-such-program"]).unwrap(),
            },
            TimeoutSeconds::new(10).unwrap(),
            OutputLimitBytes::new(100).unwrap(),
        ),
    };
    assert_eq!(
        adapter.execute(request).await.unwrap_err(),
        SandboxError::operation_failed(Operation::Execute, FailureReason::SpawnFailed)
    );
}
