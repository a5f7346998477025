//! The lifecycle gate: "Every operation names the states it accepts, and the
//! Runner refuses a mismatch as `SandboxLifecycleConflict{operation,
//! expected, actual}` **before calling you**." Each test counts the fake's
//! calls to prove the provider was not asked.

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;
use corral_runtime::runtime::InstanceStatus;

fn conflict(
    operation: Operation,
    expected: &[InstanceState],
    actual: ConflictState,
) -> SandboxError {
    SandboxError::lifecycle_conflict(operation, expected, actual)
}

#[tokio::test]
async fn lifecycle_gate_refuses_execute_while_provisioning_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    let err = rt
        .execute(ExecuteRequest {
            instance_id: id,
            command: command(30, 1024),
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        conflict(
            Operation::Execute,
            &[InstanceState::Active],
            ConflictState::Provisioning
        )
    );
    assert_eq!(rt.provider().log.calls(Operation::Execute), 0);
}

#[tokio::test]
async fn lifecycle_gate_refuses_activate_when_already_active_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let err = rt.activate(id).await.unwrap_err();
    assert_eq!(
        err,
        conflict(
            Operation::Activate,
            &[InstanceState::Provisioning],
            ConflictState::Active
        )
    );
    assert_eq!(rt.provider().log.calls(Operation::Activate), 1);
}

#[tokio::test]
async fn lifecycle_gate_refuses_every_active_only_operation_while_provisioning_before_calling_provider()
 {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, durable_request()).await;
    let calls_before = rt.provider().log.all_calls().len();
    let refused = |operation| {
        conflict(
            operation,
            &[InstanceState::Active],
            ConflictState::Provisioning,
        )
    };
    let out = path("/mnt/session/outputs");
    let read = ReadFileRequest::new(
        id.clone(),
        path("/mnt/session/outputs/a"),
        out.clone(),
        MaximumBytes::new(8).unwrap(),
    )
    .unwrap();
    assert_eq!(
        rt.read_file(read).await.unwrap_err(),
        refused(Operation::ReadFile)
    );
    let batch = ReadFilesRequest::new(id.clone(), out.clone(), vec![]).unwrap();
    assert_eq!(
        rt.read_files(batch).await.unwrap_err(),
        refused(Operation::ReadFiles)
    );
    let list = ListDirRequest {
        instance_id: id.clone(),
        root: out.clone(),
        max_entries: MaxEntries::MAX,
    };
    assert_eq!(
        rt.list_dir(list).await.unwrap_err(),
        refused(Operation::ListDir)
    );
    let project = ListProjectDirRequest {
        instance_id: id.clone(),
        root: out,
        max_entries: MaxEntries::MAX,
    };
    assert_eq!(
        rt.list_project_dir(project).await.unwrap_err(),
        refused(Operation::ListProjectDir)
    );
    let snapshot = SnapshotRequest {
        instance_id: id.clone(),
        expires_at: ts("2026-12-29T00:00:00.000Z"),
    };
    assert_eq!(
        rt.snapshot(snapshot).await.unwrap_err(),
        refused(Operation::Snapshot)
    );
    let release = ReleaseRequest {
        instance_id: id.clone(),
        snapshot_expires_at: Some(ts("2026-12-29T00:00:00.000Z")),
    };
    assert_eq!(
        rt.release(release).await.unwrap_err(),
        refused(Operation::Release)
    );
    let process = OpenProcessRequest {
        instance_id: id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new("cat").unwrap(),
            arguments: Arguments::default(),
            working_directory: None,
            environment: Environment::new(),
        },
    };
    assert_eq!(
        rt.open_process(process).await.err().unwrap(),
        refused(Operation::OpenProcess)
    );
    let write = ActiveWriteRequest {
        instance_id: id,
        batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
            path: path("/workspace/app/a"),
            content: FileContent::new(b"x".to_vec()).unwrap(),
            mode: FileMode::DEFAULT,
        }])
        .unwrap(),
    };
    assert_eq!(
        rt.begin_active_write(write).await.err().unwrap(),
        refused(Operation::BeginActiveWrite)
    );
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
async fn lifecycle_release_forgets_the_instance_and_later_calls_meet_released() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, durable_request()).await;
    rt.release(ReleaseRequest {
        instance_id: id.clone(),
        snapshot_expires_at: Some(ts("2026-12-29T00:00:00.000Z")),
    })
    .await
    .unwrap();
    assert_eq!(rt.instance_status(&id), InstanceStatus::Released);
    let err = rt
        .execute(ExecuteRequest {
            instance_id: id,
            command: command(30, 1024),
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        conflict(
            Operation::Execute,
            &[InstanceState::Active],
            ConflictState::Released
        )
    );
    assert_eq!(rt.provider().log.calls(Operation::Execute), 0);
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
async fn lifecycle_destroy_forgets_the_instance_and_later_calls_meet_destroyed() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    rt.destroy(id.clone()).await.unwrap();
    assert_eq!(rt.instance_status(&id), InstanceStatus::Destroyed);
    let err = rt.activate(id).await.unwrap_err();
    assert_eq!(
        err,
        conflict(
            Operation::Activate,
            &[InstanceState::Provisioning],
            ConflictState::Destroyed
        )
    );
    assert_eq!(rt.provider().log.calls(Operation::Activate), 0);
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
