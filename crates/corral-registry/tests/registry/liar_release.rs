//! `release`: "Durable: settle a snapshot. ZDR: destroy every trace" —
//! "Runtime rejects a `released` disposition on a ZDR profile, or
//! `destroyed` on a durable one". The snapshot a durable release settles
//! gets `snapshot`'s checks (corral: it must carry exactly the requested
//! `snapshot_expires_at`).

use crate::liar;
use corral_contract::{
    Compensated, Operation, ReleaseDisposition, ReleaseRequest, RetentionMode, SandboxError,
    SandboxProvider, Timestamp,
};
use liar::corrupt::shifted;
use liar::fixtures::{
    LiarRuntime, active, assert_protocol_invalid, live_snapshots, memory_liar, refused, rendered,
    runtime,
};
use liar::flows::in_a_day;
use liar::ledger::Ledger;
use liar::lie::{Lie, ReleaseLie};

/// Releases an active instance of `retention` through a liar told `lie`,
/// with `deadline` as the settled snapshot's retention deadline.
async fn release_with(
    lie: Option<ReleaseLie>,
    retention: RetentionMode,
    deadline: Option<Timestamp>,
) -> (
    LiarRuntime,
    std::sync::Arc<Ledger>,
    Result<ReleaseDisposition, SandboxError>,
) {
    let liar = memory_liar();
    if let Some(lie) = lie {
        liar.tell(Lie::Release(lie));
    }
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (_, instance) = active(&runtime, retention).await;
    let outcome = runtime
        .release(ReleaseRequest {
            instance_id: instance.instance_id,
            snapshot_expires_at: deadline,
        })
        .await
        .map(|handoff| handoff.value);
    (runtime, ledger, outcome)
}

/// The honest baseline: ZDR destroys, durable settles a snapshot, and
/// nothing is rolled back.
#[tokio::test]
async fn release_accepts_the_disposition_its_retention_requires() {
    let (_, ledger, zdr) = release_with(None, RetentionMode::EphemeralZdr, None).await;
    assert_eq!(
        zdr.expect("an honest ZDR release"),
        ReleaseDisposition::Destroyed
    );
    let deadline = in_a_day();
    let (_, durable_ledger, durable) =
        release_with(None, RetentionMode::Durable, Some(deadline)).await;
    match durable.expect("an honest durable release") {
        ReleaseDisposition::Released { snapshot } => assert_eq!(snapshot.expires_at, deadline),
        ReleaseDisposition::Destroyed => panic!("a durable release settled no snapshot"),
    }
    assert_eq!(
        ledger.total_rollbacks() + durable_ledger.total_rollbacks(),
        0
    );
}

/// "a `released` disposition on a ZDR profile".
#[tokio::test]
async fn release_rejects_released_on_zdr() {
    let (_, ledger, outcome) = release_with(
        Some(ReleaseLie::ReleasedOnZdr),
        RetentionMode::EphemeralZdr,
        None,
    )
    .await;
    let error = refused(outcome);
    assert_protocol_invalid(
        &error,
        Operation::Release,
        "disposition",
        "destroyed (retention ephemeral_zdr)",
        "released",
    );
    assert_eq!(ledger.rollbacks(Compensated::Release), 1);
}

/// "… or `destroyed` on a durable one".
#[tokio::test]
async fn release_rejects_destroyed_on_durable() {
    let (runtime, ledger, outcome) = release_with(
        Some(ReleaseLie::DestroyedOnDurable),
        RetentionMode::Durable,
        Some(in_a_day()),
    )
    .await;
    let error = refused(outcome);
    assert_protocol_invalid(
        &error,
        Operation::Release,
        "disposition",
        "released (retention durable)",
        "destroyed",
    );
    assert_eq!(ledger.rollbacks(Compensated::Release), 1);
    assert_eq!(
        live_snapshots(runtime.provider()).await,
        0,
        "the snapshot the hidden release settled was unwound"
    );
}

/// A durable release's snapshot "must carry **exactly** the `expires_at`
/// the request supplied", as `snapshot`'s must.
#[tokio::test]
async fn release_rejects_settled_snapshot_with_moved_expires_at() {
    let deadline = in_a_day();
    let (runtime, ledger, outcome) = release_with(
        Some(ReleaseLie::SettledSnapshotMovesExpiry),
        RetentionMode::Durable,
        Some(deadline),
    )
    .await;
    let error = refused(outcome);
    assert_protocol_invalid(
        &error,
        Operation::Release,
        "snapshot.expires_at",
        &rendered(&deadline),
        &rendered(&shifted(deadline, 60_000)),
    );
    assert_eq!(ledger.rollbacks(Compensated::Release), 1);
    assert_eq!(live_snapshots(runtime.provider()).await, 0);
}
