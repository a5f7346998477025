//! `cleanup` and the restarted runtime: everything is found again from the
//! backend alone.

use crate::adapter_support;
use std::collections::BTreeSet;
use std::sync::Arc;

use adapter_support::*;
use corral_backend::{Backend, CreateRequest, Labels};
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;

fn sweep(now: Timestamp, orphaned_before: Timestamp, pins: Vec<SnapshotId>) -> CleanupRequest {
    CleanupRequest::new(now, orphaned_before, pins).unwrap()
}

async fn snapshot<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    instance: &SandboxInstance,
    expires_in: i64,
) -> SnapshotRef {
    adapter
        .snapshot(SnapshotRequest {
            instance_id: instance.instance_id.clone(),
            expires_at: in_seconds(expires_in),
        })
        .await
        .unwrap()
        .value
}

/// What the first adapter left: one provisioning instance, one active
/// instance with a snapshot.
struct Left {
    provisioning: SandboxInstance,
    active: SandboxInstance,
    snapshot: SnapshotRef,
}

async fn leave_work<B: Backend + 'static>(adapter: ContractAdapter<B>) -> Left {
    let (_, provisioning) = provision(&adapter, &Spec::default()).await;
    let (_, active) = active(&adapter, &Spec::default()).await;
    let snapshot = snapshot(&adapter, &active, 3600).await;
    drop(adapter);
    Left {
        provisioning,
        active,
        snapshot,
    }
}

/// "expired instances are reclaimed without a database reset": a new
/// adapter over the same backend addresses and sweeps what the old one made.
async fn a_restarted_adapter_finds_and_reclaims_everything<B: Backend + 'static>(
    restarted: ContractAdapter<B>,
    left: Left,
) {
    let ran = restarted
        .execute(shell(&left.active, "echo still here"))
        .await
        .unwrap();
    assert_eq!(&ran.stdout.content[..], b"still here\n");
    restarted
        .activate(left.provisioning.instance_id.clone())
        .await
        .unwrap();
    let swept = restarted
        .cleanup(sweep(in_seconds(2), in_seconds(1), vec![]))
        .await
        .unwrap();
    let instances: BTreeSet<InstanceId> = swept.instances.into_iter().collect();
    let expected: BTreeSet<InstanceId> = [
        left.provisioning.instance_id.clone(),
        left.active.instance_id.clone(),
    ]
    .into();
    assert_eq!(instances, expected);
    assert_eq!(swept.snapshots, vec![left.snapshot.snapshot_id]);
    assert_eq!(
        restarted
            .execute(shell(&left.active, "true"))
            .await
            .unwrap_err(),
        SandboxError::SandboxInstanceNotFound {
            instance_id: left.active.instance_id
        }
    );
    let again = restarted
        .cleanup(sweep(in_seconds(2), in_seconds(1), vec![]))
        .await
        .unwrap();
    assert_eq!(again, CleanupResult::default());
}

#[tokio::test]
async fn a_restarted_adapter_finds_and_reclaims_everything_on_memory() {
    let backend = Arc::new(MemoryBackend::new());
    let first = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let left = leave_work(first).await;
    let restarted = ContractAdapter::new(backend, envelopes::memory()).unwrap();
    a_restarted_adapter_finds_and_reclaims_everything(restarted, left).await;
}

#[tokio::test]
async fn a_restarted_adapter_finds_and_reclaims_everything_on_local() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Arc::new(LocalBackend::open(dir.path()).unwrap());
    let first = ContractAdapter::new(open(), envelopes::local()).unwrap();
    let left = leave_work(first).await;
    // A new backend on the same state directory: another process.
    let restarted = ContractAdapter::new(open(), envelopes::local()).unwrap();
    a_restarted_adapter_finds_and_reclaims_everything(restarted, left).await;
}

#[tokio::test]
async fn cleanup_sweeps_an_instance_at_its_expiry_and_spares_a_young_one() {
    let adapter = memory();
    let (request, instance) = provision(&adapter, &Spec::default()).await;
    let young = adapter
        .cleanup(sweep(in_seconds(2), in_seconds(-60), vec![]))
        .await
        .unwrap();
    assert_eq!(young, CleanupResult::default());
    assert!(exists(&adapter, &instance.instance_id).await);
    let at_expiry = adapter
        .cleanup(sweep(request.expires_at, in_seconds(-60), vec![]))
        .await
        .unwrap();
    assert_eq!(at_expiry.instances, vec![instance.instance_id.clone()]);
    assert!(!exists(&adapter, &instance.instance_id).await);
}

/// "a pinned snapshot is exempt from the opportunistic cutoff but never
/// from its own expires_at."
async fn a_pin_exempts_from_the_cutoff_never_from_expiry<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let pinned = snapshot(adapter, &instance, 3600).await;
    let unpinned = snapshot(adapter, &instance, 3600).await;
    let pins = vec![pinned.snapshot_id.clone()];
    let cutoff = adapter
        .cleanup(sweep(in_seconds(2), in_seconds(1), pins.clone()))
        .await
        .unwrap();
    assert_eq!(cutoff.snapshots, vec![unpinned.snapshot_id]);
    assert_eq!(cutoff.instances, vec![instance.instance_id]);
    // Before its own expiry the pin holds, sweep after sweep.
    let held = adapter
        .cleanup(sweep(in_seconds(3), in_seconds(2), pins.clone()))
        .await
        .unwrap();
    assert!(held.snapshots.is_empty());
    let expired = adapter
        .cleanup(sweep(pinned.expires_at, in_seconds(2), pins))
        .await
        .unwrap();
    assert_eq!(expired.snapshots, vec![pinned.snapshot_id]);
}

#[tokio::test]
async fn a_pin_exempts_from_the_cutoff_never_from_expiry_on_memory() {
    a_pin_exempts_from_the_cutoff_never_from_expiry(&memory()).await;
}

#[tokio::test]
async fn a_pin_exempts_from_the_cutoff_never_from_expiry_on_local() {
    let (adapter, _dir) = local();
    a_pin_exempts_from_the_cutoff_never_from_expiry(&adapter).await;
}

#[tokio::test]
async fn cleanup_leaves_what_is_not_a_contract_instance_alone() {
    let adapter = memory();
    let backend = adapter.backend();
    let foreign = backend
        .create(CreateRequest {
            labels: Labels::new().with("corral", "run").unwrap(),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let foreign_snapshot = backend
        .snapshot_ops()
        .unwrap()
        .snapshot(&foreign.id, &Labels::new())
        .await
        .unwrap();
    let swept = adapter
        .cleanup(sweep(in_seconds(86_400), in_seconds(86_400), vec![]))
        .await
        .unwrap();
    assert_eq!(swept, CleanupResult::default());
    assert!(backend.connect(&foreign.id).await.is_ok());
    let snapshots = backend
        .snapshot_ops()
        .unwrap()
        .list_snapshots(&Labels::new())
        .await
        .unwrap();
    assert_eq!(snapshots.len(), 1);
    assert_eq!(snapshots[0].id, foreign_snapshot.id);
    // `destroy` and `destroySnapshot` do not reach them either.
    adapter
        .destroy(InstanceId::new(foreign.id.as_str()).unwrap())
        .await
        .unwrap();
    adapter
        .destroy_snapshot(SnapshotId::new(foreign_snapshot.id.as_str()).unwrap())
        .await
        .unwrap();
    assert!(backend.connect(&foreign.id).await.is_ok());
    assert_eq!(
        backend
            .snapshot_ops()
            .unwrap()
            .list_snapshots(&Labels::new())
            .await
            .unwrap()
            .len(),
        1
    );
}
