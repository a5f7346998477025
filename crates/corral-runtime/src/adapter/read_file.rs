//! `readFile`: one file, physically contained under `allowed_root`, or fail
//! closed.
//!
//! Without `physically_contained_file_read` in the envelope the member fails
//! closed with `SandboxCapabilityUnavailable{physically_contained_file_read}`
//! before touching the instance: nothing leaves the sandbox through a
//! path-string check. With it, the read is the backend's `read_contained`,
//! which resolves the path relative to a descriptor of `allowed_root` and
//! reads from the descriptor it resolved (see `corral_backend::contained`).
//!
//! `allowed_root` must lie within one of the instance's own roots — a
//! declared mount or the output tree — as the Runner derives it; another
//! root is `outside_root`.
//!
//! | contained-read outcome | `readFile` | `readFiles` member |
//! |---|---|---|
//! | bytes | `content` | `ok` |
//! | `not_found` (or `allowed_root` missing) | `SandboxOperationFailed{not_found}` | `missing` |
//! | `too_large` | `SandboxFileTooLarge{path, limit, actual}` | `too_large` |
//! | `outside_root` | `SandboxOperationFailed{outside_root}` | `refused{outside_root}` |
//! | `not_regular_file` | `SandboxOperationFailed{not_regular_file}` | `refused{not_regular_file}` |
//! | `symlink_loop` | `SandboxOperationFailed{symlink_loop}` | `refused{symlink_loop}` |
//! | `EACCES`/`EPERM` | `SandboxOperationFailed{permission_denied}` | `refused{permission_denied}` |
//! | `changed_during_read` | `SandboxOperationFailed{integrity_mismatch}` | fails the batch |
//! | an invalid path, any other error | `SandboxOperationFailed{platform_rejected / platform_unavailable}` | fails the batch |

use corral_backend::contained::ContainmentReason;
use corral_backend::{Backend, ContainedReadFailure};
use corral_contract::{
    FailureReason, FileContent, Operation, ReadFileRequest, ReadFileResult, ReadRefusal,
    Requirement, SandboxError, SandboxPath,
};

use super::ContractAdapter;
use super::errors::{Subject, failed, from_backend};
use super::record::Located;

/// What one contained read came to.
pub(super) enum Read {
    /// The file's bytes.
    Bytes(Vec<u8>),
    /// No such file.
    Missing,
    /// Larger than the limit; `actual` is at least `limit + 1`.
    TooLarge { limit: u64, actual: u64 },
    /// Refused for a closed reason.
    Refused(ReadRefusal),
    /// A failure of the read itself, not of the file.
    Failed(SandboxError),
}

// Linux errno values a contained read reports.
const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EACCES: i32 = 13;
const ENOTDIR: i32 = 20;

/// Reads `path` under `root` in the located instance, classified.
pub(super) async fn contained<B: Backend>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    located: &Located,
    root: &SandboxPath,
    path: &SandboxPath,
    max_bytes: u64,
) -> Read {
    let Some(ops) = adapter.backend.contained_read_ops() else {
        return Read::Failed(SandboxError::capability_unavailable(
            Requirement::PhysicallyContainedFileRead,
        ));
    };
    let result = ops
        .read_contained(&located.sandbox_id, root, path, max_bytes)
        .await;
    let reason = match result {
        Ok(bytes) => return Read::Bytes(bytes),
        Err(ContainedReadFailure::Backend(e)) => {
            let subject = Subject::Instance(&located.record.instance_id);
            return Read::Failed(from_backend(operation, subject, &e));
        }
        Err(ContainedReadFailure::Refused(e)) => e.reason,
    };
    let fail = |reason| Read::Failed(failed(operation, reason));
    match reason {
        ContainmentReason::NotFound => Read::Missing,
        ContainmentReason::RootUnavailable { errno } if errno == ENOENT || errno == ENOTDIR => {
            Read::Missing
        }
        ContainmentReason::TooLarge { limit, actual } => Read::TooLarge { limit, actual },
        ContainmentReason::OutsideRoot => Read::Refused(ReadRefusal::OutsideRoot),
        ContainmentReason::NotRegularFile { .. } => Read::Refused(ReadRefusal::NotRegularFile),
        ContainmentReason::SymlinkLoop => Read::Refused(ReadRefusal::SymlinkLoop),
        ContainmentReason::Io { errno } | ContainmentReason::RootUnavailable { errno }
            if errno == EACCES || errno == EPERM =>
        {
            Read::Refused(ReadRefusal::PermissionDenied)
        }
        ContainmentReason::ChangedDuringRead => fail(FailureReason::IntegrityMismatch),
        ContainmentReason::InvalidPath => fail(FailureReason::PlatformRejected),
        ContainmentReason::Io { .. } | ContainmentReason::RootUnavailable { .. } => {
            fail(FailureReason::PlatformUnavailable)
        }
    }
}

/// The instance a read or listing under `root` addresses: located, in a
/// state the member is allowed in, with `root` one of its own roots — the
/// preamble every reading member shares.
pub(super) async fn located_under<B: Backend>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    instance_id: &corral_contract::InstanceId,
    root: &SandboxPath,
) -> Result<Located, SandboxError> {
    let located = adapter.locate(operation, instance_id).await?;
    operation.check_state(located.record.state)?;
    own_root(operation, &located, root)?;
    Ok(located)
}

/// Refuses an `allowed_root` that is not within one of the instance's own
/// roots (a mount or the output tree).
fn own_root(
    operation: Operation,
    located: &Located,
    root: &SandboxPath,
) -> Result<(), SandboxError> {
    let output = SandboxPath::output_path();
    let mounts = located.record.request.mounts.as_slice();
    if root.starts_with(&output) || mounts.iter().any(|m| root.starts_with(&m.path)) {
        Ok(())
    } else {
        Err(failed(operation, FailureReason::OutsideRoot))
    }
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ReadFileRequest,
) -> Result<ReadFileResult, SandboxError> {
    let op = Operation::ReadFile;
    if !adapter.envelope.physically_contained_file_read {
        return Err(SandboxError::capability_unavailable(
            Requirement::PhysicallyContainedFileRead,
        ));
    }
    let located = located_under(adapter, op, request.instance_id(), request.allowed_root()).await?;
    let max = request.maximum_bytes().get();
    let read = contained(
        adapter,
        op,
        &located,
        request.allowed_root(),
        request.path(),
        max,
    )
    .await;
    let refused = |reason: ReadRefusal| {
        let reason = match reason {
            ReadRefusal::OutsideRoot => FailureReason::OutsideRoot,
            ReadRefusal::NotRegularFile => FailureReason::NotRegularFile,
            ReadRefusal::SymlinkLoop => FailureReason::SymlinkLoop,
            ReadRefusal::PermissionDenied => FailureReason::PermissionDenied,
        };
        failed(op, reason)
    };
    match read {
        Read::Bytes(bytes) => FileContent::new(bytes)
            .map(|content| ReadFileResult { content })
            .map_err(|_| failed(op, FailureReason::ResourceExhausted)),
        Read::Missing => Err(failed(op, FailureReason::NotFound)),
        Read::TooLarge { limit, actual } => Err(SandboxError::SandboxFileTooLarge {
            path: request.path().clone(),
            limit,
            actual,
        }),
        Read::Refused(reason) => Err(refused(reason)),
        Read::Failed(error) => Err(error),
    }
}
