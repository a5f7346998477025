//! `cleanup`: sweep instances and snapshots orphaned before the cutoff.
//!
//! Decided from the backend alone, so a restarted runtime reclaims what a
//! crashed one left ("without a database reset"):
//!
//! - every sandbox labelled `corral.contract=instance` is an instance; it is
//!   destroyed when [`CleanupRequest::sweeps_instance`] says so for its
//!   backend creation time and its `corral.expires_at` label — it expired
//!   (`expires_at ≤ now`) or was allocated before `orphaned_before`. A
//!   sandbox whose identity labels do not parse is not one the adapter made
//!   and is left alone;
//! - every snapshot labelled `corral.contract=snapshot` is deleted when
//!   [`CleanupRequest::sweeps_snapshot`] says so: its own `expires_at ≤ now`,
//!   pinned or not ("retention expiry always wins over the pin"), or it is
//!   unpinned and was captured before the cutoff. A pin exempts a snapshot
//!   from the cutoff, never from its own expiry.
//!
//! The result lists exactly the ids destroyed here. A single failed teardown
//! does not stop the sweep — the leftover keeps its labels for the next one
//! — but a sweep in which every teardown failed returns the first failure.

use corral_backend::{Backend, BackendError, ErrorCode};
use corral_contract::{CleanupRequest, CleanupResult, Operation, SandboxError, SnapshotId};

use super::ContractAdapter;
use super::clock;
use super::errors::{Subject, on};
use super::record::{InstanceLabels, KIND_INSTANCE, KIND_SNAPSHOT, SnapshotIdentity, selector};

/// Teardown failures of one sweep.
#[derive(Default)]
struct Failures {
    first: Option<SandboxError>,
}

impl Failures {
    /// Records `result`; `true` when the object is gone.
    fn settle(&mut self, result: Result<(), BackendError>) -> bool {
        match result {
            Ok(()) => true,
            Err(e) if e.code() == ErrorCode::NotFound => true,
            Err(e) => {
                self.first
                    .get_or_insert_with(|| on(Operation::Cleanup, Subject::Path)(e));
                false
            }
        }
    }
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: CleanupRequest,
) -> Result<CleanupResult, SandboxError> {
    let op = Operation::Cleanup;
    let mut result = CleanupResult::default();
    let mut failures = Failures::default();
    let sandboxes = adapter
        .backend
        .list(&selector(KIND_INSTANCE))
        .await
        .map_err(on(op, Subject::Path))?;
    for info in sandboxes {
        let Some(labels) = InstanceLabels::parse(&info.labels) else {
            continue;
        };
        let created_at = clock::from_ms(op, info.created_at_ms)?;
        if !request.sweeps_instance(created_at, labels.expires_at) {
            continue;
        }
        if failures.settle(adapter.backend.destroy(&info.id).await) {
            adapter.processes.forget(&labels.instance_id);
            result.instances.push(labels.instance_id);
        }
    }
    if let Some(ops) = adapter.backend.snapshot_ops() {
        let snapshots = ops
            .list_snapshots(&selector(KIND_SNAPSHOT))
            .await
            .map_err(on(op, Subject::Path))?;
        for info in snapshots {
            let (Some(identity), Ok(snapshot_id)) = (
                SnapshotIdentity::parse(&info.labels),
                SnapshotId::new(info.id.as_str()),
            ) else {
                continue;
            };
            let created_at = clock::from_ms(op, info.created_at_ms)?;
            if !request.sweeps_snapshot(&snapshot_id, created_at, identity.expires_at) {
                continue;
            }
            if failures.settle(ops.delete_snapshot(&info.id).await) {
                result.snapshots.push(snapshot_id);
            }
        }
    }
    match failures.first {
        Some(error) if result.instances.is_empty() && result.snapshots.is_empty() => Err(error),
        _ => Ok(result),
    }
}
