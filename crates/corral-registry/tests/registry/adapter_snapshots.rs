//! `snapshot`, `cloneSnapshot`, `release`, `resume`, `destroy` and
//! `destroySnapshot` on both backends.

use crate::adapter_support;
use adapter_support::*;
use corral_backend::Backend;
use corral_contract::*;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::adapter::record;

async fn snapshot<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    instance: &SandboxInstance,
    expires_in: i64,
) -> (SnapshotRequest, Handoff<SnapshotRef>) {
    let request = SnapshotRequest {
        instance_id: instance.instance_id.clone(),
        expires_at: in_seconds(expires_in),
    };
    let handoff = adapter.snapshot(request.clone()).await.unwrap();
    (request, handoff)
}

async fn contract_snapshots<B: Backend>(adapter: &ContractAdapter<B>) -> Vec<String> {
    let selector = corral_backend::Labels::new()
        .with(record::CONTRACT, record::KIND_SNAPSHOT)
        .unwrap();
    let ops = adapter.backend().snapshot_ops().unwrap();
    let mut ids: Vec<String> = ops
        .list_snapshots(&selector)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.sort();
    ids
}

/// "carry exactly the expires_at the request supplied", agreeing with the
/// source instance; the rollback deletes exactly that snapshot.
async fn snapshot_carries_exactly_the_requested_expiry<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let (request, handoff) = snapshot(adapter, &instance, 7 * 86_400).await;
    let (taken, rollback) = handoff.into_parts();
    assert!(snapshot_mismatches(&request, &instance, &taken).is_empty());
    assert_eq!(taken.expires_at, request.expires_at);
    assert_ne!(taken.expires_at, instance.expires_at);
    let (_, kept) = snapshot(adapter, &instance, 3600).await;
    assert_eq!(contract_snapshots(adapter).await.len(), 2);
    rollback.rollback().await.unwrap();
    rollback.rollback().await.unwrap();
    assert_eq!(
        contract_snapshots(adapter).await,
        vec![kept.value.snapshot_id.to_string()]
    );
}

#[tokio::test]
async fn snapshot_carries_exactly_the_requested_expiry_on_memory() {
    snapshot_carries_exactly_the_requested_expiry(&memory()).await;
}

#[tokio::test]
async fn snapshot_carries_exactly_the_requested_expiry_on_local() {
    let (adapter, _dir) = local();
    snapshot_carries_exactly_the_requested_expiry(&adapter).await;
}

#[tokio::test]
async fn snapshot_of_a_zdr_instance_is_forbidden() {
    let adapter = memory();
    let (_, instance) = active(&adapter, &Spec::zdr()).await;
    let err = refused(
        adapter
            .snapshot(SnapshotRequest {
                instance_id: instance.instance_id.clone(),
                expires_at: in_seconds(60),
            })
            .await,
    );
    assert_eq!(
        err,
        SandboxError::SandboxSnapshotForbidden {
            instance_id: instance.instance_id,
            retention: RetentionMode::EphemeralZdr,
        }
    );
    assert!(contract_snapshots(&adapter).await.is_empty());
}

/// "Physically clone into a distinct target Session with no dependency on
/// the source".
async fn clone_lands_in_the_target_session<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    adapter
        .write_file(write(&instance, "/mnt/session/outputs/kept.txt", b"kept"))
        .await
        .unwrap();
    let (_, source) = snapshot(adapter, &instance, 86_400).await;
    let request = CloneSnapshotRequest {
        source: source.value.clone(),
        target_session_id: SessionId::new("session-2").unwrap(),
    };
    let (clone, rollback) = adapter
        .clone_snapshot(request.clone())
        .await
        .unwrap()
        .into_parts();
    assert!(clone_mismatches(&request, &clone).is_empty());
    assert_ne!(clone.snapshot_id, source.value.snapshot_id);
    assert_eq!(clone.session_id.as_str(), "session-2");
    assert_eq!(clone.expires_at, source.value.expires_at);
    // No dependency on the source: delete it, resume the clone.
    adapter
        .destroy_snapshot(source.value.snapshot_id.clone())
        .await
        .unwrap();
    let resume = ResumeRequest {
        request: request_for_session(adapter, "session-2"),
        snapshot: clone.clone(),
    };
    let resumed = adapter.resume(resume).await.unwrap().value;
    let kept = adapter
        .read_file(read(
            &resumed,
            "/mnt/session/outputs",
            "/mnt/session/outputs/kept.txt",
            16,
        ))
        .await
        .unwrap();
    assert_eq!(&kept.content[..], b"kept");
    rollback.rollback().await.unwrap();
    rollback.rollback().await.unwrap();
    assert!(contract_snapshots(adapter).await.is_empty());
}

fn request_for_session<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    session: &'static str,
) -> SandboxProvisionRequest {
    request(
        adapter.capabilities(),
        &Spec {
            session,
            ..Spec::default()
        },
    )
}

#[tokio::test]
async fn clone_lands_in_the_target_session_on_memory() {
    clone_lands_in_the_target_session(&memory()).await;
}

#[tokio::test]
async fn clone_lands_in_the_target_session_on_local() {
    let (adapter, _dir) = local();
    clone_lands_in_the_target_session(&adapter).await;
}

#[tokio::test]
async fn clone_without_snapshot_clone_is_refused_naming_it() {
    let adapter = memory_with(|d| d.snapshot_clone = false);
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let (_, source) = snapshot(&adapter, &instance, 3600).await;
    let err = refused(
        adapter
            .clone_snapshot(CloneSnapshotRequest {
                source: source.value,
                target_session_id: SessionId::new("session-2").unwrap(),
            })
            .await,
    );
    assert_eq!(
        err,
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        }
    );
}

#[tokio::test]
async fn a_ref_that_disagrees_with_its_stored_snapshot_is_refused() {
    let adapter = memory();
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let (_, source) = snapshot(&adapter, &instance, 3600).await;
    let mut lying = source.value.clone();
    lying.expires_at = in_seconds(86_400 * 30);
    let err = refused(
        adapter
            .clone_snapshot(CloneSnapshotRequest {
                source: lying,
                target_session_id: SessionId::new("session-2").unwrap(),
            })
            .await,
    );
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::CloneSnapshot, FailureReason::IntegrityMismatch)
    );
    let mut unknown = source.value;
    unknown.snapshot_id = SnapshotId::new("memsnap-999").unwrap();
    let err = refused(
        adapter
            .clone_snapshot(CloneSnapshotRequest {
                source: unknown,
                target_session_id: SessionId::new("session-2").unwrap(),
            })
            .await,
    );
    assert_eq!(
        err,
        SandboxError::SandboxSnapshotNotFound {
            snapshot_id: SnapshotId::new("memsnap-999").unwrap()
        }
    );
}

/// "files survive snapshot → release → resume"; "resume produces an active
/// instance directly".
async fn durable_round_trip<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (request, instance) = active(adapter, &Spec::default()).await;
    adapter
        .write_file(write(
            &instance,
            "/mnt/session/outputs/state.txt",
            b"checkpoint",
        ))
        .await
        .unwrap();
    let release = ReleaseRequest {
        instance_id: instance.instance_id.clone(),
        snapshot_expires_at: Some(in_seconds(86_400)),
    };
    let disposition = adapter.release(release).await.unwrap().value;
    disposition.validate_for(RetentionMode::Durable).unwrap();
    let ReleaseDisposition::Released { snapshot } = disposition else {
        panic!("a durable release settles a snapshot");
    };
    assert!(!exists(adapter, &instance.instance_id).await);
    let resume = ResumeRequest {
        request: SandboxProvisionRequest {
            run_id: RunId::new("run-2").unwrap(),
            ..request
        },
        snapshot: *snapshot,
    };
    assert!(resume_mismatches(&resume).is_empty());
    let resumed = adapter.resume(resume.clone()).await.unwrap().value;
    assert!(
        identity_mismatches(
            &resume.request,
            &resumed,
            adapter.capabilities(),
            InstanceState::Active
        )
        .is_empty()
    );
    assert_ne!(resumed.instance_id, instance.instance_id);
    let state = adapter
        .read_file(read(
            &resumed,
            "/mnt/session/outputs",
            "/mnt/session/outputs/state.txt",
            64,
        ))
        .await
        .unwrap();
    assert_eq!(&state.content[..], b"checkpoint");
    // Active directly: it runs without an activate.
    let ran = adapter
        .execute(shell(&resumed, "echo resumed"))
        .await
        .unwrap();
    assert_eq!(&ran.stdout.content[..], b"resumed\n");
}

#[tokio::test]
async fn durable_round_trip_on_memory() {
    durable_round_trip(&memory()).await;
}

#[tokio::test]
async fn durable_round_trip_on_local() {
    let (adapter, _dir) = local();
    durable_round_trip(&adapter).await;
}

/// "ZDR: destroy every trace"; `released` on ZDR is never returned.
async fn zdr_release_destroys_every_trace<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::zdr()).await;
    adapter
        .write_file(write(&instance, "/mnt/session/outputs/secret", b"s"))
        .await
        .unwrap();
    let (disposition, rollback) = adapter
        .release(ReleaseRequest {
            instance_id: instance.instance_id.clone(),
            snapshot_expires_at: None,
        })
        .await
        .unwrap()
        .into_parts();
    assert_eq!(disposition, ReleaseDisposition::Destroyed);
    disposition
        .validate_for(RetentionMode::EphemeralZdr)
        .unwrap();
    rollback.rollback().await.unwrap();
    assert!(
        adapter
            .backend()
            .list(&Default::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(contract_snapshots(adapter).await.is_empty());
}

#[tokio::test]
async fn zdr_release_destroys_every_trace_on_memory() {
    zdr_release_destroys_every_trace(&memory()).await;
}

#[tokio::test]
async fn zdr_release_destroys_every_trace_on_local() {
    let (adapter, _dir) = local();
    zdr_release_destroys_every_trace(&adapter).await;
}

#[tokio::test]
async fn a_durable_release_without_a_deadline_captures_nothing() {
    let adapter = memory();
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let err = refused(
        adapter
            .release(ReleaseRequest {
                instance_id: instance.instance_id.clone(),
                snapshot_expires_at: None,
            })
            .await,
    );
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::Release, FailureReason::PlatformRejected)
    );
    assert!(exists(&adapter, &instance.instance_id).await);
    assert!(contract_snapshots(&adapter).await.is_empty());
}

#[tokio::test]
async fn release_rollback_deletes_the_settled_snapshot() {
    let adapter = memory();
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let (disposition, rollback) = adapter
        .release(ReleaseRequest {
            instance_id: instance.instance_id.clone(),
            snapshot_expires_at: Some(in_seconds(3600)),
        })
        .await
        .unwrap()
        .into_parts();
    assert!(matches!(disposition, ReleaseDisposition::Released { .. }));
    assert_eq!(contract_snapshots(&adapter).await.len(), 1);
    rollback.rollback().await.unwrap();
    rollback.rollback().await.unwrap();
    assert!(contract_snapshots(&adapter).await.is_empty());
}

#[tokio::test]
async fn resume_refuses_a_snapshot_that_disagrees_with_the_request() {
    let adapter = memory();
    let (request, instance) = active(&adapter, &Spec::default()).await;
    let (_, taken) = snapshot(&adapter, &instance, 3600).await;
    let other_session = ResumeRequest {
        request: SandboxProvisionRequest {
            session_id: SessionId::new("session-9").unwrap(),
            ..request.clone()
        },
        snapshot: taken.value.clone(),
    };
    assert_eq!(
        refused(adapter.resume(other_session).await),
        SandboxError::operation_failed(Operation::Resume, FailureReason::IntegrityMismatch)
    );
    let unknown = ResumeRequest {
        request,
        snapshot: SnapshotRef {
            snapshot_id: SnapshotId::new("memsnap-404").unwrap(),
            ..taken.value
        },
    };
    assert_eq!(
        refused(adapter.resume(unknown).await),
        SandboxError::SandboxSnapshotNotFound {
            snapshot_id: SnapshotId::new("memsnap-404").unwrap()
        }
    );
    // Nothing was allocated for either refusal.
    assert_eq!(
        adapter
            .backend()
            .list(&Default::default())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_snapshot_past_its_own_expiry_cannot_be_resumed() {
    let adapter = memory();
    let (request, instance) = active(&adapter, &Spec::default()).await;
    // A snapshot whose retention ends in a moment.
    let (_, taken) = snapshot(&adapter, &instance, 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let err = refused(
        adapter
            .resume(ResumeRequest {
                request,
                snapshot: taken.value.clone(),
            })
            .await,
    );
    assert_eq!(
        err,
        SandboxError::SandboxSnapshotNotFound {
            snapshot_id: taken.value.snapshot_id
        }
    );
}

/// "destroy and destroySnapshot … may all be invoked again after a lost
/// response; each must settle the same way"; unknown ids are `Ok`.
async fn teardown_is_idempotent<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let (_, taken) = snapshot(adapter, &instance, 3600).await;
    for _ in 0..2 {
        adapter.destroy(instance.instance_id.clone()).await.unwrap();
        adapter
            .destroy_snapshot(taken.value.snapshot_id.clone())
            .await
            .unwrap();
    }
    adapter
        .destroy(InstanceId::new("ci-never-existed").unwrap())
        .await
        .unwrap();
    adapter
        .destroy_snapshot(SnapshotId::new("never-existed").unwrap())
        .await
        .unwrap();
    assert!(!exists(adapter, &instance.instance_id).await);
    assert!(contract_snapshots(adapter).await.is_empty());
}

#[tokio::test]
async fn teardown_is_idempotent_on_memory() {
    teardown_is_idempotent(&memory()).await;
}

#[tokio::test]
async fn teardown_is_idempotent_on_local() {
    let (adapter, _dir) = local();
    teardown_is_idempotent(&adapter).await;
}
