//! The runtime over the real deterministic oracle: `ContractAdapter` over the
//! memory backend, unmodified and narrowed to the contract's minimum
//! provider. An honest provider passes every check, and the runtime's own
//! behaviour (grouped reads, the durable round trip, fail-closed reads on the
//! minimum provider) holds against it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::narrow::Narrow;
use corral_runtime::runtime::{InstanceStatus, Runtime};

const IMAGE: &str = "registry.example/corral/base@sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn path(s: &str) -> SandboxPath {
    SandboxPath::new(s).unwrap()
}

fn oracle() -> ContractAdapter<MemoryBackend> {
    ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap()
}

fn request(
    envelope: &SandboxProviderCapabilities,
    retention: RetentionMode,
    mounts: &[(&str, MountAccess)],
) -> SandboxProvisionRequest {
    let hour = SystemTime::now() + Duration::from_secs(3600);
    SandboxProvisionRequest {
        provider: ProviderId::new("memory").unwrap(),
        placement: envelope.placement,
        workspace_id: WorkspaceId::new("ws-1").unwrap(),
        session_id: SessionId::new("ses-1").unwrap(),
        run_id: RunId::new("run-1").unwrap(),
        attempt_id: AttemptId::new("att-1").unwrap(),
        lease_id: LeaseId::new("lease-1").unwrap(),
        lease_epoch: LeaseEpoch::new(1).unwrap(),
        target: TargetId::new("oneshot").unwrap(),
        profile: SandboxProfile {
            id: ProfileId::new("prof-1").unwrap(),
            version: ProfileVersion::new("1").unwrap(),
            digest: Digest::from_sha256_bytes([7; 32]),
            retention,
            network: NetworkPolicy::None,
            max_duration_seconds: DurationSeconds::new(60).unwrap(),
            packages: Vec::new(),
            resources: ResourceLimits::default(),
        },
        platform: envelope.platforms[0],
        root_image: ImageReference::new(IMAGE).unwrap(),
        mounts: Mounts::new(
            mounts
                .iter()
                .map(|(p, access)| MountSpec {
                    path: path(p),
                    access: *access,
                })
                .collect(),
        )
        .unwrap(),
        expires_at: Timestamp::from_system_time(hour).unwrap(),
    }
}

fn write(id: &InstanceId, at: &str, content: &[u8]) -> WriteFileRequest {
    WriteFileRequest {
        instance_id: id.clone(),
        path: path(at),
        content: FileContent::new(content.to_vec()).unwrap(),
        mode: FileMode::DEFAULT,
    }
}

fn shell(id: &InstanceId, script: &str) -> ExecuteRequest {
    ExecuteRequest {
        instance_id: id.clone(),
        command: SandboxCommand::new(
            CommandLine::Shell {
                shell: ShellScript::new(script).unwrap(),
            },
            TimeoutSeconds::new(30).unwrap(),
            OutputLimitBytes::new(4096).unwrap(),
        ),
    }
}

fn member(p: &str, max: u64) -> ReadFilesMember {
    ReadFilesMember {
        path: path(p),
        maximum_bytes: MaximumBytes::new(max).unwrap(),
    }
}

fn ok_content(outcome: &ReadFileOutcome) -> Vec<u8> {
    match outcome {
        ReadFileOutcome::Ok { content, .. } => content.to_vec(),
        other => panic!("expected ok, got {other:?}"),
    }
}

#[tokio::test]
async fn the_memory_oracle_behind_the_runtime_stages_seals_executes_and_reads_across_roots() {
    let rt = Runtime::new(oracle()).unwrap();
    let req = request(
        rt.capabilities(),
        RetentionMode::EphemeralZdr,
        &[
            ("/data", MountAccess::ReadOnly),
            ("/project", MountAccess::ReadWrite),
        ],
    );
    let id = rt.provision(req).await.unwrap().value.instance_id;
    rt.write_file(write(&id, "/data/input.txt", b"staged"))
        .await
        .unwrap();
    rt.write_file(write(&id, "/project/notes.md", b"notes"))
        .await
        .unwrap();
    rt.activate(id.clone()).await.unwrap();
    // Sealed: the trusted port no longer writes into mounts.
    let sealed = rt
        .write_file(write(&id, "/data/input.txt", b"late"))
        .await
        .unwrap_err();
    assert!(matches!(
        sealed,
        SandboxError::SandboxLifecycleConflict { .. }
    ));
    let result = rt
        .execute(shell(
            &id,
            "cat /data/input.txt > /mnt/session/outputs/copy.txt; echo done",
        ))
        .await
        .unwrap();
    assert_eq!(result.stdout.content.to_vec(), b"done\n".to_vec());
    let batch = rt
        .read_paths(
            id.clone(),
            vec![
                member("/data/input.txt", 64),
                member("/mnt/session/outputs/copy.txt", 64),
                member("/project/notes.md", 64),
                member("/project/absent", 64),
            ],
        )
        .await
        .unwrap();
    assert_eq!(ok_content(&batch.files[0]), b"staged".to_vec());
    assert_eq!(ok_content(&batch.files[1]), b"staged".to_vec());
    assert_eq!(ok_content(&batch.files[2]), b"notes".to_vec());
    assert!(matches!(batch.files[3], ReadFileOutcome::Missing { .. }));
    let released = rt
        .release(ReleaseRequest {
            instance_id: id.clone(),
            snapshot_expires_at: None,
        })
        .await
        .unwrap()
        .value;
    assert!(matches!(released, ReleaseDisposition::Destroyed));
    assert_eq!(rt.instance_status(&id), InstanceStatus::Destroyed);
}

#[tokio::test]
async fn the_memory_oracle_behind_the_runtime_survives_a_durable_round_trip() {
    let rt = Runtime::new(oracle()).unwrap();
    let req = request(
        rt.capabilities(),
        RetentionMode::Durable,
        &[("/project", MountAccess::ReadWrite)],
    );
    let id = rt.provision(req.clone()).await.unwrap().value.instance_id;
    rt.activate(id.clone()).await.unwrap();
    rt.execute(shell(&id, "echo kept > /project/state.txt"))
        .await
        .unwrap();
    let deadline =
        Timestamp::from_system_time(SystemTime::now() + Duration::from_secs(7200)).unwrap();
    let released = rt
        .release(ReleaseRequest {
            instance_id: id.clone(),
            snapshot_expires_at: Some(deadline),
        })
        .await
        .unwrap()
        .value;
    let ReleaseDisposition::Released { snapshot } = released else {
        panic!("a durable release settles a snapshot");
    };
    assert_eq!(snapshot.expires_at, deadline);
    assert_eq!(rt.instance_status(&id), InstanceStatus::Released);
    let resumed = rt
        .resume(ResumeRequest {
            request: req,
            snapshot: *snapshot,
        })
        .await
        .unwrap()
        .value;
    let state = rt
        .read_path(
            resumed.instance_id,
            path("/project/state.txt"),
            MaximumBytes::new(64).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(state.content.to_vec(), b"kept\n".to_vec());
}

#[tokio::test]
async fn the_minimum_provider_is_the_memory_oracle_narrowed_and_fails_reads_closed() {
    let rt = Runtime::new(Narrow::minimum(oracle()).unwrap()).unwrap();
    assert!(!rt.capabilities().physically_contained_file_read);
    assert_eq!(rt.capabilities().max_mounts.get(), 0);
    let mounted = request(
        rt.capabilities(),
        RetentionMode::EphemeralZdr,
        &[("/project", MountAccess::ReadWrite)],
    );
    assert_eq!(
        rt.provision(mounted).await.err().unwrap(),
        SandboxError::capability_unavailable(Requirement::Mounts)
    );
    let req = request(rt.capabilities(), RetentionMode::EphemeralZdr, &[]);
    let id = rt.provision(req).await.unwrap().value.instance_id;
    rt.activate(id.clone()).await.unwrap();
    rt.execute(shell(&id, "echo out > /mnt/session/outputs/out.txt"))
        .await
        .unwrap();
    assert_eq!(
        rt.read_path(
            id.clone(),
            path("/mnt/session/outputs/out.txt"),
            MaximumBytes::new(64).unwrap()
        )
        .await
        .unwrap_err(),
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead)
    );
    let released = rt
        .release(ReleaseRequest {
            instance_id: id,
            snapshot_expires_at: None,
        })
        .await
        .unwrap()
        .value;
    assert!(matches!(released, ReleaseDisposition::Destroyed));
}
