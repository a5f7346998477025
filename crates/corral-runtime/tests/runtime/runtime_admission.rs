//! "You never have to decide whether a path is legal. The Runner admits it
//! before you are called": the mount plan, the write scope, the read roots
//! and the active-write target.

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;

fn mounts_unavailable() -> SandboxError {
    SandboxError::capability_unavailable(Requirement::Mounts)
}

fn outside_root(operation: Operation) -> SandboxError {
    SandboxError::operation_failed(operation, FailureReason::OutsideRoot)
}

#[tokio::test]
async fn mount_plan_overlapping_a_reserved_root_is_refused_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    for root in [
        "/dev",
        "/proc/self",
        "/run",
        "/sys",
        "/tmp/x",
        "/home/checkfu",
        "/workspace/.checkfu",
        "/mnt/session/outputs/sub",
        "/mnt/session",
    ] {
        let request = request_for(
            profile(RetentionMode::EphemeralZdr, NetworkPolicy::None),
            mounts(&[(root, MountAccess::ReadWrite)]),
        );
        let err = rt.provision(request).await.unwrap_err();
        assert_eq!(err, mounts_unavailable(), "{root}");
    }
    assert_eq!(rt.provider().log.calls(Operation::Provision), 0);
}

#[tokio::test]
async fn mount_plan_with_conflicting_paths_is_refused_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let request = request_for(
        profile(RetentionMode::EphemeralZdr, NetworkPolicy::None),
        mounts(&[
            ("/workspace/app", MountAccess::ReadWrite),
            ("/workspace/app", MountAccess::ReadOnly),
        ]),
    );
    assert_eq!(
        rt.provision(request).await.unwrap_err(),
        mounts_unavailable()
    );
    assert_eq!(rt.provider().log.calls(Operation::Provision), 0);
}

#[tokio::test]
async fn mount_plan_over_max_mounts_is_refused_before_calling_provider() {
    let mut declaration = full_declaration();
    declaration.max_mounts = MaxMounts::new(1).unwrap();
    let rt = runtime(Fake::new(caps(declaration)));
    let err = rt.provision(zdr_request()).await.unwrap_err();
    assert_eq!(err, mounts_unavailable());
    assert_eq!(rt.provider().log.calls(Operation::Provision), 0);
}

#[tokio::test]
async fn provision_refuses_a_profile_the_envelope_cannot_serve_before_calling_provider() {
    let mut declaration = full_declaration();
    declaration.enforcement.memory_limit = EnforcementLevel::BestEffort;
    declaration.package_managers = vec![];
    let rt = runtime(Fake::new(caps(declaration)));
    let mut memory = zdr_request();
    memory.profile.resources.memory_bytes = Some(MemoryBytes::new(1 << 30).unwrap());
    assert_eq!(
        rt.provision(memory).await.unwrap_err(),
        SandboxError::capability_unavailable(Requirement::Resources)
    );
    let mut packages = zdr_request();
    packages.profile.packages = vec![PackageSpec {
        manager: PackageManager::Apt,
        name: PackageName::new("git").unwrap(),
        version: None,
    }];
    assert_eq!(
        rt.provision(packages).await.unwrap_err(),
        SandboxError::capability_unavailable(Requirement::Packages)
    );
    let mut platform = zdr_request();
    platform.platform = Platform::LINUX_ARM64;
    assert_eq!(
        rt.provision(platform).await.unwrap_err(),
        SandboxError::capability_unavailable(Requirement::Platform)
    );
    assert_eq!(rt.provider().log.calls(Operation::Provision), 0);
}

fn write(id: &InstanceId, p: &str) -> WriteFileRequest {
    WriteFileRequest {
        instance_id: id.clone(),
        path: path(p),
        content: FileContent::new(b"staged".to_vec()).unwrap(),
        mode: FileMode::DEFAULT,
    }
}

#[tokio::test]
async fn write_scope_while_provisioning_admits_every_declared_mount_and_the_output_tree() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    for p in [
        "/workspace/app/src/main.rs",
        "/workspace/data/input.csv",
        "/mnt/session/outputs/report.txt",
    ] {
        rt.write_file(write(&id, p)).await.unwrap();
        assert_eq!(rt.provider().file(&id, p), Some(b"staged".to_vec()));
    }
}

#[tokio::test]
async fn write_scope_narrows_to_the_output_tree_at_activation() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    for p in ["/workspace/app/src/main.rs", "/workspace/data/input.csv"] {
        let err = rt.write_file(write(&id, p)).await.unwrap_err();
        assert_eq!(
            err,
            SandboxError::lifecycle_conflict(
                Operation::WriteFile,
                &[InstanceState::Provisioning],
                ConflictState::Active
            ),
            "{p}"
        );
    }
    assert_eq!(rt.provider().log.calls(Operation::WriteFile), 0);
    rt.write_file(write(&id, "/mnt/session/outputs/report.txt"))
        .await
        .unwrap();
    assert_eq!(rt.provider().log.calls(Operation::WriteFile), 1);
}

#[tokio::test]
async fn write_outside_every_mount_and_the_output_tree_is_refused_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    for p in [
        "/etc/passwd",
        "/workspace/other/file",
        "/workspace/app",
        "/mnt/session/outputs",
        "/workspace/application/file",
    ] {
        let err = rt.write_file(write(&id, p)).await.unwrap_err();
        assert_eq!(err, outside_root(Operation::WriteFile), "{p}");
    }
    assert_eq!(rt.provider().log.calls(Operation::WriteFile), 0);
}

#[tokio::test]
async fn read_allowed_root_must_be_one_of_the_instance_mounts_or_the_output_tree() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let read = |file: &str, root: &str| {
        ReadFileRequest::new(id.clone(), path(file), path(root), MaximumBytes::MAX).unwrap()
    };
    for (file, root) in [
        ("/etc/passwd", "/"),
        ("/workspace/app/a", "/workspace"),
        ("/workspace/app/src/a", "/workspace/app/src"),
        ("/home/user/a", "/home/user"),
    ] {
        let err = rt.read_file(read(file, root)).await.unwrap_err();
        assert_eq!(err, outside_root(Operation::ReadFile), "{root}");
    }
    let batch =
        ReadFilesRequest::new(id.clone(), path("/"), vec![member("/etc/passwd", 8)]).unwrap();
    assert_eq!(
        rt.read_files(batch).await.unwrap_err(),
        outside_root(Operation::ReadFiles)
    );
    assert_eq!(rt.provider().log.calls(Operation::ReadFile), 0);
    assert_eq!(rt.provider().log.calls(Operation::ReadFiles), 0);
    rt.provider()
        .put(&id, "/workspace/data/a", Entry::File(b"ok".to_vec()));
    rt.provider()
        .put(&id, "/mnt/session/outputs/b", Entry::File(b"ok".to_vec()));
    rt.read_file(read("/workspace/data/a", "/workspace/data"))
        .await
        .unwrap();
    rt.read_file(read("/mnt/session/outputs/b", "/mnt/session/outputs"))
        .await
        .unwrap();
}

#[tokio::test]
async fn read_path_derives_the_allowed_root_from_the_deepest_owning_mount() {
    let rt = runtime(Fake::new(full_caps()));
    let request = request_for(
        profile(RetentionMode::EphemeralZdr, NetworkPolicy::None),
        mounts(&[
            ("/workspace/app", MountAccess::ReadWrite),
            ("/workspace/app/vendor", MountAccess::ReadOnly),
        ]),
    );
    let id = active(&rt, request).await;
    rt.provider().put(
        &id,
        "/workspace/app/vendor/lib.rs",
        Entry::File(b"v".to_vec()),
    );
    rt.provider()
        .put(&id, "/workspace/app/main.rs", Entry::File(b"m".to_vec()));
    let max = MaximumBytes::new(16).unwrap();
    let vendor = rt
        .read_path(id.clone(), path("/workspace/app/vendor/lib.rs"), max)
        .await
        .unwrap();
    assert_eq!(vendor.content.to_vec(), b"v".to_vec());
    rt.read_path(id.clone(), path("/workspace/app/main.rs"), max)
        .await
        .unwrap();
    let err = rt
        .read_path(id.clone(), path("/etc/passwd"), max)
        .await
        .unwrap_err();
    assert_eq!(err, outside_root(Operation::ReadFile));
    let roots: Vec<SandboxPath> = rt
        .provider()
        .log
        .reads()
        .iter()
        .map(|r| r.allowed_root().clone())
        .collect();
    assert_eq!(
        roots,
        vec![path("/workspace/app/vendor"), path("/workspace/app")]
    );
}

fn batch(id: &InstanceId, paths: &[&str]) -> ActiveWriteRequest {
    ActiveWriteRequest {
        instance_id: id.clone(),
        batch: ActiveWriteBatch::new(
            paths
                .iter()
                .map(|p| ActiveWriteFile {
                    path: path(p),
                    content: FileContent::new(b"x".to_vec()).unwrap(),
                    mode: FileMode::DEFAULT,
                })
                .collect(),
        )
        .unwrap(),
    }
}

#[tokio::test]
async fn active_write_must_land_inside_one_read_write_mount_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let request = request_for(
        profile(RetentionMode::Durable, NetworkPolicy::None),
        mounts(&[
            ("/workspace/app", MountAccess::ReadWrite),
            ("/workspace/app/vendor", MountAccess::ReadOnly),
            ("/workspace/data", MountAccess::ReadOnly),
            ("/workspace/notes", MountAccess::ReadWrite),
        ]),
    );
    let id = active(&rt, request).await;
    let denied = SandboxError::operation_failed(
        Operation::BeginActiveWrite,
        FailureReason::PermissionDenied,
    );
    let outside = outside_root(Operation::BeginActiveWrite);
    for (paths, expected) in [
        (vec!["/workspace/data/a"], &denied),
        // An ancestor writeable mount cannot authorize a nested read-only one.
        (vec!["/workspace/app/vendor/a"], &denied),
        (vec!["/workspace/app/a", "/workspace/notes/b"], &outside),
        (
            vec!["/workspace/app/a", "/workspace/app/vendor/b"],
            &outside,
        ),
        (vec!["/mnt/session/outputs/a"], &outside),
        (vec!["/etc/a"], &outside),
    ] {
        let err = rt
            .begin_active_write(batch(&id, &paths))
            .await
            .err()
            .unwrap();
        assert_eq!(&err, expected, "{paths:?}");
    }
    assert_eq!(rt.provider().log.calls(Operation::BeginActiveWrite), 0);
    let tx = rt
        .begin_active_write(batch(&id, &["/workspace/app/a", "/workspace/app/src/b"]))
        .await
        .unwrap();
    assert_eq!(tx.state(), JournalState::Open);
    assert_eq!(rt.provider().log.calls(Operation::BeginActiveWrite), 1);
}
