//! The `SandboxProvider` trait: the contract's members, one method each.

use std::future::{Future, ready};

use crate::active_write::{ActiveWriteRequest, ActiveWriteTransaction};
use crate::capabilities::CapabilityField;
use crate::error::{ConflictState, Requirement, SandboxError};
use crate::lifecycle::InstanceState;
use crate::operation::Operation;
use crate::process::{LiveProcess, OpenProcessRequest};
use crate::{
    CleanupRequest, CleanupResult, CloneSnapshotRequest, ExecuteRequest, Handoff, InstanceId,
    ListDirRequest, ListDirResult, ListProjectDirRequest, ListProjectDirResult, ReadFileRequest,
    ReadFileResult, ReadFilesRequest, ReadFilesResult, ReleaseDisposition, ReleaseRequest,
    ResumeRequest, SandboxExecutionResult, SandboxInstance, SandboxProviderCapabilities,
    SandboxProvisionRequest, SnapshotId, SnapshotRef, SnapshotRequest, WriteFileRequest,
};

/// The five optional members, so that their refusals are a total function.
#[derive(Clone, Copy)]
enum Optional {
    BeginActiveWrite,
    ReadFiles,
    ListDir,
    ListProjectDir,
    OpenProcess,
}

impl Optional {
    fn refusal(self) -> SandboxError {
        let conflict = |operation, actual| {
            SandboxError::lifecycle_conflict(operation, &[InstanceState::Active], actual)
        };
        match self {
            Self::BeginActiveWrite => SandboxError::SandboxCapabilityUnavailable {
                requirement: Requirement::ActiveMountWrite,
                capability: Some(CapabilityField::ActiveMountWrite),
            },
            Self::ReadFiles => conflict(Operation::ReadFiles, ConflictState::ReadFilesUnsupported),
            Self::ListDir => conflict(Operation::ListDir, ConflictState::ListDirUnsupported),
            Self::ListProjectDir => conflict(
                Operation::ListProjectDir,
                ConflictState::ListProjectDirUnsupported,
            ),
            Self::OpenProcess => conflict(
                Operation::OpenProcess,
                ConflictState::OpenProcessUnsupported,
            ),
        }
    }
}

impl Operation {
    /// The typed refusal an absent optional member returns ("absent is a
    /// typed refusal at a known point"); `None` for required members.
    ///
    /// - `beginActiveWrite` → `SandboxCapabilityUnavailable{active_mount_write}`
    /// - `readFiles` → `SandboxLifecycleConflict{read_files, read_files_unsupported}`
    ///   (the Runner then falls back to sequential `readFile`)
    /// - `listDir` → `SandboxLifecycleConflict{list_dir, list_dir_unsupported}`
    /// - `listProjectDir` → `SandboxLifecycleConflict{list_project_dir, list_project_dir_unsupported}`
    /// - `openProcess` → `SandboxLifecycleConflict{open_process, open_process_unsupported}`
    pub fn absent_refusal(self) -> Option<SandboxError> {
        let optional = match self {
            Self::BeginActiveWrite => Optional::BeginActiveWrite,
            Self::ReadFiles => Optional::ReadFiles,
            Self::ListDir => Optional::ListDir,
            Self::ListProjectDir => Optional::ListProjectDir,
            Self::OpenProcess => Optional::OpenProcess,
            _ => return None,
        };
        Some(optional.refusal())
    }
}

fn absent<T>(member: Optional) -> std::future::Ready<Result<T, SandboxError>> {
    ready(Err(member.refusal()))
}

/// A sandbox provider: the contract's operations table, one method per row.
///
/// The contract's prose says seventeen members; its table has eighteen rows
/// (`beginActiveWrite` joined the table without the count changing). This
/// trait has all eighteen: `capabilities`, thirteen required operations, and
/// five optional ones with default bodies that return the typed refusal of
/// an absent member ([`Operation::absent_refusal`]).
///
/// The six handoff operations (`provision`, `activate`, `snapshot`,
/// `clone_snapshot`, `release`, `resume`) return [`Handoff`]. The async
/// members return `Send` futures (no async runtime is assumed). Callers are
/// expected to hold providers behind the corral runtime, which validates
/// every result; a provider never decides whether a path is legal.
pub trait SandboxProvider: Send + Sync {
    /// The one honest envelope, unchanging for this revision.
    fn capabilities(&self) -> &SandboxProviderCapabilities;

    /// Allocate an instance, materialize the derived image, prepare the
    /// declared mounts; return it in `provisioning`.
    fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send;

    /// Write bytes at a path the Runner already admitted (`provisioning` or
    /// `active`).
    fn write_file(
        &self,
        request: WriteFileRequest,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send;

    /// Optional. Stage a batch for atomic publication into one read-write
    /// mount of an `active` instance.
    fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> impl Future<Output = Result<Box<dyn ActiveWriteTransaction>, SandboxError>> + Send {
        let _ = request;
        absent(Optional::BeginActiveWrite)
    }

    /// Seal staged mounts and make the instance runnable; return it `active`.
    fn activate(
        &self,
        instance_id: InstanceId,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send;

    /// Run one bounded command to completion (`active`).
    fn execute(
        &self,
        request: ExecuteRequest,
    ) -> impl Future<Output = Result<SandboxExecutionResult, SandboxError>> + Send;

    /// Read one file with physical containment under `allowed_root`, or fail
    /// closed with `SandboxCapabilityUnavailable{physically_contained_file_read}`.
    fn read_file(
        &self,
        request: ReadFileRequest,
    ) -> impl Future<Output = Result<ReadFileResult, SandboxError>> + Send;

    /// Optional. Native batch read within the exact aggregate budget.
    fn read_files(
        &self,
        request: ReadFilesRequest,
    ) -> impl Future<Output = Result<ReadFilesResult, SandboxError>> + Send {
        let _ = request;
        absent(Optional::ReadFiles)
    }

    /// Optional. Enumerate regular files under a mount root with size and
    /// SHA-256.
    fn list_dir(
        &self,
        request: ListDirRequest,
    ) -> impl Future<Output = Result<ListDirResult, SandboxError>> + Send {
        let _ = request;
        absent(Optional::ListDir)
    }

    /// Optional. Complete leaf enumeration, special files named.
    fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> impl Future<Output = Result<ListProjectDirResult, SandboxError>> + Send {
        let _ = request;
        absent(Optional::ListProjectDir)
    }

    /// Capture an `active`, durable instance under the supplied deadline.
    fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> impl Future<Output = Result<Handoff<SnapshotRef>, SandboxError>> + Send;

    /// Physically clone a snapshot into a distinct target Session.
    fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> impl Future<Output = Result<Handoff<SnapshotRef>, SandboxError>> + Send;

    /// Durable: settle a snapshot. ZDR: destroy every trace.
    fn release(
        &self,
        request: ReleaseRequest,
    ) -> impl Future<Output = Result<Handoff<ReleaseDisposition>, SandboxError>> + Send;

    /// Rehydrate a snapshot into a fresh `active` instance.
    fn resume(
        &self,
        request: ResumeRequest,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send;

    /// Idempotent teardown of one instance (any state).
    fn destroy(
        &self,
        instance_id: InstanceId,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send;

    /// Idempotent teardown of one snapshot.
    fn destroy_snapshot(
        &self,
        snapshot_id: SnapshotId,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send;

    /// Sweep instances and snapshots orphaned before the cutoff; return the
    /// ids destroyed.
    fn cleanup(
        &self,
        request: CleanupRequest,
    ) -> impl Future<Output = Result<CleanupResult, SandboxError>> + Send;

    /// Optional. Start a long-lived process with live stdio (`active`).
    fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> impl Future<Output = Result<Box<dyn LiveProcess>, SandboxError>> + Send {
        let _ = request;
        absent(Optional::OpenProcess)
    }
}
