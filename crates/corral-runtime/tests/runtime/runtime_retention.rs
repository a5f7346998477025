//! Retention: "`snapshot` | `active`, durable only"; "`snapshots: false` …
//! a clone attempt fails `SandboxCapabilityUnavailable{requirement:
//! "snapshots"}`"; `release` — "Durable: settle a snapshot. ZDR: destroy
//! every trace", rejecting "a `released` disposition on a ZDR profile, or
//! `destroyed` on a durable one".

use crate::common_runtime;
use std::sync::Arc;

use common_runtime::*;
use corral_contract::*;

fn zdr_only() -> SandboxProviderCapabilities {
    let mut declaration = full_declaration();
    declaration.snapshots = false;
    declaration.snapshot_clone = false;
    declaration.snapshot_custody = SnapshotCustody::Runner;
    declaration.retention_modes = vec![RetentionMode::EphemeralZdr];
    caps(declaration)
}

fn deadline() -> Timestamp {
    ts("2026-12-29T00:00:00.000Z")
}

#[tokio::test]
async fn snapshot_of_a_zdr_instance_is_forbidden_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let err = rt
        .snapshot(SnapshotRequest {
            instance_id: id.clone(),
            expires_at: deadline(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        SandboxError::SandboxSnapshotForbidden {
            instance_id: id,
            retention: RetentionMode::EphemeralZdr
        }
    );
    assert_eq!(rt.provider().log.calls(Operation::Snapshot), 0);
}

#[tokio::test]
async fn clone_and_resume_without_snapshots_are_unavailable_before_calling_provider() {
    let rt = runtime(Fake::new(zdr_only()));
    let source = foreign_snapshot("snap-1", id("inst-1"));
    let snapshots = SandboxError::capability_unavailable(Requirement::Snapshots);
    let clone = rt
        .clone_snapshot(CloneSnapshotRequest {
            source: source.clone(),
            target_session_id: SessionId::new("ses-2").unwrap(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(clone, snapshots);
    let resume = rt
        .resume(ResumeRequest {
            request: zdr_request(),
            snapshot: source,
        })
        .await
        .err()
        .unwrap();
    assert_eq!(resume, snapshots);
    assert_eq!(rt.provider().log.all_calls(), Vec::<Operation>::new());
}

#[tokio::test]
async fn clone_without_snapshot_clone_is_unavailable_naming_the_capability() {
    let mut declaration = full_declaration();
    declaration.snapshot_clone = false;
    let rt = runtime(Fake::new(caps(declaration)));
    let id = active(&rt, durable_request()).await;
    let source = rt
        .snapshot(SnapshotRequest {
            instance_id: id,
            expires_at: deadline(),
        })
        .await
        .unwrap()
        .value;
    let err = rt
        .clone_snapshot(CloneSnapshotRequest {
            source,
            target_session_id: SessionId::new("ses-2").unwrap(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        }
    );
    assert_eq!(rt.provider().log.calls(Operation::CloneSnapshot), 0);
}

/// A snapshot the fake never took, claiming `source` as its instance.
fn foreign_snapshot(snapshot_id: &str, source: InstanceId) -> SnapshotRef {
    SnapshotRef {
        snapshot_id: SnapshotId::new(snapshot_id).unwrap(),
        provider: ProviderId::new("fake").unwrap(),
        placement: Placement::Local,
        source_instance_id: source,
        workspace_id: WorkspaceId::new("ws-1").unwrap(),
        session_id: SessionId::new("ses-1").unwrap(),
        profile_id: ProfileId::new("prof-1").unwrap(),
        profile_version: ProfileVersion::new("7").unwrap(),
        profile_digest: Digest::new(D2).unwrap(),
        expires_at: deadline(),
        created_at: ts("2026-11-29T19:30:00.000Z"),
    }
}

/// One wrong disposition a provider returns from `release`.
struct DispositionLie {
    lie: &'static str,
    durable: bool,
    /// Rewrites the honest disposition of the instance being released.
    tell: fn(&InstanceId, &mut ReleaseDisposition),
    field: &'static str,
    reported: (&'static str, &'static str),
}

/// `release` rejects "a `released` disposition on a ZDR profile, or
/// `destroyed` on a durable one", and a durable release settles a snapshot
/// carrying exactly the requested deadline; each refusal rolls the release
/// back.
#[tokio::test]
async fn a_release_disposition_that_breaks_the_retention_rule_is_refused_and_rolled_back() {
    let lies = [
        DispositionLie {
            lie: "released on a ZDR profile",
            durable: false,
            tell: |id, d| {
                *d = ReleaseDisposition::Released {
                    snapshot: Box::new(foreign_snapshot("snap-kept", id.clone())),
                }
            },
            field: "disposition",
            reported: ("destroyed (retention ephemeral_zdr)", "released"),
        },
        DispositionLie {
            lie: "destroyed on a durable profile",
            durable: true,
            tell: |_, d| *d = ReleaseDisposition::Destroyed,
            field: "disposition",
            reported: ("released (retention durable)", "destroyed"),
        },
        DispositionLie {
            lie: "a durable snapshot with another deadline",
            durable: true,
            tell: |_, d| {
                if let ReleaseDisposition::Released { snapshot } = d {
                    snapshot.expires_at = ts("2027-01-01T00:00:00.000Z");
                }
            },
            field: "snapshot.expires_at",
            reported: (
                "\"2026-12-29T00:00:00.000Z\"",
                "\"2027-01-01T00:00:00.000Z\"",
            ),
        },
    ];
    for case in lies {
        let rt = runtime(Fake::new(full_caps()));
        let (request, snapshot_expires_at) = if case.durable {
            (durable_request(), Some(deadline()))
        } else {
            (zdr_request(), None)
        };
        let id = active(&rt, request).await;
        let (tell, released) = (case.tell, id.clone());
        rt.provider().knobs(move |k| {
            let released = released.clone();
            k.disposition = Some(Arc::new(move |d: &mut ReleaseDisposition| {
                tell(&released, d)
            }))
        });
        let err = rt
            .release(ReleaseRequest {
                instance_id: id,
                snapshot_expires_at,
            })
            .await
            .err()
            .unwrap();
        let (expected, actual) =
            protocol_invalid_in(case.lie, &err, Operation::Release, case.field);
        assert_eq!(
            (expected.as_str(), actual.as_str()),
            case.reported,
            "{}",
            case.lie
        );
        assert_eq!(
            rt.provider().log.rollbacks(Compensated::Release),
            1,
            "{}: rollbacks",
            case.lie
        );
    }
}

#[tokio::test]
async fn a_release_request_must_match_the_instances_retention_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let durable = active(&rt, durable_request()).await;
    let zdr = active(&rt, zdr_request()).await;
    let err = rt
        .release(ReleaseRequest {
            instance_id: durable,
            snapshot_expires_at: None,
        })
        .await
        .err()
        .unwrap();
    protocol_invalid(&err, Operation::Release, "snapshot_expires_at");
    let err = rt
        .release(ReleaseRequest {
            instance_id: zdr.clone(),
            snapshot_expires_at: Some(deadline()),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        SandboxError::SandboxSnapshotForbidden {
            instance_id: zdr,
            retention: RetentionMode::EphemeralZdr
        }
    );
    assert_eq!(rt.provider().log.calls(Operation::Release), 0);
}

#[tokio::test]
async fn an_honest_durable_round_trip_snapshot_release_resume() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, durable_request()).await;
    let released = rt
        .release(ReleaseRequest {
            instance_id: id,
            snapshot_expires_at: Some(deadline()),
        })
        .await
        .unwrap()
        .value;
    let ReleaseDisposition::Released { snapshot } = released else {
        panic!("a durable release settles a snapshot");
    };
    assert_eq!(snapshot.expires_at, deadline());
    let resumed = rt
        .resume(ResumeRequest {
            request: durable_request(),
            snapshot: *snapshot,
        })
        .await
        .unwrap()
        .value;
    assert_eq!(resumed.state, InstanceState::Active);
    assert_eq!(rt.provider().log.all_rollbacks(), 0);
}
