//! Allocation handoff: "`rollback` is a cold compensation for that exact
//! allocation. The Runner invokes it at most once, and only when it rejects
//! or is interrupted before taking ownership of `value`." And "`rollback`
//! is bounded at 30 seconds. Exceeding it does not hang the Run: the Runner
//! detaches the fiber, fails with a `SandboxOperationFailed` naming the
//! operation's `_rollback` suffix and a `timed_out` reason, combines it
//! with the original rejection cause".
//!
//! For each of the six handoff members the liar lies once (everything
//! before it is honest) and the ledger shows the rollback ran exactly once,
//! for that member only; told to hang its rollbacks too, the runtime fails
//! within its (shortened) bound with `<member>_rollback` / `timed_out`
//! carrying the original refusal. An honest walk through all six members
//! runs no rollback at all.

use crate::liar;
use std::time::{Duration, Instant};

use corral_contract::{
    Compensated, ErrorKind, FailureReason, IdentityField, Operation, SandboxError,
};
use liar::fixtures::{memory_liar, runtime};
use liar::flows::{HANDOFF_ORDER, durable_lifecycle};
use liar::lie::{CloneLie, InstanceMember, Lie, ReleaseLie, SnapshotLie};

/// The bound the timeout tests give the runtime.
const BOUND: Duration = Duration::from_millis(200);

/// How long a test waits before declaring the run hung.
const HUNG: Duration = Duration::from_secs(10);

/// One lie that makes the runtime refuse `member`'s result.
fn lie_about(member: Compensated) -> Lie {
    match member {
        Compensated::Provision => Lie::Identity {
            member: InstanceMember::Provision,
            field: IdentityField::ExpiresAt,
        },
        Compensated::Activate => Lie::Identity {
            member: InstanceMember::Activate,
            field: IdentityField::ExpiresAt,
        },
        Compensated::Snapshot => Lie::Snapshot(SnapshotLie::MovedExpiresAt),
        Compensated::CloneSnapshot => Lie::Clone(CloneLie::MovesExpiry),
        Compensated::Release => Lie::Release(ReleaseLie::DestroyedOnDurable),
        Compensated::Resume => Lie::Identity {
            member: InstanceMember::Resume,
            field: IdentityField::ExpiresAt,
        },
        Compensated::OpenProcess => unreachable!("openProcess is not a handoff member"),
    }
}

/// The operation the runtime's refusal of `member`'s lie names.
fn refusing_operation(member: Compensated) -> Operation {
    match member {
        Compensated::Provision | Compensated::Activate | Compensated::Resume => {
            Operation::InstanceIdentity
        }
        other => other.member(),
    }
}

async fn refused_exactly_once(member: Compensated) {
    let liar = memory_liar().telling(lie_about(member));
    let ledger = liar.ledger();
    let runtime = runtime(liar);

    let (_, outcome) = durable_lifecycle(&runtime).await;

    let error = outcome.expect_err("the runtime accepted a lie");
    match &error {
        SandboxError::SandboxProtocolInvalid { operation, .. } => {
            assert_eq!(*operation, refusing_operation(member), "{error}")
        }
        other => panic!("expected SandboxProtocolInvalid, runtime said: {other}"),
    }
    for op in HANDOFF_ORDER {
        let want = usize::from(op == member);
        assert_eq!(
            ledger.rollbacks(op),
            want,
            "{op} rolled back {} times while {member} was the refused member",
            ledger.rollbacks(op)
        );
    }
}

async fn hang_is_bounded(member: Compensated) {
    let liar = memory_liar()
        .telling(lie_about(member))
        .telling(Lie::RollbackHangs);
    let ledger = liar.ledger();
    let runtime = runtime(liar).with_rollback_bound(BOUND);

    let started = Instant::now();
    let (_, outcome) = tokio::time::timeout(HUNG, durable_lifecycle(&runtime))
        .await
        .unwrap_or_else(|_| panic!("a hanging {member} rollback hung the run"));
    let elapsed = started.elapsed();

    let error = outcome.expect_err("the runtime accepted a lie");
    match &error {
        SandboxError::SandboxOperationFailed {
            operation,
            reason,
            cause,
        } => {
            assert_eq!(*operation, Operation::Rollback(member), "{error}");
            assert_eq!(*reason, FailureReason::TimedOut, "{error}");
            let cause = cause
                .as_deref()
                .unwrap_or_else(|| panic!("the original rejection is not combined: {error}"));
            assert_eq!(cause.kind(), ErrorKind::SandboxProtocolInvalid, "{error}");
            match cause {
                SandboxError::SandboxProtocolInvalid { operation, .. } => {
                    assert_eq!(*operation, refusing_operation(member), "{error}")
                }
                other => panic!("unexpected cause {other}"),
            }
        }
        other => {
            panic!("expected SandboxOperationFailed({member}_rollback), runtime said: {other}")
        }
    }
    assert!(
        elapsed >= BOUND,
        "the runtime gave up after {elapsed:?}, before its bound"
    );
    assert_eq!(
        ledger.rollbacks(member),
        1,
        "the hung rollback was invoked once"
    );
}

macro_rules! per_member {
    ($($member:ident: $once:ident, $hang:ident;)+) => {
        $(
            #[tokio::test]
            async fn $once() {
                refused_exactly_once(Compensated::$member).await;
            }

            #[tokio::test]
            async fn $hang() {
                hang_is_bounded(Compensated::$member).await;
            }
        )+
    };
}

per_member! {
    Provision: rollback_runs_once_when_provision_is_refused, rollback_timeout_names_provision_rollback;
    Activate: rollback_runs_once_when_activate_is_refused, rollback_timeout_names_activate_rollback;
    Snapshot: rollback_runs_once_when_snapshot_is_refused, rollback_timeout_names_snapshot_rollback;
    CloneSnapshot: rollback_runs_once_when_clone_snapshot_is_refused, rollback_timeout_names_clone_snapshot_rollback;
    Release: rollback_runs_once_when_release_is_refused, rollback_timeout_names_release_rollback;
    Resume: rollback_runs_once_when_resume_is_refused, rollback_timeout_names_resume_rollback;
}

/// "only when it rejects": an honest walk through all six handoff members
/// hands out six rollbacks and runs none.
#[tokio::test]
async fn rollback_never_runs_on_acceptance() {
    let liar = memory_liar();
    let ledger = liar.ledger();
    let runtime = runtime(liar);

    let (done, outcome) = durable_lifecycle(&runtime).await;

    outcome.expect("an honest lifecycle is accepted end to end");
    assert!(done.resumed.is_some());
    for op in HANDOFF_ORDER {
        assert_eq!(ledger.handoffs(op), 1, "{op} handed off once");
    }
    assert_eq!(
        ledger.total_rollbacks(),
        0,
        "an accepted value is never rolled back"
    );
}
