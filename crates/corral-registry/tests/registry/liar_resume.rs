//! `resume`: "Runtime rejects a snapshot/request mismatch on provider,
//! placement, Workspace, Session, or profile" — refused before the provider
//! is asked, so nothing is allocated — and the instance it rehydrates is
//! cross-checked like any other ("`resume` produces an `active` instance
//! directly").

use crate::liar;
use corral_contract::{
    Compensated, IdentityField, Operation, ReleaseDisposition, ReleaseRequest, ResumeRequest,
    RetentionMode, SandboxProvider, SnapshotField,
};
use liar::corrupt::{other_digest, other_placement, shifted};
use liar::fixtures::{
    LiarRuntime, active, assert_protocol_invalid, in_an_hour, live_sandboxes, memory_liar, refused,
    rendered, runtime,
};
use liar::flows::{durable_lifecycle, in_a_day};
use liar::lie::{InstanceMember, Lie};

/// A durable instance released honestly; the resume request that would
/// rehydrate its settled snapshot.
async fn released(runtime: &LiarRuntime) -> ResumeRequest {
    let (request, instance) = active(runtime, RetentionMode::Durable).await;
    let disposition = runtime
        .release(ReleaseRequest {
            instance_id: instance.instance_id,
            snapshot_expires_at: Some(in_a_day()),
        })
        .await
        .expect("an honest durable release is accepted")
        .value;
    let ReleaseDisposition::Released { snapshot } = disposition else {
        panic!("a durable release settled no snapshot");
    };
    ResumeRequest {
        request: corral_contract::SandboxProvisionRequest {
            expires_at: in_an_hour(),
            ..request
        },
        snapshot: *snapshot,
    }
}

/// Resumes after `alter` broke the agreement on `field`; the refusal names
/// `field` with the request's value expected and the snapshot's actual.
async fn mismatched(field: SnapshotField, alter: impl FnOnce(&mut ResumeRequest)) {
    let liar = memory_liar();
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let mut resume = released(&runtime).await;
    alter(&mut resume);
    let (r, s) = (&resume.request, &resume.snapshot);
    let (expected, actual) = match field {
        SnapshotField::Provider => (rendered(&r.provider), rendered(&s.provider)),
        SnapshotField::Placement => (rendered(&r.placement), rendered(&s.placement)),
        SnapshotField::WorkspaceId => (rendered(&r.workspace_id), rendered(&s.workspace_id)),
        SnapshotField::SessionId => (rendered(&r.session_id), rendered(&s.session_id)),
        SnapshotField::ProfileId => (rendered(&r.profile.id), rendered(&s.profile_id)),
        SnapshotField::ProfileVersion => {
            (rendered(&r.profile.version), rendered(&s.profile_version))
        }
        SnapshotField::ProfileDigest => (rendered(&r.profile.digest), rendered(&s.profile_digest)),
        other => panic!("{other} is not a resume check"),
    };

    let error = refused(runtime.resume(resume).await);

    assert_protocol_invalid(
        &error,
        Operation::Resume,
        field.as_str(),
        &expected,
        &actual,
    );
    assert_eq!(
        ledger.calls(Operation::Resume),
        0,
        "a mismatched resume never reaches the provider"
    );
}

/// "a snapshot/request mismatch on provider".
#[tokio::test]
async fn resume_rejects_snapshot_of_another_provider() {
    mismatched(SnapshotField::Provider, |r| {
        r.request.provider = corral_contract::ProviderId::new(format!("{}-lie", r.request.provider))
            .expect("a well-formed id")
    })
    .await;
}

/// "… placement". (The request keeps the envelope's placement; the
/// snapshot claims another.)
#[tokio::test]
async fn resume_rejects_snapshot_of_another_placement() {
    mismatched(SnapshotField::Placement, |r| {
        r.snapshot.placement = other_placement(r.snapshot.placement)
    })
    .await;
}

/// "… Workspace".
#[tokio::test]
async fn resume_rejects_snapshot_of_another_workspace() {
    mismatched(SnapshotField::WorkspaceId, |r| {
        r.request.workspace_id =
            corral_contract::WorkspaceId::new(format!("{}-lie", r.request.workspace_id))
                .expect("a well-formed id")
    })
    .await;
}

/// "… Session".
#[tokio::test]
async fn resume_rejects_snapshot_of_another_session() {
    mismatched(SnapshotField::SessionId, |r| {
        r.request.session_id =
            corral_contract::SessionId::new(format!("{}-lie", r.request.session_id))
                .expect("a well-formed id")
    })
    .await;
}

/// "… or profile": its id.
#[tokio::test]
async fn resume_rejects_snapshot_of_another_profile_id() {
    mismatched(SnapshotField::ProfileId, |r| {
        r.request.profile.id =
            corral_contract::ProfileId::new(format!("{}-lie", r.request.profile.id))
                .expect("a well-formed id")
    })
    .await;
}

/// "… or profile": its version.
#[tokio::test]
async fn resume_rejects_snapshot_of_another_profile_version() {
    mismatched(SnapshotField::ProfileVersion, |r| {
        r.request.profile.version =
            corral_contract::ProfileVersion::new(format!("{}-lie", r.request.profile.version))
                .expect("a well-formed id")
    })
    .await;
}

/// "… or profile": its derived image digest.
#[tokio::test]
async fn resume_rejects_snapshot_of_another_profile_digest() {
    mismatched(SnapshotField::ProfileDigest, |r| {
        r.request.profile.digest = other_digest(&r.request.profile.digest)
    })
    .await;
}

/// Walks the durable lifecycle to a `resume` that lies about `field`.
async fn resume_lies_about(field: IdentityField) -> (String, String) {
    let liar = memory_liar().telling(Lie::Identity {
        member: InstanceMember::Resume,
        field,
    });
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (done, outcome) = durable_lifecycle(&runtime).await;
    let error = outcome.expect_err("the runtime accepted a lie");
    let resume = done.resume_request.expect("the walk reached resume");
    let (expected, actual) = match field {
        IdentityField::State => (rendered(&"active"), rendered(&"provisioning")),
        IdentityField::ExpiresAt => (
            rendered(&resume.request.expires_at),
            rendered(&shifted(resume.request.expires_at, 60_000)),
        ),
        other => panic!("no resume test lies about {other}"),
    };
    assert_protocol_invalid(
        &error,
        Operation::InstanceIdentity,
        field.as_str(),
        &expected,
        &actual,
    );
    assert_eq!(ledger.rollbacks(Compensated::Resume), 1);
    assert_eq!(
        live_sandboxes(runtime.provider()).await,
        0,
        "the refused resume's instance was unwound"
    );
    (expected, actual)
}

/// "`resume` produces an `active` instance directly — there is no
/// `provisioning` step on the resume path."
#[tokio::test]
async fn resume_identity_rejects_provisioning_state() {
    resume_lies_about(IdentityField::State).await;
}

/// "`expires_at` must come back *unchanged*" — from `resume` too.
#[tokio::test]
async fn resume_identity_rejects_moved_expires_at() {
    resume_lies_about(IdentityField::ExpiresAt).await;
}
