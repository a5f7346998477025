//! [`SnapshotError`]: a snapshot primitive failed.

use super::ErrorCode;

/// Why taking, restoring or deleting a snapshot failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// No snapshot has this id (any more).
    #[error("no snapshot with id {snapshot:?}")]
    NotFound {
        /// The id asked for.
        snapshot: String,
    },
    /// The snapshot's stored form is damaged.
    #[error("snapshot {snapshot} is corrupted: {why}")]
    Corrupted {
        /// The snapshot.
        snapshot: String,
        /// What is wrong with it.
        why: String,
    },
    /// Taking or restoring the snapshot ran past a budget (bytes, entries).
    #[error("{what}: {detail}")]
    OverBudget {
        /// The snapshot being taken or restored.
        what: String,
        /// The budget and how it was passed.
        detail: String,
    },
    /// Taking or restoring the snapshot ran past its deadline.
    #[error("{what}: {detail}")]
    TimedOut {
        /// The snapshot being taken or restored.
        what: String,
        /// The deadline.
        detail: String,
    },
}

impl SnapshotError {
    /// The SDK's code.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::NotFound { .. } => ErrorCode::NotFound,
            Self::Corrupted { .. } => ErrorCode::Provider,
            Self::OverBudget { .. } => ErrorCode::Quota,
            Self::TimedOut { .. } => ErrorCode::Timeout,
        }
    }
}
