//! Snapshots: "A `snapshot` result must agree with the source instance on
//! provider, placement, `source_instance_id`, `workspace_id`, `session_id`,
//! `profile_id`, `profile_version`, `profile_digest`, and must carry
//! **exactly** the `expires_at` the request supplied". Clones: "A
//! `cloneSnapshot` result must additionally use a **different**
//! `snapshot_id`, bind `session_id` to the clone request's target Session,
//! keep the source's `expires_at` byte-identical, and have `created_at` at
//! or after the source's and strictly before its own expiry."
//!
//! Each refusal names the field and both values, rolls the handoff back
//! exactly once, and leaves no refused snapshot behind: "a snapshot whose
//! identity check fails is not merely refused, it is unwound by the party
//! that created it."

use crate::liar;
use corral_contract::{
    CloneSnapshotRequest, Compensated, Operation, RetentionMode, SandboxProvider, SnapshotField,
    SnapshotId, SnapshotRef, SnapshotRequest,
};
use liar::corrupt::{corrupt_snapshot, shifted};
use liar::fixtures::{
    active, assert_protocol_invalid, live_snapshots, memory_liar, now, refused, rendered, runtime,
};
use liar::flows::{fork_session, in_a_day};
use liar::lie::{CloneLie, Lie, SnapshotLie};

/// The JSON of the one value `field` names.
fn field_json(snapshot: &SnapshotRef, field: SnapshotField) -> String {
    use SnapshotField as F;
    match field {
        F::SnapshotId => rendered(&snapshot.snapshot_id),
        F::Provider => rendered(&snapshot.provider),
        F::Placement => rendered(&snapshot.placement),
        F::SourceInstanceId => rendered(&snapshot.source_instance_id),
        F::WorkspaceId => rendered(&snapshot.workspace_id),
        F::SessionId => rendered(&snapshot.session_id),
        F::ProfileId => rendered(&snapshot.profile_id),
        F::ProfileVersion => rendered(&snapshot.profile_version),
        F::ProfileDigest => rendered(&snapshot.profile_digest),
        F::ExpiresAt => rendered(&snapshot.expires_at),
        F::CreatedAt => rendered(&snapshot.created_at),
    }
}

async fn snapshot_lies_about(lie: SnapshotLie) {
    let liar = memory_liar().telling(Lie::Snapshot(lie));
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (_, instance) = active(&runtime, RetentionMode::Durable).await;
    let request = SnapshotRequest {
        instance_id: instance.instance_id.clone(),
        expires_at: in_a_day(),
    };

    let error = refused(runtime.snapshot(request.clone()).await);

    let honest = SnapshotRef::for_instance(
        SnapshotId::new("any").expect("literal"),
        &request,
        &instance,
        now(),
    );
    let mut lied = honest.clone();
    corrupt_snapshot(&mut lied, lie);
    let field = lie.field();
    assert_protocol_invalid(
        &error,
        Operation::Snapshot,
        field.as_str(),
        &field_json(&honest, field),
        &field_json(&lied, field),
    );
    assert_eq!(ledger.rollbacks(Compensated::Snapshot), 1);
    assert_eq!(
        live_snapshots(runtime.provider()).await,
        0,
        "the refused snapshot was unwound"
    );
}

macro_rules! snapshot_tests {
    ($($name:ident => $lie:ident,)+) => {
        $(
            #[tokio::test]
            async fn $name() {
                snapshot_lies_about(SnapshotLie::$lie).await;
            }
        )+

        /// The lies the tests above tell.
        const COVERED: &[SnapshotLie] = &[$(SnapshotLie::$lie),+];
    };
}

snapshot_tests! {
    snapshot_rejects_foreign_provider => Provider,
    snapshot_rejects_other_placement => Placement,
    snapshot_rejects_other_source_instance_id => SourceInstanceId,
    snapshot_rejects_foreign_workspace_id => WorkspaceId,
    snapshot_rejects_foreign_session_id => SessionId,
    snapshot_rejects_other_profile_id => ProfileId,
    snapshot_rejects_other_profile_version => ProfileVersion,
    snapshot_rejects_other_profile_digest => ProfileDigest,
    snapshot_rejects_moved_expires_at => MovedExpiresAt,
}

/// Every field the contract lists for `snapshot` has its own test.
#[test]
fn snapshot_every_field_has_its_own_lie() {
    assert_eq!(COVERED, SnapshotLie::ALL);
}

/// An honest snapshot, then a clone into the fork Session that lies.
async fn clone_lies_about(lie: CloneLie) -> (corral_contract::SandboxError, SnapshotRef) {
    let liar = memory_liar().telling(Lie::Clone(lie));
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (_, instance) = active(&runtime, RetentionMode::Durable).await;
    let source = runtime
        .snapshot(SnapshotRequest {
            instance_id: instance.instance_id.clone(),
            expires_at: in_a_day(),
        })
        .await
        .expect("an honest snapshot is accepted")
        .value;

    let error = refused(
        runtime
            .clone_snapshot(CloneSnapshotRequest {
                source: source.clone(),
                target_session_id: fork_session(),
            })
            .await,
    );

    assert_eq!(ledger.rollbacks(Compensated::CloneSnapshot), 1);
    assert_eq!(ledger.rollbacks(Compensated::Snapshot), 0);
    assert_eq!(
        live_snapshots(runtime.provider()).await,
        1,
        "the refused clone was unwound; its source stays"
    );
    (error, source)
}

/// "use a **different** `snapshot_id`".
#[tokio::test]
async fn clone_rejects_reused_source_id() {
    let (error, source) = clone_lies_about(CloneLie::ReusesSourceId).await;
    let id = rendered(&source.snapshot_id);
    assert_protocol_invalid(
        &error,
        Operation::CloneSnapshot,
        "snapshot_id",
        &format!("an id other than {id}"),
        &id,
    );
}

/// "keep the source's `expires_at` byte-identical".
#[tokio::test]
async fn clone_rejects_moved_expiry() {
    let (error, source) = clone_lies_about(CloneLie::MovesExpiry).await;
    assert_protocol_invalid(
        &error,
        Operation::CloneSnapshot,
        "expires_at",
        &rendered(&source.expires_at),
        &rendered(&shifted(source.expires_at, 60_000)),
    );
}

/// "bind `session_id` to the clone request's target Session".
#[tokio::test]
async fn clone_rejects_binding_the_source_session() {
    let (error, source) = clone_lies_about(CloneLie::BindsSourceSession).await;
    assert_protocol_invalid(
        &error,
        Operation::CloneSnapshot,
        "session_id",
        &rendered(&fork_session()),
        &rendered(&source.session_id),
    );
}

/// "have `created_at` at or after the source's".
#[tokio::test]
async fn clone_rejects_predating_the_source() {
    let (error, source) = clone_lies_about(CloneLie::PredatesSource).await;
    assert_protocol_invalid(
        &error,
        Operation::CloneSnapshot,
        "created_at",
        &format!("at or after {}", rendered(&source.created_at)),
        &rendered(&shifted(source.created_at, -1)),
    );
}

/// "… and strictly before its own expiry".
#[tokio::test]
async fn clone_rejects_created_at_its_own_expiry() {
    let (error, source) = clone_lies_about(CloneLie::CreatedAtItsExpiry).await;
    assert_protocol_invalid(
        &error,
        Operation::CloneSnapshot,
        "created_at",
        &format!("strictly before {}", rendered(&source.expires_at)),
        &rendered(&source.expires_at),
    );
}
