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
    SandboxInstance, SandboxProvider, SnapshotRequest, TimeoutSeconds, WriteFileRequest,
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

/// An honestly provisioned instance, not yet activated.
async fn provisioned(runtime: &LiarRuntime) -> SandboxInstance {
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    runtime
        .provision(request)
        .await
        .expect("an honest provision")
        .value
}

/// One call the Runner refuses before the provider hears of it.
#[derive(Debug, Clone, Copy)]
enum Inadmissible {
    /// "`execute` | Accepts `active`": a provisioning instance is a
    /// lifecycle conflict naming the state it is in.
    ExecuteWhileProvisioning,
    /// "`activate` | Accepts `provisioning`": activating twice is a conflict.
    ActivateOfAnActiveInstance,
    /// A destroyed instance accepts nothing but another (idempotent) destroy.
    ExecuteAfterDestroy,
    /// "A mount plan overlapping `/dev`, `/proc`, `/run`, `/sys`, `/tmp`, …
    /// is refused at selection as `SandboxCapabilityUnavailable{requirement:
    /// \"mounts\"}`".
    MountOverAReservedRoot,
    /// "Write scope narrows at activation … Once `active`, only the output
    /// tree remains writable through this trusted port."
    MountWriteOnceActive,
    /// "… a path outside every mount and the output tree".
    WriteOutsideEveryMount,
    /// "`readFile` and `readFiles` receive an `allowed_root` the Runtime
    /// derived from the instance's own mounts": a root that is none of them
    /// is refused.
    ReadRootThatIsNotTheInstances,
    /// "`execute` additionally refuses a `timeout_seconds` above the
    /// profile's `max_duration_seconds` — that check happens in the Runner".
    TimeoutOverMaxDuration,
    /// "`snapshot` | `active`, durable only": a ZDR instance's snapshot is
    /// forbidden before the provider could capture anything.
    SnapshotOfAZdrInstance,
}

/// What one inadmissible call came to: the refusal it got, the refusal the
/// contract names, and the operation whose provider calls the row counts.
struct Outcome {
    refusal: SandboxError,
    expected: SandboxError,
    operation: Operation,
    /// Calls of `operation` the provider may have seen: only those the
    /// row's own setup made.
    provider_calls: usize,
}

impl Inadmissible {
    const ALL: [Inadmissible; 9] = [
        Inadmissible::ExecuteWhileProvisioning,
        Inadmissible::ActivateOfAnActiveInstance,
        Inadmissible::ExecuteAfterDestroy,
        Inadmissible::MountOverAReservedRoot,
        Inadmissible::MountWriteOnceActive,
        Inadmissible::WriteOutsideEveryMount,
        Inadmissible::ReadRootThatIsNotTheInstances,
        Inadmissible::TimeoutOverMaxDuration,
        Inadmissible::SnapshotOfAZdrInstance,
    ];

    /// Sets up a fresh instance on `runtime` and makes the refused call.
    async fn attempt(self, runtime: &LiarRuntime) -> Outcome {
        match self {
            Inadmissible::ExecuteWhileProvisioning => {
                let provisioned = provisioned(runtime).await;
                Outcome {
                    refusal: refused(
                        runtime
                            .execute(execute_request(&provisioned, &["true"], 16))
                            .await,
                    ),
                    expected: SandboxError::lifecycle_conflict(
                        Operation::Execute,
                        &[InstanceState::Active],
                        ConflictState::Provisioning,
                    ),
                    operation: Operation::Execute,
                    provider_calls: 0,
                }
            }
            Inadmissible::ActivateOfAnActiveInstance => {
                let (_, instance) = active(runtime, RetentionMode::EphemeralZdr).await;
                Outcome {
                    refusal: refused(runtime.activate(instance.instance_id).await),
                    expected: SandboxError::lifecycle_conflict(
                        Operation::Activate,
                        &[InstanceState::Provisioning],
                        ConflictState::Active,
                    ),
                    operation: Operation::Activate,
                    provider_calls: 1,
                }
            }
            Inadmissible::ExecuteAfterDestroy => {
                let (_, instance) = active(runtime, RetentionMode::EphemeralZdr).await;
                runtime
                    .destroy(instance.instance_id.clone())
                    .await
                    .expect("destroy");
                Outcome {
                    refusal: refused(
                        runtime
                            .execute(execute_request(&instance, &["true"], 16))
                            .await,
                    ),
                    expected: SandboxError::lifecycle_conflict(
                        Operation::Execute,
                        &[InstanceState::Active],
                        ConflictState::Destroyed,
                    ),
                    operation: Operation::Execute,
                    provider_calls: 0,
                }
            }
            Inadmissible::MountOverAReservedRoot => {
                let mut request =
                    provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
                request.mounts = Mounts::new(vec![MountSpec {
                    path: path("/run/cache"),
                    access: MountAccess::ReadWrite,
                }])
                .expect("one mount");
                Outcome {
                    refusal: refused(runtime.provision(request).await),
                    expected: SandboxError::capability_unavailable(Requirement::Mounts),
                    operation: Operation::Provision,
                    provider_calls: 0,
                }
            }
            Inadmissible::MountWriteOnceActive => {
                let (_, instance) = active(runtime, RetentionMode::EphemeralZdr).await;
                Outcome {
                    refusal: refused(
                        runtime
                            .write_file(WriteFileRequest {
                                instance_id: instance.instance_id,
                                path: path("/workspace/app/late.txt"),
                                content: FileContent::new(b"late".to_vec()).expect("small"),
                                mode: FileMode::default(),
                            })
                            .await,
                    ),
                    expected: SandboxError::lifecycle_conflict(
                        Operation::WriteFile,
                        &[InstanceState::Provisioning],
                        ConflictState::Active,
                    ),
                    operation: Operation::WriteFile,
                    provider_calls: 0,
                }
            }
            Inadmissible::WriteOutsideEveryMount => {
                let provisioned = provisioned(runtime).await;
                Outcome {
                    refusal: refused(
                        runtime
                            .write_file(WriteFileRequest {
                                instance_id: provisioned.instance_id,
                                path: path("/etc/passwd"),
                                content: FileContent::new(b"root".to_vec()).expect("small"),
                                mode: FileMode::default(),
                            })
                            .await,
                    ),
                    expected: SandboxError::operation_failed(
                        Operation::WriteFile,
                        FailureReason::OutsideRoot,
                    ),
                    operation: Operation::WriteFile,
                    provider_calls: 0,
                }
            }
            Inadmissible::ReadRootThatIsNotTheInstances => {
                let (_, instance) = active(runtime, RetentionMode::EphemeralZdr).await;
                let read = ReadFileRequest::new(
                    instance.instance_id,
                    path("/etc/passwd"),
                    path("/etc"),
                    MaximumBytes::new(64).expect("literal"),
                )
                .expect("textually under its root");
                Outcome {
                    refusal: refused(runtime.read_file(read).await),
                    expected: SandboxError::operation_failed(
                        Operation::ReadFile,
                        FailureReason::OutsideRoot,
                    ),
                    operation: Operation::ReadFile,
                    provider_calls: 0,
                }
            }
            Inadmissible::TimeoutOverMaxDuration => {
                let (request, instance) = active(runtime, RetentionMode::EphemeralZdr).await;
                let mut execute = execute_request(&instance, &["true"], 16);
                execute.command.timeout_seconds =
                    TimeoutSeconds::new(request.profile.max_duration_seconds.get() + 1)
                        .expect("in range");
                Outcome {
                    refusal: refused(runtime.execute(execute).await),
                    expected: SandboxError::capability_unavailable(Requirement::Resources),
                    operation: Operation::Execute,
                    provider_calls: 0,
                }
            }
            Inadmissible::SnapshotOfAZdrInstance => {
                let (_, instance) = active(runtime, RetentionMode::EphemeralZdr).await;
                Outcome {
                    refusal: refused(
                        runtime
                            .snapshot(SnapshotRequest {
                                instance_id: instance.instance_id.clone(),
                                expires_at: in_a_day(),
                            })
                            .await,
                    ),
                    expected: SandboxError::SandboxSnapshotForbidden {
                        instance_id: instance.instance_id,
                        retention: RetentionMode::EphemeralZdr,
                    },
                    operation: Operation::Snapshot,
                    provider_calls: 0,
                }
            }
        }
    }
}

/// Every inadmissible call is refused with the contract's typed error, and
/// the liar's ledger shows the provider never got it.
#[tokio::test]
async fn the_runner_refuses_each_inadmissible_call_before_calling_the_provider() {
    for case in Inadmissible::ALL {
        let runtime = liar_runtime();
        let outcome = case.attempt(&runtime).await;
        assert_eq!(outcome.refusal, outcome.expected, "{case:?}");
        assert_eq!(
            calls(&runtime, outcome.operation),
            outcome.provider_calls,
            "{case:?}: provider calls of {}",
            outcome.operation
        );
    }
}
