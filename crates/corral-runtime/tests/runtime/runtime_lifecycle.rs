//! The lifecycle gate: "Every operation names the states it accepts, and the
//! Runner refuses a mismatch as `SandboxLifecycleConflict{operation,
//! expected, actual}` **before calling you**." Each test counts the fake's
//! calls to prove the provider was not asked.

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;
use corral_runtime::runtime::{InstanceStatus, Runtime};

fn conflict(
    operation: Operation,
    expected: &[InstanceState],
    actual: ConflictState,
) -> SandboxError {
    SandboxError::lifecycle_conflict(operation, expected, actual)
}

/// The state a gate row drives its instance to before the refused call.
#[derive(Debug, Clone, Copy)]
enum Reached {
    /// Provisioned (ZDR), not yet activated.
    Provisioning,
    /// Provisioned and activated (ZDR).
    Active,
    /// A durable active instance, released with a snapshot deadline.
    Released,
    /// A provisioned instance, destroyed.
    Destroyed,
}

async fn reach(rt: &Runtime<Fake>, state: Reached) -> InstanceId {
    match state {
        Reached::Provisioning => provisioned(rt, zdr_request()).await,
        Reached::Active => active(rt, zdr_request()).await,
        Reached::Released => {
            let id = active(rt, durable_request()).await;
            rt.release(ReleaseRequest {
                instance_id: id.clone(),
                snapshot_expires_at: Some(ts("2026-12-29T00:00:00.000Z")),
            })
            .await
            .unwrap();
            id
        }
        Reached::Destroyed => {
            let id = provisioned(rt, zdr_request()).await;
            rt.destroy(id.clone()).await.unwrap();
            id
        }
    }
}

/// One operation asked of an instance in a state it does not accept.
struct GateCase {
    case: &'static str,
    reached: Reached,
    /// What the runtime reports of the instance once it is there.
    status: InstanceStatus,
    operation: Operation,
    accepts: &'static [InstanceState],
    actual: ConflictState,
    /// Calls of `operation` the provider saw: only those of the setup.
    provider_calls: usize,
}

/// "`execute` | Accepts `active`", "`activate` | Accepts `provisioning`";
/// release and destroy forget the instance, so later calls meet `released`
/// or `destroyed` — each refused before the provider is called.
#[tokio::test]
async fn lifecycle_gate_refuses_an_operation_in_a_state_it_does_not_accept_before_calling_provider()
{
    let cases = [
        GateCase {
            case: "execute while provisioning",
            reached: Reached::Provisioning,
            status: InstanceStatus::Live(InstanceState::Provisioning),
            operation: Operation::Execute,
            accepts: &[InstanceState::Active],
            actual: ConflictState::Provisioning,
            provider_calls: 0,
        },
        GateCase {
            case: "activate when already active",
            reached: Reached::Active,
            status: InstanceStatus::Live(InstanceState::Active),
            operation: Operation::Activate,
            accepts: &[InstanceState::Provisioning],
            actual: ConflictState::Active,
            provider_calls: 1,
        },
        GateCase {
            case: "execute after release",
            reached: Reached::Released,
            status: InstanceStatus::Released,
            operation: Operation::Execute,
            accepts: &[InstanceState::Active],
            actual: ConflictState::Released,
            provider_calls: 0,
        },
        GateCase {
            case: "activate after destroy",
            reached: Reached::Destroyed,
            status: InstanceStatus::Destroyed,
            operation: Operation::Activate,
            accepts: &[InstanceState::Provisioning],
            actual: ConflictState::Destroyed,
            provider_calls: 0,
        },
    ];
    for case in cases {
        let rt = runtime(Fake::new(full_caps()));
        let id = reach(&rt, case.reached).await;
        assert_eq!(rt.instance_status(&id), case.status, "{}", case.case);
        let err = refusal_of(&rt, id, case.operation, "/mnt/session/outputs").await;
        assert_eq!(
            err,
            conflict(case.operation, case.accepts, case.actual),
            "{}",
            case.case
        );
        assert_eq!(
            rt.provider().log.calls(case.operation),
            case.provider_calls,
            "{}: provider calls",
            case.case
        );
    }
}

#[tokio::test]
async fn lifecycle_gate_refuses_every_active_only_operation_while_provisioning_before_calling_provider()
 {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, durable_request()).await;
    let calls_before = rt.provider().log.all_calls().len();
    let active_only = [
        Operation::ReadFile,
        Operation::ReadFiles,
        Operation::ListDir,
        Operation::ListProjectDir,
        Operation::Snapshot,
        Operation::Release,
        Operation::OpenProcess,
        Operation::BeginActiveWrite,
    ];
    for operation in active_only {
        assert_eq!(
            refusal_of(&rt, id.clone(), operation, "/mnt/session/outputs").await,
            conflict(
                operation,
                &[InstanceState::Active],
                ConflictState::Provisioning
            ),
            "{operation}"
        );
    }
    assert_eq!(rt.provider().log.all_calls().len(), calls_before);
}

#[tokio::test]
async fn lifecycle_gate_refuses_an_instance_the_runtime_never_tracked_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let err = rt
        .execute(ExecuteRequest {
            instance_id: id("never-provisioned"),
            command: command(30, 1024),
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxInstanceNotFound {
            instance_id: id("never-provisioned")
        }
    );
    assert_eq!(rt.provider().log.all_calls(), Vec::<Operation>::new());
}

#[tokio::test]
async fn lifecycle_zdr_release_ends_the_instance_as_destroyed() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let released = rt
        .release(ReleaseRequest {
            instance_id: id.clone(),
            snapshot_expires_at: None,
        })
        .await
        .unwrap();
    assert!(matches!(released.value, ReleaseDisposition::Destroyed));
    assert_eq!(rt.instance_status(&id), InstanceStatus::Destroyed);
}

#[tokio::test]
async fn lifecycle_destroy_accepts_any_state_and_is_idempotent_for_any_id() {
    let rt = runtime(Fake::new(full_caps()));
    let provisioning = provisioned(&rt, zdr_request()).await;
    let live = active(&rt, zdr_request()).await;
    for id in [
        provisioning.clone(),
        live.clone(),
        provisioning,
        id("never-seen"),
    ] {
        rt.destroy(id).await.unwrap();
    }
    assert_eq!(rt.provider().log.calls(Operation::Destroy), 4);
    assert!(!rt.provider().has_instance(&live));
}

#[tokio::test]
async fn lifecycle_resume_produces_an_active_instance_with_no_provisioning_step() {
    let rt = runtime(Fake::new(full_caps()));
    let source = active(&rt, durable_request()).await;
    let snapshot = rt
        .snapshot(SnapshotRequest {
            instance_id: source,
            expires_at: ts("2026-12-29T00:00:00.000Z"),
        })
        .await
        .unwrap()
        .value;
    let resumed = rt
        .resume(ResumeRequest {
            request: durable_request(),
            snapshot,
        })
        .await
        .unwrap()
        .value;
    assert_eq!(resumed.state, InstanceState::Active);
    assert_eq!(
        rt.instance_status(&resumed.instance_id),
        InstanceStatus::Live(InstanceState::Active)
    );
    rt.execute(ExecuteRequest {
        instance_id: resumed.instance_id,
        command: command(30, 1024),
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn lifecycle_cleanup_forgets_the_instances_it_swept() {
    let rt = runtime(Fake::new(full_caps()));
    let swept = active(&rt, zdr_request()).await;
    let kept = active(&rt, zdr_request()).await;
    let list = vec![swept.clone()];
    rt.provider().knobs(|k| k.swept = list);
    let now = ts("2026-11-29T21:00:00.000Z");
    let result = rt
        .cleanup(CleanupRequest::new(now, now, vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(result.instances, vec![swept.clone()]);
    assert_eq!(rt.instance_status(&swept), InstanceStatus::Destroyed);
    assert_eq!(
        rt.instance_status(&kept),
        InstanceStatus::Live(InstanceState::Active)
    );
}

#[tokio::test]
async fn lifecycle_write_file_accepts_provisioning_and_active() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    let write = |p: &str| WriteFileRequest {
        instance_id: id.clone(),
        path: path(p),
        content: FileContent::new(b"x".to_vec()).unwrap(),
        mode: FileMode::DEFAULT,
    };
    rt.write_file(write("/mnt/session/outputs/a"))
        .await
        .unwrap();
    rt.activate(id.clone()).await.unwrap();
    rt.write_file(write("/mnt/session/outputs/b"))
        .await
        .unwrap();
    assert_eq!(rt.provider().log.calls(Operation::WriteFile), 2);
}
