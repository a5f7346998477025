//! `BackendError` → `SandboxError`: the closed mapping every member uses.
//!
//! A backend speaks eleven closed codes; the contract's adapter vocabulary is
//! eight closed errors. The mapping is total and has no catch-all:
//!
//! | backend code | contract error |
//! |---|---|
//! | `not_found` | `SandboxInstanceNotFound` / `SandboxSnapshotNotFound` for the addressed instance or snapshot; `SandboxOperationFailed{not_found}` for a path |
//! | `unsupported` | the member's own typed refusal ([`unsupported`]) |
//! | `auth` | `SandboxOperationFailed{permission_denied}` |
//! | `quota` | `SandboxOperationFailed{resource_exhausted}` |
//! | `unavailable`, `io` | `SandboxOperationFailed{platform_unavailable}` |
//! | `timeout` | `SandboxOperationFailed{timed_out}` |
//! | `aborted` | `SandboxOperationFailed{interrupted}` |
//! | `provider`, `invalid_input`, `conflict` | `SandboxOperationFailed{platform_rejected}` |
//!
//! The backend's message is never carried: the contract's errors hold
//! structured fields only.

use corral_backend::{BackendError, ErrorCode};
use corral_contract::{
    CapabilityField, FailureReason, InstanceId, Operation, Requirement, SandboxError, SnapshotId,
};

/// What a failing backend call addressed, so that `not_found` names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Subject<'a> {
    /// A contract instance (its sandbox is gone).
    Instance(&'a InstanceId),
    /// A contract snapshot.
    Snapshot(&'a SnapshotId),
    /// A path inside a live instance.
    Path,
}

/// `SandboxOperationFailed{operation, reason}`.
pub(crate) const fn failed(operation: Operation, reason: FailureReason) -> SandboxError {
    SandboxError::operation_failed(operation, reason)
}

/// The reason a backend code stands for, for every code that is not about
/// the addressed object or the member's support.
pub(crate) const fn reason_of(code: ErrorCode) -> FailureReason {
    match code {
        ErrorCode::Auth => FailureReason::PermissionDenied,
        ErrorCode::NotFound => FailureReason::NotFound,
        ErrorCode::Quota => FailureReason::ResourceExhausted,
        ErrorCode::Unavailable | ErrorCode::Io => FailureReason::PlatformUnavailable,
        ErrorCode::Timeout => FailureReason::TimedOut,
        ErrorCode::Aborted => FailureReason::Interrupted,
        ErrorCode::Unsupported
        | ErrorCode::Provider
        | ErrorCode::InvalidInput
        | ErrorCode::Conflict => FailureReason::PlatformRejected,
    }
}

/// The refusal of an optional member the envelope does not declare: the
/// contract's absent-member refusal (`platform_rejected` for a member that
/// has none, which no optional member lacks).
pub(crate) fn absent(operation: Operation) -> SandboxError {
    operation
        .absent_refusal()
        .unwrap_or_else(|| failed(operation, FailureReason::PlatformRejected))
}

/// The typed refusal a member gives when its backend answers `unsupported`:
/// the absent-member refusal for an optional member, the capability the
/// member needs for the others, `platform_rejected` where no capability
/// names it. (`provision` and `resume` name the refused part of their
/// create request themselves.)
pub(crate) fn unsupported(operation: Operation) -> SandboxError {
    if let Some(refusal) = operation.absent_refusal() {
        return refusal;
    }
    let capability = |requirement, capability| SandboxError::SandboxCapabilityUnavailable {
        requirement,
        capability,
    };
    match operation {
        Operation::Snapshot | Operation::Release => capability(Requirement::Snapshots, None),
        Operation::CloneSnapshot => {
            capability(Requirement::Snapshots, Some(CapabilityField::SnapshotClone))
        }
        Operation::ReadFile => capability(Requirement::PhysicallyContainedFileRead, None),
        _ => failed(operation, FailureReason::PlatformRejected),
    }
}

/// Maps a backend failure of `operation` on `subject`.
pub(crate) fn from_backend(
    operation: Operation,
    subject: Subject<'_>,
    error: &BackendError,
) -> SandboxError {
    match (error.code(), subject) {
        (ErrorCode::NotFound, Subject::Instance(id)) => SandboxError::SandboxInstanceNotFound {
            instance_id: id.clone(),
        },
        (ErrorCode::NotFound, Subject::Snapshot(id)) => SandboxError::SandboxSnapshotNotFound {
            snapshot_id: id.clone(),
        },
        (ErrorCode::Unsupported, _) => unsupported(operation),
        (code, _) => failed(operation, reason_of(code)),
    }
}

/// A closure for `map_err`: [`from_backend`] with fixed arguments.
pub(crate) fn on<'a>(
    operation: Operation,
    subject: Subject<'a>,
) -> impl Fn(BackendError) -> SandboxError + 'a {
    move |error| from_backend(operation, subject, &error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::contained::ContainmentReason;
    use corral_backend::error::{FileOp, FsCause, FsError};

    #[test]
    fn not_found_names_the_addressed_object() {
        let id = InstanceId::new("ci-1").unwrap();
        let e = BackendError::sandbox_not_found("sb-1");
        assert_eq!(
            from_backend(Operation::Execute, Subject::Instance(&id), &e),
            SandboxError::SandboxInstanceNotFound { instance_id: id }
        );
        let snap = SnapshotId::new("s-1").unwrap();
        let e: BackendError = corral_backend::SnapshotError::NotFound {
            snapshot: "s-1".into(),
        }
        .into();
        assert_eq!(
            from_backend(Operation::DestroySnapshot, Subject::Snapshot(&snap), &e),
            SandboxError::SandboxSnapshotNotFound { snapshot_id: snap }
        );
        let e: BackendError = FsError::new(
            FileOp::List,
            "/gone",
            FsCause::Refused(ContainmentReason::NotFound),
        )
        .into();
        assert_eq!(e.code(), ErrorCode::NotFound);
        assert_eq!(
            from_backend(Operation::ListDir, Subject::Path, &e),
            failed(Operation::ListDir, FailureReason::NotFound)
        );
    }

    #[test]
    fn unsupported_is_the_members_typed_refusal() {
        let e = BackendError::unsupported("memory", "do that");
        assert_eq!(e.code(), ErrorCode::Unsupported);
        assert_eq!(
            from_backend(Operation::OpenProcess, Subject::Path, &e),
            Operation::OpenProcess.absent_refusal().unwrap()
        );
        assert_eq!(
            from_backend(Operation::CloneSnapshot, Subject::Path, &e),
            SandboxError::SandboxCapabilityUnavailable {
                requirement: Requirement::Snapshots,
                capability: Some(CapabilityField::SnapshotClone),
            }
        );
        assert_eq!(
            from_backend(Operation::Execute, Subject::Path, &e),
            failed(Operation::Execute, FailureReason::PlatformRejected)
        );
    }

    #[test]
    fn every_other_code_is_a_closed_reason() {
        let table = [
            (ErrorCode::Auth, FailureReason::PermissionDenied),
            (ErrorCode::Quota, FailureReason::ResourceExhausted),
            (ErrorCode::Unavailable, FailureReason::PlatformUnavailable),
            (ErrorCode::Io, FailureReason::PlatformUnavailable),
            (ErrorCode::Timeout, FailureReason::TimedOut),
            (ErrorCode::Aborted, FailureReason::Interrupted),
            (ErrorCode::Provider, FailureReason::PlatformRejected),
            (ErrorCode::InvalidInput, FailureReason::PlatformRejected),
            (ErrorCode::Conflict, FailureReason::PlatformRejected),
        ];
        let id = InstanceId::new("ci-1").unwrap();
        for (code, reason) in table {
            // Known by its code only, as a remote backend's answer is.
            let e = BackendError::relayed(code, "x");
            assert_eq!(
                from_backend(Operation::Execute, Subject::Instance(&id), &e),
                failed(Operation::Execute, reason),
                "{code}"
            );
        }
    }
}
