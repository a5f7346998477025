//! What the liar was asked and what it was told to undo: calls per member,
//! handoffs issued and rollbacks invoked per compensated operation, and
//! live-process teardowns.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use corral_contract::{BoxFuture, Compensated, Operation, Rollback, SandboxError};

/// Long enough to outlast every bound a test sets: a "hang".
pub const HANG: Duration = Duration::from_secs(3600);

#[derive(Debug, Default)]
struct Counts {
    calls: BTreeMap<Operation, usize>,
    handoffs: BTreeMap<Compensated, usize>,
    rollbacks: BTreeMap<Compensated, usize>,
    process_destroys: usize,
}

/// The liar's record. Shared (`Arc`) between the liar, the rollbacks it
/// hands out and the live processes it wraps, so a count taken after the
/// runtime dropped them is still complete.
#[derive(Debug, Default)]
pub struct Ledger {
    counts: Mutex<Counts>,
}

impl Ledger {
    fn counts(&self) -> MutexGuard<'_, Counts> {
        // A test that panicked while holding the lock already failed; the
        // counts stay readable for the others.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one call of `member`.
    pub fn record_call(&self, member: Operation) {
        *self.counts().calls.entry(member).or_default() += 1;
    }

    /// Records one handoff issued by `operation`.
    pub fn record_handoff(&self, operation: Compensated) {
        *self.counts().handoffs.entry(operation).or_default() += 1;
    }

    /// Records one rollback invocation of `operation`'s handoff.
    pub fn record_rollback(&self, operation: Compensated) {
        *self.counts().rollbacks.entry(operation).or_default() += 1;
    }

    /// Records one `destroy` of a live process the liar handed out.
    pub fn record_process_destroy(&self) {
        self.counts().process_destroys += 1;
    }

    /// How often `member` was called.
    pub fn calls(&self, member: Operation) -> usize {
        self.counts().calls.get(&member).copied().unwrap_or(0)
    }

    /// How many handoffs `operation` issued.
    pub fn handoffs(&self, operation: Compensated) -> usize {
        self.counts().handoffs.get(&operation).copied().unwrap_or(0)
    }

    /// How often a rollback of `operation` was invoked.
    pub fn rollbacks(&self, operation: Compensated) -> usize {
        self.counts()
            .rollbacks
            .get(&operation)
            .copied()
            .unwrap_or(0)
    }

    /// How many rollbacks were invoked, across every operation.
    pub fn total_rollbacks(&self) -> usize {
        self.counts().rollbacks.values().sum()
    }

    /// How often a live process's `destroy` was invoked.
    pub fn process_destroys(&self) -> usize {
        self.counts().process_destroys
    }
}

/// The rollback the liar hands out: records the invocation, then runs the
/// inner provider's own compensation (so the allocation really is undone),
/// or hangs first when told to.
pub struct RecordingRollback {
    operation: Compensated,
    inner: Box<dyn Rollback>,
    ledger: Arc<Ledger>,
    hangs: bool,
}

impl RecordingRollback {
    /// Wraps `inner`, the compensation of one `operation` handoff.
    pub fn new(
        operation: Compensated,
        inner: Box<dyn Rollback>,
        ledger: Arc<Ledger>,
        hangs: bool,
    ) -> Self {
        Self {
            operation,
            inner,
            ledger,
            hangs,
        }
    }
}

impl Rollback for RecordingRollback {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.ledger.record_rollback(self.operation);
        Box::pin(async move {
            if self.hangs {
                tokio::time::sleep(HANG).await;
            }
            self.inner.rollback().await
        })
    }
}
