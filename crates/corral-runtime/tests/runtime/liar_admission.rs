//! What the Runner refuses **before calling you**: "the Runner refuses a
//! mismatch as `SandboxLifecycleConflict{operation, expected, actual}`
//! before calling you"; "You never have to decide whether a path is legal.
//! The Runner admits it before you are called"; "`execute` additionally
//! refuses a `timeout_seconds` above the profile's `max_duration_seconds` —
//! that check happens in the Runner"; "`snapshot` | `active`, durable only".
//!
//! The liar would answer every one of these calls; its ledger proves the
//! runtime never asked it.

use crate::liar;
use corral_contract::{
    ConflictState, FailureReason, FileContent, FileMode, InstanceState, MaximumBytes, MountAccess,
    MountSpec, Mounts, Operation, ReadFileRequest, Requirement, RetentionMode, SandboxError,
    SandboxProvider, SnapshotRequest, TimeoutSeconds, WriteFileRequest,
};
use liar::fixtures::{
    LiarRuntime, active, execute_request, memory_liar, path, provision_request, refused, runtime,
};
use liar::flows::in_a_day;

fn liar_runtime() -> LiarRuntime {
    runtime(memory_liar())
}

fn calls(runtime: &LiarRuntime, operation: Operation) -> usize {
    runtime.provider().ledger().calls(operation)
}

/// "`execute` | Accepts `active`": a provisioning instance is a lifecycle
/// conflict naming the state it is in.
#[tokio::test]
async fn lifecycle_rejects_execute_while_provisioning() {
    let runtime = liar_runtime();
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    let provisioned = runtime
        .provision(request)
        .await
        .expect("an honest provision")
        .value;
    let error = refused(
        runtime
            .execute(execute_request(&provisioned, &["true"], 16))
            .await,
    );
    assert_eq!(
        error,
        SandboxError::lifecycle_conflict(
            Operation::Execute,
            &[InstanceState::Active],
            ConflictState::Provisioning
        )
    );
    assert_eq!(calls(&runtime, Operation::Execute), 0);
}

/// "`activate` | Accepts `provisioning`": activating twice is a conflict.
#[tokio::test]
async fn lifecycle_rejects_activate_of_an_active_instance() {
    let runtime = liar_runtime();
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let error = refused(runtime.activate(instance.instance_id).await);
    assert_eq!(
        error,
        SandboxError::lifecycle_conflict(
            Operation::Activate,
            &[InstanceState::Provisioning],
            ConflictState::Active
        )
    );
    assert_eq!(calls(&runtime, Operation::Activate), 1, "only the first");
}

/// A destroyed instance accepts nothing but another (idempotent) destroy.
#[tokio::test]
async fn lifecycle_rejects_execute_after_destroy() {
    let runtime = liar_runtime();
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    runtime
        .destroy(instance.instance_id.clone())
        .await
        .expect("destroy");
    let error = refused(
        runtime
            .execute(execute_request(&instance, &["true"], 16))
            .await,
    );
    assert_eq!(
        error,
        SandboxError::lifecycle_conflict(
            Operation::Execute,
            &[InstanceState::Active],
            ConflictState::Destroyed
        )
    );
    assert_eq!(calls(&runtime, Operation::Execute), 0);
}

/// "A mount plan overlapping `/dev`, `/proc`, `/run`, `/sys`, `/tmp`, … is
/// refused at selection as `SandboxCapabilityUnavailable{requirement:
/// \"mounts\"}`".
#[tokio::test]
async fn admission_rejects_a_mount_over_a_reserved_root() {
    let runtime = liar_runtime();
    let mut request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    request.mounts = Mounts::new(vec![MountSpec {
        path: path("/run/cache"),
        access: MountAccess::ReadWrite,
    }])
    .expect("one mount");
    let error = refused(runtime.provision(request).await);
    assert_eq!(
        error,
        SandboxError::capability_unavailable(Requirement::Mounts)
    );
    assert_eq!(calls(&runtime, Operation::Provision), 0);
}

/// "Write scope narrows at activation … Once `active`, only the output
/// tree remains writable through this trusted port."
#[tokio::test]
async fn admission_rejects_a_mount_write_once_active() {
    let runtime = liar_runtime();
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let error = refused(
        runtime
            .write_file(WriteFileRequest {
                instance_id: instance.instance_id,
                path: path("/workspace/app/late.txt"),
                content: FileContent::new(b"late".to_vec()).expect("small"),
                mode: FileMode::default(),
            })
            .await,
    );
    assert_eq!(
        error,
        SandboxError::lifecycle_conflict(
            Operation::WriteFile,
            &[InstanceState::Provisioning],
            ConflictState::Active
        )
    );
    assert_eq!(calls(&runtime, Operation::WriteFile), 0);
}

/// "… a path outside every mount and the output tree".
#[tokio::test]
async fn admission_rejects_a_write_outside_every_mount() {
    let runtime = liar_runtime();
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    let provisioned = runtime
        .provision(request)
        .await
        .expect("an honest provision")
        .value;
    let error = refused(
        runtime
            .write_file(WriteFileRequest {
                instance_id: provisioned.instance_id,
                path: path("/etc/passwd"),
                content: FileContent::new(b"root".to_vec()).expect("small"),
                mode: FileMode::default(),
            })
            .await,
    );
    assert_eq!(
        error,
        SandboxError::operation_failed(Operation::WriteFile, FailureReason::OutsideRoot)
    );
    assert_eq!(calls(&runtime, Operation::WriteFile), 0);
}

/// "`readFile` and `readFiles` receive an `allowed_root` the Runtime
/// derived from the instance's own mounts": a root that is none of them is
/// refused.
#[tokio::test]
async fn admission_rejects_a_read_root_that_is_not_the_instances() {
    let runtime = liar_runtime();
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let error = refused(
        runtime
            .read_file(
                ReadFileRequest::new(
                    instance.instance_id,
                    path("/etc/passwd"),
                    path("/etc"),
                    MaximumBytes::new(64).expect("literal"),
                )
                .expect("textually under its root"),
            )
            .await,
    );
    assert_eq!(
        error,
        SandboxError::operation_failed(Operation::ReadFile, FailureReason::OutsideRoot)
    );
    assert_eq!(calls(&runtime, Operation::ReadFile), 0);
}

/// "`execute` additionally refuses a `timeout_seconds` above the profile's
/// `max_duration_seconds` — that check happens in the Runner".
#[tokio::test]
async fn admission_rejects_a_timeout_over_max_duration() {
    let runtime = liar_runtime();
    let (request, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let mut execute = execute_request(&instance, &["true"], 16);
    execute.command.timeout_seconds =
        TimeoutSeconds::new(request.profile.max_duration_seconds.get() + 1).expect("in range");
    let error = refused(runtime.execute(execute).await);
    assert_eq!(
        error,
        SandboxError::capability_unavailable(Requirement::Resources)
    );
    assert_eq!(calls(&runtime, Operation::Execute), 0);
}

/// "`snapshot` | `active`, durable only": a ZDR instance's snapshot is
/// forbidden before the provider could capture anything.
#[tokio::test]
async fn admission_rejects_a_snapshot_of_a_zdr_instance() {
    let runtime = liar_runtime();
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let error = refused(
        runtime
            .snapshot(SnapshotRequest {
                instance_id: instance.instance_id.clone(),
                expires_at: in_a_day(),
            })
            .await,
    );
    assert_eq!(
        error,
        SandboxError::SandboxSnapshotForbidden {
            instance_id: instance.instance_id,
            retention: RetentionMode::EphemeralZdr,
        }
    );
    assert_eq!(calls(&runtime, Operation::Snapshot), 0);
}
