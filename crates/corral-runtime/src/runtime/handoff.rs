//! The allocation handoff: rollback at most once, bounded, combined errors.
//!
//! "`rollback` is a cold compensation for that exact allocation. The Runner
//! invokes it at most once, and only when it rejects or is interrupted before
//! taking ownership of `value`." … "`rollback` is bounded at 30 seconds.
//! Exceeding it does not hang the Run: the Runner detaches the fiber, fails
//! with a `SandboxOperationFailed` naming the operation's `_rollback` suffix
//! and a `timed_out` reason, combines it with the original rejection cause,
//! and lets sweep reconciliation and hard expiry settle the orphan."
//!
//! [`Pending`] holds the rollback from the moment the provider returns until
//! the runtime either accepts the value (the rollback is handed on to the
//! caller, never invoked here) or rejects it (the rollback is invoked once).
//! A compensation always runs as its own task, so interrupting the caller —
//! dropping the runtime's future — never cancels it; and a `Pending` dropped
//! before either decision (the caller's future dropped, or a panic while
//! validating) starts the rollback detached from its drop.

use std::time::Duration;

use corral_contract::{
    BoxFuture, Compensated, FailureReason, Handoff, NoRollback, Operation, Rollback, SandboxError,
};

/// A compensation that owns everything it needs.
pub(crate) type Compensation = BoxFuture<'static, Result<(), SandboxError>>;

/// How a bounded compensation settled.
#[derive(Debug)]
pub(crate) enum Settled {
    /// It finished with this result.
    Done(Result<(), SandboxError>),
    /// It panicked (or its executor shut down under it).
    Panicked,
    /// It did not finish within the bound; it runs on, detached.
    TimedOut,
    /// No thread could be started to run it.
    Unstarted,
}

/// Runs `compensation` as a task of its own and waits for it at most
/// `bound`. Inside a Tokio runtime the task is spawned there (which needs
/// the time driver); elsewhere it runs on a thread with its own runtime.
/// Past the bound the task keeps running detached.
pub(crate) async fn run_bounded(compensation: Compensation, bound: Duration) -> Settled {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let task = handle.spawn(compensation);
        return match tokio::time::timeout(bound, task).await {
            Ok(Ok(result)) => Settled::Done(result),
            Ok(Err(_)) => Settled::Panicked,
            Err(_) => Settled::TimedOut,
        };
    }
    let (report, settled) = tokio::sync::oneshot::channel();
    if !on_own_thread(compensation, bound, Some(report)) {
        return Settled::Unstarted;
    }
    settled.await.unwrap_or(Settled::Panicked)
}

/// Starts `compensation` without waiting for it.
pub(crate) fn detach(compensation: Compensation, bound: Duration) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn(compensation)),
        Err(_) => {
            // Nothing waits for a detached compensation; a thread that cannot
            // be started leaves the orphan to sweep reconciliation.
            let _started = on_own_thread(compensation, bound, None);
        }
    }
}

/// Runs `compensation` on a new thread with a current-thread runtime,
/// reporting how it settled within `bound` (and letting it finish after).
fn on_own_thread(
    compensation: Compensation,
    bound: Duration,
    report: Option<tokio::sync::oneshot::Sender<Settled>>,
) -> bool {
    let spawned = std::thread::Builder::new()
        .name("corral-compensation".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
            {
                Ok(runtime) => runtime,
                Err(_) => {
                    if let Some(report) = report {
                        let _ = report.send(Settled::Unstarted);
                    }
                    return;
                }
            };
            runtime.block_on(async move {
                let mut task = tokio::spawn(compensation);
                let settled = match tokio::time::timeout(bound, &mut task).await {
                    Ok(Ok(result)) => Settled::Done(result),
                    Ok(Err(_)) => Settled::Panicked,
                    Err(_) => Settled::TimedOut,
                };
                let timed_out = matches!(settled, Settled::TimedOut);
                if let Some(report) = report {
                    let _ = report.send(settled);
                }
                if timed_out {
                    let _ = task.await;
                }
            });
        });
    spawned.is_ok()
}

/// Combines how a compensation settled with the rejection that caused it.
///
/// - settled `Ok` (or the allocation is already gone: `SandboxInstanceNotFound`
///   / `SandboxSnapshotNotFound`): the original rejection;
/// - timed out: `SandboxOperationFailed{<operation>_rollback, timed_out,
///   cause: rejection}` ([`SandboxError::rollback_timed_out`]);
/// - failed: `SandboxOperationFailed{<operation>_rollback, reason, cause:
///   rejection}` with the failure's own reason when it has one
///   (`platform_rejected` otherwise), `interrupted` when it panicked,
///   `resource_exhausted` when it could not be started.
pub(crate) fn combine(
    operation: Compensated,
    settled: Settled,
    cause: SandboxError,
) -> SandboxError {
    let failed = |reason, cause| SandboxError::SandboxOperationFailed {
        operation: Operation::Rollback(operation),
        reason,
        cause: Some(Box::new(cause)),
    };
    match settled {
        Settled::Done(Ok(())) => cause,
        Settled::Done(Err(
            SandboxError::SandboxInstanceNotFound { .. }
            | SandboxError::SandboxSnapshotNotFound { .. },
        )) => cause,
        Settled::Done(Err(SandboxError::SandboxOperationFailed { reason, .. })) => {
            failed(reason, cause)
        }
        Settled::Done(Err(_)) => failed(FailureReason::PlatformRejected, cause),
        Settled::TimedOut => SandboxError::rollback_timed_out(operation, cause),
        Settled::Panicked => failed(FailureReason::Interrupted, cause),
        Settled::Unstarted => failed(FailureReason::ResourceExhausted, cause),
    }
}

struct Armed {
    rollback: Box<dyn Rollback>,
    operation: Compensated,
    bound: Duration,
}

impl Armed {
    fn compensation(self) -> (Compensation, Compensated, Duration) {
        let rollback = self.rollback;
        (
            Box::pin(async move { rollback.rollback().await }),
            self.operation,
            self.bound,
        )
    }
}

/// A handoff the runtime has received and not yet decided on.
pub(crate) struct Pending {
    armed: Option<Armed>,
}

impl Pending {
    /// Takes the value out of `handoff` and holds its rollback.
    pub(crate) fn hold<T>(
        handoff: Handoff<T>,
        operation: Compensated,
        bound: Duration,
    ) -> (T, Self) {
        let (value, rollback) = handoff.into_parts();
        let armed = Armed {
            rollback,
            operation,
            bound,
        };
        (value, Self { armed: Some(armed) })
    }

    /// Takes ownership of the value: the rollback is not invoked here; it is
    /// returned for the caller to hand on.
    pub(crate) fn accept(mut self) -> Box<dyn Rollback> {
        match self.armed.take() {
            Some(armed) => armed.rollback,
            None => Box::new(NoRollback),
        }
    }

    /// Rejects the value: invokes the rollback once, waits for it at most the
    /// bound, and returns the rejection combined with how it settled.
    pub(crate) async fn reject(mut self, cause: SandboxError) -> SandboxError {
        let Some(armed) = self.armed.take() else {
            return cause;
        };
        let (compensation, operation, bound) = armed.compensation();
        let settled = run_bounded(compensation, bound).await;
        combine(operation, settled, cause)
    }
}

impl Drop for Pending {
    /// Interrupted before a decision: the rollback still runs, detached.
    fn drop(&mut self) {
        if let Some(armed) = self.armed.take() {
            let (compensation, _, bound) = armed.compensation();
            detach(compensation, bound);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    use super::*;

    struct Counted {
        invoked: Arc<AtomicUsize>,
        done: mpsc::SyncSender<()>,
    }

    impl Rollback for Counted {
        fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
            Box::pin(async move {
                self.invoked.fetch_add(1, Ordering::SeqCst);
                let _ = self.done.try_send(());
                Ok(())
            })
        }
    }

    fn pending() -> (Pending, Arc<AtomicUsize>, mpsc::Receiver<()>) {
        let invoked = Arc::new(AtomicUsize::new(0));
        let (done, finished) = mpsc::sync_channel(4);
        let rollback = Counted {
            invoked: invoked.clone(),
            done,
        };
        let (_, pending) = Pending::hold(
            Handoff::new((), rollback),
            Compensated::Provision,
            Duration::from_secs(5),
        );
        (pending, invoked, finished)
    }

    #[tokio::test]
    async fn a_pending_handoff_dropped_inside_tokio_still_runs_its_rollback_once() {
        let (pending, invoked, finished) = pending();
        drop(pending);
        tokio::task::spawn_blocking(move || finished.recv_timeout(Duration::from_secs(5)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(invoked.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_pending_handoff_dropped_outside_any_runtime_still_runs_its_rollback_once() {
        let (pending, invoked, finished) = pending();
        drop(pending);
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(invoked.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_rejection_outside_any_runtime_runs_the_rollback_on_its_own_thread() {
        let (pending, invoked, _finished) = pending();
        let cause = SandboxError::operation_failed(Operation::Provision, FailureReason::NotFound);
        let combined = block_on_without_tokio(pending.reject(cause.clone()));
        assert_eq!(combined, cause);
        assert_eq!(invoked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_accepted_handoff_never_runs_its_rollback() {
        let (pending, invoked, _finished) = pending();
        let handed_on = pending.accept();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(invoked.load(Ordering::SeqCst), 0);
        handed_on.rollback().await.unwrap();
        assert_eq!(invoked.load(Ordering::SeqCst), 1);
    }

    /// A minimal executor with no Tokio context: polls on a thread parker.
    fn block_on_without_tokio<F: std::future::Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Wake, Waker};
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            std::thread::park();
        }
    }
}
