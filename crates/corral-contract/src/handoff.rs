//! Allocation handoff: `{ value, rollback }`.
//!
//! "`rollback` is a cold compensation for that exact allocation. The Runner
//! invokes it at most once, and only when it rejects or is interrupted before
//! taking ownership of `value`."

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::SandboxError;

/// A boxed, `Send` future — the return type of the object-safe traits.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The compensation of one allocation.
///
/// Rules the implementation must keep:
/// - it knows what it allocated on its own — it never derives its authority
///   from the handed-off value, which the Runner rejected precisely because
///   it could not be trusted;
/// - it is idempotent: invoked again after a lost response it settles the
///   same way;
/// - it settles within [`crate::bounds::ROLLBACK_BOUND_SECONDS`]; the Runner
///   detaches it after that and reports
///   `SandboxOperationFailed{<operation>_rollback, timed_out}`.
pub trait Rollback: Send + Sync {
    /// Undoes the allocation.
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>>;
}

/// A rollback for an allocation that left nothing behind (or whose
/// compensation is a no-op).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRollback;

impl Rollback for NoRollback {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What the six handoff operations return: the value, and the compensation
/// the Runner runs if it does not take ownership of it.
pub struct Handoff<T> {
    /// The allocated value.
    pub value: T,
    /// The compensation for exactly this allocation.
    pub rollback: Box<dyn Rollback>,
}

impl<T> Handoff<T> {
    /// Pairs a value with its compensation.
    pub fn new(value: T, rollback: impl Rollback + 'static) -> Self {
        Self {
            value,
            rollback: Box::new(rollback),
        }
    }

    /// Splits into the value and its compensation.
    pub fn into_parts(self) -> (T, Box<dyn Rollback>) {
        (self.value, self.rollback)
    }
}

impl<T: fmt::Debug> fmt::Debug for Handoff<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}
