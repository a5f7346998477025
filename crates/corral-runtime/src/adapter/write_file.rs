//! `writeFile`: bytes at a path, within the scope the instance record allows.
//!
//! The Runner admits every path before calling ("you never have to decide
//! whether a path is legal"); the adapter still refuses what its own record
//! puts out of scope, so that a caller that skips the runtime cannot widen
//! it:
//!
//! - a path strictly inside the output tree is writable in both states;
//! - a path strictly inside a declared mount is writable while
//!   `provisioning` only ("write scope narrows at activation"); once
//!   `active` it is refused as `SandboxLifecycleConflict{write_file,
//!   expected: [provisioning], actual: active}` — and a sealed `read_only`
//!   mount refuses it whatever the record's state says;
//! - any other path (a mount root itself, the control root, anything
//!   outside every mount) is `SandboxOperationFailed{write_file,
//!   outside_root}`.
//!
//! Missing parent directories inside the scope are created.

use corral_backend::Backend;
use corral_contract::{
    ConflictState, FailureReason, InstanceState, MountAccess, Operation, SandboxError, SandboxPath,
    WriteFileRequest, write_admitted,
};

use super::ContractAdapter;
use super::errors::{Subject, failed, on};
use super::record::InstanceRecord;

/// Whether `record` lets the trusted port write `path`.
pub(super) fn scope(record: &InstanceRecord, path: &SandboxPath) -> Result<(), SandboxError> {
    let op = Operation::WriteFile;
    let mounts = &record.request.mounts;
    // The deepest mount strictly containing the path.
    let owner = mounts.owner_of(path).filter(|m| path != &m.path);
    if record.sealed
        && let Some(m) = owner
        && m.access == MountAccess::ReadOnly
    {
        return Err(SandboxError::lifecycle_conflict(
            op,
            &[InstanceState::Provisioning],
            ConflictState::from(record.state),
        ));
    }
    if write_admitted(record.state, mounts, path) {
        return Ok(());
    }
    if owner.is_some() {
        return Err(SandboxError::lifecycle_conflict(
            op,
            &[InstanceState::Provisioning],
            ConflictState::from(record.state),
        ));
    }
    Err(failed(op, FailureReason::OutsideRoot))
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: WriteFileRequest,
) -> Result<(), SandboxError> {
    let op = Operation::WriteFile;
    let located = adapter.locate(op, &request.instance_id).await?;
    op.check_state(located.record.state)?;
    scope(&located.record, &request.path)?;
    let files = adapter.backend.files();
    let subject = Subject::Instance(&request.instance_id);
    if let Some(parent) = request.path.parent() {
        files
            .mkdir(&located.sandbox_id, &parent, true)
            .await
            .map_err(on(op, subject))?;
    }
    files
        .write(
            &located.sandbox_id,
            &request.path,
            &request.content,
            Some(request.mode.bits()),
        )
        .await
        .map_err(on(op, Subject::Path))
}
