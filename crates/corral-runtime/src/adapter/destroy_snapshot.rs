//! `destroySnapshot`: idempotent teardown of one snapshot.
//!
//! Deletes the backend snapshot with this id if it is a contract snapshot.
//! An unknown id, an already deleted snapshot, a snapshot that is not a
//! contract snapshot, or a backend without snapshots is `Ok`: a second call
//! settles the same way as the first.

use corral_backend::{Backend, ErrorCode};
use corral_contract::{Operation, SandboxError, SnapshotId};

use super::ContractAdapter;
use super::errors::{Subject, on};

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    snapshot_id: SnapshotId,
) -> Result<(), SandboxError> {
    let op = Operation::DestroySnapshot;
    let (Some(ops), Some(_)) = (
        adapter.backend.snapshot_ops(),
        adapter.find_snapshot(op, &snapshot_id).await?,
    ) else {
        return Ok(());
    };
    match ops.delete_snapshot(snapshot_id.as_str()).await {
        Ok(()) => Ok(()),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(()),
        Err(e) => Err(on(op, Subject::Path)(e)),
    }
}
