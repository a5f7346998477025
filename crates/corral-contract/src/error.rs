//! The closed error vocabulary: eight adapter errors, three runtime errors.
//!
//! "The adapter error vocabulary is closed. Return one of these; anything else
//! is a defect, not a failure." Every variant carries structured fields, every
//! message is one line naming the operation, the field and both values where
//! there are two. The wire form is tagged by `error`:
//! `{"error":"SandboxLifecycleConflict","operation":"list_dir",…}`.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::{CapabilityField, RetentionMode};
use crate::lifecycle::InstanceState;
use crate::macros::vocabulary;
use crate::operation::Operation;
use crate::{InstanceId, ProviderId, SandboxPath, SnapshotId};

vocabulary! {
    /// What selection (or an operation) found missing:
    /// `SandboxCapabilityUnavailable.requirement`, exactly the contract's
    /// eleven.
    pub enum Requirement: "requirement" {
        /// No advertised tier satisfies the profile.
        Tier = "tier",
        /// No advertised platform matches.
        Platform = "platform",
        /// The root image cannot be materialized.
        BaseImage = "base_image",
        /// The profile's packages cannot be installed.
        Packages = "packages",
        /// The network policy cannot be honoured: the mode is unsupported,
        /// the egress grade is too weak, or a retained profile's policy no
        /// longer satisfies the current policy shape.
        NetworkPolicy = "network_policy",
        /// The retention mode is unsupported.
        Retention = "retention",
        /// Snapshots (or clones) are unsupported.
        Snapshots = "snapshots",
        /// The profile's resources cannot be provided.
        Resources = "resources",
        /// The mount plan is refused (reserved root, conflict, over `max_mounts`).
        Mounts = "mounts",
        /// `readFile` cannot bind resolution and consumption physically.
        PhysicallyContainedFileRead = "physically_contained_file_read",
        /// `beginActiveWrite` is unsupported.
        ActiveMountWrite = "active_mount_write",
    }
}

vocabulary! {
    /// What an operation found instead of the state it accepts:
    /// `SandboxLifecycleConflict.actual`.
    pub enum ConflictState: "lifecycle actual" {
        /// The instance is provisioning.
        Provisioning = "provisioning",
        /// The instance is active.
        Active = "active",
        /// The instance was released.
        Released = "released",
        /// The instance was destroyed.
        Destroyed = "destroyed",
        /// `listDir` is absent.
        ListDirUnsupported = "list_dir_unsupported",
        /// `listProjectDir` is absent.
        ListProjectDirUnsupported = "list_project_dir_unsupported",
        /// `readFiles` is absent (the Runner falls back to `readFile`).
        ReadFilesUnsupported = "read_files_unsupported",
        /// `openProcess` is absent.
        OpenProcessUnsupported = "open_process_unsupported",
        /// A live process is already open on the instance.
        ProcessAlreadyOpen = "process_already_open",
    }
}

impl From<InstanceState> for ConflictState {
    fn from(value: InstanceState) -> Self {
        match value {
            InstanceState::Provisioning => Self::Provisioning,
            InstanceState::Active => Self::Active,
        }
    }
}

vocabulary! {
    /// Why an operation failed: `SandboxOperationFailed.reason`.
    pub enum FailureReason: "reason" {
        /// The operation (or its rollback, or a bounded wait) exceeded its bound.
        TimedOut = "timed_out",
        /// The operation was interrupted before it settled.
        Interrupted = "interrupted",
        /// A path the request names does not exist.
        NotFound = "not_found",
        /// Resolution escaped the supplied `allowed_root` (e.g. a symlink).
        OutsideRoot = "outside_root",
        /// The path is not a regular file.
        NotRegularFile = "not_regular_file",
        /// Resolution met a symlink loop.
        SymlinkLoop = "symlink_loop",
        /// The platform refused access.
        PermissionDenied = "permission_denied",
        /// A platform resource (disk, quota, memory) ran out.
        ResourceExhausted = "resource_exhausted",
        /// A listing would exceed `max_entries`.
        TooManyEntries = "too_many_entries",
        /// The command or executable could not be started.
        SpawnFailed = "spawn_failed",
        /// A live stream closed under the caller.
        StreamClosed = "stream_closed",
        /// Content disagreed with its digest or journal.
        IntegrityMismatch = "integrity_mismatch",
        /// The backing platform could not be reached.
        PlatformUnavailable = "platform_unavailable",
        /// The backing platform refused the request.
        PlatformRejected = "platform_rejected",
    }
}

vocabulary! {
    /// One output stream of a command.
    pub enum OutputStream: "stream" {
        /// Standard output.
        Stdout = "stdout",
        /// Standard error.
        Stderr = "stderr",
    }
}

/// Why one candidate adapter was not selected.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterRejection {
    /// The candidate.
    pub provider: ProviderId,
    /// What it lacked.
    pub requirement: Requirement,
}

/// One disagreement between what the Runner expected and what a provider
/// returned. Converted into `SandboxProtocolInvalid` with
/// [`ProtocolViolation::into_error`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolViolation {
    /// The offending field, as a path (`materialization.image_digest`,
    /// `files[3].path`, `stdout.content`).
    pub field: String,
    /// What the Runner expected.
    pub expected: String,
    /// What the provider returned.
    pub actual: String,
}

impl ProtocolViolation {
    /// A violation of `field`.
    pub fn new(
        field: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            expected: expected.into(),
            actual: actual.into(),
        }
    }

    /// The `SandboxProtocolInvalid` error naming `operation`.
    pub fn into_error(self, operation: Operation) -> SandboxError {
        SandboxError::SandboxProtocolInvalid {
            operation,
            field: self.field,
            expected: self.expected,
            actual: self.actual,
        }
    }
}

impl fmt::Display for ProtocolViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, actual {}",
            self.field, self.expected, self.actual
        )
    }
}

struct States<'a>(&'a [InstanceState]);

impl fmt::Display for States<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(s.as_str())?;
        }
        f.write_str("]")
    }
}

struct Cause<'a>(&'a Option<Box<SandboxError>>);

impl fmt::Display for Cause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(cause) => write!(f, "; cause: {cause}"),
            None => Ok(()),
        }
    }
}

struct Capability<'a>(&'a Option<CapabilityField>);

impl fmt::Display for Capability<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(field) => write!(f, " (capability {field})"),
            None => Ok(()),
        }
    }
}

struct List<'a, T>(&'a [T]);

impl<T: fmt::Display> fmt::Display for List<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, item) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{item}")?;
        }
        f.write_str("]")
    }
}

impl fmt::Display for AdapterRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.provider, self.requirement)
    }
}

/// The closed error vocabulary of the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "error", deny_unknown_fields)]
pub enum SandboxError {
    /// Selection or an operation needs a capability the provider does not
    /// have.
    #[error(
        "SandboxCapabilityUnavailable: requirement {requirement}{}",
        Capability(.capability)
    )]
    SandboxCapabilityUnavailable {
        /// The closed requirement.
        requirement: Requirement,
        /// The envelope field that is missing, where it is narrower than the
        /// requirement (e.g. `snapshot_clone` under `snapshots`). corral's
        /// addition: the contract's requirement set has no `snapshot_clone`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capability: Option<CapabilityField>,
    },
    /// A file exceeds a byte limit.
    #[error("SandboxFileTooLarge: path {path}: limit {limit} bytes, actual {actual} bytes")]
    SandboxFileTooLarge {
        /// The file.
        path: SandboxPath,
        /// The limit it exceeds.
        limit: u64,
        /// Its size.
        actual: u64,
    },
    /// The instance does not exist (any more).
    #[error("SandboxInstanceNotFound: instance_id {instance_id}")]
    SandboxInstanceNotFound {
        /// The instance.
        instance_id: InstanceId,
    },
    /// The operation does not accept the instance's state, or the member is
    /// absent.
    #[error(
        "SandboxLifecycleConflict: operation {operation}: expected {}, actual {actual}",
        States(.expected)
    )]
    SandboxLifecycleConflict {
        /// The refused operation.
        operation: Operation,
        /// The states it accepts.
        expected: Vec<InstanceState>,
        /// What it found.
        actual: ConflictState,
    },
    /// The operation failed for a closed reason.
    #[error("SandboxOperationFailed: operation {operation}: reason {reason}{}", Cause(.cause))]
    SandboxOperationFailed {
        /// The failed operation (`<member>_rollback` for a compensation).
        operation: Operation,
        /// Why.
        reason: FailureReason,
        /// The error this one is combined with (e.g. the original rejection
        /// behind a rollback that timed out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<Box<SandboxError>>,
    },
    /// A command's stream exceeded its `output_limit_bytes` and the provider
    /// refused rather than truncate.
    #[error("SandboxOutputLimitExceeded: stream {stream}: limit {limit} bytes")]
    SandboxOutputLimitExceeded {
        /// The stream.
        stream: OutputStream,
        /// The limit.
        limit: u64,
    },
    /// A snapshot of an instance whose retention forbids it (ZDR).
    #[error("SandboxSnapshotForbidden: instance_id {instance_id}: retention {retention}")]
    SandboxSnapshotForbidden {
        /// The instance.
        instance_id: InstanceId,
        /// Its retention mode.
        retention: RetentionMode,
    },
    /// The snapshot does not exist (any more).
    #[error("SandboxSnapshotNotFound: snapshot_id {snapshot_id}")]
    SandboxSnapshotNotFound {
        /// The snapshot.
        snapshot_id: SnapshotId,
    },
    /// Runtime only: no adapter satisfies the request.
    #[error("SandboxAdapterUnavailable: rejected {}", List(.rejected))]
    SandboxAdapterUnavailable {
        /// Each candidate with what it lacked (empty: no candidate at all).
        rejected: Vec<AdapterRejection>,
    },
    /// Runtime only: more than one adapter satisfies the request.
    #[error("SandboxAdapterAmbiguous: candidates {}", List(.candidates))]
    SandboxAdapterAmbiguous {
        /// The adapters that all qualified.
        candidates: Vec<ProviderId>,
    },
    /// Runtime only: a result failed decoding or a cross-check.
    #[error(
        "SandboxProtocolInvalid: operation {operation}: field {field}: expected {expected}, actual {actual}"
    )]
    SandboxProtocolInvalid {
        /// The operation whose result was refused (`instance_identity`,
        /// `open_process_identity`, or the member).
        operation: Operation,
        /// The offending field.
        field: String,
        /// What was expected.
        expected: String,
        /// What came back.
        actual: String,
    },
}

vocabulary! {
    /// The name of a [`SandboxError`] variant (its `error` tag).
    pub enum ErrorKind: "error" {
        /// [`SandboxError::SandboxCapabilityUnavailable`].
        SandboxCapabilityUnavailable = "SandboxCapabilityUnavailable",
        /// [`SandboxError::SandboxFileTooLarge`].
        SandboxFileTooLarge = "SandboxFileTooLarge",
        /// [`SandboxError::SandboxInstanceNotFound`].
        SandboxInstanceNotFound = "SandboxInstanceNotFound",
        /// [`SandboxError::SandboxLifecycleConflict`].
        SandboxLifecycleConflict = "SandboxLifecycleConflict",
        /// [`SandboxError::SandboxOperationFailed`].
        SandboxOperationFailed = "SandboxOperationFailed",
        /// [`SandboxError::SandboxOutputLimitExceeded`].
        SandboxOutputLimitExceeded = "SandboxOutputLimitExceeded",
        /// [`SandboxError::SandboxSnapshotForbidden`].
        SandboxSnapshotForbidden = "SandboxSnapshotForbidden",
        /// [`SandboxError::SandboxSnapshotNotFound`].
        SandboxSnapshotNotFound = "SandboxSnapshotNotFound",
        /// [`SandboxError::SandboxAdapterUnavailable`].
        SandboxAdapterUnavailable = "SandboxAdapterUnavailable",
        /// [`SandboxError::SandboxAdapterAmbiguous`].
        SandboxAdapterAmbiguous = "SandboxAdapterAmbiguous",
        /// [`SandboxError::SandboxProtocolInvalid`].
        SandboxProtocolInvalid = "SandboxProtocolInvalid",
    }
}

impl ErrorKind {
    /// Whether an adapter may author this error (the eight); the other three
    /// are the runtime's own.
    pub const fn is_adapter_error(self) -> bool {
        !matches!(
            self,
            Self::SandboxAdapterUnavailable
                | Self::SandboxAdapterAmbiguous
                | Self::SandboxProtocolInvalid
        )
    }
}

impl SandboxError {
    /// The variant's name.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::SandboxCapabilityUnavailable { .. } => ErrorKind::SandboxCapabilityUnavailable,
            Self::SandboxFileTooLarge { .. } => ErrorKind::SandboxFileTooLarge,
            Self::SandboxInstanceNotFound { .. } => ErrorKind::SandboxInstanceNotFound,
            Self::SandboxLifecycleConflict { .. } => ErrorKind::SandboxLifecycleConflict,
            Self::SandboxOperationFailed { .. } => ErrorKind::SandboxOperationFailed,
            Self::SandboxOutputLimitExceeded { .. } => ErrorKind::SandboxOutputLimitExceeded,
            Self::SandboxSnapshotForbidden { .. } => ErrorKind::SandboxSnapshotForbidden,
            Self::SandboxSnapshotNotFound { .. } => ErrorKind::SandboxSnapshotNotFound,
            Self::SandboxAdapterUnavailable { .. } => ErrorKind::SandboxAdapterUnavailable,
            Self::SandboxAdapterAmbiguous { .. } => ErrorKind::SandboxAdapterAmbiguous,
            Self::SandboxProtocolInvalid { .. } => ErrorKind::SandboxProtocolInvalid,
        }
    }

    /// `SandboxCapabilityUnavailable{requirement}`.
    pub const fn capability_unavailable(requirement: Requirement) -> Self {
        Self::SandboxCapabilityUnavailable {
            requirement,
            capability: None,
        }
    }

    /// `SandboxOperationFailed{operation, reason}` without a cause.
    pub const fn operation_failed(operation: Operation, reason: FailureReason) -> Self {
        Self::SandboxOperationFailed {
            operation,
            reason,
            cause: None,
        }
    }

    /// `SandboxLifecycleConflict{operation, expected, actual}`.
    pub fn lifecycle_conflict(
        operation: Operation,
        expected: &[InstanceState],
        actual: ConflictState,
    ) -> Self {
        Self::SandboxLifecycleConflict {
            operation,
            expected: expected.to_vec(),
            actual,
        }
    }

    /// The error a rollback that exceeded its 30-second bound produces:
    /// `SandboxOperationFailed{<operation>_rollback, timed_out}` combined with
    /// the original rejection.
    pub fn rollback_timed_out(
        operation: crate::operation::Compensated,
        original: SandboxError,
    ) -> Self {
        Self::SandboxOperationFailed {
            operation: Operation::Rollback(operation),
            reason: FailureReason::TimedOut,
            cause: Some(Box::new(original)),
        }
    }
}
