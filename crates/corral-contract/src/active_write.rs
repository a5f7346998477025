//! `beginActiveWrite`: an atomic, journaled file batch into one read-write
//! mount of an active instance.
//!
//! "A transaction remains caller-owned and abortable while its durable
//! journal is `open`. Immediately before the provider changes that journal
//! to `dispatched`, it invokes the transaction's dispatch marker … Publication
//! records a durable committed marker before deleting rollback evidence.
//! Recovery rolls back an uncommitted dispatch and finishes cleanup forward
//! after the committed marker."

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{MAX_ACTIVE_WRITE_AGGREGATE_BYTES, MAX_ACTIVE_WRITE_FILES};
use crate::handoff::BoxFuture;
use crate::macros::vocabulary;
use crate::{
    FileContent, FileMode, InstanceId, InvalidValue, SandboxError, SandboxPath, TransactionId,
};

/// One regular file of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActiveWriteFile {
    /// Where it is published.
    pub path: SandboxPath,
    /// Its content (at most 16 MiB).
    pub content: FileContent,
    /// Its permission bits (default `0o644`).
    #[serde(default)]
    pub mode: FileMode,
}

/// A bounded regular-file batch: 1 to 1,024 files, at most 128 MiB in total
/// (corral's bounds, mirroring `readFiles`), no path twice, and no path an
/// ancestor of another (an ancestor conflict). Which mount owns the targets
/// is the provider's resolution (the deepest mount that owns every target).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawActiveWriteBatch")]
pub struct ActiveWriteBatch {
    files: Vec<ActiveWriteFile>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ActiveWriteBatch")]
struct RawActiveWriteBatch {
    #[schemars(length(min = 1, max = 1024))]
    files: Vec<ActiveWriteFile>,
}

impl TryFrom<RawActiveWriteBatch> for ActiveWriteBatch {
    type Error = InvalidValue;
    fn try_from(raw: RawActiveWriteBatch) -> Result<Self, Self::Error> {
        Self::new(raw.files)
    }
}

impl ActiveWriteBatch {
    /// Validates the batch.
    pub fn new(files: Vec<ActiveWriteFile>) -> Result<Self, InvalidValue> {
        if files.is_empty() {
            return Err(InvalidValue::rule(
                "files",
                "is empty (a batch writes at least one file)",
            ));
        }
        if files.len() > MAX_ACTIVE_WRITE_FILES {
            return Err(InvalidValue::value(
                "files",
                format_args!("of {} entries", files.len()),
                format!("exceeds {MAX_ACTIVE_WRITE_FILES} files per batch"),
            ));
        }
        let mut total: u64 = 0;
        for (i, file) in files.iter().enumerate() {
            total = total.saturating_add(file.content.len() as u64);
            for other in &files[..i] {
                if other.path == file.path {
                    return Err(InvalidValue::string(
                        format!("files[{i}].path"),
                        file.path.as_str(),
                        "is written twice",
                    ));
                }
                if file.path.overlaps(&other.path) {
                    return Err(InvalidValue::string(
                        format!("files[{i}].path"),
                        file.path.as_str(),
                        format!("conflicts with ancestor-or-descendant {}", other.path),
                    ));
                }
            }
        }
        if total > MAX_ACTIVE_WRITE_AGGREGATE_BYTES {
            return Err(InvalidValue::value(
                "files",
                format_args!("totalling {total} bytes"),
                format!("exceeds {MAX_ACTIVE_WRITE_AGGREGATE_BYTES} bytes per batch"),
            ));
        }
        Ok(Self { files })
    }

    /// The files, in order.
    pub fn files(&self) -> &[ActiveWriteFile] {
        &self.files
    }
}

/// `beginActiveWrite`: stage a batch into an active instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActiveWriteRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The batch.
    pub batch: ActiveWriteBatch,
}

vocabulary! {
    /// The state of an active-write journal.
    pub enum JournalState: "journal state" {
        /// Staged; caller-owned and abortable. Never recovery work.
        Open = "open",
        /// Publication may have begun; recovery rolls it back unless
        /// committed.
        Dispatched = "dispatched",
        /// The durable committed marker is recorded; recovery finishes
        /// cleanup forward.
        Committed = "committed",
        /// corral's terminal state for an aborted (`open`) or recovered
        /// (`dispatched`) journal.
        RolledBack = "rolled_back",
    }
}

impl JournalState {
    /// The allowed transitions: `open → dispatched → committed`, and
    /// `open | dispatched → rolled_back`. `committed` and `rolled_back` are
    /// terminal.
    pub const fn can_transition_to(self, next: JournalState) -> bool {
        matches!(
            (self, next),
            (Self::Open, Self::Dispatched)
                | (Self::Dispatched, Self::Committed)
                | (Self::Open, Self::RolledBack)
                | (Self::Dispatched, Self::RolledBack)
        )
    }

    /// Moves to `next`, refusing a transition the journal does not allow.
    pub fn transition(self, next: JournalState) -> Result<JournalState, InvalidValue> {
        if self.can_transition_to(next) {
            Ok(next)
        } else {
            Err(InvalidValue::string(
                "journal state",
                next.as_str(),
                format!("cannot follow {self}"),
            ))
        }
    }

    /// Whether the state is terminal.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Committed | Self::RolledBack)
    }

    /// Whether recovery must act on a journal in this state (only
    /// `dispatched`: "Only dispatched journals are recovery work").
    pub const fn is_recovery_work(self) -> bool {
        matches!(self, Self::Dispatched)
    }
}

/// The caller's marker, invoked by the provider immediately before the
/// journal becomes `dispatched`. A caller that stops observing after the
/// marker leaves the command indeterminate and available for redelivery.
pub trait DispatchMarker: Send + Sync {
    /// The transaction is about to be dispatched.
    fn dispatched(&self, transaction_id: &TransactionId);
}

/// An open active-write transaction.
pub trait ActiveWriteTransaction: Send + Sync {
    /// The transaction's identifier.
    fn transaction_id(&self) -> &TransactionId;

    /// The journal's current state.
    fn state(&self) -> JournalState;

    /// Publishes the batch atomically: invokes `marker` immediately before
    /// the journal becomes `dispatched`, records the committed marker before
    /// deleting rollback evidence, and settles `committed`.
    fn commit<'a>(
        &'a self,
        marker: &'a dyn DispatchMarker,
    ) -> BoxFuture<'a, Result<(), SandboxError>>;

    /// Aborts an `open` transaction (or recovers a `dispatched` one that did
    /// not commit); idempotent.
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_transitions() {
        use JournalState::*;
        assert!(Open.can_transition_to(Dispatched));
        assert!(Dispatched.can_transition_to(Committed));
        assert!(Open.can_transition_to(RolledBack));
        assert!(Dispatched.can_transition_to(RolledBack));
        assert!(!Open.can_transition_to(Committed));
        assert!(!Committed.can_transition_to(RolledBack));
        assert!(!Committed.can_transition_to(Open));
        assert!(!RolledBack.can_transition_to(Open));
        assert!(!Dispatched.can_transition_to(Open));
        assert_eq!(
            Open.transition(Committed).unwrap_err().to_string(),
            r#"journal state: "committed" cannot follow open"#
        );
    }
}
